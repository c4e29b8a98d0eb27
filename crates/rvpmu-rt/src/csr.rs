//! Control and status registers by name: each CSR is a zero-sized value
//! of type [`Csr<N>`] (its number `N`), so a call site says
//! `STIMECMP.write(t)` and the number lives here once. The methods are
//! `#[inline(always)]` and emit exactly one `csrr`/`csrw`/`csrs`/`csrc`/
//! `csrrw` with the number as an immediate (the assembler needs no
//! extension to know the name), with no `asm!` options, i.e. with the
//! same ordering against memory accesses as a hand-written `asm!`.
//!
//! # Why the accesses are safe functions
//!
//! Reading a CSR has no memory effects (a read the current privilege may
//! not make traps, which is no memory-safety matter). Writing one is
//! safe here because no CSR named with a [`Csr`] changes how the
//! running program's own memory accesses are translated or checked; the
//! argument differs by privilege:
//!
//! - the M-mode firmware (rvpmu-fw) owns every CSR; its own accesses are
//!   untranslated whatever satp says, PMP entries without the lock bit do
//!   not bind M-mode, and the one field that would change them
//!   (mstatus.MPRV, with MPP and MXR) is [`MSTATUS`], a [`Guarded`]
//!   register, changed only in the firmware's assembly around a guarded
//!   access;
//! - the HS-mode hypervisor (rvpmu-hv) runs with satp = 0 (its own
//!   [`SATP`] is never written); hgatp, vsatp and the other VS and H
//!   registers act only with V = 1, i.e. on the guest's accesses;
//! - the S-mode test kernels (conformance, sbi-check, vs-check) run with
//!   satp = 0 and write only interrupt, trap and timer registers.
//!
//! Registers that do change the writer's own translation, [`SATP`] and
//! [`MSTATUS`], are [`Guarded`]: reading is safe, writing is `unsafe`.

/// The CSR numbered `N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Csr<const N: u16>;

/// The CSR numbered `N`, whose writes can change how the writer's own
/// memory accesses are translated or checked (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Guarded<const N: u16>;

impl<const N: u16> Csr<N> {
    /// Its number.
    #[inline(always)]
    pub const fn num(self) -> u16 {
        N
    }
}

impl<const N: u16> Guarded<N> {
    /// Its number.
    #[inline(always)]
    pub const fn num(self) -> u16 {
        N
    }
}

#[cfg(target_arch = "riscv64")]
impl<const N: u16> Csr<N> {
    /// `csrr`.
    #[inline(always)]
    pub fn read(self) -> usize {
        let v: usize;
        // SAFETY: reading a CSR has no memory effects (module doc).
        unsafe { core::arch::asm!("csrr {0}, {n}", out(reg) v, n = const N) };
        v
    }

    /// `csrw`.
    #[inline(always)]
    pub fn write(self, v: usize) {
        // SAFETY: no `Csr` changes the writer's own translation; the
        // argument per privilege is the module doc's.
        unsafe { core::arch::asm!("csrw {n}, {0}", in(reg) v, n = const N) };
    }

    /// `csrs`: set the bits of `v`.
    #[inline(always)]
    pub fn set(self, v: usize) {
        // SAFETY: as `write`.
        unsafe { core::arch::asm!("csrs {n}, {0}", in(reg) v, n = const N) };
    }

    /// `csrc`: clear the bits of `v`.
    #[inline(always)]
    pub fn clear(self, v: usize) {
        // SAFETY: as `write`.
        unsafe { core::arch::asm!("csrc {n}, {0}", in(reg) v, n = const N) };
    }

    /// `csrrw`: write `v`, return the old value.
    #[inline(always)]
    pub fn swap(self, v: usize) -> usize {
        let old: usize;
        // SAFETY: as `write`.
        unsafe { core::arch::asm!("csrrw {0}, {n}, {1}", out(reg) old, in(reg) v, n = const N) };
        old
    }
}

#[cfg(target_arch = "riscv64")]
impl<const N: u16> Guarded<N> {
    /// `csrr`.
    #[inline(always)]
    pub fn read(self) -> usize {
        let v: usize;
        // SAFETY: reading a CSR has no memory effects.
        unsafe { core::arch::asm!("csrr {0}, {n}", out(reg) v, n = const N) };
        v
    }

