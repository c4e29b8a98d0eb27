//! The C entry points of sifive_bare_perf.h. Arguments are checked as the
//! Linux library checks them (`super`); a refused call prints why
//! on the console and returns -1.

#![allow(non_snake_case)] // C names, kept as SiFive's API spells them

use super::InitArgs;
use crate::bare::console::warn;
use crate::bare::cores::{self, this_core, with_core, Core, Mode, MAX_CORES};
use crate::bare::platform::{Platform, This};
use crate::bare::{pmu, pool, timer};
use crate::dump::{self, DumpInfo};
use crate::format::{RecordType, MAX_COUNTERS};
use crate::nexus::write::WriterConfig;
use crate::stage::sample_words;
use core::ffi::{c_char, c_int, c_uint, c_ulong, c_void, CStr};
use core::fmt::Display;
use core::sync::atomic::Ordering;

/// Largest staging area per core: records wait there, raw, until they are
/// encoded into the trace buffer (when it is full, and at perfTraceOff and
/// perfWriteTrace); 64 KiB holds about a thousand records.
const STAGE_MAX: usize = 64 * 1024;

fn fail(what: &str, msg: impl Display) -> c_int {
    warn(format_args!("{what}: {msg}"));
    -1
}

/// Shared body of the three init calls: this hart's counters, buffer and
/// mode, and for the timer (`interval_us`) its sampling interval.
/// `perfTimerISRInit` samples this hart through the SBI timer: it needs
/// the timebase, and the program's trap vector must be installed and call
/// `perfTimerISR` on a supervisor timer interrupt.
///
/// # Safety
/// The crate's `tp` contract holds.
unsafe fn init(what: &str, a: InitArgs<'_>, (mode, interval_us): (Mode, Option<u64>)) -> c_int {
    if interval_us.is_some() && timer::TIMEBASE_HZ.load(Ordering::Relaxed) == 0 {
        return fail(
            what,
            "the timebase is unknown: call perfSetDeviceTree(dtb) or perfSetTimebaseFrequency(hz) first",
        );
    }
    let (cores, list) = (a.cores, a.list);
    let core = this_core();
    if core >= cores as usize {
        return fail(
            what,
            format_args!(
                "this hart's core index (tp = {core}) is not below perfInit's num_cores ({cores})"
            ),
        );
    }
    let events: [_; MAX_COUNTERS] = core::array::from_fn(|i| list.get(i).and_then(|p| p.event()));
    let bytes = match a.sba {
        // No trace-encoder SRAM here: an equal share of the pool.
        0 => pool::POOL_BYTES / cores as usize,
        b => b as usize,
    };
    let no_room = |what_for: &dyn Display| {
        let (free, all) = (pool::free(), pool::POOL_BYTES);
        fail(
            what,
            format_args!(
                "no room for a {what_for}: {free} of the {all}-byte pool (PERF_MEM_POOL_SIZE) left"
            ),
        )
    };
    let Some(buf) = pool::take(bytes) else {
        return no_room(&format_args!("{bytes}-byte trace buffer"));
    };
    let framing = WriterConfig {
        channel: a.channel,
        src_bits: WriterConfig::src_bits_for(cores),
        timestamp_bits: pmu::TIMESTAMP_BITS,
    };
    // SAFETY: the caller's contract.
    let done = unsafe {
        with_core(|slot| {
            if let Some(old) = slot.take() {
                This::release(old.counters.mask);
            }
            let counters = pmu::configure(what, a.count_type, &events[..list.len()]);
            // The staging area: as large as the buffer, at most STAGE_MAX.
            let words = (bytes.min(STAGE_MAX) / 8).max(sample_words(counters.values));
            let Some(stage) = pool::take_words(words) else {
                return Err(words * 8);
            };
            for (p, placed) in list.iter_mut().zip(counters.placed.iter()) {
                (p.ctrIdx, p.ctrInfo) = match placed {
                    Some((slot, info)) => (*slot as c_uint, info.to_u32() as c_ulong),
                    None => (c_uint::MAX, 0),
                };
            }
            *slot = Some(Core::new(mode, counters, framing, core as u16, buf, stage));
            Ok(())
        })
    };
    match done {
        Some(Ok(())) => match interval_us {
            Some(us) if timer::start(core, us).is_none() => fail(what, "cannot arm the timer"),
            _ => 0,
        },
        Some(Err(b)) => no_room(&format_args!("{b}-byte staging area")),
        None => fail(what, "called from inside the library (a hook or the timer)"),
    }
}

