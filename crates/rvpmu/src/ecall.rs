//! The SBI boundary: raw `a0..a5` + FID in, `SbiRet` out. This is the only
//! place that sees raw register values: each function parses its
//! arguments into typed values ([`CounterSet`], [`Event`],
//! [`Counter`](crate::counter::Counter), the flags as
//! `sbi-spec`'s bitflags with no undefined bit, [`InitialValue`], the
//! shared-memory areas) and answers a call that cannot be typed with the
//! spec's error itself; [`Pmu`] and [`StealTime`] only ever see typed
//! values.
//!
//! Widths (spec, "Binary Encoding"): EIDs and FIDs are signed 32-bit
//! integers, so only the low 32 bits of the FID register are used ("in
//! case the data is defined as 32bit wide, higher privilege software must
//! ensure that it only uses 32 bit data"). Every PMU and STA parameter is
//! `unsigned long` or `uint64_t` (full width on RV64): `event_idx` is XLEN
//! wide with only bits 0..=19 defined, so bits 20..=63 are reserved and a
//! value setting any of them is INVALID_PARAM, like the other reserved
//! bits; the 32-bit `event_idx` and `output` words of event_get_info are in
//! memory, read as such (`snapshot::event_info`).

use crate::counter::CounterSet;
use crate::event::{Event, FwEvent};
use crate::hart::{CounterCfgFlags, CounterStartFlags, CounterStopFlags, InitialValue, Pmu};
use crate::hw::Hpm;
use crate::mem::SupervisorMemory;
use crate::snapshot::{event_info, SnapshotArea};
use crate::sta::{StaArea, StealTime};
use crate::Error;
pub use sbi_spec::binary::SbiRet;
use sbi_spec::pmu as fid;

/// EID of the PMU extension ("PMU").
pub const EID_PMU: usize = sbi_spec::pmu::EID_PMU;
/// EID of the STA extension ("STA").
pub const EID_STA: usize = sbi_spec::sta::EID_STA;

#[inline(always)]
fn ret(r: Result<u64, Error>) -> SbiRet {
    match r {
        Ok(v) => SbiRet {
            error: 0,
            value: v as usize,
        },
        Err(e) => SbiRet {
            error: e.ret_code(),
            value: 0,
        },
    }
}

/// The function id the spec's 32-bit FID names: the low 32 bits of the
/// register, sign-extended (one `sext.w`; the FIDs these extensions define
/// are small and non-negative, so any value that is not one of them stays
/// unknown).
#[inline(always)]
fn function_id(function: usize) -> usize {
    function as i32 as isize as usize
}

/// The PMU extension as an SBI implementation's dispatch sees it: the seam
/// between a firmware's or hypervisor's trap handler and the engine, so
/// that the dispatch can be tested with a stand-in. [`Pmu`] implements it
/// with [`pmu`] and [`Pmu::record`].
pub trait PmuExtension<M: SupervisorMemory> {
    /// One PMU call: `function` (its low 32 bits count) and a0..a5, with
    /// the supervisor's memory as the calling hart sees it.
    fn call(&mut self, mem: &mut M, function: usize, a: [usize; 6]) -> SbiRet;
    /// Count one standard firmware event the implementation served.
    fn record(&mut self, ev: FwEvent);
}

impl<H: Hpm, M: SupervisorMemory> PmuExtension<M> for Pmu<'_, H> {
    #[inline(always)]
    fn call(&mut self, mem: &mut M, function: usize, a: [usize; 6]) -> SbiRet {
        pmu(self, mem, function, a)
    }
    #[inline(always)]
    fn record(&mut self, ev: FwEvent) {
        Pmu::record(self, ev)
    }
}

/// Dispatch one PMU call (EID 0x504D55) for the calling hart: `pmu` is
/// that hart's engine, `mem` the supervisor's memory as the hart sees it
/// (snapshot and event-info areas are read and written through it).
#[inline(always)]
pub fn pmu<H: Hpm, M: SupervisorMemory>(
    pmu: &mut Pmu<'_, H>,
    mem: &mut M,
    function: usize,
    a: [usize; 6],
) -> SbiRet {
    let a = a.map(|x| x as u64);
    pmu_function::<H, M>(function_id(function))(a[0], a[1], a[2], a[3], a[4], pmu, mem)
}

/// One PMU function: `a0..a4` as passed, then the hart's engine and the
/// supervisor's memory.
///
/// Every function is its own non-inlined `extern "C"` body with this one
/// signature, taking the arguments in the registers they arrived in and
/// returning the `SbiRet` in a0/a1: dispatch is a table lookup and a tail
/// call, and a firmware pays in register saves only for what the call it
/// serves needs.
type PmuFunction<H, M> =
    for<'p, 'a, 'm> extern "C" fn(u64, u64, u64, u64, u64, &'p mut Pmu<'a, H>, &'m mut M) -> SbiRet;

