//! What a trap from the guest leads to. Every trap from VS/VU-mode that
//! reaches HS-mode comes here:
//!
//! | scause | what |
//! |---|---|
//! | 10, ecall from VS | an SBI call: `rvpmu_hv::sbi`, answer in a0/a1, pc += 4 |
//! | 20, 21, 23, guest page faults | the guest touched a guest-physical address outside its RAM (nothing else is mapped): reported, the guest is stopped |
//! | 22, virtual instruction | reflected into the guest as an illegal instruction (what the same instruction does on a hart without the feature) |
//! | other exceptions | the guest's own (illegal instructions and access faults the firmware redirected, anything hedeleg did not send straight to VS): reflected into the guest |
//! | interrupt 13, LCOFI | a host counter overflowed: recorded in the guest's PMU and injected into VS (hvip bit 13) |
//! | interrupt 5, HS timer | with several guests: the quantum ended, the scheduler may switch guests (`guests.rs`); with `rvpmu-hv.switch=1ms` and one guest: the guest's counters saved and restored as a switch would (`switch.rs`) |
//! | 22 with `wfi` from VS, several guests | the vCPU goes idle until its timer (hstatus.VTW is set then) |
//! | other interrupts | not enabled in sie: reported, the guest is stopped |
//!
//! "Stopped" means an SBI SRST shutdown with reason "system failure"
//! through the host firmware, which makes QEMU exit with status 83.
#![cfg(target_os = "none")]

use crate::console::hvprintln;
use crate::vcpu::{Vcpu, A0, A1};
use rvpmu_hv::sbi::Outcome;
use rvpmu_rt::csr::{
    self, CAUSE_FETCH_GUEST_PAGE_FAULT, CAUSE_ILLEGAL_INSN, CAUSE_LOAD_GUEST_PAGE_FAULT,
    CAUSE_STORE_GUEST_PAGE_FAULT, CAUSE_VIRTUAL_INSN, CAUSE_VS_ECALL, HSTATUS_SPVP, IRQ_LCOF,
    IRQ_S_TIMER, SSTATUS_SIE, SSTATUS_SPIE, SSTATUS_SPP,
};
use rvpmu_rt::runtime::halt_failure;

/// Called by the trap vector with the vCPU whose registers it saved;
/// returns the vCPU to resume.
#[no_mangle]
extern "C" fn hv_trap(v: *mut Vcpu) -> *mut Vcpu {
    // SAFETY: `v` is the vCPU installed by `vcpu::install`, passed by the
    // trap vector from sscratch; this is the only reference to it for the
    // trap (traps do not nest: HS-mode runs with interrupts off, and a
    // trap in HS-mode goes to `hv_self_trap`, which never touches it).
    let vcpu = unsafe { &mut *v };
    let scause = csr::SCAUSE.read();
    // The guest's SBI calls first: they are most of the traps, and need
    // neither stval nor the machine of several guests (SRST looks it up
    // itself).
    if scause == CAUSE_VS_ECALL {
        if vcpu.switch.is_some() {
            switch_hook(vcpu);
        }
        let x = &mut vcpu.regs.x;
        let args = [x[10], x[11], x[12], x[13], x[14], x[15]];
        let (eid, fid) = (x[17], x[16]);
        let r = if eid as u32 as usize == sbi_spec::srst::EID_SRST {
            match srst_call(v, fid, args) {
                Ok(r) => r,
                Err(next) => return next,
            }
        } else {
            vcpu.sbi.call(eid, fid, args)
        };
        // SAFETY: `v` as above, borrowed again: `srst_call` reached
        // the vCPUs through their own pointers and has returned.
        let vcpu = unsafe { &mut *v };
        let x = &mut vcpu.regs.x;
        x[A0] = r.error;
        x[A1] = r.value;
        vcpu.regs.pc = vcpu.regs.pc.wrapping_add(4);
        return v;
    }
    let stval = csr::STVAL.read();
    if scause == 1 << 63 | IRQ_LCOF {
        overflow(vcpu);
        return v;
    }
    // SAFETY: the trap path; the machine is reached only here.
    let mut machine = unsafe { crate::guests::machine() };
    if scause == 1 << 63 | IRQ_S_TIMER {
        if let Some(m) = &mut machine {
            return m.timer(v);
        }
        if let Some(s) = &mut vcpu.switch {
            // The hypervisor's quantum ended: a switch away and back.
            if let Some(p) = &mut vcpu.sbi.pmu {
                s.round_trip(p);
            }
            s.arm();
            return v;
        }
    }
    if (scause as isize) < 0 {
        stop(
            vcpu,
            format_args!(
                "unexpected interrupt {} while the guest ran",
                scause & !(1 << 63)
            ),
        );
    }
    match scause {
        CAUSE_FETCH_GUEST_PAGE_FAULT
        | CAUSE_LOAD_GUEST_PAGE_FAULT
        | CAUSE_STORE_GUEST_PAGE_FAULT => {
            // htval holds the guest-physical address >> 2; its low bits
            // are those of the guest-virtual address in stval.
            let gpa = csr::HTVAL.read() << 2 | stval & 3;
            let kind = match scause {
                CAUSE_FETCH_GUEST_PAGE_FAULT => "fetch",
                CAUSE_LOAD_GUEST_PAGE_FAULT => "load",
                _ => "store",
            };
            stop(
                vcpu,
                format_args!(
                    "guest {kind} page fault at guest-physical {gpa:#x} (outside the guest's RAM)"
                ),
            );
        }
        CAUSE_VIRTUAL_INSN
            if stval == crate::guests::WFI && csr::HSTATUS.read() & HSTATUS_SPVP != 0 =>
        {
            match &mut machine {
                Some(m) => {
                    vcpu.regs.pc = vcpu.regs.pc.wrapping_add(4);
                    return m.wfi(v);
                }
                None => reflect(vcpu, CAUSE_ILLEGAL_INSN, stval),
            }
        }
        CAUSE_VIRTUAL_INSN => reflect(vcpu, CAUSE_ILLEGAL_INSN, stval),
        c if c < 16 && c != 9 && c != 11 => reflect(vcpu, c, stval),
        c => stop(
            vcpu,
            format_args!("unexpected exception {c} (stval {stval:#x})"),
        ),
    }
    v
}

