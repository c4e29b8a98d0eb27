//! `cargo xtask hv`: the hypervisor (crates/rvpmu-hv) on our firmware,
//! with a guest, under QEMU; `--test` runs its test suite instead.

use crate::build::hv;
use crate::guest::hv::{
    guest_mode, guest_run, hv_accounts, run_conformance, run_linux, run_linux_with, run_two_guests,
    run_vs_check, switch_costs, PERF_BOTH,
};
use crate::guest::hvcheck::{check_conformance, check_perf, check_steal, hot_per_iter, perf_plan};
use crate::host::setup;
use crate::qemu::exit;
use anyhow::Result;
use e2e_proto::plan::MODE as PLAN_MODE;

#[derive(clap::Args)]
pub struct HvArgs {
    /// Run the hypervisor's QEMU test instead (what `cargo xtask test` runs).
    #[arg(long)]
    pub test: bool,
    /// Boot the project's Linux 7.2 and guest userland as the guest
    /// (`rvpmu.mode=boot`) instead of vs-check.
    #[arg(long)]
    pub linux: bool,
    /// End the test guest with a load from an unmapped guest-physical
    /// address (the hypervisor must report it and stop the guest).
    #[arg(long)]
    pub fault: bool,
    /// With --linux: run Debian's perf stat in the guest (the test's
    /// plan: instructions:u of `rvpmu-work alu`) instead of the boot mode.
    #[arg(long, requires = "linux")]
    pub perf: bool,
    /// With --linux --perf: the hypervisor saves and restores the guest's
    /// counters with the host firmware's snapshot every 1 ms
    /// (as a switch to another guest and back would) and prints the cost.
    #[arg(long, requires = "perf")]
    pub switch: bool,
    /// With --linux: this many guests (1 or 2) from the one bundle,
    /// time-sliced on the one hart (`rvpmu-hv.guests=N`). With 2: both
    /// busy (rvpmu.mode=steal), steal shares and the hypervisor's
    /// accounting shown; with --perf, the perf plan in both.
    #[arg(long, default_value_t = 1, requires = "linux", value_parser = clap::value_parser!(u32).range(1..=2))]
    pub guests: u32,
    /// With --guests 2 (no --perf): guest 1 idles (rvpmu.mode=idle)
    /// while guest 0 is busy.
    #[arg(long)]
    pub idle: bool,
    /// Run the project's S-mode conformance kernel (crates/conformance)
    /// as the guest instead of vs-check.
    #[arg(long, conflicts_with_all = ["linux", "fault"])]
    pub conformance: bool,
}

pub fn cmd(a: HvArgs) -> Result<()> {
    setup::ensure_host()?;
    let images = hv::build()?;
    if a.conformance {
        let run = run_conformance(&images)?;
        print!("{}", run.text);
        println!("({})", exit::describe(run.code));
        let (problems, (pass, fail, na)) = check_conformance(&run);
        println!("in the guest: {pass} passed, {fail} failed, {na} n/a");
        for p in problems {
            println!("problem: {p}");
        }
        return Ok(());
    }
    if a.linux && a.guests == 2 && a.perf {
        let run = run_two_guests(&images, Some(&perf_plan()), PERF_BOTH)?;
        print!("{}", run.text);
        println!("({})", exit::describe(run.code));
        for g in 0..2 {
            let (problems, v, s) = check_perf(&guest_run(&run, g), hot_per_iter()?);
            println!(
                "guest {g} perf counts (instructions:u alu N, alu 2N, instructions alu N): {v:?}"
            );
            println!("guest {g} perf record: {s:?}");
            for p in problems {
                println!("problem: guest {g}: {p}");
            }
        }
        println!("hypervisor accounting: {:?}", hv_accounts(&run.text));
        println!(
            "guest switch costs: {:?}",
            switch_costs(&run.text, "guest switch")
        );
        return Ok(());
    }
    if a.linux && a.guests == 2 {
        let busy = [true, !a.idle];
        let run = run_two_guests(&images, None, busy.map(guest_mode))?;
        print!("{}", run.text);
        println!("({})", exit::describe(run.code));
        let (problems, figures) = check_steal(&run, busy);
        for f in figures {
            println!("{f}");
        }
        for p in problems {
            println!("problem: {p}");
        }
        return Ok(());
    }
    if a.linux && a.perf {
        let run = run_linux_with(&images, PLAN_MODE, Some(&perf_plan()), a.switch)?;
        print!("{}", run.text);
        println!("({})", exit::describe(run.code));
        let (problems, v, s) = check_perf(&run, hot_per_iter()?);
        println!("perf counts (instructions:u alu N, alu 2N, instructions alu N): {v:?}");
        println!("perf record: {s:?}");
        if a.switch {
            println!(
                "switch costs: {:?}",
                switch_costs(&run.text, "switch save+restore")
            );
        }
        for p in problems {
            println!("problem: {p}");
        }
        return Ok(());
    }
    if a.linux {
        let run = run_linux(&images, "rvpmu.mode=boot")?;
        print!("{}", run.text);
        println!("({})", exit::describe(run.code));
        return Ok(());
    }
    let end = if a.fault { "fault" } else { "shutdown" };
    let run = run_vs_check(&images, end)?;
    print!("{}", run.text);
    println!("({})", exit::describe(run.code));
    Ok(())
}
