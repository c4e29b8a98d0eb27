//! `cargo xtask hv`: the hypervisor (crates/rvpmu-hv) on our firmware,
//! with a guest, under QEMU; `test()` is its QEMU test.
//!
//! The machine: QEMU virt, `-cpu rv64,h=true,sscofpmf=true,sstc=true`,
//! one hart, 512 MiB, exact instruction counting. rvpmu-fw is `-bios`,
//! the hypervisor `-kernel` (entered in HS-mode at 0x80200000), and the
//! guest a bundle (`rvpmu_hv::bundle`: RAM size, command line, kernel,
//! initrd) given as `-initrd`: QEMU loads it and names its place in the
//! host device tree, where the hypervisor finds it.

use crate::firmware::exit;
use crate::util::{cargo, root, run_captured, step};
use anyhow::{bail, Context, Result};
use rvpmu_hv::bundle::{Header, HEADER_LEN};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const TARGET: &str = "riscv64gc-unknown-none-elf";
const PROFILE: &str = "fw";
/// H for the hypervisor, Sstc for the guest's vstimecmp, Sscofpmf as on
/// every machine the project tests.
pub const CPU: &str = "rv64,h=true,sscofpmf=true,sstc=true";
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
}

pub fn cmd(a: HvArgs) -> Result<()> {
    crate::setup::ensure_host()?;
    if a.test {
        return test();
    }
    let images = build()?;
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
pub fn boot(images: &Images, bundle: &Path, memory: &str, timeout: Duration) -> Result<Run> {
    let mut q = crate::qemu::Qemu::virt(1);
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
    boot(images, &bundle, HOST_MEMORY, Duration::from_secs(60))
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
    use crate::linux::{initramfs, kernel};
    let k = kernel::build(kernel::Version::V7_2)?;
    let initrd = initramfs::build(&k)?;
    let dir = root().join("target").join("hv");
    std::fs::create_dir_all(&dir)?;
    let bundle = dir.join("linux.bundle");
    write_bundle(
        &bundle,
        LINUX_RAM,
        &format!("{LINUX_CONSOLE} {args}"),
        &std::fs::read(&k.image)?,
        &std::fs::read(&initrd.archive)?,
    )?;
    step("booting Linux 7.2 in VS-mode under rvpmu-hv");
    boot(images, &bundle, HOST_MEMORY_LINUX, Duration::from_secs(300))
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
    for l in [
        format!(
            "vs-check: hart 0, guest RAM 0x80000000..{:#x}, bootargs \"vs-check.end={end}\"",
            0x8000_0000u64 + VS_CHECK_RAM
        ),
        // The guest's own DBCN calls, forwarded to the host console.
        "vs-check: dbcn write forwarded".into(),
        "vs-check: dbcn byte forwarded".into(),
        "vs-check: all 65 checks passed".into(),
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
    if !failures.is_empty() {
        bail!("hypervisor tests failed: {}", failures.join(", "));
    }
    Ok(())
}

/// What is wrong with a Linux boot under the hypervisor: the kernel must
/// see our SBI (3.0, rvhv, the extensions offered and no PMU), our DT (the
/// model, 1 GiB at 0x80000000, Sstc), switch to hvc0, and run /init to
/// its end; the power-off is SBI SRST (exit 0).
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
        "printk: legacy console [hvc0] enabled",
        "Run /init as init process",
        "rvpmu /init: mode boot (1 CPUs online)",
        "RVPMU-DONE ok",
        "reboot: Power down",
    ];
    for w in want {
        if !run.text.contains(w) {
            p.push(format!("missing: {w:?}"));
        }
    }
    // No PMU is offered yet (phase 2): the kernel must not find one.
    if run.text.contains("SBI PMU extension is available") {
        p.push("the kernel found a PMU".into());
    }
    if run.code != Some(exit::POWER_OFF) {
        p.push(format!("{}, want 0", exit::describe(run.code)));
    }
    if run.text.contains("stopping the guest") {
        p.push("the hypervisor stopped the guest".into());
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "rvpmu-hv: guest RAM 0x80000000..0x84000000 at host 0x80400000; kernel 1 bytes\n\
        vs-check: hart 0, guest RAM 0x80000000..0x84000000, bootargs \"vs-check.end=fault\"\n\
        vs-check: dbcn write forwarded\n\
        vs-check: dbcn byte forwarded\n\
        vs-check: all 65 checks passed\n\
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
        assert_eq!(check_vs_check(&run("", None), "shutdown").len(), 6);
    }
}