perf_init_entry_points!(
    init,
    max_cores: MAX_CORES,
    manual: (Mode::Manual, None),
    entry_exit: (Mode::FuncEntryExit, None),
    timer: |interval_us| (Mode::Timer, Some(interval_us)),
);

/// Body of `perfWriteCntrs` (the assembly entry passes the caller's
/// return address).
#[no_mangle]
pub extern "C" fn hpmtrace_write_cntrs_at(pc: usize) -> c_int {
    // SAFETY: the tp contract, which every caller of the C API accepts.
    unsafe { cores::record(RecordType::Manual, [pc as u64, 0]) };
    0
}

perf_write_cntrs_entry!(hpmtrace_write_cntrs_at);

/// `int perfTraceOn(void)`: every core starts recording (this one writes
/// its header now, the others at their next record); non-zero before an
/// init call on this hart.
#[no_mangle]
pub extern "C" fn perfTraceOn() -> c_int {
    // SAFETY: the tp contract.
    let configured = unsafe { with_core(|c| c.is_some()) };
    if configured != Some(true) {
        return fail("perfTraceOn", "call an init function on this hart first");
    }
    // SAFETY: the tp contract.
    unsafe { cores::trace_on() };
    0
}

/// `int perfTraceOff(void)`: every core stops recording, and what the
/// cores staged is encoded into their trace buffers (complete for a
/// debugger from here on). No other hart may call an init function or
/// `perfTraceOn` meanwhile.
#[no_mangle]
pub extern "C" fn perfTraceOff() -> c_int {
    cores::stop_and_wait();
    // SAFETY: the tp contract and the documented exclusion of init calls.
    unsafe { cores::for_each_stopped(0, |_, c, _| c.encode()) };
    0
}

/// `int perfTimerISR(void *pc)`: the program's trap handler calls it on a
/// supervisor timer interrupt with `sepc`. Re-arms the sampling timer and
/// records a sample at `pc`; returns 1, or 0 when this hart has no
/// sampling timer (the interrupt is the program's own).
#[no_mangle]
pub extern "C" fn perfTimerISR(pc: *mut c_void) -> c_int {
    if !timer::rearm(this_core()) {
        return 0;
    }
    // SAFETY: the tp contract.
    unsafe { cores::record(RecordType::Isr, [pc as u64, 0]) };
    1
}

/// `int perfSetTimebaseFrequency(uint64_t hz)`: the frequency of the
/// `time` CSR, for `perfTimerISRInit`'s interval.
#[no_mangle]
pub extern "C" fn perfSetTimebaseFrequency(hz: u64) -> c_int {
    if hz == 0 {
        return fail("perfSetTimebaseFrequency", "hz must be > 0");
    }
    timer::TIMEBASE_HZ.store(hz, Ordering::Relaxed);
    0
}

