//! Per-call cost probes: the instructions one ecall costs, everything it
//! runs included (firmware, hypervisor, host kernel: every mode, every
//! layer), minus the cost of the empty bracket, minimum of several
//! repetitions. Only meaningful under QEMU `-icount shift=0`, where they
//! are exact and deterministic. Two ways to bracket the call ([`Method`]):
//!
//! - `instret` read before and after the ecall (`rvpmu.bench`): exact, but
//!   only where the kernel may read `instret` (on the firmware directly,
//!   under rvpmu-hv; KVM traps it and answers a virtual counter);
//! - the `time` CSR from one of its edges to the first edge after the
//!   call (`rvpmu.bench=time`), converted to instructions: under
//!   `-icount shift=0` one instruction is 1 ns of the whole machine's
//!   virtual time, and `time` ticks at the device tree's
//!   timebase-frequency, so a tick is [`INSTRUCTIONS_PER_SECOND`] /
//!   timebase-frequency instructions (100 at QEMU virt's 10 MHz). Waiting
//!   for the edges and counting the spin after the call makes a single
//!   call's figure good to 3 instructions either way (`sbi::Timed`), with
//!   setup and teardown outside the bracket as for `instret`. Any
//!   hypervisor lets a guest read `time` (Linux needs it).
//!
//! Output: `COST-METHOD instret|time <instructions per tick>`,
//! `COST-BRACKET <instructions>`, then `COST <name> <instructions>
//! <answer>` per call.

use crate::checks::Pmu;
use crate::mem::{Area, Shm};
use crate::sbi::{self, eid, pmu::*, Ret};
use crate::text;
use core::cell::Cell;

const REPS: usize = 7;

/// Instructions per second of virtual time under QEMU `-icount
/// shift=0` (2^0 ns per instruction).
pub const INSTRUCTIONS_PER_SECOND: u64 = 1_000_000_000;

/// How the probes bracket a call.
#[derive(Clone, Copy)]
pub enum Method {
    /// `instret` before and after the ecall.
    Instret,
    /// `time` edges around the ecall; `per_tick` instructions per tick.
    Time { per_tick: u64 },
}

impl Method {
    /// The time method for a timebase of `hz`, if a tick is a whole number
    /// of instructions (the edges must fall on instruction boundaries).
    pub fn time(hz: u64) -> Option<Method> {
        (hz > 0 && INSTRUCTIONS_PER_SECOND.is_multiple_of(hz)).then(|| Method::Time {
            per_tick: INSTRUCTIONS_PER_SECOND / hz,
        })
    }

    /// One bracketed call: its instructions (the empty bracket's
    /// included) and its answer.
    fn call(self, e: usize, fid: usize, a: [usize; 6]) -> (u64, Ret) {
        match self {
            Method::Instret => sbi::call_counted(e, fid, a),
            Method::Time { per_tick } => {
                let (t, r) = sbi::call_timed(e, fid, a);
                (t.instructions(per_tick), r)
            }
        }
    }

    fn empty(self) -> u64 {
        match self {
            Method::Instret => sbi::empty_bracket(),
            Method::Time { per_tick } => sbi::empty_timed().instructions(per_tick),
        }
    }
}

/// The probes' output and the cost of the empty bracket they subtract.
struct Probes {
    method: Method,
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

    /// One bracketed call.
    fn counted(&self, e: usize, fid: usize, a: [usize; 6]) -> (u64, Ret) {
        self.method.call(e, fid, a)
    }

    /// A call that needs nothing before or after it.
    fn plain(&self, name: &str, e: usize, fid: usize, a: [usize; 6]) {
        self.measure(name, || {}, || self.counted(e, fid, a), |_| {});
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
            || self.counted(eid::PMU, CONFIG_MATCHING, a),
            release,
        );
    }
}

pub fn run(slot: usize, method: Method) {
    match method {
        Method::Instret => crate::println!("COST-METHOD instret 0"),
        Method::Time { per_tick } => crate::println!("COST-METHOD time {per_tick}"),
    }
    let bracket = (0..REPS).map(|_| method.empty()).min().unwrap_or(0);
    crate::println!("COST-BRACKET {bracket}");
    let probes = Probes { method, bracket };
    let p = Pmu::discover();
    let (hpm, fws) = (p.hpm_set(), p.fw_set());
    // get_info of the first programmable counter: every implementation
    // with a PMU has one (a guest may lack the fixed counters 0..2).
    let first_hpm = hpm.trailing_zeros() as usize;

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
        (
            "pmu.counter_get_info",
            eid::PMU,
            COUNTER_GET_INFO,
            [first_hpm, 0, 0, 0, 0, 0],
        ),
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
    // Instructions with the flags Linux's perf gives `instructions:u`
    // (exclude_kernel: SINH), and CLEAR_VALUE.
    probes.matching(
        "pmu.config_matching.instret.u",
        [
            0,
            hpm,
            CFG_CLEAR_VALUE | CFG_SET_SINH,
            HW_INSTRUCTIONS,
            0,
            0,
        ],
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
        || probes.counted(eid::PMU, START, [h.get(), 1, START_SET_INIT_VALUE, 0, 0, 0]),
        reset_h,
    );
    probes.measure(
        "pmu.counter_stop",
        started_h,
        || probes.counted(eid::PMU, STOP, [h.get(), 1, 0, 0, 0, 0]),
        reset_h,
    );
    probes.measure(
        "pmu.counter_stop.reset",
        started_h,
        || probes.counted(eid::PMU, STOP, [h.get(), 1, STOP_RESET, 0, 0, 0]),
        |_| {},
    );
    probes.measure(
        "pmu.counter_start",
        || h.set(match_hw()),
        || probes.counted(eid::PMU, START, [h.get(), 1, 0, 0, 0, 0]),
        reset_h,
    );
    // The other config_matching flag paths. skip_match: re-configuring
    // in place a cycles counter that is configured and stopped.
    probes.measure(
        "pmu.config_matching.skip_match",
        || h.set(match_hw()),
        || {
            let flags = CFG_SKIP_MATCH | CFG_CLEAR_VALUE;
            probes.counted(eid::PMU, CONFIG_MATCHING, [h.get(), 1, flags, cycles, 0, 0])
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
        || probes.counted(eid::PMU, SNAPSHOT_SET_SHMEM, [snap.addr(), 0, 0, 0, 0, 0]),
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
        || probes.counted(eid::PMU, STOP, [f.get(), 1, STOP_TAKE_SNAPSHOT, 0, 0, 0]),
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
        || probes.counted(eid::PMU, START, [h.get(), 1, START_INIT_SNAPSHOT, 0, 0, 0]),
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
            || probes.counted(eid::PMU, EVENT_GET_INFO, [info.addr(), 0, n, 0, 0, 0]),
            |_| {},
        );
    }

    let sta = Shm::of(slot, Area::Sta);
    probes.measure(
        "sta.set_shmem",
        || {},
        || probes.counted(eid::STA, 0, [sta.addr(), 0, 0, 0, 0, 0]),
        |_| {
            let _ = sbi::sta_set_shmem(usize::MAX, usize::MAX, 0);
        },
    );
}
