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

/// The real CSRs of the executing hart (riscv64 M-mode only).
#[cfg(target_arch = "riscv64")]
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
        /// The counters this hart has.
        pub fn present(&self) -> u32 {
            self.present
        }
    }

    // Each CSR number must be an immediate, so accesses dispatch over a
    // table generated per index.
    macro_rules! gen_access {
        ($name_r:ident, $name_w:ident, $base:literal) => {
            fn $name_r(i: usize) -> u64 {
                let v: u64;
                macro_rules! arm {
                    ($n:literal) => {
                        unsafe { core::arch::asm!(concat!("csrr {0}, ", $base, " + ", $n), out(reg) v) }
                    };
                }
                match i {
                    0 => arm!(0), 1 => arm!(1), 2 => arm!(2), 3 => arm!(3),
                    4 => arm!(4), 5 => arm!(5), 6 => arm!(6), 7 => arm!(7),
                    8 => arm!(8), 9 => arm!(9), 10 => arm!(10), 11 => arm!(11),
                    12 => arm!(12), 13 => arm!(13), 14 => arm!(14), 15 => arm!(15),
                    16 => arm!(16), 17 => arm!(17), 18 => arm!(18), 19 => arm!(19),
                    20 => arm!(20), 21 => arm!(21), 22 => arm!(22), 23 => arm!(23),
                    24 => arm!(24), 25 => arm!(25), 26 => arm!(26), 27 => arm!(27),
                    28 => arm!(28), 29 => arm!(29), 30 => arm!(30), _ => arm!(31),
                }
                v
            }
            fn $name_w(i: usize, v: u64) {
                macro_rules! arm {
                    ($n:literal) => {
                        unsafe { core::arch::asm!(concat!("csrw ", $base, " + ", $n, ", {0}"), in(reg) v) }
                    };
                }
                match i {
                    0 => arm!(0), 1 => arm!(1), 2 => arm!(2), 3 => arm!(3),
                    4 => arm!(4), 5 => arm!(5), 6 => arm!(6), 7 => arm!(7),
                    8 => arm!(8), 9 => arm!(9), 10 => arm!(10), 11 => arm!(11),
                    12 => arm!(12), 13 => arm!(13), 14 => arm!(14), 15 => arm!(15),
                    16 => arm!(16), 17 => arm!(17), 18 => arm!(18), 19 => arm!(19),
                    20 => arm!(20), 21 => arm!(21), 22 => arm!(22), 23 => arm!(23),
                    24 => arm!(24), 25 => arm!(25), 26 => arm!(26), 27 => arm!(27),
                    28 => arm!(28), 29 => arm!(29), 30 => arm!(30), _ => arm!(31),
                }
            }
        };
    }

    // mcycle = 0xB00, mhpmcounterN = 0xB00 + N; mhpmeventN = 0x320 + N.
    gen_access!(read_mcounter, write_mcounter, "0xB00");
    gen_access!(read_mevent, write_mevent, "0x320");

    impl Hpm for CsrHpm {
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
            unsafe { core::arch::asm!("csrr {0}, 0x320", out(reg) v) };
            v as u32
        }
        fn write_inhibit(&mut self, v: u32) {
            unsafe { core::arch::asm!("csrw 0x320, {0}", in(reg) v as u64) };
        }
        fn write_fixed_cfg(&mut self, i: usize, v: u64) {
            match i {
                0 => unsafe { core::arch::asm!("csrw 0x321, {0}", in(reg) v) },
                2 => unsafe { core::arch::asm!("csrw 0x322, {0}", in(reg) v) },
                _ => {}
            }
        }
    }
}
