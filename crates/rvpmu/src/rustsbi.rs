//! The RustSBI adapter (feature `rustsbi`): [`RustSbiPmu`] implements
//! crates.io `rustsbi`'s [`Pmu`](::rustsbi::Pmu) and
//! [`Sta`](::rustsbi::Sta) traits over one engine per hart, so that a
//! firmware written with `#[derive(RustSBI)]` serves the PMU and STA
//! extensions from this crate.
//!
//! ```
//! use rustsbi::RustSBI;
//! use rvpmu::rustsbi::{Hart, RustSbiPmu};
//! use rvpmu::sim::{BufMemory, SimHart};
//! # use rvpmu::dt::EventMap;
//! # use rvpmu::hart::IsaFeatures;
//! # use rvpmu::PmuConfig;
//! # struct Info;
//! # impl rustsbi::EnvInfo for Info {
//! #     fn mvendorid(&self) -> usize { 0 }
//! #     fn marchid(&self) -> usize { 0 }
//! #     fn mimpid(&self) -> usize { 0 }
//! # }
//!
//! // The firmware's SBI: the PMU and STA fields are the adapter (by
//! // reference: it lives in a static, one engine slot per hart).
//! #[derive(RustSBI)]
//! struct Firmware<'a> {
//!     pmu: &'a Perf,
//!     sta: &'a Perf,
//!     info: Info,
//! }
//! type Perf = RustSbiPmu<rvpmu::Pmu<'static, SimHart>, BufMemory, 4>;
//!
//! // The id of the executing hart (a firmware reads mhartid).
//! fn hart_id() -> usize { 0 }
//! static PERF: Perf = RustSbiPmu::new(hart_id);
//!
//! // Each hart puts its own engine in its slot at boot (building an
//! // engine programs the executing hart's counters).
//! # static MAP: EventMap = EventMap::empty();
//! # let cfg = PmuConfig::new(&MAP, IsaFeatures::none().with_sscofpmf(true));
//! # let hw = SimHart::qemu_virt();
//! let engine = rvpmu::Pmu::new(cfg, hw);
//! PERF.install(Hart::new(engine, BufMemory::virt())).unwrap();
//!
//! // The trap handler: the adapter first (it keeps event_get_info, FID 8,
//! // which rustsbi's `Pmu` trait has no method for), then rustsbi.
//! let sbi = Firmware { pmu: &PERF, sta: &PERF, info: Info };
//! let (eid, fid) = (rvpmu::ecall::EID_PMU, 0);
//! let ret = PERF
//!     .handle_ecall(eid, fid, [0; 6])
//!     .unwrap_or_else(|| sbi.handle_ecall(eid, fid, [0; 6]));
//! assert_eq!(ret.value, 19 + 16); // hardware slots 0..=18, 16 firmware counters
//! ```
//!
//! # Per-hart state under `&self`
//!
//! rustsbi's traits take `&self`, and one firmware structure serves every
//! hart. [`RustSbiPmu`] holds a slot per hart id (`N` of them); every
//! call runs on the slot of the hart [`RustSbiPmu::new`]'s `hart_id`
//! names, the executing one. A slot is taken with an atomic flag for the
//! length of the call and given back after it, so a `&mut` to a hart's
//! engine is never made twice at once, whatever the caller does: the
//! flag is always free on a firmware whose harts only touch their own
//! slots and whose M-mode traps do not nest, and a call that finds it
//! taken (a wrong `hart_id`, or a counter backend or memory calling back
//! into the adapter) answers SBI_ERR_FAILED instead. A hart whose slot holds no
//! engine answers NOT_SUPPORTED.
//!
//! # Event info (FID 8) and the function ids rustsbi passes on
//!
//! rustsbi 0.4's `Pmu` trait has no `event_get_info` (SBI 3.0, FID 8),
//! and its dispatch compares the FID register as a whole: FID 8, and any
//! FID whose upper 32 bits are set, answer NOT_SUPPORTED there without
//! reaching the trait, where the engine reads the low 32 bits (the spec's
//! 32-bit FID). [`RustSbiPmu::handle_ecall`] answers exactly those calls
//! of EID PMU and EID STA with the engine's own dispatch
//! ([`crate::ecall`]) and leaves every other call (`None`) to rustsbi:
//! a firmware calls it before its derived `handle_ecall`.

use crate::ecall::{self, PmuExtension, SbiRet, EID_PMU, EID_STA};
use crate::event::FwEvent;
use crate::mem::SupervisorMemory;
use crate::sta::StealTime;
use ::rustsbi::SharedPtr;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};
use sbi_spec::pmu::shmem_size::SIZE as SNAPSHOT_SIZE;

