//! What each hypervisor run must show (the hypervisor's command and its
//! test judge runs with these): vs-check's lines, the conformance
//! kernel's documented differences in a guest, a clean Linux boot,
//! Debian's perf counting exactly in a guest, steal time in two guests.

use super::demo::{HOT_N, RECORD_PERIOD};
use super::hv::{guest_run, hv_accounts, scenario_results, STEAL_MS, VS_CHECK_RAM};
use super::linux::run_plan_natively;
use super::perftool::{parse_record_samples, parse_report, parse_stat_csv, CmdResult, Plan};
use crate::build::hv::Images;
use crate::build::{disasm, initramfs, kernel};
use crate::host::step;
use crate::qemu::{exit, Run};
use anyhow::Result;

/// Conformance checks that fail in the guest, with the spec's reason in
/// docs/hypervisor.md: their premise is the native machine's memory map
/// (0x80000000 "where the firmware lives" is the guest's own RAM, which
/// it may register: SUCCESS).
pub const CONFORMANCE_FAIL: &[&str] = &["pmu.snap.fw_addr", "pmu.evinfo.fw_addr", "sta.fw_addr"];

/// Conformance checks N/A in the guest (optional features it lacks): no
/// fixed cycle/instret PMU counters (the guest's counters are host HPM
/// counters filtered to VS/VU), no legacy console.
pub const CONFORMANCE_NA: &[&str] = &[
    "pmu.cfg.skip.cycles",
    "pmu.cfg.skip.instret",
    "pmu.cfg.skip.first",
    "legacy.putchar.upper",
];

/// The suite must keep at least this many checks in the guest.
const CONFORMANCE_MIN: usize = 200;

/// What is wrong with a conformance run in the guest: every check must
/// pass except exactly the listed failures and N/As, and the last check
/// (an SRST shutdown) powers the machine off. Returns the problems and
/// (passed, failed, n/a).
pub fn check_conformance(run: &Run) -> (Vec<String>, (usize, usize, usize)) {
    let mut p = Vec::new();
    let super::conformance::Verdicts {
        checks,
        result,
        unfinished,
    } = super::conformance::verdicts(&run.text, run.code);
    let ids = |label: &str| -> Vec<&str> {
        checks
            .iter()
            .filter(|c| c.1 == label)
            .map(|c| c.0.as_str())
            .collect()
    };
    let (fail, na) = (ids("FAIL"), ids("N/A"));
    if fail != CONFORMANCE_FAIL {
        p.push(format!(
            "failed: {fail:?}, want exactly {CONFORMANCE_FAIL:?}"
        ));
    }
    if na != CONFORMANCE_NA {
        p.push(format!("n/a: {na:?}, want exactly {CONFORMANCE_NA:?}"));
    }
    if checks.len() < CONFORMANCE_MIN {
        p.push(format!(
            "only {} checks, want at least {CONFORMANCE_MIN}",
            checks.len()
        ));
    }
    if result.is_none() {
        p.push("no RESULT line".into());
    }
    if let Some(u) = unfinished {
        p.push(format!("check {u} never finished"));
    }
    if run.code != Some(exit::POWER_OFF) {
        p.push(format!("{}, want 0", exit::describe(run.code)));
    }
    let passed = ids("PASS").len();
    (p, (passed, fail.len(), na.len()))
}

/// A guest's steal result (`RVPMU-RESULT` of scenario steal): the share
/// of its busy interval, and its absolute steal in USER_HZ ticks at the
/// end of the interval.
#[derive(Clone, Copy, Debug, PartialEq)]
struct StealShare {
    share: f64,
    steal: u64,
    total: u64,
    steal_after: u64,
    user_hz: u64,
}

/// An idle guest's result (`RVPMU-RESULT` of scenario idle): steal and
/// total USER_HZ ticks over its sleep.
fn idle_steal(guest: &Run) -> Option<(u64, u64)> {
    let v = scenario_results(&guest.text, "idle").next()?;
    Some((v["steal"].as_u64()?, v["total"].as_u64()?))
}

