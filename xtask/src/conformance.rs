//! The S-mode SBI conformance suite and the per-call cost benchmark.

use anyhow::Result;

#[derive(clap::Args)]
pub struct ConformanceArgs {
    /// ours | opensbi | PATH
    #[arg(long, default_value = "ours")]
    pub bios: String,
    #[arg(long, default_value_t = 1)]
    pub smp: u32,
}

#[derive(clap::Args)]
pub struct BenchArgs {}

pub fn run(_a: ConformanceArgs) -> Result<()> {
    anyhow::bail!("the conformance suite is not built yet")
}

pub fn bench(_a: BenchArgs) -> Result<()> {
    anyhow::bail!("the SBI benchmark is not built yet")
}

pub fn test() -> Result<()> {
    Ok(())
}
