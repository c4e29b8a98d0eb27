//! `cargo xtask firmware`: build the M-mode firmware (crates/rvpmu-fw)
//! and print the path of the raw `-bios` image (`--test`, which runs its
//! QEMU tests first, is main.rs's: the suites are `suite`'s).

use crate::build::firmware::build;
use crate::host::setup;
use anyhow::Result;

#[derive(clap::Args)]
pub struct FirmwareArgs {
    /// Also run the firmware's QEMU tests (what `cargo xtask test` runs).
    #[arg(long)]
    pub test: bool,
}

pub fn cmd() -> Result<()> {
    setup::ensure_host()?;
    let p = build()?;
    println!("{}", p.display());
    Ok(())
}
