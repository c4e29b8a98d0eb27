//! `cargo xtask`: the project's two commands (`run`, `test`) and the tools
//! around them. Every command first makes sure the host has what it needs
//! (see `setup`), so a fresh Debian 12 machine needs nothing else.

mod baremetal;
mod conformance;
mod debian;
mod dtcheck;
mod fibcheck;
mod firmware;
mod hv;
mod linux;
mod qemu;
mod setup;
mod test;
mod trace;
mod util;

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
    Run(linux::RunArgs),
    /// Boot the guest to a busybox shell with perf on the PATH.
    Shell(linux::shell::ShellArgs),
    /// Every test: host unit/property tests, firmware boots, Linux e2e,
    /// conformance, trace library.
    Test(test::TestArgs),
    /// Install what the host lacks (apt packages, rustup targets). Idempotent.
    Setup,
    /// Parse a board's device tree (.dts or .dtb) and print the riscv,pmu
    /// event map and its validation result.
    DtCheck(dtcheck::DtCheckArgs),
    /// Build the M-mode firmware; prints the path of the raw -bios image last.
    Firmware(firmware::FirmwareArgs),
    /// Build and run the HS-mode hypervisor (rvpmu-hv) on our firmware
    /// with its VS-mode test guest.
    Hv(hv::HvArgs),
    /// Run the S-mode SBI conformance suite against a firmware.
    Conformance(conformance::ConformanceArgs),
    /// Per-call SBI cost benchmark, ours against OpenSBI.
    Bench(conformance::BenchArgs),
    /// Install the hpmtrace C API (headers and static library) into DIR.
    Cabi(trace::CabiArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Run(a) => linux::run(a),
        Cmd::Test(a) => test::run(a),
        Cmd::Shell(a) => linux::shell::run(a),
        Cmd::Setup => setup::ensure_host(),
        Cmd::DtCheck(a) => dtcheck::run(a),
        Cmd::Firmware(a) => firmware::cmd(a),
        Cmd::Hv(a) => hv::cmd(a),
        Cmd::Conformance(a) => conformance::run(a),
        Cmd::Bench(a) => conformance::bench(a),
        Cmd::Cabi(a) => trace::cabi(a),
    }
}
