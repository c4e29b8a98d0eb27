//! Raw SBI calls with the numbers written in the specification. Nothing here
//! interprets answers: the checks do that.

use core::arch::asm;
use core::fmt;

/// Extension ids (SBI base chapter and the PMU/STA chapters).
pub mod eid {
    pub const LEGACY_PUTCHAR: usize = 0x01;
    pub const LEGACY_SHUTDOWN: usize = 0x08;
    pub const BASE: usize = 0x10;
    pub const TIME: usize = 0x5449_4D45;
    pub const HSM: usize = 0x48_534D;
    pub const SRST: usize = 0x5352_5354;
    pub const PMU: usize = 0x50_4D55;
    pub const DBCN: usize = 0x4442_434E;
    pub const STA: usize = 0x53_5441;
}

/// PMU function ids (Table 20, PMU Function List).
pub mod pmu {
    pub const NUM_COUNTERS: usize = 0;
    pub const COUNTER_GET_INFO: usize = 1;
    pub const CONFIG_MATCHING: usize = 2;
    pub const START: usize = 3;
    pub const STOP: usize = 4;
    pub const FW_READ: usize = 5;
    pub const FW_READ_HI: usize = 6;
    pub const SNAPSHOT_SET_SHMEM: usize = 7;
    pub const EVENT_GET_INFO: usize = 8;

    /// Table 8, config_matching flags.
    pub const CFG_SKIP_MATCH: usize = 1 << 0;
    pub const CFG_CLEAR_VALUE: usize = 1 << 1;
    pub const CFG_AUTO_START: usize = 1 << 2;
    pub const CFG_SET_VUINH: usize = 1 << 3;
    pub const CFG_SET_VSINH: usize = 1 << 4;
    pub const CFG_SET_UINH: usize = 1 << 5;
    pub const CFG_SET_SINH: usize = 1 << 6;
    pub const CFG_SET_MINH: usize = 1 << 7;
    /// Table 10, start flags.
    pub const START_SET_INIT_VALUE: usize = 1 << 0;
    pub const START_INIT_SNAPSHOT: usize = 1 << 1;
    /// Table 12, stop flags.
    pub const STOP_RESET: usize = 1 << 0;
    pub const STOP_TAKE_SNAPSHOT: usize = 1 << 1;

    /// event_idx = type << 16 | code (Table 1).
    pub const fn event(ty: usize, code: usize) -> usize {
        ty << 16 | code
    }
    pub const HW_CPU_CYCLES: usize = event(0, 1);
    pub const HW_INSTRUCTIONS: usize = event(0, 2);
    pub const FW_SET_TIMER: usize = event(15, 5);
    /// Hardware cache event: code = cache_id << 3 | op_id << 1 | result_id.
    pub const fn cache(id: usize, op: usize, result: usize) -> usize {
        event(1, id << 3 | op << 1 | result)
    }
}

