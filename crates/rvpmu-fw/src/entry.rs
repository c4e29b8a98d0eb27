//! Reset entry, the trap vector and the few routines that must be assembly:
//! entering S-mode and memory accesses made on behalf of the interrupted
//! mode (MPRV) that survive a fault.

use crate::csr::{MSTATUS_MPRV, MSTATUS_MXR};
use crate::layout::{MAX_HARTS, STACK_SIZE};
use crate::trap::TrapFrame;
use core::mem::{offset_of, size_of};

// Reset: every hart arrives here with a0 = hartid, a1 = DTB, a2 = fw_dynamic
// info. Each hart takes the top of its own stack for its trap frame
// (mscratch points at it) and runs on the stack below it.
core::arch::global_asm!(
    ".section .text.entry, \"ax\"",
    ".globl _start",
    "_start:",
    "   csrw mie, zero",
    "   li t0, {max_harts}",
    "   bgeu a0, t0, 2f",
    "   la t0, _stacks_end",
    "   li t1, {stack_size}",
    "   mul t1, t1, a0",
    "   sub t0, t0, t1",
    "   addi t0, t0, -{frame_size}",
    "   csrw mscratch, t0",
    "   mv sp, t0",
    "   la t1, {trap_entry}",
    "   csrw mtvec, t1",
    "   call {fw_main}",
    "2: wfi",
    "   j 2b",
    max_harts = const MAX_HARTS,
    stack_size = const STACK_SIZE,
    frame_size = const size_of::<TrapFrame>(),
    trap_entry = sym trap_entry,
    fw_main = sym crate::boot::fw_main,
);

extern "C" {
    fn trap_entry();
    /// Leave M-mode for S-mode at `entry` with a0 = `a0`, a1 = `a1`,
    /// satp = 0 and interrupts disabled in S.
    pub fn enter_supervisor(a0: usize, a1: usize, entry: usize) -> !;
}

