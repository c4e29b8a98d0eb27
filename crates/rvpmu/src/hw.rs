//! The hardware-counter seam: a hart's counter CSRs behind [`Hpm`].
//!
//! Indices are CSR offsets: 0 `mcycle`, 2 `minstret`, 3..=31
//! `mhpmcounterN` / `mhpmeventN`. The engine only calls these for counters
//! the layout says exist.

/// `mhpmevent` / `mcyclecfg` / `minstretcfg` bits of Sscofpmf / Smcntrpmf.
pub mod bits {
    /// Overflow flag (Sscofpmf, mhpmevent only).
    pub const OF: u64 = 1 << 63;
    /// Inhibit counting in M-mode.
    pub const MINH: u64 = 1 << 62;
    /// Inhibit counting in S/HS-mode.
    pub const SINH: u64 = 1 << 61;
    /// Inhibit counting in U-mode.
    pub const UINH: u64 = 1 << 60;
    /// Inhibit counting in VS-mode.
    pub const VSINH: u64 = 1 << 59;
    /// Inhibit counting in VU-mode.
    pub const VUINH: u64 = 1 << 58;
    /// All privilege-filter bits.
    pub const ALL_INH: u64 = MINH | SINH | UINH | VSINH | VUINH;
}

/// Access to one hart's performance-counter CSRs.
pub trait Hpm {
    /// Which counters exist: bit `i` for CSR offset `i` (0 `mcycle`, 2
    /// `minstret`, 3..=31 `mhpmcounterN`; bit 1, `time`, is ignored). The
    /// engine reads it once, when it is built.
    fn present(&self) -> u32;
    /// Read `mcycle` (0), `minstret` (2) or `mhpmcounterN` (3..=31).
    fn read_counter(&self, i: usize) -> u64;
    /// Write a counter (same indices as `read_counter`).
    fn write_counter(&mut self, i: usize, v: u64);
    /// Read `mhpmeventN` (3..=31).
    fn read_event(&self, i: usize) -> u64;
    /// Write `mhpmeventN` (3..=31).
    fn write_event(&mut self, i: usize, v: u64);
    /// Read `mcountinhibit`.
    fn read_inhibit(&self) -> u32;
    /// Write `mcountinhibit`.
    fn write_inhibit(&mut self, v: u32);
    /// Write `mcyclecfg` (i = 0) or `minstretcfg` (i = 2); Smcntrpmf only.
    fn write_fixed_cfg(&mut self, i: usize, v: u64);
    /// Set `bits` in `mcountinhibit` (stop those counters).
    fn inhibit(&mut self, bits: u32) {
        let v = self.read_inhibit();
        self.write_inhibit(v | bits);
    }
    /// Clear `bits` in `mcountinhibit` (let those counters count).
    fn uninhibit(&mut self, bits: u32) {
        let v = self.read_inhibit();
        self.write_inhibit(v & !bits);
    }
    /// Implemented bits of a present counter, found by writing all ones and
    /// reading back (the counter's value is restored).
    fn probe_width(&mut self, i: usize) -> u8 {
        let old = self.read_counter(i);
        self.write_counter(i, u64::MAX);
        let v = self.read_counter(i);
        self.write_counter(i, old);
        64 - v.leading_zeros() as u8
    }
}

/// The real CSRs of the executing hart: the M-mode backend (feature
/// `csr`; it exists on riscv64 only, so that a workspace that enables it
/// for its firmware still builds its host tools).
#[cfg(all(feature = "csr", target_arch = "riscv64"))]
pub mod csr {
    use super::Hpm;

    /// The executing hart's counters. `present` is the bitmap of counters
    /// that exist (absent `mhpmcounterN` trap on access, so the firmware
    /// finds them with a trap-guarded probe before building this).
    #[derive(Clone, Copy, Debug)]
    pub struct CsrHpm {
        present: u32,
    }

    impl CsrHpm {
        /// # Safety
        /// Must run in M-mode; `present` must only name existing counters.
        pub const unsafe fn new(present: u32) -> CsrHpm {
            CsrHpm { present }
        }
    }

