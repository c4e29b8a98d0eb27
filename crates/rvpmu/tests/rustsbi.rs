//! The RustSBI adapter: a firmware structure derived with
//! `#[derive(RustSBI)]`, its PMU and STA fields the adapter, answers every
//! PMU and STA call as the engine's own dispatch (`rvpmu::ecall`) answers
//! it on a twin engine, keeps event_get_info (FID 8) through
//! `RustSbiPmu::handle_ecall`, and keeps harts apart.

mod common;

use common::*;
use rustsbi::RustSBI;
use rvpmu::ecall::{self, SbiRet, EID_PMU, EID_STA};
use rvpmu::event::FwEvent;
use rvpmu::rustsbi::{Hart, RustSbiPmu, SlotError};
use rvpmu::sim::{BufMemory, Mode, SimHart, SIM_CYCLES};
use rvpmu::Pmu;
use std::cell::Cell;

thread_local! {
    /// The simulated executing hart of this test thread.
    static HART: Cell<usize> = const { Cell::new(0) };
}

fn hart_id() -> usize {
    HART.with(|h| h.get())
}

fn on_hart(id: usize) {
    HART.with(|h| h.set(id));
}

type Perf = RustSbiPmu<Pmu<'static, SimHart>, BufMemory, 2>;

struct Info;
impl rustsbi::EnvInfo for Info {
    fn mvendorid(&self) -> usize {
        0
    }
    fn marchid(&self) -> usize {
        0
    }
    fn mimpid(&self) -> usize {
        0
    }
}

/// A RustSBI firmware's structure with only the PMU and STA.
#[derive(RustSBI)]
struct Firmware<'a> {
    pmu: &'a Perf,
    sta: &'a Perf,
    info: Info,
}

/// What a firmware's trap handler does: the adapter first, then rustsbi.
fn ecall_through(fw: &Firmware<'_>, eid: usize, fid: usize, a: [usize; 6]) -> SbiRet {
    fw.pmu
        .handle_ecall(eid, fid, a)
        .unwrap_or_else(|| fw.handle_ecall(eid, fid, a))
}

/// The engine's own answer, on the twin.
fn ecall_direct(
    h: &mut Hart<Pmu<'static, SimHart>, BufMemory>,
    eid: usize,
    fid: usize,
    a: [usize; 6],
) -> SbiRet {
    match eid {
        EID_PMU => ecall::pmu(&mut h.pmu, &mut h.mem, fid, a),
        EID_STA => ecall::sta(&mut h.sta, &mut h.mem, fid, a),
        _ => unreachable!(),
    }
}

const EVINFO: u64 = 0x8009_0000;
const SNAP: u64 = 0x8008_0000;
const STA: u64 = 0x800a_0040;

/// event_idx of standard firmware event `code` (type 15).
fn fw_event_idx(code: usize) -> usize {
    0xf << 16 | code
}

