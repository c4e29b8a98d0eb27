//! `cargo xtask dt-check FILE`: the riscv,pmu node of a board's device tree.

use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct DtCheckArgs {
    /// A .dts or .dtb file.
    pub file: PathBuf,
}

pub fn run(_a: DtCheckArgs) -> Result<()> {
    anyhow::bail!("not yet")
}

/// Host-side demo of the engine (used by `run` until the firmware exists).
pub fn demo() -> Result<()> {
    anyhow::bail!("not yet")
}
