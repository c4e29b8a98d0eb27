//! `cargo xtask`: the project's two commands (`run`, `test`) and the tools
//! around them. Every command first makes sure the host has what it needs
//! (`host::setup`), so a fresh Debian 12 machine needs nothing else.
//!
//! ## Layering
//!
//! | module | uses |
//! |---|---|
//! | `host` | |
//! | `qemu` | `host` |
//! | `build` | `host`, `qemu` |
//! | `guest` | `build`, `host`, `qemu` |
//! | `cmd` | `build`, `guest`, `host`, `qemu` |
//! | `suite` | `build`, `guest`, `host`, `qemu` |
//! | `bench` | `build`, `guest`, `host`, `qemu` |
//!
//! The host, the machines, what they boot and what runs on them are
//! layers, each using only those above it; the commands (`cmd`), the test
//! suites (`suite`) and the benchmarks (`bench`) sit on them side by side
//! and never use each other.
//!
//! - `host`: the workspace and the cache, running host programs, `setup`
//!   (what a fresh Debian 12 lacks), the private Debian apt for the
//!   guest's packages.
//! - `qemu`: the machine descriptions (machine, CPU, memory, icount), the
//!   Rust targets, the firmware images (ours, Debian's OpenSBI), QEMU's
//!   exit statuses.
//! - `build`: the firmware, the hypervisor and its bundles, the
//!   conformance kernel, the Linux kernels, the guest userland and
//!   initramfs, device trees, hpmtrace's C API and CLI, disassembly.
//! - `guest`: runs on the machines and what they print: Linux guests and
//!   their plan/result protocol (crate `e2e_proto`, shared with the
//!   guest's /init), the perf tool's output, the demo, the shell session,
//!   the hypervisor's guests, Linux as a KVM host and its KVM guests, the
//!   conformance kernel, bare-metal programs.
//! - `cmd`: `run`, `shell`, `dt-check`, `cabi`, `firmware`, `hv`,
//!   `conformance`.
//! - `suite`: `test`'s suites and their runner.
//! - `bench`: the SBI per-call, hook and per-sample costs.

mod bench;
mod build;
mod cmd;
mod guest;
mod host;
mod qemu;
mod suite;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Build, run and test rvpmu", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// The main job: build firmware, kernel and initramfs, boot Linux under
    /// QEMU and print the perf demo table.
    Run(cmd::run::RunArgs),
    /// Boot the guest to a busybox shell with perf on the PATH.
    Shell(guest::shell::ShellArgs),
    /// Every test: host unit/property tests, firmware boots, Linux e2e,
    /// conformance, trace library.
    Test(suite::TestArgs),
    /// Install what the host lacks (apt packages, rustup targets). Idempotent.
    Setup,
    /// Parse a board's device tree (.dts or .dtb) and print the riscv,pmu
    /// event map and its validation result.
    DtCheck(cmd::dtcheck::DtCheckArgs),
    /// Build the M-mode firmware; prints the path of the raw -bios image last.
    Firmware(cmd::firmware::FirmwareArgs),
    /// Build and run the HS-mode hypervisor (rvpmu-hv) on our firmware
    /// with its VS-mode test guest.
    Hv(cmd::hv::HvArgs),
    /// Run the S-mode SBI conformance suite against a firmware.
    Conformance(cmd::conformance::ConformanceArgs),
    /// Per-call SBI cost benchmark, ours against OpenSBI.
    Bench(bench::BenchArgs),
    /// Install the hpmtrace C API (headers and static library) into DIR.
    Cabi(cmd::cabi::CabiArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Run(a) => cmd::run::run(a),
        Cmd::Test(a) => suite::run(a),
        Cmd::Shell(a) => cmd::shell::run(a),
        Cmd::Setup => host::setup::ensure_host(),
        Cmd::DtCheck(a) => cmd::dtcheck::run(a),
        Cmd::Firmware(a) => {
            if a.test {
                suite::run_only("firmware")?;
            }
            cmd::firmware::cmd()
        }
        Cmd::Hv(a) if a.test => suite::run_only("hv"),
        Cmd::Hv(a) => cmd::hv::cmd(a),
        Cmd::Conformance(a) => cmd::conformance::run(a),
        Cmd::Bench(a) => bench::run(a),
        Cmd::Cabi(a) => cmd::cabi::cabi(a),
    }
}
