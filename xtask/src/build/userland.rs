//! The guest's Debian userland: Debian trixie riscv64 packages, unmodified
//! (`busybox-static` for the shell and core utilities, `linux-perf` and
//! everything apt resolves for it on an empty system), unpacked with
//! `dpkg-deb -x` into the merged-/usr layout trixie expects and packed once
//! as an uncompressed newc archive. Cached, keyed by the resolved package
//! set: a new package version in the archive makes a new userland, nothing
//! else does.
//!
//! Why an uncompressed initramfs and not a virtio-blk disk image: it needs
//! no block, virtio or file-system options in the kernel (the fragment
//! stays what perf and the shell need), it is one file QEMU loads, and the
//! kernel only copies it (no inflate): measured, a boot with it takes about
//! a second longer than the bare /init, where gzip would add an inflate of
//! 130 MB under icount to every boot.
//!
//! Our own files (/init, the workloads, a boot's plan) are separate small
//! archives appended after this one (the kernel unpacks concatenated
//! archives in order), so changing them never repacks the userland.
//!
//! Two package sets, both here ([`GUEST`], [`KVM_HOST`]): the KVM host's
//! is the guest's plus QEMU (the Linux that runs KVM guests starts them
//! with Debian's `qemu-system-riscv64`). It is a userland of its own so
//! that every other boot does not carry QEMU (its libraries and data,
//! loaded and unpacked at each boot: docs/kvm.md has the sizes).

use super::kernel::{fnv64, Kernel};
use crate::host::debian::{unpack, Package, Pin, PrivateApt, Request, TRIXIE, TRIXIE_BACKPORTS};
use crate::host::{cache_dir, step};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What a userland asks Debian for (apt adds every dependency), from
/// trixie-backports where it has them (linux-perf of the 7.2 kernel).
pub struct PackageSet {
    /// Names the cache directory (`<name>-userland-<key>`).
    pub name: &'static str,
    pub wanted: &'static [&'static str],
    /// Packages that must all come from one suite.
    pub pins: &'static [Pin],
}

/// The guest's userland: busybox's shell and tools, Debian's perf.
pub const GUEST: PackageSet = PackageSet {
    name: "guest",
    wanted: &["busybox-static", "linux-perf"],
    pins: &[],
};

/// The KVM host's: the guest's and Debian's QEMU for riscv64, whose
/// packages (qemu-system-riscv, -common, -data) all from trixie:
/// trixie-backports has a newer architecture-independent
/// `qemu-system-data` than its riscv64 build of QEMU, and
/// qemu-system-riscv's dependency range would take it.
pub const KVM_HOST: PackageSet = PackageSet {
    name: "kvm-host",
    wanted: &["busybox-static", "linux-perf", "qemu-system-riscv"],
    pins: &[Pin {
        packages: "qemu-*",
        suite: TRIXIE,
    }],
};

impl PackageSet {
    fn request(&self) -> Request<'static> {
        Request {
            wanted: self.wanted,
            release: TRIXIE_BACKPORTS,
            pins: self.pins,
        }
    }
}

/// Bump when the unpacking recipe changes in a way the key would not see.
const RECIPE_VERSION: &str = "2";

/// Manual pages and translations are left out, as Debian's own minimal
/// images do (dpkg's path-exclude): nothing in the guest reads them.
/// /usr/share/doc stays: perf report reads its tips from there.
const EXCLUDED: &[&str] = &["usr/share/man", "usr/share/info", "usr/share/locale"];

/// The packed userland and the package set it holds.
pub struct Userland {
    /// Uncompressed newc archive of the whole tree.
    pub cpio: PathBuf,
    pub packages: Vec<Package>,
}

/// The resolved set as text, one `name version arch` a line.
fn manifest(pkgs: &[Package]) -> String {
    pkgs.iter()
        .map(|p| format!("{} {} {}\n", p.name, p.version, p.arch))
        .collect()
}

fn parse_manifest(text: &str) -> Vec<Package> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some(Package {
                name: w.next()?.into(),
                version: w.next()?.into(),
                arch: w.next()?.into(),
            })
        })
        .collect()
}

