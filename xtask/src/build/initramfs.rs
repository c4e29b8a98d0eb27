//! The initramfs: the Debian userland archive ([`super::userland`]) with
//! our own files appended as a second archive: /init (the static e2e-init
//! binary, stripped) and the same binary as /usr/bin/rvpmu-work (the
//! workloads, symbol table kept so `perf report` names functions). A boot
//! that runs a plan gets a third, one-file archive with /rvpmu/plan. Packed
//! with the kernel's usr/gen_init_cpio (fixed timestamps), so the same
//! inputs give the same bytes.

use super::kernel::Kernel;
use super::userland::{self, gen_cpio, PackageSet, Userland};
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
    /// Our files alone (/init, /usr/bin/rvpmu-work, ...) with the
    /// directories and console node a boot needs, no Debian userland: a
    /// guest whose plan runs only our programs boots it in a fraction of
    /// the instructions.
    pub bare: PathBuf,
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
    build_set(kernel, &userland::GUEST, dir, extra)
}

/// [`build`] with the KVM host's userland (QEMU in it), packed in a
/// directory of its own.
pub fn build_kvm_host(kernel: &Kernel) -> Result<Initramfs> {
    build_set(
        kernel,
        &userland::KVM_HOST,
        &out_dir().join("kvm-host"),
        &[],
    )
}

fn build_set(
    kernel: &Kernel,
    set: &PackageSet,
    dir: &Path,
    extra: &[(&str, &Path)],
) -> Result<Initramfs> {
    let userland = userland::build(kernel, set)?;
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
    let bare_list = dir.join("bare.list");
    std::fs::write(&bare_list, BARE_DIRS)?;
    let bare_dirs = dir.join("bare-dirs.cpio");
    gen_cpio(kernel, &bare_list, &bare_dirs)?;
    let bare = dir.join("bare.cpio");
    concat(&[&bare_dirs, &ours], &bare)?;
    Ok(Initramfs {
        archive,
        bare,
        init_elf,
        userland,
    })
}

/// What the userland archive gives a boot that our files alone need too:
/// the console node, the mount points /init uses, /usr/bin for
/// rvpmu-work (the kernel does not make parent directories).
const BARE_DIRS: &str = "dir /dev 0755 0 0\nnod /dev/console 0600 0 0 c 5 1\ndir /proc 0755 0 0\n\
    dir /sys 0755 0 0\ndir /tmp 01777 0 0\ndir /root 0700 0 0\ndir /usr 0755 0 0\n\
    dir /usr/bin 0755 0 0\n";

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
    /// of its own (named after the plan's hash).
    pub fn with_plan(&self, kernel: &Kernel, plan: &str) -> Result<PathBuf> {
        self.with_files(kernel, plan, &[])
    }

    /// This initramfs plus /rvpmu/plan holding `plan` and `files` (path
    /// in the guest, under /rvpmu/; file here), written to a file of its
    /// own under target/rvpmu-e2e/plans named after a hash of the plan
    /// and the files' names (so a new run with the same names overwrites
    /// it; its contents are always written anew).
    pub fn with_files(
        &self,
        kernel: &Kernel,
        plan: &str,
        files: &[(String, PathBuf)],
    ) -> Result<PathBuf> {
        append_files(kernel, &self.archive, plan, files)
    }

    /// [`Initramfs::with_plan`] on [`Initramfs::bare`]: a plan of our
    /// programs only (no shell, no perf).
    pub fn bare_with_plan(&self, kernel: &Kernel, plan: &str) -> Result<PathBuf> {
        append_files(kernel, &self.bare, plan, &[])
    }
}

/// `base` plus /rvpmu/plan holding `plan` and `files` (see
/// [`Initramfs::with_files`]).
fn append_files(
    kernel: &Kernel,
    base: &Path,
    plan: &str,
    files: &[(String, PathBuf)],
) -> Result<PathBuf> {
    let mut entries = String::new();
    let mut dirs = vec!["/rvpmu".to_string()];
    let mut identity = vec![plan.to_string(), base.display().to_string()];
    for (guest, here) in files {
        let Some(rel) = guest.strip_prefix("/rvpmu/") else {
            bail!("initramfs file {guest:?} must be under /rvpmu/");
        };
        if guest.contains(char::is_whitespace) || rel.split('/').any(|c| c.is_empty()) {
            bail!("initramfs path {guest:?}: no spaces, no empty components");
        }
        if !here.is_file() {
            bail!("{} (for {guest}) is not a file", here.display());
        }
        identity.push(format!("{guest} {}", here.display()));
        let parents: Vec<&Path> = Path::new(guest)
            .ancestors()
            .skip(1)
            .take_while(|p| *p != Path::new("/rvpmu"))
            .collect();
        for p in parents.into_iter().rev() {
            let d = p.display().to_string();
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
        entries.push_str(&format!("file {guest} {} 0644 0 0\n", here.display()));
    }
    let key = super::kernel::fnv64(&identity.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
    let dir = out_dir().join("plans");
    std::fs::create_dir_all(&dir)?;
    let text = dir.join(format!("plan-{key:016x}.txt"));
    std::fs::write(&text, plan)?;
    let mut list: String = dirs.iter().map(|d| format!("dir {d} 0755 0 0\n")).collect();
    list.push_str(&format!("file {PLAN_PATH} {} 0644 0 0\n", text.display()));
    list.push_str(&entries);
    let list_path = dir.join(format!("plan-{key:016x}.list"));
    std::fs::write(&list_path, list)?;
    let cpio = dir.join(format!("plan-{key:016x}.cpio"));
    gen_cpio(kernel, &list_path, &cpio)?;
    let out = dir.join(format!("initramfs-{key:016x}.cpio"));
    concat(&[base, &cpio], &out)?;
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_files_must_be_plain_files_under_rvpmu() {
        // The checks come before anything is packed: no kernel needed.
        let k = Kernel {
            image: "/nonexistent/Image".into(),
            build_dir: "/nonexistent".into(),
        };
        let base = Path::new("/nonexistent/base.cpio");
        let this = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        let err = |guest: &str, here: &Path| {
            append_files(&k, base, "", &[(guest.to_string(), here.to_path_buf())])
                .unwrap_err()
                .to_string()
        };
        assert!(err("/etc/x", &this).contains("must be under /rvpmu/"));
        assert!(err("/rvpmu/a b", &this).contains("no spaces"));
        assert!(err("/rvpmu//x", &this).contains("no empty components"));
        assert!(err("/rvpmu/kvm/x", Path::new("/nonexistent/x")).contains("is not a file"));
    }
}
