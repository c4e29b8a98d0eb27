//! `cargo xtask hv`: the hypervisor (crates/rvpmu-hv) on our firmware,
//! with a guest, under QEMU; `test()` is its QEMU test.
//!
//! The machine: QEMU virt, `-cpu rv64,h=true,sscofpmf=true,sstc=true,ssaia=true`,
//! one hart, 512 MiB, exact instruction counting. rvpmu-fw is `-bios`,
//! the hypervisor `-kernel` (entered in HS-mode at 0x80200000), and the
//! guest a bundle (`rvpmu_hv::bundle`: RAM size, command line, kernel,
//! initrd) given as `-initrd`: QEMU loads it and names its place in the
//! host device tree, where the hypervisor finds it.

use crate::firmware::exit;
use crate::linux::demo::{HOT_N, RECORD_PERIOD};
use crate::linux::perftool::{parse_record_samples, parse_report, parse_stat_csv, CmdResult, Plan};
use crate::util::{cargo, root, run_captured, step};
use anyhow::{bail, Context, Result};
use rvpmu_hv::bundle::{Header, HEADER_LEN};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const TARGET: &str = "riscv64gc-unknown-none-elf";
const PROFILE: &str = "fw";
/// H for the hypervisor, Sstc for the guest's vstimecmp, Sscofpmf as on
/// every machine the project tests, Ssaia for `hvien` (the guest's
/// counter overflow interrupt is injected through hvip bit 13).
pub const CPU: &str = "rv64,h=true,sscofpmf=true,sstc=true,ssaia=true";
/// Host RAM for vs-check: the firmware, the hypervisor, the guest's RAM,
/// the bundle (QEMU 10.0 puts -initrd 256 MiB after the kernel here), the DTB at
/// the top.
pub const HOST_MEMORY: &str = "512M";
/// Host RAM for Linux: its bundle holds the 150 MB uncompressed
/// initramfs, and its guest RAM (as much as a native run's 1 GiB) goes
/// after the bundle; with more than 1 GiB QEMU puts the host DTB below
/// 3 GiB, and the window goes after it.
pub const HOST_MEMORY_LINUX: &str = "2G";
/// vs-check's guest RAM.
const VS_CHECK_RAM: u64 = 64 << 20;

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
    crate::setup::ensure_host()?;
    if a.test {
        return test();
    }
    let images = build()?;
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
        let run = run_linux_with(&images, "rvpmu.mode=plan", Some(&perf_plan()), a.switch)?;
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

/// The firmware, the hypervisor and the test guest, as raw images.
pub struct Images {
    pub firmware: PathBuf,
    pub hypervisor: PathBuf,
    pub vs_check: PathBuf,
}

fn objcopy(elf: &Path) -> Result<PathBuf> {
    let bin = elf.with_extension("bin");
    crate::util::run(
        Command::new("riscv64-linux-gnu-objcopy")
            .args(["-O", "binary"])
            .arg(elf)
            .arg(&bin),
    )
    .context("objcopy failed: `cargo xtask setup` installs binutils-riscv64-linux-gnu")?;
    Ok(bin)
}

/// Build everything a hypervisor run needs.
pub fn build() -> Result<Images> {
    let firmware = crate::firmware::build()?;
    step("building the hypervisor (rvpmu-hv) and its test guest (vs-check)");
    crate::util::run(cargo().args([
        "build",
        "-p",
        "rvpmu-hv",
        "--bin",
        "rvpmu-hv",
        "--bin",
        "vs-check",
        "--target",
        TARGET,
        "--profile",
        PROFILE,
    ]))?;
    let dir = root().join("target").join(TARGET).join(PROFILE);
    Ok(Images {
        firmware,
        hypervisor: objcopy(&dir.join("rvpmu-hv"))?,
        vs_check: objcopy(&dir.join("vs-check"))?,
    })
}

/// Write a guest bundle to `out`.
pub fn write_bundle(
    out: &Path,
    ram_size: u64,
    cmdline: &str,
    kernel: &[u8],
    initrd: &[u8],
) -> Result<()> {
    let h = Header::for_parts(
        ram_size,
        cmdline.len() as u64,
        kernel.len() as u64,
        initrd.len() as u64,
    );
    let mut b = vec![0u8; h.total_len() as usize];
    b[..HEADER_LEN].copy_from_slice(&h.to_bytes());
    for ((off, len), data) in [
        (h.cmdline, cmdline.as_bytes()),
        (h.kernel, kernel),
        (h.initrd, initrd),
    ] {
        b[off as usize..(off + len) as usize].copy_from_slice(data);
    }
    std::fs::write(out, b).with_context(|| format!("cannot write {}", out.display()))
}

