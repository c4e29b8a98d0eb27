//! The end-to-end checks: boots of our firmware and of Debian's OpenSBI
//! 1.5.1 under icount, each check printed as one line. Expectations come
//! from derivations stated next to each check (the workload's disassembly,
//! QEMU virt's counter layout, the number of calls the guest makes), never
//! from earlier output.

use super::qemu::{Firmware, Outcome};
use super::{Guest, DEMO_ITERS};
use crate::util::step;
use anyhow::{bail, Result};
use serde_json::Value;

/// Hardware counters Linux must report on QEMU virt: cycle + instret + the
/// 16 mhpmcounters of the generated DT (mask 0x7fff8, FACTS.md 3).
const QEMU_HW_COUNTERS: u64 = 18;
/// Sampling: period and loop iterations (2 instructions each) -> 60 periods.
const SAMPLE_PERIOD: u64 = 1_000_000;
const SAMPLE_ITERS: u64 = 30_000_000;
/// Stress rounds (each opens 24 events).
const STRESS_ROUNDS: u64 = 1000;
const STRESS_EVENTS_PER_ROUND: u64 = 24;
/// User instructions the glue between the enable and disable ioctls may add
/// around the workload (a return from one libc wrapper, a call into the
/// next, the closure's calls): far below this bound.
const GLUE_MAX: u64 = 1000;

// ------------------------------------------------------------ demo table

/// One row of the demo table.
pub struct Row {
    pub pass: String,
    pub event: String,
    pub value: Option<u64>,
    pub enabled: Option<u64>,
    pub running: Option<u64>,
    pub error: Option<String>,
}

pub fn demo_rows(out: &Outcome) -> Vec<Row> {
    let mut rows = Vec::new();
    for r in out.scenario("demo") {
        for e in r["events"].as_array().into_iter().flatten() {
            rows.push(Row {
                pass: r["pass"].as_str().unwrap_or("").into(),
                event: e["name"].as_str().unwrap_or("?").into(),
                value: e["value"].as_u64(),
                enabled: e["enabled"].as_u64(),
                running: e["running"].as_u64(),
                error: e["error"].as_str().map(String::from),
            });
        }
    }
    rows
}

/// What an event means, for the table.
pub fn meaning(event: &str) -> &'static str {
    let base = event.trim_end_matches(":u").trim_end_matches(":k");
    let filter = if event.ends_with(":u") {
        1
    } else if event.ends_with(":k") {
        2
    } else {
        0
    };
    match (base, filter) {
        ("cycles", 0) => "cycles in U+S+M mode (icount: 1 per instruction)",
        ("cycles", 1) => "cycles in user mode only (exclude_kernel -> SINH)",
        ("cycles", _) => "cycles in kernel mode only (exclude_user -> UINH)",
        ("instructions", 0) => "instructions retired in U+S+M mode",
        ("instructions", 1) => "user-mode instructions: the loop + page walk",
        ("instructions", _) => "kernel-mode instructions (ioctls, ticks)",
        ("dTLB-load-misses", _) => "data TLB refills on loads (QEMU softmmu TLB)",
        ("dTLB-store-misses", _) => "data TLB refills on stores (0: the load refilled it)",
        ("iTLB-load-misses", _) => "instruction TLB refills",
        ("fw_set_timer", _) => "SBI set_timer calls (0: Linux uses Sstc stimecmp)",
        ("fw_ipi_sent", _) => "IPIs this hart had the firmware send",
        ("fw_ipi_received", _) => "IPIs the firmware delivered to this hart",
        ("fw_fence_i_sent", _) => "remote FENCE.I requests sent",
        ("fw_fence_i_received", _) => "remote FENCE.I requests handled here",
        ("fw_sfence_vma_sent", _) => "remote SFENCE.VMA requests sent",
        ("fw_sfence_vma_received", _) => "remote SFENCE.VMA requests handled here",
        ("fw_sfence_vma_asid_sent", _) => "remote SFENCE.VMA.ASID requests sent",
        ("fw_sfence_vma_asid_received", _) => "remote SFENCE.VMA.ASID handled here",
        ("fw_illegal_insn", _) => "illegal instructions trapped to the firmware",
        _ => "",
    }
}

