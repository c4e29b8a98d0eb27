//! `cargo xtask bench`: the per-call SBI cost (ours against every peer
//! firmware), the bare-metal hook cost of hpmtrace, the per-sample cost in
//! Linux guests and the cost of a switch between KVM guests, in one run
//! (or the ones `--only` names); each written to target/bench/.

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
    /// Run only these benchmarks (repeatable; default: all of them).
    #[arg(long, value_enum)]
    pub only: Vec<Which>,
}

/// One of the benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    /// Per-call SBI cost (target/bench/sbi.md).
    Sbi,
    /// hpmtrace's bare-metal hook cost (target/bench/hpmtrace-bare.md).
    Hook,
    /// Per-sample cost under Linux 7.2 and 6.12 (target/bench/sample-cost.md).
    Sample,
    /// Switch between KVM guests (target/bench/kvm-switch.md).
    KvmSwitch,
}

/// Every benchmark `a` asks for, in one run.
pub fn run(a: BenchArgs) -> Result<()> {
    setup::ensure_host()?;
    let want = |w: Which| a.only.is_empty() || a.only.contains(&w);
    if want(Which::Sbi) {
        sbi::sbi_cost(a.ours.clone())?;
    }
    if want(Which::Hook) {
        hook::hook_cost_bench()?;
    }
    // The per-sample cost needs Linux boots.
    if want(Which::Sample) {
        sample::sample_cost_bench()?;
    }
    if want(Which::KvmSwitch) {
        kvmswitch::kvm_switch_bench()?;
    }
    Ok(())
}
