//! The Linux collector behind the C API and [`crate::session`]: one
//! process-wide configuration, one trace stream per traced thread.
//!
//! Hot path (every record): one relaxed atomic load to see whether tracing
//! is on, a thread-local access, a clock read, one counter-group read and
//! the encoding into the thread's own buffer. No lock, no allocation, no
//! shared cache line written: each thread owns its stream, which is
//! published to the writer thread with a release store of its length.
//!
//! Streams: thread k (in order of first use) is Nexus source k; the SRC
//! field is wide enough for `max_threads` sources (`perfInit`'s
//! `num_cores`). Threads beyond that are not traced (counted in
//! [`Stats::untraced_threads`]). The `.rtd` file is the per-source streams
//! one after the other, each starting with its own full timestamp.

use crate::counters::{
    assign_slots, build_header, timestamp_position, Clock, CounterSource, SlotError,
};
use crate::encoder::Encoder;
use crate::format::{CountType, CounterInfo, Event, Header, RecordType, MAX_COUNTERS};
use crate::linux::{software_stand_in, OpenError, PerfGroup, ThreadTimer, TraceClock};
use crate::rtd::{RtdConfig, RtdWriter};
use crate::sink::{ByteSink, Stopped};
use std::cell::{Cell, UnsafeCell};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// How records are triggered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Explicit `perfWriteCntrs()` / [`crate::session::Session::mark`].
    Manual,
    /// `-finstrument-functions` hooks.
    FuncEntryExit,
    /// A per-thread timer signal every `interval_us` microseconds.
    Timer {
        /// Sampling period (at least 100 µs).
        interval_us: u64,
    },
}

/// What to collect.
#[derive(Clone, Debug)]
pub struct Config {
    /// Raw, Delta or DeltaXOR.
    pub count_type: CountType,
    /// Events to count (SBI encoding); `HW_TIMESTAMP` is the trace clock.
    pub events: Vec<Event>,
    /// ITC channel recorded in the IDTAGs.
    pub channel: u8,
    /// Trace buffer per thread, bytes; stops on wrap.
    pub buffer_bytes: usize,
    /// Most threads traced at once (sets the SRC field width).
    pub max_threads: u32,
    /// Count software events in place of hardware events the machine
    /// lacks (the header names the software event actually counted).
    pub software_fallback: bool,
    /// Trigger.
    pub mode: Mode,
}

/// Default per-thread buffer when the caller gives 0 (the SRAM choice on
/// hardware, which has no Linux meaning).
pub const DEFAULT_BUFFER_BYTES: usize = 1 << 20;

/// Width of the trace clock as declared for `HW_TIMESTAMP`.
pub const TIMESTAMP_BITS: u8 = crate::rtd::DEFAULT_TIMESTAMP_BITS;

/// Why a configuration was refused.
#[derive(Debug)]
pub enum Error {
    /// An argument is out of range.
    BadArgument(&'static str),
    /// The event list does not fit the counter slots.
    Slots(SlotError),
    /// A counter could not be opened.
    Open(OpenError),
    /// An OS call failed.
    Io(io::Error),
    /// Nothing configured yet.
    NotInitialized,
    /// A Rust session is already active.
    Busy,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::BadArgument(s) => write!(f, "bad argument: {s}"),
            Error::Slots(SlotError::TooManyEvents) => write!(
                f,
                "too many events: at most 3 fixed + 29 programmable counters"
            ),
            Error::Slots(SlotError::DuplicateFixed(c)) => {
                write!(f, "fixed-function event {c} listed twice")
            }
            Error::Open(e) => write!(f, "{e}"),
            Error::Io(e) => write!(f, "{e}"),
            Error::NotInitialized => write!(f, "not initialised: call an init function first"),
            Error::Busy => write!(f, "a trace session is already active"),
        }
    }
}

impl std::error::Error for Error {}

/// Immutable after configuration.
struct Collector {
    header: Header,
    perf_events: Vec<(usize, Event)>,
    ts_pos: Option<usize>,
    n: usize,
    rtd: RtdConfig,
    buffer_bytes: usize,
    max_threads: u32,
    mode: Mode,
    id: u64,
}

/// One thread's trace buffer, readable by other threads up to `published`.
struct StreamBuf {
    src: u16,
    data: Box<[UnsafeCell<u8>]>,
    published: AtomicUsize,
    dropped: AtomicU64,
    wide_overflows: AtomicU64,
    records: AtomicU64,
}

// Bytes past `published` are written only by the owning thread; bytes
// before it are never written again.
unsafe impl Sync for StreamBuf {}

struct SharedBuf {
    buf: Arc<StreamBuf>,
    len: usize,
}

