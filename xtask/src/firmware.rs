//! Building and testing the M-mode firmware (crates/rvpmu-fw).
//!
//! `build()` produces the raw `-bios` image. `test()` boots it under QEMU
//! (exact instruction counting) with the `sbi-check` S-mode payload on 1-4
//! harts and a few machine variants, checks what the payload and the
//! firmware report, and compares size and boot cost with OpenSBI.
//!
//! QEMU's exit status says how the firmware powered off (`exit`, the
//! table in the rvpmu-fw crate documentation).

use crate::util::{cargo, root, run_captured, step};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const TARGET: &str = "riscv64gc-unknown-none-elf";
const PROFILE: &str = "fw";
const OPENSBI: &str = "/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.bin";
/// OpenSBI 1.5.1's fw_dynamic.bin and its instructions from reset to S-mode
/// entry (docs/FACTS.md section 9), for when it is not installed.
const OPENSBI_SIZE: u64 = 272_488;
const OPENSBI_BOOT_INSNS: u64 = 13_100_000;
/// Budgets: a quarter of OpenSBI's size, a tenth of its boot instructions.
const SIZE_BUDGET: u64 = OPENSBI_SIZE / 4;
const BOOT_BUDGET: u64 = OPENSBI_BOOT_INSNS / 10;
/// QEMU puts -kernel at the next 2 MiB boundary after the firmware; Linux
/// and the payload expect 0x80200000.
const MAX_IMAGE: u64 = 2 << 20;

#[derive(clap::Args)]
pub struct FirmwareArgs {
    /// Also run the firmware's QEMU tests (what `cargo xtask test` runs).
    #[arg(long)]
    pub test: bool,
}

pub fn cmd(a: FirmwareArgs) -> Result<()> {
    crate::setup::ensure_host()?;
    if a.test {
        test()?;
    }
    let p = build()?;
    println!("{}", p.display());
    Ok(())
}

fn out_dir() -> PathBuf {
    root().join("target").join(TARGET).join(PROFILE)
}

fn cargo_build(bin: &str) -> Result<PathBuf> {
    crate::util::run(cargo().args([
        "build",
        "-p",
        "rvpmu-fw",
        "--bin",
        bin,
        "--target",
        TARGET,
        "--profile",
        PROFILE,
    ]))?;
    let elf = out_dir().join(bin);
    if !elf.is_file() {
        bail!("cargo did not produce {}", elf.display());
    }
    Ok(elf)
}

/// Build the firmware and return the path of the raw `-bios` image.
pub fn build() -> Result<PathBuf> {
    step("building the firmware (rvpmu-fw, riscv64gc-unknown-none-elf, profile fw)");
    let elf = cargo_build("rvpmu-fw")?;
    let bin = out_dir().join("rvpmu-fw.bin");
    crate::util::run(
        Command::new("riscv64-linux-gnu-objcopy")
            .args(["-O", "binary"])
            .arg(&elf)
            .arg(&bin),
    )
    .context("objcopy failed: `cargo xtask setup` installs binutils-riscv64-linux-gnu")?;
    let size = std::fs::metadata(&bin)?.len();
    if size == 0 || size >= MAX_IMAGE {
        bail!(
            "firmware image {} has an unusable size ({size} bytes)",
            bin.display()
        );
    }
    Ok(bin)
}

/// The S-mode payload that checks the firmware's SBI calls (ELF, -kernel).
fn build_payload() -> Result<PathBuf> {
    step("building the sbi-check payload");
    cargo_build("sbi-check")
}

/// QEMU's exit statuses under rvpmu-fw: the sifive,test finisher codes
/// the firmware writes (`crates/rvpmu-fw/src/power.rs`, crate doc).
pub(crate) mod exit {
    /// Power-off (FINISHER_PASS): SRST shutdown without a failure reason,
    /// legacy shutdown.
    pub const POWER_OFF: i32 = 0;
    /// A fatal trap in the firmware; also what QEMU itself exits with on
    /// its own errors.
    pub const FATAL: i32 = 1;
    /// A panic in the firmware.
    pub const PANIC: i32 = 2;
    /// The boot failed (unusable device tree).
    pub const BOOT_FAILED: i32 = 3;
    /// SRST shutdown with reason "system failure" (the payload's failure).
    pub const SYSTEM_FAILURE: i32 = 83;

