//! The calling hart's side of HSM: waiting stopped until a hart_start
//! names it, and waiting suspended until an interrupt S-mode enabled is
//! pending. Both serve other harts' messages while they wait. The shared
//! HSM states and the start requests are in `machine.rs`.
#![cfg(target_os = "none")]

use crate::machine::{self, HartLocal};
use rvpmu_rt::csr::{self, MIP_SSIP};

/// Stop the calling hart (HSM hart_stop, or parking a secondary at boot)
/// and wait in M-mode until a hart_start names it.
pub fn stop_and_wait(me: usize, hart: &mut HartLocal) -> ! {
    machine::begin_stop(me);
    crate::timer::disarm(me, hart);
    csr::MIP.clear(MIP_SSIP);
    machine::finish_stop(me);
    loop {
        let bits = machine::process_messages(hart.ready, me, false, &mut hart.perf.pmu);
        if let Some((addr, arg)) = machine::start_request(me, bits) {
            // A fresh start: nothing stale in the TLB or I-cache.
            // SAFETY: fences only.
            unsafe { core::arch::asm!("fence.i", "sfence.vma") };
            machine::set_started(me);
            crate::timer::arm_steal(me, hart);
            // SAFETY: entering S-mode at the requested address.
            unsafe { crate::frame::enter_supervisor(me, arg, addr) };
        }
        // SAFETY: wfi only stalls; MSIP (kept enabled in mie) wakes us.
        unsafe { core::arch::asm!("wfi") };
    }
}

/// Retentive or non-retentive HSM suspend: wait in M-mode until an
/// interrupt S-mode enabled is pending.
pub fn suspend(me: usize, hart: &mut HartLocal) {
    machine::set_suspended(me);
    const S_IRQS: usize = csr::MIP_SSIP | csr::MIP_STIP | csr::MIP_SEIP | csr::MIP_LCOFIP;
    loop {
        machine::process_messages(hart.ready, me, true, &mut hart.perf.pmu);
        crate::timer::poll_mtimer(hart);
        if csr::MIP.read() & csr::MIE.read() & S_IRQS != 0 {
            break;
        }
        // SAFETY: wfi only stalls; wakes on any interrupt enabled in mie.
        unsafe { core::arch::asm!("wfi") };
    }
    machine::set_started(me);
}
