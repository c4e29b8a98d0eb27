//! The host's counter CSRs as HS-mode reads them, for the guest's PMU
//! backend (`rvpmu_hv::vpmu::HostHpm`): `hpmcounterN` (0xC03..0xC1F) and
//! Sscofpmf's `scountovf` (0xDA0), and `hcounteren` (0x606), which opens
//! the running guest's own counters to it. rvpmu-fw's mcounteren lets
//! every counter through to S-mode (HS here), so the reads never trap.

use crate::csr::{csr_read, csr_write, COUNTEREN_CY_TM_IR};
use rvpmu_hv::vpmu::HostCounters;

/// The executing hart's counters.
pub struct HsCounters;

macro_rules! read_hpm {
    ($i:expr, $($n:literal => $csr:tt),* $(,)?) => {
        match $i {
            $($n => csr_read!($csr) as u64,)*
            _ => 0,
        }
    };
}

impl HostCounters for HsCounters {
    fn read(&self, i: usize) -> u64 {
        read_hpm!(i,
            3 => 0xc03, 4 => 0xc04, 5 => 0xc05, 6 => 0xc06, 7 => 0xc07,
            8 => 0xc08, 9 => 0xc09, 10 => 0xc0a, 11 => 0xc0b, 12 => 0xc0c,
            13 => 0xc0d, 14 => 0xc0e, 15 => 0xc0f, 16 => 0xc10, 17 => 0xc11,
            18 => 0xc12, 19 => 0xc13, 20 => 0xc14, 21 => 0xc15, 22 => 0xc16,
            23 => 0xc17, 24 => 0xc18, 25 => 0xc19, 26 => 0xc1a, 27 => 0xc1b,
            28 => 0xc1c, 29 => 0xc1d, 30 => 0xc1e, 31 => 0xc1f,
        )
    }
    fn overflow(&self) -> u32 {
        csr_read!(0xda0) as u32
    }
    fn open(&mut self, hpm: u32) {
        csr_write!(0x606, COUNTEREN_CY_TM_IR | (hpm & !0b111) as usize);
    }
}
