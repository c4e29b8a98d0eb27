//! The C API on Linux (`include/sifive_linux_perf.h`), over the
//! collector ([`crate::collect`]).
//!
//! Arguments that only mean something with a hardware trace encoder are
//! accepted and documented here: `num_funnels` (no funnel in software),
//! and `SBABufferSize`, which becomes the per-thread trace buffer size
//! (0, "use the encoder's SRAM" on hardware, selects 1 MiB). `num_cores`
//! is the number of trace sources: the most threads traced at once (the
//! Nexus SRC field is sized for it).
//!
//! `HPMTRACE_BUFFER_BYTES=<n>[K|M]` overrides `SBABufferSize`;
//! `HPMTRACE_STAGE_BYTES=<n>[K|M]` sets the per-thread staging buffer
//! records wait in until they are encoded (default: the trace buffer size
//! within 64 KiB..16 MiB).
//!
//! What the library adds to the traced process ([`crate::collect`] has
//! the details): the first init call starts the encoder thread
//! (`hpmtrace-enc`, every signal blocked), which encodes full staging
//! chunks while the program runs, and registers `pthread_atfork` handlers
//! (once per process, with or without the thread), so that a child never
//! inherits a lock held by a thread it does not have.
//! `HPMTRACE_ENCODER_THREAD=0` (also `no`, `false`) starts no thread:
//! samples are then encoded at `perfTraceOff()` and `perfWriteTrace()`,
//! and by a recording thread whenever its staging buffer is full.
//!
//! An event the machine cannot count is left out of the header, named on
//! stderr, and the init call succeeds (`ctrInfo` 0); with
//! `HPMTRACE_SW_FALLBACK=1` (also `yes`, `true`) a Linux software event
//! is counted in its place ([`crate::linux::software_stand_in`]; type 16,
//! which SiFive's decoder rejects).

#![allow(non_snake_case)] // C names, kept as the original API spells them

use super::InitArgs;
use crate::collect::{self, Config, Mode, Unavailable};
use crate::format::RecordType;
use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void, CStr};
use std::path::PathBuf;

/// Whether environment variable `name` is set to one of `values`.
fn env_is(name: &str, values: [&str; 3]) -> bool {
    std::env::var(name).is_ok_and(|v| values.contains(&v.as_str()))
}

/// A byte count from environment variable `name`: `<n>[K|M]`.
fn env_bytes(name: &str) -> Option<usize> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let (num, mul) = match v.as_bytes().last()? {
        b'K' | b'k' => (&v[..v.len() - 1], 1 << 10),
        b'M' | b'm' => (&v[..v.len() - 1], 1 << 20),
        _ => (v, 1),
    };
    match num.parse::<usize>() {
        Ok(n) if n > 0 => Some(n.saturating_mul(mul)),
        _ => {
            eprintln!(
                "hpmtrace: ignoring {name}={v:?} (expected a positive number with optional K or M)"
            );
            None
        }
    }
}

fn fail(what: &str, msg: impl std::fmt::Display) -> c_int {
    eprintln!("hpmtrace: {what}: {msg}");
    -1
}