fn fmt_opt(v: Option<u64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

pub fn print_demo_table(rows: &[Row]) {
    println!(
        "{:<28} {:>12} {:>12} {:>12}  {}",
        "event", "count", "enabled ns", "running ns", "meaning"
    );
    for r in rows {
        match &r.error {
            Some(e) => println!("{:<28} {:>12}  {}", r.event, "n/a", e),
            None => println!(
                "{:<28} {:>12} {:>12} {:>12}  {}",
                r.event,
                fmt_opt(r.value),
                fmt_opt(r.enabled),
                fmt_opt(r.running),
                meaning(&r.event)
            ),
        }
    }
}

/// The kernel's riscv-pmu-sbi lines (extension, counters, snapshot).
pub fn kernel_pmu_lines(out: &Outcome) -> Vec<String> {
    out.console
        .lines()
        .filter(|l| l.contains("riscv-pmu-sbi") || l.contains("SBI PMU") || l.contains("riscv-pv"))
        .map(|l| match l.find("] ") {
            Some(i) if l.starts_with('[') => l[i + 2..].to_string(),
            _ => l.to_string(),
        })
        .collect()
}

// ------------------------------------------------------------ harness

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Pass,
    Fail,
    /// The peer firmware lacks a feature: reported, not failed.
    Lacks,
}

struct Report {
    passed: u32,
    failed: Vec<String>,
    lacks: Vec<String>,
}

/// Checks for one firmware.
struct Suite<'a> {
    fw: &'a Firmware,
    report: &'a mut Report,
}

impl Suite<'_> {
    /// Record one check. `feature`: a capability the spec makes optional
    /// (the peer may lack it); our firmware must have it.
    fn check(
        &mut self,
        name: &str,
        ok: bool,
        feature: bool,
        expected: &str,
        got: &str,
        out: Option<&Outcome>,
    ) {
        let status = match (ok, feature && self.fw.is_opensbi()) {
            (true, _) => Status::Pass,
            (false, true) => Status::Lacks,
            (false, false) => Status::Fail,
        };
        let label = format!("[{}] {name}", self.fw.name);
        match status {
            Status::Pass => {
                println!("  \x1b[32mpass\x1b[0m  {label}: {got}");
                self.report.passed += 1;
            }
            Status::Lacks => {
                println!("  \x1b[33mlacks\x1b[0m {label}: expected {expected}, got {got} (peer lacks this; not a failure)");
                self.report.lacks.push(label);
            }
            Status::Fail => {
                println!("  \x1b[31mFAIL\x1b[0m  {label}\n        expected: {expected}\n        got:      {got}");
                if let Some(o) = out {
                    println!("        guest console tail:");
                    for l in o.tail(25).lines() {
                        println!("        | {l}");
                    }
                }
                self.report.failed.push(label);
            }
        }
    }

    /// Boot and check that the boot itself was clean; returns the outcome
    /// only when /init finished.
    fn boot(
        &mut self,
        guest: &Guest,
        label: &str,
        smp: u32,
        args: &str,
        timeout_s: u64,
    ) -> Option<Outcome> {
        let out = match guest.boot(self.fw, smp, args, timeout_s) {
            Ok(o) => o,
            Err(e) => {
                self.check(
                    &format!("{label}: QEMU starts"),
                    false,
                    false,
                    "QEMU to start",
                    &format!("{e:#}"),
                    None,
                );
                return None;
            }
        };
        let bad = complaints(&out.console);
        let finished =
            !out.timed_out && out.done.as_deref() == Some("ok") && out.bad_results.is_empty();
        let got = if out.timed_out {
            format!("timed out after {timeout_s} s")
        } else if !bad.is_empty() {
            format!("console complained: {}", bad.join(" | "))
        } else {
            format!(
                "/init: {:?}, {} result(s), {} unparsable; {:.1} s wall",
                out.done,
                out.results.len(),
                out.bad_results.len(),
                out.wall.as_secs_f64()
            )
        };
        self.check(
            &format!("{label}: boots to /init, finishes, powers off, no kernel warning"),
            finished && bad.is_empty(),
            false,
            "RVPMU-DONE ok; no firmware/kernel line with warn, error, fail, panic, oops, BUG, invalid",
            &got,
            Some(&out),
        );
        finished.then_some(out)
    }
}

