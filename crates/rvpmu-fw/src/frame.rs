//! The trapped context: the trap frame and, beside it, the one way to the
//! hart's private state and the trap entry's own words (`HartRoot`,
//! `this_hart`), delivering exceptions to S-mode, memory accesses made on
//! behalf of the interrupted mode (MPRV) that survive a fault, and
//! entering S-mode. The assembly here is what the trap handlers call; the trap
//! vector itself is in `entry.rs`.
#![cfg(target_os = "none")]

use crate::machine::{HartLocal, Ready};
use crate::platform::Features;
use core::mem::{offset_of, size_of};
use rvpmu_rt::csr::{
    self, HSTATUS_SPV, HSTATUS_SPVP, MSTATUS_MPP, MSTATUS_MPP_SHIFT, MSTATUS_MPRV, MSTATUS_MPV,
    MSTATUS_MXR, MSTATUS_SIE, MSTATUS_SPIE, MSTATUS_SPP, PRV_M, PRV_S,
};

/// The interrupted context, saved at the top of the hart's M-mode stack.
/// Layout is used by the assembly in `entry.rs` (via `offset_of!`).
#[repr(C)]
pub struct TrapFrame {
    /// x0..x31 (x0's slot unused).
    pub regs: [usize; 32],
    pub mepc: usize,
    pub mstatus: usize,
}

/// What mscratch points at: the hart's trap frame, then what the
/// firmware keeps beside it, outside `TrapFrame`, because it is used while
/// a handler holds `&mut TrapFrame`: the one way to the hart's private
/// state (set once at the hart's init by `set_hart`; see `this_hart`) and
/// the two words of the trap entry (`entry.rs`) and the guarded accesses
/// (below). No Rust reference to a `HartRoot` is ever made; these words
/// are read and written through mscratch only.
#[repr(C)]
pub struct HartRoot {
    pub frame: TrapFrame,
    hart: *mut HartLocal,
    /// Nonzero while a guarded access runs: where its fault resumes.
    pub recover: usize,
    /// The entry code's spill slot for t0 (a guarded access's fault, taken
    /// in the middle of a handler, spills there too).
    pub scratch: usize,
}
/// Offset of `HartRoot::hart`, for the trap entry's PMU fast path.
pub const HART_OFFSET: usize = offset_of!(HartRoot, hart);
// The entry code hands mscratch to the handlers as their `&mut TrapFrame`.
const _: () = assert!(offset_of!(HartRoot, frame) == 0);
// `_start` clears the root a doubleword at a time, with one `addi`.
const _: () = assert!(size_of::<HartRoot>().is_multiple_of(8) && size_of::<HartRoot>() < 2048);

/// Hand the calling hart's private state to its root (at mscratch from
/// `_start` on), which owns it from now on: the SBI call path finds it
/// with a CSR read and a load, and `this_hart` is the only way back.
pub fn set_hart(hart: &'static mut HartLocal) {
    let r = csr::MSCRATCH.read() as *mut HartRoot;
    // SAFETY: mscratch points at this hart's own root, whose `hart` word
    // only this hart reads or writes, and never through a reference.
    unsafe { (*r).hart = hart };
}

/// The calling hart's private state, borrowed for one trap (or for the
/// hart's M-mode setup after `set_hart`), to be passed down as `&mut`.
///
/// # Safety
///
/// `set_hart` has run on this hart. At most one borrow from this function
/// is live at a time: it is called once at the entry of a trap (on the
/// fast path, by the one extension function that serves the call; on the
/// full path, by `trap_handler` or the one SBI function that serves the
/// call), on the hart that owns the root, and the borrow does not outlive
/// the trap. M-mode runs with interrupts off, so no trap nests inside
/// another (faults of guarded accesses resume without running a handler);
/// a borrow taken at the hart's setup is not used once the hart enters
/// S-mode.
#[inline(always)]
pub unsafe fn this_hart<'a>() -> &'a mut HartLocal {
    let r = csr::MSCRATCH.read() as *const HartRoot;
    // SAFETY: mscratch points at this hart's root, whose `hart` was set by
    // `set_hart` to this hart's state, which lives for the whole run; the
    // caller guarantees no other borrow of it is live.
    unsafe { &mut *(*r).hart }
}

pub const A0: usize = 10;
pub const A1: usize = 11;