fn steal_share(guest: &Run) -> Option<StealShare> {
    let v = scenario_results(&guest.text, "steal").next()?;
    let all = v["cpus"].as_array()?.iter().find(|c| c["cpu"] == "all")?;
    Some(StealShare {
        share: all["share"].as_f64()?,
        steal: all["steal"].as_u64()?,
        total: all["total"].as_u64()?,
        steal_after: all["steal_after"].as_u64()?,
        user_hz: v["user_hz"].as_u64()?,
    })
}

/// What is wrong with a two-guest run, `busy[g]` saying whether guest g
/// ran the steal scenario (else it was idle), and the figures:
///
/// - a busy guest next to a busy guest is stolen from half its interval:
///   share 0.50 +-0.02; next to an idle guest, at most 0.01 (the idle
///   guest's own runs: its timer ticks); the idle guest itself sees at
///   most one tick of steal over its sleep (idle time is never steal);
/// - the steal its /proc/stat shows at the end of the interval (USER_HZ
///   ticks) and what the hypervisor reported through its STA record by
///   the guest's end agree within 1% of the latter (the guest shuts
///   down within a few ms of its last reading);
/// - each guest sees STA (Linux's "SBI STA extension detected") and
///   both shut down (exit 0, the last one's power-off).
pub fn check_steal(run: &Run, busy: [bool; 2]) -> (Vec<String>, Vec<String>) {
    let mut p = Vec::new();
    let mut f = Vec::new();
    let acct = hv_accounts(&run.text);
    if acct.len() != 2 {
        p.push(format!(
            "hypervisor accounting for {} guests, want 2",
            acct.len()
        ));
    }
    let both_busy = busy == [true, true];
    for (g, &is_busy) in busy.iter().enumerate() {
        let gr = guest_run(run, g);
        if !gr.text.contains("SBI STA extension detected") {
            p.push(format!("guest {g}: no \"SBI STA extension detected\""));
        }
        if !gr.text.contains("RVPMU-DONE ok") {
            p.push(format!("guest {g}: no RVPMU-DONE ok"));
        }
        let a = acct.get(g).copied().unwrap_or_default();
        f.push(format!(
            "guest {g} ({}): hypervisor: run {} ms, steal {} ms, idle {} ms, STA record {} ms",
            if is_busy { "busy" } else { "idle" },
            a.run / 1_000_000,
            a.steal / 1_000_000,
            a.idle / 1_000_000,
            a.sta / 1_000_000
        ));
        if !is_busy {
            // Idle time is never steal: over its sleep the idle guest's
            // /proc/stat shows at most one tick of it (its timer ticks
            // wait for nothing but the trap).
            match idle_steal(&gr) {
                Some((steal, total)) => {
                    f.push(format!(
                        "guest {g}: /proc/stat over its sleep: steal {steal} of {total} ticks"
                    ));
                    if steal > 1 {
                        p.push(format!(
                            "guest {g}: steal {steal} of {total} ticks while idle, want at most 1"
                        ));
                    }
                }
                None => p.push(format!("guest {g}: no idle result")),
            }
            continue;
        }
        let Some(s) = steal_share(&gr) else {
            p.push(format!("guest {g}: no steal result"));
            continue;
        };
        let stat_ns = s.steal_after * 1_000_000_000 / s.user_hz.max(1);
        let diff = stat_ns as f64 - a.sta as f64;
        let rel = if a.sta > 0 { diff / a.sta as f64 } else { 0.0 };
        f.push(format!(
            "guest {g}: /proc/stat: steal share {:.2}% of its {STEAL_MS} ms busy interval ({}/{} ticks); steal at its end {} ms vs the STA record's {} ms at the guest's end: {:+.2}%",
            s.share * 100.0,
            s.steal,
            s.total,
            stat_ns / 1_000_000,
            a.sta / 1_000_000,
            rel * 100.0
        ));
        if both_busy && (s.share - 0.5).abs() > 0.02 {
            p.push(format!(
                "guest {g}: steal share {:.4}, want 0.50 +-0.02",
                s.share
            ));
        }
        if !both_busy && s.share > 0.01 {
            p.push(format!(
                "guest {g}: steal share {:.4} next to an idle guest, want <= 0.01",
                s.share
            ));
        }
        // /proc/stat counts whole USER_HZ ticks (it truncates) and only
        // the steal Linux accounted at its last tick; the record goes on
        // until the guest's end: 1% plus one USER_HZ tick.
        let tick_ns = 1e9 / s.user_hz.max(1) as f64;
        if diff.abs() > 0.01 * a.sta as f64 + tick_ns {
            p.push(format!(
                "guest {g}: /proc/stat steal {stat_ns} ns vs the STA record's {} ns: {:+.2}%, want within 1% + one USER_HZ tick",
                a.sta,
                rel * 100.0
            ));
        }
    }
    if run.code != Some(exit::POWER_OFF) {
        p.push(format!("{}, want 0", exit::describe(run.code)));
    }
    if run.text.contains("stopping the guest") {
        p.push("the hypervisor stopped a guest".into());
    }
    (p, f)
}

