//! hpmtrace's C API (`libhpmtrace.a` and its headers) for the host, the
//! Linux guest and bare metal, and the `hpmtrace` CLI.

use crate::host::BARE_TARGET;
use crate::host::{cargo, root, run, step};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The library for the host, installed with the headers into `dir`.
pub fn install_host(dir: &Path) -> Result<()> {
    let mut cmd = cargo();
    install_lib(dir, &mut cmd, None, &root().join("target"), &[])
}

/// [`install_host`] for a Rust target (the Linux guest's).
pub fn install_for(dir: &Path, target: &str) -> Result<()> {
    let mut cmd = cargo();
    install_lib(dir, &mut cmd, Some(target), &root().join("target"), &[])
}

/// Build libhpmtrace.a with `cmd` (`cargo` with whatever features and
/// environment the caller set) for `target` (`None`: the host) into
/// `target_dir`, and install it with the headers into `dir`.
pub fn install_lib(
    dir: &Path,
    cmd: &mut Command,
    target: Option<&str>,
    target_dir: &Path,
    cargo_args: &[&str],
) -> Result<()> {
    step(&format!(
        "building libhpmtrace.a (release, {}{})",
        target.unwrap_or("host"),
        if cargo_args.is_empty() {
            String::new()
        } else {
            format!(", {}", cargo_args.join(" "))
        }
    ));
    cmd.args(["build", "--release", "-p", "hpmtrace", "--target-dir"])
        .arg(target_dir)
        .args(cargo_args);
    let lib = match target {
        Some(t) => {
            cmd.args(["--target", t]);
            target_dir.join(format!("{t}/release/libhpmtrace.a"))
        }
        None => target_dir.join("release/libhpmtrace.a"),
    };
    run(cmd)?;
    if !lib.exists() {
        bail!("{} was not produced", lib.display());
    }
    let inc = dir.join("include");
    let libdir = dir.join("lib");
    std::fs::create_dir_all(&inc).with_context(|| format!("cannot create {}", inc.display()))?;
    std::fs::create_dir_all(&libdir)
        .with_context(|| format!("cannot create {}", libdir.display()))?;
    std::fs::copy(&lib, libdir.join("libhpmtrace.a"))?;
    let src = root().join("crates/hpmtrace/include");
    for e in std::fs::read_dir(&src)? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "h") {
            std::fs::copy(&p, inc.join(p.file_name().unwrap()))?;
        }
    }
    Ok(())
}

/// The privilege mode a program and its library run in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// S-mode on an SBI firmware (rvpmu-fw): `-kernel`.
    Supervisor,
    /// M-mode on the bare machine: the program is the `-bios`.
    Machine,
}

impl Mode {
    fn feature(self) -> &'static str {
        match self {
            Mode::Supervisor => "bare-capi",
            Mode::Machine => "bare-machine",
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Mode::Supervisor => "S",
            Mode::Machine => "M",
        }
    }
}

/// Build the bare-metal library for `mode` (pool of `pool` bytes, default
/// 256K) and install it with the headers into `dir`. Test builds use
/// target directories of their own, so neither setting rebuilds another.
pub fn install(dir: &Path, mode: Mode, pool: Option<&str>) -> Result<()> {
    let mut cmd = cargo();
    let suffix = match mode {
        Mode::Supervisor => "",
        Mode::Machine => "-m",
    };
    let target_dir = match pool {
        Some(p) => {
            cmd.env("HPMTRACE_POOL_BYTES", p);
            root().join(format!("target/bare-test{suffix}"))
        }
        None => {
            cmd.env_remove("HPMTRACE_POOL_BYTES");
            root().join(format!("target/bare{suffix}"))
        }
    };
    install_lib(
        dir,
        &mut cmd,
        Some(BARE_TARGET),
        &target_dir,
        &["--no-default-features", "--features", mode.feature()],
    )
}

pub(crate) fn build_cli() -> Result<PathBuf> {
    step("building the hpmtrace CLI (decoder)");
    run(cargo().args(["build", "-p", "hpmtrace-cli"]))?;
    let cli = root().join("target/debug/hpmtrace");
    if !cli.exists() {
        bail!("{} was not produced", cli.display());
    }
    Ok(cli)
}
