//! The host's counter CSRs as HS-mode reads them, for the guest's PMU
//! backend (`rvpmu_hv::vpmu::HostHpm`): `hpmcounterN` (N = 3..31) and
//! Sscofpmf's `scountovf`, and `hcounteren`, which opens
//! the running guest's own counters to it. rvpmu-fw's mcounteren lets
//! every counter through to S-mode (HS here), so the reads never trap.
#![cfg(target_os = "none")]

use rvpmu_hv::vpmu::{HostCounters, HostHpm};
use rvpmu_rt::csr::{self, COUNTEREN_CY_TM_IR};
use rvpmu_sbi::client::Ecall;

/// The guest's PMU: the engine over these counters (through the host
/// firmware); its shared memory is the guest's (`GuestSbi::mem`).
pub type GuestPmu = rvpmu::Pmu<'static, HostHpm<Ecall, HsCounters>>;

/// The executing hart's counters.
pub struct HsCounters;

impl HostCounters for HsCounters {
    fn read(&self, i: usize) -> u64 {
        csr::read_hpmcounter(i) as u64
    }
    fn overflow(&self) -> u32 {
        csr::SCOUNTOVF.read() as u32
    }
    fn open(&mut self, hpm: u32) {
        csr::HCOUNTEREN.write(COUNTEREN_CY_TM_IR | (hpm & !0b111) as usize);
    }
}
