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
pub fn pmu<H: Hpm, M: SupervisorMemory>(
    pmu: &mut Pmu<'_, H, M>,
    function: usize,
    a: [usize; 6],
) -> SbiRet {
    let a = a.map(|x| x as u64);
    ret(match function {
        fid::NUM_COUNTERS => Ok(pmu.num_counters() as u64),
        fid::COUNTER_GET_INFO => pmu.counter_get_info(a[0]),
        fid::COUNTER_CONFIG_MATCHING => pmu.counter_config_matching(a[0], a[1], a[2], a[3], a[4]),
        fid::COUNTER_START => pmu.counter_start(a[0], a[1], a[2], a[3]).map(|_| 0),
        fid::COUNTER_STOP => pmu.counter_stop(a[0], a[1], a[2]).map(|_| 0),
        fid::COUNTER_FW_READ => pmu.counter_fw_read(a[0]),
        fid::COUNTER_FW_READ_HI => pmu.counter_fw_read_hi(a[0]),
        fid::SNAPSHOT_SET_SHMEM => pmu.snapshot_set_shmem(a[0], a[1], a[2]).map(|_| 0),
        fid::EVENT_GET_INFO => pmu.event_get_info(a[0], a[1], a[2], a[3]).map(|_| 0),
        _ => Err(Error::NotSupported),
    })
}

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