/// What is wrong with a vs-check run that should end with `end`.
pub fn check_vs_check(run: &Run, end: &str) -> Vec<String> {
    let mut p = Vec::new();
    let t = &run.text;
    let lines: Vec<&str> = t.lines().map(str::trim_end).collect();
    let has = |l: &str| lines.contains(&l);
    let ram = format!(
        "rvpmu-hv: guest RAM 0x80000000..{:#x} at host ",
        0x8000_0000u64 + VS_CHECK_RAM
    );
    if !lines.iter().any(|l| l.starts_with(&ram)) {
        p.push(format!("no hypervisor line starting {ram:?}"));
    }
    // The guest's PMU: QEMU's 16 HPM counters, the host's quirk.
    for start in [
        "rvpmu-hv: guest PMU: host counters 0x7fff8 (CSR = host's), modes VS/VU only, one counter per event",
        "vs-check: guest PMU call cost in instructions (every mode): num_counters ",
    ] {
        if !lines.iter().any(|l| l.starts_with(start)) {
            p.push(format!("no line starting {start:?}"));
        }
    }
    for l in [
        format!(
            "vs-check: hart 0, guest RAM 0x80000000..{:#x}, bootargs \"vs-check.end={end}\"",
            0x8000_0000u64 + VS_CHECK_RAM
        ),
        // The guest's own DBCN calls, forwarded to the host console.
        "vs-check: dbcn write forwarded".into(),
        "vs-check: dbcn byte forwarded".into(),
        "vs-check: all 125 checks passed".into(),
    ] {
        if !has(&l) {
            p.push(format!("line missing: {l:?}"));
        }
    }
    let (want, lines_for_end): (i32, &[&str]) = match end {
        "fault" => (
            exit::SYSTEM_FAILURE,
            &["rvpmu-hv: guest load page fault at guest-physical 0x10000000 (outside the guest's RAM); pc 0x"],
        ),
        _ => (exit::POWER_OFF, &[]),
    };
    for l in lines_for_end {
        if !lines.iter().any(|x| x.starts_with(l)) {
            p.push(format!("no line starting {l:?}"));
        }
    }
    if run.code != Some(want) {
        p.push(format!("{}, want {want}", exit::describe(run.code)));
    }
    for l in lines
        .iter()
        .filter(|l| l.contains("FAIL") || l.contains("panic"))
    {
        p.push(l.to_string());
    }
    if end != "fault" && lines.iter().any(|l| l.contains("stopping the guest")) {
        p.push("the hypervisor stopped the guest".into());
    }
    p
}