/// Standard SBI error codes (SBI base chapter, "Standard SBI Errors").
pub mod err {
    pub const SUCCESS: isize = 0;
    pub const FAILED: isize = -1;
    pub const NOT_SUPPORTED: isize = -2;
    pub const INVALID_PARAM: isize = -3;
    pub const DENIED: isize = -4;
    pub const INVALID_ADDRESS: isize = -5;
    pub const ALREADY_AVAILABLE: isize = -6;
    pub const ALREADY_STARTED: isize = -7;
    pub const ALREADY_STOPPED: isize = -8;
    pub const NO_SHMEM: isize = -9;

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
            -10 => "INVALID_STATE",
            -11 => "BAD_RANGE",
            -12 => "TIMEOUT",
            -13 => "IO",
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

/// One `ecall` with up to six arguments.
#[inline(always)]
pub fn call(eid: usize, fid: usize, args: [usize; 6]) -> Ret {
    let (error, value);
    // SAFETY: an ecall to the SBI implementation; it may read or write the
    // memory we pass by physical address, which the default (non-`nomem`)
    // asm options already tell the compiler.
    unsafe {
        asm!("ecall",
            inlateout("a0") args[0] => error,
            inlateout("a1") args[1] => value,
            in("a2") args[2], in("a3") args[3], in("a4") args[4], in("a5") args[5],
            in("a6") fid, in("a7") eid,
            options(nostack));
    }
    Ret { error, value }
}

/// The same ecall, bracketed by two `instret` reads in one asm block so the
/// only instructions between them are the ecall and whatever the firmware
/// runs. Returns the raw delta (the caller subtracts the empty bracket).
#[inline(always)]
pub fn call_counted(eid: usize, fid: usize, args: [usize; 6]) -> (u64, Ret) {
    let (error, value, before, after): (isize, usize, u64, u64);
    // SAFETY: as in `call`; reading instret needs mcounteren.IR, which any
    // SBI PMU implementation grants (S-mode reads counters directly).
    unsafe {
        asm!("csrr {b}, instret", "ecall", "csrr {a}, instret",
            b = out(reg) before, a = out(reg) after,
            inlateout("a0") args[0] => error,
            inlateout("a1") args[1] => value,
            in("a2") args[2], in("a3") args[3], in("a4") args[4], in("a5") args[5],
            in("a6") fid, in("a7") eid,
            options(nostack));
    }
    (after.wrapping_sub(before), Ret { error, value })
}

/// The cost of the empty bracket used by `call_counted`.
#[inline(always)]
pub fn empty_bracket() -> u64 {
    let (before, after): (u64, u64);
    // SAFETY: reads instret only.
    unsafe {
        asm!("csrr {b}, instret", "csrr {a}, instret",
            b = out(reg) before, a = out(reg) after, options(nostack, nomem));
    }
    after.wrapping_sub(before)
}

pub fn spec_version() -> Ret {
    call(eid::BASE, 0, [0; 6])
}
pub fn probe_extension(e: usize) -> Ret {
    call(eid::BASE, 3, [e, 0, 0, 0, 0, 0])
}
pub fn set_timer(t: u64) -> Ret {
    call(eid::TIME, 0, [t as usize, 0, 0, 0, 0, 0])
}

pub fn num_counters() -> Ret {
    call(eid::PMU, pmu::NUM_COUNTERS, [0; 6])
}
pub fn get_info(idx: usize) -> Ret {
    call(eid::PMU, pmu::COUNTER_GET_INFO, [idx, 0, 0, 0, 0, 0])
}
pub fn config_matching(base: usize, mask: usize, flags: usize, event: usize, data: u64) -> Ret {
    call(
        eid::PMU,
        pmu::CONFIG_MATCHING,
        [base, mask, flags, event, data as usize, 0],
    )
}
pub fn start(base: usize, mask: usize, flags: usize, init: u64) -> Ret {
    call(
        eid::PMU,
        pmu::START,
        [base, mask, flags, init as usize, 0, 0],
    )
}
pub fn stop(base: usize, mask: usize, flags: usize) -> Ret {
    call(eid::PMU, pmu::STOP, [base, mask, flags, 0, 0, 0])
}
pub fn fw_read(idx: usize) -> Ret {
    call(eid::PMU, pmu::FW_READ, [idx, 0, 0, 0, 0, 0])
}
pub fn fw_read_hi(idx: usize) -> Ret {
    call(eid::PMU, pmu::FW_READ_HI, [idx, 0, 0, 0, 0, 0])
}
pub fn snapshot_set_shmem(lo: usize, hi: usize, flags: usize) -> Ret {
    call(eid::PMU, pmu::SNAPSHOT_SET_SHMEM, [lo, hi, flags, 0, 0, 0])
}
pub fn event_get_info(lo: usize, hi: usize, num: usize, flags: usize) -> Ret {
    call(eid::PMU, pmu::EVENT_GET_INFO, [lo, hi, num, flags, 0, 0])
}
pub fn sta_set_shmem(lo: usize, hi: usize, flags: usize) -> Ret {
    call(eid::STA, 0, [lo, hi, flags, 0, 0, 0])
}

pub fn hart_start(hartid: usize, addr: usize, opaque: usize) -> Ret {
    call(eid::HSM, 0, [hartid, addr, opaque, 0, 0, 0])
}
pub fn hart_stop() -> Ret {
    call(eid::HSM, 1, [0; 6])
}
/// HSM hart_suspend with a retentive type (a non-retentive one that
/// succeeds does not come back here: see `rt::suspend_non_retentive`).
pub fn hart_suspend(kind: usize) -> Ret {
    call(eid::HSM, 3, [kind, 0, 0, 0, 0, 0])
}

/// SRST system_reset (FID 0); returns only when the firmware refuses.
pub fn system_reset(kind: usize, reason: usize) -> Ret {
    call(eid::SRST, 0, [kind, reason, 0, 0, 0, 0])
}
/// SRST reset types and reasons (SRST chapter, Tables "System Reset
/// Types" / "System Reset Reasons").
pub mod srst {
    pub const SHUTDOWN: usize = 0;
    pub const REASON_NONE: usize = 0;
    pub const REASON_SYSTEM_FAILURE: usize = 1;
}

/// DBCN console_write_byte (FID 2).
pub fn dbcn_write_byte(byte: usize) -> Ret {
    call(eid::DBCN, 2, [byte, 0, 0, 0, 0, 0])
}
/// Legacy console_putchar (EID 0x01): the answer is a0 alone.
pub fn legacy_putchar(ch: usize) -> isize {
    call(eid::LEGACY_PUTCHAR, 0, [ch, 0, 0, 0, 0, 0]).error
}

/// Power off: SRST shutdown, then the legacy call; never returns.
pub fn shutdown() -> ! {
    call(eid::SRST, 0, [0, 0, 0, 0, 0, 0]);
    call(eid::LEGACY_SHUTDOWN, 0, [0; 6]);
    park()
}

/// Power off reporting a failure: SRST shutdown with reason "system
/// failure", then a plain power-off if the firmware refused it.
pub fn shutdown_failure() -> ! {
    call(
        eid::SRST,
        0,
        [srst::SHUTDOWN, srst::REASON_SYSTEM_FAILURE, 0, 0, 0, 0],
    );
    shutdown()
}

fn park() -> ! {
    loop {
        // SAFETY: parks the hart if every call failed.
        unsafe { asm!("wfi") };
    }
}