/// One hart's PMU (the engine, [`crate::Pmu`], or anything else behind
/// the engine's dispatch seam [`PmuExtension`]), steal-time record, and
/// the supervisor's memory as the hart sees it (handed to each call).
#[non_exhaustive]
pub struct Hart<P: PmuExtension<M>, M: SupervisorMemory> {
    /// The PMU.
    pub pmu: P,
    /// The STA record of the hart.
    pub sta: StealTime,
    /// The supervisor's memory.
    pub mem: M,
}

impl<P: PmuExtension<M>, M: SupervisorMemory> Hart<P, M> {
    /// A hart with its PMU and memory, no STA record registered.
    pub fn new(pmu: P, mem: M) -> Self {
        Hart {
            pmu,
            sta: StealTime::new(),
            mem,
        }
    }

    /// One PMU call, decoded by the engine.
    fn pmu_call(&mut self, function: usize, a: [usize; 6]) -> SbiRet {
        self.pmu.call(&mut self.mem, function, a)
    }

    /// One STA call, decoded by the engine.
    fn sta_call(&mut self, function: usize, a: [usize; 6]) -> SbiRet {
        ecall::sta(&mut self.sta, &mut self.mem, function, a)
    }
}

/// Why a hart's slot could not be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlotError {
    /// The hart id is not below `N`, or (for calls) its slot holds no engine.
    NoEngine,
    /// The slot is in use by a call that has not returned.
    Busy,
}

impl SlotError {
    fn ret(self) -> SbiRet {
        match self {
            SlotError::NoEngine => SbiRet::not_supported(),
            SlotError::Busy => SbiRet::failed(),
        }
    }
}

/// A hart's slot: the engine and the flag that says a call holds it.
struct Slot<T> {
    busy: AtomicBool,
    value: UnsafeCell<Option<T>>,
}

/// The engines of up to `N` harts, served through rustsbi's `Pmu` and
/// `Sta` traits (see the module documentation).
pub struct RustSbiPmu<P: PmuExtension<M>, M: SupervisorMemory, const N: usize> {
    slots: [Slot<Hart<P, M>>; N],
    hart_id: fn() -> usize,
}

// SAFETY: a slot's value is only reached through `with`, which holds the
// slot's flag (taken with an atomic swap, Acquire; given back with a
// Release store) for as long as the one `&mut` it makes lives; the value
// may be used from the hart that takes the flag, hence `Send`.
unsafe impl<P: PmuExtension<M> + Send, M: SupervisorMemory + Send, const N: usize> Sync
    for RustSbiPmu<P, M, N>
{
}

impl<P: PmuExtension<M>, M: SupervisorMemory, const N: usize> RustSbiPmu<P, M, N> {
    /// No engine in any slot. `hart_id` returns the id of the executing
    /// hart (M-mode: `mhartid`), the index of its slot.
    pub const fn new(hart_id: fn() -> usize) -> Self {
        RustSbiPmu {
            slots: [const {
                Slot {
                    busy: AtomicBool::new(false),
                    value: UnsafeCell::new(None),
                }
            }; N],
            hart_id,
        }
    }

    /// Run `f` on the executing hart's slot, its value `None` until
    /// [`Self::install`].
    fn slot<R>(&self, f: impl FnOnce(&mut Option<Hart<P, M>>) -> R) -> Result<R, SlotError> {
        let slot = self
            .slots
            .get((self.hart_id)())
            .ok_or(SlotError::NoEngine)?;
        if slot.busy.swap(true, Ordering::Acquire) {
            return Err(SlotError::Busy);
        }
        // SAFETY: this call took the slot's flag above and gives it back
        // only after the last use of this reference, so no other `&mut`
        // or `&` to the value exists meanwhile (see the `Sync` impl).
        let r = f(unsafe { &mut *slot.value.get() });
        slot.busy.store(false, Ordering::Release);
        Ok(r)
    }

    /// Put the executing hart's engine in its slot (replacing any), at
    /// the hart's boot: building an engine programs the executing hart's
    /// counters.
    pub fn install(&self, hart: Hart<P, M>) -> Result<(), SlotError> {
        self.slot(|s| *s = Some(hart))
    }