// The trap vector. From S/U (or VS/VU) the whole register file is saved in
// the hart's trap frame and `trap_handler` runs on the stack below it. A trap
// taken in M-mode is either an expected fault of a guarded access (the frame's
// `recover` holds where to resume; a1 gets mcause) or a firmware bug.
//
// Fast path: an ecall from S-mode (mcause 9 is never raised by M-mode code)
// with a non-legacy EID. `ecall_fast` is an extern "C" function, so the ABI
// preserves sp, gp, tp and s0-s11 for us: only the registers a call may
// clobber are saved (sp, ra, t0-t6, a2-a7; a0/a1 carry the answer), in
// their frame slots (t0 stays in `scratch`), and mscratch points back at
// the frame as on the full path. Legacy calls need the full frame (a fault
// reading a hart mask is redirected to S-mode), as do all other traps.
// Guarded accesses (which use the frame's mstatus, and whose faults reuse
// `scratch`) are never made on the fast path.
core::arch::global_asm!(
    ".section .text",
    ".balign 4",
    ".globl {trap_entry}",
    "{trap_entry}:",
    "   csrrw sp, mscratch, sp",
    "   sd t0, {scratch}(sp)",
    "   csrr t0, mcause",
    "   addi t0, t0, -{ecall_s}",
    "   bnez t0, 1f",
    "   li t0, {legacy_last}",
    "   bleu a7, t0, 1f",
    "   csrrw t0, mscratch, sp",
    "   sd t0, 2*8(sp)",
    "   sd x1, 1*8(sp)",
    "   sd x6, 6*8(sp)",
    "   sd x7, 7*8(sp)",
    "   sd x12, 12*8(sp)",
    "   sd x13, 13*8(sp)",
    "   sd x14, 14*8(sp)",
    "   sd x15, 15*8(sp)",
    "   sd x16, 16*8(sp)",
    "   sd x17, 17*8(sp)",
    "   sd x28, 28*8(sp)",
    "   sd x29, 29*8(sp)",
    "   sd x30, 30*8(sp)",
    "   sd x31, 31*8(sp)",
    "   call {ecall_fast}",
    "   csrr t0, mepc",
    "   addi t0, t0, 4",
    "   csrw mepc, t0",
    "   ld x1, 1*8(sp)",
    "   ld x5, {scratch}(sp)",
    "   ld x6, 6*8(sp)",
    "   ld x7, 7*8(sp)",
    "   ld x12, 12*8(sp)",
    "   ld x13, 13*8(sp)",
    "   ld x14, 14*8(sp)",
    "   ld x15, 15*8(sp)",
    "   ld x16, 16*8(sp)",
    "   ld x17, 17*8(sp)",
    "   ld x28, 28*8(sp)",
    "   ld x29, 29*8(sp)",
    "   ld x30, 30*8(sp)",
    "   ld x31, 31*8(sp)",
    "   ld x2, 2*8(sp)",
    "   mret",
    // Full path.
    "1: csrr t0, mstatus",
    "   srli t0, t0, 11",
    "   andi t0, t0, 3",
    "   addi t0, t0, -3",
    "   beqz t0, 3f",
    "   sd x1, 1*8(sp)",
    "   sd x3, 3*8(sp)",
    "   sd x4, 4*8(sp)",
    "   ld t0, {scratch}(sp)",
    "   sd x5, 5*8(sp)",
    "   sd x6, 6*8(sp)",
    "   sd x7, 7*8(sp)",
    "   sd x8, 8*8(sp)",
    "   sd x9, 9*8(sp)",
    "   sd x10, 10*8(sp)",
    "   sd x11, 11*8(sp)",
    "   sd x12, 12*8(sp)",
    "   sd x13, 13*8(sp)",
    "   sd x14, 14*8(sp)",
    "   sd x15, 15*8(sp)",
    "   sd x16, 16*8(sp)",
    "   sd x17, 17*8(sp)",
    "   sd x18, 18*8(sp)",
    "   sd x19, 19*8(sp)",
    "   sd x20, 20*8(sp)",
    "   sd x21, 21*8(sp)",
    "   sd x22, 22*8(sp)",
    "   sd x23, 23*8(sp)",
    "   sd x24, 24*8(sp)",
    "   sd x25, 25*8(sp)",
    "   sd x26, 26*8(sp)",
    "   sd x27, 27*8(sp)",
    "   sd x28, 28*8(sp)",
    "   sd x29, 29*8(sp)",
    "   sd x30, 30*8(sp)",
    "   sd x31, 31*8(sp)",
    "   csrr t0, mscratch",
    "   sd t0, 2*8(sp)",
    "   csrw mscratch, sp",
    "   csrr t0, mepc",
    "   sd t0, {mepc}(sp)",
    "   csrr t0, mstatus",
    "   sd t0, {mstatus}(sp)",
    "   mv a0, sp",
    "   call {handler}",
    "   ld t0, {mepc}(sp)",
    "   csrw mepc, t0",
    "   ld t0, {mstatus}(sp)",
    "   csrw mstatus, t0",
    "   ld x1, 1*8(sp)",
    "   ld x3, 3*8(sp)",
    "   ld x4, 4*8(sp)",
    "   ld x5, 5*8(sp)",
    "   ld x6, 6*8(sp)",
    "   ld x7, 7*8(sp)",
    "   ld x8, 8*8(sp)",
    "   ld x9, 9*8(sp)",
    "   ld x10, 10*8(sp)",
    "   ld x11, 11*8(sp)",
    "   ld x12, 12*8(sp)",
    "   ld x13, 13*8(sp)",
    "   ld x14, 14*8(sp)",
    "   ld x15, 15*8(sp)",
    "   ld x16, 16*8(sp)",
    "   ld x17, 17*8(sp)",
    "   ld x18, 18*8(sp)",
    "   ld x19, 19*8(sp)",
    "   ld x20, 20*8(sp)",
    "   ld x21, 21*8(sp)",
    "   ld x22, 22*8(sp)",
    "   ld x23, 23*8(sp)",
    "   ld x24, 24*8(sp)",
    "   ld x25, 25*8(sp)",
    "   ld x26, 26*8(sp)",
    "   ld x27, 27*8(sp)",
    "   ld x28, 28*8(sp)",
    "   ld x29, 29*8(sp)",
    "   ld x30, 30*8(sp)",
    "   ld x31, 31*8(sp)",
    "   ld x2, 2*8(sp)",
    "   mret",
    // Trap from M-mode.
    "3: ld t0, {recover}(sp)",
    "   beqz t0, 4f",
    "   csrw mepc, t0",
    "   sd zero, {recover}(sp)",
    "   csrr a1, mcause",
    "   ld t0, {scratch}(sp)",
    "   csrrw sp, mscratch, sp",
    "   mret",
    // Unexpected: report and power off. A fault while reporting ends in the
    // raw fallback below (QEMU virt's test device).
    "4: la t0, 5f",
    "   csrw mtvec, t0",
    "   call {fatal}",
    ".balign 4",
    "5: li t0, 0x100000",
    "   li t1, 0x13333",
    "   sw t1, 0(t0)",
    "6: wfi",
    "   j 6b",
    trap_entry = sym trap_entry,
    handler = sym crate::trap::trap_handler,
    ecall_fast = sym crate::sbi::ecall_fast,
    ecall_s = const crate::csr::CAUSE_SUPERVISOR_ECALL,
    legacy_last = const crate::sbi::LEGACY_LAST_EID,
    fatal = sym crate::trap::m_mode_trap,
    scratch = const offset_of!(TrapFrame, scratch),
    mepc = const offset_of!(TrapFrame, mepc),
    mstatus = const offset_of!(TrapFrame, mstatus),
    recover = const offset_of!(TrapFrame, recover),
);

