//! `cargo xtask run`: the real `perf` tool in the guest, as a user types
//! it, on workloads whose counts are known from their construction, then a
//! summary that sets what perf reported against those expectations.
//!
//! The summary reads every figure from the output shown above it (perf's
//! human format, `perf record`'s last line and `perf report --stdio`), and
//! names the command each comes from; there is no second, hidden run.
//! It goes from the exact case (events that each have a counter the whole
//! time: counts equal the construction) to the multiplexed one (more
//! events than QEMU can count at once: perf's scaled counts, each set
//! against the exact count of the same workload), then sampling and the
//! firmware's own events.

use super::linux::Outcome;
use super::perftool::{
    parse_proc_stat, parse_record_samples, parse_report, parse_stat_human, CmdResult, Plan,
    StatLine,
};
use crate::build::disasm::loop_body_instructions;
use crate::build::dt::NoisyNeighbour;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::Path;

/// Iterations of the 2-instruction user loop (`rvpmu-work alu`).
pub const ALU_ITERS: u64 = 10_000_000;
/// `rvpmu-work hot N`: rvpmu_hot_a runs 3N iterations, rvpmu_hot_b N.
pub const HOT_N: u64 = 1_000_000;
/// perf record's period (`-c`) in user cycles.
pub const RECORD_PERIOD: u64 = 100_000;

/// Firmware events through perf's raw syntax: config bits 63:62 = 0b10
/// select an SBI firmware event, the low bits its code (SBI spec, Linux
/// riscv_pmu_sbi.c).
pub const FW_EVENTS: &[(&str, u64)] = &[
    ("fw_set_timer", 5),
    ("fw_ipi_sent", 6),
    ("fw_ipi_received", 7),
    ("fw_sfence_vma_sent", 10),
    ("fw_sfence_vma_received", 11),
];

/// perf's event syntax for a firmware event.
pub fn fw_event(name: &str, code: u64) -> String {
    format!("cpu/config={:#x},name={name}/", (2u64 << 62) | code)
}

fn fw_list() -> String {
    FW_EVENTS
        .iter()
        .map(|(n, c)| fw_event(n, *c))
        .collect::<Vec<_>>()
        .join(",")
}

/// What the demo runs, and how many harts it has.
pub struct Demo {
    pub smp: u32,
    /// With a noisy neighbour: the busy interval (ms) over which /proc/stat
    /// steal is read.
    pub steal_busy_ms: Option<u64>,
}

/// The shown perf commands, in the order they run; the transcript numbers
/// them from 1 and the summary names its sources by these numbers.
const SHOWN: &[&str] = &[
    "record", "report", "stat-u", "stat-u2", "stat-k", "stat-mux", "stat-tlb", "stat-fw",
];

/// `[n]`: the transcript's number of the shown command `name`.
fn label(name: &str) -> String {
    match SHOWN.iter().position(|s| *s == name) {
        Some(i) => format!("[{}]", i + 1),
        None => format!("[{name}]"),
    }
}

/// The six events of the multiplexed run: three of event id `cycles` and
/// three of `instructions`.
const MUX_EVENTS: [&str; 6] = [
    "cycles",
    "instructions",
    "cycles:u",
    "instructions:u",
    "cycles:k",
    "instructions:k",
];

