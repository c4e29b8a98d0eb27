//! The M-mode timer and the supervisor timer.
//!
//! With Sstc the supervisor programs stimecmp itself (through set_timer)
//! and mtimecmp belongs to the noisy neighbour alone. Without Sstc,
//! mtimecmp holds the earlier of the supervisor's deadline and the
//! neighbour's, and the M timer interrupt hands STIP to S-mode when the
//! supervisor's deadline passes.

use crate::csr::{csr_clear, csr_read, csr_set, csr_write, hartid, MIP_MTIP, MIP_STIP};
use crate::machine::{local, platform};
use crate::platform::Features;
use crate::pmu;

fn has_sstc(me: usize) -> bool {
    platform().hart_features(me).has(Features::SSTC)
}

fn write_mtimecmp(me: usize, value: u64) {
    // SAFETY: this hart's mtimecmp in the CLINT/ACLINT the DT names.
    unsafe { core::ptr::write_volatile((platform().mtimecmp + 8 * me) as *mut u64, value) };
}

/// Program mtimecmp with the earliest pending M-mode deadline.
fn reprogram(me: usize) {
    let l = local();
    let next = l.s_deadline.min(l.steal_deadline);
    write_mtimecmp(me, next);
    if next == u64::MAX {
        csr_clear!(mie, MIP_MTIP);
    } else {
        csr_set!(mie, MIP_MTIP);
    }
}

/// SBI set_timer: the next supervisor timer interrupt at `value` (time
/// units); clears a pending one.
pub fn set_timer(value: u64) {
    let me = hartid();
    pmu::record(rvpmu::event::FwEvent::SetTimer);
    if has_sstc(me) {
        csr_write!(0x14d, value as usize);
    } else {
        local().s_deadline = value;
        csr_clear!(mip, MIP_STIP);
        reprogram(me);
    }
}

/// The M-mode timer fired. `interrupted` is the S-mode pc when it came as
/// a trap from S-mode (the neighbour may run then); `None` from M-mode wait
/// loops, where only the supervisor's deadline is served.
pub fn on_mtimer(interrupted: Option<usize>) {
    let me = hartid();
    let now = csr_read!(time) as u64;
    let l = local();
    if now >= l.s_deadline {
        l.s_deadline = u64::MAX;
        csr_set!(mip, MIP_STIP);
    }
    if let Some(pc) = interrupted {
        if now >= l.steal_deadline {
            l.steal_deadline = crate::steal::run(pc);
        }
    }
    reprogram(me);
}

/// For wait loops running with interrupts off: act on a pending M timer.
pub fn poll_mtimer() {
    if csr_read!(mip) & csr_read!(mie) & MIP_MTIP != 0 {
        on_mtimer(None);
    }
}

/// Keep the hart in M-mode until `time` reaches `deadline`, asleep in
/// `wfi` on its M timer (under icount QEMU then runs the other harts up to
/// the deadline instead of letting a spinning hart overshoot it), still
/// serving other harts' IPI and fence requests. The caller reprograms
/// mtimecmp afterwards.
pub fn sleep_until(me: usize, deadline: u64) {
    write_mtimecmp(me, deadline);
    csr_set!(mie, MIP_MTIP);
    while (csr_read!(time) as u64) < deadline {
        // SAFETY: wfi only stalls; MTIP or MSIP (enabled in mie) wakes us.
        unsafe { core::arch::asm!("wfi") };
        crate::machine::process_messages(me, true);
    }
}

/// Start the noisy neighbour (if configured) for a hart entering S-mode.
pub fn arm_steal(me: usize) {
    local().steal_deadline = crate::steal::first_deadline();
    reprogram(me);
}

/// No timer interrupt pending or armed (hart init, stop).
pub fn disarm(me: usize) {
    if has_sstc(me) {
        csr_write!(0x14d, usize::MAX);
    } else {
        csr_clear!(mip, MIP_STIP);
    }
    let l = local();
    l.s_deadline = u64::MAX;
    l.steal_deadline = u64::MAX;
    reprogram(me);
}
