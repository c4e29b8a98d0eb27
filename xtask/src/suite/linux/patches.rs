//! The proofs of the series in `patches/linux/` (docs/linux-patches.md):
//! one boot per kernel, the same plan on the kernel as Debian ships it
//! (where both SBI PMU driver bugs must show) and on its `fixed` build
//! (where neither may).
//!
//! The boot: rvpmu-fw with its alias window off
//! (`/chosen/rvpmu,pmu-alias-window = <0>`, so the firmware checks counter
//! sets as any strict one does) and the PMU snapshot on, two harts, under
//! icount. The plan:
//!
//! 1. `taskset -c 1 perf stat -e instructions:u -- rvpmu-work alu N1`:
//!    cpu1 counts before any hotplug;
//! 2. cpu1 offline (`echo 0 > /sys/devices/system/cpu/cpu1/online`: Linux
//!    disables cpu1's snapshot area, rvpmu-fw stops hart 1 in `wfi`);
//! 3. with one hart left running, counts are exact as at `-smp 1`:
//!    `perf record -e cycles:u -c P -- rvpmu-work hot H`, `perf stat -e
//!    cycles:u -- rvpmu-work hot 0` (the start-up the record also sees),
//!    and step 1's command on cpu0 (its exact count E1);
//! 4. cpu1 online again, then `taskset -c 1 perf stat -e instructions:u --
//!    rvpmu-work alu N2`, N2 with as many digits as N1, so its exact count
//!    is E1 + 2 x (N2 - N1) (rvpmu-work's doc in crates/e2e-init; 2 is the
//!    loop body read from the disassembly).
//!
//! Sampling (step 3), by construction: (4 x H x the loop body + start-up)
//! / P periods. The restart bug: after the first overflow the driver
//! restarts the counter at counter index base 4096, the firmware refuses
//! (INVALID_PARAM), and sampling stops: fewer than half the periods
//! sampled. Fixed: periods +-2, as `perf` gets at `-smp 1` with the window
//! on.
//!
//! Counting on cpu1 (steps 1 and 4): under icount QEMU derives every
//! hart's counters from the machine's one instruction count, so with two
//! harts online a `:u` count on cpu1 also grows by whatever hart 0 runs
//! meanwhile (idle here: its interrupts only), and never shrinks: the
//! window is [exact, exact + 1%] (the excess measured beside an idle hart,
//! in e2e/NOTES.md and docs/linux-patches.md, is well below that). The
//! re-registration bug: cpu1's snapshot area is
//! never registered again, every stop with TAKE_SNAPSHOT gets NO_SHMEM
//! ("Stopping counter idx N failed", a known kernel signature) and perf
//! reads what the area still holds, the last count cpu1 took before it
//! went offline (step 1's): N2 != N1 keeps that stale value out of step
//! 4's window. Fixed: inside, and no such line.

use super::{snapshot_not_reregistered, split_complaints, Report, Suite};
use crate::build::dt::Chosen;
use crate::guest::demo::{HOT_N, RECORD_PERIOD};
use crate::guest::linux::Guest;
use crate::guest::perftool::{parse_record_samples, parse_stat_csv, Plan};
use crate::qemu::Firmware;
use e2e_proto::plan::MODE as PLAN_MODE;

/// `alu` iterations counted on cpu1 before the hotplug and exactly on
/// cpu0 (2 instructions each).
const N1: u64 = 1_000_000;
/// `alu` iterations counted on cpu1 after it: as many digits as [`N1`].
const N2: u64 = 2_000_000;
/// The CPU taken offline and online.
const CPU: u32 = 1;

/// The plan of the proof boot (module doc).
fn plan() -> Plan {
    let count = |n: u64| format!("perf stat -x, -e instructions:u -- rvpmu-work alu {n}");
    let online = format!("/sys/devices/system/cpu/cpu{CPU}/online");
    let mut p = Plan::exact();
    p.cmd("before", &format!("taskset -c {CPU} {}", count(N1)));
    p.sh("offline", &format!("echo 0 > {online}"));
    p.cmd("record", &format!("perf record -e cycles:u -c {RECORD_PERIOD} -o /root/perf.data -- rvpmu-work hot {HOT_N}"));
    p.cmd("hot-base", "perf stat -x, -e cycles:u -- rvpmu-work hot 0");
    p.cmd("exact", &count(N1));
    p.sh("online", &format!("echo 1 > {online}"));
    p.cmd("after", &format!("taskset -c {CPU} {}", count(N2)));
    p
}

