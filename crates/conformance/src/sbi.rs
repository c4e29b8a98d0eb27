//! The checks' view of SBI: every call goes through the one S-mode client,
//! `rvpmu_sbi::client` (which holds the `ecall` instruction), with the
//! numbers from `sbi-spec` and the firmware events from `rvpmu_sbi::event`.
//! Calls whose flags or addresses the checks vary on purpose (undefined
//! bits, reserved values) go through the client's raw `ecall`; the others
//! are its typed calls. Nothing here interprets answers: the checks do that.

use core::fmt;
use rvpmu_sbi::client::{self as client, sbi};
use rvpmu_sbi::SbiRet;

/// Extension ids (`sbi-spec`).
pub mod eid {
    pub use sbi_spec::base::EID_BASE as BASE;
    pub use sbi_spec::dbcn::EID_DBCN as DBCN;
    pub use sbi_spec::hsm::EID_HSM as HSM;
    pub use sbi_spec::legacy::LEGACY_CONSOLE_PUTCHAR as LEGACY_PUTCHAR;
    pub use sbi_spec::pmu::EID_PMU as PMU;
    pub use sbi_spec::srst::EID_SRST as SRST;
    pub use sbi_spec::sta::EID_STA as STA;
    pub use sbi_spec::time::EID_TIME as TIME;
}

/// PMU function ids, flags (`sbi-spec`) and event indices (`rvpmu_sbi::event`).
pub mod pmu {
    use rvpmu_sbi::event::{self, FwEvent, General};
    use sbi_spec::pmu::flags::{
        CounterCfgFlags as Cfg, CounterStartFlags as Start, CounterStopFlags as Stop,
    };
    pub use sbi_spec::pmu::{
        COUNTER_CONFIG_MATCHING as CONFIG_MATCHING, COUNTER_FW_READ as FW_READ,
        COUNTER_FW_READ_HI as FW_READ_HI, COUNTER_GET_INFO, COUNTER_START as START,
        COUNTER_STOP as STOP, EVENT_GET_INFO, NUM_COUNTERS, SNAPSHOT_SET_SHMEM,
    };

    /// Table 8, config_matching flags.
    pub const CFG_SKIP_MATCH: usize = Cfg::SKIP_MATCH.bits();
    pub const CFG_CLEAR_VALUE: usize = Cfg::CLEAR_VALUE.bits();
    pub const CFG_AUTO_START: usize = Cfg::AUTO_START.bits();
    pub const CFG_SET_VUINH: usize = Cfg::SET_VUINH.bits();
    pub const CFG_SET_VSINH: usize = Cfg::SET_VSINH.bits();
    pub const CFG_SET_UINH: usize = Cfg::SET_UINH.bits();
    pub const CFG_SET_SINH: usize = Cfg::SET_SINH.bits();
    pub const CFG_SET_MINH: usize = Cfg::SET_MINH.bits();
    /// Table 10, start flags.
    pub const START_SET_INIT_VALUE: usize = Start::INIT_VALUE.bits();
    pub const START_INIT_SNAPSHOT: usize = Start::INIT_SNAPSHOT.bits();
    /// Table 12, stop flags.
    pub const STOP_RESET: usize = Stop::RESET.bits();
    pub const STOP_TAKE_SNAPSHOT: usize = Stop::TAKE_SNAPSHOT.bits();

    /// event_idx = type << 16 | code (Table 1), any type and code (the
    /// checks build undefined ones on purpose).
    pub const fn event(ty: usize, code: usize) -> usize {
        event::event_idx(ty as u8, code as u16) as usize
    }
    /// Hardware cache event: code = cache_id << 3 | op_id << 1 | result_id.
    pub const fn cache(id: usize, op: usize, result: usize) -> usize {
        event(1, id << 3 | op << 1 | result)
    }
    pub const HW_CPU_CYCLES: usize = event::event_idx(0, General::CpuCycles as u16) as usize;
    pub const HW_INSTRUCTIONS: usize = event::event_idx(0, General::Instructions as u16) as usize;
    pub const FW_SET_TIMER: usize = FwEvent::SetTimer.event_idx() as usize;
}