/// Deliver an exception to S-mode (HS-mode when the trap came from a
/// guest) as if it had been delegated: the handler at stvec runs next.
pub fn redirect(ready: Ready, f: &mut TrapFrame, cause: usize, tval: usize) {
    let prev = (f.mstatus & MSTATUS_MPP) >> MSTATUS_MPP_SHIFT;
    if prev == PRV_M {
        crate::power::fatal("exception to redirect came from M-mode", f.mepc);
    }
    if ready
        .platform()
        .hart_features(csr::MHARTID.read())
        .has(Features::H)
    {
        let virt = f.mstatus & MSTATUS_MPV != 0;
        let mut hs = csr::HSTATUS.read();
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
        csr::HSTATUS.write(hs);
        csr::HTVAL.write(0); // htval
        csr::HTINST.write(0); // htinst
        f.mstatus &= !MSTATUS_MPV;
    }
    csr::SCAUSE.write(cause);
    csr::STVAL.write(tval);
    csr::SEPC.write(f.mepc);
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
    f.mepc = csr::STVEC.read() & !3;
}

extern "C" {
    /// Leave M-mode for S-mode at `entry` with a0 = `a0`, a1 = `a1`,
    /// satp = 0 and interrupts disabled in S.
    pub fn enter_supervisor(a0: usize, a1: usize, entry: usize) -> !;
}

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
    clear = const rvpmu_rt::csr::MSTATUS_MPP | rvpmu_rt::csr::MSTATUS_MPIE | rvpmu_rt::csr::MSTATUS_SIE
        | rvpmu_rt::csr::MSTATUS_SPIE | MSTATUS_MPRV | rvpmu_rt::csr::MSTATUS_MPV,
    set = const rvpmu_rt::csr::PRV_S << rvpmu_rt::csr::MSTATUS_MPP_SHIFT,
);

/// Result of a guarded access: `cause` is 0 on success, else the mcause of
/// the fault (the access had no effect then).
#[repr(C)]
struct Guarded {
    value: usize,
    cause: usize,
}

// Guarded accesses in the privilege and translation of the trapped context:
// MPRV and `a1`'s extra bits are added to mstatus, whose MPP/MPV the trap
// set to that context (handlers change the context's mstatus only in the
// frame, which the trap exit writes back), the access runs, mstatus is put
// back. A fault resumes at the local label 1 with a1 = mcause. Besides
// the access they write only the root's `recover` word, outside the trap
// frame (`HartRoot`), and read no memory.
macro_rules! guarded_access {
    ($name:literal, $access:literal) => {
        core::arch::global_asm!(
            ".section .text",
            ".balign 4",
            concat!(".globl ", $name),
            concat!($name, ":"),
            "   csrr t2, mscratch",
            "   csrr t1, mstatus",
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
            recover = const offset_of!(HartRoot, recover),
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

impl Guarded {
    fn result(self) -> Result<usize, usize> {
        if self.cause == 0 {
            Ok(self.value)
        } else {
            Err(self.cause)
        }
    }
}

// The accesses below act as the trapped context would. Each takes that
// context's frame, which only a trap handler on the full path has: the SBI
// fast path has no frame, and there `scratch` holds the caller's t0, which
// a fault would overwrite. The frame itself is not touched.
//
// GUARDED (the safety of each call): the access runs with the trapped
// context's privilege and translation (MPRV), so it reaches only what that
// context may reach; a fault resumes in the routine with its cause instead
// of running a handler; and the routine and the fault path of the trap
// entry write only the root's `recover` and `scratch`, which no Rust
// reference covers, so the caller's `&TrapFrame` (and the `&mut` it was
// borrowed from) stay valid.

/// Load a byte as the trapped context would.
pub fn load_u8(_frame: &TrapFrame, addr: usize) -> Result<u8, usize> {
    // SAFETY: see GUARDED.
    let r = unsafe { guarded_lbu(addr, 0) };
    r.result().map(|v| v as u8)
}

/// Load a doubleword as the trapped context would (must be 8-byte aligned).
pub fn load_u64(_frame: &TrapFrame, addr: usize) -> Result<u64, usize> {
    // SAFETY: see GUARDED.
    let r = unsafe { guarded_ld(addr, 0) };
    r.result().map(|v| v as u64)
}

/// Store a byte as the trapped context would.
pub fn store_u8(_frame: &TrapFrame, addr: usize, value: u8) -> Result<(), usize> {
    // SAFETY: see GUARDED.
    let r = unsafe { guarded_sb(addr, 0, value as usize) };
    r.result().map(|_| ())
}

/// Fetch the (possibly compressed) instruction at `pc` of the trapped
/// context, reading execute-only pages too (MXR). Returns its bits.
pub fn fetch_insn(_frame: &TrapFrame, pc: usize) -> Result<u32, usize> {
    // SAFETY: see GUARDED.
    let lo = unsafe { guarded_lhu(pc, MSTATUS_MXR) }.result()?;
    if lo & 3 != 3 {
        return Ok(lo as u32);
    }
    // SAFETY: see GUARDED.
    let hi = unsafe { guarded_lhu(pc + 2, MSTATUS_MXR) }.result()?;
    Ok((lo | hi << 16) as u32)
}
