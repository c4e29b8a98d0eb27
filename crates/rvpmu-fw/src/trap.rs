//! Trap dispatch: SBI calls, M-mode interrupts (IPIs, timer), emulation and
//! redirection of exceptions S-mode must see.
#![cfg(target_os = "none")]

use crate::frame::{redirect, this_hart, TrapFrame};
use crate::machine;
use crate::power::fatal;
use rvpmu::event::FwEvent;
use rvpmu_rt::csr::{
    self, CAUSE_ILLEGAL_INSN, CAUSE_LOAD_ACCESS, CAUSE_MISALIGNED_LOAD, CAUSE_MISALIGNED_STORE,
    CAUSE_STORE_ACCESS, CAUSE_SUPERVISOR_ECALL, IRQ_M_SOFT, IRQ_M_TIMER,
};

/// Entry from `trap_entry` for every trap taken from S/U/VS/VU. Borrows
/// the hart's state once (`this_hart`) and passes it down; an ecall is
/// left to `sbi::ecall`, which borrows it where the call needs it.
pub extern "C" fn trap_handler(f: &mut TrapFrame) {
    let cause = csr::MCAUSE.read();
    if (cause as isize) < 0 {
        // SAFETY: once per trap, on this hart, not kept past it.
        let hart = unsafe { this_hart() };
        match cause & !(1 << 63) {
            IRQ_M_SOFT => {
                machine::process_messages(
                    hart.ready,
                    csr::MHARTID.read(),
                    true,
                    &mut hart.perf.pmu,
                );
            }
            IRQ_M_TIMER => crate::timer::on_mtimer(hart, Some(f)),
            _ => fatal("unexpected interrupt", f.mepc),
        }
        return;
    }
    if cause == CAUSE_SUPERVISOR_ECALL {
        return crate::sbi::ecall(f);
    }
    // SAFETY: once per trap (an ecall, which borrows on its own, returned
    // above), on this hart, not kept past it.
    let hart = unsafe { this_hart() };
    let tval = csr::MTVAL.read();
    let (ready, pmu) = (hart.ready, &mut hart.perf.pmu);
    match cause {
        CAUSE_MISALIGNED_LOAD | CAUSE_MISALIGNED_STORE => {
            crate::emulate::misaligned(ready, f, cause, tval, pmu)
        }
        CAUSE_ILLEGAL_INSN => {
            pmu.record(FwEvent::IllegalInsn);
            redirect(ready, f, cause, tval);
        }
        CAUSE_LOAD_ACCESS => {
            pmu.record(FwEvent::AccessLoad);
            redirect(ready, f, cause, tval);
        }
        CAUSE_STORE_ACCESS => {
            pmu.record(FwEvent::AccessStore);
            redirect(ready, f, cause, tval);
        }
        _ => redirect(ready, f, cause, tval),
    }
}

/// A trap taken in M-mode outside a guarded access: a firmware bug. `f`
/// is the hart's frame (a handler's `&mut` to it is never used again:
/// this does not return); its mepc is the interrupted S-mode pc when the
/// fault came from a full-path handler (the SBI fast path does not save
/// mepc).
pub extern "C" fn m_mode_trap(f: &TrapFrame) -> ! {
    crate::power::fatal("unexpected trap in M-mode", f.mepc)
}
