//! The cost of a switch between KVM guests, with and without guest
//! counters running: one nested boot (Linux 7.2 on rvpmu-fw as the KVM
//! host, two harts, icount), four runs of KVM guests pinned to one
//! KVM-host CPU, each measured interval by interval (guest/kvmcheck.rs,
//! [`SwitchInterval`]): one guest alone and two guests, each running the
//! same 2-instruction loop, first bare (`rvpmu-work alu N`), then inside
//! a counting event of `cycles:u` (`rvpmu-overflow-repro 0 N u cycles`:
//! one guest counter running). The cost per switch is each settled
//! interval of two guests against the rates of one guest alone with the
//! same workload; the table gives their median and range. Written to
//! target/bench/kvm-switch.md.

use crate::build::firmware;
use crate::build::kernel::Version;
use crate::guest::kvm::{host_cmd, KvmGuest, KvmHost};
use crate::guest::kvmcheck::{
    on_cpu0, switch_script, Rates, SwitchInterval, BARE_MEMORY, GUEST_TIMEOUT_S, PAIR_CPU,
    SWITCH_INTERVAL_MS, SWITCH_MEASURE_S, SWITCH_SETTLE_INTERVALS,
};
use crate::guest::linux::Guest;
use crate::guest::perftool::Plan;
use crate::host::{root, step};
use crate::qemu::Machine;
use anyhow::{bail, Result};
use std::fmt::Write as _;
use std::time::Duration;

/// Loop iterations of each guest: 2 G instructions, longer than the
/// measurement even alone.
const N: u64 = 1_000_000_000;

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
            k.timeout_s = Some(GUEST_TIMEOUT_S);
            gs.push(k);
        }
        let refs: Vec<&KvmGuest> = gs.iter().collect();
        plan.args(label, on_cpu0(&switch_script(label, &refs)));
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
    let mut runs = Vec::new();
    for (label, ..) in RUNS {
        let cmd = host_cmd(&out, label);
        let all = cmd
            .as_ref()
            .map(|c| SwitchInterval::parse_all(&c.stderr))
            .unwrap_or_default();
        if all.len() <= SWITCH_SETTLE_INTERVALS {
            bail!(
                "KVM switch cost: {} perf stat intervals for `{label}`: {:?}; console tail:\n{}",
                all.len(),
                cmd.map(|c| c.stderr),
                out.tail(30)
            );
        }
        runs.push(all[SWITCH_SETTLE_INTERVALS..].to_vec());
    }
    let mut md = format!(
        "# Cost of a switch between KVM guests\n\n\
         Linux 7.2 as the KVM host on rvpmu-fw (QEMU -icount shift=0,sleep=off, 2 harts; 1 instruction = 1 ns), \
         KVM guests (Linux 7.2, bare initramfs, one vCPU) pinned to KVM-host CPU {PAIR_CPU}, each running a loop of \
         {} instructions; `perf stat -I {SWITCH_INTERVAL_MS} -a -C {PAIR_CPU} -e instructions:G,context-switches` on the \
         KVM host for {SWITCH_MEASURE_S} s, the first {SWITCH_SETTLE_INTERVALS} intervals left out. Other work = the \
         interval's ns - the guests' instructions (everything else on the CPU, every mode). Cost per switch = (other \
         work - the rate of one guest alone x the interval) / (switches - the rate alone x the interval), per interval \
         of two guests. Written by `cargo xtask bench`.\n\n\
         | run | guest counters running | intervals | switches per 100 ms | other work per 100 ms | cost per extra switch, median (min..max) |\n|---|---|---|---|---|---|\n",
        2 * N
    );
    let mut each = String::new();
    for (i, (label, _, _, counters)) in RUNS.iter().enumerate() {
        let r = Rates::of(&runs[i]).expect("intervals");
        let cost = if label.starts_with("two") {
            let base = Rates::of(&runs[i - 1]).expect("intervals");
            let mut c: Vec<f64> = runs[i]
                .iter()
                .filter_map(|x| x.cost_against(&base))
                .collect();
            let _ = writeln!(
                each,
                "\n{label}, interval by interval: {}",
                c.iter()
                    .map(|x| format!("{x:.0}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            c.sort_by(f64::total_cmp);
            match (c.first(), c.get(c.len() / 2), c.last()) {
                (Some(lo), Some(med), Some(hi)) => format!("{med:.0} ({lo:.0}..{hi:.0})"),
                _ => "-".into(),
            }
        } else {
            "-".into()
        };
        let _ = writeln!(
            md,
            "| {label} | {counters} | {} | {:.1} | {:.0} | {cost} |",
            runs[i].len(),
            r.switches_per_ns * 1e8,
            r.other_per_ns * 1e8,
        );
    }
    md.push_str(&each);
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