#[inline(always)]
fn pmu_function<H: Hpm, M: SupervisorMemory>(function: usize) -> PmuFunction<H, M> {
    match function {
        fid::NUM_COUNTERS => num_counters,
        fid::COUNTER_GET_INFO => counter_get_info,
        fid::COUNTER_CONFIG_MATCHING => config_matching,
        fid::COUNTER_START => counter_start,
        fid::COUNTER_STOP => counter_stop,
        fid::COUNTER_FW_READ => counter_fw_read,
        fid::COUNTER_FW_READ_HI => counter_fw_read_hi,
        fid::SNAPSHOT_SET_SHMEM => snapshot_set_shmem,
        fid::EVENT_GET_INFO => event_get_info,
        _ => not_supported,
    }
}

/// Declares a `PmuFunction` named `$name` over the argument names given.
macro_rules! pmu_fn {
    ($name:ident, |$a0:ident, $a1:ident, $a2:ident, $a3:ident, $a4:ident, $pmu:ident, $mem:ident| $body:expr) => {
        #[inline(never)]
        extern "C" fn $name<H: Hpm, M: SupervisorMemory>(
            a0: u64,
            a1: u64,
            a2: u64,
            a3: u64,
            a4: u64,
            pmu: &mut Pmu<'_, H>,
            mem: &mut M,
        ) -> SbiRet {
            #[inline(always)]
            #[allow(unused_variables)]
            fn body<H: Hpm, M: SupervisorMemory>(
                $a0: u64,
                $a1: u64,
                $a2: u64,
                $a3: u64,
                $a4: u64,
                $pmu: &mut Pmu<'_, H>,
                $mem: &mut M,
            ) -> Result<u64, Error> {
                $body
            }
            ret(body(a0, a1, a2, a3, a4, pmu, mem))
        }
    };
}

/// `config_flags`, `start_flags`, `stop_flags`: no bit the spec leaves
/// undefined, or INVALID_PARAM.
#[inline(always)]
fn cfg_flags(flags: u64) -> Result<CounterCfgFlags, Error> {
    CounterCfgFlags::from_bits(flags as usize).ok_or(Error::InvalidParam)
}
#[inline(always)]
fn start_flags(flags: u64) -> Result<CounterStartFlags, Error> {
    CounterStartFlags::from_bits(flags as usize).ok_or(Error::InvalidParam)
}
#[inline(always)]
fn stop_flags(flags: u64) -> Result<CounterStopFlags, Error> {
    CounterStopFlags::from_bits(flags as usize).ok_or(Error::InvalidParam)
}

/// `counter_idx_base` + `counter_idx_mask` as a set of this hart's
/// counters, or INVALID_PARAM.
#[inline(always)]
fn counter_set<H: Hpm>(pmu: &Pmu<'_, H>, base: u64, mask: u64) -> Result<CounterSet, Error> {
    pmu.layout().set(base, mask)
}

pmu_fn!(num_counters, |a0, a1, a2, a3, a4, pmu, mem| Ok(
    pmu.num_counters() as u64
));
pmu_fn!(counter_get_info, |idx, a1, a2, a3, a4, pmu, mem| {
    let (_, counter) = pmu.layout().resolve(idx)?;
    Ok(pmu.counter_get_info(counter).encode())
});

/// The standard firmware event of a config_matching request that names one
/// with valid flags and no SKIP_MATCH (what Linux asks for every firmware
/// event it counts): one xor and three compares on the raw registers.
#[inline(always)]
fn standard_fw_request(flags: u64, event_idx: u64, event_data: u64) -> bool {
    let no_skip = (CounterCfgFlags::all().bits() & !CounterCfgFlags::SKIP_MATCH.bits()) as u64;
    FwEvent::from_event_idx(event_idx).is_some() && event_data == 0 && flags & !no_skip == 0
}

/// The code of a standard firmware event's `event_idx`.
#[inline(always)]
fn fw_code(event_idx: u64) -> u64 {
    FwEvent::from_event_idx(event_idx).map_or(u64::MAX, |e| e.code() as u64)
}

