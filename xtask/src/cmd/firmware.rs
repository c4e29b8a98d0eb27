//! `cargo xtask firmware`: build the M-mode firmware (crates/rvpmu-fw)
//! and print the path of the raw `-bios` image; `--test` runs its QEMU
//! tests first.

use crate::build::firmware::build;
use crate::host::setup;
use anyhow::Result;

#[derive(clap::Args)]
pub struct FirmwareArgs {
    /// Also run the firmware's QEMU tests (what `cargo xtask test` runs).
    #[arg(long)]
    pub test: bool,
}

pub fn cmd(a: FirmwareArgs) -> Result<()> {
    let _ = a.test; // run by the test runner first (main.rs)
    setup::ensure_host()?;
    let p = build()?;
    println!("{}", p.display());
    Ok(())
}