/// Resolve, download, unpack and pack the userland of `set`, or take the
/// cached archive.
pub fn build(kernel: &Kernel, set: &PackageSet) -> Result<Userland> {
    let apt = PrivateApt::trixie("riscv64");
    let last = cache_dir().join(format!("{}-userland-last", set.name));
    let resolved = apt.update_once().and_then(|_| apt.resolve(&set.request()));
    let pkgs = match resolved {
        Ok(p) => p,
        Err(e) => {
            // The mirror is unreachable: the last userland built still is
            // a complete, checked one.
            let prev = std::fs::read_to_string(&last).unwrap_or_default();
            let (cpio, list) = prev.split_once('\n').unwrap_or(("", ""));
            let cpio = PathBuf::from(cpio);
            if cpio.is_file() {
                eprintln!(
                    "    warning: {e:#}\n    using the {} userland built before: {}",
                    set.name,
                    cpio.display()
                );
                return Ok(Userland {
                    cpio,
                    packages: parse_manifest(list),
                });
            }
            return Err(e.context(format!(
                "resolving the {} userland ({})",
                set.name,
                set.wanted.join(", ")
            )));
        }
    };
    let list = manifest(&pkgs);
    let key = fnv64(&[list.as_bytes(), RECIPE_VERSION.as_bytes()]);
    let dir = cache_dir().join(format!("{}-userland-{key:016x}", set.name));
    let cpio = dir.join("userland.cpio");
    if cpio.is_file() {
        step(&format!(
            "{} userland: {} Debian trixie packages (cached: {})",
            set.name,
            pkgs.len(),
            cpio.display()
        ));
    } else {
        let debs = apt.download(&set.request(), &pkgs)?;
        step(&format!(
            "unpacking {} Debian packages into the {} userland ({})",
            debs.len(),
            set.name,
            dir.display()
        ));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        let root = dir.join("root");
        std::fs::create_dir_all(&root)?;
        for deb in &debs {
            unpack(deb, &root)?;
        }
        merge_usr(&root)?;
        for x in EXCLUDED {
            let p = root.join(x);
            if p.exists() {
                std::fs::remove_dir_all(&p)?;
            }
        }
        let mut entries = String::from(
            "dir /dev 0755 0 0\nnod /dev/console 0600 0 0 c 5 1\ndir /proc 0755 0 0\n\
             dir /sys 0755 0 0\ndir /tmp 01777 0 0\ndir /root 0700 0 0\ndir /run 0755 0 0\n",
        );
        list_tree(&root, &root, &mut entries)?;
        let list_path = dir.join("userland.list");
        std::fs::write(&list_path, &entries)?;
        let tmp = dir.join("userland.cpio.partial");
        gen_cpio(kernel, &list_path, &tmp)?;
        std::fs::write(dir.join("packages.txt"), &list)?;
        std::fs::rename(&tmp, &cpio)?;
        let mb = std::fs::metadata(&cpio)?.len() as f64 / 1e6;
        step(&format!(
            "{} userland packed: {mb:.0} MB, {} packages",
            set.name,
            pkgs.len()
        ));
    }
    std::fs::write(&last, format!("{}\n{list}", cpio.display()))?;
    Ok(Userland {
        cpio,
        packages: pkgs,
    })
}

/// trixie's packages install under /usr; the loader path and `#!` lines
/// name /lib and /bin, which a Debian system links to /usr (as debootstrap
/// does). A package that still ships /bin, /sbin or /lib has its files
/// moved under /usr first.
fn merge_usr(root: &Path) -> Result<()> {
    for d in ["bin", "sbin", "lib"] {
        let top = root.join(d);
        let usr = root.join("usr").join(d);
        std::fs::create_dir_all(&usr)?;
        if top.is_dir() && !top.is_symlink() {
            for e in std::fs::read_dir(&top)?.flatten() {
                let to = usr.join(e.file_name());
                if to.exists() || to.is_symlink() {
                    bail!(
                        "/{d}/{} and /usr/{d}/{0} both exist in the guest packages",
                        e.file_name().to_string_lossy()
                    );
                }
                std::fs::rename(e.path(), to)?;
            }
            std::fs::remove_dir(&top)?;
        }
        if !top.is_symlink() {
            std::os::unix::fs::symlink(format!("usr/{d}"), &top)?;
        }
    }
    Ok(())
}

/// gen_init_cpio lines for everything under `dir`, sorted (reproducible).
fn list_tree(root: &Path, dir: &Path, out: &mut String) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut names: Vec<_> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    for p in names {
        let rel = p.strip_prefix(root).expect("under root");
        let guest = format!("/{}", rel.display());
        if guest.contains(char::is_whitespace) {
            bail!("guest path {guest:?} contains white space, which gen_init_cpio cannot carry");
        }
        let md = std::fs::symlink_metadata(&p)?;
        let mode = md.permissions().mode() & 0o7777;
        if md.file_type().is_symlink() {
            let target = std::fs::read_link(&p)?;
            out.push_str(&format!("slink {guest} {} 0777 0 0\n", target.display()));
        } else if md.is_dir() {
            out.push_str(&format!("dir {guest} {mode:o} 0 0\n"));
            list_tree(root, &p, out)?;
        } else if md.is_file() {
            out.push_str(&format!("file {guest} {} {mode:o} 0 0\n", p.display()));
        } else {
            bail!("{}: not a file, directory or symlink", p.display());
        }
    }
    Ok(())
}

/// `gen_init_cpio -t 0 list > out` (fixed timestamps).
pub fn gen_cpio(kernel: &Kernel, list: &Path, out: &Path) -> Result<()> {
    let st = Command::new(kernel.gen_init_cpio())
        .args(["-t", "0"])
        .arg(list)
        .stdout(std::fs::File::create(out)?)
        .stderr(Stdio::inherit())
        .status()
        .with_context(|| format!("cannot run {}", kernel.gen_init_cpio().display()))?;
    if !st.success() {
        bail!("gen_init_cpio {} failed with {st}", list.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trip() {
        let p = vec![Package {
            name: "busybox-static".into(),
            version: "1:1.37.0-6+b9".into(),
            arch: "riscv64".into(),
        }];
        assert_eq!(parse_manifest(&manifest(&p)), p);
    }

    #[test]
    fn merged_usr_moves_and_links() {
        let t = std::env::temp_dir().join(format!("rvpmu-merge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        std::fs::create_dir_all(t.join("bin")).unwrap();
        std::fs::write(t.join("bin/x"), "x").unwrap();
        merge_usr(&t).unwrap();
        assert!(t.join("bin").is_symlink());
        assert_eq!(std::fs::read_to_string(t.join("usr/bin/x")).unwrap(), "x");
        assert_eq!(std::fs::read_to_string(t.join("bin/x")).unwrap(), "x");
        assert!(t.join("lib").is_symlink() && t.join("sbin").is_symlink());
        let mut s = String::new();
        list_tree(&t, &t, &mut s).unwrap();
        assert!(s.contains("slink /bin usr/bin 0777 0 0\n"), "{s}");
        assert!(s.contains("dir /usr/bin 755 0 0\n"), "{s}");
        std::fs::remove_dir_all(&t).unwrap();
    }
}