/// `int perfSetDeviceTree(void *dtb)`: the timebase from the device tree
/// the firmware passed (`/cpus/timebase-frequency`); in M-mode also the
/// CLINT whose `mtimecmp` the timer uses. The tree is checked first and its
/// NOP tokens removed in place (`rvpmu_dtb`).
///
/// # Safety
/// `dtb` points to a flattened device tree (its header's size is trusted)
/// that nothing else accesses during the call.
#[no_mangle]
pub unsafe extern "C" fn perfSetDeviceTree(dtb: *mut c_void) -> c_int {
    const WHAT: &str = "perfSetDeviceTree";
    if dtb.is_null() {
        return fail(WHAT, "dtb is NULL");
    }
    // SAFETY: the caller passes a device tree that is ours for the call.
    let fdt = match unsafe { rvpmu_dtb::open_at(dtb.cast()) } {
        Ok(f) => f,
        Err(e) => return fail(WHAT, format_args!("at {dtb:p}: {e}")),
    };
    let hz = fdt
        .find_node("/cpus")
        .and_then(|n| n.property("timebase-frequency"))
        .and_then(|p| p.as_usize());
    #[cfg(feature = "bare-machine")]
    {
        // M-mode arms the CLINT's mtimecmp itself.
        let clint = fdt
            .all_nodes()
            .find(|n| {
                n.compatible()
                    .is_some_and(|c| c.all().any(|c| c == "riscv,clint0" || c == "sifive,clint0"))
            })
            .and_then(|n| n.reg()?.next())
            .map(|r| r.starting_address as usize);
        let Some(base) = clint else {
            return fail(
                WHAT,
                "no riscv,clint0 node in the device tree (M-mode needs its mtimecmp)",
            );
        };
        crate::bare::platform::CLINT.store(base, Ordering::Relaxed);
    }
    match hz {
        Some(hz) if hz > 0 => perfSetTimebaseFrequency(hz as u64),
        _ => fail(WHAT, "no /cpus/timebase-frequency in the device tree"),
    }
}

/// `int perfWriteTrace(char *file)`: bare metal has no file system, so
/// each core's buffer goes to the SBI console as a framed hex dump named
/// `file` (NULL: "trace.rtd"); `hpmtrace import` turns the console log
/// into the `.rtd` file. Recording pauses during the dump. No other hart
/// may call an init function or `perfTraceOn` meanwhile.
///
/// # Safety
/// `file` is null or a NUL-terminated string; `tp` contract (header).
#[no_mangle]
pub unsafe extern "C" fn perfWriteTrace(file: *mut c_char) -> c_int {
    let name = if file.is_null() {
        "trace.rtd"
    } else {
        // SAFETY: the caller passes a NUL-terminated string.
        unsafe { CStr::from_ptr(file) }
            .to_str()
            .unwrap_or("trace.rtd")
    };
    let resume = cores::stop_and_wait();
    // SAFETY: the caller's contract (tp; no init elsewhere meanwhile).
    unsafe {
        cores::for_each_stopped(resume, |core, c, skipped| {
            c.encode();
            let buf = c.out.inner();
            let stats = c.replay.encoder().stats();
            if buf.dropped() != 0 {
                warn(format_args!(
                    "core {core}: trace buffer full, {} messages dropped (increase SBABufferSize)",
                    buf.dropped()
                ));
            }
            if skipped != 0 {
                warn(format_args!(
                    "core {core}: {skipped} samples skipped (a timer interrupt inside a hook)"
                ));
            }
            if stats.wide_overflows != 0 {
                warn(format_args!(
                    "core {core}: {} counter intervals exceeded 2^48 and are recorded modulo 2^48",
                    stats.wide_overflows
                ));
            }
            let info = DumpInfo {
                name,
                core: core as u32,
                src_bits: Some(c.out.config().src_bits),
            };
            dump::write(info, buf.data(), &mut |line| This::console_write(line));
        })
    };
    0
}

/// Function entry hook for `-finstrument-functions`.
#[no_mangle]
pub extern "C" fn __cyg_profile_func_enter(this_fn: *mut c_void, call_site: *mut c_void) {
    // SAFETY: the tp contract.
    unsafe { cores::record(RecordType::FuncEnter, [this_fn as u64, call_site as u64]) };
}

/// Function exit hook for `-finstrument-functions`.
#[no_mangle]
pub extern "C" fn __cyg_profile_func_exit(this_fn: *mut c_void, call_site: *mut c_void) {
    // SAFETY: the tp contract.
    unsafe { cores::record(RecordType::FuncExit, [this_fn as u64, call_site as u64]) };
}
