//! The C API of the SiFive Trace Performance Library, drop-in (same
//! names, signatures and `perfEvent` layout; headers in `include/`), in
//! two implementations: `linux` (the Linux collector, with `std`) and
//! `bare` (bare-metal riscv64, feature `bare-capi`). What they share is
//! here: the `perfEvent` layout, the checks of the init calls' arguments
//! (so a list or channel one accepts the other accepts too) and the
//! entry points both define alike. `no_std`.

use crate::format::{CountType, Event, EventType, ITC_CHANNELS, MAX_COUNTERS};
use core::ffi::{c_int, c_uint, c_ulong};
use core::sync::atomic::{AtomicU32, Ordering};

/// `perfEvent` as the C headers declare it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[allow(non_camel_case_types, non_snake_case)] // the C names
pub struct perfEvent {
    /// Output: the counter slot the event was given.
    pub ctrIdx: c_uint,
    /// SBI event type (0 general, 1 cache, 2 raw; 16 Linux software).
    pub r#type: c_int,
    /// `code`, or `cache_id, op_id, result_id` for type 1.
    pub code_or_cache: [c_int; 3],
    /// Raw event selector (type 2).
    pub event_data: c_ulong,
    /// Output: low 32 bits are SBI `counter_info` (CSR, msb index).
    pub ctrInfo: c_ulong,
}

impl perfEvent {
    /// The event this entry names, `None` for a type or code out of range.
    pub fn event(&self) -> Option<Event> {
        let code = self.code_or_cache[0];
        match EventType::from_u32(self.r#type as u32)? {
            EventType::HwGeneral => Some(Event::General {
                code: u16::try_from(code).ok()?,
            }),
            EventType::HwCache => Some(Event::Cache {
                cache_id: u16::try_from(code).ok()?,
                op_id: u8::try_from(self.code_or_cache[1]).ok()?,
                result_id: u8::try_from(self.code_or_cache[2]).ok()?,
            }),
            EventType::HwRaw => Some(Event::Raw {
                event_data: self.event_data,
            }),
            EventType::LinuxSoftware => Some(Event::LinuxSoftware {
                code: u16::try_from(code).ok()?,
            }),
        }
    }
}

/// The arguments every init call takes, checked: the ITC channel and the
/// count type. `n` is the list length the caller passed.
pub fn check_init_args(
    list_is_null: bool,
    n: c_int,
    chan: c_int,
    ct: c_int,
) -> Result<(u8, CountType), &'static str> {
    if !(0..=MAX_COUNTERS as c_int).contains(&n) || (list_is_null && n != 0) {
        return Err("numCntrs must be 0..32 with a non-null list");
    }
    if !(0..ITC_CHANNELS as c_int).contains(&chan) {
        return Err("itcChannel must be 0..31");
    }
    let Some(count_type) = u8::try_from(ct).ok().and_then(CountType::from_u8) else {
        return Err("cntType must be perfCount_Raw, perfCount_Delta or perfCount_DeltaXOR");
    };
    Ok((chan as u8, count_type))
}

/// `perfInit`'s `num_cores` (0: not called).
pub static NUM_CORES: AtomicU32 = AtomicU32::new(0);

/// An init call's arguments, checked ([`init_args`]).
pub struct InitArgs<'a> {
    /// `perfInit`'s `num_cores`.
    pub cores: u32,
    /// The caller's event list.
    pub list: &'a mut [perfEvent],
    /// The ITC channel.
    pub channel: u8,
    /// The count type.
    pub count_type: CountType,
    /// `SBABufferSize`.
    pub sba: u32,
}

/// The checks every init call makes first: `perfInit` was called, and
/// [`check_init_args`].
///
/// # Safety
/// `list` points to `n` valid `perfEvent`s (or is null with n == 0), not
/// otherwise accessed while the result lives.
pub unsafe fn init_args<'a>(
    list: *mut perfEvent,
    n: c_int,
    chan: c_int,
    ct: c_int,
    sba: u32,
) -> Result<InitArgs<'a>, &'static str> {
    let cores = NUM_CORES.load(Ordering::Relaxed);
    if cores == 0 {
        return Err("call perfInit() first");
    }
    let (channel, count_type) = check_init_args(list.is_null(), n, chan, ct)?;
    let list = if n == 0 {
        &mut [][..]
    } else {
        // SAFETY: the caller passes n valid entries (checked non-null).
        unsafe { core::slice::from_raw_parts_mut(list, n as usize) }
    };
    Ok(InitArgs {
        cores,
        list,
        channel,
        count_type,
        sba,
    })
}

/// Define the C symbol `int perfWriteCntrs(void)` as a jump to `$body`
/// (`extern "C" fn(pc: usize) -> c_int`) with the caller's return address
/// as `pc`: the record is "where perfWriteCntrs() was called", which only
/// an assembly entry can see. Both C APIs define it with this.
#[allow(unused_macros)] // a build with neither implementation (the no_std core)
macro_rules! perf_write_cntrs_entry {
    ($body:path) => {
        #[cfg(target_arch = "riscv64")]
        core::arch::global_asm!(
            ".globl perfWriteCntrs",
            ".type perfWriteCntrs,@function",
            "perfWriteCntrs:",
            "mv a0, ra",
            "tail {body}",
            ".size perfWriteCntrs, .-perfWriteCntrs",
            body = sym $body,
        );
        #[cfg(target_arch = "x86_64")]
        core::arch::global_asm!(
            ".globl perfWriteCntrs",
            ".type perfWriteCntrs,@function",
            "perfWriteCntrs:",
            "mov rdi, [rsp]",
            "jmp {body}",
            ".size perfWriteCntrs, .-perfWriteCntrs",
            body = sym $body,
        );
    };
}