/// The calls of the comparison: every PMU FID and STA, with valid and
/// rejected arguments, in an order that builds state (configured and
/// started counters, registered areas) for the later ones.
fn script() -> Vec<(usize, usize, [usize; 6])> {
    let snap = SNAP as usize;
    let mut s = vec![(EID_PMU, NUM, [0; 6])];
    for i in [0, 1, 2, 3, 18, 19, 34, 35, 4096, usize::MAX] {
        s.push((EID_PMU, INFO, [i, 0, 0, 0, 0, 0]));
    }
    s.extend([
        // config_matching: cycles on the HPM counters, filtered; a
        // firmware event; reserved flags; SKIP_MATCH on a configured one;
        // a set past the last counter.
        (
            EID_PMU,
            CFG,
            [
                3,
                0xffff,
                (CLEAR_VALUE | UINH) as usize,
                CYCLES as usize,
                0,
                0,
            ],
        ),
        (
            EID_PMU,
            CFG,
            [19, 0xffff, CLEAR_VALUE as usize, fw_event_idx(5), 0, 0],
        ),
        (EID_PMU, CFG, [19, 0xffff, 1 << 8, fw_event_idx(5), 0, 0]),
        (
            EID_PMU,
            CFG,
            [3, 1, SKIP_MATCH as usize, CYCLES as usize, 0, 0],
        ),
        (EID_PMU, CFG, [34, 3, 0, CYCLES as usize, 0, 0]),
        (EID_PMU, CFG, [3, 0xffff, 0, 0xf_ffff, 0, 0]),
        // start: with a value, with the snapshot before it is registered,
        // both flags, already started.
        (EID_PMU, START, [3, 1, SET_INIT_VALUE as usize, 100, 0, 0]),
        (EID_PMU, START, [19, 1, INIT_SNAPSHOT as usize, 0, 0, 0]),
        (
            EID_PMU,
            START,
            [19, 1, (SET_INIT_VALUE | INIT_SNAPSHOT) as usize, 0, 0, 0],
        ),
        (EID_PMU, START, [19, 1, SET_INIT_VALUE as usize, 0, 0, 0]),
        (EID_PMU, START, [3, 1, 0, 0, 0, 0]),
        // firmware counter reads, hardware counter rejected.
        (EID_PMU, FW_READ, [19, 0, 0, 0, 0, 0]),
        (EID_PMU, FW_READ, [3, 0, 0, 0, 0, 0]),
        (EID_PMU, FW_READ_HI, [19, 0, 0, 0, 0, 0]),
        (EID_PMU, FW_READ_HI, [99, 0, 0, 0, 0, 0]),
        // snapshot: misaligned, above 64 bits, firmware memory, flags, valid.
        (EID_PMU, SNAPSHOT, [snap + 8, 0, 0, 0, 0, 0]),
        (EID_PMU, SNAPSHOT, [snap, 1, 0, 0, 0, 0]),
        (EID_PMU, SNAPSHOT, [0x8000_0000, 0, 0, 0, 0, 0]),
        (EID_PMU, SNAPSHOT, [snap, 0, 1, 0, 0, 0]),
        (EID_PMU, SNAPSHOT, [snap, 0, 0, 0, 0, 0]),
        // stop with a snapshot, then reset; stopped already.
        (EID_PMU, STOP, [3, 1, TAKE_SNAPSHOT as usize, 0, 0, 0]),
        (
            EID_PMU,
            STOP,
            [19, 1, (TAKE_SNAPSHOT | RESET) as usize, 0, 0, 0],
        ),
        (EID_PMU, STOP, [3, 1, 0, 0, 0, 0]),
        (EID_PMU, STOP, [3, 1, 1 << 5, 0, 0, 0]),
        (EID_PMU, START, [3, 1, INIT_SNAPSHOT as usize, 0, 0, 0]),
        (EID_PMU, SNAPSHOT, [usize::MAX, usize::MAX, 0, 0, 0, 0]),
        // event_get_info: the entries, flags, unowned, misaligned, none.
        (EID_PMU, EVENT_INFO, [EVINFO as usize, 0, 4, 0, 0, 0]),
        (EID_PMU, EVENT_INFO, [EVINFO as usize, 0, 4, 1, 0, 0]),
        (EID_PMU, EVENT_INFO, [0x8000_0000, 0, 1, 0, 0, 0]),
        (EID_PMU, EVENT_INFO, [EVINFO as usize + 8, 0, 1, 0, 0, 0]),
        (EID_PMU, EVENT_INFO, [EVINFO as usize, 0, 0, 0, 0, 0]),
        // FIDs the spec does not define, and 32-bit FIDs with upper bits
        // set (the engine reads the low 32 bits).
        (EID_PMU, 9, [0; 6]),
        (EID_PMU, usize::MAX, [0; 6]),
        (EID_PMU, 1 << 32, [0; 6]),
        (EID_PMU, 1 << 32 | INFO, [3, 0, 0, 0, 0, 0]),
        (
            EID_PMU,
            1 << 32 | EVENT_INFO,
            [EVINFO as usize, 0, 4, 0, 0, 0],
        ),
        // STA: flags, misaligned, unowned, above 64 bits, valid, FID 1,
        // FID 0 with upper bits, disable.
        (EID_STA, 0, [STA as usize, 0, 1, 0, 0, 0]),
        (EID_STA, 0, [STA as usize + 8, 0, 0, 0, 0, 0]),
        (EID_STA, 0, [0x8000_0000, 0, 0, 0, 0, 0]),
        (EID_STA, 0, [STA as usize, 1, 0, 0, 0, 0]),
        (EID_STA, 0, [STA as usize, 0, 0, 0, 0, 0]),
        (EID_STA, 1, [0; 6]),
        (EID_STA, 1 << 32, [STA as usize + 64, 0, 0, 0, 0, 0]),
        (EID_STA, 0, [usize::MAX, usize::MAX, 0, 0, 0, 0]),
    ]);
    s
}