core::arch::global_asm!(
    ".section .text",
    ".balign 4",
    ".globl enter_supervisor",
    "enter_supervisor:",
    "   csrw mepc, a2",
    "   csrw satp, zero",
    "   li t0, {clear}",
    "   csrc mstatus, t0",
    "   li t0, {set}",
    "   csrs mstatus, t0",
    "   mret",
    clear = const crate::csr::MSTATUS_MPP | crate::csr::MSTATUS_MPIE | crate::csr::MSTATUS_SIE
        | crate::csr::MSTATUS_SPIE | MSTATUS_MPRV | crate::csr::MSTATUS_MPV,
    set = const crate::csr::PRV_S << crate::csr::MSTATUS_MPP_SHIFT,
);

/// Result of a guarded access: `cause` is 0 on success, else the mcause of
/// the fault (the access had no effect then).
#[repr(C)]
pub struct Guarded {
    pub value: usize,
    pub cause: usize,
}

// Guarded accesses in the privilege and translation of the trapped context:
// mstatus is set to the trap frame's saved mstatus (so MPP/MPV name that
// context) plus MPRV and `a1`'s extra bits, the access runs, mstatus is put
// back. A fault resumes at the local label 1 with a1 = mcause.
macro_rules! guarded_access {
    ($name:literal, $access:literal) => {
        core::arch::global_asm!(
            ".section .text",
            ".balign 4",
            concat!(".globl ", $name),
            concat!($name, ":"),
            "   csrr t2, mscratch",
            "   ld t1, {mstatus}(t2)",
            "   la t0, 1f",
            "   sd t0, {recover}(t2)",
            "   li t0, {mprv}",
            "   or t0, t0, a1",
            "   or t0, t0, t1",
            "   li a1, 0",
            "   csrw mstatus, t0",
            $access,
            "   csrw mstatus, t1",
            "   sd zero, {recover}(t2)",
            "   ret",
            "1: csrw mstatus, t1",
            "   li a0, 0",
            "   ret",
            mstatus = const offset_of!(TrapFrame, mstatus),
            recover = const offset_of!(TrapFrame, recover),
            mprv = const MSTATUS_MPRV,
        );
    };
}
guarded_access!("guarded_lbu", "   lbu a0, 0(a0)");
guarded_access!("guarded_lhu", "   lhu a0, 0(a0)");
guarded_access!("guarded_ld", "   ld a0, 0(a0)");
guarded_access!("guarded_sb", "   sb a2, 0(a0)");

extern "C" {
    fn guarded_lbu(addr: usize, extra: usize) -> Guarded;
    fn guarded_lhu(addr: usize, extra: usize) -> Guarded;
    fn guarded_ld(addr: usize, extra: usize) -> Guarded;
    fn guarded_sb(addr: usize, extra: usize, value: usize) -> Guarded;
}

/// Load a byte as the trapped context would (its privilege and translation).
/// Only valid inside `trap_handler`.
pub fn load_u8(addr: usize) -> Result<u8, usize> {
    // SAFETY: the access runs with the trapped context's permissions and a
    // fault is caught; mscratch points at this hart's trap frame.
    let r = unsafe { guarded_lbu(addr, 0) };
    if r.cause == 0 {
        Ok(r.value as u8)
    } else {
        Err(r.cause)
    }
}

/// Load a doubleword as the trapped context would (must be 8-byte aligned).
pub fn load_u64(addr: usize) -> Result<u64, usize> {
    // SAFETY: as load_u8.
    let r = unsafe { guarded_ld(addr, 0) };
    if r.cause == 0 {
        Ok(r.value as u64)
    } else {
        Err(r.cause)
    }
}

/// Store a byte as the trapped context would.
pub fn store_u8(addr: usize, value: u8) -> Result<(), usize> {
    // SAFETY: as load_u8.
    let r = unsafe { guarded_sb(addr, 0, value as usize) };
    if r.cause == 0 {
        Ok(())
    } else {
        Err(r.cause)
    }
}

/// Fetch the (possibly compressed) instruction at `pc` of the trapped
/// context, reading execute-only pages too (MXR). Returns its bits.
pub fn fetch_insn(pc: usize) -> Result<u32, usize> {
    // SAFETY: as load_u8.
    let lo = unsafe { guarded_lhu(pc, MSTATUS_MXR) };
    if lo.cause != 0 {
        return Err(lo.cause);
    }
    if lo.value & 3 != 3 {
        return Ok(lo.value as u32);
    }
    // SAFETY: as load_u8.
    let hi = unsafe { guarded_lhu(pc + 2, MSTATUS_MXR) };
    if hi.cause != 0 {
        return Err(hi.cause);
    }
    Ok((lo.value | hi.value << 16) as u32)
}