    /// What a QEMU exit status means on rvpmu-fw (`None`: QEMU was killed).
    pub fn describe(code: Option<i32>) -> String {
        match code {
            None => "QEMU did not exit (killed at the timeout)".into(),
            Some(POWER_OFF) => "QEMU exit status 0 (power-off)".into(),
            Some(SYSTEM_FAILURE) => format!(
                "QEMU exit status {SYSTEM_FAILURE} (SRST shutdown with reason system failure)"
            ),
            Some(FATAL) => format!(
                "QEMU exit status {FATAL} (a fatal trap in the firmware, or QEMU's own error)"
            ),
            Some(PANIC) => format!("QEMU exit status {PANIC} (a panic in the firmware)"),
            Some(BOOT_FAILED) => {
                format!("QEMU exit status {BOOT_FAILED} (the firmware's boot failed)")
            }
            Some(c) => format!("QEMU exit status {c}"),
        }
    }
}

/// One QEMU run: serial output and exit code (`None`: killed at timeout
/// or once `stop_at` appeared).
struct Run {
    text: String,
    code: Option<i32>,
}

fn qemu(
    bios: &Path,
    kernel: &Path,
    case: &Case,
    extra: &[&str],
    timeout: Duration,
    stop_at: Option<&str>,
) -> Result<Run> {
    let mut q = crate::qemu::Qemu::virt(case.smp);
    q.machine = case.machine.into();
    q.cpu = case.cpu.into();
    q.bios = Some(bios.to_path_buf());
    q.kernel = Some(kernel.to_path_buf());
    let mut cmd = q.command();
    cmd.args(extra);
    let run = run_captured(&mut cmd, timeout, stop_at)?;
    Ok(Run {
        text: run.stdout,
        code: run.status.and_then(|s| s.code()),
    })
}

/// A run of the checks of how the firmware ends (boot failure, SRST
/// system failure): one hart of a plain `virt`, `extra` options, a minute.
fn ending_run(name: &'static str, fw: &Path, kernel: &Path, extra: &[&str]) -> Result<Run> {
    let case = Case {
        name,
        machine: "virt",
        cpu: "rv64",
        smp: 1,
    };
    qemu(fw, kernel, &case, extra, Duration::from_secs(60), None)
}

