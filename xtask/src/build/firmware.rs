//! The M-mode firmware (crates/rvpmu-fw): the raw `-bios` image and the
//! `sbi-check` S-mode payload its tests boot.

use super::{bare_dir, objcopy, FW_PROFILE};
use crate::host::BARE_TARGET;
use crate::host::{cargo, run, step};
use crate::qemu::Firmware;
use anyhow::{bail, Result};
use std::path::PathBuf;

/// QEMU puts -kernel at the next 2 MiB boundary after the firmware; Linux
/// and the payload expect 0x80200000.
const MAX_IMAGE: u64 = 2 << 20;

fn cargo_build(bin: &str) -> Result<PathBuf> {
    run(cargo().args([
        "build",
        "-p",
        bin,
        "--bin",
        bin,
        "--target",
        BARE_TARGET,
        "--profile",
        FW_PROFILE,
    ]))?;
    let elf = bare_dir(FW_PROFILE).join(bin);
    if !elf.is_file() {
        bail!("cargo did not produce {}", elf.display());
    }
    Ok(elf)
}

/// Build the firmware and return the path of the raw `-bios` image.
pub fn build() -> Result<PathBuf> {
    step(&format!(
        "building the firmware (rvpmu-fw, {BARE_TARGET}, profile {FW_PROFILE})"
    ));
    let elf = cargo_build("rvpmu-fw")?;
    let bin = objcopy(&elf)?;
    let size = std::fs::metadata(&bin)?.len();
    if size == 0 || size >= MAX_IMAGE {
        bail!(
            "firmware image {} has an unusable size ({size} bytes)",
            bin.display()
        );
    }
    Ok(bin)
}

/// Our firmware, built, under `name`.
pub fn ours(name: &str) -> Result<Firmware> {
    Ok(Firmware {
        name: name.into(),
        path: build()?,
    })
}

/// The S-mode payload that checks the firmware's SBI calls (ELF, -kernel).
pub fn build_payload() -> Result<PathBuf> {
    step("building the sbi-check payload");
    cargo_build("sbi-check")
}
