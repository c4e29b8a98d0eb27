//! CSR access and the bit definitions the firmware uses.

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
        // SAFETY: M-mode owns the CSRs; callers keep their invariants.
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

// CSR numbers the assembler may not know by name.
// 0x14d stimecmp, 0x30a menvcfg, 0x320 mcountinhibit, 0x600 hstatus,
// 0x680 hgatp, 0x34a mtinst, 0x34b mtval2 are used as literals at call sites.

pub const MSTATUS_SIE: usize = 1 << 1;
pub const MSTATUS_SPIE: usize = 1 << 5;
pub const MSTATUS_MPIE: usize = 1 << 7;
pub const MSTATUS_SPP: usize = 1 << 8;
pub const MSTATUS_MPP_SHIFT: usize = 11;
pub const MSTATUS_MPP: usize = 3 << MSTATUS_MPP_SHIFT;
pub const MSTATUS_MPRV: usize = 1 << 17;
pub const MSTATUS_MXR: usize = 1 << 19;
pub const MSTATUS_MPV: usize = 1 << 39;

pub const HSTATUS_SPV: usize = 1 << 7;
pub const HSTATUS_SPVP: usize = 1 << 8;

/// Privilege levels as found in mstatus.MPP.
pub const PRV_S: usize = 1;
pub const PRV_M: usize = 3;

pub const IRQ_S_SOFT: usize = 1;
pub const IRQ_M_SOFT: usize = 3;
pub const IRQ_S_TIMER: usize = 5;
pub const IRQ_M_TIMER: usize = 7;
pub const IRQ_S_EXT: usize = 9;
pub const IRQ_LCOF: usize = 13;

pub const MIP_SSIP: usize = 1 << IRQ_S_SOFT;
pub const MIP_MSIP: usize = 1 << IRQ_M_SOFT;
pub const MIP_STIP: usize = 1 << IRQ_S_TIMER;
pub const MIP_MTIP: usize = 1 << IRQ_M_TIMER;
pub const MIP_SEIP: usize = 1 << IRQ_S_EXT;
pub const MIP_LCOFIP: usize = 1 << IRQ_LCOF;

pub const CAUSE_MISALIGNED_FETCH: usize = 0;
pub const CAUSE_ILLEGAL_INSN: usize = 2;
pub const CAUSE_BREAKPOINT: usize = 3;
pub const CAUSE_MISALIGNED_LOAD: usize = 4;
pub const CAUSE_LOAD_ACCESS: usize = 5;
pub const CAUSE_MISALIGNED_STORE: usize = 6;
pub const CAUSE_STORE_ACCESS: usize = 7;
pub const CAUSE_USER_ECALL: usize = 8;
pub const CAUSE_SUPERVISOR_ECALL: usize = 9;
pub const CAUSE_VS_ECALL: usize = 10;
pub const CAUSE_FETCH_PAGE_FAULT: usize = 12;
pub const CAUSE_LOAD_PAGE_FAULT: usize = 13;
pub const CAUSE_STORE_PAGE_FAULT: usize = 15;
pub const CAUSE_FETCH_GUEST_PAGE_FAULT: usize = 20;
pub const CAUSE_LOAD_GUEST_PAGE_FAULT: usize = 21;
pub const CAUSE_VIRTUAL_INSN: usize = 22;
pub const CAUSE_STORE_GUEST_PAGE_FAULT: usize = 23;

pub const MENVCFG_CBIE_INV: usize = 3 << 4;
pub const MENVCFG_CBCFE: usize = 1 << 6;
pub const MENVCFG_CBZE: usize = 1 << 7;
pub const MENVCFG_ADUE: usize = 1 << 61;
pub const MENVCFG_PBMTE: usize = 1 << 62;
pub const MENVCFG_STCE: usize = 1 << 63;

/// The calling hart's id.
#[inline(always)]
pub fn hartid() -> usize {
    csr_read!(mhartid)
}
