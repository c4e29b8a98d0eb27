//! SBI events as perf events: the `(type, config)` of
//! `perf_event_open` for each [`Event`] (the SBI and perf cache/op/result
//! ids coincide; a raw event's `event_data` is its config, as the RISC-V
//! SBI PMU driver expects), and the software stand-ins of a machine
//! without hardware counters.

use crate::format::{hw, Event};

const PERF_TYPE_HARDWARE: u32 = 0;
pub(super) const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_TYPE_HW_CACHE: u32 = 3;
const PERF_TYPE_RAW: u32 = 4;

/// `PERF_COUNT_SW_*` values used by the host fallback.
pub mod sw {
    /// cpu-clock (ns).
    pub const CPU_CLOCK: u16 = 0;
    /// task-clock (ns of CPU time of the thread).
    pub const TASK_CLOCK: u16 = 1;
    /// page-faults.
    pub const PAGE_FAULTS: u16 = 2;
    /// context-switches.
    pub const CONTEXT_SWITCHES: u16 = 3;
    /// cpu-migrations.
    pub const CPU_MIGRATIONS: u16 = 4;
    /// minor page faults.
    pub const PAGE_FAULTS_MIN: u16 = 5;
    /// cgroup-switches (context switches into another cgroup).
    pub const CGROUP_SWITCHES: u16 = 11;
}

/// perf's `(type, config)` for an event, or `None` if it has no perf
/// equivalent (the timestamp pseudo event, unknown general codes).
pub fn perf_attr_of(e: Event) -> Option<(u32, u64)> {
    match e {
        // SBI general codes 1..=10 are perf's PERF_COUNT_HW_* + 1.
        Event::General { code } => (hw::CPU_CYCLES..=hw::REF_CPU_CYCLES)
            .contains(&code)
            .then(|| (PERF_TYPE_HARDWARE, code as u64 - 1)),
        Event::Cache {
            cache_id,
            op_id,
            result_id,
        } => Some((
            PERF_TYPE_HW_CACHE,
            cache_id as u64 | (op_id as u64) << 8 | (result_id as u64) << 16,
        )),
        Event::Raw { event_data } => Some((PERF_TYPE_RAW, event_data)),
        Event::LinuxSoftware { code } => Some((PERF_TYPE_SOFTWARE, code as u64)),
    }
}

/// The software event a host without hardware counters counts instead of
/// `e` (a stand-in so collection runs; the header names what was really
/// counted). Time-like events become task-clock, the rest distinct
/// software counters so every slot stays a separate counter.
pub fn software_stand_in(e: Event) -> Event {
    let code = match e {
        Event::General {
            code: hw::CPU_CYCLES | hw::REF_CPU_CYCLES | hw::BUS_CYCLES,
        } => sw::TASK_CLOCK,
        Event::General {
            code: hw::INSTRUCTIONS,
        } => sw::CPU_CLOCK,
        Event::General {
            code: hw::CACHE_REFERENCES | hw::CACHE_MISSES,
        } => sw::PAGE_FAULTS,
        Event::General {
            code: hw::BRANCH_INSTRUCTIONS,
        } => sw::CONTEXT_SWITCHES,
        Event::General {
            code: hw::BRANCH_MISSES,
        } => sw::CPU_MIGRATIONS,
        Event::LinuxSoftware { code } => code,
        _ => sw::PAGE_FAULTS_MIN,
    };
    Event::LinuxSoftware { code }
}
