//! The M-mode timer and the supervisor timer.
//!
//! With Sstc the supervisor programs stimecmp itself (through set_timer)
//! and mtimecmp belongs to the noisy neighbour alone. Without Sstc,
//! mtimecmp holds the earlier of the supervisor's deadline and the
//! neighbour's, and the M timer interrupt hands STIP to S-mode when the
//! supervisor's deadline passes.
#![cfg(target_os = "none")]

use crate::frame::TrapFrame;
use crate::machine::{write_mtimecmp, HartLocal};
use crate::platform::Features;
use rvpmu_rt::csr::{self, MIP_MTIP, MIP_STIP};

fn has_sstc(l: &HartLocal, me: usize) -> bool {
    l.ready.platform().hart_features(me).has(Features::SSTC)
}

/// Program mtimecmp with the earliest pending M-mode deadline.
fn reprogram(me: usize, l: &HartLocal) {
    let next = l.s_deadline.min(l.steal_deadline);
    write_mtimecmp(l.ready, me, next);
    if next == u64::MAX {
        csr::MIE.clear(MIP_MTIP);
    } else {
        csr::MIE.set(MIP_MTIP);
    }
}

/// SBI set_timer: the next supervisor timer interrupt at `value` (time
/// units); clears a pending one.
pub fn set_timer(value: u64, hart: &mut HartLocal) {
    let me = csr::MHARTID.read();
    hart.perf.pmu.record(rvpmu::event::FwEvent::SetTimer);
    if has_sstc(hart, me) {
        csr::STIMECMP.write(value as usize);
    } else {
        hart.s_deadline = value;
        csr::MIP.clear(MIP_STIP);
        reprogram(me, hart);
    }
}

/// The M-mode timer fired. `interrupted` is the S-mode context when it
/// came as a trap from S-mode (the neighbour may run then); `None` from
/// M-mode wait loops, where only the supervisor's deadline is served.
///
/// Re-entry is spelled out in the borrows: the neighbour (`steal::run`)
/// gets only the hart's `perf` (its STA record, and the PMU that the
/// messages it serves while it waits record into), while this function
/// keeps the deadlines.
pub fn on_mtimer(l: &mut HartLocal, interrupted: Option<&TrapFrame>) {
    let me = csr::MHARTID.read();
    let now = csr::TIME.read() as u64;
    if now >= l.s_deadline {
        l.s_deadline = u64::MAX;
        csr::MIP.set(MIP_STIP);
    }
    if let Some(f) = interrupted {
        if now >= l.steal_deadline {
            l.steal_deadline = crate::steal::run(l.ready, f, &mut l.perf);
        }
    }
    reprogram(me, l);
}

/// For wait loops running with interrupts off: act on a pending M timer.
pub fn poll_mtimer(hart: &mut HartLocal) {
    if csr::MIP.read() & csr::MIE.read() & MIP_MTIP != 0 {
        on_mtimer(hart, None);
    }
}

/// Start the noisy neighbour (if configured) for a hart entering S-mode.
pub fn arm_steal(me: usize, hart: &mut HartLocal) {
    hart.steal_deadline = crate::steal::first_deadline(hart.ready);
    reprogram(me, hart);
}

/// No timer interrupt pending or armed (hart init, stop).
pub fn disarm(me: usize, l: &mut HartLocal) {
    if has_sstc(l, me) {
        csr::STIMECMP.write(usize::MAX);
    } else {
        csr::MIP.clear(MIP_STIP);
    }
    l.s_deadline = u64::MAX;
    l.steal_deadline = u64::MAX;
    reprogram(me, l);
}
