//! Building the M-mode firmware (crates/rvpmu-fw).

use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct FirmwareArgs {}

pub fn cmd(_a: FirmwareArgs) -> Result<()> {
    let p = build()?;
    println!("{}", p.display());
    Ok(())
}

/// Build the firmware and return the path of the raw `-bios` image.
pub fn build() -> Result<PathBuf> {
    anyhow::bail!("the firmware is not built yet")
}

/// Firmware tests that run under QEMU.
pub fn test() -> Result<()> {
    Ok(())
}