impl Demo {
    pub fn plan(&self) -> Plan {
        let mut p = Plan::exact();
        let n = ALU_ITERS;
        // Sampling first: QEMU 10.0.2 can miss the first overflows of a
        // sampling event on a counter a counting event used before
        // (docs/anomalies.md).
        p.cmd(
            "record",
            &format!("perf record -e cycles:u -c {RECORD_PERIOD} -o /root/perf.data -- rvpmu-work hot {HOT_N}"),
        );
        p.cmd(
            "report",
            "perf report -i /root/perf.data --stdio --sort symbol",
        );
        // Exact: two event ids on two counters. N and 2N iterations have
        // the same digits to parse and the same start-up and exit, so the
        // difference of the user counts is the loop alone.
        let user = "perf stat -e cycles:u,instructions:u -- rvpmu-work alu";
        p.cmd("stat-u", &format!("{user} {n}"));
        p.cmd("stat-u2", &format!("{user} {}", 2 * n));
        p.cmd(
            "stat-k",
            &format!("perf stat -e cycles:k,instructions:k -- rvpmu-work alu {n}"),
        );
        p.cmd(
            "stat-mux",
            &format!(
                "perf stat -e {} -- rvpmu-work alu {n}",
                MUX_EVENTS.join(",")
            ),
        );
        p.cmd(
            "stat-tlb",
            &format!("perf stat -e dTLB-load-misses,dTLB-store-misses,iTLB-load-misses -- rvpmu-work alu {n}"),
        );
        p.cmd(
            "stat-fw",
            &format!("perf stat -a -e {} -- {}", fw_list(), self.fw_work()),
        );
        if let Some(ms) = self.steal_busy_ms {
            let spinners: String = (0..self.smp)
                .map(|c| format!("taskset -c {c} rvpmu-work spin {ms} & "))
                .collect();
            p.cmd("procstat-before", "cat /proc/stat");
            p.sh("busy", &format!("{spinners}wait"));
            p.cmd("procstat-after", "cat /proc/stat");
        }
        p
    }

    /// Firmware events count where they happen: system-wide (-a) on every
    /// hart; an IPI workload when there is a second hart.
    fn fw_work(&self) -> String {
        if self.smp > 1 {
            "rvpmu-work ipi 50".to_string()
        } else {
            format!("rvpmu-work alu {ALU_ITERS}")
        }
    }
}

/// The demo's results, parsed.
pub struct Results {
    pub cmds: Vec<CmdResult>,
    pub alu_insns_per_iter: u64,
    pub hot_insns_per_iter: u64,
}

impl Results {
    pub fn collect(out: &Outcome, work_elf: &Path) -> Result<Results> {
        Ok(Results {
            cmds: out.commands(),
            alu_insns_per_iter: loop_body_instructions(work_elf, "rvpmu_alu_loop")?,
            hot_insns_per_iter: loop_body_instructions(work_elf, "rvpmu_hot_a")
                .context("rvpmu_hot_a in rvpmu-work")?,
        })
    }

    pub fn cmd(&self, name: &str) -> Option<&CmdResult> {
        self.cmds.iter().find(|c| c.name == name)
    }

    /// The event lines of the shown `perf stat` command `name`.
    fn stat(&self, name: &str) -> Vec<StatLine> {
        self.cmd(name)
            .map(|c| parse_stat_human(&c.stderr))
            .unwrap_or_default()
    }

    fn value(&self, name: &str, event: &str) -> Option<u64> {
        self.stat(name)
            .into_iter()
            .find(|l| l.event == event)?
            .value
    }

    /// The summary of a run on `smp` harts: every figure read from the
    /// shown commands' output.
    pub fn summary(&self, smp: u32) -> Summary {
        let n = ALU_ITERS;
        let per = self.alu_insns_per_iter;
        let user = ["instructions:u", "cycles:u"].map(|ev| Difference {
            event: ev,
            at_n: self.value("stat-u", ev),
            at_2n: self.value("stat-u2", ev),
            construction: per * n,
        });
        let kernel = ["cycles:k", "instructions:k"].map(|ev| (ev, self.value("stat-k", ev)));
        // The exact count of each multiplexed event: the same event of the
        // same workload counted alone; all modes = user + kernel.
        let exact_of = |ev: &str| -> (Option<u64>, Vec<&'static str>) {
            match ev.split_once(':') {
                Some((_, "u")) => (self.value("stat-u", ev), vec!["stat-u"]),
                Some((_, "k")) => (self.value("stat-k", ev), vec!["stat-k"]),
                Some(_) => (None, vec![]),
                None => (
                    self.value("stat-u", &format!("{ev}:u"))
                        .zip(self.value("stat-k", &format!("{ev}:k")))
                        .and_then(|(u, k)| u.checked_add(k)),
                    vec!["stat-u", "stat-k"],
                ),
            }
        };
        let mux = self
            .stat("stat-mux")
            .into_iter()
            .map(|line| {
                let (exact, from) = exact_of(&line.event);
                Scaled { line, exact, from }
            })
            .collect();
        let sampling = self.cmd("report").map(|c| {
            let rep = parse_report(&c.stdout);
            Sampling {
                samples: self
                    .cmd("record")
                    .and_then(|c| parse_record_samples(&c.stderr)),
                loop_insns: 4 * HOT_N * self.hot_insns_per_iter,
                hot_insns_per_iter: self.hot_insns_per_iter,
                shares: [("rvpmu_hot_a", 3), ("rvpmu_hot_b", 1)]
                    .map(|(sym, parts)| (sym, rep.share(sym), parts)),
            }
        });
        Summary {
            smp,
            kvm_guest: false,
            alu_per_iter: per,
            user,
            kernel,
            mux,
            tlb: self.stat("stat-tlb"),
            sampling,
            firmware: self.stat("stat-fw"),
        }
    }

