//! The vCPUs, one per guest: the guest's registers (saved and restored by
//! the trap vector in `entry.rs`), its VS-mode state while another guest
//! has the hart (`guests.rs`), and what serves its SBI calls. Each lives
//! in a static slot, reached in these ways only: `install` writes it
//! once before any guest runs, the trap vector passes a pointer to the
//! running one to `trap::hv_trap` (which makes the one `&mut` of the
//! trap, handed on to `guests.rs` when the hart changes guests), and
//! `entry::run_guest` hands that pointer to the hardware (sscratch).

use crate::counters::HsCounters;
use crate::csr::{csr_set, csr_write};
use core::cell::UnsafeCell;
use core::mem::{offset_of, MaybeUninit};
use rvpmu::supervisor::Ecall;
use rvpmu_hv::options::MAX_GUESTS;
use rvpmu_hv::ram::GuestMemory;
use rvpmu_hv::sbi::{GuestSbi, VsHart};
use rvpmu_hv::vpmu::HostHpm;

/// The guest's PMU: the engine over host counters, its shared memory
/// guest-physical.
pub type GuestPmu = rvpmu::Pmu<'static, HostHpm<Ecall, HsCounters>, GuestMemory>;

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

/// The guest's hart as this hart's VS CSRs: the timer is `vstimecmp`
/// (compared by the hart with time + htimedelta, 0, raising VSTIP for the
/// guest itself), the software interrupt hvip.VSSIP (the guest clears it
/// through its own sip), fences run here.
pub struct VsCsrs;

impl VsHart for VsCsrs {
    fn set_timer(&mut self, stime_value: u64) {
        csr_write!(0x24d, stime_value as usize);
    }
    fn send_ipi(&mut self) {
        csr_set!(0x645, 1 << 2);
    }
    fn fence_i(&mut self) {
        // SAFETY: a fence; no memory effects beyond ordering.
        unsafe { core::arch::asm!("fence.i") };
    }
    fn flush_guest_tlb(&mut self) {
        // hfence.vvma zero, zero: every VS-stage translation of the VMID
        // in hgatp (the guest's), encoded for an assembler without H.
        // SAFETY: a fence; it only invalidates cached translations.
        unsafe { core::arch::asm!(".word 0x22000073") };
    }
}

/// A vCPU: registers first (the trap vector addresses them from the
/// struct's start), then its SBI.
#[repr(C)]
pub struct Vcpu {
    pub regs: GuestRegs,
    /// Which guest (0..): its slot, its VMID - 1, its console tag.
    pub id: usize,
    /// Its VS CSRs and FP registers while another guest has the hart.
    pub vs: crate::guests::VsState,
    pub sbi: GuestSbi<Ecall, VsCsrs, GuestPmu>,
    /// The counter switch path, measured every 1 ms of host time
    /// (host command line `rvpmu-hv.switch=1ms`; `switch.rs`).
    pub switch: Option<crate::switch::Switch>,
}

struct Slot(UnsafeCell<MaybeUninit<Vcpu>>);

// SAFETY: one hart runs the hypervisor; a slot is written once by
// `install` before any trap can reach it, then only through the pointers
// the trap vector and the scheduler pass (one trap at a time: HS-mode
// runs with interrupts off and a trap in HS-mode never touches a vCPU).
unsafe impl Sync for Slot {}

static VCPUS: [Slot; MAX_GUESTS] =
    [const { Slot(UnsafeCell::new(MaybeUninit::uninit())) }; MAX_GUESTS];

/// Put vCPU `v.id` in its slot and return the pointer the trap vector
/// and the scheduler use.
///
/// # Safety
///
/// Called once per slot, before any guest runs; the caller keeps no
/// reference into the slot (the pointer goes only to `run_guest` and
/// the scheduler).
pub unsafe fn install(v: Vcpu) -> *mut Vcpu {
    let slot = &VCPUS[v.id];
    // SAFETY: the caller's contract: nothing else refers to the slot yet.
    unsafe { (*slot.0.get()).write(v) as *mut Vcpu }
}
