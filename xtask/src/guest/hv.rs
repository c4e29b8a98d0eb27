//! Guests of the hypervisor (crates/rvpmu-hv) on our firmware, under
//! QEMU: vs-check (its test guest), the conformance kernel and Linux 7.2
//! with its initramfs (one guest, or two time-sliced from one bundle), and
//! what the hypervisor prints about them (accounting, switch costs).
//!
//! The machine: QEMU virt, `-cpu` [`crate::qemu::HV_CPU`], one hart, exact
//! instruction counting. rvpmu-fw is `-bios`, the hypervisor `-kernel`
//! (entered in HS-mode at 0x80200000), and the guest a bundle given as
//! `-initrd`: QEMU loads it and names its place in the host device tree,
//! where the hypervisor finds it.

use crate::build::hv::{write_bundle, Images};
use crate::build::{conformance, initramfs, kernel, objcopy};
use crate::host::{root, run_captured, step};
use crate::qemu::{Qemu, Run, HV_MEMORY, HV_MEMORY_LINUX, HV_MEMORY_LINUX_2};
use anyhow::Result;
use e2e_proto::plan::{Plan, MODE as PLAN_MODE};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// vs-check's guest RAM.
pub const VS_CHECK_RAM: u64 = 64 << 20;

/// Boot the hypervisor with a bundle.
/// The hypervisor's own command line (QEMU `-append`, the host DT's
/// /chosen bootargs) that makes it save and restore the guest's counters
/// every 1 ms of host time and report the cost (crates/rvpmu-hv/src/switch.rs).
pub const SWITCH_EVERY_MS: &str = "rvpmu-hv.switch=1ms";

pub fn boot(
    images: &Images,
    bundle: &Path,
    memory: &str,
    timeout: Duration,
    append: Option<&str>,
) -> Result<Run> {
    let mut q = machine(&images.firmware, &images.hypervisor, bundle, memory);
    q.append = append.map(String::from);
    Ok(Run::from_captured(run_captured(
        &mut q.command(),
        timeout,
        None,
    )?))
}

/// The hypervisor's machine: `firmware` as -bios, the hypervisor image
/// as -kernel, the guest `bundle` as -initrd, `memory` of host RAM.
pub fn machine(firmware: &Path, hypervisor: &Path, bundle: &Path, memory: &str) -> Qemu {
    let mut q = Qemu::hv(memory);
    q.bios = Some(firmware.to_path_buf());
    q.kernel = Some(hypervisor.to_path_buf());
    q.initrd = Some(bundle.to_path_buf());
    q
}

pub fn run_vs_check(images: &Images, end: &str) -> Result<Run> {
    let dir = root().join("target").join("hv");
    std::fs::create_dir_all(&dir)?;
    let bundle = dir.join(format!("vs-check-{end}.bundle"));
    let kernel = std::fs::read(&images.vs_check)?;
    write_bundle(
        &bundle,
        VS_CHECK_RAM,
        &format!("vs-check.end={end}"),
        &kernel,
        &[],
    )?;
    boot(images, &bundle, HV_MEMORY, Duration::from_secs(60), None)
}

/// The conformance kernel (crates/conformance, built as for `cargo xtask
/// conformance`) as the guest, with vs-check's RAM.
pub fn run_conformance(images: &Images) -> Result<Run> {
    let elf = conformance::build_kernel()?;
    let bundle = conformance_bundle(&elf, "")?;
    boot(images, &bundle, HV_MEMORY, Duration::from_secs(120), None)
}

/// Write target/hv/conformance.bundle: the conformance kernel `elf` as a
/// raw image (the hypervisor enters it at the guest's RAM base plus
/// 2 MiB, its link address) with vs-check's RAM and the command line
/// `cmdline` (the guest DT's bootargs).
pub fn conformance_bundle(elf: &Path, cmdline: &str) -> Result<PathBuf> {
    let kernel = std::fs::read(objcopy(elf)?)?;
    let dir = root().join("target").join("hv");
    std::fs::create_dir_all(&dir)?;
    let bundle = dir.join("conformance.bundle");
    write_bundle(&bundle, VS_CHECK_RAM, cmdline, &kernel, &[])?;
    Ok(bundle)
}

/// Linux's guest RAM: what a native run gets (1 GiB), the initramfs
/// (150 MB, unpacked into RAM again) needs most of it.
const LINUX_RAM: u64 = 1 << 30;