    /// Each shown command as a user would see it in a terminal, numbered.
    pub fn transcript(&self) -> String {
        let mut s = String::new();
        for name in SHOWN {
            let Some(c) = self.cmd(name) else { continue };
            s.push_str(&format!("{} guest# {}\n", label(name), c.shell_line()));
            for part in [&c.stdout, &c.stderr] {
                for l in part.lines() {
                    s.push_str(l);
                    s.push('\n');
                }
            }
            if !c.ok() {
                s.push_str(&format!("(exit status {:?})\n", c.status));
            }
            s.push('\n');
        }
        s
    }
}

/// A user count of `alu N` and of `alu 2N`, and the construction's
/// difference between them.
pub struct Difference {
    pub event: &'static str,
    pub at_n: Option<u64>,
    pub at_2n: Option<u64>,
    /// N more iterations of the loop's instructions (disassembly).
    pub construction: u64,
}

impl Difference {
    /// alu 2N minus alu N (None without both, or beyond i64).
    pub fn difference(&self) -> Option<i64> {
        let (a, b) = self.at_n.zip(self.at_2n)?;
        i64::try_from(b).ok()?.checked_sub(i64::try_from(a).ok()?)
    }

    /// The difference minus the construction's.
    pub fn off_by(&self) -> Option<i64> {
        self.difference()?
            .checked_sub(i64::try_from(self.construction).ok()?)
    }

    pub fn exact(&self) -> Option<bool> {
        self.off_by().map(|x| x == 0)
    }
}

/// One event of the multiplexed run beside its exact count.
pub struct Scaled {
    pub line: StatLine,
    /// The same event of the same workload, counted alone.
    pub exact: Option<u64>,
    /// The shown command(s) the exact count comes from (their sum for
    /// two).
    pub from: Vec<&'static str>,
}

impl Scaled {
    /// (scaled - exact) / exact, in percent.
    pub fn error_pct(&self) -> Option<f64> {
        let (v, e) = self.line.value.zip(self.exact)?;
        (e > 0).then(|| (v as f64 - e as f64) / e as f64 * 100.0)
    }

    fn scaled(&self) -> bool {
        self.line.running_pct.is_some_and(|p| p < 100.0)
    }

    /// Read 0 though it was on a counter the whole time, where it counts
    /// when alone.
    fn dead_counter(&self) -> bool {
        self.line.value == Some(0) && !self.scaled() && self.exact.is_some_and(|e| e > 0)
    }
}

