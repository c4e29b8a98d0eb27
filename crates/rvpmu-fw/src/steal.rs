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

use crate::csr::csr_read;
use crate::machine::{local, platform};

/// Injector settings from `rvpmu,noisy-neighbour`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Noisy {
    pub busy_us: u32,
    pub period_us: u32,
}

impl Noisy {
    /// Two big-endian cells `<busy_us period_us>`; nonsense (busy 0, busy
    /// not below period) disables it.
    pub fn from_cells(v: &[u8]) -> Option<Noisy> {
        if v.len() != 8 {
            return None;
        }
        let busy_us = u32::from_be_bytes(v[0..4].try_into().ok()?);
        let period_us = u32::from_be_bytes(v[4..8].try_into().ok()?);
        (busy_us > 0 && busy_us < period_us).then_some(Noisy { busy_us, period_us })
    }
}

fn ticks(us: u32) -> u64 {
    us as u64 * platform().timebase_hz / 1_000_000
}

fn now() -> u64 {
    csr_read!(time) as u64
}

/// First deadline for a hart about to enter S-mode (MAX: injector off).
pub fn first_deadline() -> u64 {
    match platform().noisy {
        Some(n) => now() + ticks(n.period_us),
        None => u64::MAX,
    }
}

const WFI: u32 = 0x1050_0073;

/// The deadline passed: withhold the hart for `busy` unless it was idle.
/// `mepc` is where S-mode was interrupted. Returns the next deadline.
pub fn run(mepc: usize) -> u64 {
    let Some(n) = platform().noisy else {
        return u64::MAX;
    };
    let start = now();
    let next = start + ticks(n.period_us);
    let idle = matches!(crate::entry::fetch_insn(mepc.wrapping_sub(4)), Ok(WFI));
    if idle {
        return next;
    }
    let mut mem = platform().ram;
    let sta = &mut local().perf.sta;
    sta.account(&mut mem, 0, true);
    let busy = ticks(n.busy_us);
    crate::timer::sleep_until(crate::csr::hartid(), start + busy);
    // Report the neighbour's own share. The hart may resume later than
    // `start + busy` when the platform runs it late (QEMU's round-robin
    // vCPU scheduling under icount): that delay is not the neighbour's,
    // and the platform does not report it at any other time either.
    let stolen = (now() - start).min(busy);
    let ns = stolen * 1_000_000_000 / platform().timebase_hz;
    sta.account(&mut mem, ns, false);
    next
}