impl ByteSink for SharedBuf {
    #[inline]
    fn put_bytes(&mut self, bytes: &[u8]) -> Result<(), Stopped> {
        let end = self.len + bytes.len();
        if end > self.buf.data.len() || self.buf.dropped.load(Ordering::Relaxed) != 0 {
            self.buf.dropped.fetch_add(1, Ordering::Relaxed);
            return Err(Stopped);
        }
        // SAFETY: [len, end) is past `published`, so only this thread
        // touches it; UnsafeCell<u8> has u8's layout.
        unsafe {
            let dst = self.buf.data.as_ptr().add(self.len) as *mut u8;
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len());
        }
        self.len = end;
        self.buf.published.store(end, Ordering::Release);
        Ok(())
    }
}

struct ThreadState {
    collector: u64,
    group: Option<PerfGroup>,
    enc: Encoder,
    writer: RtdWriter<SharedBuf>,
    generation: u64,
    readings: [u64; MAX_COUNTERS],
    _timer: Option<ThreadTimer>,
}

static COLLECTOR: AtomicPtr<Collector> = AtomicPtr::new(std::ptr::null_mut());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Tracing on (any mode).
static ON: AtomicBool = AtomicBool::new(false);
/// Tracing on and mode is function entry/exit: the hooks' only check.
static HOOKS_ON: AtomicBool = AtomicBool::new(false);
static GENERATION: AtomicU64 = AtomicU64::new(0);
static NEXT_SRC: AtomicU32 = AtomicU32::new(0);
static UNTRACED: AtomicU64 = AtomicU64::new(0);
static STREAMS: Mutex<Vec<Arc<StreamBuf>>> = Mutex::new(Vec::new());

thread_local! {
    static STATE: UnsafeCell<Option<Box<ThreadState>>> = const { UnsafeCell::new(None) };
    /// Set while this thread is inside the collector, so a timer signal
    /// arriving then is dropped instead of re-entering.
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

fn collector() -> Option<&'static Collector> {
    let p = COLLECTOR.load(Ordering::Acquire);
    // SAFETY: collectors are leaked, never freed (a process configures a
    // handful at most), so the reference stays valid.
    unsafe { p.as_ref() }
}

/// Install a configuration (tracing stays off). Replaces any previous one;
/// threads rebuild their state on their next record.
pub fn configure(cfg: &Config) -> Result<(), Error> {
    if cfg.channel >= crate::format::ITC_CHANNELS {
        return Err(Error::BadArgument("ITC channel must be 0..31"));
    }
    if cfg.max_threads == 0 || cfg.max_threads > 1 << 16 {
        return Err(Error::BadArgument("max_threads must be 1..65536"));
    }
    if cfg.events.len() > MAX_COUNTERS {
        return Err(Error::Slots(SlotError::TooManyEvents));
    }
    let slots = assign_slots(&cfg.events).map_err(Error::Slots)?;
    // Decide per event what is really counted: probe on this thread.
    let mut chosen = Vec::new();
    for (i, &e) in cfg.events.iter().enumerate() {
        let slot = slots[i];
        if e.is_timestamp() {
            chosen.push((
                slot,
                e,
                CounterInfo {
                    csr: 0,
                    width: TIMESTAMP_BITS,
                },
            ));
            continue;
        }
        let counted = match PerfGroup::open(&[(0, e)]) {
            Ok(_) => e,
            Err(err) if cfg.software_fallback => {
                let s = software_stand_in(e);
                PerfGroup::open(&[(0, s)]).map_err(|_| Error::Open(err))?;
                s
            }
            Err(err) => return Err(Error::Open(err)),
        };
        let csr = if matches!(counted, Event::LinuxSoftware { .. }) {
            0
        } else {
            0xc00 + slot as u16
        };
        chosen.push((slot, counted, CounterInfo { csr, width: 64 }));
    }
    let header = build_header(cfg.count_type, &chosen);
    let ts_pos = timestamp_position(&header);
    let perf_events: Vec<(usize, Event)> = header
        .iter()
        .enumerate()
        .filter(|(_, (_, c))| !c.event.is_timestamp())
        .map(|(pos, (_, c))| (pos, c.event))
        .collect();
    // The group as a whole must open too (group constraints).
    PerfGroup::open(&perf_events).map_err(Error::Open)?;
    let c = Collector {
        n: header.iter().count(),
        header,
        perf_events,
        ts_pos,
        rtd: RtdConfig {
            channel: cfg.channel,
            src_bits: RtdConfig::src_bits_for(cfg.max_threads),
            timestamp_bits: TIMESTAMP_BITS,
        },
        buffer_bytes: if cfg.buffer_bytes == 0 {
            DEFAULT_BUFFER_BYTES
        } else {
            cfg.buffer_bytes
        },
        max_threads: cfg.max_threads,
        mode: cfg.mode,
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
    };
    trace_off();
    STREAMS.lock().unwrap_or_else(|e| e.into_inner()).clear();
    NEXT_SRC.store(0, Ordering::Relaxed);
    UNTRACED.store(0, Ordering::Relaxed);
    COLLECTOR.store(Box::into_raw(Box::new(c)), Ordering::Release);
    if let Mode::Timer { interval_us } = cfg.mode {
        install_timer_handler()?;
        with_state(|st| {
            let t =
                ThreadTimer::start(crate::linux::gettid(), libc::SIGPROF, interval_us.max(100))?;
            st._timer = Some(t);
            Ok::<(), io::Error>(())
        })
        .unwrap_or(Ok(()))
        .map_err(Error::Io)?;
    }
    Ok(())
}