/// The entries event_get_info reads: cycles, a firmware event, an event
/// nobody counts, a raw event.
fn put_event_info(mem: &mut BufMemory) {
    for (i, (idx, data)) in [
        (CYCLES as u32, 0u64),
        (0xf_0005, 0),
        (0x1_0040, 0),
        (0x2_0000, 7),
    ]
    .into_iter()
    .enumerate()
    {
        let at = EVINFO + 16 * i as u64;
        mem.poke(at, &idx.to_le_bytes());
        mem.poke(at + 4, &u32::MAX.to_le_bytes());
        mem.poke(at + 8, &data.to_le_bytes());
    }
}

/// Between calls the hart runs: cycles in S and U, and firmware events.
fn run_a_little(h: &mut Hart<Pmu<'static, SimHart>, BufMemory>) {
    h.pmu.hw_mut().tick(Mode::S, SIM_CYCLES, 1000);
    h.pmu.hw_mut().tick(Mode::U, SIM_CYCLES, 500);
    h.pmu.record(FwEvent::SetTimer);
}

fn hart() -> Hart<Pmu<'static, SimHart>, BufMemory> {
    let P { pmu, mem } = qemu();
    let mut h = Hart::new(pmu, mem);
    put_event_info(&mut h.mem);
    h
}

#[test]
fn every_call_is_answered_as_the_engine_answers_it() {
    let perf = Perf::new(hart_id);
    on_hart(1);
    perf.install(hart()).unwrap();
    let fw = Firmware {
        pmu: &perf,
        sta: &perf,
        info: Info,
    };
    let mut twin = hart();
    for (n, (eid, fid, a)) in script().into_iter().enumerate() {
        perf.with(run_a_little).unwrap();
        run_a_little(&mut twin);
        let got = ecall_through(&fw, eid, fid, a);
        let want = ecall_direct(&mut twin, eid, fid, a);
        assert_eq!(got, want, "call {n}: EID {eid:#x} FID {fid:#x} {a:x?}");
    }
    perf.with(|h| {
        let (m, t) = (&h.mem, &twin.mem);
        for at in [SNAP, EVINFO, STA & !0xfff] {
            assert_eq!(m.peek(at, 4096), t.peek(at, 4096), "memory at {at:#x}");
        }
        for i in 0..19 {
            assert_eq!(
                h.pmu.hw().counter(i),
                twin.pmu.hw().counter(i),
                "counter {i}"
            );
            assert_eq!(
                h.pmu.hw().event_reg(i),
                twin.pmu.hw().event_reg(i),
                "mhpmevent{i}"
            );
        }
        assert_eq!(h.pmu.started_mask(), twin.pmu.started_mask());
        assert_eq!(h.pmu.allocated_mask(), twin.pmu.allocated_mask());
        assert_eq!(h.sta, twin.sta);
        assert_eq!(
            h.mem.faults.get(),
            0,
            "no access outside the supervisor's memory"
        );
    })
    .unwrap();
}

#[test]
fn the_script_reaches_every_function_and_both_answers() {
    // The comparison above proves little if the calls all fail alike.
    let mut h = hart();
    let mut ok = [false; 10];
    let mut err = [false; 10];
    for (eid, fid, a) in script() {
        run_a_little(&mut h);
        let r = ecall_direct(&mut h, eid, fid, a);
        let slot = if eid == EID_STA {
            9
        } else {
            (fid as u32 as usize).min(9)
        };
        if r.error == 0 {
            ok[slot] = true;
        } else {
            err[slot] = true;
        }
    }
    assert_eq!(
        ok, [true; 10],
        "a successful call of each PMU FID 0..=8 and STA"
    );
    assert_eq!(
        &err[1..],
        &[true; 9],
        "a rejected call of each but num_counters"
    );
}