/// What is wrong with a Linux boot under the hypervisor: the kernel must
/// see our SBI (3.0, rvhv, the extensions offered, the PMU with 16
/// hardware and 16 firmware counters and the snapshot), our DT (the
/// model, 1 GiB at 0x80000000, Sstc), switch to hvc0, and run /init to
/// its end (its boot mode counts a loop's user instructions through
/// perf_event_open); the power-off is SBI SRST (exit 0).
pub fn check_linux(run: &Run) -> Vec<String> {
    let mut p = Vec::new();
    let want = [
        "Machine model: rvpmu-hv guest",
        "SBI specification v3.0 detected",
        "SBI implementation ID=0x72766876 Version=0x100",
        "SBI TIME extension detected",
        "SBI IPI extension detected",
        "SBI RFENCE extension detected",
        "SBI SRST extension detected",
        "SBI DBCN extension detected",
        "SBI HSM extension detected",
        "node   0: [mem 0x0000000080000000-0x00000000bfffffff]",
        "Timer interrupt in S-mode is available via sstc extension",
        "riscv-pmu-sbi: SBI PMU extension is available",
        "riscv-pmu-sbi: 16 firmware and 16 hardware counters",
        "riscv-pmu-sbi: SBI PMU snapshot detected",
        "printk: legacy console [hvc0] enabled",
        "Run /init as init process",
        "rvpmu /init: mode boot (1 CPUs online)",
        "16 firmware + 16 hardware counters; 1000-iteration loop: ",
        "RVPMU-DONE ok",
        "reboot: Power down",
    ];
    for w in want {
        if !run.text.contains(w) {
            p.push(format!("missing: {w:?}"));
        }
    }
    if run.code != Some(exit::POWER_OFF) {
        p.push(format!("{}, want 0", exit::describe(run.code)));
    }
    if run.text.contains("stopping the guest") {
        p.push("the hypervisor stopped the guest".into());
    }
    p
}

/// Iterations of `rvpmu-work alu` (2 user instructions each) in the
/// guest's perf runs; N and 2N have the same number of digits, so the
/// counts differ by exactly 2N (crates/e2e-init).
pub const ALU_N: u64 = 1_000_000;

/// Debian's perf in the guest: `instructions:u` of `alu N` and `alu 2N`,
/// then unfiltered `instructions` (the guest's user and kernel, i.e. VU
/// and VS) of `alu N`; address-space randomisation off first, as the
/// native suite does.
pub fn perf_plan() -> Plan {
    let mut p = Plan::exact();
    // Sampling first: a counting event before it on the same counter
    // would leave QEMU's stale irq_overflow_left (docs/anomalies.md 2).
    p.cmd(
        "record",
        &format!("perf record -e instructions:u -c {RECORD_PERIOD} -o /root/perf.data -- rvpmu-work hot {HOT_N}"),
    );
    p.cmd(
        "report",
        "perf report -i /root/perf.data --stdio --sort symbol",
    );
    p.cmd(
        "alu-n",
        &format!("perf stat -x, -e instructions:u -- rvpmu-work alu {ALU_N}"),
    );
    p.cmd(
        "alu-2n",
        &format!(
            "perf stat -x, -e instructions:u -- rvpmu-work alu {}",
            2 * ALU_N
        ),
    );
    p.cmd(
        "alu-all",
        &format!("perf stat -x, -e instructions -- rvpmu-work alu {ALU_N}"),
    );
    // Four counters at once (the switch cost per running counter).
    p.cmd(
        "four",
        &format!("perf stat -x, -e instructions:u,cycles:u,instructions:k,cycles:k -- rvpmu-work alu {ALU_N}"),
    );
    p
}

/// The plan commands' results (`RVPMU-RESULT` lines of scenario `cmd`).
fn plan_results(text: &str) -> Vec<CmdResult> {
    scenario_results(text, "cmd")
        .map(|v| CmdResult::from_json(&v))
        .collect()
}

/// The perf plan's three counts from its results: instructions:u of alu
/// N and alu 2N, instructions of alu N, each when counted at 100% running.
fn alu_counts(r: &[CmdResult]) -> [Option<u64>; 3] {
    let value = |name: &str, event: &str| -> Option<u64> {
        let c = r.iter().find(|c| c.name == name)?;
        let l = parse_stat_csv(&c.stderr)
            .into_iter()
            .find(|l| l.event == event)?;
        (c.ok() && l.running_pct == Some(100.0)).then_some(l.value?)
    };
    [
        value("alu-n", "instructions:u"),
        value("alu-2n", "instructions:u"),
        value("alu-all", "instructions"),
    ]
}

