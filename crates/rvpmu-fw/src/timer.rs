//! The supervisor timer: stimecmp with Sstc, else mtimecmp plus an injected
//! STIP when the M-mode timer fires.

use crate::csr::{csr_clear, csr_read, csr_set, csr_write, hartid, MIP_MTIP, MIP_STIP};
use crate::machine::platform;
use crate::platform::Features;
use crate::pmu;

fn has_sstc(me: usize) -> bool {
    platform().hart_features(me).has(Features::SSTC)
}

fn write_mtimecmp(me: usize, value: u64) {
    // SAFETY: this hart's mtimecmp in the CLINT/ACLINT the DT names.
    unsafe { core::ptr::write_volatile((platform().mtimecmp + 8 * me) as *mut u64, value) };
}

/// SBI set_timer: the next supervisor timer interrupt at `value` (time
/// units); clears a pending one.
pub fn set_timer(value: u64) {
    let me = hartid();
    pmu::record(rvpmu::event::FwEvent::SetTimer);
    if has_sstc(me) {
        csr_write!(0x14d, value as usize);
    } else {
        write_mtimecmp(me, value);
        csr_clear!(mip, MIP_STIP);
        csr_set!(mie, MIP_MTIP);
    }
}

/// The M-mode timer fired (non-Sstc harts): pass it on to S-mode.
pub fn on_mtimer() {
    csr_clear!(mie, MIP_MTIP);
    csr_set!(mip, MIP_STIP);
}

/// For wait loops running with interrupts off: act on a pending M timer.
pub fn poll_mtimer() {
    if csr_read!(mip) & csr_read!(mie) & MIP_MTIP != 0 {
        on_mtimer();
    }
}

/// No timer interrupt pending or armed (hart init, stop).
pub fn disarm(me: usize) {
    if has_sstc(me) {
        csr_write!(0x14d, usize::MAX);
    } else {
        write_mtimecmp(me, u64::MAX);
        csr_clear!(mie, MIP_MTIP);
        csr_clear!(mip, MIP_STIP);
    }
}