#[test]
fn event_get_info_is_kept_by_the_adapter_not_by_rustsbi() {
    let perf = Perf::new(hart_id);
    on_hart(0);
    perf.install(hart()).unwrap();
    let fw = Firmware {
        pmu: &perf,
        sta: &perf,
        info: Info,
    };
    let a = [EVINFO as usize, 0, 4, 0, 0, 0];
    // rustsbi's dispatch alone has no method for it.
    assert_eq!(
        fw.handle_ecall(EID_PMU, EVENT_INFO, a),
        SbiRet::not_supported()
    );
    assert_eq!(
        ecall_through(&fw, EID_PMU, EVENT_INFO, a),
        SbiRet::success(0)
    );
    let outputs: Vec<u32> = perf
        .with(|h| {
            (0..4)
                .map(|i| {
                    let b = h.mem.peek(EVINFO + 16 * i + 4, 4);
                    u32::from_le_bytes(b.try_into().unwrap())
                })
                .collect()
        })
        .unwrap();
    // Cycles and the firmware event are countable, the cache event and
    // the raw event (QEMU's map has no raw rows) are not.
    assert_eq!(outputs, [1, 1, 0, 0]);
    // The adapter answers nothing rustsbi passes on to the traits.
    for fid in 0..=SNAPSHOT {
        assert_eq!(
            perf.handle_ecall(EID_PMU, fid, [0; 6]),
            None,
            "PMU FID {fid}"
        );
    }
    assert_eq!(perf.handle_ecall(EID_STA, 0, [0; 6]), None);
    assert_eq!(perf.handle_ecall(0x10, 3, [EID_PMU, 0, 0, 0, 0, 0]), None);
    // Both extensions probe as present through rustsbi.
    for eid in [EID_PMU, EID_STA] {
        assert_eq!(
            fw.handle_ecall(0x10, 3, [eid, 0, 0, 0, 0, 0]),
            SbiRet::success(1)
        );
    }
}

#[test]
fn harts_have_their_own_engines() {
    let perf = Perf::new(hart_id);
    let fw = Firmware {
        pmu: &perf,
        sta: &perf,
        info: Info,
    };
    on_hart(1);
    assert_eq!(
        ecall_through(&fw, EID_PMU, NUM, [0; 6]),
        SbiRet::success(0),
        "no engine: no counters"
    );
    assert_eq!(
        ecall_through(&fw, EID_PMU, INFO, [0; 6]),
        SbiRet::not_supported()
    );
    assert_eq!(
        ecall_through(&fw, EID_STA, 0, [STA as usize, 0, 0, 0, 0, 0]),
        SbiRet::not_supported()
    );
    for id in [0, 1] {
        on_hart(id);
        perf.install(hart()).unwrap();
    }
    // A firmware counter counts SET_TIMER on hart 0 only.
    on_hart(0);
    let c = ecall_through(
        &fw,
        EID_PMU,
        CFG,
        [
            19,
            1,
            (CLEAR_VALUE | AUTO_START) as usize,
            fw_event_idx(5),
            0,
            0,
        ],
    );
    assert_eq!(c, SbiRet::success(19));
    perf.record(FwEvent::SetTimer);
    perf.record(FwEvent::SetTimer);
    on_hart(1);
    perf.record(FwEvent::SetTimer);
    assert_eq!(
        ecall_through(&fw, EID_PMU, FW_READ, [19, 0, 0, 0, 0, 0]),
        SbiRet::success(0)
    );
    on_hart(0);
    assert_eq!(
        ecall_through(&fw, EID_PMU, FW_READ, [19, 0, 0, 0, 0, 0]),
        SbiRet::success(2)
    );
    // A hart id past the slots has no engine.
    on_hart(2);
    assert_eq!(perf.install(hart()), Err(SlotError::NoEngine));
    assert_eq!(
        ecall_through(&fw, EID_PMU, INFO, [0; 6]),
        SbiRet::not_supported()
    );
}

#[test]
fn a_call_from_inside_a_call_on_the_same_hart_finds_the_slot_taken() {
    let perf = Perf::new(hart_id);
    on_hart(0);
    perf.install(hart()).unwrap();
    let inner = perf
        .with(|_| perf.handle_ecall(EID_PMU, EVENT_INFO, [EVINFO as usize, 0, 1, 0, 0, 0]))
        .unwrap();
    assert_eq!(inner, Some(SbiRet::failed()));
    assert_eq!(
        perf.with(|_| perf.with(|_| ())).unwrap(),
        Err(SlotError::Busy)
    );
    // Given back afterwards.
    assert_eq!(
        perf.handle_ecall(EID_PMU, EVENT_INFO, [EVINFO as usize, 0, 1, 0, 0, 0]),
        Some(SbiRet::success(0))
    );
}
