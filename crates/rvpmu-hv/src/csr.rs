//! CSR access and the bits the hypervisor uses. The hypervisor and VS CSRs
//! are written by number, so the assembler needs no H support.

/// Read a CSR by name or number.
macro_rules! csr_read {
    ($csr:tt) => {{
        let v: usize;
        // SAFETY: reading a CSR has no memory effects.
        unsafe { core::arch::asm!(concat!("csrr {0}, ", stringify!($csr)), out(reg) v) };
        v
    }};
}
/// Write a CSR by name or number.
macro_rules! csr_write {
    ($csr:tt, $v:expr) => {{
        let v: usize = $v;
        // SAFETY: HS-mode owns these CSRs; no CSR the hypervisor writes
        // changes how its own memory accesses are translated (satp stays
        // 0; hgatp and vsatp act only with V=1).
        unsafe { core::arch::asm!(concat!("csrw ", stringify!($csr), ", {0}"), in(reg) v) };
    }};
}
/// Set bits in a CSR.
macro_rules! csr_set {
    ($csr:tt, $v:expr) => {{
        let v: usize = $v;
        // SAFETY: as csr_write.
        unsafe { core::arch::asm!(concat!("csrs ", stringify!($csr), ", {0}"), in(reg) v) };
    }};
}
/// Clear bits in a CSR.
macro_rules! csr_clear {
    ($csr:tt, $v:expr) => {{
        let v: usize = $v;
        // SAFETY: as csr_write.
        unsafe { core::arch::asm!(concat!("csrc ", stringify!($csr), ", {0}"), in(reg) v) };
    }};
}
pub(crate) use {csr_clear, csr_read, csr_set, csr_write};

// Hypervisor and VS CSR numbers (privileged spec, "Hypervisor Extension").
// hstatus 0x600, hedeleg 0x602, hideleg 0x603, hie 0x604, htimedelta
// 0x605, hcounteren 0x606, henvcfg 0x60a, htval 0x643, hvip 0x645, hvien 0x608 (AIA), htinst
// 0x64a, hgatp 0x680, vsstatus 0x200, vsie 0x204, vstvec 0x205, vsepc
// 0x241, vscause 0x242, vstval 0x243, vstimecmp 0x24d, vsatp 0x280: used
// as literals at the call sites (csr_read!/csr_write! take tokens).

pub const SSTATUS_SIE: usize = 1 << 1;
pub const SSTATUS_SPIE: usize = 1 << 5;
pub const SSTATUS_SPP: usize = 1 << 8;
pub const SSTATUS_FS: usize = 3 << 13;

pub const HSTATUS_SPV: usize = 1 << 7;
pub const HSTATUS_SPVP: usize = 1 << 8;
pub const HSTATUS_HU: usize = 1 << 9;
pub const HSTATUS_VTVM: usize = 1 << 20;
pub const HSTATUS_VTW: usize = 1 << 21;
pub const HSTATUS_VTSR: usize = 1 << 22;

pub const HENVCFG_STCE: usize = 1 << 63;

/// VS-level interrupts (hideleg, hvip): software, timer, external.
pub const VS_INTERRUPTS: usize = 1 << 2 | 1 << 6 | 1 << 10;

/// The local counter overflow interrupt (Sscofpmf's LCOFI), in sie/sip,
/// hvien and hvip.
pub const IRQ_LCOF: usize = 13;
/// The supervisor (HS) timer interrupt, from Sstc's stimecmp.
pub const IRQ_STIMER: usize = 5;

/// hcounteren: the guest reads cycle, time and instret directly.
pub const COUNTEREN_CY_TM_IR: usize = 0b111;

pub const CAUSE_MISALIGNED_FETCH: usize = 0;
pub const CAUSE_ILLEGAL_INSN: usize = 2;
pub const CAUSE_BREAKPOINT: usize = 3;
pub const CAUSE_USER_ECALL: usize = 8;
pub const CAUSE_VS_ECALL: usize = 10;
pub const CAUSE_FETCH_PAGE_FAULT: usize = 12;
pub const CAUSE_LOAD_PAGE_FAULT: usize = 13;
pub const CAUSE_STORE_PAGE_FAULT: usize = 15;
pub const CAUSE_FETCH_GUEST_PAGE_FAULT: usize = 20;
pub const CAUSE_LOAD_GUEST_PAGE_FAULT: usize = 21;
pub const CAUSE_VIRTUAL_INSN: usize = 22;
pub const CAUSE_STORE_GUEST_PAGE_FAULT: usize = 23;

/// hfence.gvma zero, zero: forget every guest-physical translation
/// (encoded, so the assembler needs no H support).
pub fn hfence_gvma_all() {
    // SAFETY: a fence; it only invalidates cached G-stage translations.
    unsafe { core::arch::asm!(".word 0x62000073") };
}
