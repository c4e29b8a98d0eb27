//! The e2e checks driven by the real `perf` tool (Debian's linux-perf in
//! the guest), each against the workloads' construction:
//!
//! - exact user counts: `alu N` minus `alu 0` is N x the loop body read
//!   from the disassembly, to the instruction (icount);
//! - `perf record -c P`: samples = the process's user cycles / P +-2, and
//!   `perf report`'s shares of the two hot functions (3:1 by construction)
//!   within 1 point;
//! - more events than counters (20 in one `perf stat`): every scaled count
//!   within 2% of the same event counted alone;
//! - `cycles:k` beside `cycles:u` (anomaly 1: QEMU counts one event id on
//!   one counter): the kernel-mode events must count, not read 0;
//! - `perf stat -a -A` on 4 harts, firmware events through perf's raw
//!   syntax, an unpinned `perf record` at -smp 4 (anomaly 2), three times;
//! - the 52 standard events: the set perf reports as supported, compared
//!   across kernels (6.12 probes with config_matching, 7.2 asks
//!   event_get_info once) by [`print_tables`].

use super::{Report, Suite, Version};
use crate::build::dt::Chosen;
use crate::build::kernel::Release;
use crate::guest::demo::{fw_event, HOT_N, RECORD_PERIOD};
use crate::guest::linux::{Guest, Outcome};
use crate::guest::perftool::{
    parse_record_samples, parse_report, parse_stat_csv, CmdResult, Plan, StatLine,
};
use crate::qemu::Firmware;
use e2e_proto::plan::MODE as PLAN_MODE;
use std::collections::BTreeSet;

/// `alu` iterations for the exact counts (2 instructions each).
pub(super) const ALU_N: u64 = 10_000_000;
/// `alu` iterations under multiplexing: 2.5 G instructions (2.5 s of
/// guest time), so each of the 20 events is on a counter for about 250 ms
/// and the process's start-up (a few ms in the kernel, counted in
/// time_enabled but not in a :u count) is under 1% of any event's share.
const MUX_N: u64 = 1_250_000_000;
/// Copies of each event in the 20-event `perf stat`.
const MUX_COPIES: usize = 10;
/// Unpinned `perf record` runs at -smp 4.
const SMP_RECORDS: usize = 3;
/// Loop iterations of the overflow-timer reproducer: 12 M user cycles,
/// 120 periods.
const REPRO_N: u64 = 6_000_000;
/// IPI workload calls (`rvpmu-work ipi`).
const IPI_CALLS: u64 = 50;

/// The standard events perf can name: the 10 general events and the
/// cache events whose (cache, op) pair perf's parser accepts
/// (tools/perf/util/evsel.c evsel__hw_cache_stat: L1-icache has no
/// stores, iTLB and branch only loads); 42 of the 52 Linux asks the
/// firmware about.
fn standard_events() -> Vec<String> {
    let mut v: Vec<String> = [
        "cycles",
        "instructions",
        "cache-references",
        "cache-misses",
        "branches",
        "branch-misses",
        "bus-cycles",
        "stalled-cycles-frontend",
        "stalled-cycles-backend",
        "ref-cycles",
    ]
    .map(String::from)
    .to_vec();
    let ops: [(&str, &[&str]); 7] = [
        ("L1-dcache", &["load", "store", "prefetch"]),
        ("L1-icache", &["load", "prefetch"]),
        ("LLC", &["load", "store", "prefetch"]),
        ("dTLB", &["load", "store", "prefetch"]),
        ("iTLB", &["load"]),
        ("branch", &["load"]),
        ("node", &["load", "store", "prefetch"]),
    ];
    for (cache, cache_ops) in ops {
        for op in cache_ops {
            let access = match *op {
                "load" => "loads",
                "store" => "stores",
                _ => "prefetches",
            };
            v.push(format!("{cache}-{access}"));
            v.push(format!("{cache}-{op}-misses"));
        }
    }
    v
}

/// What the checks keep for the tables.
#[derive(Default)]
pub struct Kept {
    /// Events perf reported as supported (of the 52).
    pub supported: Option<BTreeSet<String>>,
    pub exact: Option<(u64, u64)>,
    pub record: Option<(u64, u64, f64)>,
    pub mux_worst: Option<f64>,
    pub kernel_events: Option<(u64, u64)>,
    pub ipi: Option<(u64, u64)>,
    pub smp_records: Vec<Option<u64>>,
    /// The QEMU reproducer's (samples, expected): first, after a counting
    /// event, again.
    pub repro: [Option<(u64, u64)>; 3],
}

