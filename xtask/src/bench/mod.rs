//! `cargo xtask bench`: the per-call SBI cost (ours against OpenSBI), the
//! bare-metal hook cost of hpmtrace, the per-sample cost in Linux guests
//! and the cost of a switch between KVM guests, in one run; each written
//! to target/bench/.

mod hook;
mod kvmswitch;
mod sample;
mod sbi;

use crate::host::setup;
use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Use this raw -bios image as "ours" instead of building crates/rvpmu-fw.
    #[arg(long)]
    pub ours: Option<PathBuf>,
}

/// Every benchmark, in one run.
pub fn run(a: BenchArgs) -> Result<()> {
    setup::ensure_host()?;
    sbi::sbi_cost(a.ours)?;
    hook::hook_cost_bench()?;
    // The per-sample cost needs Linux boots: same command, one run.
    sample::sample_cost_bench()?;
    kvmswitch::kvm_switch_bench()
}
