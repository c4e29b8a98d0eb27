//! The SBI boundary: raw `a0..a5` + FID in, `SbiRet` out. Everything past
//! this point is typed.

use crate::hart::Pmu;
use crate::hw::Hpm;
use crate::mem::SupervisorMemory;
use crate::sta::StealTime;
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
            error: e.code() as usize,
            value: 0,
        },
    }
}

/// Dispatch one PMU call (EID 0x504D55) for the calling hart.
#[inline(always)]
pub fn pmu<H: Hpm, M: SupervisorMemory>(
    pmu: &mut Pmu<'_, H, M>,
    function: usize,
    a: [usize; 6],
) -> SbiRet {
    let a = a.map(|x| x as u64);
    pmu_function::<H, M>(function)(a[0], a[1], a[2], a[3], a[4], pmu)
}

/// One PMU function: `a0..a4` as passed, then the hart's engine.
///
/// Every function is its own non-inlined `extern "C"` body with this one
/// signature, taking the arguments in the registers they arrived in and
/// returning the `SbiRet` in a0/a1: dispatch is a table lookup and a tail
/// call, and a firmware pays in register saves only for what the call it
/// serves needs.
type PmuFunction<H, M> =
    for<'p, 'a> extern "C" fn(u64, u64, u64, u64, u64, &'p mut Pmu<'a, H, M>) -> SbiRet;

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
    ($name:ident, |$a0:ident, $a1:ident, $a2:ident, $a3:ident, $a4:ident, $pmu:ident| $body:expr) => {
        #[inline(never)]
        #[allow(unused_variables)]
        extern "C" fn $name<H: Hpm, M: SupervisorMemory>(
            $a0: u64,
            $a1: u64,
            $a2: u64,
            $a3: u64,
            $a4: u64,
            $pmu: &mut Pmu<'_, H, M>,
        ) -> SbiRet {
            ret($body)
        }
    };
}

pmu_fn!(num_counters, |a0, a1, a2, a3, a4, pmu| Ok(
    pmu.num_counters() as u64
));
pmu_fn!(counter_get_info, |idx, a1, a2, a3, a4, pmu| pmu
    .counter_get_info(idx));
/// FID 2: the two paths of `Pmu::counter_config_matching`, each its own
/// function reached by a tail call.
#[inline(never)]
extern "C" fn config_matching<H: Hpm, M: SupervisorMemory>(
    base: u64,
    mask: u64,
    flags: u64,
    idx: u64,
    data: u64,
    pmu: &mut Pmu<'_, H, M>,
) -> SbiRet {
    if Pmu::<H, M>::standard_fw_request(flags, idx, data).is_some() {
        config_matching_fw(base, mask, flags, idx, data, pmu)
    } else {
        config_matching_general(base, mask, flags, idx, data, pmu)
    }
}
pmu_fn!(config_matching_fw, |base, mask, flags, idx, data, pmu| pmu
    .config_standard_fw(base, mask, flags, idx as u16));
pmu_fn!(
    config_matching_general,
    |base, mask, flags, idx, data, pmu| pmu.config_general(base, mask, flags, idx, data)
);
pmu_fn!(counter_start, |base, mask, flags, value, a4, pmu| pmu
    .counter_start(base, mask, flags, value)
    .map(|_| 0));
pmu_fn!(counter_stop, |base, mask, flags, a3, a4, pmu| pmu
    .counter_stop(base, mask, flags)
    .map(|_| 0));
pmu_fn!(counter_fw_read, |idx, a1, a2, a3, a4, pmu| pmu
    .counter_fw_read(idx));
pmu_fn!(counter_fw_read_hi, |idx, a1, a2, a3, a4, pmu| pmu
    .counter_fw_read_hi(idx));
pmu_fn!(snapshot_set_shmem, |lo, hi, flags, a3, a4, pmu| pmu
    .snapshot_set_shmem(lo, hi, flags)
    .map(|_| 0));
pmu_fn!(event_get_info, |lo, hi, num, flags, a4, pmu| pmu
    .event_get_info(lo, hi, num, flags)
    .map(|_| 0));
pmu_fn!(not_supported, |a0, a1, a2, a3, a4, pmu| Err(
    Error::NotSupported
));

/// Dispatch one STA call (EID 0x535441) for the calling hart.
pub fn sta<M: SupervisorMemory + ?Sized>(
    sta: &mut StealTime,
    mem: &mut M,
    function: usize,
    a: [usize; 6],
) -> SbiRet {
    ret(match function {
        sbi_spec::sta::SET_SHMEM => sta
            .set_shmem(mem, a[0] as u64, a[1] as u64, a[2] as u64)
            .map(|_| 0),
        _ => Err(Error::NotSupported),
    })
}