/// The header of the current configuration.
pub fn header() -> Option<Header> {
    collector().map(|c| c.header)
}

fn new_state(c: &Collector) -> Option<Box<ThreadState>> {
    let src = NEXT_SRC.fetch_add(1, Ordering::Relaxed);
    if src >= c.max_threads {
        UNTRACED.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    let group = PerfGroup::open(&c.perf_events).ok()?;
    let mut data = Vec::with_capacity(c.buffer_bytes);
    data.resize_with(c.buffer_bytes, || UnsafeCell::new(0u8));
    // The zeroed allocation may be lazily mapped: touch every page now so
    // page faults happen here, not in the middle of traced code.
    for page in data.chunks(4096) {
        // SAFETY: writing our own, not yet shared, buffer.
        unsafe { std::ptr::write_volatile(page[0].get(), 0) };
    }
    let buf = Arc::new(StreamBuf {
        src: src as u16,
        data: data.into_boxed_slice(),
        published: AtomicUsize::new(0),
        dropped: AtomicU64::new(0),
        wide_overflows: AtomicU64::new(0),
        records: AtomicU64::new(0),
    });
    STREAMS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(buf.clone());
    Some(Box::new(ThreadState {
        collector: c.id,
        group: Some(group),
        enc: Encoder::new(c.header),
        writer: RtdWriter::new(c.rtd, src as u16, SharedBuf { buf, len: 0 }),
        generation: 0,
        readings: [0; MAX_COUNTERS],
        _timer: None,
    }))
}

/// Run `f` on this thread's state, creating it if needed. `None` when the
/// thread is not traced, the collector is absent or the thread is exiting.
#[inline]
fn with_state<R>(f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    let c = collector()?;
    STATE
        .try_with(|cell| {
            // SAFETY: only this thread touches its STATE, and BUSY keeps
            // signal handlers from re-entering while a borrow is live.
            let slot = unsafe { &mut *cell.get() };
            match slot {
                Some(st) if st.collector == c.id => {}
                _ => *slot = new_state(c),
            }
            slot.as_deref_mut().map(f)
        })
        .ok()
        .flatten()
}

#[inline]
fn read_all(st: &mut ThreadState, c: &Collector) -> u64 {
    let ts = TraceClock.now();
    if let Some(g) = st.group.as_mut() {
        g.read(&mut st.readings[..c.n]);
    }
    if let Some(p) = c.ts_pos {
        st.readings[p] = ts;
    }
    ts
}

/// Write one record for the calling thread (if tracing is on).
#[inline]
pub fn record(kind: RecordType, a0: u64, a1: u64) {
    if !ON.load(Ordering::Relaxed) {
        return;
    }
    record_slow(kind, a0, a1)
}

#[inline(never)]
fn record_slow(kind: RecordType, a0: u64, a1: u64) {
    if BUSY.try_with(|b| b.replace(true)).unwrap_or(true) {
        return;
    }
    if let Some(c) = collector() {
        with_state(|st| {
            let ts = read_all(st, c);
            let gen = GENERATION.load(Ordering::Acquire);
            if st.generation != gen {
                let _ = st.enc.trace_on(&mut st.writer, &st.readings[..c.n], ts);
                st.generation = gen;
            }
            let _ = st
                .enc
                .record(&mut st.writer, kind, [a0, a1], &st.readings[..c.n], ts);
            let s = st.enc.stats();
            let b = &st.writer.inner().buf;
            b.records.store(s.records, Ordering::Relaxed);
            if s.wide_overflows != 0 {
                b.wide_overflows.store(s.wide_overflows, Ordering::Relaxed);
            }
        });
    }
    let _ = BUSY.try_with(|b| b.set(false));
}

/// Function entry/exit hook body.
#[inline(always)]
pub fn hook(kind: RecordType, this_fn: usize, call_site: usize) {
    if !HOOKS_ON.load(Ordering::Relaxed) {
        return;
    }
    record_slow(kind, this_fn as u64, call_site as u64);
}

/// Start recording: every traced thread writes a header (the calling
/// thread now, others at their next record) and Delta restarts here.
pub fn trace_on() -> Result<(), Error> {
    let c = collector().ok_or(Error::NotInitialized)?;
    let gen = GENERATION.fetch_add(1, Ordering::AcqRel) + 1;
    let _ = BUSY.try_with(|b| b.set(true));
    with_state(|st| {
        let ts = read_all(st, c);
        let _ = st.enc.trace_on(&mut st.writer, &st.readings[..c.n], ts);
        st.generation = gen;
    });
    let _ = BUSY.try_with(|b| b.set(false));
    ON.store(true, Ordering::Release);
    HOOKS_ON.store(c.mode == Mode::FuncEntryExit, Ordering::Release);
    Ok(())
}

/// Stop recording (state is kept; `trace_on` writes a new header).
pub fn trace_off() {
    HOOKS_ON.store(false, Ordering::Release);
    ON.store(false, Ordering::Release);
}

/// Whether tracing is on.
pub fn is_on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Collection statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Traced threads (streams).
    pub streams: usize,
    /// Records written, all threads.
    pub records: u64,
    /// Trace bytes recorded, all threads.
    pub bytes: u64,
    /// Messages dropped because a thread's buffer was full.
    pub dropped_messages: u64,
    /// Counter intervals past 2^48 (see [`crate::encoder::EncoderStats`]).
    pub wide_overflows: u64,
    /// Threads not traced because `max_threads` streams already existed.
    pub untraced_threads: u64,
}