/// Console lines from the firmware or the kernel (not /init's own report)
/// that signal trouble. A clean boot on either firmware has none.
fn complaints(console: &str) -> Vec<&str> {
    const WORDS: [&str; 8] = [
        "warn",
        "error",
        "fail",
        "panic",
        "oops",
        "bug:",
        "unable to handle",
        "invalid",
    ];
    let mut in_init = false;
    let mut bad = Vec::new();
    for l in console.lines() {
        if l.starts_with("rvpmu /init:") {
            in_init = true;
        }
        let from_init = in_init && !l.starts_with('[');
        let lower = l.to_ascii_lowercase();
        if !from_init && WORDS.iter().any(|w| lower.contains(w)) {
            bad.push(l);
        }
    }
    bad
}

fn within(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= want.abs() * rel
}

fn event<'a>(r: &'a Value, name: &str) -> Option<&'a Value> {
    r["events"].as_array()?.iter().find(|e| e["name"] == name)
}

fn val(r: &Value, name: &str) -> Option<u64> {
    event(r, name)?["value"].as_u64()
}

/// Counter numbers from "riscv-pmu-sbi: N firmware and M hardware counters".
fn counter_line(out: &Outcome) -> Option<(u64, u64)> {
    let l = out
        .console
        .lines()
        .find(|l| l.contains("firmware and") && l.contains("hardware counters"))?;
    let w: Vec<&str> = l.split_whitespace().collect();
    let i = w.iter().position(|x| *x == "firmware")?;
    Some((
        w.get(i.checked_sub(1)?)?.parse().ok()?,
        w.get(i + 2)?.parse().ok()?,
    ))
}

/// Per-iteration instruction counts derived from the built /init.
struct Derived {
    alu: u64,
    walk: u64,
}

/// What a suite leaves for the side-by-side report.
#[derive(Default)]
struct Kept {
    demo: Option<Outcome>,
    fwevents: Option<Outcome>,
}

