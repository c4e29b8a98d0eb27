//! Supervisor-side calls of the PMU and STA extensions, typed like
//! `sbi_rt` (flags as `ConfigFlags`/`StartFlags`/`StopFlags` types from
//! `sbi-spec`), with `event_get_info` and the snapshot included.
//!
//! Calls go through a [`SbiCall`] transport: `Ecall` (riscv64 only) is the real `ecall`
//! instruction (riscv64 only); tests plug in an engine directly.

use crate::ecall::{SbiRet, EID_PMU, EID_STA};
use sbi_spec::pmu as fid;
pub use sbi_spec::pmu::flags::{CounterCfgFlags, CounterStartFlags, CounterStopFlags};

/// Flags accepted by [`Supervisor::pmu_counter_config_matching`].
pub trait ConfigFlags {
    /// Raw register value.
    fn raw(&self) -> usize;
}
impl ConfigFlags for CounterCfgFlags {
    fn raw(&self) -> usize {
        self.bits()
    }
}
/// Flags accepted by [`Supervisor::pmu_counter_start`].
pub trait StartFlags {
    /// Raw register value.
    fn raw(&self) -> usize;
}
impl StartFlags for CounterStartFlags {
    fn raw(&self) -> usize {
        self.bits()
    }
}
/// Flags accepted by [`Supervisor::pmu_counter_stop`].
pub trait StopFlags {
    /// Raw register value.
    fn raw(&self) -> usize;
}
impl StopFlags for CounterStopFlags {
    fn raw(&self) -> usize {
        self.bits()
    }
}

/// A way to make an SBI call.
pub trait SbiCall {
    /// Call `eid`/`fid` with `a0..a5`.
    fn call(&mut self, eid: usize, fid: usize, args: [usize; 6]) -> SbiRet;
}

/// The `ecall` instruction, from S-mode.
#[cfg(target_arch = "riscv64")]
#[derive(Clone, Copy, Debug, Default)]
pub struct Ecall;

#[cfg(target_arch = "riscv64")]
impl SbiCall for Ecall {
    #[inline]
    fn call(&mut self, eid: usize, fid: usize, a: [usize; 6]) -> SbiRet {
        let (error, value);
        // SAFETY: an SBI call; the SEE preserves all registers but a0/a1.
        unsafe {
            core::arch::asm!("ecall",
                inlateout("a0") a[0] => error, inlateout("a1") a[1] => value,
                in("a2") a[2], in("a3") a[3], in("a4") a[4], in("a5") a[5],
                in("a6") fid, in("a7") eid);
        }
        SbiRet { error, value }
    }
}

/// Typed PMU and STA calls over a transport.
#[derive(Clone, Copy, Debug, Default)]
pub struct Supervisor<C: SbiCall>(pub C);

impl<C: SbiCall> Supervisor<C> {
    fn pmu(&mut self, f: usize, a: [usize; 6]) -> SbiRet {
        self.0.call(EID_PMU, f, a)
    }

    /// FID 0: number of counters.
    pub fn pmu_num_counters(&mut self) -> usize {
        self.pmu(fid::NUM_COUNTERS, [0; 6]).value
    }
    /// FID 1: `counter_info` of a counter (decode with [`crate::counter::CounterInfo::decode`]).
    pub fn pmu_counter_get_info(&mut self, counter_idx: usize) -> SbiRet {
        self.pmu(fid::COUNTER_GET_INFO, [counter_idx, 0, 0, 0, 0, 0])
    }
    /// FID 2: find and configure a counter for `event_idx`.
    pub fn pmu_counter_config_matching<T: ConfigFlags>(
        &mut self,
        counter_idx_base: usize,
        counter_idx_mask: usize,
        config_flags: T,
        event_idx: usize,
        event_data: u64,
    ) -> SbiRet {
        self.pmu(
            fid::COUNTER_CONFIG_MATCHING,
            [
                counter_idx_base,
                counter_idx_mask,
                config_flags.raw(),
                event_idx,
                event_data as usize,
                0,
            ],
        )
    }
    /// FID 3: start a set of counters.
    pub fn pmu_counter_start<T: StartFlags>(
        &mut self,
        counter_idx_base: usize,
        counter_idx_mask: usize,
        start_flags: T,
        initial_value: u64,
    ) -> SbiRet {
        self.pmu(
            fid::COUNTER_START,
            [
                counter_idx_base,
                counter_idx_mask,
                start_flags.raw(),
                initial_value as usize,
                0,
                0,
            ],
        )
    }
    /// FID 4: stop a set of counters.
    pub fn pmu_counter_stop<T: StopFlags>(
        &mut self,
        counter_idx_base: usize,
        counter_idx_mask: usize,
        stop_flags: T,
    ) -> SbiRet {
        self.pmu(
            fid::COUNTER_STOP,
            [
                counter_idx_base,
                counter_idx_mask,
                stop_flags.raw(),
                0,
                0,
                0,
            ],
        )
    }
    /// FID 5: read a firmware counter.
    pub fn pmu_counter_fw_read(&mut self, counter_idx: usize) -> SbiRet {
        self.pmu(fid::COUNTER_FW_READ, [counter_idx, 0, 0, 0, 0, 0])
    }
    /// FID 6: upper bits of a firmware counter (0 on RV64).
    pub fn pmu_counter_fw_read_hi(&mut self, counter_idx: usize) -> SbiRet {
        self.pmu(fid::COUNTER_FW_READ_HI, [counter_idx, 0, 0, 0, 0, 0])
    }
    /// FID 7: register (or with `None`, disable) the snapshot page.
    pub fn pmu_snapshot_set_shmem(&mut self, phys: Option<u64>) -> SbiRet {
        let (lo, hi) = match phys {
            Some(p) => (p as usize, 0),
            None => (usize::MAX, usize::MAX),
        };
        self.pmu(fid::SNAPSHOT_SET_SHMEM, [lo, hi, 0, 0, 0, 0])
    }
    /// FID 8: fill the output words of `num_entries` 16-byte entries at `phys`.
    pub fn pmu_event_get_info(&mut self, phys: u64, num_entries: usize) -> SbiRet {
        self.pmu(
            fid::EVENT_GET_INFO,
            [phys as usize, 0, num_entries, 0, 0, 0],
        )
    }
    /// STA FID 0: register (or with `None`, disable) the steal-time record.
    pub fn sta_set_shmem(&mut self, phys: Option<u64>) -> SbiRet {
        let (lo, hi) = match phys {
            Some(p) => (p as usize, 0),
            None => (usize::MAX, usize::MAX),
        };
        self.0
            .call(EID_STA, sbi_spec::sta::SET_SHMEM, [lo, hi, 0, 0, 0, 0])
    }
}
