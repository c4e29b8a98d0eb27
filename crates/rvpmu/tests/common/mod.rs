//! Shared set-up of the engine tests: QEMU virt's event map and hart, the
//! platform config, and a raw-register call helper.
#![allow(dead_code)] // each test binary uses a different subset

use rvpmu::dt::{EventMap, RangeRow};
use rvpmu::ecall;
use rvpmu::hart::{FwEventSet, IsaFeatures};
use rvpmu::sim::{BufMemory, SimHart};
use rvpmu::{Error, Pmu, PmuConfig};

/// QEMU virt's node (FACTS 3): cycles -> 0,3..18; instructions -> 2,3..18;
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
    PmuConfig {
        map,
        isa,
        fw_events: FwEventSet::all_standard(),
        snapshot: true,
        alias_window: alias,
    }
}

pub fn sscofpmf() -> IsaFeatures {
    IsaFeatures {
        sscofpmf: true,
        smcntrpmf: false,
        h: true,
    }
}

pub type P = Pmu<'static, SimHart, BufMemory>;

pub fn qemu() -> P {
    let hw = SimHart::qemu_virt();
    let present = hw.present();
    Pmu::new(
        config(qemu_map(), sscofpmf(), false),
        hw,
        BufMemory::virt(),
        present,
    )
}

pub fn call(p: &mut P, fid: usize, a: &[u64]) -> Result<u64, Error> {
    let mut regs = [0usize; 6];
    for (r, v) in regs.iter_mut().zip(a) {
        *r = *v as usize;
    }
    let r = ecall::pmu(p, fid, regs);
    if r.error == 0 {
        Ok(r.value as u64)
    } else {
        Err(Error::from_code(r.error as isize).expect("a known SBI error code"))
    }
}