/// Current statistics.
pub fn stats() -> Stats {
    let streams = STREAMS.lock().unwrap_or_else(|e| e.into_inner());
    let mut s = Stats {
        streams: streams.len(),
        untraced_threads: UNTRACED.load(Ordering::Relaxed),
        ..Default::default()
    };
    for b in streams.iter() {
        s.records += b.records.load(Ordering::Relaxed);
        s.bytes += b.published.load(Ordering::Acquire) as u64;
        s.dropped_messages += b.dropped.load(Ordering::Relaxed);
        s.wide_overflows += b.wide_overflows.load(Ordering::Relaxed);
    }
    s
}

/// The recorded trace: every stream's valid bytes, in source order.
pub fn snapshot() -> Vec<u8> {
    let mut streams: Vec<Arc<StreamBuf>> =
        STREAMS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    streams.sort_by_key(|b| b.src);
    let mut out = Vec::new();
    for b in streams {
        let n = b.published.load(Ordering::Acquire);
        // SAFETY: bytes below `published` are complete and never rewritten.
        let bytes = unsafe { std::slice::from_raw_parts(b.data.as_ptr() as *const u8, n) };
        out.extend_from_slice(bytes);
    }
    out
}

/// Write the trace to `path` (tracing state unchanged).
pub fn write_trace(path: &Path) -> Result<(), Error> {
    if collector().is_none() {
        return Err(Error::NotInitialized);
    }
    let data = snapshot();
    let mut f = std::fs::File::create(path).map_err(Error::Io)?;
    f.write_all(&data).map_err(Error::Io)?;
    Ok(())
}

/// The Nexus framing of the current configuration (for decoding).
pub fn rtd_config() -> Option<RtdConfig> {
    collector().map(|c| c.rtd)
}

/// Start the sampling timer for the calling thread (timer mode).
pub fn attach_timer_to_current_thread(interval_us: u64) -> Result<(), Error> {
    install_timer_handler()?;
    with_state(|st| {
        st._timer = Some(ThreadTimer::start(
            crate::linux::gettid(),
            libc::SIGPROF,
            interval_us.max(100),
        )?);
        Ok::<(), io::Error>(())
    })
    .ok_or(Error::NotInitialized)?
    .map_err(Error::Io)
}

extern "C" fn on_timer(_sig: i32, _info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    if !ON.load(Ordering::Relaxed) {
        return;
    }
    // SAFETY: uc is this SA_SIGINFO handler's context argument.
    let pc = unsafe { crate::linux::interrupted_pc(uc) };
    // Only threads that already have state are sampled: creating one
    // allocates, which is not allowed in a signal handler.
    let has_state = STATE
        .try_with(|cell| unsafe { (*cell.get()).is_some() })
        .unwrap_or(false);
    if has_state {
        record_slow(RecordType::Isr, pc, 0);
    }
}

fn install_timer_handler() -> Result<(), Error> {
    // SAFETY: installing an SA_SIGINFO handler with a zeroed, then filled,
    // sigaction.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_timer as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(libc::SIGPROF, &sa, std::ptr::null_mut()) != 0 {
            return Err(Error::Io(io::Error::last_os_error()));
        }
    }
    Ok(())
}