/// A guest's SRST call, apart from the other SBI calls' path: with other
/// guests alive a shutdown ends this guest only (`Err` holds the vCPU to
/// run next); the last guest's call reaches the host firmware, after the
/// hypervisor's accounting.
#[cold]
#[inline(never)]
fn srst_call(
    v: *mut Vcpu,
    fid: usize,
    args: [usize; 6],
) -> Result<rvpmu::ecall::SbiRet, *mut Vcpu> {
    // SAFETY: the trap path (`hv_trap` holds no reference to the machine).
    let mut machine = unsafe { crate::guests::machine() };
    let others = machine.as_ref().is_some_and(|m| m.others_alive());
    if let Some(m) = &mut machine {
        if !others {
            m.report();
        }
    }
    // SAFETY: the trap path's vCPU (as in `hv_trap`), borrowed after the
    // report, which reached the vCPUs through their own pointers.
    let vcpu = unsafe { &mut *v };
    match vcpu
        .sbi
        .call_shared(sbi_spec::srst::EID_SRST, fid, args, others)
    {
        Outcome::Answer(r) => Ok(r),
        // Only with others alive, i.e. with the machine.
        Outcome::Ended => match machine {
            Some(m) => Err(m.end()),
            None => halt_failure(),
        },
    }
}

/// With `rvpmu-hv.switch=1ms` (`switch.rs`): before a guest SRST call,
/// report the switch costs. Out of the SBI call's path.
#[cold]
#[inline(never)]
fn switch_hook(vcpu: &mut Vcpu) {
    let x = &vcpu.regs.x;
    let eid = x[17] & 0xffff_ffff;
    let Some(s) = &mut vcpu.switch else {
        return;
    };
    if eid == sbi_spec::srst::EID_SRST {
        s.report();
    }
}

/// A host counter overflowed (LCOFI, enabled in sie only when the guest
/// has a PMU and hvien takes bit 13): record which of the guest's
/// counters overflowed in its engine, clear the host's pending bit and
/// raise LCOFI for the guest (hvip bit 13; the guest clears it through
/// its own sip, which hvien makes an alias of hvip's bit).
fn overflow(vcpu: &mut Vcpu) {
    let new = match &mut vcpu.sbi.pmu {
        Some(p) => p.hw_mut().take_overflow(),
        None => 0,
    };
    csr::SIP.clear(1 << IRQ_LCOF);
    if new != 0 {
        csr::HVIP.set(1 << IRQ_LCOF);
    }
}

/// Deliver exception `cause` to the guest as the hardware would if it
/// were delegated to VS-mode: vsepc, vscause, vstval, vsstatus's SPP/SPIE/SIE,
/// then resume at vstvec's base in VS-mode.
fn reflect(vcpu: &mut Vcpu, cause: usize, tval: usize) {
    let from_vs = csr::HSTATUS.read() & HSTATUS_SPVP != 0;
    let old = csr::VSSTATUS.read();
    let mut s = old & !(SSTATUS_SPP | SSTATUS_SPIE | SSTATUS_SIE);
    if from_vs {
        s |= SSTATUS_SPP;
    }
    if old & SSTATUS_SIE != 0 {
        s |= SSTATUS_SPIE;
    }
    csr::VSSTATUS.write(s);
    csr::VSEPC.write(vcpu.regs.pc);
    csr::VSCAUSE.write(cause);
    csr::VSTVAL.write(tval);
    vcpu.regs.pc = csr::VSTVEC.read() & !3;
    // The guest's handler runs in VS-mode even when the trap came from VU.
    csr::SSTATUS.set(SSTATUS_SPP);
    csr::HSTATUS.set(HSTATUS_SPVP);
}

/// Report why the guest stops and shut the machine down with reason
/// "system failure" (QEMU exits 83 under rvpmu-fw).
fn stop(vcpu: &Vcpu, why: core::fmt::Arguments<'_>) -> ! {
    hvprintln!("{why}; pc {:#x}: stopping the guest", vcpu.regs.pc);
    halt_failure()
}

/// A trap taken in HS-mode: a hypervisor bug, never the guest's doing.
#[no_mangle]
extern "C" fn hv_self_trap() -> ! {
    hvprintln!(
        "trap in the hypervisor itself: scause {:#x} sepc {:#x} stval {:#x}",
        csr::SCAUSE.read(),
        csr::SEPC.read(),
        csr::STVAL.read()
    );
    halt_failure()
}