fn suite(guest: &Guest, d: &Derived, fw: &Firmware, report: &mut Report) -> Kept {
    step(&format!("Linux e2e on {} ({})", fw.name, fw.path.display()));
    let mut s = Suite { fw, report };

    // Boots, 1 and 2 harts.
    for smp in [1u32, 2] {
        let Some(out) = s.boot(
            guest,
            &format!("boot -smp {smp}"),
            smp,
            "rvpmu.mode=boot",
            120,
        ) else {
            continue;
        };
        let avail = out.console.contains("SBI PMU extension is available");
        s.check(
            &format!("boot -smp {smp}: kernel finds the SBI PMU extension"),
            avail,
            false,
            "\"SBI PMU extension is available\"",
            if avail { "found" } else { "missing" },
            Some(&out),
        );
        let ctrs = counter_line(&out);
        let ok = matches!(ctrs, Some((fw_n, hw)) if hw == QEMU_HW_COUNTERS && fw_n > 0);
        s.check(&format!("boot -smp {smp}: counter count"), ok, false,
            &format!("{QEMU_HW_COUNTERS} hardware counters (cycle, instret, 16 mhpmcounters) and >0 firmware counters"),
            &format!("{ctrs:?} (firmware, hardware)"), Some(&out));
        let snap = out.console.contains("SBI PMU snapshot detected");
        s.check(
            &format!("boot -smp {smp}: snapshot shared memory offered"),
            snap,
            true,
            "\"SBI PMU snapshot detected\"",
            if snap { "detected" } else { "not offered" },
            Some(&out),
        );
        let r = out.scenario("boot");
        let l = r.first().and_then(|r| r["loop1000"]["value"].as_u64());
        let want = 1000 * d.alu;
        s.check(
            &format!("boot -smp {smp}: user instructions of a 1000-iteration loop on cpu0"),
            l.is_some_and(|v| v >= want && v <= want + GLUE_MAX),
            false,
            &format!("{} x 1000 = {want} (+ <= {GLUE_MAX} glue)", d.alu),
            &format!("{l:?}"),
            Some(&out),
        );
        let cpus = r.first().and_then(|r| r["cpus"].as_u64());
        s.check(
            &format!("boot -smp {smp}: all harts online"),
            cpus == Some(smp as u64),
            false,
            &format!("{smp} CPUs"),
            &format!("{cpus:?}"),
            Some(&out),
        );
        if smp > 1 {
            let h = r
                .first()
                .map(|r| r["hotplug"].clone())
                .unwrap_or(Value::Null);
            let loop_insns = h["loop1000"]["value"].as_u64().unwrap_or(0);
            let ok = h["offline"] == ""
                && h["online"] == ""
                && h["offline_seen"] == true
                && h["online_seen"] == true
                && loop_insns >= want
                && loop_insns <= want + GLUE_MAX;
            s.check("boot -smp 2: cpu1 offline/online via sysfs (SBI HSM), then counts on cpu1", ok, false,
                &format!("both writes succeed, cpu1 leaves and rejoins the online list, {want}..={} user instructions counted on cpu1", want + GLUE_MAX),
                &h.to_string(), Some(&out));
        }
    }

    // Demo counts, 1 hart (under icount, -smp 1 gives exact per-hart counts).
    let demo = s.boot(
        guest,
        "demo -smp 1",
        1,
        &format!("rvpmu.mode=demo rvpmu.iters={DEMO_ITERS}"),
        120,
    );
    if let Some(out) = &demo {
        let rs = out.scenario("demo");
        let pass = |name: &str| {
            rs.iter()
                .find(|r| r["pass"] == name)
                .copied()
                .cloned()
                .unwrap_or(Value::Null)
        };
        let (all, user, kern, fwp) = (pass("all"), pass("user"), pass("kernel"), pass("firmware"));
        let pages = all["walk_pages"].as_u64().unwrap_or(0);
        let rounds = all["walk_rounds"].as_u64().unwrap_or(0);
        let expect = d.alu * DEMO_ITERS + d.walk * pages * rounds;
        let deriv = format!(
            "{} x {DEMO_ITERS} + {} x {pages} x {rounds} = {expect}",
            d.alu, d.walk
        );
        let iu = val(&user, "instructions:u");
        s.check(
            "demo: instructions:u of the fixed workload",
            iu.is_some_and(|v| v >= expect && v <= expect + GLUE_MAX),
            false,
            &format!("{deriv} (+ <= {GLUE_MAX} glue)"),
            &format!("{iu:?}"),
            Some(out),
        );
        let i = val(&all, "instructions");
        s.check(
            "demo: instructions within 1% of the derivation",
            i.is_some_and(|v| v >= expect && within(v as f64, expect as f64, 0.01)),
            false,
            &format!("{deriv} .. +1%"),
            &format!("{i:?}"),
            Some(out),
        );
        let c = val(&all, "cycles");
        s.check(
            "demo: cycles within 1% of instructions (icount: 1 cycle per instruction)",
            matches!((c, i), (Some(c), Some(i)) if within(c as f64, i as f64, 0.01)),
            false,
            &format!("~{i:?}"),
            &format!("{c:?}"),
            Some(out),
        );
        for ev in ["instructions", "cycles"] {
            let (a, u, k) = (
                val(&all, ev),
                val(&user, &format!("{ev}:u")),
                val(&kern, &format!("{ev}:k")),
            );
            s.check(&format!("demo: {ev}:u + {ev}:k within 1% of {ev}"),
                matches!((a, u, k), (Some(a), Some(u), Some(k)) if within((u + k) as f64, a as f64, 0.01)), false,
                &format!("{a:?}"), &format!("{u:?} + {k:?}"), Some(out));
        }
        let dl = val(&all, "dTLB-load-misses");
        s.check("demo: dTLB-load-misses", dl.is_some_and(|v| v >= pages), false,
            &format!(">= {pages}: the walk cycles through {pages} pages, 4x QEMU's initial 256-entry softmmu TLB"),
            &format!("{dl:?}"), Some(out));
        for (pname, p) in [
            ("all", &all),
            ("user", &user),
            ("kernel", &kern),
            ("firmware", &fwp),
        ] {
            let evs = p["events"].as_array().cloned().unwrap_or_default();
            let bad: Vec<String> = evs
                .iter()
                .filter(|e| {
                    e["error"].is_string()
                        || e["enabled"].as_u64().unwrap_or(0) == 0
                        || e["running"] != e["enabled"]
                })
                .map(|e| e.to_string())
                .collect();
            s.check(
                &format!("demo: {pname} events open and count the whole time"),
                !evs.is_empty() && bad.is_empty(),
                false,
                "every event opened, time_running == time_enabled > 0",
                &if evs.is_empty() {
                    "no events".into()
                } else if bad.is_empty() {
                    format!("{} events", evs.len())
                } else {
                    bad.join(", ")
                },
                Some(out),
            );
        }
    }

    // Sampling, 1 and 2 harts (with our firmware, through snapshot memory).
    for smp in [1u32, 2] {
        let args =
            format!("rvpmu.mode=sampling rvpmu.iters={SAMPLE_ITERS} rvpmu.period={SAMPLE_PERIOD}");
        let Some(out) = s.boot(guest, &format!("sampling -smp {smp}"), smp, &args, 120) else {
            continue;
        };
        let snap = out.console.contains("SBI PMU snapshot detected");
        let periods = d.alu * SAMPLE_ITERS / SAMPLE_PERIOD;
        for r in out.scenario("sampling") {
            let ev = r["event"].as_str().unwrap_or("?");
            let n = r["samples"].as_u64();
            s.check(&format!("sampling -smp {smp}{}: {ev} samples", if snap { " (snapshot)" } else { "" }),
                n.is_some_and(|n| (55..=65).contains(&n)) && r["lost"] == 0, false,
                &format!("55..=65 samples ({} x {SAMPLE_ITERS} / {SAMPLE_PERIOD} = {periods} periods, kernel adds a little), 0 lost", d.alu),
                &format!("{n:?} samples, {} lost, {} throttled", r["lost"], r["throttle"]), Some(&out));
        }
        if out.scenario("sampling").len() != 2 {
            s.check(
                &format!("sampling -smp {smp}: both events reported"),
                false,
                false,
                "cycles and instructions",
                &out.scenario("sampling").len().to_string(),
                Some(&out),
            );
        }
    }

    // Firmware events across two harts.
    let fwevents = s.boot(guest, "fwevents -smp 2", 2, "rvpmu.mode=fwevents", 300);
    if let Some(out) = fwevents.clone() {
        if let Some(r) = out.scenario("fwevents").first() {
            let calls = r["calls"].as_u64().unwrap_or(0);
            let get =
                |name: &str, cpu: &str| event(r, name).and_then(|e| e[cpu].as_u64()).unwrap_or(0);
            s.check(
                "fwevents: triggering syscalls succeed",
                r["call_errors"] == 0,
                false,
                "0 errors",
                &r["call_errors"].to_string(),
                Some(&out),
            );
            let (ipi_s, ipi_r) = (get("fw_ipi_sent", "cpu0"), get("fw_ipi_received", "cpu1"));
            s.check("fwevents: IPIs sent on hart 0 = received on hart 1", ipi_s >= calls && ipi_r >= calls && ipi_s.abs_diff(ipi_r) <= 2.max(ipi_s / 100), false,
                &format!(">= {calls} (one membarrier IPI per call) on both sides, equal within max(2, 1%) (a pending IPI is one bit: two sends may merge)"),
                &format!("sent {ipi_s}, received {ipi_r}"), Some(&out));
            let (fi_s, fi_r) = (
                get("fw_fence_i_sent", "cpu0"),
                get("fw_fence_i_received", "cpu1"),
            );
            s.check(
                "fwevents: remote FENCE.I sent on hart 0 = received on hart 1",
                fi_s >= calls && fi_r == fi_s,
                false,
                &format!("sent >= {calls} (one per riscv_flush_icache call), received == sent"),
                &format!("sent {fi_s}, received {fi_r}"),
                Some(&out),
            );
            let sv_s = get("fw_sfence_vma_sent", "cpu0") + get("fw_sfence_vma_asid_sent", "cpu0");
            let sv_r =
                get("fw_sfence_vma_received", "cpu1") + get("fw_sfence_vma_asid_received", "cpu1");
            s.check(
                "fwevents: remote SFENCE.VMA(.ASID) sent on hart 0 = received on hart 1",
                sv_s >= calls && sv_r == sv_s,
                false,
                &format!("sent >= {calls} (one per write-protecting mprotect), received == sent"),
                &format!("sent {sv_s}, received {sv_r}"),
                Some(&out),
            );
            // Hart 1 only spins, so whatever hart 0 "received" it sent to
            // itself (Linux includes the calling hart in an rfence mask).
            // The spec counts requests "from other hart" only.
            let selfr: u64 = [
                "fw_fence_i_received",
                "fw_sfence_vma_received",
                "fw_sfence_vma_asid_received",
            ]
            .iter()
            .map(|n| get(n, "cpu0"))
            .sum();
            s.check(
                "fwevents: a hart's requests to itself count as neither sent nor received (spec: \"other hart\")",
                selfr == 0,
                true,
                "0 fence requests received on hart 0 (hart 1 sends none)",
                &format!("{selfr} received on hart 0"),
                Some(&out),
            );
        } else {
            s.check(
                "fwevents: result reported",
                false,
                false,
                "an RVPMU-RESULT line",
                "none",
                Some(&out),
            );
        }
    }

    // Stress, 4 harts.
    let args = format!("rvpmu.mode=stress rvpmu.rounds={STRESS_ROUNDS}");
    if let Some(out) = s.boot(guest, "stress -smp 4", 4, &args, 600) {
        if let Some(r) = out.scenario("stress").first() {
            let rounds = r["rounds"].as_u64().unwrap_or(0);
            let ok = rounds >= STRESS_ROUNDS
                && r["opened"].as_u64() == Some(rounds * STRESS_EVENTS_PER_ROUND)
                && r["open_errors"] == 0
                && r["read_errors"] == 0
                && r["thread_errors"].as_array().is_some_and(|a| a.is_empty());
            s.check("stress: open/enable/read/close rounds without error", ok, false,
                &format!(">= {STRESS_ROUNDS} rounds x {STRESS_EVENTS_PER_ROUND} events, no open/read/thread error"),
                &format!("{} rounds, {} opened, {} open errors, {} read errors, thread errors {}", rounds, r["opened"], r["open_errors"], r["read_errors"], r["thread_errors"]), Some(&out));
            let mux = r["multiplexed"].as_u64().unwrap_or(0);
            s.check(
                "stress: events were multiplexed",
                mux > 0,
                false,
                "some events with 0 < time_running < time_enabled (24 events > 18 counters)",
                &format!(
                    "{mux} multiplexed, {} never ran, {} ran fully",
                    r["never_ran"], r["full"]
                ),
                Some(&out),
            );
            let fwn = r["fw_counters"].as_u64().unwrap_or(0);
            let (before, after) = (
                r["before"].as_array().cloned().unwrap_or_default(),
                r["after"].as_array().cloned().unwrap_or_default(),
            );
            let cap = |v: &Value| {
                (
                    v["hw_full"].as_u64().unwrap_or(0),
                    v["fw_full"].as_u64().unwrap_or(0),
                )
            };
            let same =
                before.len() == 4 && before.iter().zip(&after).all(|(b, a)| cap(b) == cap(a));
            s.check(
                "stress: every counter free again afterwards (pinned capacity unchanged)",
                same,
                false,
                "per hart: pinned (hardware, firmware) events running fully after == before",
                &format!(
                    "before {:?}, after {:?}",
                    before.iter().map(cap).collect::<Vec<_>>(),
                    after.iter().map(cap).collect::<Vec<_>>()
                ),
                Some(&out),
            );
            let base_ok =
                !before.is_empty() && before.iter().all(|b| cap(b) == (QEMU_HW_COUNTERS, fwn));
            s.check("stress: pinned events can take every counter (HPM-only events first, then cycles/instructions)", base_ok, false,
                &format!("per hart ({QEMU_HW_COUNTERS}, {fwn}): the 16 HPM counters, cycle and instret, and every firmware counter"),
                &format!("{:?}", before.iter().map(cap).collect::<Vec<_>>()), Some(&out));
        } else {
            s.check(
                "stress: result reported",
                false,
                false,
                "an RVPMU-RESULT line",
                "none",
                Some(&out),
            );
        }
    }
    Kept { demo, fwevents }
}

