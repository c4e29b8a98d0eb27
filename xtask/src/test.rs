//! `cargo xtask test`: every test of the project, in order of cost.

use crate::util::{cargo, step};
use anyhow::Result;

#[derive(clap::Args)]
pub struct TestArgs {
    /// Only the host-side tests (no QEMU, no kernel build).
    #[arg(long)]
    pub host_only: bool,
}

pub fn run(args: TestArgs) -> Result<()> {
    crate::setup::ensure_host()?;
    step("host tests (cargo test)");
    crate::util::run(cargo().args([
        "test",
        "--workspace",
        "--exclude",
        "rvpmu-fw",
        "--exclude",
        "conformance",
    ]))?;
    step("rvpmu builds for riscv64gc-unknown-none-elf (no_std, no allocator)");
    crate::util::run(cargo().args([
        "build",
        "-p",
        "rvpmu",
        "--target",
        "riscv64gc-unknown-none-elf",
    ]))?;
    if args.host_only {
        return Ok(());
    }
    crate::firmware::test()?;
    crate::linux::test()?;
    crate::conformance::test()?;
    crate::trace::test()?;
    step("all tests passed");
    Ok(())
}