/// FID 2, in three paths, each its own function reached by a tail call:
/// a standard firmware event without SKIP_MATCH (the common firmware
/// case, [`Pmu::config_standard_fw`]), SKIP_MATCH (re-configuring in
/// place, [`Pmu::config_in_place`]: the event is only checked, not
/// decoded), and every other request. All three give the answers of
/// [`Pmu::counter_config_matching`]; the reference model (tests/model.rs)
/// drives them all.
#[inline(never)]
extern "C" fn config_matching<H: Hpm, M: SupervisorMemory>(
    base: u64,
    mask: u64,
    flags: u64,
    idx: u64,
    data: u64,
    pmu: &mut Pmu<'_, H>,
    mem: &mut M,
) -> SbiRet {
    if standard_fw_request(flags, idx, data) {
        // The event is passed as its code (0..=21).
        config_matching_fw(base, mask, flags, fw_code(idx), data, pmu, mem)
    } else if flags & CounterCfgFlags::SKIP_MATCH.bits() as u64 != 0 {
        config_matching_in_place(base, mask, flags, idx, data, pmu, mem)
    } else {
        config_matching_general(base, mask, flags, idx, data, pmu, mem)
    }
}
pmu_fn!(config_matching_fw, |base,
                             mask,
                             flags,
                             code,
                             data,
                             pmu,
                             mem| {
    let set = counter_set(pmu, base, mask)?;
    // `config_matching` found both valid.
    let Some(ev) = FwEvent::from_code(code as u16) else {
        return Err(Error::InvalidParam);
    };
    let flags = CounterCfgFlags::from_bits_retain(flags as usize);
    pmu.config_standard_fw(&set, flags, ev)
});
pmu_fn!(
    config_matching_in_place,
    |base, mask, flags, idx, data, pmu, mem| {
        // The flags, the set and the event all answer INVALID_PARAM when
        // malformed, so the order of the checks does not show.
        let flags = cfg_flags(flags)?;
        let set = counter_set(pmu, base, mask)?;
        Event::check(idx, data)?;
        pmu.config_in_place(&set, flags)
    }
);
pmu_fn!(
    config_matching_general,
    |base, mask, flags, idx, data, pmu, mem| {
        // The event is decoded first, while the least is live across the call.
        let decoded = Event::decode(idx, data);
        let flags = cfg_flags(flags)?;
        let set = counter_set(pmu, base, mask)?;
        // By reference: moving the event out of the Result costs a
        // field-by-field copy.
        let ev = decoded.as_ref().map_err(|e| *e)?;
        pmu.config_match(&set, flags, ev)
    }
);
pmu_fn!(counter_start, |base, mask, flags, value, a4, pmu, mem| {
    let value = InitialValue::from_flags(start_flags(flags)?, value)?;
    let set = counter_set(pmu, base, mask)?;
    pmu.counter_start(mem, &set, value).map(|_| 0)
});
pmu_fn!(counter_stop, |base, mask, flags, a3, a4, pmu, mem| {
    let flags = stop_flags(flags)?;
    let set = counter_set(pmu, base, mask)?;
    pmu.counter_stop(mem, &set, flags).map(|_| 0)
});
pmu_fn!(counter_fw_read, |idx, a1, a2, a3, a4, pmu, mem| {
    let (_, counter) = pmu.layout().resolve(idx)?;
    pmu.counter_fw_read(counter)
});
pmu_fn!(counter_fw_read_hi, |idx, a1, a2, a3, a4, pmu, mem| {
    let (_, counter) = pmu.layout().resolve(idx)?;
    pmu.counter_fw_read_hi(counter)
});
pmu_fn!(snapshot_set_shmem, |lo, hi, flags, a3, a4, pmu, mem| {
    // A function not offered answers NOT_SUPPORTED whatever its arguments.
    if !pmu.snapshot_offered() {
        return Err(Error::NotSupported);
    }
    if flags != 0 {
        return Err(Error::InvalidParam);
    }
    let area = SnapshotArea::parse(lo, hi)?;
    pmu.snapshot_set_shmem(mem, area).map(|_| 0)
});
pmu_fn!(event_get_info, |lo, hi, num, flags, a4, pmu, mem| {
    if flags != 0 {
        return Err(Error::InvalidParam);
    }
    match event_info::Entries::parse(lo, hi, num)? {
        Some(entries) => pmu.event_get_info(mem, entries).map(|_| 0),
        // No entry to update, no memory to touch.
        None => Ok(0),
    }
});
pmu_fn!(not_supported, |a0, a1, a2, a3, a4, pmu, mem| Err(
    Error::NotSupported
));

/// Dispatch one STA call (EID 0x535441) for the calling hart.
pub fn sta<M: SupervisorMemory + ?Sized>(
    sta: &mut StealTime,
    mem: &mut M,
    function: usize,
    a: [usize; 6],
) -> SbiRet {
    ret(match function_id(function) {
        sbi_spec::sta::SET_SHMEM => sta_set_shmem(sta, mem, a[0] as u64, a[1] as u64, a[2] as u64),
        _ => Err(Error::NotSupported),
    })
}

/// STA FID 0: `flags` must be 0, then the area.
#[inline(always)]
fn sta_set_shmem<M: SupervisorMemory + ?Sized>(
    sta: &mut StealTime,
    mem: &mut M,
    lo: u64,
    hi: u64,
    flags: u64,
) -> Result<u64, Error> {
    if flags != 0 {
        return Err(Error::InvalidParam);
    }
    let area = StaArea::parse(lo, hi)?;
    sta.set_shmem(mem, area).map(|_| 0)
}
