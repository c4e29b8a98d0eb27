//! Host setup: what a fresh Debian 12 machine lacks. Idempotent; says what
//! it does and skips what is already there.

use super::{output, run, step, BARE_TARGET, LINUX_TARGET};
use anyhow::{Context, Result};
use std::process::Command;

const RUST_TARGETS: &[&str] = &[BARE_TARGET, LINUX_TARGET];
const RUST_COMPONENTS: &[&str] = &["rust-src", "llvm-tools", "clippy"];

/// Packages from bookworm main.
const APT_MAIN: &[&str] = &[
    "gcc",
    "gcc-riscv64-linux-gnu",
    "binutils-riscv64-linux-gnu",
    "libc6-dev-riscv64-cross",
    "device-tree-compiler",
    // The DTB reader's tests: libfdt's own fdt_nop_property / fdt_nop_node.
    "python3-libfdt",
    "flex",
    "bison",
    "bc",
    "cpio",
    "xz-utils",
    "libssl-dev",
    "libelf-dev",
    // The fixed kernels: the series of patches/linux applied, then the
    // kernel's checkpatch.pl run on it.
    "patch",
    "perl",
    "uftrace",
    // hpmtrace-cli: the SVG flame graph render test.
    "chromium",
    "chromium-driver",
];
/// Packages that need bookworm-backports (QEMU 10, OpenSBI 1.5.1, Linux 6.12).
const APT_BACKPORTS: &[&str] = &["qemu-system-riscv", "opensbi", "linux-source-6.12"];

const BACKPORTS_LIST: &str = "/etc/apt/sources.list.d/backports.sources";

fn dpkg_installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

fn sudo() -> Vec<&'static str> {
    let uid = output(Command::new("id").arg("-u")).unwrap_or_default();
    if uid.trim() == "0" {
        vec![]
    } else {
        vec!["sudo"]
    }
}

fn apt(args: &[&str]) -> Result<()> {
    let mut argv = sudo();
    argv.push("apt-get");
    let mut cmd = Command::new(argv[0]);
    cmd.args(&argv[1..])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .args(args);
    run(&mut cmd)
}

/// Make sure every tool and package the project uses is present.
pub fn ensure_host() -> Result<()> {
    ensure_rust()?;
    ensure_apt()
}

fn ensure_rust() -> Result<()> {
    let installed = output(Command::new("rustup").args(["target", "list", "--installed"]))
        .context("rustup is required")?;
    let missing: Vec<_> = RUST_TARGETS
        .iter()
        .filter(|t| !installed.lines().any(|l| l.trim() == **t))
        .collect();
    if !missing.is_empty() {
        step(&format!("rustup target add {missing:?}"));
        let mut c = Command::new("rustup");
        c.args(["target", "add"]).args(missing.iter().map(|s| **s));
        run(&mut c)?;
    }
    let comps = output(Command::new("rustup").args(["component", "list", "--installed"]))?;
    for comp in RUST_COMPONENTS {
        if !comps.lines().any(|l| l.starts_with(comp)) {
            step(&format!("rustup component add {comp}"));
            run(Command::new("rustup").args(["component", "add", comp]))?;
        }
    }
    Ok(())
}

fn ensure_apt() -> Result<()> {
    let main_missing: Vec<&str> = APT_MAIN
        .iter()
        .copied()
        .filter(|p| !dpkg_installed(p))
        .collect();
    let bp_missing: Vec<&str> = APT_BACKPORTS
        .iter()
        .copied()
        .filter(|p| !dpkg_installed(p))
        .collect();
    if main_missing.is_empty() && bp_missing.is_empty() {
        return Ok(());
    }
    if !bp_missing.is_empty() && !crate::host::debian::host_has_suite("bookworm-backports") {
        // The same mirror the host already uses for bookworm.
        let uri = crate::host::debian::host_mirror()?;
        step(&format!(
            "enabling bookworm-backports ({uri}) in {BACKPORTS_LIST}"
        ));
        std::fs::write(
            BACKPORTS_LIST,
            crate::host::debian::deb822_source(&uri, "bookworm-backports"),
        )
        .with_context(|| format!("writing {BACKPORTS_LIST} (run as root or create it)"))?;
    }
    step("apt-get update");
    apt(&["update", "-q"])?;
    if !main_missing.is_empty() {
        step(&format!("apt-get install {}", main_missing.join(" ")));
        let mut args = vec!["install", "-y", "-q"];
        args.extend(&main_missing);
        apt(&args)?;
    }
    if !bp_missing.is_empty() {
        step(&format!(
            "apt-get install -t bookworm-backports {}",
            bp_missing.join(" ")
        ));
        let mut args = vec!["install", "-y", "-q", "-t", "bookworm-backports"];
        args.extend(&bp_missing);
        apt(&args)?;
    }
    Ok(())
}
