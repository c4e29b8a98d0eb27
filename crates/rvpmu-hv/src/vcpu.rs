//! The vCPUs, one per guest: the guest's registers (saved and restored by
//! the trap vector in `entry.rs`), its VS-mode state while another guest
//! has the hart ([`VsState`]), and what serves its SBI calls. Each lives
//! in a static slot, reached in these ways only: `install` writes it
//! once before any guest runs, the trap vector passes a pointer to the
//! running one to `trap::hv_trap` (which makes the one `&mut` of the
//! trap, handed on to `guests.rs` when the hart changes guests), and
//! `entry::run_guest` hands that pointer to the hardware (sscratch).
#![cfg(target_os = "none")]

use crate::counters::GuestPmu;
use crate::switch::Switch;
use core::cell::UnsafeCell;
use core::mem::{offset_of, MaybeUninit};
use rvpmu_hv::options::MAX_GUESTS;
use rvpmu_hv::sbi::{GuestSbi, VsHart};
use rvpmu_rt::csr::{self, HSTATUS_SPVP, IRQ_VS_SOFT, SSTATUS_SPP};
use rvpmu_sbi::client::Ecall;

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
        csr::VSTIMECMP.write(stime_value as usize);
    }
    fn send_ipi(&mut self) {
        csr::HVIP.set(1 << IRQ_VS_SOFT);
    }
    fn fence_i(&mut self) {
        // SAFETY: a fence; no memory effects beyond ordering.
        unsafe { core::arch::asm!("fence.i") };
    }
    fn flush_guest_tlb(&mut self) {
        // Every VS-stage translation of the VMID in hgatp (the guest's).
        csr::hfence_vvma_all();
    }
}

/// A vCPU's VS-mode state while it does not have the hart.
pub struct VsState {
    /// vsstatus, vsie, vstvec, vsscratch, vsepc, vscause, vstval, vsatp,
    /// vstimecmp, hvip (the order of `vs_csrs!`).
    csr: [usize; 10],
    /// hstatus.SPVP and sstatus.SPP of its last trap (where `sret` goes).
    spvp_spp: (bool, bool),
    fp: [u64; 32],
    fcsr: usize,
}

/// Calls `$m!` with the VS CSRs in `VsState::csr` order.
macro_rules! vs_csrs {
    ($m:ident, $($args:tt)*) => {
        $m!($($args)* 0 => VSSTATUS, 1 => VSIE, 2 => VSTVEC, 3 => VSSCRATCH, 4 => VSEPC,
            5 => VSCAUSE, 6 => VSTVAL, 7 => VSATP, 8 => VSTIMECMP, 9 => HVIP)
    };
}
macro_rules! save_csrs {
    ($a:ident; $($i:literal => $c:ident),*) => { $($a[$i] = csr::$c.read();)* };
}
macro_rules! load_csrs {
    ($a:ident; $($i:literal => $c:ident),*) => { $(csr::$c.write($a[$i]);)* };
}

/// `OP fN, N*8({p})` for each FP register number N given, in order, or
/// for all 32 when only `OP` is: register N's slot is `fp[N]`.
macro_rules! fp_slots {
    ($op:literal) => {
        fp_slots!(
            $op, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
            23, 24, 25, 26, 27, 28, 29, 30, 31
        )
    };
    ($op:literal, $($n:literal),+) => {
        concat!($("   ", $op, " f", $n, ", ", $n, "*8({p})\n"),+)
    };
}

impl VsState {
    /// A guest that has not run yet: VS-mode at its entry, `vsstatus`
    /// as given (its FP state), no timer, nothing pending.
    pub const fn initial(vsstatus: usize) -> VsState {
        let mut csr = [0; 10];
        csr[0] = vsstatus;
        csr[8] = usize::MAX;
        VsState {
            csr,
            spvp_spp: (true, true),
            fp: [0; 32],
            fcsr: 0,
        }
    }

    /// Keep the hart's VS state (the vCPU is leaving the hart).
    pub fn save(&mut self) {
        let a = &mut self.csr;
        vs_csrs!(save_csrs, a;);
        self.spvp_spp = (
            csr::HSTATUS.read() & HSTATUS_SPVP != 0,
            csr::SSTATUS.read() & SSTATUS_SPP != 0,
        );
        let fp = self.fp.as_mut_ptr();
        // SAFETY: stores the 32 FP registers into `self.fp` (32 u64s);
        // sstatus.FS is on in HS-mode (boot), so they are accessible.
        unsafe { core::arch::asm!(fp_slots!("fsd"), p = in(reg) fp) };
        self.fcsr = csr::FCSR.read();
    }

    /// Put the state back on the hart (the vCPU is about to run).
    pub fn load(&self) {
        let a = &self.csr;
        vs_csrs!(load_csrs, a;);
        let (spvp, spp) = self.spvp_spp;
        if spvp {
            csr::HSTATUS.set(HSTATUS_SPVP);
        } else {
            csr::HSTATUS.clear(HSTATUS_SPVP);
        }
        if spp {
            csr::SSTATUS.set(SSTATUS_SPP);
        } else {
            csr::SSTATUS.clear(SSTATUS_SPP);
        }
        let fp = self.fp.as_ptr();
        // SAFETY: loads the 32 FP registers from `self.fp`; the
        // hypervisor itself keeps nothing in FP registers.
        unsafe { core::arch::asm!(fp_slots!("fld"), p = in(reg) fp) };
        csr::FCSR.write(self.fcsr);
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
    pub vs: VsState,
    pub sbi: GuestSbi<Ecall, VsCsrs, GuestPmu>,
    /// The counter switch path, measured every 1 ms of host time
    /// (host command line `rvpmu-hv.switch=1ms`; `switch.rs`).
    pub switch: Option<Switch>,
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
