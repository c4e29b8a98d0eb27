//! Per-call cost probes: the `instret` delta around one ecall (firmware
//! included: instret counts every privilege mode), minus the cost of the
//! empty bracket, minimum of several repetitions. Only meaningful under
//! QEMU `-icount shift=0`, where it is exact and deterministic.
//!
//! Output: `COST <name> <instructions> <answer>` per call.

use crate::checks::Pmu;
use crate::mem::{Area, Shm};
use crate::sbi::{self, eid, pmu::*, Ret};
use core::cell::Cell;

const REPS: usize = 7;

/// Measures `call` REPS times, with `setup` before and `teardown` after
/// each repetition (neither is counted), and prints the minimum.
fn measure(
    name: &str,
    bracket: u64,
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
        best.saturating_sub(bracket),
        sbi::err::name(answer.error)
    );
}

fn counted(e: usize, fid: usize, a: [usize; 6]) -> (u64, Ret) {
    sbi::call_counted(e, fid, a)
}

pub fn run(slot: usize) {
    let bracket = (0..REPS).map(|_| sbi::empty_bracket()).min().unwrap_or(0);
    crate::println!("COST-BRACKET {bracket}");
    let p = Pmu::discover();
    let (hpm, fws) = (p.hpm_set(), p.fw_set());
    let none = || {};
    let ignore = |_| {};
    let release = |r: Ret| {
        if r.ok() {
            let _ = sbi::stop(r.value, 1, STOP_RESET);
        }
    };

    measure(
        "base.get_spec_version",
        bracket,
        none,
        || counted(eid::BASE, 0, [0; 6]),
        ignore,
    );
    measure(
        "base.probe_extension",
        bracket,
        none,
        || counted(eid::BASE, 3, [eid::PMU, 0, 0, 0, 0, 0]),
        ignore,
    );
    measure(
        "time.set_timer",
        bracket,
        none,
        || counted(eid::TIME, 0, [usize::MAX, 0, 0, 0, 0, 0]),
        ignore,
    );
    measure(
        "pmu.num_counters",
        bracket,
        none,
        || counted(eid::PMU, NUM_COUNTERS, [0; 6]),
        ignore,
    );
    measure(
        "pmu.counter_get_info",
        bracket,
        none,
        || counted(eid::PMU, COUNTER_GET_INFO, [0; 6]),
        ignore,
    );
    measure(
        "pmu.config_matching.hw",
        bracket,
        none,
        || {
            counted(
                eid::PMU,
                CONFIG_MATCHING,
                [0, hpm, CFG_CLEAR_VALUE, HW_CPU_CYCLES, 0, 0],
            )
        },
        release,
    );
    measure(
        "pmu.config_matching.fw",
        bracket,
        none,
        || {
            counted(
                eid::PMU,
                CONFIG_MATCHING,
                [0, fws, CFG_CLEAR_VALUE, FW_SET_TIMER, 0, 0],
            )
        },
        release,
    );

    // Counter-state calls on a matched cycles counter `h` / SET_TIMER
    // counter `f`; matched once, re-matched after every RESET.
    let match_hw = || sbi::config_matching(0, hpm, CFG_CLEAR_VALUE, HW_CPU_CYCLES, 0).value;
    let match_fw = || sbi::config_matching(0, fws, CFG_CLEAR_VALUE, FW_SET_TIMER, 0).value;
    let h = Cell::new(0);
    measure(
        "pmu.counter_start.init_value",
        bracket,
        || h.set(match_hw()),
        || counted(eid::PMU, START, [h.get(), 1, START_SET_INIT_VALUE, 0, 0, 0]),
        |_| {
            let _ = sbi::stop(h.get(), 1, STOP_RESET);
        },
    );
    measure(
        "pmu.counter_stop",
        bracket,
        || {
            h.set(match_hw());
            let _ = sbi::start(h.get(), 1, START_SET_INIT_VALUE, 0);
        },
        || counted(eid::PMU, STOP, [h.get(), 1, 0, 0, 0, 0]),
        |_| {
            let _ = sbi::stop(h.get(), 1, STOP_RESET);
        },
    );
    measure(
        "pmu.counter_stop.reset",
        bracket,
        || {
            h.set(match_hw());
            let _ = sbi::start(h.get(), 1, START_SET_INIT_VALUE, 0);
        },
        || counted(eid::PMU, STOP, [h.get(), 1, STOP_RESET, 0, 0, 0]),
        ignore,
    );
    measure(
        "pmu.counter_start",
        bracket,
        || h.set(match_hw()),
        || counted(eid::PMU, START, [h.get(), 1, 0, 0, 0, 0]),
        |_| {
            let _ = sbi::stop(h.get(), 1, STOP_RESET);
        },
    );
    // The other config_matching flag paths. skip_match: re-configuring
    // in place a cycles counter that is configured and stopped.
    measure(
        "pmu.config_matching.skip_match",
        bracket,
        || h.set(match_hw()),
        || {
            let flags = CFG_SKIP_MATCH | CFG_CLEAR_VALUE;
            counted(
                eid::PMU,
                CONFIG_MATCHING,
                [h.get(), 1, flags, HW_CPU_CYCLES, 0, 0],
            )
        },
        |_| {
            let _ = sbi::stop(h.get(), 1, STOP_RESET);
        },
    );
    measure(
        "pmu.config_matching.auto_start",
        bracket,
        none,
        || {
            let flags = CFG_CLEAR_VALUE | CFG_AUTO_START;
            counted(
                eid::PMU,
                CONFIG_MATCHING,
                [0, hpm, flags, HW_CPU_CYCLES, 0, 0],
            )
        },
        release,
    );
    measure(
        "pmu.config_matching.filter",
        bracket,
        none,
        || {
            let flags = CFG_CLEAR_VALUE | CFG_SET_SINH;
            counted(
                eid::PMU,
                CONFIG_MATCHING,
                [0, hpm, flags, HW_CPU_CYCLES, 0, 0],
            )
        },
        release,
    );
    measure(
        "pmu.config_matching.fw.auto_start",
        bracket,
        none,
        || {
            let flags = CFG_CLEAR_VALUE | CFG_AUTO_START;
            counted(
                eid::PMU,
                CONFIG_MATCHING,
                [0, fws, flags, FW_SET_TIMER, 0, 0],
            )
        },
        release,
    );
    let f = match_fw();
    let _ = sbi::start(f, 1, START_SET_INIT_VALUE, 0);
    measure(
        "pmu.counter_fw_read",
        bracket,
        none,
        || counted(eid::PMU, FW_READ, [f, 0, 0, 0, 0, 0]),
        ignore,
    );
    measure(
        "pmu.counter_fw_read_hi",
        bracket,
        none,
        || counted(eid::PMU, FW_READ_HI, [f, 0, 0, 0, 0, 0]),
        ignore,
    );
    let _ = sbi::stop(f, 1, STOP_RESET);

    let snap = Shm::of(slot, Area::Snapshot);
    measure(
        "pmu.snapshot_set_shmem",
        bracket,
        none,
        || counted(eid::PMU, SNAPSHOT_SET_SHMEM, [snap.addr(), 0, 0, 0, 0, 0]),
        |_| {
            let _ = sbi::snapshot_set_shmem(usize::MAX, usize::MAX, 0);
        },
    );
    let f = Cell::new(0);
    measure(
        "pmu.counter_stop.take_snapshot",
        bracket,
        || {
            let _ = sbi::snapshot_set_shmem(snap.addr(), 0, 0);
            f.set(match_fw());
            let _ = sbi::start(f.get(), 1, START_SET_INIT_VALUE, 0);
        },
        || counted(eid::PMU, STOP, [f.get(), 1, STOP_TAKE_SNAPSHOT, 0, 0, 0]),
        |_| {
            let _ = sbi::stop(f.get(), 1, STOP_RESET);
            let _ = sbi::snapshot_set_shmem(usize::MAX, usize::MAX, 0);
        },
    );
    measure(
        "pmu.counter_start.init_snapshot",
        bracket,
        || {
            let _ = sbi::snapshot_set_shmem(snap.addr(), 0, 0);
            h.set(match_hw());
        },
        || counted(eid::PMU, START, [h.get(), 1, START_INIT_SNAPSHOT, 0, 0, 0]),
        |_| {
            let _ = sbi::stop(h.get(), 1, STOP_RESET);
            let _ = sbi::snapshot_set_shmem(usize::MAX, usize::MAX, 0);
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
    measure(
        "pmu.event_get_info.1",
        bracket,
        || fill(1),
        || counted(eid::PMU, EVENT_GET_INFO, [info.addr(), 0, 1, 0, 0, 0]),
        ignore,
    );
    measure(
        "pmu.event_get_info.16",
        bracket,
        || fill(16),
        || counted(eid::PMU, EVENT_GET_INFO, [info.addr(), 0, 16, 0, 0, 0]),
        ignore,
    );

    let sta = Shm::of(slot, Area::Sta);
    measure(
        "sta.set_shmem",
        bracket,
        none,
        || counted(eid::STA, 0, [sta.addr(), 0, 0, 0, 0, 0]),
        |_| {
            let _ = sbi::sta_set_shmem(usize::MAX, usize::MAX, 0);
        },
    );
}
