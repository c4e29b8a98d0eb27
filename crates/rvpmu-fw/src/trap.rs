//! Trap dispatch: SBI calls, M-mode interrupts (IPIs, timer), emulation and
//! redirection of exceptions S-mode must see.

use crate::csr::*;
use crate::machine::{self, platform};
use crate::platform::Features;
use crate::pmu;
use rvpmu::event::FwEvent;

/// The interrupted context, saved at the top of the hart's M-mode stack.
/// Layout is used by the assembly in `entry.rs` (via `offset_of!`).
#[repr(C)]
pub struct TrapFrame {
    /// x0..x31 (x0's slot unused).
    pub regs: [usize; 32],
    pub mepc: usize,
    pub mstatus: usize,
    /// Nonzero while a guarded access runs: where a fault resumes.
    pub recover: usize,
    /// Scratch for the entry code.
    pub scratch: usize,
    /// This hart's PMU engine (set once at the hart's init, see
    /// `set_hart_pmu`).
    pub pmu: *mut crate::pmu::HartPmu,
}

/// Remember the calling hart's PMU engine in its trap frame (at mscratch
/// from `_start` on), so that the SBI call path finds it with a CSR read
/// and a load instead of a bounds-checked multiply into the hart table.
pub fn set_hart_pmu(pmu: &'static mut crate::pmu::HartPmu) {
    let f = csr_read!(mscratch) as *mut TrapFrame;
    // SAFETY: mscratch points at this hart's own trap frame.
    unsafe { (*f).pmu = pmu };
}

/// The calling hart's PMU engine, for the SBI call path.
#[inline(always)]
pub fn hart_pmu() -> &'static mut crate::pmu::HartPmu {
    let f = csr_read!(mscratch) as *mut TrapFrame;
    // SAFETY: mscratch points at this hart's trap frame, whose `pmu` was
    // set at the hart's init (before it could take an ecall from S-mode)
    // to its own state, which only this hart touches and which lives for
    // the whole run.
    unsafe { &mut *(*f).pmu }
}

pub const A0: usize = 10;
pub const A1: usize = 11;

/// Entry from `trap_entry` for every trap taken from S/U/VS/VU.
pub extern "C" fn trap_handler(f: &mut TrapFrame) {
    let cause = csr_read!(mcause);
    if (cause as isize) < 0 {
        match cause & !(1 << 63) {
            IRQ_M_SOFT => {
                machine::process_messages(hartid(), true);
            }
            IRQ_M_TIMER => crate::timer::on_mtimer(Some(f.mepc)),
            _ => fatal("unexpected interrupt", f),
        }
        return;
    }
    let tval = csr_read!(mtval);
    match cause {
        CAUSE_SUPERVISOR_ECALL => crate::sbi::ecall(f),
        CAUSE_MISALIGNED_LOAD | CAUSE_MISALIGNED_STORE => {
            crate::emulate::misaligned(f, cause, tval)
        }
        CAUSE_ILLEGAL_INSN => {
            pmu::record(FwEvent::IllegalInsn);
            redirect(f, cause, tval);
        }
        CAUSE_LOAD_ACCESS => {
            pmu::record(FwEvent::AccessLoad);
            redirect(f, cause, tval);
        }
        CAUSE_STORE_ACCESS => {
            pmu::record(FwEvent::AccessStore);
            redirect(f, cause, tval);
        }
        _ => redirect(f, cause, tval),
    }
}

/// Deliver an exception to S-mode (HS-mode when the trap came from a
/// guest) as if it had been delegated: the handler at stvec runs next.
pub fn redirect(f: &mut TrapFrame, cause: usize, tval: usize) {
    let prev = (f.mstatus & MSTATUS_MPP) >> MSTATUS_MPP_SHIFT;
    if prev == PRV_M {
        fatal("exception to redirect came from M-mode", f);
    }
    if platform().hart_features(hartid()).has(Features::H) {
        let virt = f.mstatus & MSTATUS_MPV != 0;
        let mut hs = csr_read!(0x600);
        if virt {
            hs |= HSTATUS_SPV;
            if prev == PRV_S {
                hs |= HSTATUS_SPVP;
            } else {
                hs &= !HSTATUS_SPVP;
            }
        } else {
            hs &= !HSTATUS_SPV;
        }
        csr_write!(0x600, hs);
        csr_write!(0x643, 0); // htval
        csr_write!(0x64a, 0); // htinst
        f.mstatus &= !MSTATUS_MPV;
    }
    csr_write!(scause, cause);
    csr_write!(stval, tval);
    csr_write!(sepc, f.mepc);
    let mut s = f.mstatus;
    s = if prev == PRV_S {
        s | MSTATUS_SPP
    } else {
        s & !MSTATUS_SPP
    };
    s = if s & MSTATUS_SIE != 0 {
        s | MSTATUS_SPIE
    } else {
        s & !MSTATUS_SPIE
    };
    s &= !(MSTATUS_SIE | MSTATUS_MPP);
    f.mstatus = s | PRV_S << MSTATUS_MPP_SHIFT;
    f.mepc = csr_read!(stvec) & !3;
}

/// Report a firmware-fatal condition (CSRs, hart) and power off.
pub fn fatal(what: &str, f: &TrapFrame) -> ! {
    report(what, f.mepc);
    crate::power::fail(1)
}

fn report(what: &str, context_pc: usize) {
    let uart = machine::platform_if_ready().map_or(crate::console::DEFAULT_UART, |p| p.uart);
    let o = crate::console::Out(uart);
    o.str("\nrvpmu-fw: FATAL: ")
        .str(what)
        .str(" on hart ")
        .dec(hartid());
    o.str("\n  mcause=")
        .hex(csr_read!(mcause))
        .str(" mepc=")
        .hex(csr_read!(mepc));
    o.str(" mtval=")
        .hex(csr_read!(mtval))
        .str(" interrupted pc=")
        .hex(context_pc)
        .str("\n");
}

/// A trap taken in M-mode outside a guarded access: a firmware bug.
pub extern "C" fn m_mode_trap(f: &TrapFrame) -> ! {
    report("unexpected trap in M-mode", f.mepc);
    crate::power::fail(1)
}

/// Report a panic with its location and message, then power off.
pub fn panic_report(info: &core::panic::PanicInfo) -> ! {
    let uart = machine::platform_if_ready().map_or(crate::console::DEFAULT_UART, |p| p.uart);
    let o = crate::console::Out(uart);
    o.str("\nrvpmu-fw: PANIC on hart ").dec(hartid());
    if let Some(l) = info.location() {
        o.str(" at ").str(l.file()).str(":").dec(l.line() as usize);
    }
    if let Some(m) = info.message().as_str() {
        o.str(": ").str(m);
    }
    o.str("\n  mcause=")
        .hex(csr_read!(mcause))
        .str(" mepc=")
        .hex(csr_read!(mepc));
    o.str(" mtval=").hex(csr_read!(mtval)).str("\n");
    crate::power::fail(2)
}
