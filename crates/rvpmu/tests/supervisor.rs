//! The supervisor-side typed API driving the engine in-process (the
//! transport is the engine's own ecall dispatch instead of `ecall`).

use rvpmu::dt::{EventMap, RangeRow};
use rvpmu::ecall::{self, SbiRet, EID_PMU, EID_STA};
use rvpmu::event::FwEvent;
use rvpmu::sim::SimHart;
use rvpmu::sta::StealTime;
use rvpmu::CounterInfo;
use rvpmu::Error;
use rvpmu_sbi::client::{
    CounterCfgFlags, CounterStartFlags, CounterStopFlags, SbiCall, Supervisor,
};

mod common;

struct Loopback {
    hart: common::P,
    sta: StealTime,
}

impl SbiCall for Loopback {
    fn call(&mut self, eid: usize, fid: usize, a: [usize; 6]) -> SbiRet {
        match eid {
            EID_PMU => ecall::pmu(&mut self.hart.pmu, &mut self.hart.mem, fid, a),
            EID_STA => ecall::sta(&mut self.sta, &mut self.hart.mem, fid, a),
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
    let isa = common::sscofpmf().with_h(false);
    let cfg = common::config(map, isa, false);
    Supervisor(Loopback {
        hart: common::engine(cfg, SimHart::qemu_virt()),
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
    s.0.hart.pmu.record(FwEvent::SetTimer);
    s.0.hart.pmu.record(FwEvent::SetTimer);
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

/// Records the registers of every call and answers SUCCESS with value 7.
#[derive(Default)]
struct Recorder(Vec<(usize, usize, [usize; 6])>);

impl SbiCall for Recorder {
    fn call(&mut self, eid: usize, fid: usize, a: [usize; 6]) -> SbiRet {
        self.0.push((eid, fid, a));
        SbiRet { error: 0, value: 7 }
    }
}

#[test]
fn non_pmu_calls_put_the_spec_numbers_in_the_registers() {
    use sbi_spec::{base, dbcn, hsm, rfnc, spi, srst, time};
    /// Legacy console_putchar (EID 0x01; sbi-spec has it behind its
    /// `legacy` feature, which rvpmu does not turn on).
    const LEGACY_CONSOLE_PUTCHAR: usize = 0x01;
    let mut s = Supervisor(Recorder::default());
    s.base_spec_version();
    s.base_impl_id();
    s.base_probe_extension(EID_PMU);
    s.set_timer(0x1234);
    s.send_ipi(0b101, 2);
    s.remote_fence(rfnc::REMOTE_SFENCE_VMA_ASID, 1, 0, 0x1000, 0x2000, 9);
    s.hart_start(3, 0x8020_0000, 42);
    s.hart_stop();
    s.hart_get_status(1);
    s.hart_suspend(0x8000_0000, 0x8020_0100, 5);
    s.system_reset(0, 1);
    s.console_write(8, 0x8030_0000, 0);
    s.console_read(8, 0x8030_0000, 0);
    s.console_write_byte(b'x');
    assert_eq!(
        s.legacy(LEGACY_CONSOLE_PUTCHAR, [b'y' as usize, 0, 0, 0]),
        0
    );
    let want: Vec<(usize, usize, [usize; 6])> = vec![
        (base::EID_BASE, base::GET_SBI_SPEC_VERSION, [0; 6]),
        (base::EID_BASE, base::GET_SBI_IMPL_ID, [0; 6]),
        (
            base::EID_BASE,
            base::PROBE_EXTENSION,
            [EID_PMU, 0, 0, 0, 0, 0],
        ),
        (time::EID_TIME, time::SET_TIMER, [0x1234, 0, 0, 0, 0, 0]),
        (spi::EID_SPI, spi::SEND_IPI, [0b101, 2, 0, 0, 0, 0]),
        (
            rfnc::EID_RFNC,
            rfnc::REMOTE_SFENCE_VMA_ASID,
            [1, 0, 0x1000, 0x2000, 9, 0],
        ),
        (hsm::EID_HSM, hsm::HART_START, [3, 0x8020_0000, 42, 0, 0, 0]),
        (hsm::EID_HSM, hsm::HART_STOP, [0; 6]),
        (hsm::EID_HSM, hsm::HART_GET_STATUS, [1, 0, 0, 0, 0, 0]),
        (
            hsm::EID_HSM,
            hsm::HART_SUSPEND,
            [0x8000_0000, 0x8020_0100, 5, 0, 0, 0],
        ),
        (srst::EID_SRST, srst::SYSTEM_RESET, [0, 1, 0, 0, 0, 0]),
        (
            dbcn::EID_DBCN,
            dbcn::CONSOLE_WRITE,
            [8, 0x8030_0000, 0, 0, 0, 0],
        ),
        (
            dbcn::EID_DBCN,
            dbcn::CONSOLE_READ,
            [8, 0x8030_0000, 0, 0, 0, 0],
        ),
        (
            dbcn::EID_DBCN,
            dbcn::CONSOLE_WRITE_BYTE,
            [b'x' as usize, 0, 0, 0, 0, 0],
        ),
        (LEGACY_CONSOLE_PUTCHAR, 0, [b'y' as usize, 0, 0, 0, 0, 0]),
    ];
    assert_eq!(s.0 .0, want);
}
