//! Per-call cost probes: the `instret` delta around one ecall (firmware
//! included: instret counts every privilege mode), minus the cost of the
//! empty bracket, minimum of several repetitions. Only meaningful under
//! QEMU `-icount shift=0`, where it is exact and deterministic.
//!
//! Output: `COST <name> <instructions> <answer>` per call.

use crate::checks::Pmu;
use crate::mem::{Area, Shm};
use crate::sbi::{self, eid, pmu::*, Ret};
use crate::text;
use core::cell::Cell;

const REPS: usize = 7;

/// The probes' output and the cost of the empty bracket they subtract.
struct Probes {
    bracket: u64,
}

impl Probes {
    /// Measures `call` REPS times, with `setup` before and `teardown` after
    /// each repetition (neither is counted), and prints the minimum.
    fn measure(
        &self,
        name: &str,
        mut setup: impl FnMut(),
        mut call: impl FnMut() -> (u64, Ret),
        mut teardown: impl FnMut(Ret),
    ) {
        let mut best = u64::MAX;
        let mut answer = Ret { error: 0, value: 0 };
        for _ in 0..REPS {
            setup();
            let (d, r) = call();
            teardown(r);
            best = best.min(d);
            answer = r;
        }
        crate::println!(
            "COST {name} {} {}",
            best.saturating_sub(self.bracket),
            sbi::err::name(answer.error)
        );
    }

    /// A call that needs nothing before or after it.
    fn plain(&self, name: &str, e: usize, fid: usize, a: [usize; 6]) {
        self.measure(name, || {}, || counted(e, fid, a), |_| {});
    }

    /// config_matching with `a`; the counter it matched is released after
    /// each repetition.
    fn matching(&self, name: &str, a: [usize; 6]) {
        let release = |r: Ret| {
            if r.ok() {
                let _ = sbi::stop(r.value, 1, STOP_RESET);
            }
        };
        self.measure(
            name,
            || {},
            || counted(eid::PMU, CONFIG_MATCHING, a),
            release,
        );
    }
}

fn counted(e: usize, fid: usize, a: [usize; 6]) -> (u64, Ret) {
    sbi::call_counted(e, fid, a)
}

