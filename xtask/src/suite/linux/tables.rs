//! The e2e suite's tables: the perf_event_open demo rows, the firmware
//! events per hart and the kernel's PMU lines, our firmware beside the peer.

use super::steal::STEAL_PERCENT;
use super::{event, Kept};
use crate::build::dt::NoisyNeighbour;
use crate::build::kernel::Version;
use crate::guest::linux::{kernel_pmu_lines, Outcome, STEAL_BUSY_MS};
use crate::host::step;

/// One row of the demo table.
pub(super) struct Row {
    pub(super) event: String,
    pub(super) value: Option<u64>,
    pub(super) error: Option<String>,
}

pub(super) fn demo_rows(out: &Outcome) -> Vec<Row> {
    let mut rows = Vec::new();
    for r in out.scenario("demo") {
        for e in r["events"].as_array().into_iter().flatten() {
            rows.push(Row {
                event: e["name"].as_str().unwrap_or("?").into(),
                value: e["value"].as_u64(),
                error: e["error"].as_str().map(String::from),
            });
        }
    }
    rows
}

/// What an event means, for the table.
pub(super) fn meaning(event: &str) -> &'static str {
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

pub(super) fn fmt_opt(v: Option<u64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

/// The perf_event_open demo, firmware events and steal of one kernel, our
/// firmware beside the peer.
pub(super) fn print_kernel_tables(kernel: Version, ours: &Kept, peer: &Kept) {
    step(&format!(
        "{kernel}: perf_event_open demo, side by side (-smp 1, icount)"
    ));
    let a = ours.demo.as_ref().map(demo_rows).unwrap_or_default();
    let b = peer.demo.as_ref().map(demo_rows).unwrap_or_default();
    print_side_by_side(&a, &b);
    step(&format!(
        "{kernel}: firmware events per hart, side by side (-smp 2: hart 0 sends, hart 1 receives)"
    ));
    print_fwevents_side_by_side(ours.fwevents.as_ref(), peer.fwevents.as_ref());
    step(&format!(
        "{kernel}: steal time Linux reports (/proc/stat, {STEAL_BUSY_MS} ms busy intervals, noisy neighbour {STEAL_PERCENT}% = {} us of every {} us)",
        NoisyNeighbour::PERIOD_US / 100 * STEAL_PERCENT,
        NoisyNeighbour::PERIOD_US
    ));
    for (fw, kept) in [("rvpmu-fw", &ours.steal), ("OpenSBI 1.5.1", &peer.steal)] {
        for (boot, cells) in kept {
            println!("{fw:<14} {boot:<32} {cells}");
        }
    }
    if let (Some(o), Some(p)) = (&ours.demo, &peer.demo) {
        println!(
            "\nkernel on rvpmu-fw:    {}",
            kernel_pmu_lines(o).join(" | ")
        );
        println!("kernel on OpenSBI:     {}", kernel_pmu_lines(p).join(" | "));
    }
}

pub(super) fn print_side_by_side(ours: &[Row], peer: &[Row]) {
    println!(
        "{:<28} {:>14} {:>14}  meaning",
        "event", "rvpmu-fw", "OpenSBI 1.5.1"
    );
    let names: Vec<&String> = if ours.is_empty() {
        peer.iter().map(|r| &r.event).collect()
    } else {
        ours.iter().map(|r| &r.event).collect()
    };
    let cell = |rows: &[Row], n: &str| -> String {
        match rows.iter().find(|r| r.event == n) {
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

pub(super) fn print_fwevents_side_by_side(ours: Option<&Outcome>, peer: Option<&Outcome>) {
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