    /// Run `f` on the executing hart's engine: for what a firmware does
    /// besides answering calls (recording firmware events other than
    /// with [`Self::record`], accounting steal time).
    pub fn with<R>(&self, f: impl FnOnce(&mut Hart<P, M>) -> R) -> Result<R, SlotError> {
        self.slot(|s| s.as_mut().map(f))?.ok_or(SlotError::NoEngine)
    }

    /// Count one occurrence of a standard firmware event on the executing
    /// hart (nothing when its slot holds no engine).
    #[inline]
    pub fn record(&self, event: FwEvent) {
        let _ = self.with(|h| h.pmu.record(event));
    }

    /// The calls of EID PMU and STA that rustsbi's dispatch does not pass
    /// to its traits (PMU: every FID but 0..=7; STA: every FID but 0),
    /// answered by the engine; `None` for every other call, which the
    /// firmware hands to rustsbi.
    #[inline]
    pub fn handle_ecall(&self, extension: usize, function: usize, a: [usize; 6]) -> Option<SbiRet> {
        match extension {
            EID_PMU if function > sbi_spec::pmu::SNAPSHOT_SET_SHMEM => {
                Some(self.pmu_call(function, a))
            }
            EID_STA if function != sbi_spec::sta::SET_SHMEM => Some(self.sta_call(function, a)),
            _ => None,
        }
    }

    fn pmu_call(&self, function: usize, a: [usize; 6]) -> SbiRet {
        self.with(|h| h.pmu_call(function, a))
            .unwrap_or_else(SlotError::ret)
    }

    fn sta_call(&self, function: usize, a: [usize; 6]) -> SbiRet {
        self.with(|h| h.sta_call(function, a))
            .unwrap_or_else(SlotError::ret)
    }
}

impl<P: PmuExtension<M>, M: SupervisorMemory, const N: usize> ::rustsbi::Pmu
    for RustSbiPmu<P, M, N>
{
    fn num_counters(&self) -> usize {
        // The trait's answer is always SUCCESS: a hart without an engine
        // has no counters.
        let r = self.pmu_call(sbi_spec::pmu::NUM_COUNTERS, [0; 6]);
        if r.error == 0 {
            r.value
        } else {
            0
        }
    }
    fn counter_get_info(&self, counter_idx: usize) -> SbiRet {
        self.pmu_call(
            sbi_spec::pmu::COUNTER_GET_INFO,
            [counter_idx, 0, 0, 0, 0, 0],
        )
    }
    fn counter_config_matching(
        &self,
        base: usize,
        mask: usize,
        flags: usize,
        event_idx: usize,
        event_data: u64,
    ) -> SbiRet {
        let a = [base, mask, flags, event_idx, event_data as usize, 0];
        self.pmu_call(sbi_spec::pmu::COUNTER_CONFIG_MATCHING, a)
    }
    fn counter_start(&self, base: usize, mask: usize, flags: usize, initial: u64) -> SbiRet {
        let a = [base, mask, flags, initial as usize, 0, 0];
        self.pmu_call(sbi_spec::pmu::COUNTER_START, a)
    }
    fn counter_stop(&self, base: usize, mask: usize, flags: usize) -> SbiRet {
        self.pmu_call(sbi_spec::pmu::COUNTER_STOP, [base, mask, flags, 0, 0, 0])
    }
    fn counter_fw_read(&self, counter_idx: usize) -> SbiRet {
        self.pmu_call(sbi_spec::pmu::COUNTER_FW_READ, [counter_idx, 0, 0, 0, 0, 0])
    }
    fn counter_fw_read_hi(&self, counter_idx: usize) -> SbiRet {
        self.pmu_call(
            sbi_spec::pmu::COUNTER_FW_READ_HI,
            [counter_idx, 0, 0, 0, 0, 0],
        )
    }
    fn snapshot_set_shmem(&self, shmem: SharedPtr<[u8; SNAPSHOT_SIZE]>, flags: usize) -> SbiRet {
        let a = [shmem.phys_addr_lo(), shmem.phys_addr_hi(), flags, 0, 0, 0];
        self.pmu_call(sbi_spec::pmu::SNAPSHOT_SET_SHMEM, a)
    }
}

impl<P: PmuExtension<M>, M: SupervisorMemory, const N: usize> ::rustsbi::Sta
    for RustSbiPmu<P, M, N>
{
    fn set_shmem(&self, shmem: SharedPtr<[u8; 64]>, flags: usize) -> SbiRet {
        let a = [shmem.phys_addr_lo(), shmem.phys_addr_hi(), flags, 0, 0, 0];
        self.sta_call(sbi_spec::sta::SET_SHMEM, a)
    }
}