/// Standard SBI error codes (`sbi-spec`), signed as in a0.
pub mod err {
    use sbi_spec::binary as b;
    pub const SUCCESS: isize = b::RET_SUCCESS as isize;
    pub const FAILED: isize = b::RET_ERR_FAILED as isize;
    pub const NOT_SUPPORTED: isize = b::RET_ERR_NOT_SUPPORTED as isize;
    pub const INVALID_PARAM: isize = b::RET_ERR_INVALID_PARAM as isize;
    pub const DENIED: isize = b::RET_ERR_DENIED as isize;
    pub const INVALID_ADDRESS: isize = b::RET_ERR_INVALID_ADDRESS as isize;
    pub const ALREADY_AVAILABLE: isize = b::RET_ERR_ALREADY_AVAILABLE as isize;
    pub const ALREADY_STARTED: isize = b::RET_ERR_ALREADY_STARTED as isize;
    pub const ALREADY_STOPPED: isize = b::RET_ERR_ALREADY_STOPPED as isize;
    pub const NO_SHMEM: isize = b::RET_ERR_NO_SHMEM as isize;
    const INVALID_STATE: isize = b::RET_ERR_INVALID_STATE as isize;
    const BAD_RANGE: isize = b::RET_ERR_BAD_RANGE as isize;
    const TIMEOUT: isize = b::RET_ERR_TIMEOUT as isize;
    const IO: isize = b::RET_ERR_IO as isize;

    /// The spec's name of an error code, for reports.
    pub fn name(e: isize) -> &'static str {
        match e {
            SUCCESS => "SUCCESS",
            FAILED => "FAILED",
            NOT_SUPPORTED => "NOT_SUPPORTED",
            INVALID_PARAM => "INVALID_PARAM",
            DENIED => "DENIED",
            INVALID_ADDRESS => "INVALID_ADDRESS",
            ALREADY_AVAILABLE => "ALREADY_AVAILABLE",
            ALREADY_STARTED => "ALREADY_STARTED",
            ALREADY_STOPPED => "ALREADY_STOPPED",
            NO_SHMEM => "NO_SHMEM",
            INVALID_STATE => "INVALID_STATE",
            BAD_RANGE => "BAD_RANGE",
            TIMEOUT => "TIMEOUT",
            IO => "IO",
            _ => "UNKNOWN_ERROR",
        }
    }
}

/// `struct sbiret` as returned in a0/a1.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Ret {
    pub error: isize,
    pub value: usize,
}

impl Ret {
    pub fn ok(self) -> bool {
        self.error == err::SUCCESS
    }
}

impl From<(isize, usize)> for Ret {
    fn from((error, value): (isize, usize)) -> Self {
        Ret { error, value }
    }
}

impl From<SbiRet> for Ret {
    fn from(r: SbiRet) -> Self {
        Ret {
            error: r.error as isize,
            value: r.value,
        }
    }
}

impl fmt::Display for Ret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.error == err::SUCCESS {
            write!(f, "SUCCESS value={:#x}", self.value)
        } else if err::name(self.error) == "UNKNOWN_ERROR" {
            write!(f, "error {}", self.error)
        } else {
            f.write_str(err::name(self.error))
        }
    }
}

/// One raw call (the client's `ecall`).
#[inline(always)]
pub fn call(eid: usize, fid: usize, args: [usize; 6]) -> Ret {
    client::ecall(eid, fid, args).into()
}

/// The same call bracketed by two `instret` reads (the client's
/// `ecall_counted`). Returns the raw delta (the caller subtracts the empty
/// bracket).
#[inline(always)]
pub fn call_counted(eid: usize, fid: usize, args: [usize; 6]) -> (u64, Ret) {
    let (n, r) = client::ecall_counted(eid, fid, args);
    (n, r.into())
}

/// The cost of the empty bracket used by `call_counted`.
#[inline(always)]
pub fn empty_bracket() -> u64 {
    client::empty_bracket()
}

pub use client::Timed;

/// The same call timed between two edges of the `time` CSR (the client's
/// `ecall_timed`; the caller subtracts the empty bracket).
#[inline(always)]
pub fn call_timed(eid: usize, fid: usize, args: [usize; 6]) -> (Timed, Ret) {
    let (t, r) = client::ecall_timed(eid, fid, args);
    (t, r.into())
}

