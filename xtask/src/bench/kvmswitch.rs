//! The cost of a switch between KVM guests, with and without guest
//! counters running: one nested boot (Linux 7.2 on rvpmu-fw as the KVM
//! host, two harts, icount), four runs of KVM guests pinned to one
//! KVM-host CPU, each measured over the same window
//! (guest/kvmcheck.rs, [`SwitchWindow`]): one guest alone and two guests,
//! each running the same 2-instruction loop, first bare
//! (`rvpmu-work alu N`), then inside a counting event of `cycles:u`
//! (`rvpmu-overflow-repro 0 N u cycles`: one guest counter running).
//! Written to target/bench/kvm-switch.md.

use crate::build::firmware;
use crate::build::kernel::Version;
use crate::guest::kvm::{host_cmd, KvmGuest, KvmHost};
use crate::guest::kvmcheck::{switch_script, SwitchWindow, BARE_MEMORY, PAIR_CPU, SWITCH_WINDOW_S};
use crate::guest::linux::Guest;
use crate::guest::perftool::Plan;
use crate::host::{root, step};
use crate::qemu::Machine;
use anyhow::{bail, Result};
use std::fmt::Write as _;
use std::time::Duration;

/// Loop iterations of each guest: 0.8 G instructions, longer than the
/// window even alone.
const N: u64 = 400_000_000;

/// The runs: label, guests, the guests' workload and how many guest
/// counters it keeps running.
const RUNS: [(&str, usize, &str, u32); 4] = [
    ("alone-0", 1, "rvpmu-work alu", 0),
    ("two-0", 2, "rvpmu-work alu", 0),
    ("alone-1", 1, "rvpmu-overflow-repro 0", 1),
    ("two-1", 2, "rvpmu-overflow-repro 0", 1),
];

pub fn kvm_switch_bench() -> Result<()> {
    let fw = firmware::ours("rvpmu-fw")?;
    let guest = Guest::build(Version::V7_2)?;
    let host = KvmHost::build(Version::V7_2)?;
    let mut plan = Plan::default();
    let mut guests = Vec::new();
    for (label, n, work, counters) in RUNS {
        let cmd = if counters > 0 {
            format!("{work} {N} u cycles quiet")
        } else {
            format!("{work} {N}")
        };
        let mut p = Plan::default();
        p.cmd("work", &cmd);
        let mut gs = Vec::new();
        for g in 0..n {
            let mut k = KvmGuest::bare_plan(&format!("{label}-{g}"), &guest, &p)?;
            k.memory = BARE_MEMORY.into();
            k.cpus = Some(PAIR_CPU.to_string());
            gs.push(k);
        }
        let refs: Vec<&KvmGuest> = gs.iter().collect();
        plan.sh(label, &switch_script(label, &refs));
        guests.extend(gs);
    }
    step("KVM guest switch cost: one nested boot, four runs of KVM guests pinned to one KVM-host CPU");
    let refs: Vec<&KvmGuest> = guests.iter().collect();
    let out = host.run_plan(
        &fw,
        Machine {
            smp: 2,
            icount: true,
        },
        &plan,
        &refs,
        Duration::from_secs(900),
    )?;
    let mut w = Vec::new();
    for (label, ..) in RUNS {
        let cmd = host_cmd(&out, label);
        let Some(win) = cmd.as_ref().and_then(|c| SwitchWindow::parse(&c.stderr)) else {
            bail!(
                "KVM switch cost: no perf stat window for `{label}`: {:?}; console tail:\n{}",
                cmd.map(|c| c.stderr),
                out.tail(30)
            );
        };
        w.push(win);
    }
    let mut md = format!(
        "# Cost of a switch between KVM guests\n\n\
         Linux 7.2 as the KVM host on rvpmu-fw (QEMU -icount shift=0,sleep=off, 2 harts; 1 instruction = 1 ns), \
         KVM guests (Linux 7.2, bare initramfs, one vCPU) pinned to KVM-host CPU {PAIR_CPU}, each running a loop of \
         {} instructions; over a {SWITCH_WINDOW_S} s window, `perf stat -a -C {PAIR_CPU} -e instructions:G,context-switches` \
         on the KVM host. Cost per switch = (the guest instructions one guest runs alone in the window - those two run) / \
         (the context switches with two - those with one). Written by `cargo xtask bench`.\n\n\
         | run | guest counters running | guest instructions | context switches | window (ns) | cost per extra switch |\n|---|---|---|---|---|---|\n",
        2 * N
    );
    for (i, (label, _, _, counters)) in RUNS.iter().enumerate() {
        let cost = if label.starts_with("two") {
            w[i].cost_against(&w[i - 1])
                .map(|c| format!("{c:.0}"))
                .unwrap_or("-".into())
        } else {
            "-".into()
        };
        let _ = writeln!(
            md,
            "| {label} | {counters} | {} | {} | {} | {cost} |",
            w[i].guest_instructions, w[i].switches, w[i].window_ns
        );
    }
    let dir = root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("kvm-switch.md"), &md)?;
    print!("{md}");
    Ok(())
}

#[cfg(test)]
mod tests {
    /// This benchmark alone:
    /// `cargo test -p xtask kvm_switch_cost -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn kvm_switch_cost() {
        super::kvm_switch_bench().unwrap();
    }
}