/// The same plan booted natively on rvpmu-fw (same Image and initramfs,
/// QEMU's own DT): instructions:u of alu N and alu 2N.
pub fn native_counts(images: &Images, plan: &Plan) -> Result<[Option<u64>; 2]> {
    step("the same plan natively on rvpmu-fw, for the guest-vs-native counts");
    let console = run_plan_natively(&images.firmware, &plan.text())?;
    let [n, n2, _] = alu_counts(&plan_results(&console));
    Ok([n, n2])
}

/// The guest's perf counts: (instructions:u of alu N, of alu 2N,
/// instructions of alu N), each only if perf counted it on a counter the
/// whole time; and what is wrong.
pub fn check_perf(run: &Run, hot_per_iter: u64) -> (Vec<String>, [Option<u64>; 3], Sampling) {
    let mut p = Vec::new();
    let r = plan_results(&run.text);
    let sampling = check_sampling(&r, hot_per_iter, &mut p);
    let v = alu_counts(&r);
    match v {
        [Some(n), Some(n2), Some(all)] => {
            if n2.checked_sub(n) != Some(2 * ALU_N) {
                p.push(format!(
                    "instructions:u of alu {} - alu {ALU_N} = {} - {n}, want exactly {}",
                    2 * ALU_N,
                    n2,
                    2 * ALU_N
                ));
            }
            if all <= n {
                p.push(format!(
                    "instructions (user + kernel) {all} not above instructions:u {n}"
                ));
            }
        }
        _ => p.push(format!(
            "perf stat did not count all three at 100% running: {v:?}; commands: {:?}",
            r.iter()
                .map(|c| (c.name.as_str(), c.status, c.stderr.as_str()))
                .collect::<Vec<_>>()
        )),
    }
    if !run.text.contains("RVPMU-DONE ok") {
        p.push("no RVPMU-DONE ok".into());
    }
    if run.code != Some(exit::POWER_OFF) {
        p.push(format!("{}, want 0", exit::describe(run.code)));
    }
    if run.text.contains("stopping the guest") {
        p.push("the hypervisor stopped the guest".into());
    }
    (p, v, sampling)
}

/// What the guest's `perf record` of `rvpmu-work hot` gave: samples
/// (record's count), the periods the workload's loops make, the shares of
/// rvpmu_hot_a and rvpmu_hot_b in `perf report`.
#[derive(Debug, Default, Clone, Copy)]
pub struct Sampling {
    pub samples: u64,
    pub periods: u64,
    pub hot_a: f64,
    pub hot_b: f64,
}

/// Samples = periods +-2, where periods is the loops' user instructions
/// (4 * HOT_N iterations of `hot_per_iter`, from the disassembly) over
/// the period; the process's start-up (about 40,000 user instructions,
/// the `alu` counts above) adds at most one; rvpmu_hot_a runs 3 of the 4
/// parts, rvpmu_hot_b 1: 75% and 25% within 2 points, together at least
/// 98% (the samples' PCs are in the workload).
fn check_sampling(r: &[CmdResult], hot_per_iter: u64, p: &mut Vec<String>) -> Sampling {
    let periods = 4 * HOT_N * hot_per_iter / RECORD_PERIOD;
    let rec = r.iter().find(|c| c.name == "record");
    let rep = r
        .iter()
        .find(|c| c.name == "report")
        .map(|c| parse_report(&c.stdout))
        .unwrap_or_default();
    let s = Sampling {
        samples: rec
            .and_then(|c| parse_record_samples(&c.stderr))
            .unwrap_or(0),
        periods,
        hot_a: rep.share("rvpmu_hot_a"),
        hot_b: rep.share("rvpmu_hot_b"),
    };
    if !rec.is_some_and(|c| c.ok()) || s.samples.abs_diff(periods) > 2 {
        p.push(format!(
            "perf record: {} samples, want {periods} +-2; stderr: {:?}",
            s.samples,
            rec.map(|c| c.stderr.as_str())
        ));
    }
    if rep.samples != Some(s.samples) || rep.lost != 0 {
        p.push(format!(
            "perf report: {rep:?}, want {} samples, none lost",
            s.samples
        ));
    }
    if (s.hot_a - 75.0).abs() > 2.0 || (s.hot_b - 25.0).abs() > 2.0 || s.hot_a + s.hot_b < 98.0 {
        p.push(format!(
            "perf report: rvpmu_hot_a {:.2}%, rvpmu_hot_b {:.2}%, want 75 and 25 +-2, together >= 98",
            s.hot_a, s.hot_b
        ));
    }
    s
}

