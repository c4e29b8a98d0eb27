//! The initramfs: the Debian userland archive ([`super::userland`]) with
//! our own files appended as a second archive: /init (the static e2e-init
//! binary, stripped) and the same binary as /usr/bin/rvpmu-work (the
//! workloads, symbol table kept so `perf report` names functions). A boot
//! that runs a plan gets a third, one-file archive with /rvpmu/plan. Packed
//! with the kernel's usr/gen_init_cpio (fixed timestamps), so the same
//! inputs give the same bytes.

use super::kernel::Kernel;
use super::userland::{self, gen_cpio, Userland};
use crate::host::LINUX_TARGET;
use crate::host::{cargo, root, run, step};
use anyhow::{bail, Result};
use e2e_proto::plan::PATH as PLAN_PATH;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The QEMU overflow-timer reproducer's source.
const REPRO_SOURCE: &str = "e2e/repro/qemu_stale_overflow.c";

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
        LINUX_TARGET,
    ]))?;
    let init_elf = root().join(format!("target/{LINUX_TARGET}/release/e2e-init"));
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