/// What one run printed and how QEMU ended (`None`: killed at the timeout).
pub struct Run {
    pub text: String,
    pub code: Option<i32>,
}

/// Boot the hypervisor with a bundle.
/// The hypervisor's own command line (QEMU `-append`, the host DT's
/// /chosen bootargs) that makes it save and restore the guest's counters
/// every 1 ms of host time and report the cost (crates/rvpmu-hv/src/switch.rs).
const SWITCH_EVERY_MS: &str = "rvpmu-hv.switch=1ms";

pub fn boot(
    images: &Images,
    bundle: &Path,
    memory: &str,
    timeout: Duration,
    append: Option<&str>,
) -> Result<Run> {
    let mut q = crate::qemu::Qemu::virt(1);
    q.append = append.map(String::from);
    q.cpu = CPU.into();
    q.memory = memory.into();
    q.bios = Some(images.firmware.clone());
    q.kernel = Some(images.hypervisor.clone());
    q.initrd = Some(bundle.to_path_buf());
    let run = run_captured(&mut q.command(), timeout, None)?;
    Ok(Run {
        text: run.stdout,
        code: run.status.and_then(|s| s.code()),
    })
}

fn run_vs_check(images: &Images, end: &str) -> Result<Run> {
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
    boot(images, &bundle, HOST_MEMORY, Duration::from_secs(60), None)
}

/// The conformance kernel (crates/conformance, built as for `cargo xtask
/// conformance`) as the guest, with vs-check's RAM.
fn run_conformance(images: &Images) -> Result<Run> {
    let elf = crate::conformance::build_kernel()?;
    let kernel = std::fs::read(objcopy(&elf)?)?;
    let dir = root().join("target").join("hv");
    std::fs::create_dir_all(&dir)?;
    let bundle = dir.join("conformance.bundle");
    write_bundle(&bundle, VS_CHECK_RAM, "", &kernel, &[])?;
    boot(images, &bundle, HOST_MEMORY, Duration::from_secs(120), None)
}

