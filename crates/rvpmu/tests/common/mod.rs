//! Shared set-up of the engine tests: QEMU virt's event map and hart, the
//! platform config, and a raw-register call helper.
#![allow(dead_code)] // each test binary uses a different subset

use rvpmu::dt::{EventMap, RangeRow};
use rvpmu::ecall;
use rvpmu::hart::{FwEventSet, IsaFeatures};
use rvpmu::sim::{BufMemory, SimHart};
use rvpmu::{Error, Pmu, PmuConfig};

/// PMU function ids.
pub const NUM: usize = 0;
pub const INFO: usize = 1;
pub const CFG: usize = 2;
pub const START: usize = 3;
pub const STOP: usize = 4;
pub const FW_READ: usize = 5;
pub const FW_READ_HI: usize = 6;
pub const SNAPSHOT: usize = 7;
pub const EVENT_INFO: usize = 8;

/// config_matching flags.
pub const SKIP_MATCH: u64 = 1;
pub const CLEAR_VALUE: u64 = 2;
pub const AUTO_START: u64 = 4;
pub const VUINH: u64 = 1 << 3;
pub const VSINH: u64 = 1 << 4;
pub const UINH: u64 = 1 << 5;
pub const SINH: u64 = 1 << 6;
pub const MINH: u64 = 1 << 7;
/// start flags.
pub const SET_INIT_VALUE: u64 = 1;
pub const INIT_SNAPSHOT: u64 = 2;
/// stop flags.
pub const RESET: u64 = 1;
pub const TAKE_SNAPSHOT: u64 = 2;

/// General events.
pub const CYCLES: u64 = 0x1;
pub const INSTRUCTIONS: u64 = 0x2;

/// QEMU virt's node (as `-machine virt,dumpdtb=` writes it): cycles -> 0,3..18; instructions -> 2,3..18;
/// three TLB events -> 3..18; no selectors, no raw rows.
pub fn qemu_map() -> &'static EventMap {
    let m = EventMap::from_rows(
        &[],
        &[
            RangeRow {
                first: 0x01,
                last: 0x01,
                counters: 0x7fff9,
            },
            RangeRow {
                first: 0x02,
                last: 0x02,
                counters: 0x7fffc,
            },
            RangeRow {
                first: 0x10019,
                last: 0x10019,
                counters: 0x7fff8,
            },
            RangeRow {
                first: 0x1001b,
                last: 0x1001b,
                counters: 0x7fff8,
            },
            RangeRow {
                first: 0x10021,
                last: 0x10021,
                counters: 0x7fff8,
            },
        ],
        &[],
        None,
    )
    .expect("valid rows");
    Box::leak(Box::new(m))
}

pub fn config(map: &'static EventMap, isa: IsaFeatures, alias: bool) -> PmuConfig<'static> {
    PmuConfig::new(map, isa)
        .with_fw_events(FwEventSet::all_standard())
        .with_snapshot(true)
        .with_alias_window(alias)
}

pub fn sscofpmf() -> IsaFeatures {
    IsaFeatures::none().with_sscofpmf(true).with_h(true)
}

/// One hart as a firmware holds it: the engine and the supervisor's
/// memory it is handed on each call.
pub struct P {
    pub pmu: Pmu<'static, SimHart>,
    pub mem: BufMemory,
}

impl P {
    pub fn mem(&self) -> &BufMemory {
        &self.mem
    }
    pub fn mem_mut(&mut self) -> &mut BufMemory {
        &mut self.mem
    }
}

impl std::ops::Deref for P {
    type Target = Pmu<'static, SimHart>;
    fn deref(&self) -> &Self::Target {
        &self.pmu
    }
}

impl std::ops::DerefMut for P {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.pmu
    }
}

/// The engine with `cfg` on `hw` (the counters it has) and QEMU virt's
/// memory.
pub fn engine(cfg: PmuConfig<'static>, hw: SimHart) -> P {
    P {
        pmu: Pmu::new(cfg, hw),
        mem: BufMemory::virt(),
    }
}

pub fn qemu() -> P {
    engine(config(qemu_map(), sscofpmf(), false), SimHart::qemu_virt())
}

pub fn call(p: &mut P, fid: usize, a: &[u64]) -> Result<u64, Error> {
    let mut regs = [0usize; 6];
    for (r, v) in regs.iter_mut().zip(a) {
        *r = *v as usize;
    }
    let r = ecall::pmu(&mut p.pmu, &mut p.mem, fid, regs);
    if r.error == 0 {
        Ok(r.value as u64)
    } else {
        Err(Error::from_code(r.error as isize).expect("a known SBI error code"))
    }
}
