//! `rvpmu-work`: the workloads perf measures in the guest. A plain process
//! (never PID 1 things, never a power-off); see the crate documentation
//! for the contract.

use super::ipi::{self, Pinger};
use super::sys::monotonic_ns;
use super::workload::{rvpmu_alu_loop, rvpmu_hot_a, rvpmu_hot_b};
use crate::workcmd::{self, Work};

/// Iterations of the alu loop between two clock reads of `spin`.
const SPIN_CHUNK: u64 = 10_000;

/// Run the workload named on the command line; returns the exit status.
pub fn main() -> i32 {
    let mut args = Vec::new();
    for a in std::env::args_os().skip(1) {
        match a.into_string() {
            Ok(s) => args.push(s),
            Err(a) => {
                eprintln!(
                    "rvpmu-work: argument {a:?} is not UTF-8\n{}",
                    workcmd::USAGE
                );
                return 2;
            }
        }
    }
    let work = match workcmd::parse(&args) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("rvpmu-work: {e}\n{}", workcmd::USAGE);
            return 2;
        }
    };
    // alu, hot and spin print nothing: output would add instructions that
    // depend on the argument's digits.
    match work {
        Work::Alu(n) => rvpmu_alu_loop(n),
        Work::Hot(n) => {
            rvpmu_hot_a(3 * n);
            rvpmu_hot_b(n);
        }
        Work::Spin(ms) => spin(ms),
        Work::Ipi(n) => {
            if let Err(e) = ipis(n) {
                eprintln!("rvpmu-work ipi: {e}");
                return 1;
            }
        }
    }
    0
}

/// Spin in user mode (the alu loop, with a vDSO clock read every
/// [`SPIN_CHUNK`] iterations) until `ms` milliseconds of CLOCK_MONOTONIC
/// have passed.
fn spin(ms: u64) {
    let end = monotonic_ns().saturating_add(ms.saturating_mul(1_000_000));
    while monotonic_ns() < end {
        rvpmu_alu_loop(SPIN_CHUNK);
    }
}

/// `n` IPIs from this CPU to another (see guest/ipi.rs for why a perf
/// read and not membarrier).
fn ipis(n: u64) -> Result<(), String> {
    let (here, target) = ipi::pin_here_and_pick_target()?;
    let pinger = Pinger::open(target)?;
    for i in 0..n {
        pinger
            .ping()
            .map_err(|e| format!("after {i} of {n} IPIs: {e}"))?;
    }
    drop(pinger);
    println!(
        "rvpmu-work ipi: attempted {n} IPIs from cpu{here} to cpu{target} (one per read of a \
         context-switches event bound to cpu{target}; opening, enabling and closing it add a \
         constant few, measured by `ipi 0`)"
    );
    Ok(())
}