/// Conformance checks that fail in the guest, with the spec's reason in
/// docs/hypervisor.md: their premise is the native machine's memory map
/// (0x80000000 "where the firmware lives" is the guest's own RAM, which
/// it may register: SUCCESS).
const CONFORMANCE_FAIL: &[&str] = &["pmu.snap.fw_addr", "pmu.evinfo.fw_addr", "sta.fw_addr"];
/// Conformance checks N/A in the guest (optional features it lacks): no
/// fixed cycle/instret PMU counters (the guest's counters are host HPM
/// counters filtered to VS/VU), no legacy console.
const CONFORMANCE_NA: &[&str] = &[
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
fn check_conformance(run: &Run) -> (Vec<String>, (usize, usize, usize)) {
    let mut p = Vec::new();
    let crate::conformance::Verdicts {
        checks,
        result,
        unfinished,
    } = crate::conformance::verdicts(&run.text, run.code);
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
    use crate::linux::{initramfs, kernel};
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
fn run_linux_with(images: &Images, args: &str, plan: Option<&Plan>, switch: bool) -> Result<Run> {
    let bundle = linux_bundle("linux", plan, &format!("{LINUX_CONSOLE} {args}"))?;
    step("booting Linux 7.2 in VS-mode under rvpmu-hv");
    boot(
        images,
        &bundle,
        HOST_MEMORY_LINUX,
        Duration::from_secs(300),
        switch.then_some(SWITCH_EVERY_MS),
    )
}

/// Host RAM for two Linux guests: two 1 GiB windows and the bundle
/// (150 MB) fit below 4 GiB with the firmware, the hypervisor and the
/// host DTB.
pub const HOST_MEMORY_LINUX_2: &str = "3G";
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
const PERF_BOTH: [&str; 2] = ["rvpmu.mode=plan", "rvpmu.mode=plan"];
/// An idle guest: sleeps through the busy guest's interval and a
/// margin for the busy guest's start (its boot and /proc/stat read).
const IDLE_GUEST: &str = "rvpmu.mode=idle rvpmu.busy_ms=1500";

fn guest_mode(busy: bool) -> &'static str {
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
fn run_two_guests(images: &Images, plan: Option<&Plan>, args: [&str; 2]) -> Result<Run> {
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
        HOST_MEMORY_LINUX_2,
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
fn guest_run(run: &Run, g: usize) -> Run {
    Run {
        text: guest_text(&run.text, g),
        code: run.code,
    }
}

/// `plan` (e2e-init's rvpmu.mode=plan) in one guest, or in each of two
/// guests time-sliced: the whole run (`cargo xtask run --hv`).
pub fn run_plan(plan: &Plan, guests: u32) -> Result<Run> {
    let images = build()?;
    if guests == 2 {
        run_two_guests(&images, Some(plan), ["rvpmu.mode=plan", "rvpmu.mode=plan"])
    } else {
        run_linux_with(&images, "rvpmu.mode=plan", Some(plan), false)
    }
}

/// One guest's time as the hypervisor counted it, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct HvAccount {
    run: u64,
    steal: u64,
    idle: u64,
    /// What its STA record reported (from its registration on).
    sta: u64,
}

/// The hypervisor's accounting lines ("rvpmu-hv: guest G: run R ns,
/// steal S ns, idle I ns; STA record: T ns reported"), by guest.
fn hv_accounts(text: &str) -> Vec<HvAccount> {
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
fn check_steal(run: &Run, busy: [bool; 2]) -> (Vec<String>, Vec<String>) {
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
fn check_vs_check(run: &Run, end: &str) -> Vec<String> {
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
        "vs-check: all 120 checks passed".into(),
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

/// The hypervisor's QEMU test: vs-check ending with a shutdown (exit 0)
/// and with an unmapped load (the hypervisor reports it, exit 83), and
/// Linux 7.2 booting to /init; each run twice: under icount the two runs
/// must print the same text.
pub fn test() -> Result<()> {
    let images = build()?;
    let mut failures = Vec::new();
    for end in ["shutdown", "fault"] {
        step(&format!("hypervisor + vs-check guest, vs-check.end={end}"));
        let first = run_vs_check(&images, end)?;
        let mut problems = check_vs_check(&first, end);
        let second = run_vs_check(&images, end)?;
        if second.text != first.text || second.code != first.code {
            problems.push("two identical runs printed different output".into());
        }
        if problems.is_empty() {
            eprintln!("    ok ({})", exit::describe(first.code));
        } else {
            eprintln!("--- output ---\n{}--- end ---", first.text);
            for p in &problems {
                eprintln!("    FAIL: {p}");
            }
            failures.push(end);
        }
    }
    step("hypervisor + the conformance kernel as a VS-mode guest");
    let first = run_conformance(&images)?;
    let (mut problems, (pass, fail, na)) = check_conformance(&first);
    let second = run_conformance(&images)?;
    if second.text != first.text || second.code != first.code {
        problems.push("two identical runs printed different output".into());
    }
    if problems.is_empty() {
        eprintln!("    ok: {pass} passed, {fail} failed and {na} n/a as documented");
    } else {
        eprintln!("--- output ---\n{}--- end ---", first.text);
        for p in &problems {
            eprintln!("    FAIL: {p}");
        }
        failures.push("conformance");
    }
    step("hypervisor + Linux 7.2 and the guest userland (rvpmu.mode=boot)");
    let first = run_linux(&images, "rvpmu.mode=boot")?;
    let mut problems = check_linux(&first);
    let second = run_linux(&images, "rvpmu.mode=boot")?;
    if second.text != first.text || second.code != first.code {
        problems.push("two identical runs printed different output".into());
    }
    if problems.is_empty() {
        eprintln!("    ok ({})", exit::describe(first.code));
    } else {
        eprintln!("--- output ---\n{}--- end ---", first.text);
        for p in &problems {
            eprintln!("    FAIL: {p}");
        }
        failures.push("linux");
    }
    let mut alone = None;
    for switch in [false, true] {
        let counts = perf_step(&images, switch, &mut failures)?;
        alone = alone.or(counts);
    }
    for busy in [[true, true], [true, false]] {
        steal_step(&images, busy, &mut failures)?;
    }
    perf_two_step(&images, alone, &mut failures)?;
    if !failures.is_empty() {
        bail!("hypervisor tests failed: {}", failures.join(", "));
    }
    Ok(())
}

/// Debian's perf in the guest (sampling, then exact counts), twice; with
/// `switch`, the guest's counters are saved and restored every 1 ms of
/// host time, which must change none of the results; the cost is reported.
/// Returns the first run's instructions:u counts of alu N and alu 2N
/// when it passed.
fn perf_step(
    images: &Images,
    switch: bool,
    failures: &mut Vec<&'static str>,
) -> Result<Option<[u64; 2]>> {
    step(&format!(
        "hypervisor + Linux 7.2: Debian's perf record and perf stat in the guest (rvpmu.mode=plan{})",
        if switch { ", counters saved and restored every 1 ms" } else { "" }
    ));
    let plan = perf_plan();
    let first = run_linux_with(images, "rvpmu.mode=plan", Some(&plan), switch)?;
    let (mut problems, v, s) = check_perf(&first, hot_per_iter()?);
    let costs = switch_costs(&first.text, "switch save+restore");
    if switch && !costs.iter().any(|c| c.0 >= 1 && c.1 > 0) {
        problems.push(format!(
            "no switch with a running counter reported: {costs:?}"
        ));
    }
    if !switch && !costs.is_empty() {
        problems.push(format!(
            "switch costs reported without {SWITCH_EVERY_MS}: {costs:?}"
        ));
    }
    let second = run_linux_with(images, "rvpmu.mode=plan", Some(&plan), switch)?;
    if second.text != first.text || second.code != first.code {
        problems.push("two identical runs printed different output".into());
    }
    if !switch {
        let native = native_counts(images, &plan)?;
        if native != [v[0], v[1]] {
            problems.push(format!(
                "instructions:u of alu N, 2N in the guest {:?}, native on rvpmu-fw {native:?}: want the same (the guest's user code and what it sees are the native ones)",
                [v[0], v[1]]
            ));
        } else {
            eprintln!("    ok: native on rvpmu-fw (same Image, initramfs and plan) counts the same instructions:u: {native:?}");
        }
    }
    let ok = problems.is_empty();
    report_perf(&first, &problems, v, s, &costs);
    if !ok {
        failures.push(if switch {
            "linux-perf-switch"
        } else {
            "linux-perf"
        });
    }
    Ok(ok.then(|| [v[0].unwrap_or(0), v[1].unwrap_or(0)]))
}

/// Print a perf run's figures, or its output and problems.
fn report_perf(
    run: &Run,
    problems: &[String],
    v: [Option<u64>; 3],
    s: Sampling,
    costs: &[(u64, u64, u64, u64, u64)],
) {
    if problems.is_empty() {
        let [n, n2, all] = v.map(|x| x.unwrap_or(0));
        eprintln!(
            "    ok: instructions:u alu {ALU_N} = {n}, alu {} = {n2} (difference {}, exactly 2N); instructions (VU + VS) alu {ALU_N} = {all}",
            2 * ALU_N,
            n2 - n
        );
        eprintln!(
            "    ok: perf record -e instructions:u -c {RECORD_PERIOD} of rvpmu-work hot {HOT_N}: {} samples for {} periods; rvpmu_hot_a {:.2}%, rvpmu_hot_b {:.2}%",
            s.samples, s.periods, s.hot_a, s.hot_b
        );
        for (k, n, min, max, mean) in costs {
            eprintln!(
                "    switch with {k} counter(s) running: {n} times, {min}..{max} instructions (mean {mean})"
            );
        }
    } else {
        eprintln!("--- output ---\n{}--- end ---", run.text);
        for p in problems {
            eprintln!("    FAIL: {p}");
        }
    }
}

/// Two Linux guests time-sliced (`busy[g]`: guest g runs the steal
/// scenario, else it idles), twice: [`check_steal`]'s assertions, and
/// the same text in both runs.
fn steal_step(images: &Images, busy: [bool; 2], failures: &mut Vec<&'static str>) -> Result<()> {
    let name = if busy[1] {
        "two busy guests"
    } else {
        "a busy and an idle guest"
    };
    step(&format!(
        "hypervisor + two Linux 7.2 guests time-sliced at {QUANTUM_US} us: {name}, steal time"
    ));
    let first = run_two_guests(images, None, busy.map(guest_mode))?;
    let (mut problems, figures) = check_steal(&first, busy);
    let second = run_two_guests(images, None, busy.map(guest_mode))?;
    if second.text != first.text || second.code != first.code {
        problems.push("two identical runs printed different output".into());
    }
    if problems.is_empty() {
        for f in figures {
            eprintln!("    ok: {f}");
        }
    } else {
        eprintln!("--- output ---\n{}--- end ---", first.text);
        for p in &problems {
            eprintln!("    FAIL: {p}");
        }
        failures.push(if busy[1] {
            "two-busy-guests"
        } else {
            "busy-and-idle-guests"
        });
    }
    Ok(())
}

/// Debian's perf in both guests at once, time-sliced, twice: the perf
/// plan's assertions in each, and each guest's instructions:u counts of
/// alu N and alu 2N exactly what a guest counts alone (`alone`, from
/// [`perf_step`]): neither the other guest's nor the hypervisor's
/// instructions are in them, though both guests use the same host
/// counters for the same events in turn.
fn perf_two_step(
    images: &Images,
    alone: Option<[u64; 2]>,
    failures: &mut Vec<&'static str>,
) -> Result<()> {
    step("hypervisor + two Linux 7.2 guests time-sliced: Debian's perf in both");
    let plan = perf_plan();
    let first = run_two_guests(images, Some(&plan), PERF_BOTH)?;
    let mut problems = Vec::new();
    let mut figures = Vec::new();
    for g in 0..2 {
        let (p, v, s) = check_perf(&guest_run(&first, g), hot_per_iter()?);
        problems.extend(p.into_iter().map(|p| format!("guest {g}: {p}")));
        match alone {
            Some(a) if [v[0], v[1]] != [Some(a[0]), Some(a[1])] => problems.push(format!(
                "guest {g}: instructions:u of alu N, 2N time-sliced {:?}, alone {a:?}: want the same",
                [v[0], v[1]]
            )),
            Some(_) => {}
            None => problems.push("no single-guest counts to compare with".into()),
        }
        figures.push((v, s));
    }
    let costs = switch_costs(&first.text, "guest switch");
    if !costs.iter().any(|c| c.0 >= 1 && c.1 > 0) {
        problems.push(format!("no guest switch with a running counter: {costs:?}"));
    }
    let second = run_two_guests(images, Some(&plan), PERF_BOTH)?;
    if second.text != first.text || second.code != first.code {
        problems.push("two identical runs printed different output".into());
    }
    let ok = problems.is_empty();
    for (g, (v, s)) in figures.into_iter().enumerate() {
        if ok {
            eprintln!("    guest {g}:");
        }
        report_perf(&first, &problems, v, s, if g == 1 { &costs } else { &[] });
        if !ok {
            break;
        }
    }
    if ok {
        eprintln!("    ok: both guests count exactly what a guest counts alone");
    } else {
        failures.push("perf-two-guests");
    }
    Ok(())
}

/// The hypervisor's switch cost lines ("rvpmu-hv: `what` with k
/// counter(s) running: ..."): (running counters, switches, min, max,
/// mean instructions).
fn switch_costs(text: &str, what: &str) -> Vec<(u64, u64, u64, u64, u64)> {
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

/// What is wrong with a Linux boot under the hypervisor: the kernel must
/// see our SBI (3.0, rvhv, the extensions offered, the PMU with 16
/// hardware and 16 firmware counters and the snapshot), our DT (the
/// model, 1 GiB at 0x80000000, Sstc), switch to hvc0, and run /init to
/// its end (its boot mode counts a loop's user instructions through
/// perf_event_open); the power-off is SBI SRST (exit 0).
fn check_linux(run: &Run) -> Vec<String> {
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
const ALU_N: u64 = 1_000_000;

/// Debian's perf in the guest: `instructions:u` of `alu N` and `alu 2N`,
/// then unfiltered `instructions` (the guest's user and kernel, i.e. VU
/// and VS) of `alu N`; address-space randomisation off first, as the
/// native suite does.
fn perf_plan() -> Plan {
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

/// The `RVPMU-RESULT` objects of `scenario` in a console text.
fn scenario_results<'a>(
    text: &'a str,
    scenario: &'a str,
) -> impl Iterator<Item = serde_json::Value> + 'a {
    text.lines()
        .filter_map(|l| l.strip_prefix("RVPMU-RESULT "))
        .filter_map(|j| serde_json::from_str::<serde_json::Value>(j).ok())
        .filter(move |v| v["scenario"] == scenario)
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
fn native_counts(images: &Images, plan: &Plan) -> Result<[Option<u64>; 2]> {
    step("the same plan natively on rvpmu-fw, for the guest-vs-native counts");
    let console = crate::linux::run_plan_natively(&images.firmware, &plan.text())?;
    let [n, n2, _] = alu_counts(&plan_results(&console));
    Ok([n, n2])
}

/// The guest's perf counts: (instructions:u of alu N, of alu 2N,
/// instructions of alu N), each only if perf counted it on a counter the
/// whole time; and what is wrong.
fn check_perf(run: &Run, hot_per_iter: u64) -> (Vec<String>, [Option<u64>; 3], Sampling) {
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
struct Sampling {
    samples: u64,
    periods: u64,
    hot_a: f64,
    hot_b: f64,
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
fn hot_per_iter() -> Result<u64> {
    use crate::linux::{initramfs, kernel};
    let k = kernel::build(kernel::Version::V7_2)?;
    let initrd = initramfs::build(&k)?;
    initramfs::loop_body_instructions(&initrd.init_elf, "rvpmu_hot_a")
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
        vs-check: all 120 checks passed\n\
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
