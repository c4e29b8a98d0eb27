//! The initramfs: the Debian userland archive ([`super::userland`]) with
//! our own files appended as a second archive: /init (the static e2e-init
//! binary, stripped) and the same binary as /usr/bin/rvpmu-work (the
//! workloads, symbol table kept so `perf report` names functions). A boot
//! that runs a plan gets a third, one-file archive with /rvpmu/plan. Packed
//! with the kernel's usr/gen_init_cpio (fixed timestamps), so the same
//! inputs give the same bytes.

use super::kernel::Kernel;
use super::userland::{self, gen_cpio, Userland};
use crate::util::{cargo, root, run, step};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Rust target of the guest program.
pub const GUEST_TARGET: &str = "riscv64gc-unknown-linux-gnu";

/// The QEMU overflow-timer reproducer's source.
const REPRO_SOURCE: &str = "e2e/repro/qemu_stale_overflow.c";

/// Where the guest finds the plan of commands `rvpmu.mode=plan` runs.
pub const PLAN_PATH: &str = "/rvpmu/plan";

/// A built initramfs and the unstripped /init it contains (for disassembly).
pub struct Initramfs {
    pub archive: PathBuf,
    pub init_elf: PathBuf,
    pub userland: Userland,
}

fn out_dir() -> PathBuf {
    root().join("target/rvpmu-e2e")
}

/// Build e2e-init for the guest and pack it with the userland.
pub fn build(kernel: &Kernel) -> Result<Initramfs> {
    build_with(kernel, &out_dir(), &[])
}

/// [`build`], with `extra` programs (guest path, unstripped host ELF;
/// stripped copies, mode 0755) next to /init, packed in `dir` (so the
/// plain e2e initramfs stays as it is).
pub fn build_with(kernel: &Kernel, dir: &Path, extra: &[(&str, &Path)]) -> Result<Initramfs> {
    let userland = userland::build(kernel)?;
    step("building /init (crates/e2e-init, static riscv64 Linux binary)");
    run(cargo().args([
        "build",
        "--release",
        "-p",
        "e2e-init",
        "--target",
        GUEST_TARGET,
    ]))?;
    let init_elf = root().join(format!("target/{GUEST_TARGET}/release/e2e-init"));
    if !init_elf.exists() {
        bail!("cargo built e2e-init but {} is missing", init_elf.display());
    }
    std::fs::create_dir_all(dir)?;
    let stripped = dir.join("init");
    strip(&init_elf, &stripped, true)?;
    let work = dir.join("rvpmu-work");
    strip(&init_elf, &work, false)?;
    // The QEMU overflow-timer reproducer (docs/anomalies.md), in C as
    // written for the bug report.
    let repro = dir.join("rvpmu-overflow-repro");
    run(Command::new("riscv64-linux-gnu-gcc")
        .args(["-O2", "-static", "-s", "-o"])
        .arg(&repro)
        .arg(root().join(REPRO_SOURCE)))?;
    let mut entries = format!(
        "file /init {} 0755 0 0\nfile /usr/bin/rvpmu-work {} 0755 0 0\nfile /usr/bin/rvpmu-overflow-repro {} 0755 0 0\n",
        stripped.display(),
        work.display(),
        repro.display()
    );
    for (guest, elf) in extra {
        let Some(name) = guest.strip_prefix('/') else {
            bail!("initramfs path {guest:?} must be absolute");
        };
        if name.contains(|c: char| c == '/' || c.is_whitespace()) {
            bail!("initramfs path {guest:?} must name a file in / without spaces");
        }
        let stripped = dir.join(format!("{name}.stripped"));
        strip(elf, &stripped, true)?;
        entries.push_str(&format!("file {guest} {} 0755 0 0\n", stripped.display()));
    }
    let list = dir.join("initramfs.list");
    std::fs::write(&list, entries)?;
    let ours = dir.join("ours.cpio");
    gen_cpio(kernel, &list, &ours)?;
    let archive = dir.join("initramfs.cpio");
    concat(&[&userland.cpio, &ours], &archive)?;
    Ok(Initramfs {
        archive,
        init_elf,
        userland,
    })
}

/// `parts` one after the other into `out` (the kernel unpacks
/// concatenated newc archives in order; later entries win).
fn concat(parts: &[&Path], out: &Path) -> Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(out)?);
    for p in parts {
        std::io::copy(&mut std::fs::File::open(p)?, &mut w)?;
    }
    use std::io::Write;
    w.flush()?;
    Ok(())
}

