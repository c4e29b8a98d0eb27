//! `cargo xtask run`: the real `perf` tool in the guest, as a user types
//! it, on workloads whose counts are known from their construction, then a
//! summary that sets what perf reported against those expectations.
//!
//! The shown commands run in perf's human format; the summary and `--json`
//! come from the same events run again with `perf stat -x,` (perf's
//! machine-readable output), and from `perf report --stdio`.

use super::linux::Outcome;
use super::perftool::{
    parse_proc_stat, parse_record_samples, parse_report, parse_stat_csv, CmdResult, Plan, StatLine,
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

/// The shown perf commands, in order.
const SHOWN: &[&str] = &["record", "report", "stat", "stat-tlb", "stat-fw"];

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

        p.cmd(
            "stat",
            &format!("perf stat -e cycles,instructions,cycles:u,instructions:u,cycles:k,instructions:k -- rvpmu-work alu {n}"),
        );
        p.cmd(
            "stat-tlb",
            &format!("perf stat -e dTLB-load-misses,dTLB-store-misses,iTLB-load-misses -- rvpmu-work alu {n}"),
        );
        // Firmware events count where they happen: system-wide (-a) on
        // every hart; an IPI workload when there is a second hart.
        let fw_work = if self.smp > 1 {
            "rvpmu-work ipi 50".to_string()
        } else {
            format!("rvpmu-work alu {n}")
        };
        p.cmd(
            "stat-fw",
            &format!("perf stat -a -e {} -- {fw_work}", fw_list()),
        );
        // Machine-readable runs for the summary: exact user counts (one
        // event id per counter: no multiplexing) of N and 2N iterations:
        // the same digits to parse, the same start-up and exit, so the
        // difference is the loop alone.
        p.cmd(
            "x-user",
            &format!("perf stat -x, -e instructions:u,cycles:u -- rvpmu-work alu {n}"),
        );
        p.cmd(
            "x-user2",
            &format!(
                "perf stat -x, -e instructions:u,cycles:u -- rvpmu-work alu {}",
                2 * n
            ),
        );
        p.cmd(
            "x-all",
            &format!("perf stat -x, -e cycles,instructions,cycles:k,instructions:k,dTLB-load-misses,dTLB-store-misses,iTLB-load-misses -- rvpmu-work alu {n}"),
        );
        p.cmd(
            "x-fw",
            &format!("perf stat -x, -a -e {} -- {fw_work}", fw_list()),
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
            cmds: out
                .scenario("cmd")
                .into_iter()
                .map(CmdResult::from_json)
                .collect(),
            alu_insns_per_iter: loop_body_instructions(work_elf, "rvpmu_alu_loop")?,
            hot_insns_per_iter: loop_body_instructions(work_elf, "rvpmu_hot_a")
                .context("rvpmu_hot_a in rvpmu-work")?,
        })
    }

    pub fn cmd(&self, name: &str) -> Option<&CmdResult> {
        self.cmds.iter().find(|c| c.name == name)
    }

    fn stat(&self, name: &str) -> Vec<StatLine> {
        self.cmd(name)
            .map(|c| parse_stat_csv(&c.stderr))
            .unwrap_or_default()
    }

    fn value(&self, name: &str, event: &str) -> Option<u64> {
        self.stat(name)
            .into_iter()
            .find(|l| l.event == event)?
            .value
    }

    /// Rows of the summary: event, what perf said, what construction
    /// says, and what it means.
    pub fn summary(&self) -> Vec<Value> {
        let n = ALU_ITERS;
        let mut rows = Vec::new();
        let per = self.alu_insns_per_iter;
        for ev in ["instructions:u", "cycles:u"] {
            let (one, two) = (self.value("x-user", ev), self.value("x-user2", ev));
            rows.push(json!({
                "event": format!("{ev} (alu {n})"), "count": one,
                "meaning": "user mode: the loop + the process's start-up and exit",
            }));
            rows.push(json!({
                "event": format!("{ev} (alu {})", 2 * n), "count": two,
                "expected": one.map(|o| o + per * n),
                "exact": one.zip(two).map(|(o, t)| t == o + per * n),
                "meaning": format!("{n} more iterations of {per} instructions (disassembly) = {} more", per * n),
            }));
        }
        for l in self.stat("x-all") {
            let meaning = match l.event.as_str() {
                "cycles" => "all modes perf may count (U+S; firmware is never counted)",
                "instructions" => "the same in instructions (icount: equal to cycles)",
                "cycles:k" | "instructions:k" => {
                    "kernel mode: exec, page faults, perf's own ioctls, ticks"
                }
                "dTLB-load-misses" => "data TLB refills on loads (QEMU's softmmu TLB)",
                "dTLB-store-misses" => "data TLB refills on stores",
                "iTLB-load-misses" => "instruction TLB refills",
                _ => "",
            };
            rows.push(stat_row(&l, meaning));
        }
        for l in self.stat("x-fw") {
            let meaning = match l.event.as_str() {
                "fw_set_timer" => "SBI set_timer calls (0: Linux programs Sstc's stimecmp itself)",
                "fw_ipi_sent" => "IPIs the firmware sent for Linux, all harts",
                "fw_ipi_received" => "IPIs the firmware delivered, all harts",
                "fw_sfence_vma_sent" => "remote SFENCE.VMA requests sent",
                "fw_sfence_vma_received" => "remote SFENCE.VMA requests handled",
                _ => "",
            };
            rows.push(stat_row(&l, meaning));
        }
        if let Some(rep) = self.cmd("report").map(|c| parse_report(&c.stdout)) {
            let rec = self
                .cmd("record")
                .and_then(|c| parse_record_samples(&c.stderr));
            let loop_insns = 4 * HOT_N * self.hot_insns_per_iter;
            rows.push(json!({
                "event": "perf record samples", "count": rec,
                "expected": loop_insns / RECORD_PERIOD,
                "meaning": format!("cycles:u every {RECORD_PERIOD}: {loop_insns} loop cycles / period (+ start-up)"),
            }));
            for (sym, want) in [("rvpmu_hot_a", 75.0), ("rvpmu_hot_b", 25.0)] {
                rows.push(json!({
                    "event": format!("{sym} share %"), "count": rep.share(sym),
                    "expected": want,
                    "meaning": format!("perf report: {sym} runs {} of the 4 parts", if want > 50.0 { 3 } else { 1 }),
                }));
            }
        }
        rows
    }

    /// Each shown command as a user would see it in a terminal.
    pub fn transcript(&self) -> String {
        let mut s = String::new();
        for name in SHOWN {
            let Some(c) = self.cmd(name) else { continue };
            s.push_str(&format!("guest# {}\n", c.shell_line()));
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

fn stat_row(l: &StatLine, meaning: &str) -> Value {
    json!({
        "event": l.event, "count": l.value, "status": l.status,
        "running_pct": l.running_pct, "meaning": meaning,
    })
}

/// The summary as a table.
pub fn print_summary(rows: &[Value]) {
    println!(
        "{:<28} {:>14} {:>14}  meaning",
        "event", "perf says", "construction"
    );
    for r in rows {
        let count = match &r["count"] {
            Value::Null => r["status"].as_str().unwrap_or("-").to_string(),
            Value::Number(n) => n.to_string(),
            v => v.to_string(),
        };
        let mut want = match &r["expected"] {
            Value::Null => String::new(),
            v => v.to_string(),
        };
        if r["exact"] == true {
            want.push_str(" exact");
        }
        let mut meaning = r["meaning"].as_str().unwrap_or("").to_string();
        if let Some(p) = r["running_pct"].as_f64().filter(|p| *p < 100.0) {
            meaning = format!("{meaning} [on a counter {p:.0}% of the time: scaled]");
        }
        println!(
            "{:<28} {:>14} {:>14}  {meaning}",
            r["event"].as_str().unwrap_or("?"),
            count,
            want
        );
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