/// Least sampling interval of `perfTimerISRInit`, in µs: a shorter one
/// is raised to it.
pub const MIN_TIMER_INTERVAL_US: c_int = 100;

/// Define `perfInit` (`num_cores` up to `$max` into [`NUM_CORES`],
/// `num_funnels` accepted and ignored: no funnel in software) and the
/// three init calls as `$init(name, args, mode)` on their checked
/// arguments ([`init_args`]; an `unsafe fn` with the contract below):
/// `perfManualInit` with `$manual`, `perfFuncEntryExitInit` with
/// `$entry_exit`, both with the C signature
/// `int f(perfEvent*, int numCntrs, int itcChannel, perfCountType_t, uint32_t SBABufferSize)`,
/// and `perfTimerISRInit`, which takes `int interval` (µs) last, with
/// `$timer(interval_us)` (the interval raised to at least
/// [`MIN_TIMER_INTERVAL_US`]). A refusal goes to the calling module's
/// `fail(name, why) -> c_int`. Both C APIs define them with this.
#[allow(unused_macros)] // as above
macro_rules! perf_init_entry_points {
    ($init:path, max_cores: $max:expr, manual: $manual:expr, entry_exit: $entry_exit:expr, timer: $timer:expr $(,)?) => {
        /// `int perfInit(int num_cores, int num_funnels)`: how many harts
        /// (bare metal) or threads (Linux) trace at once; `num_funnels` is
        /// accepted and ignored (no funnel in software).
        #[no_mangle]
        pub extern "C" fn perfInit(num_cores: core::ffi::c_int, num_funnels: core::ffi::c_int) -> core::ffi::c_int {
            if !(1..=$max as core::ffi::c_int).contains(&num_cores) {
                return fail("perfInit", format_args!("num_cores must be 1..{}", $max));
            }
            if num_funnels < 0 {
                return fail("perfInit", "num_funnels must be >= 0");
            }
            $crate::c_api::NUM_CORES.store(num_cores as u32, core::sync::atomic::Ordering::Relaxed);
            0
        }

        perf_init_entry_points!(@one $init, perfManualInit, $manual);
        perf_init_entry_points!(@one $init, perfFuncEntryExitInit, $entry_exit);

        /// `int perfTimerISRInit(perfEvent*, int, int, perfCountType_t, uint32_t, int interval)`:
        /// samples every `interval` µs (at least `c_api::MIN_TIMER_INTERVAL_US`).
        ///
        /// # Safety
        /// `list` must point to `n` valid `perfEvent`s (and the API's
        /// contract with the program holds).
        #[no_mangle]
        pub unsafe extern "C" fn perfTimerISRInit(
            list: *mut $crate::c_api::perfEvent,
            n: core::ffi::c_int,
            chan: core::ffi::c_int,
            ct: core::ffi::c_int,
            sba: u32,
            interval: core::ffi::c_int,
        ) -> core::ffi::c_int {
            let interval_us = interval.max($crate::c_api::MIN_TIMER_INTERVAL_US) as u64;
            let mode = ($timer)(interval_us);
            perf_init_entry_points!(@call $init, perfTimerISRInit, list, n, chan, ct, sba, mode)
        }
    };
    (@one $init:path, $name:ident, $mode:expr) => {
        #[doc = concat!("`int ", stringify!($name), "(perfEvent*, int, int, perfCountType_t, uint32_t)`.")]
        ///
        /// # Safety
        /// `list` must point to `n` valid `perfEvent`s (and the API's
        /// contract with the program holds).
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            list: *mut $crate::c_api::perfEvent,
            n: core::ffi::c_int,
            chan: core::ffi::c_int,
            ct: core::ffi::c_int,
            sba: u32,
        ) -> core::ffi::c_int {
            perf_init_entry_points!(@call $init, $name, list, n, chan, ct, sba, $mode)
        }
    };
    (@call $init:path, $name:ident, $list:ident, $n:ident, $chan:ident, $ct:ident, $sba:ident, $mode:expr) => {{
        let (init, mode): (unsafe fn(&str, $crate::c_api::InitArgs<'_>, _) -> core::ffi::c_int, _) = ($init, $mode);
        // SAFETY: the caller's contract, forwarded.
        match unsafe { $crate::c_api::init_args($list, $n, $chan, $ct, $sba) } {
            // SAFETY: as above.
            Ok(args) => unsafe { init(stringify!($name), args, mode) },
            Err(e) => fail(stringify!($name), e),
        }
    }};
}

#[cfg(all(feature = "bare-capi", target_os = "none", target_arch = "riscv64"))]
pub mod bare;
#[cfg(all(feature = "std", target_os = "linux"))]
pub mod linux;