impl Initramfs {
    /// This initramfs plus /rvpmu/plan holding `plan`, written to a file
    /// of its own under `dir` (named after the plan's hash).
    pub fn with_plan(&self, kernel: &Kernel, plan: &str) -> Result<PathBuf> {
        let key = super::kernel::fnv64(&[plan.as_bytes()]);
        let dir = out_dir().join("plans");
        std::fs::create_dir_all(&dir)?;
        let text = dir.join(format!("plan-{key:016x}.txt"));
        std::fs::write(&text, plan)?;
        let list = dir.join(format!("plan-{key:016x}.list"));
        std::fs::write(
            &list,
            format!(
                "dir /rvpmu 0755 0 0\nfile {PLAN_PATH} {} 0644 0 0\n",
                text.display()
            ),
        )?;
        let cpio = dir.join(format!("plan-{key:016x}.cpio"));
        gen_cpio(kernel, &list, &cpio)?;
        let out = dir.join(format!("initramfs-{key:016x}.cpio"));
        concat(&[&self.archive, &cpio], &out)?;
        Ok(out)
    }
}

/// Strip `elf` into `out`: everything, or (`all` false) debug info only,
/// keeping the symbol table.
fn strip(elf: &Path, out: &Path, all: bool) -> Result<()> {
    run(Command::new("riscv64-linux-gnu-strip")
        .arg(if all { "--strip-all" } else { "--strip-debug" })
        .arg("-o")
        .arg(out)
        .arg(elf))
}

/// `objdump -d --no-show-raw-insn` of one function of a guest ELF.
pub fn disassemble(elf: &Path, symbol: &str) -> Result<String> {
    crate::util::output(
        Command::new("riscv64-linux-gnu-objdump")
            .args(["-d", "--no-show-raw-insn"])
            .arg(format!("--disassemble={symbol}"))
            .arg(elf),
    )
}

/// Instructions in the loop body of `symbol`, read from its disassembly:
/// the instructions from a backward branch's target up to that branch.
/// This is the independent derivation of the workload's per-iteration cost.
pub fn loop_body_instructions(elf: &Path, symbol: &str) -> Result<u64> {
    let out = disassemble(elf, symbol)?;
    parse_loop_body(&out)
        .with_context(|| format!("no backward branch found in the disassembly of {symbol}:\n{out}"))
}

fn parse_loop_body(disasm: &str) -> Option<u64> {
    // Lines look like "   1a2b4:\tbnez\ta0,1a2b0 <rvpmu_alu_loop+0x4>".
    let mut insns: Vec<(u64, String)> = Vec::new();
    for line in disasm.lines() {
        let Some((addr, rest)) = line.trim_start().split_once(':') else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        if rest.trim().is_empty() {
            continue;
        }
        insns.push((addr, rest.trim().to_string()));
    }
    for (addr, text) in &insns {
        let mnemonic = text.split_whitespace().next().unwrap_or("");
        if !mnemonic.starts_with('b') {
            continue;
        }
        let operands = text.split_whitespace().nth(1).unwrap_or("");
        let target = operands
            .rsplit(',')
            .next()
            .and_then(|t| u64::from_str_radix(t, 16).ok());
        if let Some(t) = target {
            if t <= *addr {
                return Some(insns.iter().filter(|(a, _)| *a >= t && *a <= *addr).count() as u64);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_loop_body() {
        let d = "0000000000012340 <rvpmu_alu_loop>:\n   12340:\tbeqz\ta0,1234a <rvpmu_alu_loop+0xa>\n   12342:\taddi\ta0,a0,-1\n   12344:\tbnez\ta0,12342 <rvpmu_alu_loop+0x2>\n   12346:\tret\n";
        assert_eq!(parse_loop_body(d), Some(2));
        let d5 = "   10:\tld\tt0,0(a0)\n   14:\tsd\tt0,0(a0)\n   18:\tadd\ta0,a0,a2\n   1c:\taddi\ta1,a1,-1\n   20:\tbnez\ta1,10 <x>\n";
        assert_eq!(parse_loop_body(d5), Some(5));
        assert_eq!(
            parse_loop_body("   10:\taddi\ta0,a0,1\n   14:\tret\n"),
            None
        );
    }
}
