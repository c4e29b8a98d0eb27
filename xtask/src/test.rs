//! `cargo xtask test`: every test of the project, in order of cost.

use crate::util::{cargo, step};
use anyhow::Result;

#[derive(clap::Args)]
pub struct TestArgs {
    /// Only the host-side tests (no QEMU, no kernel build).
    #[arg(long)]
    pub host_only: bool,
    /// Run the Linux e2e suite on this kernel only (default: 7.2 and 6.12).
    #[arg(long, value_enum)]
    pub kernel: Option<crate::linux::kernel::Version>,
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
    step("rustdoc of the libraries (rvpmu, hpmtrace): no broken links");
    crate::util::run(cargo().env("RUSTDOCFLAGS", "-D warnings").args([
        "doc",
        "--no-deps",
        "-p",
        "rvpmu",
        "-p",
        "hpmtrace",
    ]))?;
    step("rvpmu: loom model of the STA sequence protocol");
    // Its own target directory: `--cfg loom` changes every crate's flags,
    // and sharing target/ would rebuild the main cache each time. The
    // model's negative check panics on purpose; no backtrace for it.
    crate::util::run(
        cargo()
            .env("RUSTFLAGS", "--cfg loom")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env("CARGO_TARGET_DIR", crate::util::root().join("target/loom"))
            .env("RUST_BACKTRACE", "0")
            .args([
                "test",
                "-p",
                "rvpmu",
                "--release",
                "--test",
                "sta_loom",
                "--",
                "--nocapture",
            ]),
    )?;
    if args.host_only {
        return Ok(());
    }
    crate::firmware::test()?;
    let kernels = match args.kernel {
        Some(k) => vec![k],
        None => crate::linux::kernel::Version::ALL.to_vec(),
    };
    crate::linux::test(&kernels)?;
    crate::conformance::test()?;
    crate::trace::test()?;
    step("all tests passed");
    Ok(())
}