/// Build everything, run the suite on our firmware and on OpenSBI, print
/// the demo side by side, fail if any non-peer check failed.
pub fn run_all() -> Result<()> {
    let guest = Guest::build()?;
    let d = Derived {
        alu: super::initramfs::loop_body_instructions(&guest.initramfs.init_elf, "rvpmu_alu_loop")?,
        walk: super::initramfs::loop_body_instructions(
            &guest.initramfs.init_elf,
            "rvpmu_page_walk",
        )?,
    };
    step(&format!(
        "derived from the disassembly of /init: rvpmu_alu_loop {} instructions/iteration, rvpmu_page_walk {} instructions/page",
        d.alu, d.walk
    ));
    let mut report = Report {
        passed: 0,
        failed: Vec::new(),
        lacks: Vec::new(),
    };
    let ours = match super::our_firmware() {
        Ok(f) => Some(f),
        Err(e) => {
            println!("  \x1b[31mFAIL\x1b[0m  [rvpmu-fw] firmware builds\n        expected: crate::firmware::build() gives a -bios image\n        got:      {e:#}\n        (the checks on our firmware did not run)");
            report.failed.push("[rvpmu-fw] firmware builds".into());
            None
        }
    };
    let ours_kept = ours
        .as_ref()
        .map(|f| suite(&guest, &d, f, &mut report))
        .unwrap_or_default();
    let peer = Firmware::opensbi();
    let peer_kept = suite(&guest, &d, &peer, &mut report);
    let (ours_demo, peer_demo) = (ours_kept.demo, peer_kept.demo);

    step("demo, side by side (-smp 1, icount)");
    let a = ours_demo.as_ref().map(demo_rows).unwrap_or_default();
    let b = peer_demo.as_ref().map(demo_rows).unwrap_or_default();
    print_side_by_side(&a, &b);
    step("firmware events per hart, side by side (-smp 2: hart 0 sends, hart 1 receives)");
    print_fwevents_side_by_side(ours_kept.fwevents.as_ref(), peer_kept.fwevents.as_ref());
    if let (Some(o), Some(p)) = (&ours_demo, &peer_demo) {
        println!(
            "\nkernel on rvpmu-fw:    {}",
            kernel_pmu_lines(o).join(" | ")
        );
        println!("kernel on OpenSBI:     {}", kernel_pmu_lines(p).join(" | "));
    }

    println!(
        "\nLinux e2e: {} passed, {} failed, {} reported as lacking in the peer",
        report.passed,
        report.failed.len(),
        report.lacks.len()
    );
    for l in &report.lacks {
        println!("  peer lacks: {l}");
    }
    if !report.failed.is_empty() {
        bail!("Linux e2e checks failed:\n  {}", report.failed.join("\n  "));
    }
    Ok(())
}