/// Shared body of the three init calls.
fn init(what: &str, a: InitArgs<'_>, mode: Mode) -> c_int {
    let mut events = Vec::new();
    for (i, e) in a.list.iter().enumerate() {
        let Some(event) = e.event() else {
            let (t, code) = (e.r#type, e.code_or_cache[0]);
            return fail(
                what,
                format_args!("perfEvent {i}: unsupported type {t} / code {code}"),
            );
        };
        events.push(event);
    }
    let cfg = Config {
        count_type: a.count_type,
        events,
        channel: a.channel,
        // A program built unchanged can record more than it asked for.
        buffer_bytes: env_bytes("HPMTRACE_BUFFER_BYTES").unwrap_or(a.sba as usize),
        stage_bytes: env_bytes("HPMTRACE_STAGE_BYTES").unwrap_or(0),
        max_threads: a.cores,
        unavailable: if env_is("HPMTRACE_SW_FALLBACK", ["1", "yes", "true"]) {
            Unavailable::SoftwareStandIn
        } else {
            Unavailable::LeaveOut
        },
        encoder_thread: !env_is("HPMTRACE_ENCODER_THREAD", ["0", "no", "false"]),
        mode,
    };
    if let Err(e) = collect::configure(&cfg) {
        return fail(what, e);
    }
    // Report back slot and counter_info like the original library.
    if let Some(h) = collect::header() {
        let assigned = crate::counters::assign_slots(&cfg.events).unwrap_or([0; 32]);
        for (e, &slot) in a.list.iter_mut().zip(&assigned) {
            e.ctrIdx = slot as c_uint;
            // 0 for an event left out (not counted, not in the header).
            e.ctrInfo = h.counters[slot as usize].map_or(0, |d| d.info.to_u32() as c_ulong);
        }
    }
    0
}

// `perfTimerISRInit`: a per-thread timer signal (SIGPROF) samples the
// calling thread.
perf_init_entry_points!(
    init,
    max_cores: crate::nexus::MAX_SOURCES,
    manual: Mode::Manual,
    entry_exit: Mode::FuncEntryExit,
    timer: |interval_us| Mode::Timer { interval_us },
);

/// Body of `perfWriteCntrs`, called by the assembly entry point with the
/// caller's return address.
#[no_mangle]
pub extern "C" fn hpmtrace_write_cntrs_at(pc: usize) -> c_int {
    if !collect::is_on() {
        return if collect::header().is_some() { 0 } else { -1 };
    }
    collect::record(RecordType::Manual, pc as u64, 0);
    0
}

perf_write_cntrs_entry!(hpmtrace_write_cntrs_at);

/// `int perfTraceOn(void)`: writes the header, starts recording; non-zero
/// before an init call.
#[no_mangle]
pub extern "C" fn perfTraceOn() -> c_int {
    match collect::trace_on() {
        Ok(()) => 0,
        Err(e) => fail("perfTraceOn", e),
    }
}

/// `int perfTraceOff(void)`.
#[no_mangle]
pub extern "C" fn perfTraceOff() -> c_int {
    collect::trace_off();
    0
}

/// `int perfWriteTrace(char *file)`: NULL writes `trace.rtd` in the
/// current directory.
///
/// # Safety
/// `file` must be null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn perfWriteTrace(file: *mut c_char) -> c_int {
    let path = if file.is_null() {
        PathBuf::from("trace.rtd")
    } else {
        PathBuf::from(CStr::from_ptr(file).to_string_lossy().into_owned())
    };
    let s = collect::stats();
    if s.dropped_messages != 0 {
        eprintln!(
            "hpmtrace: trace buffer full, {} messages dropped (increase SBABufferSize)",
            s.dropped_messages
        );
    }
    if s.untraced_threads != 0 {
        eprintln!(
            "hpmtrace: {} threads were not traced: more threads than perfInit's num_cores",
            s.untraced_threads
        );
    }
    if s.wide_overflows != 0 {
        eprintln!(
            "hpmtrace: {} counter intervals exceeded 2^48 and are recorded modulo 2^48",
            s.wide_overflows
        );
    }
    match collect::write_trace(&path) {
        Ok(()) => 0,
        Err(e) => fail("perfWriteTrace", format_args!("{}: {e}", path.display())),
    }
}

/// Function entry hook for `-finstrument-functions`.
#[no_mangle]
pub extern "C" fn __cyg_profile_func_enter(this_fn: *mut c_void, call_site: *mut c_void) {
    collect::hook(RecordType::FuncEnter, this_fn as usize, call_site as usize);
}

/// Function exit hook for `-finstrument-functions`.
#[no_mangle]
pub extern "C" fn __cyg_profile_func_exit(this_fn: *mut c_void, call_site: *mut c_void) {
    collect::hook(RecordType::FuncExit, this_fn as usize, call_site as usize);
}