/// The number after `key=` in the payload's output.
fn reported(text: &str, key: &str) -> Option<u64> {
    let at = text.find(key)? + key.len();
    text[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// A machine the payload runs on.
struct Case {
    name: &'static str,
    machine: &'static str,
    cpu: &'static str,
    smp: u32,
}

const CASES: &[Case] = &[
    Case {
        name: "1 hart",
        machine: "virt",
        cpu: "rv64,sscofpmf=true",
        smp: 1,
    },
    Case {
        name: "2 harts",
        machine: "virt",
        cpu: "rv64,sscofpmf=true",
        smp: 2,
    },
    Case {
        name: "3 harts",
        machine: "virt",
        cpu: "rv64,sscofpmf=true",
        smp: 3,
    },
    Case {
        name: "4 harts",
        machine: "virt",
        cpu: "rv64,sscofpmf=true",
        smp: 4,
    },
    // mtimecmp + injected STIP instead of stimecmp; no H (hfence NOT_SUPPORTED).
    Case {
        name: "2 harts, no Sstc, no H",
        machine: "virt",
        cpu: "rv64,sscofpmf=true,sstc=false,h=false",
        smp: 2,
    },
    // ACLINT MSWI/MTIMER nodes instead of the SiFive CLINT.
    Case {
        name: "2 harts, ACLINT",
        machine: "virt,aclint=on",
        cpu: "rv64,sscofpmf=true",
        smp: 2,
    },
];

/// Firmware tests that run under QEMU.
pub fn test() -> Result<()> {
    let fw = build()?;
    let payload = build_payload()?;
    let size = std::fs::metadata(&fw)?.len();
    let mut failures = Vec::new();
    let mut boot_insns = Vec::new();
    for case in CASES {
        step(&format!("firmware + sbi-check: {}", case.name));
        let run = qemu(&fw, &payload, case, &[], Duration::from_secs(180), None)?;
        let problems = check_run(&run, case.smp);
        if problems.is_empty() {
            eprintln!(
                "    ok ({})",
                run.text
                    .lines()
                    .find(|l| l.contains("checks passed"))
                    .unwrap_or("")
                    .trim()
            );
        } else {
            eprintln!("--- output ---\n{}--- end ---", run.text);
            for p in &problems {
                eprintln!("    FAIL: {p}");
            }
            failures.push(case.name);
        }
        if let Some(n) = reported(&run.text, "instructions-to-s-mode=") {
            boot_insns.push((case.name, n));
        }
    }

    step("firmware + sbi-check: QEMU's own DTB with libfdt's NOP tokens (-dtb)");
    match nop_dtb_run(&fw, &payload) {
        Ok(line) => eprintln!("    ok ({line}, as without NOP tokens)"),
        Err(e) => {
            eprintln!("    FAIL: {e:#}");
            failures.push("DTB with NOP tokens");
        }
    }

    step("firmware: a boot failure is reported and powers off (no hang)");
    match boot_failure_run(&fw, &payload) {
        Ok(()) => eprintln!("    ok"),
        Err(e) => {
            eprintln!("    FAIL: {e:#}");
            failures.push("boot failure powers off");
        }
    }

    step(&format!(
        "firmware: SRST shutdown with reason system failure exits with status {}",
        exit::SYSTEM_FAILURE
    ));
    match system_failure_run(&fw) {
        Ok(()) => eprintln!("    ok"),
        Err(e) => {
            eprintln!("    FAIL: {e:#}");
            failures.push("system failure exit status");
        }
    }

    step("firmware size and boot cost, ours vs OpenSBI");
    let (osbi_size, osbi_insns) = opensbi_numbers(&payload);
    eprintln!(
        "    image size: ours {size} bytes, OpenSBI {osbi_size} bytes ({:.1}%)",
        100.0 * size as f64 / osbi_size as f64
    );
    for (name, n) in &boot_insns {
        eprintln!(
            "    instructions reset -> S-mode ({name}): ours {n}, OpenSBI {osbi_insns} (1 hart) ({:.1}%)",
            100.0 * *n as f64 / osbi_insns as f64
        );
    }
    if size > SIZE_BUDGET {
        failures.push("image larger than a quarter of OpenSBI's");
        eprintln!("    FAIL: image {size} bytes > budget {SIZE_BUDGET}");
    }
    if boot_insns.len() != CASES.len() {
        failures.push("boot instruction count missing");
    }
    if let Some((name, n)) = boot_insns.iter().find(|(_, n)| *n > BOOT_BUDGET) {
        eprintln!("    FAIL: {name}: {n} instructions to S-mode > budget {BOOT_BUDGET}");
        failures.push("boot over budget");
    }
    if !failures.is_empty() {
        bail!("firmware tests failed: {}", failures.join(", "));
    }
    Ok(())
}

/// What is wrong with one sbi-check run.
fn check_run(run: &Run, smp: u32) -> Vec<String> {
    let mut p = Vec::new();
    let t = &run.text;
    match run.code {
        Some(exit::POWER_OFF) => {}
        Some(_) => p.push(exit::describe(run.code)),
        None => p.push("QEMU did not exit: SRST shutdown did not power off, or a hart hung".into()),
    }
    if !t.contains(&format!(
        "rvpmu-fw {}: SBI 3.0, {smp} hart(s)",
        env!("CARGO_PKG_VERSION")
    )) {
        p.push(format!("no firmware banner naming {smp} hart(s)"));
    }
    for line in [
        "sbi-check: dbcn write ok",
        "sbi-check: dbcn byte ok",
        "sbi-check: legacy putchar ok",
    ] {
        if !t.lines().any(|l| l.trim_end() == line) {
            p.push(format!("console line missing: {line:?}"));
        }
    }
    if reported(t, "harts=") != Some(smp as u64) {
        p.push(format!("payload did not see {smp} harts in the DT"));
    }
    if !t
        .lines()
        .any(|l| l.starts_with("sbi-check: all ") && l.trim_end().ends_with(" checks passed"))
    {
        p.push("payload did not report all checks passed".into());
    }
    for l in t
        .lines()
        .filter(|l| l.contains("FAIL") || l.contains("FATAL") || l.contains("PANIC"))
    {
        p.push(l.trim().to_string());
    }
    p
}

/// QEMU virt's own tree with what boot loaders' fixups leave (libfdt's
/// `fdt_nop_property` on the root's `model` and `/chosen/rng-seed`,
/// `fdt_nop_node` on the RTC, through python3-libfdt) boots the firmware
/// and sbi-check passes as on the tree without them: the "checks passed"
/// line both runs print.
fn nop_dtb_run(fw: &Path, payload: &Path) -> Result<String> {
    let case = &CASES[0];
    let dir = root().join("target").join("fw-test");
    std::fs::create_dir_all(&dir)?;
    let (plain, nopped) = (dir.join("virt.dtb"), dir.join("virt-nop.dtb"));
    let mut q = crate::qemu::Qemu::virt(case.smp);
    q.cpu = case.cpu.into();
    q.dump_dtb(&plain)?;
    crate::util::run(
        Command::new("/usr/bin/python3")
            .arg("-c")
            .arg(
                "import libfdt, sys\n\
                 f = libfdt.Fdt(bytearray(open(sys.argv[1], 'rb').read()))\n\
                 assert libfdt.fdt_nop_property(f._fdt, 0, 'model') == 0\n\
                 assert libfdt.fdt_nop_property(f._fdt, f.path_offset('/chosen'), 'rng-seed') == 0\n\
                 assert libfdt.fdt_nop_node(f._fdt, f.path_offset('/soc/rtc@101000')) == 0\n\
                 open(sys.argv[2], 'wb').write(f._fdt)\n",
            )
            .arg(&plain)
            .arg(&nopped),
    )
    .context("python3-libfdt failed: `cargo xtask setup` installs it")?;
    let passed = |run: &Run| -> Result<String> {
        let problems = check_run(run, case.smp);
        if !problems.is_empty() {
            bail!("{}; output:\n{}", problems.join("; "), run.text);
        }
        let line = run.text.lines().find(|l| l.contains("checks passed"));
        Ok(line.unwrap_or("").trim().to_string())
    };
    let timeout = Duration::from_secs(180);
    let with = |dtb: &Path| {
        let dtb = dtb.to_string_lossy().to_string();
        qemu(fw, payload, case, &["-dtb", &dtb], timeout, None)
    };
    let want = passed(&with(&plain)?)?;
    let got = passed(&with(&nopped)?)?;
    if got != want {
        bail!("with NOP tokens {got:?}, without {want:?}");
    }
    Ok(got)
}

/// A device tree without a memory node must stop the boot with a message
/// and a failure power-off (QEMU exits with the boot-failure code, 3), not
/// a hang.
fn boot_failure_run(fw: &Path, payload: &Path) -> Result<()> {
    let dir = root().join("target").join("fw-test");
    std::fs::create_dir_all(&dir)?;
    let dts = dir.join("no-memory.dts");
    let dtb = dir.join("no-memory.dtb");
    std::fs::write(
        &dts,
        "/dts-v1/;\n/ {\n #address-cells = <2>;\n #size-cells = <2>;\n compatible = \"riscv-virtio\";\n chosen { };\n cpus {\n  #address-cells = <1>;\n  #size-cells = <0>;\n  timebase-frequency = <10000000>;\n  cpu@0 { device_type = \"cpu\"; reg = <0>; compatible = \"riscv\"; riscv,isa = \"rv64imafdc\"; };\n };\n};\n",
    )?;
    crate::util::run(
        Command::new("dtc")
            .args(["-I", "dts", "-O", "dtb", "-o"])
            .arg(&dtb)
            .arg(&dts),
    )
    .context("dtc failed: `cargo xtask setup` installs device-tree-compiler")?;
    let dtb_s = dtb.to_string_lossy().to_string();
    let run = ending_run("no memory node", fw, payload, &["-dtb", &dtb_s])?;
    if !run
        .text
        .contains("rvpmu-fw: boot failed: device tree has no memory node")
    {
        bail!("no boot-failure message; output:\n{}", run.text);
    }
    if run.code != Some(exit::BOOT_FAILED) {
        bail!(
            "{}, want {} (boot-failure power-off)",
            exit::describe(run.code),
            exit::BOOT_FAILED
        );
    }
    Ok(())
}

/// An SRST shutdown with reason "system failure" must make QEMU exit with
/// the firmware's system-failure status (83), which no runner takes for
/// success. The conformance kernel makes the call with the upper 32 bits
/// of reset_type and reset_reason set (32-bit parameters: only the low
/// bits count) and says so if a call came back.
fn system_failure_run(fw: &Path) -> Result<()> {
    let kernel = crate::conformance::build_kernel()?;
    let run = ending_run(
        "SRST system failure",
        fw,
        &kernel,
        &["-append", "rvpmu.srst=failure"],
    )?;
    if let Some(l) = run.text.lines().find(|l| l.starts_with("SRST-RETURNED")) {
        bail!("the SRST call came back: {l}");
    }
    if run.code != Some(exit::SYSTEM_FAILURE) {
        bail!(
            "{}, want {}; output:\n{}",
            exit::describe(run.code),
            exit::SYSTEM_FAILURE,
            run.text
        );
    }
    Ok(())
}

/// OpenSBI's image size and instructions to S-mode (measured with the same
/// payload when the Debian package is installed, else the recorded facts).
fn opensbi_numbers(payload: &Path) -> (u64, u64) {
    let path = Path::new(OPENSBI);
    let Ok(meta) = std::fs::metadata(path) else {
        return (OPENSBI_SIZE, OPENSBI_BOOT_INSNS);
    };
    let insns = qemu(
        path,
        payload,
        &CASES[0],
        &[],
        Duration::from_secs(60),
        Some("boot-hart="),
    )
    .ok()
    .and_then(|r| reported(&r.text, "instructions-to-s-mode="))
    .unwrap_or(OPENSBI_BOOT_INSNS);
    (meta.len(), insns)
}