fn print_side_by_side(ours: &[Row], peer: &[Row]) {
    println!(
        "{:<28} {:>14} {:>14}  {}",
        "event", "rvpmu-fw", "OpenSBI 1.5.1", "meaning"
    );
    let names: Vec<&String> = if ours.is_empty() {
        peer.iter().map(|r| &r.event).collect()
    } else {
        ours.iter().map(|r| &r.event).collect()
    };
    let cell = |rows: &[Row], n: &str| -> String {
        match rows.iter().find(|r| &r.event == n) {
            Some(Row { error: Some(e), .. }) => e.clone(),
            Some(r) => fmt_opt(r.value),
            None => "-".into(),
        }
    };
    for n in names {
        println!(
            "{:<28} {:>14} {:>14}  {}",
            n,
            cell(ours, n),
            cell(peer, n),
            meaning(n)
        );
    }
}

fn print_fwevents_side_by_side(ours: Option<&Outcome>, peer: Option<&Outcome>) {
    let get = |o: Option<&Outcome>, name: &str, cpu: &str| -> String {
        o.and_then(|o| {
            o.scenario("fwevents")
                .first()
                .and_then(|r| event(r, name))
                .and_then(|e| e[cpu].as_u64())
        })
        .map(|v| v.to_string())
        .unwrap_or_else(|| "-".into())
    };
    println!(
        "{:<28} {:>10} {:>10} {:>10} {:>10}",
        "event", "ours h0", "ours h1", "OpenSBI h0", "OpenSBI h1"
    );
    for n in [
        "fw_set_timer",
        "fw_ipi_sent",
        "fw_ipi_received",
        "fw_fence_i_sent",
        "fw_fence_i_received",
        "fw_sfence_vma_sent",
        "fw_sfence_vma_received",
        "fw_sfence_vma_asid_sent",
        "fw_sfence_vma_asid_received",
    ] {
        println!(
            "{:<28} {:>10} {:>10} {:>10} {:>10}",
            n,
            get(ours, n, "cpu0"),
            get(ours, n, "cpu1"),
            get(peer, n, "cpu0"),
            get(peer, n, "cpu1")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complaints_ignore_init_report_but_not_kernel_lines() {
        let console =
            "OpenSBI v1.5\n[    0.1] riscv-pmu-sbi: 16 firmware and 18 hardware counters\n\
                       rvpmu /init: mode stress\nstress: 0 open errors\n\
                       [    1.0] WARNING: CPU: 0 PID: 1 at drivers/perf/riscv_pmu_sbi.c\n";
        assert_eq!(
            complaints(console),
            vec!["[    1.0] WARNING: CPU: 0 PID: 1 at drivers/perf/riscv_pmu_sbi.c"]
        );
        assert_eq!(
            complaints("fw: Warning: bad DT\nrvpmu /init: x\n"),
            vec!["fw: Warning: bad DT"]
        );
        assert!(complaints("[ 0.1] riscv-pmu-sbi: SBI PMU extension is available\n").is_empty());
    }

    #[test]
    fn counter_line_parses_kernel_probe_message() {
        let out = Outcome {
            console: "[    0.106070] riscv-pmu-sbi: 16 firmware and 18 hardware counters\n".into(),
            results: vec![],
            bad_results: vec![],
            done: None,
            timed_out: false,
            wall: std::time::Duration::ZERO,
        };
        assert_eq!(counter_line(&out), Some((16, 18)));
    }
}
