//! The noisy neighbour: an optional steal-time source for kernel developers.
//!
//! Every `period` it withholds the hart from the supervisor for `busy`
//! (the hart waits in M-mode, as if another tenant ran), and reports exactly
//! that time through the hart's STA record. Configured by the DT:
//!
//! ```dts
//! chosen { rvpmu,noisy-neighbour = <busy_us period_us>; };
//! ```
//!
//! (`cargo xtask run --steal PERCENT` adds it for a 10 ms period). Off when
//! the property is absent. It fires from the M-mode timer, so with Sstc it
//! costs S-mode nothing else; without Sstc it shares mtimecmp with the
//! supervisor timer (see `timer.rs`). A hart interrupted in `wfi` was idle:
//! the spec does not count idle time as steal, so that period is skipped.
#![cfg(target_os = "none")]

use crate::frame::TrapFrame;
use crate::machine::Ready;
use crate::platform::Platform;
use crate::pmu::HartPerf;
use rvpmu_rt::csr;

fn ticks(p: &Platform, us: u32) -> u64 {
    us as u64 * p.timebase_hz / 1_000_000
}

fn now() -> u64 {
    csr::TIME.read() as u64
}

/// First deadline for a hart about to enter S-mode (MAX: injector off).
pub fn first_deadline(ready: Ready) -> u64 {
    let p = ready.platform();
    match p.noisy {
        Some(n) => now() + ticks(p, n.period_us),
        None => u64::MAX,
    }
}

const WFI: u32 = 0x1050_0073;

/// The deadline passed: withhold the hart for `busy` unless it was idle.
/// `f` is the interrupted S-mode context. Returns the next deadline.
///
/// The STA record stays borrowed while the hart waits; the PMU is lent
/// to the wait, which serves other harts' messages and records their
/// firmware events (a split borrow of `perf`, not a second `&mut`).
pub fn run(ready: Ready, f: &TrapFrame, perf: &mut HartPerf) -> u64 {
    let p = ready.platform();
    let Some(n) = p.noisy else {
        return u64::MAX;
    };
    let start = now();
    let next = start + ticks(p, n.period_us);
    let idle = matches!(crate::frame::fetch_insn(f, f.mepc.wrapping_sub(4)), Ok(WFI));
    if idle {
        return next;
    }
    let HartPerf { pmu, sta, mem } = perf;
    sta.account(mem, 0, true);
    let busy = ticks(p, n.busy_us);
    crate::machine::sleep_until(ready, csr::MHARTID.read(), start + busy, pmu);
    // Report the neighbour's own share. The hart may resume later than
    // `start + busy` when the platform runs it late (QEMU's round-robin
    // vCPU scheduling under icount): that delay is not the neighbour's,
    // and the platform does not report it at any other time either.
    let stolen = (now() - start).min(busy);
    let ns = stolen * 1_000_000_000 / p.timebase_hz;
    sta.account(mem, ns, false);
    next
}
