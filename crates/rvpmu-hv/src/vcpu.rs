//! The one vCPU: the guest's registers (saved and restored by the trap
//! vector in `entry.rs`) and what serves its SBI calls. It lives in one
//! static, reached in three ways only: `install` writes it once before the
//! guest first runs, the trap vector passes a pointer to it to
//! `trap::hv_trap` (which makes the one `&mut` of the trap), and
//! `entry::run_guest` hands that pointer to the hardware (sscratch).

use crate::csr::csr_write;
use core::cell::UnsafeCell;
use core::mem::{offset_of, MaybeUninit};
use rvpmu::supervisor::Ecall;
use rvpmu_hv::sbi::{GuestSbi, VsTimer};

/// The guest's general registers and pc, as the trap vector saves them.
#[repr(C)]
pub struct GuestRegs {
    /// x0..x31 (x0's slot unused).
    pub x: [usize; 32],
    /// Where the guest resumes (sepc).
    pub pc: usize,
}

/// Offset of `pc` in `GuestRegs`, for the trap vector.
pub const PC_OFFSET: usize = offset_of!(GuestRegs, pc);

pub const A0: usize = 10;
pub const A1: usize = 11;

/// The guest's timer: `vstimecmp`, compared by the hart with
/// time + htimedelta (0), which raises VSTIP for the guest itself.
pub struct VsTimecmp;

impl VsTimer for VsTimecmp {
    fn set_timer(&mut self, stime_value: u64) {
        csr_write!(0x24d, stime_value as usize);
    }
}

/// A vCPU: registers first (the trap vector addresses them from the
/// struct's start), then its SBI.
#[repr(C)]
pub struct Vcpu {
    pub regs: GuestRegs,
    pub sbi: GuestSbi<Ecall, VsTimecmp>,
}

struct Slot(UnsafeCell<MaybeUninit<Vcpu>>);

// SAFETY: one hart runs the hypervisor; the slot is written once by
// `install` before any trap can reach it, then only through the pointer
// the trap vector passes (one trap at a time: HS-mode runs with
// interrupts off and a trap in HS-mode never touches the vCPU).
unsafe impl Sync for Slot {}

static VCPU: Slot = Slot(UnsafeCell::new(MaybeUninit::uninit()));

/// Put the vCPU in its slot and return the pointer the trap vector uses.
///
/// # Safety
///
/// Called once, before the guest first runs; the caller keeps no
/// reference into the slot (the pointer is only given to `run_guest`).
pub unsafe fn install(v: Vcpu) -> *mut Vcpu {
    // SAFETY: the caller's contract: nothing else refers to the slot yet.
    unsafe { (*VCPU.0.get()).write(v) as *mut Vcpu }
}