/// Linux's command line under the hypervisor: the console is SBI DBCN,
/// early (earlycon=sbi) and late (hvc0).
const LINUX_CONSOLE: &str = "earlycon=sbi console=hvc0";

/// Boot the project's Linux 7.2 with its initramfs as the guest, /init
/// reading `args`.
pub fn run_linux(images: &Images, args: &str) -> Result<Run> {
    run_linux_with(images, args, None, false)
}

/// Write target/hv/`name`[-plan].bundle: the e2e suite's Linux 7.2 Image
/// and initramfs (with `plan` as /rvpmu/plan when given), [`LINUX_RAM`]
/// of guest RAM and the command line `cmdline`.
fn linux_bundle(name: &str, plan: Option<&Plan>, cmdline: &str) -> Result<PathBuf> {
    let k = kernel::build(kernel::Version::V7_2)?;
    let initrd = initramfs::build(&k)?;
    let archive = match plan {
        Some(p) => initrd.with_plan(&k, &p.text())?,
        None => initrd.archive.clone(),
    };
    let dir = root().join("target").join("hv");
    std::fs::create_dir_all(&dir)?;
    let suffix = if plan.is_some() { "-plan" } else { "" };
    let bundle = dir.join(format!("{name}{suffix}.bundle"));
    write_bundle(
        &bundle,
        LINUX_RAM,
        cmdline,
        &std::fs::read(&k.image)?,
        &std::fs::read(&archive)?,
    )?;
    Ok(bundle)
}

/// [`run_linux`], with `plan` (e2e-init's `rvpmu.mode=plan`) as
/// /rvpmu/plan in the initramfs when given.
/// With `switch`, the hypervisor saves and restores the guest's counters
/// every 1 ms ([`SWITCH_EVERY_MS`]).
pub fn run_linux_with(
    images: &Images,
    args: &str,
    plan: Option<&Plan>,
    switch: bool,
) -> Result<Run> {
    let bundle = linux_bundle("linux", plan, &format!("{LINUX_CONSOLE} {args}"))?;
    step("booting Linux 7.2 in VS-mode under rvpmu-hv");
    boot(
        images,
        &bundle,
        HV_MEMORY_LINUX,
        Duration::from_secs(300),
        switch.then_some(SWITCH_EVERY_MS),
    )
}

/// The scheduler's quantum in the two-guest runs: one tick of the
/// guests' HZ=250 Linux.
pub const QUANTUM_US: u64 = 4000;

/// Guest milliseconds of each busy guest's measured interval (steal
/// mode): 100 USER_HZ ticks of /proc/stat, so one tick of rounding in
/// either reading is 1% of the interval.
pub const STEAL_MS: u64 = 1000;

/// A busy guest: the steal scenario (a user busy loop on its one CPU,
/// /proc/stat before and after).
const BUSY_GUEST: &str = "rvpmu.mode=steal";

/// The perf plan in both guests (each guest's words).
pub const PERF_BOTH: [&str; 2] = [PLAN_MODE, PLAN_MODE];

/// An idle guest: sleeps through the busy guest's interval and a
/// margin for the busy guest's start (its boot and /proc/stat read).
const IDLE_GUEST: &str = "rvpmu.mode=idle rvpmu.busy_ms=1500";

pub fn guest_mode(busy: bool) -> &'static str {
    if busy {
        BUSY_GUEST
    } else {
        IDLE_GUEST
    }
}

/// Boot two Linux guests from one bundle (the e2e kernel and initramfs,
/// with `plan` as /rvpmu/plan when given), time-sliced at
/// [`QUANTUM_US`]; `args[g]` are guest g's own words (each word becomes
/// `rvpmu-hv.argG=WORD`), after the bundle's common command line.
pub fn run_two_guests(images: &Images, plan: Option<&Plan>, args: [&str; 2]) -> Result<Run> {
    let bundle = linux_bundle(
        "linux2",
        plan,
        &format!("{LINUX_CONSOLE} rvpmu.busy_ms={STEAL_MS}"),
    )?;
    let mut append = format!("rvpmu-hv.guests=2 rvpmu-hv.quantum_us={QUANTUM_US}");
    for (g, a) in args.iter().enumerate() {
        for w in a.split_whitespace() {
            append += &format!(" rvpmu-hv.arg{g}={w}");
        }
    }
    step(&format!(
        "booting two Linux 7.2 guests under rvpmu-hv ({append})"
    ));
    boot(
        images,
        &bundle,
        HV_MEMORY_LINUX_2,
        Duration::from_secs(600),
        Some(&append),
    )
}