    // Each CSR number must be an immediate, so an access by index enters a
    // table of `csrr`/`csrw` + return pairs (8 bytes each, no compressed
    // instructions) at 8 * index. The routines touch only a0, t0 and ra,
    // and the inline asm that calls them says so: the engine keeps its
    // values in registers across an access (a Rust call would clobber all
    // caller-saved registers and cost spills), and the index's low five
    // bits select the entry, so no index can jump outside a table. Each
    // table is a naked function reached through a `sym` operand, so its
    // symbol is Rust's mangled name: two copies of this crate in one link
    // do not clash.
    macro_rules! csr_table {
        ($name:ident, $op:literal) => {
            csr_table!($name, $op, "");
        };
        ($name:ident, $op:literal, $tail:literal) => {
            /// A CSR access table; entered only through the inline asm
            /// of the accessors below, with the index in a0.
            #[unsafe(naked)]
            unsafe extern "C" fn $name() {
                core::arch::naked_asm!(
                    ".option push",
                    ".option norvc",
                    ".balign 8",
                    "   andi a0, a0, 31",
                    "   slli a0, a0, 3",
                    "1: auipc t0, %pcrel_hi(2f)",
                    "   addi t0, t0, %pcrel_lo(1b)",
                    "   add t0, t0, a0",
                    "   jr t0",
                    ".balign 8",
                    "2:",
                    ".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31",
                    concat!("   ", $op, "\\n", $tail),
                    "   jalr zero, 0(ra)",
                    ".endr",
                    ".option pop",
                );
            }
        };
    }
    // mcycle = 0xB00, mhpmcounterN = 0xB00 + N; mhpmeventN = 0x320 + N.
    csr_table!(csrr_counter, "csrr a0, 0xB00 + ");
    csr_table!(csrw_counter, "csrw 0xB00 + ", ", a1");
    csr_table!(csrr_event, "csrr a0, 0x320 + ");
    csr_table!(csrw_event, "csrw 0x320 + ", ", a1");

    macro_rules! csr_read_fn {
        ($fn_name:ident, $table:ident) => {
            #[inline(always)]
            fn $fn_name(i: usize) -> u64 {
                let v: u64;
                // SAFETY: M-mode CSR read through the table (see above);
                // the asm names every register the routine touches.
                unsafe {
                    core::arch::asm!(
                        "call {table}",
                        table = sym $table,
                        inlateout("a0") i as u64 => v,
                        out("t0") _,
                        out("ra") _,
                        options(nostack),
                    )
                };
                v
            }
        };
    }
    macro_rules! csr_write_fn {
        ($fn_name:ident, $table:ident) => {
            #[inline(always)]
            fn $fn_name(i: usize, v: u64) {
                // SAFETY: M-mode CSR write through the table (see above);
                // the asm names every register the routine touches.
                unsafe {
                    core::arch::asm!(
                        "call {table}",
                        table = sym $table,
                        inlateout("a0") i => _,
                        in("a1") v,
                        out("t0") _,
                        out("ra") _,
                        options(nostack),
                    )
                };
            }
        };
    }
    csr_read_fn!(read_mcounter, csrr_counter);
    csr_write_fn!(write_mcounter, csrw_counter);
    csr_read_fn!(read_mevent, csrr_event);
    csr_write_fn!(write_mevent, csrw_event);

    impl Hpm for CsrHpm {
        fn present(&self) -> u32 {
            self.present
        }
        fn read_counter(&self, i: usize) -> u64 {
            read_mcounter(i)
        }
        fn write_counter(&mut self, i: usize, v: u64) {
            write_mcounter(i, v)
        }
        fn read_event(&self, i: usize) -> u64 {
            if i >= 3 {
                read_mevent(i)
            } else {
                0
            }
        }
        fn write_event(&mut self, i: usize, v: u64) {
            if i >= 3 {
                write_mevent(i, v)
            }
        }
        fn read_inhibit(&self) -> u32 {
            let v: u64;
            // SAFETY: mcountinhibit (0x320) is an M-mode CSR this M-mode code owns;
            // it only gates counting, no memory is touched.
            unsafe { core::arch::asm!("csrr {0}, 0x320", out(reg) v) };
            v as u32
        }
        fn write_inhibit(&mut self, v: u32) {
            // SAFETY: mcountinhibit (0x320) is an M-mode CSR this M-mode code owns;
            // it only gates counting, no memory is touched.
            unsafe { core::arch::asm!("csrw 0x320, {0}", in(reg) v as u64) };
        }
        fn inhibit(&mut self, bits: u32) {
            // SAFETY: mcountinhibit (0x320) is an M-mode CSR this M-mode code owns;
            // it only gates counting, no memory is touched.
            unsafe { core::arch::asm!("csrs 0x320, {0}", in(reg) bits as u64) };
        }
        fn uninhibit(&mut self, bits: u32) {
            // SAFETY: mcountinhibit (0x320) is an M-mode CSR this M-mode code owns;
            // it only gates counting, no memory is touched.
            unsafe { core::arch::asm!("csrc 0x320, {0}", in(reg) bits as u64) };
        }
        fn write_fixed_cfg(&mut self, i: usize, v: u64) {
            // SAFETY: mcyclecfg/minstretcfg (Smcntrpmf, used only when the
            // hart has it) are M-mode CSRs that only filter counting.
            match i {
                // SAFETY: as above (mcyclecfg).
                0 => unsafe { core::arch::asm!("csrw 0x321, {0}", in(reg) v) },
                // SAFETY: as above (minstretcfg).
                2 => unsafe { core::arch::asm!("csrw 0x322, {0}", in(reg) v) },
                _ => {}
            }
        }
    }
}