/// Instructions in one iteration of `rvpmu_hot_a`'s loop (rvpmu-work is
/// the guest's /init binary), from its disassembly.
pub fn hot_per_iter() -> Result<u64> {
    let k = kernel::build(kernel::Version::V7_2)?;
    let initrd = initramfs::build(&k)?;
    disasm::loop_body_instructions(&initrd.init_elf, "rvpmu_hot_a")
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "rvpmu-hv: guest RAM 0x80000000..0x84000000 at host 0x80400000; kernel 1 bytes\n\
        vs-check: hart 0, guest RAM 0x80000000..0x84000000, bootargs \"vs-check.end=fault\"\n\
        vs-check: dbcn write forwarded\n\
        vs-check: dbcn byte forwarded\n\
        rvpmu-hv: guest PMU: host counters 0x7fff8 (CSR = host's), modes VS/VU only, one counter per event, firmware event SET_TIMER\n\
        vs-check: guest PMU call cost in instructions (every mode): num_counters 1\n\
        vs-check: all 125 checks passed\n\
        rvpmu-hv: guest load page fault at guest-physical 0x10000000 (outside the guest's RAM); pc 0x80201000: stopping the guest\n";

    #[test]
    fn the_check_accepts_a_good_run_and_names_what_is_wrong() {
        let run = |text: &str, code| Run {
            text: text.into(),
            code,
        };
        assert_eq!(
            check_vs_check(&run(GOOD, Some(83)), "fault"),
            Vec::<String>::new()
        );
        // Wrong exit status, a guest line missing, a failed check.
        assert_eq!(check_vs_check(&run(GOOD, Some(0)), "fault").len(), 1);
        let missing = GOOD.replace("vs-check: dbcn byte forwarded\n", "");
        assert_eq!(check_vs_check(&run(&missing, Some(83)), "fault").len(), 1);
        let failed = format!("{GOOD}vs-check: FAIL x: got 1\n");
        assert_eq!(check_vs_check(&run(&failed, Some(83)), "fault").len(), 1);
        // A shutdown run must not contain a stop, and must exit 0.
        let shut = GOOD.replace("end=fault", "end=shutdown");
        let p = check_vs_check(&run(&shut, Some(0)), "shutdown");
        assert_eq!(p, ["the hypervisor stopped the guest"]);
        assert_eq!(check_vs_check(&run("", None), "shutdown").len(), 8);
    }

    #[test]
    fn the_conformance_check_wants_exactly_the_documented_differences() {
        let mut text = String::new();
        for id in CONFORMANCE_FAIL {
            text += &format!("[FAIL] {id} - w | expected: e | actual: a\n");
        }
        for id in CONFORMANCE_NA {
            text += &format!("[N/A ] {id} - w | expected: n/a | actual: n/a\n");
        }
        for i in 0..CONFORMANCE_MIN {
            text += &format!("[PASS] c{i} - w | expected: e | actual: e\n");
        }
        text += "RESULT 200 passed, 3 failed, 4 n/a\n";
        let good = Run {
            text: text.clone(),
            code: Some(0),
        };
        let (p, counts) = check_conformance(&good);
        assert_eq!(p, Vec::<String>::new());
        assert_eq!(counts, (CONFORMANCE_MIN, 3, 4));
        // Another failure, a missing N/A, a bad exit: each named.
        let worse = Run {
            text: text.replace("[PASS] c7 ", "[FAIL] c7 ").replace(
                "[N/A ] legacy.putchar.upper ",
                "[PASS] legacy.putchar.upper ",
            ),
            code: Some(83),
        };
        let (p, _) = check_conformance(&worse);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].contains("c7") && p[1].contains("pmu.cfg.skip.first") && p[2].contains("83"));
    }
}
