//! The firmware's QEMU tests: rvpmu-fw under QEMU (exact instruction
//! counting) with the `sbi-check` S-mode payload on 1-4 harts and a few
//! machine variants, checking what the payload and the firmware report,
//! how the firmware ends (boot failure, SRST system failure), and its size
//! and boot cost against OpenSBI.

use crate::build::conformance::build_kernel;
use crate::build::dt::with_nop_tokens;
use crate::build::firmware::{build, build_payload};
use crate::host::{root, run, run_captured, step};
use crate::qemu::{exit, Qemu, Run, OPENSBI};
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// OpenSBI 1.5.1's fw_dynamic.bin and its instructions from reset to S-mode
/// entry as Debian ships it (bookworm-backports 1.5.1), for when it is not installed.
const OPENSBI_SIZE: u64 = 272_488;

const OPENSBI_BOOT_INSNS: u64 = 13_100_000;

/// Budgets: a quarter of OpenSBI's size, a tenth of its boot instructions.
const SIZE_BUDGET: u64 = OPENSBI_SIZE / 4;

const BOOT_BUDGET: u64 = OPENSBI_BOOT_INSNS / 10;

fn qemu(
    bios: &Path,
    kernel: &Path,
    case: &Case,
    extra: &[&str],
    timeout: Duration,
    stop_at: Option<&str>,
) -> Result<Run> {
    let mut q = Qemu::virt(case.smp);
    q.machine = case.machine.into();
    q.cpu = case.cpu.into();
    q.bios = Some(bios.to_path_buf());
    q.kernel = Some(kernel.to_path_buf());
    let mut cmd = q.command();
    cmd.args(extra);
    Ok(Run::from_captured(run_captured(
        &mut cmd, timeout, stop_at,
    )?))
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

/// QEMU virt's own tree with what boot loaders' fixups leave
/// ([`with_nop_tokens`]) boots the firmware and sbi-check passes as on the
/// tree without them: the "checks passed" line both runs print.
fn nop_dtb_run(fw: &Path, payload: &Path) -> Result<String> {
    let case = &CASES[0];
    let dir = root().join("target").join("fw-test");
    std::fs::create_dir_all(&dir)?;
    let (plain, nopped) = (dir.join("virt.dtb"), dir.join("virt-nop.dtb"));
    let mut q = Qemu::virt(case.smp);
    q.cpu = case.cpu.into();
    q.dump_dtb(&plain)?;
    with_nop_tokens(&plain, &nopped)?;
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
    run(Command::new("dtc")
        .args(["-I", "dts", "-O", "dtb", "-o"])
        .arg(&dtb)
        .arg(&dts))
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
    let kernel = build_kernel()?;
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