/// The proof boot of `guest`'s kernel on rvpmu-fw `fw`: both bugs show on
/// an unfixed kernel, neither on a fixed one.
pub fn proofs(guest: &Guest, fw: &Firmware, report: &mut Report) {
    const TIMEOUT_S: u64 = 300;
    let fixed = guest.version.fixed;
    let mut s = Suite {
        kernel: guest.version,
        fw,
        report,
    };
    let chosen = Chosen {
        pmu_alias_window: Some(false),
        ..Chosen::NONE
    };
    let label = "patch proofs -smp 2 (alias window off, snapshot on)";
    let bug = snapshot_not_reregistered(guest.version);
    // On an unfixed kernel the re-registration bug's lines are expected
    // (and checked below); on a fixed one any such line is a complaint.
    let known = (!fixed).then_some(&bug);
    let p = plan();
    let booted = guest.run_plan(fw, 2, chosen, &p.text(), TIMEOUT_S);
    let Some(out) = s.judge_boot(label, chosen, known, PLAN_MODE, TIMEOUT_S, booted) else {
        return;
    };
    let Some([hot, alu]) = s.loop_bodies(label, guest, ["rvpmu_hot_a", "rvpmu_alu_loop"]) else {
        return;
    };
    let r = out.commands();
    let cmd = |name: &str| r.iter().find(|c| c.name == name);
    let count = |name: &str, event: &str| {
        cmd(name).and_then(|c| {
            parse_stat_csv(&c.stderr)
                .into_iter()
                .find(|l| l.event == event)?
                .value
        })
    };
    let steps_ok = ["offline", "online"]
        .iter()
        .all(|n| cmd(n).is_some_and(|c| c.ok()));
    s.check(
        &format!("{label}: cpu{CPU} goes offline and online"),
        steps_ok,
        false,
        "both sysfs writes exit 0",
        &format!(
            "offline {:?}, online {:?}",
            cmd("offline").and_then(|c| c.status),
            cmd("online").and_then(|c| c.status)
        ),
        Some(&out),
    );
    let snapshot = out.console.contains("SBI PMU snapshot detected");
    s.check(
        &format!("{label}: the kernel uses the snapshot"),
        snapshot,
        false,
        "\"SBI PMU snapshot detected\"",
        if snapshot { "detected" } else { "not offered" },
        Some(&out),
    );

    // Sampling with one hart running.
    let rec = cmd("record").and_then(|c| parse_record_samples(&c.stderr));
    match count("hot-base", "cycles:u") {
        Some(base) => {
            let periods = (4 * HOT_N * hot + base) / RECORD_PERIOD;
            let deriv = format!(
                "({hot} x 4 x {HOT_N} loop + {base} start-up) / {RECORD_PERIOD} = {periods}"
            );
            if fixed {
                s.check(
                    &format!("{label}: perf record -e cycles:u -c {RECORD_PERIOD}: samples = periods +-2 (restart at counter base 0)"),
                    rec.is_some_and(|n| n.abs_diff(periods) <= 2),
                    false,
                    &format!("{deriv} +-2"),
                    &format!("{rec:?}"),
                    Some(&out),
                );
            } else {
                s.check(
                    &format!("{label}: the Linux restart bug stops sampling after an overflow (known Linux bug, 6.12 and 7.2)"),
                    rec.is_some_and(|n| n < periods / 2),
                    false,
                    &format!("fewer than half of {deriv} (the restart at counter base 4096 is refused)"),
                    &format!("{rec:?}"),
                    Some(&out),
                );
            }
        }
        None => s.check(
            &format!("{label}: perf stat of `hot 0`"),
            false,
            false,
            "a cycles:u count",
            "none",
            Some(&out),
        ),
    }

    // Counting on cpu1 before and after it went offline and online.
    let (before, exact, after) = (
        count("before", "instructions:u"),
        count("exact", "instructions:u"),
        count("after", "instructions:u"),
    );
    let Some(e1) = exact.filter(|&e| e >= alu * N1) else {
        s.check(
            &format!("{label}: `alu {N1}` counted with one hart running"),
            false,
            false,
            &format!(">= {alu} x {N1} (the loop alone)"),
            &format!("{exact:?}"),
            Some(&out),
        );
        return;
    };
    let window = |e: u64| (e, e + e / 100);
    let inside = |v: Option<u64>, (lo, hi): (u64, u64)| v.is_some_and(|v| (lo..=hi).contains(&v));
    let (w1, w2) = (window(e1), window(e1 + alu * (N2 - N1)));
    let why = "+ <= 1% from the other hart under icount";
    s.check(
        &format!("{label}: cpu{CPU} counts `alu {N1}` before the hotplug"),
        inside(before, w1),
        false,
        &format!(
            "{}..={} (the count with one hart running, {why})",
            w1.0, w1.1
        ),
        &format!("{before:?}"),
        Some(&out),
    );
    let expected_after = format!("{}..={} ({e1} + {alu} x ({N2} - {N1}), {why})", w2.0, w2.1);
    let (sig, _) = split_complaints(&out.console, Some(&bug));
    if fixed {
        s.check(
            &format!("{label}: after offline/online cpu{CPU} counts `alu {N2}` right (snapshot area registered again)"),
            inside(after, w2) && sig.is_empty(),
            false,
            &format!("{expected_after}; no \"{}N{}\" line", bug.prefix, bug.suffix),
            &format!("{after:?}; {} such line(s)", sig.len()),
            Some(&out),
        );
    } else {
        s.check(
            &format!("{label}: after offline/online cpu{CPU} reads stale counts (known Linux bug, 6.12 and 7.2)"),
            !inside(after, w2) && !sig.is_empty(),
            false,
            &format!("outside {expected_after}, with \"{}N{}\" after \"{}\"", bug.prefix, bug.suffix, bug.after),
            &format!("{after:?}; {} such line(s)", sig.len()),
            Some(&out),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::Version;
    use super::*;
    use crate::build::firmware;

    /// The proof boots alone, on the four kernels (the fixed ones are
    /// built first if they are not cached):
    /// `cargo test -p xtask patch_proofs -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn patch_proofs() {
        let fw = firmware::ours("rvpmu-fw").unwrap();
        let mut report = Report {
            passed: 0,
            failed: Vec::new(),
            lacks: Vec::new(),
        };
        for k in Version::TESTED {
            proofs(&Guest::build(k).unwrap(), &fw, &mut report);
        }
        assert!(report.failed.is_empty(), "{:#?}", report.failed);
    }
}
