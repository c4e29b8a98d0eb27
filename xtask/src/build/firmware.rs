//! The M-mode firmwares: rvpmu-fw (crates/rvpmu-fw) and the RustSBI-based
//! rustsbi-fw (crates/rustsbi-fw), their raw `-bios` images, and the
//! `sbi-check` S-mode payload rvpmu-fw's tests boot.

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
    build_image("rvpmu-fw")
}

/// Build firmware `bin` (its crate and binary name) and return the path
/// of its raw `-bios` image.
fn build_image(bin: &str) -> Result<PathBuf> {
    step(&format!(
        "building the firmware ({bin}, {BARE_TARGET}, profile {FW_PROFILE})"
    ));
    let elf = cargo_build(bin)?;
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

/// The RustSBI-based firmware (crates/rustsbi-fw), built, under its
/// `--bios` name.
pub fn rustsbi() -> Result<Firmware> {
    Ok(Firmware {
        name: RUSTSBI_FW.into(),
        path: build_image(RUSTSBI_FW)?,
    })
}

/// rustsbi-fw's crate and binary name.
pub const RUSTSBI_FW: &str = "rustsbi-fw";
/// The `--bios` name that picks rustsbi-fw.
pub const RUSTSBI_BIOS: &str = "rustsbi";

/// The S-mode payload that checks the firmware's SBI calls (ELF, -kernel).
pub fn build_payload() -> Result<PathBuf> {
    step("building the sbi-check payload");
    cargo_build("sbi-check")
}