pub fn run(slot: usize) {
    let bracket = (0..REPS).map(|_| sbi::empty_bracket()).min().unwrap_or(0);
    crate::println!("COST-BRACKET {bracket}");
    let probes = Probes { bracket };
    let p = Pmu::discover();
    let (hpm, fws) = (p.hpm_set(), p.fw_set());

    for (name, e, fid, a) in [
        ("base.get_spec_version", eid::BASE, 0, [0; 6]),
        (
            "base.probe_extension",
            eid::BASE,
            3,
            [eid::PMU, 0, 0, 0, 0, 0],
        ),
        ("time.set_timer", eid::TIME, 0, [usize::MAX, 0, 0, 0, 0, 0]),
        ("pmu.num_counters", eid::PMU, NUM_COUNTERS, [0; 6]),
        ("pmu.counter_get_info", eid::PMU, COUNTER_GET_INFO, [0; 6]),
    ] {
        probes.plain(name, e, fid, a);
    }
    let (cycles, set_timer) = (HW_CPU_CYCLES, FW_SET_TIMER);
    probes.matching(
        "pmu.config_matching.hw",
        [0, hpm, CFG_CLEAR_VALUE, cycles, 0, 0],
    );
    probes.matching(
        "pmu.config_matching.fw",
        [0, fws, CFG_CLEAR_VALUE, set_timer, 0, 0],
    );

    // Counter-state calls on a matched cycles counter `h` / SET_TIMER
    // counter `f`; matched once, re-matched after every RESET.
    let match_hw = || sbi::config_matching(0, hpm, CFG_CLEAR_VALUE, cycles, 0).value;
    let match_fw = || sbi::config_matching(0, fws, CFG_CLEAR_VALUE, set_timer, 0).value;
    let h = Cell::new(0);
    let reset_h = |_| {
        let _ = sbi::stop(h.get(), 1, STOP_RESET);
    };
    let started_h = || {
        h.set(match_hw());
        let _ = sbi::start(h.get(), 1, START_SET_INIT_VALUE, 0);
    };
    probes.measure(
        "pmu.counter_start.init_value",
        || h.set(match_hw()),
        || counted(eid::PMU, START, [h.get(), 1, START_SET_INIT_VALUE, 0, 0, 0]),
        reset_h,
    );
    probes.measure(
        "pmu.counter_stop",
        started_h,
        || counted(eid::PMU, STOP, [h.get(), 1, 0, 0, 0, 0]),
        reset_h,
    );
    probes.measure(
        "pmu.counter_stop.reset",
        started_h,
        || counted(eid::PMU, STOP, [h.get(), 1, STOP_RESET, 0, 0, 0]),
        |_| {},
    );
    probes.measure(
        "pmu.counter_start",
        || h.set(match_hw()),
        || counted(eid::PMU, START, [h.get(), 1, 0, 0, 0, 0]),
        reset_h,
    );
    // The other config_matching flag paths. skip_match: re-configuring
    // in place a cycles counter that is configured and stopped.
    probes.measure(
        "pmu.config_matching.skip_match",
        || h.set(match_hw()),
        || {
            let flags = CFG_SKIP_MATCH | CFG_CLEAR_VALUE;
            counted(eid::PMU, CONFIG_MATCHING, [h.get(), 1, flags, cycles, 0, 0])
        },
        reset_h,
    );
    for (name, set, flags, event) in [
        (
            "pmu.config_matching.auto_start",
            hpm,
            CFG_CLEAR_VALUE | CFG_AUTO_START,
            cycles,
        ),
        (
            "pmu.config_matching.filter",
            hpm,
            CFG_CLEAR_VALUE | CFG_SET_SINH,
            cycles,
        ),
        (
            "pmu.config_matching.fw.auto_start",
            fws,
            CFG_CLEAR_VALUE | CFG_AUTO_START,
            set_timer,
        ),
    ] {
        probes.matching(name, [0, set, flags, event, 0, 0]);
    }
    let f = match_fw();
    let _ = sbi::start(f, 1, START_SET_INIT_VALUE, 0);
    probes.plain("pmu.counter_fw_read", eid::PMU, FW_READ, [f, 0, 0, 0, 0, 0]);
    probes.plain(
        "pmu.counter_fw_read_hi",
        eid::PMU,
        FW_READ_HI,
        [f, 0, 0, 0, 0, 0],
    );
    let _ = sbi::stop(f, 1, STOP_RESET);

    let snap = Shm::of(slot, Area::Snapshot);
    let unset_snapshot = || {
        let _ = sbi::snapshot_set_shmem(usize::MAX, usize::MAX, 0);
    };
    probes.measure(
        "pmu.snapshot_set_shmem",
        || {},
        || counted(eid::PMU, SNAPSHOT_SET_SHMEM, [snap.addr(), 0, 0, 0, 0, 0]),
        |_| unset_snapshot(),
    );
    let f = Cell::new(0);
    probes.measure(
        "pmu.counter_stop.take_snapshot",
        || {
            let _ = sbi::snapshot_set_shmem(snap.addr(), 0, 0);
            f.set(match_fw());
            let _ = sbi::start(f.get(), 1, START_SET_INIT_VALUE, 0);
        },
        || counted(eid::PMU, STOP, [f.get(), 1, STOP_TAKE_SNAPSHOT, 0, 0, 0]),
        |_| {
            let _ = sbi::stop(f.get(), 1, STOP_RESET);
            unset_snapshot();
        },
    );
    probes.measure(
        "pmu.counter_start.init_snapshot",
        || {
            let _ = sbi::snapshot_set_shmem(snap.addr(), 0, 0);
            h.set(match_hw());
        },
        || counted(eid::PMU, START, [h.get(), 1, START_INIT_SNAPSHOT, 0, 0, 0]),
        |r| {
            reset_h(r);
            unset_snapshot();
        },
    );

    let info = Shm::of(slot, Area::EventInfo);
    let fill = |n: usize| {
        for i in 0..n {
            // The ten general events, then cache events.
            let ev = if i < 10 {
                event(0, i + 1)
            } else {
                cache(i - 10, 0, 0)
            };
            info.wr32(16 * i, ev as u32);
            info.wr32(16 * i + 4, 0);
            info.wr64(16 * i + 8, 0);
        }
    };
    for n in [1, 16] {
        probes.measure(
            text!("pmu.event_get_info.{n}").as_str(),
            || fill(n),
            || counted(eid::PMU, EVENT_GET_INFO, [info.addr(), 0, n, 0, 0, 0]),
            |_| {},
        );
    }

    let sta = Shm::of(slot, Area::Sta);
    probes.measure(
        "sta.set_shmem",
        || {},
        || counted(eid::STA, 0, [sta.addr(), 0, 0, 0, 0, 0]),
        |_| {
            let _ = sbi::sta_set_shmem(usize::MAX, usize::MAX, 0);
        },
    );
}