pub(super) fn find<'a>(r: &'a [CmdResult], name: &str) -> Option<&'a CmdResult> {
    r.iter().find(|c| c.name == name)
}

pub(super) fn stat(r: &[CmdResult], name: &str) -> Vec<StatLine> {
    find(r, name)
        .map(|c| parse_stat_csv(&c.stderr))
        .unwrap_or_default()
}

pub(super) fn value(r: &[CmdResult], name: &str, event: &str) -> Option<u64> {
    stat(r, name).into_iter().find(|l| l.event == event)?.value
}

/// The checks on one kernel and firmware.
pub fn suite(guest: &Guest, fw: &Firmware, report: &mut Report) -> Kept {
    let mut s = Suite {
        kernel: guest.version,
        fw,
        report,
    };
    let mut kept = Kept::default();
    let Some([alu, hot]) = s.loop_bodies("perf", guest, ["rvpmu_alu_loop", "rvpmu_hot_a"]) else {
        return kept;
    };
    let events = standard_events();

    // -smp 1: counts, sampling, multiplexing, the standard events.
    let mut p = Plan::exact();
    // Sampling before any counting in the boot: QEMU 10.0.2 keeps a stale
    // overflow timer from a counting event (started near 2^63) and then
    // misses the first overflow of the next sampling event on that
    // counter until a context switch reprograms it (docs/anomalies.md).
    p.cmd("record", &format!("perf record -e cycles:u -c {RECORD_PERIOD} -o /root/perf.data -- rvpmu-work hot {HOT_N}"));
    p.cmd(
        "report",
        "perf report -i /root/perf.data --stdio --sort symbol",
    );
    p.cmd(
        "user",
        &format!("perf stat -x, -e instructions:u,cycles:u -- rvpmu-work alu {ALU_N}"),
    );
    p.cmd(
        "base",
        &format!(
            "perf stat -x, -e instructions:u,cycles:u -- rvpmu-work alu {}",
            2 * ALU_N
        ),
    );
    p.cmd("hot-base", "perf stat -x, -e cycles:u -- rvpmu-work hot 0");
    let mux: Vec<&str> = std::iter::repeat_n(["cycles:u", "instructions:u"], MUX_COPIES)
        .flatten()
        .collect();
    p.cmd(
        "mux",
        &format!(
            "perf stat -x, -e {} -- rvpmu-work alu {MUX_N}",
            mux.join(",")
        ),
    );
    p.cmd(
        "alone-c",
        &format!("perf stat -x, -e cycles:u -- rvpmu-work alu {MUX_N}"),
    );
    p.cmd(
        "alone-i",
        &format!("perf stat -x, -e instructions:u -- rvpmu-work alu {MUX_N}"),
    );
    p.cmd("uk", &format!("perf stat -x, -e cycles:u,instructions:u,cycles:k,instructions:k -- rvpmu-work alu {ALU_N}"));
    p.cmd(
        "events",
        &format!(
            "perf stat -x, -e {} -- rvpmu-work alu 1000",
            events.join(",")
        ),
    );
    let label = "perf -smp 1";
    if let Some(out) = boot(&mut s, guest, label, 1, &p) {
        let r = out.commands();
        let failed: Vec<String> = r
            .iter()
            .filter(|c| !c.ok())
            .map(|c| {
                format!(
                    "{} ({:?}): {}",
                    c.name,
                    c.status,
                    c.stderr.lines().last().unwrap_or("")
                )
            })
            .collect();
        s.check(
            &format!("{label}: every perf command exits 0"),
            failed.is_empty() && r.len() == p.cmds.len(),
            false,
            &format!("{} commands, status 0", p.cmds.len()),
            &if failed.is_empty() {
                format!("{} ran", r.len())
            } else {
                failed.join(" | ")
            },
            Some(&out),
        );

        // N and 2N iterations: the same digits to parse and the same
        // start-up, so the difference is N loop iterations exactly.
        for ev in ["instructions:u", "cycles:u"] {
            let readings = check_alu_difference(&mut s, label, &r, ev, alu, &out);
            if ev == "instructions:u" {
                kept.exact = readings;
            }
        }

        let rec = find(&r, "record").and_then(|c| parse_record_samples(&c.stderr));
        let rep = find(&r, "report")
            .map(|c| parse_report(&c.stdout))
            .unwrap_or_default();
        let base = value(&r, "hot-base", "cycles:u");
        let loop_cycles = 4 * HOT_N * hot;
        if let Some(b) = base {
            let total = loop_cycles + b;
            let periods = total / RECORD_PERIOD;
            let ok = rec.is_some_and(|n| n.abs_diff(periods) <= 2)
                && rep.samples == rec
                && rep.lost == 0;
            // OpenSBI 1.5.1 under 6.12 was seen writing 152 of 160: the peer
            // may fail (reported), ours may not.
            s.check(&format!("{label}: perf record -e cycles:u -c {RECORD_PERIOD}: samples = periods +-2"), ok, true,
                &format!("({hot} x 4 x {HOT_N} loop + {b} start-up) / {RECORD_PERIOD} = {periods} +-2, perf report agrees, 0 lost"),
                &format!("record {rec:?}, report {:?}, lost {}", rep.samples, rep.lost), Some(&out));
            let (a, bb) = (rep.share("rvpmu_hot_a"), rep.share("rvpmu_hot_b"));
            let (wa, wb) = (
                100.0 * (3 * HOT_N * hot) as f64 / total as f64,
                100.0 * (HOT_N * hot) as f64 / total as f64,
            );
            kept.record = rec.map(|n| (n, periods, a));
            s.check(
                &format!("{label}: perf report shares of rvpmu_hot_a / rvpmu_hot_b within 1 point"),
                (a - wa).abs() <= 1.0 && (bb - wb).abs() <= 1.0,
                true,
                &format!("{wa:.2}% / {wb:.2}% (3:1 loops of the same body, start-up elsewhere)"),
                &format!("{a:.2}% / {bb:.2}%"),
                Some(&out),
            );
        } else {
            s.check(
                &format!("{label}: perf stat of `hot 0`"),
                false,
                false,
                "a cycles:u count",
                "none",
                Some(&out),
            );
        }

        let lines = stat(&r, "mux");
        let alone = |ev: &str| {
            value(
                &r,
                if ev == "cycles:u" {
                    "alone-c"
                } else {
                    "alone-i"
                },
                ev,
            )
        };
        let mut worst: Option<f64> = None;
        let mut bad = Vec::new();
        let mut scaled = 0;
        for l in &lines {
            let dev = l
                .value
                .zip(alone(&l.event))
                .map(|(v, a)| (v as f64 - a as f64).abs() / a.max(1) as f64);
            if l.running_pct.is_some_and(|p| p < 100.0) {
                scaled += 1;
            }
            match dev {
                Some(d) if d <= 0.02 => worst = Some(worst.map_or(d, |w: f64| w.max(d))),
                _ => bad.push(format!("{} {:?} ({:?}%)", l.event, l.value, l.running_pct)),
            }
        }
        kept.mux_worst = worst.filter(|_| bad.is_empty());
        s.check(&format!("{label}: {} events in one perf stat (more than the 18 counters): scaled counts within 2% of each event alone", 2 * MUX_COPIES),
            lines.len() == 2 * MUX_COPIES && bad.is_empty() && scaled > 0, true,
            &format!("{} lines, each within 2% of `alone` ({:?} cycles:u, {:?} instructions:u), some multiplexed", 2 * MUX_COPIES, alone("cycles:u"), alone("instructions:u")),
            &format!("{} lines, {scaled} scaled, worst deviation {:?}, off: {}", lines.len(), worst.map(|w| format!("{:.3}%", w * 100.0)), if bad.is_empty() { "none".into() } else { bad.join(", ") }), Some(&out));

        let (ck, ik) = (
            value(&r, "uk", "cycles:k"),
            value(&r, "uk", "instructions:k"),
        );
        kept.kernel_events = ck.zip(ik);
        s.check(&format!("{label}: cycles:k and instructions:k beside their :u twins count (anomaly 1)"),
            ck.is_some_and(|v| v > 0) && ik.is_some_and(|v| v > 0), true,
            "both > 0 (the process's exec and exit run in the kernel); a second counter of the same event id reads 0 on QEMU unless the firmware refuses it",
            &format!("cycles:k {ck:?}, instructions:k {ik:?}"), Some(&out));

        // Linux 7.2 on an SBI >= 3.0 firmware asks event_get_info (FID 8)
        // once, for its 52 standard events, instead of probing each with
        // config_matching; a failing call is logged ("pmu_sbi_check_event_info
        // failed", a complaint of the boot check). Which events it found
        // is compared with 6.12's probing after both kernels ran.
        if guest.version.release == Release::V7_2 {
            let v3 = out.console.contains("SBI specification v3.0 detected");
            let failed = out.console.contains("pmu_sbi_check_event_info failed");
            s.check(&format!("{label}: Linux 7.2 learns the standard events through event_get_info (SBI 3.0)"),
                v3 && !failed, true,
                "\"SBI specification v3.0 detected\" and no \"pmu_sbi_check_event_info failed\"",
                &format!("SBI v3.0: {v3}, event_get_info failed: {failed}"), Some(&out));
        }
        let ev = stat(&r, "events");
        let sup: BTreeSet<String> = ev
            .iter()
            .filter(|l| l.status != "<not supported>")
            .map(|l| l.event.clone())
            .collect();
        s.check(
            &format!(
                "{label}: perf stat of the {} standard events perf can name reports each",
                events.len()
            ),
            ev.len() == events.len(),
            false,
            &format!("{} lines", events.len()),
            &format!("{} lines, {} supported: {:?}", ev.len(), sup.len(), sup),
            Some(&out),
        );
        kept.supported = Some(sup);
    }

    // The QEMU bug the plans above work around, still there: a sampling
    // event on a counter that a counting event used before misses its
    // first overflows until a context switch reprograms the counter
    // (QEMU 10.0.2 target/riscv/pmu.c keeps irq_overflow_left from the
    // counting start; docs/anomalies.md). If this check fails because
    // `after` is whole, QEMU was fixed and the ordering can go.
    // Under SCHED_FIFO with RT throttling off nothing preempts the loop,
    // so no context switch reprograms the counter: the run after the
    // counting event gets exactly 0 samples (its 12 ms loop ends long
    // before QEMU's stale delay, the virtual time of the counting start,
    // hundreds of ms after boot).
    let mut p = Plan::exact();
    p.sh("rt", "echo -1 > /proc/sys/kernel/sched_rt_runtime_us");
    let run = format!("rvpmu-overflow-repro {RECORD_PERIOD} {REPRO_N} u cycles rt");
    p.cmd("first", &run);
    p.cmd("count", "rvpmu-overflow-repro 0 1000");
    p.cmd("after", &run);
    p.cmd("again", &run);
    let label = "QEMU overflow-timer reproducer -smp 1";
    if let Some(out) = boot(&mut s, guest, label, 1, &p) {
        let r = out.commands();
        let samples = |name: &str| -> Option<(u64, u64)> {
            let line = find(&r, name)?
                .stdout
                .lines()
                .find(|l| l.starts_with("SUMMARY"))?
                .to_string();
            let field = |k: &str| {
                line.split_whitespace()
                    .find_map(|w| w.strip_prefix(k)?.parse::<u64>().ok())
            };
            Some((field("samples=")?, field("expected=")?))
        };
        let (first, after, again) = (samples("first"), samples("after"), samples("again"));
        kept.repro = [first, after, again];
        let whole = |x: Option<(u64, u64)>| {
            x.is_some_and(|(n, e)| n == e && e == 2 * REPRO_N / RECORD_PERIOD)
        };
        s.check(&format!("{label}: sampling after a counting event loses the first periods (QEMU bug, both firmwares)"),
            whole(first) && after.is_some_and(|(n, e)| n == 0 && e == 2 * REPRO_N / RECORD_PERIOD) && whole(again), false,
            &format!("first and again: {} samples (2 x {REPRO_N} / {RECORD_PERIOD}); after the counting event: 0 (SCHED_FIFO, no context switch)", 2 * REPRO_N / RECORD_PERIOD),
            &format!("first {first:?}, after {after:?}, again {again:?} (samples, expected)"), Some(&out));
    }

    // -smp 4: system-wide counting, firmware events, unpinned sampling.
    let mut p = Plan::exact();
    // One pinned `alu` per hart, all at once.
    let spread: String = (0..4)
        .map(|c| format!("taskset -c {c} rvpmu-work alu {ALU_N} & "))
        .collect::<String>()
        + "wait";
    // Sampling first (see the -smp 1 plan and docs/anomalies.md).
    for i in 0..SMP_RECORDS {
        p.cmd(&format!("record{i}"), &format!("perf record -e cycles:u -c {RECORD_PERIOD} -o /root/p{i}.data -- rvpmu-work hot {HOT_N}"));
    }
    p.argv(
        "all",
        [
            "perf",
            "stat",
            "-x,",
            "-a",
            "-A",
            "-e",
            "instructions:u",
            "--",
            "sh",
            "-c",
        ],
        &spread,
    );
    p.cmd(
        "ipi",
        &format!(
            "perf stat -x, -a -e {},{} -- rvpmu-work ipi {IPI_CALLS}",
            fw_event("fw_ipi_sent", 6),
            fw_event("fw_ipi_received", 7)
        ),
    );
    p.cmd("hot-base", "perf stat -x, -e cycles:u -- rvpmu-work hot 0");
    let label = "perf -smp 4";
    if let Some(out) = boot(&mut s, guest, label, 4, &p) {
        let r = out.commands();
        let per_cpu = |name: &str| -> Vec<(String, u64)> {
            // -A lines: "CPU0,value,unit,event,..." (the CPU column first).
            find(&r, name)
                .map(|c| {
                    c.stderr
                        .lines()
                        .filter_map(|l| {
                            let f: Vec<&str> = l.split(',').collect();
                            (f.len() > 4 && f[0].starts_with("CPU"))
                                .then(|| Some((f[0].to_string(), f[1].parse().ok()?)))
                                .flatten()
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        // Under icount QEMU derives a hart's instret from the global
        // instruction count (target/riscv/pmu.c accumulates icount deltas
        // into the mode the hart is in), so while all four harts are busy
        // each one's user count also takes in what the others executed:
        // not exact per hart. What holds: each hart counts at least its
        // own pinned loop, and no more than the virtual time the command
        // took (1 ns = 1 instruction of the whole machine).
        let a = per_cpu("all");
        let want = alu * ALU_N;
        let elapsed = find(&r, "all").map(|c| c.elapsed_ns).unwrap_or(0);
        s.check(&format!("{label}: perf stat -a -A instructions:u, one pinned `alu {ALU_N}` per hart"),
            a.len() == 4 && a.iter().all(|(_, v)| *v >= want && *v <= elapsed), false,
            &format!("4 CPU lines, each >= {want} (its own loop) and <= {elapsed} (the command's virtual time: all harts' instructions)"),
            &format!("{a:?}"), Some(&out));

        let lines = stat(&r, "ipi");
        let get = |n: &str| lines.iter().find(|l| l.event == n).and_then(|l| l.value);
        let (sent, recv) = (get("fw_ipi_sent"), get("fw_ipi_received"));
        kept.ipi = sent.zip(recv);
        s.check(&format!("{label}: firmware events through perf (cpu/config=0x8000000000000006/ and ..07/), `ipi {IPI_CALLS}`"),
            sent.is_some_and(|v| v >= IPI_CALLS) && recv.is_some_and(|v| v >= IPI_CALLS), false,
            &format!("fw_ipi_sent and fw_ipi_received >= {IPI_CALLS} over all harts (one IPI per call by construction)"),
            &format!("sent {sent:?}, received {recv:?}"), Some(&out));
        // OpenSBI 1.5.1 also counts the IPIs it sends itself for remote
        // fences, some still in flight when perf stops counting (seen: 69
        // sent, 66 received): the peer may miss this one (reported).
        s.check(&format!("{label}: firmware IPIs sent = received through perf"),
            sent.zip(recv).is_some_and(|(a, b)| a.abs_diff(b) <= 2.max(a / 100)), true,
            "received = sent within max(2, 1%) over all harts (-a also counts the scheduler's IPIs; one sent as perf stops may land after it)",
            &format!("sent {sent:?}, received {recv:?}"), Some(&out));

        if let Some(base) = value(&r, "hot-base", "cycles:u") {
            let periods = (4 * HOT_N * hot + base) / RECORD_PERIOD;
            let got: Vec<Option<u64>> = (0..SMP_RECORDS)
                .map(|i| {
                    find(&r, &format!("record{i}")).and_then(|c| parse_record_samples(&c.stderr))
                })
                .collect();
            kept.smp_records = got.clone();
            s.check(&format!("{label}: unpinned perf record, {SMP_RECORDS} runs: samples = periods +-2 each (anomaly 2)"),
                got.iter().all(|n| n.is_some_and(|n| n.abs_diff(periods) <= 2)), true,
                &format!("{periods} +-2 each"), &format!("{got:?}"), Some(&out));
        }
    }
    kept
}

/// The `user` and `base` commands of [`suite`] alone, natively: their
/// `instructions:u` (for the KVM checks run on their own).
#[cfg(test)]
pub(super) fn native_user_counts(guest: &Guest, fw: &Firmware) -> Option<(u64, u64)> {
    let mut p = Plan::exact();
    let user = "perf stat -x, -e instructions:u,cycles:u -- rvpmu-work alu";
    p.cmd("user", &format!("{user} {ALU_N}"));
    p.cmd("base", &format!("{user} {}", 2 * ALU_N));
    let out = guest.run_plan(fw, 1, Chosen::NONE, &p.text(), 300).ok()?;
    let r = out.commands();
    value(&r, "user", "instructions:u").zip(value(&r, "base", "instructions:u"))
}

fn boot(s: &mut Suite, guest: &Guest, label: &str, smp: u32, plan: &Plan) -> Option<Outcome> {
    const TIMEOUT_S: u64 = 600;
    let booted = guest.run_plan(s.fw, smp, Chosen::NONE, &plan.text(), TIMEOUT_S);
    s.judge_boot(label, Chosen::NONE, None, PLAN_MODE, TIMEOUT_S, booted)
}

/// The check that `ev` of `alu 2N` (command `base`) minus `alu N`
/// (command `user`) is the loop's `alu` instructions times N, exactly
/// (icount: one instruction, one cycle); the two readings.
fn check_alu_difference(
    s: &mut Suite<'_>,
    label: &str,
    r: &[CmdResult],
    ev: &str,
    alu: u64,
    out: &Outcome,
) -> Option<(u64, u64)> {
    let want = alu * ALU_N;
    let (n, n2) = (value(r, "user", ev), value(r, "base", ev));
    let got = n.zip(n2).map(|(n, n2)| n2 as i64 - n as i64);
    s.check(
        &format!(
            "{label}: perf stat {ev} of `alu {}` minus `alu {ALU_N}` (icount: exact)",
            2 * ALU_N
        ),
        got == Some(want as i64),
        false,
        &format!("{alu} x {ALU_N} = {want} (loop body from the disassembly)"),
        &format!("{n2:?} - {n:?} = {got:?}"),
        Some(out),
    );
    n.zip(n2)
}

/// rustsbi-fw, the RustSBI-based firmware (crates/rustsbi-fw), whose PMU
/// is rvpmu's behind rustsbi's dispatch and the RustSBI adapter: one boot
/// at -smp 1 with the exact counts and the sampling of [`suite`], judged
/// the same way.
pub fn rustsbi_fw(guest: &Guest, fw: &Firmware, report: &mut Report) {
    let mut s = Suite {
        kernel: guest.version,
        fw,
        report,
    };
    let label = "rustsbi-fw perf -smp 1";
    let Some([alu, hot]) = s.loop_bodies(label, guest, ["rvpmu_alu_loop", "rvpmu_hot_a"]) else {
        return;
    };
    let mut p = Plan::exact();
    // Sampling first, as in `suite` (the QEMU overflow-timer bug).
    p.cmd("record", &format!("perf record -e cycles:u -c {RECORD_PERIOD} -o /root/perf.data -- rvpmu-work hot {HOT_N}"));
    p.cmd(
        "report",
        "perf report -i /root/perf.data --stdio --sort symbol",
    );
    p.cmd("hot-base", "perf stat -x, -e cycles:u -- rvpmu-work hot 0");
    for (name, n) in [("user", ALU_N), ("base", 2 * ALU_N)] {
        p.cmd(
            name,
            &format!("perf stat -x, -e instructions:u,cycles:u -- rvpmu-work alu {n}"),
        );
    }
    let Some(out) = boot(&mut s, guest, label, 1, &p) else {
        return;
    };
    let r = out.commands();
    for ev in ["instructions:u", "cycles:u"] {
        check_alu_difference(&mut s, label, &r, ev, alu, &out);
    }
    let rec = find(&r, "record").and_then(|c| parse_record_samples(&c.stderr));
    let rep = find(&r, "report")
        .map(|c| parse_report(&c.stdout))
        .unwrap_or_default();
    let base = value(&r, "hot-base", "cycles:u").unwrap_or(0);
    let total = 4 * HOT_N * hot + base;
    let periods = total / RECORD_PERIOD;
    let (a, wa) = (
        rep.share("rvpmu_hot_a"),
        100.0 * (3 * HOT_N * hot) as f64 / total as f64,
    );
    s.check(
        &format!("{label}: perf record -e cycles:u -c {RECORD_PERIOD}: samples = periods +-2, rvpmu_hot_a's share within 1 point"),
        base > 0 && rec.is_some_and(|n| n.abs_diff(periods) <= 2) && rep.samples == rec && rep.lost == 0 && (a - wa).abs() <= 1.0,
        false,
        &format!("({hot} x 4 x {HOT_N} loop + {base} start-up) / {RECORD_PERIOD} = {periods} +-2, perf report agrees, 0 lost, {wa:.2}%"),
        &format!("record {rec:?}, report {:?}, lost {}, {a:.2}%", rep.samples, rep.lost),
        Some(&out),
    );
}

/// For each firmware, the events perf finds supported must be the same on
/// 6.12 (config_matching per event) and 7.2 (event_get_info on SBI 3.0):
/// the firmware's two answers agree. Returns each check's label and
/// whether it passed.
pub fn compare_kernels(kept: &[(Version, String, Kept)]) -> Vec<(String, bool)> {
    let mut checks = Vec::new();
    let mut fws: Vec<&String> = kept.iter().map(|(_, f, _)| f).collect();
    fws.sort();
    fws.dedup();
    for fw in fws {
        let sets: Vec<(&Version, &BTreeSet<String>)> = kept
            .iter()
            .filter(|(_, f, _)| f == fw)
            .filter_map(|(k, _, p)| Some((k, p.supported.as_ref()?)))
            .collect();
        let [(k1, a), (k2, b)] = sets.as_slice() else {
            continue;
        };
        let label = format!("[{fw}] the events perf finds supported are the same on {k1} and {k2}");
        let got = if a == b {
            format!("{} events: {:?}", a.len(), a)
        } else {
            format!(
                "only {k1}: {:?}; only {k2}: {:?}",
                a.difference(b).collect::<Vec<_>>(),
                b.difference(a).collect::<Vec<_>>()
            )
        };
        let verdict = if a == b {
            crate::suite::Verdict::Pass
        } else {
            crate::suite::Verdict::Fail { context: None }
        };
        crate::suite::print_check(
            &label,
            verdict,
            "one set (config_matching and event_get_info agree)",
            &got,
        );
        checks.push((label, a == b));
    }
    checks
}

/// Side-by-side tables of the real-perf checks, kernels x firmwares.
pub fn print_tables(kept: &[(Version, String, Kept)]) {
    crate::host::step("real perf, kernels x firmwares (icount)");
    println!(
        "{:<10} {:<16} {:>22} {:>20} {:>12} {:>16} {:>12} {:>14} {:>16}",
        "kernel",
        "firmware",
        "instr:u alu N / 2N",
        "record samples/periods",
        "hot_a %",
        "20 events worst",
        ":k beside :u",
        "ipi sent/recv",
        "QEMU bug 1st/after/again"
    );
    for (k, fw, p) in kept {
        println!(
            "{:<10} {fw:<16} {:>22} {:>20} {:>12} {:>16} {:>12} {:>14} {:>16}",
            k.to_string(),
            p.exact
                .map(|(a, b)| format!("{a} / {b}"))
                .unwrap_or("-".into()),
            p.record
                .map(|(n, w, _)| format!("{n} / {w}"))
                .unwrap_or("-".into()),
            p.record
                .map(|(.., a)| format!("{a:.2}"))
                .unwrap_or("-".into()),
            p.mux_worst
                .map(|w| format!("{:.3}%", w * 100.0))
                .unwrap_or("off >2%".into()),
            p.kernel_events
                .map(|(c, _)| if c > 0 { "counts" } else { "reads 0" })
                .unwrap_or("-")
                .to_string(),
            p.ipi
                .map(|(a, b)| format!("{a} / {b}"))
                .unwrap_or("-".into()),
            p.repro
                .iter()
                .map(|x| x.map(|(n, _)| n.to_string()).unwrap_or("-".into()))
                .collect::<Vec<_>>()
                .join("/")
        );
    }
}
