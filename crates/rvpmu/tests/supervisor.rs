//! The supervisor-side typed API driving the engine in-process (the
//! transport is the engine's own ecall dispatch instead of `ecall`).

use rvpmu::counter::CounterInfo;
use rvpmu::dt::{EventMap, RangeRow};
use rvpmu::ecall::{self, SbiRet, EID_PMU, EID_STA};
use rvpmu::event::FwEvent;
use rvpmu::hart::{FwEventSet, IsaFeatures};
use rvpmu::sim::{BufMemory, SimHart};
use rvpmu::sta::StealTime;
use rvpmu::supervisor::{
    CounterCfgFlags, CounterStartFlags, CounterStopFlags, SbiCall, Supervisor,
};
use rvpmu::{Error, Pmu, PmuConfig};

struct Loopback {
    pmu: Pmu<'static, SimHart, BufMemory>,
    sta: StealTime,
}

impl SbiCall for Loopback {
    fn call(&mut self, eid: usize, fid: usize, a: [usize; 6]) -> SbiRet {
        match eid {
            EID_PMU => ecall::pmu(&mut self.pmu, fid, a),
            EID_STA => ecall::sta(&mut self.sta, self.pmu.mem_mut(), fid, a),
            _ => SbiRet {
                error: Error::NotSupported.code() as usize,
                value: 0,
            },
        }
    }
}

fn sbi() -> Supervisor<Loopback> {
    let m = EventMap::from_rows(
        &[],
        &[RangeRow {
            first: 0x10019,
            last: 0x10019,
            counters: 0x7fff8,
        }],
        &[],
        None,
    )
    .expect("valid rows");
    let map: &'static EventMap = Box::leak(Box::new(m));
    let hw = SimHart::qemu_virt();
    let present = hw.present();
    let cfg = PmuConfig {
        map,
        isa: IsaFeatures {
            sscofpmf: true,
            smcntrpmf: false,
            h: false,
        },
        fw_events: FwEventSet::all_standard(),
        snapshot: true,
        alias_window: false,
    };
    Supervisor(Loopback {
        pmu: Pmu::new(cfg, hw, BufMemory::virt(), present),
        sta: StealTime::new(),
    })
}

#[test]
fn typed_calls_round_trip() {
    let mut s = sbi();
    assert_eq!(s.pmu_num_counters(), 35);
    let info = s.pmu_counter_get_info(3);
    assert_eq!(
        CounterInfo::decode(info.value as u64),
        CounterInfo::Hardware {
            csr: 0xC03,
            width: 64
        }
    );
    let r = s.pmu_counter_config_matching(
        0,
        0x7_ffff_fffd,
        CounterCfgFlags::AUTO_START | CounterCfgFlags::CLEAR_VALUE,
        0xF0005,
        0,
    );
    assert_eq!(r.error, 0);
    let idx = r.value;
    s.0.pmu.record(FwEvent::SetTimer);
    s.0.pmu.record(FwEvent::SetTimer);
    assert_eq!(s.pmu_counter_fw_read(idx).value, 2);
    assert_eq!(s.pmu_counter_fw_read_hi(idx).value, 0);
    assert_eq!(s.pmu_counter_stop(idx, 1, CounterStopFlags::RESET).error, 0);
    assert_eq!(
        s.pmu_counter_start(idx, 1, CounterStartFlags::INIT_VALUE, 5)
            .error as isize,
        Error::InvalidParam.code()
    );
    assert_eq!(s.pmu_snapshot_set_shmem(Some(0x8008_0000)).error, 0);
    assert_eq!(s.pmu_snapshot_set_shmem(None).error, 0);
    assert_eq!(
        s.pmu_event_get_info(0x8008_0000, 0).error,
        0,
        "no entries: nothing to do"
    );
    assert_eq!(s.sta_set_shmem(Some(0x8008_0040)).error, 0);
    assert_eq!(
        s.sta_set_shmem(Some(0x8008_0041)).error as isize,
        Error::InvalidParam.code()
    );
}