/// The empty bracket of `call_timed`.
#[inline(always)]
pub fn empty_timed() -> Timed {
    client::empty_timed()
}

pub fn spec_version() -> Ret {
    sbi().base_spec_version().into()
}
pub fn probe_extension(e: usize) -> Ret {
    sbi().base_probe_extension(e).into()
}
pub fn set_timer(t: u64) -> Ret {
    sbi().set_timer(t).into()
}

pub fn num_counters() -> Ret {
    call(eid::PMU, pmu::NUM_COUNTERS, [0; 6])
}
pub fn get_info(idx: usize) -> Ret {
    sbi().pmu_counter_get_info(idx).into()
}
/// Raw flags (the checks set undefined bits on purpose).
pub fn config_matching(base: usize, mask: usize, flags: usize, event: usize, data: u64) -> Ret {
    call(
        eid::PMU,
        pmu::CONFIG_MATCHING,
        [base, mask, flags, event, data as usize, 0],
    )
}
/// Raw flags.
pub fn start(base: usize, mask: usize, flags: usize, init: u64) -> Ret {
    call(
        eid::PMU,
        pmu::START,
        [base, mask, flags, init as usize, 0, 0],
    )
}
/// Raw flags.
pub fn stop(base: usize, mask: usize, flags: usize) -> Ret {
    call(eid::PMU, pmu::STOP, [base, mask, flags, 0, 0, 0])
}
pub fn fw_read(idx: usize) -> Ret {
    sbi().pmu_counter_fw_read(idx).into()
}
pub fn fw_read_hi(idx: usize) -> Ret {
    sbi().pmu_counter_fw_read_hi(idx).into()
}
/// Raw address halves and flags.
pub fn snapshot_set_shmem(lo: usize, hi: usize, flags: usize) -> Ret {
    call(eid::PMU, pmu::SNAPSHOT_SET_SHMEM, [lo, hi, flags, 0, 0, 0])
}
/// Raw address halves and flags.
pub fn event_get_info(lo: usize, hi: usize, num: usize, flags: usize) -> Ret {
    call(eid::PMU, pmu::EVENT_GET_INFO, [lo, hi, num, flags, 0, 0])
}
/// Raw address halves and flags.
pub fn sta_set_shmem(lo: usize, hi: usize, flags: usize) -> Ret {
    call(eid::STA, sbi_spec::sta::SET_SHMEM, [lo, hi, flags, 0, 0, 0])
}

pub fn hart_start(hartid: usize, addr: usize, opaque: usize) -> Ret {
    sbi().hart_start(hartid, addr, opaque).into()
}
pub fn hart_stop() -> Ret {
    sbi().hart_stop().into()
}
/// HSM hart_suspend with a retentive type (a non-retentive one that
/// succeeds does not come back here: see `rt::suspend_non_retentive`).
pub fn hart_suspend(kind: usize) -> Ret {
    sbi().hart_suspend(kind, 0, 0).into()
}

/// SRST system_reset; returns only when the firmware refuses. Raw
/// registers (the checks set the upper 32 bits on purpose).
pub fn system_reset(kind: usize, reason: usize) -> Ret {
    sbi().system_reset(kind, reason).into()
}
/// SRST reset types and reasons (`sbi-spec`).
pub mod srst {
    pub const SHUTDOWN: usize = sbi_spec::srst::RESET_TYPE_SHUTDOWN as usize;
    pub const REASON_NONE: usize = sbi_spec::srst::RESET_REASON_NO_REASON as usize;
    pub const REASON_SYSTEM_FAILURE: usize = sbi_spec::srst::RESET_REASON_SYSTEM_FAILURE as usize;
}

/// DBCN console_write_byte. Raw register (the checks set upper bits).
pub fn dbcn_write_byte(byte: usize) -> Ret {
    call(
        eid::DBCN,
        sbi_spec::dbcn::CONSOLE_WRITE_BYTE,
        [byte, 0, 0, 0, 0, 0],
    )
}
/// Legacy console_putchar (EID 0x01): the answer is a0 alone.
pub fn legacy_putchar(ch: usize) -> isize {
    sbi().legacy(eid::LEGACY_PUTCHAR, [ch, 0, 0, 0])
}

pub use rvpmu_rt::runtime::{shutdown, shutdown_failure};