/// `perf record` and `perf report` against the `hot` workload.
pub struct Sampling {
    pub samples: Option<u64>,
    /// User instructions (= cycles) of both loops: 4N iterations.
    pub loop_insns: u64,
    pub hot_insns_per_iter: u64,
    /// (symbol, perf report's share in percent, parts of the 4 it runs).
    pub shares: [(&'static str, f64, u64); 2],
}

/// What the summary says, every figure read from a shown command.
pub struct Summary {
    /// Harts: with more than one, QEMU's icount counters of a hart also
    /// advance while the others run, and user counts are not exact.
    pub smp: u32,
    /// The demo ran in a KVM guest: its PMU is KVM's, whose counters are
    /// host perf events (the notes on multiplexing and sampling differ).
    pub kvm_guest: bool,
    pub alu_per_iter: u64,
    /// instructions:u and cycles:u of alu N and alu 2N.
    pub user: [Difference; 2],
    /// cycles:k and instructions:k of alu N.
    pub kernel: [(&'static str, Option<u64>); 2],
    pub mux: Vec<Scaled>,
    pub tlb: Vec<StatLine>,
    pub sampling: Option<Sampling>,
    pub firmware: Vec<StatLine>,
}

fn opt(v: Option<impl ToString>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

/// perf's count, or its `<not counted>`-style word.
fn count(l: &StatLine) -> String {
    match l.value {
        Some(v) => v.to_string(),
        None if !l.status.is_empty() => l.status.clone(),
        None => "-".into(),
    }
}

fn signed_pct(p: Option<f64>) -> String {
    p.map(|p| format!("{p:+.2}%"))
        .unwrap_or_else(|| "n/a".into())
}

fn line_json(l: &StatLine) -> Value {
    json!({"event": l.event, "count": l.value, "status": l.status, "running_pct": l.running_pct})
}

/// One row per event: name, count, what it counts, whether perf scaled it.
fn print_counts(
    lines: &[StatLine],
    name_w: usize,
    count_w: usize,
    meaning: fn(&str) -> &'static str,
) {
    for l in lines {
        println!(
            "  {:<name_w$} {:>count_w$}  {}{}",
            l.event,
            count(l),
            meaning(&l.event),
            scaled_note(l)
        );
    }
}

fn tlb_meaning(event: &str) -> &'static str {
    match event {
        "dTLB-load-misses" => "data TLB refills on loads (QEMU's softmmu TLB)",
        "dTLB-store-misses" => "data TLB refills on stores",
        "iTLB-load-misses" => "instruction TLB refills",
        _ => "",
    }
}

fn fw_meaning(event: &str) -> &'static str {
    match event {
        "fw_set_timer" => "SBI set_timer calls (0: Linux programs Sstc's stimecmp itself)",
        "fw_ipi_sent" => "IPIs the firmware sent for Linux, all harts",
        "fw_ipi_received" => "IPIs the firmware delivered, all harts",
        "fw_sfence_vma_sent" => "remote SFENCE.VMA requests sent",
        "fw_sfence_vma_received" => "remote SFENCE.VMA requests handled",
        _ => "",
    }
}

/// perf's share of time on a counter, "always" when it printed none.
fn on_counter(l: &StatLine) -> String {
    match l.running_pct {
        Some(p) if p < 100.0 => format!("{p:.2}%"),
        Some(_) => "always".into(),
        None => "-".into(),
    }
}

/// " [on a counter P% of the time: scaled]" when perf scaled `l`.
fn scaled_note(l: &StatLine) -> String {
    match l.running_pct {
        Some(p) if p < 100.0 => format!(" [on a counter {p:.2}% of the time: scaled]"),
        _ => String::new(),
    }
}

impl Summary {
    /// Every figure of the summary, and the commands each comes from
    /// (`shown`: the shown commands in the transcript's order, `[1]` first).
    pub fn json(&self) -> Value {
        let n = ALU_ITERS;
        json!({
            "shown": SHOWN,
            "smp": self.smp,
            "kvm_guest": self.kvm_guest,
            "exact": {
                "from": ["stat-u", "stat-u2", "stat-k"],
                "iterations": [n, 2 * n],
                "loop_instructions_per_iteration": self.alu_per_iter,
                "user": self.user.iter().map(|d| json!({
                    "event": d.event, "alu_n": d.at_n, "alu_2n": d.at_2n,
                    "difference": d.difference(),
                    "construction": d.construction, "exact": d.exact(),
                })).collect::<Vec<_>>(),
                "kernel": self.kernel.iter().map(|(ev, v)| json!({"event": ev, "count": v})).collect::<Vec<_>>(),
            },
            "multiplexed": {
                "from": "stat-mux",
                "events": self.mux.iter().map(|s| json!({
                    "event": s.line.event, "count": s.line.value, "status": s.line.status,
                    "running_pct": s.line.running_pct, "exact": s.exact, "exact_from": s.from,
                    "scaling_error_pct": s.error_pct(),
                })).collect::<Vec<_>>(),
            },
            "tlb": {"from": "stat-tlb", "events": self.tlb.iter().map(line_json).collect::<Vec<_>>()},
            "sampling": self.sampling.as_ref().map(|s| json!({
                "from": ["record", "report"],
                "period": RECORD_PERIOD, "samples": s.samples,
                "expected_samples": s.loop_insns / RECORD_PERIOD, "loop_instructions": s.loop_insns,
                "shares": s.shares.iter().map(|(sym, pct, parts)| json!({
                    "symbol": sym, "pct": pct, "expected_pct": *parts as f64 * 25.0,
                })).collect::<Vec<_>>(),
            })),
            "firmware": {"from": "stat-fw", "events": self.firmware.iter().map(line_json).collect::<Vec<_>>()},
        })
    }

    /// The summary as text, section by section.
    pub fn print(&self) {
        let n = ALU_ITERS;
        println!(
            "summary: every figure below is read from the perf output above ([n]: the command it comes from)"
        );
        println!();

        let (u, u2, k) = (label("stat-u"), label("stat-u2"), label("stat-k"));
        println!(
            "exact counting {u} {u2} {k}: each event id on a counter of its own, the whole time"
        );
        println!(
            "  (-icount shift=0,sleep=off: 1 instruction = 1 cycle, so cycles = instructions)"
        );
        println!(
            "  {:<16} {:>18} {:>18} {:>12} {:>13}",
            "event",
            format!("alu {n} {u}"),
            format!("alu {} {u2}", 2 * n),
            "difference",
            "construction"
        );
        for d in &self.user {
            let verdict = match d.off_by() {
                Some(0) => "exact".to_string(),
                Some(x) => format!("off by {x:+}"),
                None => String::new(),
            };
            println!(
                "  {:<16} {:>18} {:>18} {:>12} {:>13}  {verdict}",
                d.event,
                opt(d.at_n),
                opt(d.at_2n),
                opt(d.difference()),
                d.construction
            );
        }
        println!(
            "  construction: {n} more iterations of rvpmu_alu_loop, {} instructions each (its disassembly);",
            self.alu_per_iter
        );
        if self.smp == 1 {
            println!(
                "  start-up and exit are the same in both runs (address-space randomisation off)"
            );
        } else {
            println!(
                "  -smp {}: a hart's counts also take in what the other harts ran meanwhile (note at the end)",
                self.smp
            );
        }
        let [iu, cu] = &self.user;
        for (at, which) in [(iu.at_n.zip(cu.at_n), &u), (iu.at_2n.zip(cu.at_2n), &u2)] {
            if let Some((i, c)) = at {
                println!(
                    "  {which} cycles:u {c} {} instructions:u {i}",
                    if c == i { "=" } else { "!=" }
                );
            }
        }
        let [(ck, vck), (ik, vik)] = self.kernel;
        println!(
            "  {k} {ck} {} and {ik} {} (kernel mode: exec, page faults, perf's own work, timer ticks)",
            opt(vck),
            opt(vik),
        );
        match vck.zip(vik) {
            Some((0, 0)) => {
                println!("  both read 0: this firmware counted no kernel mode for perf")
            }
            Some((c, i)) if c != i => {
                println!(
                    "  {} apart: Linux starts and stops the two counters one after the other, and the kernel code",
                    c.abs_diff(i)
                );
                println!("  run in between counts on one of them only (no user code runs there: the :u counts agree)");
            }
            _ => {}
        }
        println!();

        let m = label("stat-mux");
        println!(
            "multiplexed counting {m}: six events of two event ids (three of cycles, three of instructions)"
        );
        println!(
            "  {:<16} {:>12} {:>13} {:>12} {:<8} {:>14}",
            "event", "perf says", "on a counter", "exact count", "from", "scaling error"
        );
        for s in &self.mux {
            println!(
                "  {:<16} {:>12} {:>13} {:>12} {:<8} {:>14}",
                s.line.event,
                count(&s.line),
                on_counter(&s.line),
                opt(s.exact),
                s.from
                    .iter()
                    .map(|n| label(n))
                    .collect::<Vec<_>>()
                    .join("+"),
                signed_pct(s.error_pct())
            );
        }
        if self.kvm_guest {
            println!("  In a KVM guest these are not the scaling's errors: KVM (arch/riscv/kvm/vcpu_pmu.c) gives every");
            println!("  cycles event the guest's counter 0 and every instructions event counter 2, replacing the host");
            println!("  perf event of the event that held it; the guest's driver refuses the index already in use and");
            println!("  multiplexes, and the event it took the counter from reads a host event never enabled");
            println!("  (docs/kvm.md). The exact counts above are on counters of distinct events and are unaffected.");
        } else if self.mux.iter().any(Scaled::scaled) {
            println!("  QEMU counts an event id on one HPM counter at a time, so rvpmu refuses a second HPM counter");
            println!("  for an id: cycles and instructions can use the fixed counters, but cycles:u and cycles:k need");
            println!("  the same HPM counter (so do instructions:u and instructions:k). Linux rotates the events on");
            println!("  and off the counters: perf prints each event's share of time on a counter and scales its");
            println!("  count by (time enabled) / (time on a counter).");
            println!("  Scaling assumes an event runs at the same rate off its counter as on it.");
            if self.smp == 1 {
                println!("  User counts are the same in every run (icount, randomisation off), so a :u error is the");
                println!("  scaling's alone: the loop runs at a steady rate, but not the start-up and exit.");
            } else {
                println!("  With {} harts user counts also differ between runs, so a :u error is not the scaling's alone.", self.smp);
            }
            println!("  Kernel work comes in bursts (exec at the start, exit at the end), so a scaled kernel count");
            println!("  can be far off; its exact count is another run's, and kernel work differs a little between");
            println!("  runs (the rotation itself runs in the kernel).");
        } else {
            println!("  no event was scaled: each had a counter of its own the whole time");
        }
        let dead: Vec<&str> = self
            .mux
            .iter()
            .filter(|s| s.dead_counter())
            .map(|s| s.line.event.as_str())
            .collect();
        if !dead.is_empty() {
            println!(
                "  read 0 on a counter the whole time, though not 0 when counted alone: {}",
                dead.join(", ")
            );
            println!("  this firmware gave them counters of an event id QEMU already counts on another counter, and");
            println!("  QEMU counts an id on one counter only (docs/anomalies.md); rvpmu-fw refuses such a counter,");
            println!("  so there perf multiplexes and the counts are scaled rather than 0.");
        }
        println!();

        let t = label("stat-tlb");
        println!(
            "TLB events {t}: three event ids, alu {n} (the loop itself loads and stores nothing)"
        );
        print_counts(&self.tlb, 20, 10, tlb_meaning);
        println!();

        if let Some(s) = &self.sampling {
            let (r, p) = (label("record"), label("report"));
            println!("sampling {r} {p}: a cycles:u sample every {RECORD_PERIOD} user cycles of rvpmu-work hot {HOT_N}");
            println!("  {:<20} {:>10} {:>13}", "", "perf says", "construction");
            println!(
                "  {:<20} {:>10} {:>13}  4 x {HOT_N} iterations x {} instructions (disassembly) / {RECORD_PERIOD}",
                format!("samples {r}"),
                opt(s.samples),
                s.loop_insns / RECORD_PERIOD,
                s.hot_insns_per_iter
            );
            println!(
                "  {:<20} {:>10} {:>13}  (+ the process's start-up and exit)",
                "", "", ""
            );
            for (sym, pct, parts) in s.shares {
                println!(
                    "  {:<20} {:>10} {:>13}  runs {parts} of the 4 parts",
                    format!("{sym} {p}"),
                    format!("{pct:.2}%"),
                    format!("{:.2}%", parts as f64 * 25.0)
                );
            }
            if self.kvm_guest {
                println!("  In a KVM guest each sample is a host perf event's overflow that KVM injects as the guest's");
                println!("  counter overflow interrupt; perf record gets a few samples where the construction says");
                println!("  {} (docs/kvm.md).", s.loop_insns / RECORD_PERIOD);
            }
            println!();
        }

        let f = label("stat-fw");
        println!(
            "firmware events {f}: counted by the firmware where they happen, on every hart (-a)"
        );
        print_counts(&self.firmware, 24, 8, fw_meaning);
    }
}

/// Steal per CPU over the busy interval, from the two /proc/stat reads.
pub fn steal(r: &Results, n: NoisyNeighbour) -> Value {
    let cells = steal_cells(r);
    let text = format!(
        "steal: the firmware's noisy neighbour takes {} us of every {} us ({:.1}% of a busy hart)\n       /proc/stat over the busy interval: {}",
        n.busy_us,
        n.period_us,
        n.share() * 100.0,
        steal_text(&cells)
    );
    json!({"busy_us": n.busy_us, "period_us": n.period_us, "expected_share": n.share(), "cpus": cells, "text": text})
}

/// "cpu0 50.0%, all 50.0%": the shares of [`steal_cells`].
pub fn steal_text(cells: &[Value]) -> String {
    cells
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c["cpu"].as_str().unwrap_or("?"),
                c["share"]
                    .as_f64()
                    .map(|s| format!("{:.1}%", s * 100.0))
                    .unwrap_or("n/a".into())
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Steal ticks, total ticks and share per CPU ("all" for the sum) over
/// the demo's busy interval, from its two /proc/stat reads.
pub fn steal_cells(r: &Results) -> Vec<Value> {
    let read = |name: &str| {
        r.cmd(name)
            .map(|c| parse_proc_stat(&c.stdout))
            .unwrap_or_default()
    };
    let (before, after) = (read("procstat-before"), read("procstat-after"));
    let mut cells = Vec::new();
    for (cpu, s1, t1) in &after {
        let Some((_, s0, t0)) = before.iter().find(|(c, ..)| c == cpu) else {
            continue;
        };
        let (ds, dt) = (s1.saturating_sub(*s0), t1.saturating_sub(*t0));
        let share = (dt > 0).then(|| ds as f64 / dt as f64);
        cells.push(json!({"cpu": if cpu == "cpu" { "all" } else { cpu }, "steal_ticks": ds, "total_ticks": dt, "share": share}));
    }
    cells
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(event: &str, value: Option<u64>, pct: f64) -> StatLine {
        StatLine {
            event: event.into(),
            value,
            status: String::new(),
            run_ns: None,
            running_pct: Some(pct),
        }
    }

    #[test]
    fn difference_against_construction() {
        let d = |a, b| Difference {
            event: "instructions:u",
            at_n: a,
            at_2n: b,
            construction: 20,
        };
        assert_eq!(d(Some(105), Some(125)).exact(), Some(true));
        assert_eq!(d(Some(105), Some(126)).exact(), Some(false));
        assert_eq!(d(Some(125), Some(105)).difference(), Some(-20));
        assert_eq!(d(None, Some(125)).exact(), None);
    }

    #[test]
    fn scaling_error() {
        let s = |v, pct, exact| Scaled {
            line: line("cycles:u", v, pct),
            exact,
            from: vec!["stat-u"],
        };
        assert_eq!(s(Some(110), 40.0, Some(100)).error_pct(), Some(10.0));
        assert_eq!(s(Some(90), 40.0, Some(100)).error_pct(), Some(-10.0));
        assert_eq!(s(Some(5), 40.0, Some(0)).error_pct(), None);
        assert_eq!(s(None, 0.0, Some(100)).error_pct(), None);
        assert!(s(Some(0), 100.0, Some(100)).dead_counter());
        assert!(!s(Some(0), 100.0, Some(0)).dead_counter());
        assert!(!s(Some(0), 50.0, Some(100)).dead_counter());
    }

    #[test]
    fn labels_follow_the_shown_order() {
        assert_eq!(label("record"), "[1]");
        assert_eq!(label("stat-mux"), "[6]");
        let plan = Demo {
            smp: 1,
            steal_busy_ms: None,
        }
        .plan();
        let planned: Vec<&str> = plan
            .cmds
            .iter()
            .map(|c| c.name.as_str())
            .filter(|n| SHOWN.contains(n))
            .collect();
        assert_eq!(planned, SHOWN);
    }
}
