//! Everything the machines boot, built: the firmware, the hypervisor and
//! its guest bundles, the S-mode conformance kernel, the Linux kernels,
//! the guest's Debian userland and initramfs, device trees with
//! rvpmu-fw's switches, and hpmtrace's C API and CLI; `disasm` reads the
//! built ELFs back.

pub mod conformance;
pub mod disasm;
pub mod dt;
pub mod firmware;
pub mod hpmtrace;
pub mod hv;
pub mod initramfs;
pub mod kernel;
pub mod userland;

use crate::host::BARE_TARGET;
use crate::host::{root, run};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The cargo profile of the firmware and the hypervisor (`[profile.fw]`
/// of the workspace Cargo.toml).
pub const FW_PROFILE: &str = "fw";

/// Where cargo puts the bare-metal target's builds of `profile`.
pub fn bare_dir(profile: &str) -> PathBuf {
    root().join("target").join(BARE_TARGET).join(profile)
}

/// `elf` as a raw image beside it (`.bin`), for `-bios`, `-kernel` or a
/// bundle.
pub fn objcopy(elf: &Path) -> Result<PathBuf> {
    let bin = elf.with_extension("bin");
    run(Command::new("riscv64-linux-gnu-objcopy")
        .args(["-O", "binary"])
        .arg(elf)
        .arg(&bin))
    .context("objcopy failed: `cargo xtask setup` installs binutils-riscv64-linux-gnu")?;
    Ok(bin)
}