/// Guest `g`'s console lines (tagged `[gN] ` by the hypervisor), untagged.
pub fn guest_text(text: &str, g: usize) -> String {
    let tag = format!("[g{g}] ");
    text.lines()
        .filter_map(|l| l.strip_prefix(&tag))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Guest `g`'s part of a run, with the run's exit status.
pub fn guest_run(run: &Run, g: usize) -> Run {
    Run {
        text: guest_text(&run.text, g),
        code: run.code,
    }
}

/// `plan` (e2e-init's rvpmu.mode=plan) in one guest, or in each of two
/// guests time-sliced: the whole run (`cargo xtask run --hv`).
pub fn run_plan(plan: &Plan, guests: u32) -> Result<Run> {
    let images = crate::build::hv::build()?;
    if guests == 2 {
        run_two_guests(&images, Some(plan), PERF_BOTH)
    } else {
        run_linux_with(&images, PLAN_MODE, Some(plan), false)
    }
}

/// One guest's time as the hypervisor counted it, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HvAccount {
    pub run: u64,
    pub steal: u64,
    pub idle: u64,
    /// What its STA record reported (from its registration on).
    pub sta: u64,
}

/// The hypervisor's accounting lines ("rvpmu-hv: guest G: run R ns,
/// steal S ns, idle I ns; STA record: T ns reported"), by guest.
pub fn hv_accounts(text: &str) -> Vec<HvAccount> {
    let mut v = Vec::new();
    for l in text.lines() {
        let Some(r) = l.trim().strip_prefix("rvpmu-hv: guest ") else {
            continue;
        };
        let num = |key: &str| -> Option<u64> {
            let (_, after) = r.split_once(key)?;
            after.split_whitespace().next()?.parse().ok()
        };
        let (Some(g), Some(run), Some(steal), Some(idle), Some(sta)) = (
            r.split(':').next().and_then(|g| g.parse::<usize>().ok()),
            num(": run "),
            num(", steal "),
            num(", idle "),
            num("STA record: "),
        ) else {
            continue;
        };
        if g == v.len() {
            v.push(HvAccount {
                run,
                steal,
                idle,
                sta,
            });
        }
    }
    v
}

/// The hypervisor's switch cost lines ("rvpmu-hv: `what` with k
/// counter(s) running: ..."): (running counters, switches, min, max,
/// mean instructions).
pub fn switch_costs(text: &str, what: &str) -> Vec<(u64, u64, u64, u64, u64)> {
    let prefix = format!("rvpmu-hv: {what} with ");
    text.lines()
        .filter_map(|l| {
            let r = l.trim().strip_prefix(&prefix)?;
            let num = |x: &str| {
                x.trim_matches(|c: char| !c.is_ascii_digit())
                    .parse::<u64>()
                    .ok()
            };
            let (k, r) = r.split_once(" counter(s) running: ")?;
            let (n, r) = r.split_once(" times, ")?;
            let (range, r) = r.split_once(" instructions (mean ")?;
            let (min, max) = range.split_once("..")?;
            Some((num(k)?, num(n)?, num(min)?, num(max)?, num(r)?))
        })
        .collect()
}

/// The `RVPMU-RESULT` objects of `scenario` in a console text.
pub fn scenario_results<'a>(
    text: &'a str,
    scenario: &'a str,
) -> impl Iterator<Item = serde_json::Value> + 'a {
    text.lines()
        .filter_map(|l| l.strip_prefix(e2e_proto::RESULT))
        .filter_map(|j| serde_json::from_str::<serde_json::Value>(j).ok())
        .filter(move |v| v["scenario"] == scenario)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_cost_lines_are_parsed() {
        let t = "x\nrvpmu-hv: switch save+restore with 0 counter(s) running: 828 times, 11..11 instructions (mean 11)\n\
                 rvpmu-hv: switch save+restore with 4 counter(s) running: 3 times, 900..1010 instructions (mean 950)\n\
                 rvpmu-hv: switch save+restore with x counter(s) running: 3 times\n";
        assert_eq!(
            switch_costs(t, "switch save+restore"),
            [(0, 828, 11, 11, 11), (4, 3, 900, 1010, 950)]
        );
        assert!(switch_costs(t, "guest switch").is_empty());
        assert!(switch_costs("", "switch save+restore").is_empty());
    }
}