    /// `csrw`.
    ///
    /// # Safety
    ///
    /// The new value keeps every live reference of the program valid:
    /// its memory stays reachable at the same addresses with the same
    /// permissions.
    #[inline(always)]
    pub unsafe fn write(self, v: usize) {
        // SAFETY: the caller's contract.
        unsafe { core::arch::asm!("csrw {n}, {0}", in(reg) v, n = const N) };
    }
}

macro_rules! csrs {
    ($($(#[$doc:meta])* $name:ident = $num:literal;)*) => {
        $($(#[$doc])* pub const $name: Csr<$num> = Csr;)*
    };
}

// Unprivileged.
csrs! {
    /// Floating-point control and status.
    FCSR = 0x003;
    /// Cycle counter (read-only shadow).
    CYCLE = 0xc00;
    /// Timer (read-only shadow of mtime).
    TIME = 0xc01;
    /// Instructions-retired counter (read-only shadow).
    INSTRET = 0xc02;
    /// The first programmable counter (read-only shadow).
    HPMCOUNTER3 = 0xc03;
}

// Supervisor.
csrs! {
    /// Supervisor status.
    SSTATUS = 0x100;
    /// Supervisor interrupt enable.
    SIE = 0x104;
    /// Supervisor trap vector.
    STVEC = 0x105;
    /// Supervisor scratch.
    SSCRATCH = 0x140;
    /// Supervisor exception pc.
    SEPC = 0x141;
    /// Supervisor trap cause.
    SCAUSE = 0x142;
    /// Supervisor trap value.
    STVAL = 0x143;
    /// Supervisor interrupt pending.
    SIP = 0x144;
    /// Supervisor timer compare (Sstc).
    STIMECMP = 0x14d;
    /// Counter overflow bits (Sscofpmf, read-only).
    SCOUNTOVF = 0xda0;
}

/// Supervisor address translation and protection.
pub const SATP: Guarded<0x180> = Guarded;

// Virtual supervisor (the guest's S registers, from HS-mode).
csrs! {
    /// Virtual supervisor status.
    VSSTATUS = 0x200;
    /// Virtual supervisor interrupt enable.
    VSIE = 0x204;
    /// Virtual supervisor trap vector.
    VSTVEC = 0x205;
    /// Virtual supervisor scratch.
    VSSCRATCH = 0x240;
    /// Virtual supervisor exception pc.
    VSEPC = 0x241;
    /// Virtual supervisor trap cause.
    VSCAUSE = 0x242;
    /// Virtual supervisor trap value.
    VSTVAL = 0x243;
    /// Virtual supervisor interrupt pending.
    VSIP = 0x244;
    /// Virtual supervisor timer compare (Sstc).
    VSTIMECMP = 0x24d;
    /// Virtual supervisor address translation.
    VSATP = 0x280;
}

// Hypervisor.
csrs! {
    /// Hypervisor status.
    HSTATUS = 0x600;
    /// Hypervisor exception delegation.
    HEDELEG = 0x602;
    /// Hypervisor interrupt delegation.
    HIDELEG = 0x603;
    /// Hypervisor interrupt enable.
    HIE = 0x604;
    /// Guest time offset.
    HTIMEDELTA = 0x605;
    /// Hypervisor counter enable.
    HCOUNTEREN = 0x606;
    /// Hypervisor virtual interrupt enables (AIA).
    HVIEN = 0x608;
    /// Hypervisor environment configuration.
    HENVCFG = 0x60a;
    /// Hypervisor trap value (guest-physical address >> 2).
    HTVAL = 0x643;
    /// Hypervisor virtual interrupt pending.
    HVIP = 0x645;
    /// Hypervisor trap instruction.
    HTINST = 0x64a;
    /// Hypervisor guest address translation (G-stage root, VMID).
    HGATP = 0x680;
}

// Machine.
csrs! {
    /// Vendor id (read-only).
    MVENDORID = 0xf11;
    /// Architecture id (read-only).
    MARCHID = 0xf12;
    /// Implementation id (read-only).
    MIMPID = 0xf13;
    /// Hart id (read-only).
    MHARTID = 0xf14;
    /// Machine exception delegation.
    MEDELEG = 0x302;
    /// Machine interrupt delegation.
    MIDELEG = 0x303;
    /// Machine interrupt enable.
    MIE = 0x304;
    /// Machine trap vector.
    MTVEC = 0x305;
    /// Machine counter enable.
    MCOUNTEREN = 0x306;
    /// Machine environment configuration.
    MENVCFG = 0x30a;
    /// Machine counter inhibit.
    MCOUNTINHIBIT = 0x320;
    /// Machine scratch.
    MSCRATCH = 0x340;
    /// Machine exception pc.
    MEPC = 0x341;
    /// Machine trap cause.
    MCAUSE = 0x342;
    /// Machine trap value.
    MTVAL = 0x343;
    /// Machine interrupt pending.
    MIP = 0x344;
    /// Machine trap instruction (H).
    MTINST = 0x34a;
    /// Machine second trap value (H: guest-physical address >> 2).
    MTVAL2 = 0x34b;
    /// PMP configuration of entries 0-7.
    PMPCFG0 = 0x3a0;
    /// PMP address 0.
    PMPADDR0 = 0x3b0;
    /// PMP address 1.
    PMPADDR1 = 0x3b1;
}

/// Machine status.
pub const MSTATUS: Guarded<0x300> = Guarded;

/// Number of `cycle`, counter 0 of the user counters: `hpmcounterN` is
/// `HPMCOUNTER_BASE + N`.
pub const HPMCOUNTER_BASE: u16 = CYCLE.num();
/// Number of `mcycle`, counter 0: `mhpmcounterN` is `MHPMCOUNTER_BASE + N`.
pub const MHPMCOUNTER_BASE: u16 = 0xb00;
/// `mhpmeventN` (N in 3..=31) is `MHPMEVENT_BASE + N`.
pub const MHPMEVENT_BASE: u16 = 0x320;

/// A match from the index 3..=31 to `$op` on the CSR `$base` + index
/// (`asm!` needs the number as a constant: one arm per counter).
#[cfg(target_arch = "riscv64")]
macro_rules! indexed {
    ($i:expr, $base:expr, $op:ident) => {
        indexed!(@ $i, $base, $op; 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23
            24 25 26 27 28 29 30 31)
    };
    (@ $i:expr, $base:expr, $op:ident; $($n:literal)*) => {
        match $i {
            $($n => Csr::<{ $base + $n }>.$op(),)*
            _ => 0,
        }
    };
}

/// `hpmcounterN` for N in 3..=31 (0 for any other N).
#[cfg(target_arch = "riscv64")]
#[inline(always)]
pub fn read_hpmcounter(n: usize) -> usize {
    indexed!(n, HPMCOUNTER_BASE, read)
}

/// The user counter CSR numbered `num` (cycle, time, instret,
/// hpmcounter3..31: 0xc00..=0xc1f, as the SBI PMU's counter_get_info
/// names them), or `None` for any other number.
#[cfg(target_arch = "riscv64")]
pub fn read_counter(num: u16) -> Option<usize> {
    Some(match num.checked_sub(HPMCOUNTER_BASE)? {
        0 => CYCLE.read(),
        1 => TIME.read(),
        2 => INSTRET.read(),
        i @ 3..=31 => read_hpmcounter(i as usize),
        _ => return None,
    })
}

// Bits.

/// mstatus.SIE.
pub const MSTATUS_SIE: usize = 1 << 1;
/// mstatus.SPIE.
pub const MSTATUS_SPIE: usize = 1 << 5;
/// mstatus.MPIE.
pub const MSTATUS_MPIE: usize = 1 << 7;
/// mstatus.SPP.
pub const MSTATUS_SPP: usize = 1 << 8;
/// Shift of mstatus.MPP.
pub const MSTATUS_MPP_SHIFT: usize = 11;
/// mstatus.MPP.
pub const MSTATUS_MPP: usize = 3 << MSTATUS_MPP_SHIFT;
/// mstatus.MPRV.
pub const MSTATUS_MPRV: usize = 1 << 17;
/// mstatus.MXR.
pub const MSTATUS_MXR: usize = 1 << 19;
/// mstatus.MPV (H).
pub const MSTATUS_MPV: usize = 1 << 39;

/// sstatus.SIE.
pub const SSTATUS_SIE: usize = 1 << 1;
/// sstatus.SPIE.
pub const SSTATUS_SPIE: usize = 1 << 5;
/// sstatus.SPP.
pub const SSTATUS_SPP: usize = 1 << 8;
/// sstatus.FS.
pub const SSTATUS_FS: usize = 3 << 13;

/// hstatus.SPV.
pub const HSTATUS_SPV: usize = 1 << 7;
/// hstatus.SPVP.
pub const HSTATUS_SPVP: usize = 1 << 8;
/// hstatus.HU.
pub const HSTATUS_HU: usize = 1 << 9;
/// hstatus.VTVM.
pub const HSTATUS_VTVM: usize = 1 << 20;
/// hstatus.VTW.
pub const HSTATUS_VTW: usize = 1 << 21;
/// hstatus.VTSR.
pub const HSTATUS_VTSR: usize = 1 << 22;

/// henvcfg.STCE (Sstc for the guest).
pub const HENVCFG_STCE: usize = 1 << 63;

/// menvcfg.CBIE (cache-block invalidate: invalidate).
pub const MENVCFG_CBIE_INV: usize = 3 << 4;
/// menvcfg.CBCFE.
pub const MENVCFG_CBCFE: usize = 1 << 6;
/// menvcfg.CBZE.
pub const MENVCFG_CBZE: usize = 1 << 7;
/// menvcfg.ADUE.
pub const MENVCFG_ADUE: usize = 1 << 61;
/// menvcfg.PBMTE.
pub const MENVCFG_PBMTE: usize = 1 << 62;
/// menvcfg.STCE.
pub const MENVCFG_STCE: usize = 1 << 63;

/// Privilege level S as found in mstatus.MPP.
pub const PRV_S: usize = 1;
/// Privilege level M as found in mstatus.MPP.
pub const PRV_M: usize = 3;

/// S software interrupt (interrupt numbers are bit positions in
/// mie/mip/sie/sip and the cause code of the interrupt).
pub const IRQ_S_SOFT: usize = 1;
/// VS software interrupt.
pub const IRQ_VS_SOFT: usize = 2;
/// M software interrupt.
pub const IRQ_M_SOFT: usize = 3;
/// S timer interrupt (HS timer under H; Sstc's stimecmp).
pub const IRQ_S_TIMER: usize = 5;
/// VS timer interrupt.
pub const IRQ_VS_TIMER: usize = 6;
/// M timer interrupt.
pub const IRQ_M_TIMER: usize = 7;
/// S external interrupt.
pub const IRQ_S_EXT: usize = 9;
/// VS external interrupt.
pub const IRQ_VS_EXT: usize = 10;
/// Local counter overflow interrupt (Sscofpmf's LCOFI).
pub const IRQ_LCOF: usize = 13;

/// mip/sip.SSIP.
pub const MIP_SSIP: usize = 1 << IRQ_S_SOFT;
/// mip.MSIP.
pub const MIP_MSIP: usize = 1 << IRQ_M_SOFT;
/// mip/sip.STIP.
pub const MIP_STIP: usize = 1 << IRQ_S_TIMER;
/// mip.MTIP.
pub const MIP_MTIP: usize = 1 << IRQ_M_TIMER;
/// mip/sip.SEIP.
pub const MIP_SEIP: usize = 1 << IRQ_S_EXT;
/// mip/sip.LCOFIP.
pub const MIP_LCOFIP: usize = 1 << IRQ_LCOF;
/// The VS-level interrupts (hideleg, hvip): software, timer, external.
pub const VS_INTERRUPTS: usize = 1 << IRQ_VS_SOFT | 1 << IRQ_VS_TIMER | 1 << IRQ_VS_EXT;

/// mcounteren/hcounteren: cycle, time and instret readable below.
pub const COUNTEREN_CY_TM_IR: usize = 0b111;

/// Misaligned instruction fetch (exception cause code).
pub const CAUSE_MISALIGNED_FETCH: usize = 0;
/// Illegal instruction.
pub const CAUSE_ILLEGAL_INSN: usize = 2;
/// Breakpoint.
pub const CAUSE_BREAKPOINT: usize = 3;
/// Misaligned load.
pub const CAUSE_MISALIGNED_LOAD: usize = 4;
/// Load access fault.
pub const CAUSE_LOAD_ACCESS: usize = 5;
/// Misaligned store.
pub const CAUSE_MISALIGNED_STORE: usize = 6;
/// Store access fault.
pub const CAUSE_STORE_ACCESS: usize = 7;
/// Ecall from U (or VU).
pub const CAUSE_USER_ECALL: usize = 8;
/// Ecall from S (HS).
pub const CAUSE_SUPERVISOR_ECALL: usize = 9;
/// Ecall from VS.
pub const CAUSE_VS_ECALL: usize = 10;
/// Instruction page fault.
pub const CAUSE_FETCH_PAGE_FAULT: usize = 12;
/// Load page fault.
pub const CAUSE_LOAD_PAGE_FAULT: usize = 13;
/// Store page fault.
pub const CAUSE_STORE_PAGE_FAULT: usize = 15;
/// Instruction guest-page fault.
pub const CAUSE_FETCH_GUEST_PAGE_FAULT: usize = 20;
/// Load guest-page fault.
pub const CAUSE_LOAD_GUEST_PAGE_FAULT: usize = 21;
/// Virtual instruction.
pub const CAUSE_VIRTUAL_INSN: usize = 22;
/// Store guest-page fault.
pub const CAUSE_STORE_GUEST_PAGE_FAULT: usize = 23;

/// `hfence.gvma zero, zero`: forget every guest-physical translation of
/// every VMID (encoded, so the assembler needs no H support).
#[cfg(target_arch = "riscv64")]
#[inline(always)]
pub fn hfence_gvma_all() {
    // SAFETY: a fence; it only invalidates cached G-stage translations.
    unsafe { core::arch::asm!(".word 0x62000073") };
}

/// `hfence.vvma zero, zero`: forget every VS-stage translation of the
/// VMID in hgatp (encoded, so the assembler needs no H support).
#[cfg(target_arch = "riscv64")]
#[inline(always)]
pub fn hfence_vvma_all() {
    // SAFETY: a fence; it only invalidates cached VS-stage translations.
    unsafe { core::arch::asm!(".word 0x22000073") };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_the_privileged_specs() {
        assert_eq!(STIMECMP.num(), 0x14d);
        assert_eq!(VSTIMECMP.num(), STIMECMP.num() + 0x100);
        assert_eq!(MENVCFG.num(), 0x30a);
        assert_eq!(MCOUNTINHIBIT.num(), 0x320);
        assert_eq!((HSTATUS.num(), HGATP.num()), (0x600, 0x680));
        assert_eq!((MTINST.num(), MTVAL2.num()), (0x34a, 0x34b));
        assert_eq!((HVIEN.num(), HVIP.num()), (0x608, 0x645));
        assert_eq!(SATP.num(), 0x180);
        assert_eq!(MSTATUS.num(), 0x300);
        // The counters: hpmcounter3 is cycle + 3; mhpmevent3 is 0x323.
        assert_eq!(HPMCOUNTER_BASE + 3, 0xc03);
        assert_eq!(MHPMCOUNTER_BASE + 3, 0xb03);
        assert_eq!(MHPMEVENT_BASE + 3, 0x323);
        // The VS registers are the S ones + 0x100.
        for (s, vs) in [
            (SSTATUS.num(), VSSTATUS.num()),
            (SIE.num(), VSIE.num()),
            (STVEC.num(), VSTVEC.num()),
            (SSCRATCH.num(), VSSCRATCH.num()),
            (SEPC.num(), VSEPC.num()),
            (SCAUSE.num(), VSCAUSE.num()),
            (STVAL.num(), VSTVAL.num()),
            (SIP.num(), VSIP.num()),
            (SATP.num(), VSATP.num()),
        ] {
            assert_eq!(s + 0x100, vs, "{s:#x}");
        }
    }

    #[test]
    fn interrupt_bits_are_their_numbers() {
        assert_eq!(VS_INTERRUPTS, 0b100_0100_0100);
        assert_eq!(MIP_LCOFIP, 1 << 13);
        assert_eq!(MIP_STIP | MIP_MTIP, 0xa0);
    }
}
