//! The Linux collector behind the C API and [`crate::session`]: one
//! process-wide configuration, one trace stream per traced thread.
//!
//! The hooks ([`hook`], [`record`]) store raw samples ([`crate::stage`])
//! into their thread's staging ring of [`STAGE_CHUNKS`] chunks: no lock,
//! no allocation, no system call unless a counter needs one. Full chunks
//! are encoded in order, under the stream's mutex, by the process's
//! encoder thread or by the recording thread when nobody else does;
//! trace-off and reading the trace encode the rest.
//! docs/hpmtrace.md ("Staging and the encoder thread") gives the design
//! and its reasons.
//!
//! fork(): every thread holds `FORK_LOCK` for reading while it holds or
//! waits for one of the collector's locks, and `pthread_atfork` handlers
//! take it for writing around fork(), so a child never inherits a lock
//! held by a thread that does not exist in it. The child has no encoder
//! thread.
//!
//! Streams: thread k (in order of first use) is Nexus source k, up to
//! `max_threads` (`perfInit`'s `num_cores`); later threads are not traced
//! ([`Stats::untraced_threads`]). The `.rtd` file is the per-source
//! streams one after the other.

use crate::counters::{assign_slots, build_header, timestamp_position, Clock, SlotError};
use crate::format::{CountType, CounterInfo, Event, Header, RecordType, MAX_COUNTERS};
use crate::linux::{
    advise_huge_pages, check_group_runs, software_stand_in, zeroed_buffer, OpenError, PerfGroup,
    ThreadTimer, TraceClock,
};
use crate::nexus::write::{NexusWriter, WriterConfig};
use crate::nexus::MAX_SOURCES;
use crate::sink::VecBuffer;
use crate::stage::{Replay, SAMPLE_HEAD_WORDS, TAG_TRACE_ON};
use std::cell::{Cell, RefCell, UnsafeCell};
use std::io::{self, Write};
use std::marker::PhantomData;
use std::path::Path;
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{
    Arc, Mutex, MutexGuard, Once, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError,
};

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
    /// Staging buffer per thread for raw samples, bytes (0: the trace
    /// buffer size, clamped to 64 KiB..16 MiB), in [`STAGE_CHUNKS`]
    /// chunks. Full chunks are encoded on the encoder thread, the rest
    /// when the trace is turned off, read or written.
    pub stage_bytes: usize,
    /// Most threads traced at once (sets the SRC field width).
    pub max_threads: u32,
    /// What to do with an event this machine cannot count.
    pub unavailable: Unavailable,
    /// Encode full staging chunks on the process's encoder thread
    /// (`hpmtrace-enc`, started by the first configuration that asks for
    /// it; the default). Off, no thread is started: samples are encoded
    /// at trace-off and when the trace is read or written, and by a
    /// recording thread itself whenever its staging buffer is full (for a
    /// program that must not get another thread; the C API's
    /// `HPMTRACE_ENCODER_THREAD=0`).
    pub encoder_thread: bool,
    /// Trigger.
    pub mode: Mode,
}

/// What [`configure`] does with an event this machine cannot count (it
/// does not open, or the kernel never schedules it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unavailable {
    /// Fail with [`Error::Open`] naming the event.
    Fail,
    /// Leave the event out of the header and say so on stderr (a group
    /// that fails as a whole loses events from the last one on).
    LeaveOut,
    /// Count a Linux software event in its place
    /// ([`crate::linux::software_stand_in`]; type 16, which SiFive's
    /// decoder rejects).
    SoftwareStandIn,
}

/// Default per-thread buffer when the caller gives 0 (the SRAM choice on
/// hardware, which has no Linux meaning).
pub const DEFAULT_BUFFER_BYTES: usize = 1 << 20;

/// Bounds of the default staging buffer (see [`Config::stage_bytes`]).
pub const DEFAULT_STAGE_BYTES: std::ops::RangeInclusive<usize> = (64 << 10)..=(16 << 20);

/// Smallest staging buffer accepted (a sample has at most 36 words, and
/// each of the [`STAGE_CHUNKS`] chunks holds at least one).
pub const MIN_STAGE_BYTES: usize = 4096;

/// How long a recording thread polls for another thread to free its next
/// staging chunk before it sleeps: longer than a 64 KiB chunk usually
/// takes to encode, shorter than a sleep and wake-up.
const SPIN_BEFORE_SLEEP: std::time::Duration = std::time::Duration::from_micros(100);

/// Chunks of the staging ring (a power of two): enough to keep the
/// recording thread going while the encoder works through a backlog, few
/// enough that chunks are big and waking the encoder is rare.
pub const STAGE_CHUNKS: usize = 4;
const _: () = assert!(STAGE_CHUNKS.is_power_of_two() && STAGE_CHUNKS >= 2);

/// Width of the trace clock as declared for `HW_TIMESTAMP`.
pub const TIMESTAMP_BITS: u8 = crate::nexus::write::DEFAULT_TIMESTAMP_BITS;

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
    framing: WriterConfig,
    buffer_bytes: usize,
    stage_words: usize,
    encoder_thread: bool,
    max_threads: u32,
    mode: Mode,
    id: u64,
}

/// The encoding side of a stream (behind the stream's mutex).
struct Encoding {
    replay: Replay,
    writer: NexusWriter<VecBuffer>,
    /// Words of chunk `Stream::encoded` already encoded (non-zero only
    /// after that chunk was read while it was being filled).
    consumed: usize,
}

/// One thread's trace: its staging chunks (written by the thread alone)
/// and its encoder and trace buffer.
///
/// Chunks are numbered in the order the owner fills them (sequence
/// numbers); number `q` lives in slot `q % STAGE_CHUNKS`. The owner fills
/// chunk `written`; chunks `encoded..written` are full and wait for the
/// encoder.
struct Stream {
    src: u16,
    /// Whether the encoder thread encodes this stream's full chunks.
    background: bool,
    stage: Box<[UnsafeCell<u64>]>,
    /// Words per chunk.
    chunk_words: usize,
    /// Words of complete samples in each slot, published by the owner with
    /// a release store after every sample. Reset to 0 by the owner before
    /// it publishes the slot's next chunk in `written`.
    lens: [AtomicUsize; STAGE_CHUNKS],
    /// The chunk the owner fills; every earlier one is complete. Written
    /// by the owner only (release).
    written: AtomicU64,
    /// Chunks completely encoded; their slots may be refilled. Written
    /// only under `enc`'s lock (release).
    encoded: AtomicU64,
    enc: Mutex<Encoding>,
}

// SAFETY: a slot's words at and past its published length are written only
// by the owning thread; words below it are read only under `enc`'s lock
// and written again only after `encoded` has moved past the chunk, i.e.
// after every reader is done with them (see `Stream::encode_slot`).
unsafe impl Sync for Stream {}
// SAFETY: as for Sync: the stage is plain memory owned by the stream and
// the rules above hold whichever thread holds it.
unsafe impl Send for Stream {}

impl Stream {
    fn lock(&self) -> MutexGuard<'_, Encoding> {
        self.enc.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Encode the oldest chunk not encoded yet if it is complete;
    /// returns whether there was one.
    fn encode_chunk(&self, enc: &mut Encoding) -> bool {
        // Only changed under the lock we hold.
        let e = self.encoded.load(Ordering::Relaxed);
        if e >= self.written.load(Ordering::Acquire) {
            return false;
        }
        // The owner stored the chunk's final length before publishing
        // `written`.
        self.encode_slot(enc, e);
        enc.consumed = 0;
        self.encoded.store(e + 1, Ordering::Release);
        true
    }

    /// Encode the published samples of chunk `seq` from `enc.consumed`
    /// on; returns its published length.
    fn encode_slot(&self, enc: &mut Encoding, seq: u64) -> usize {
        let slot = (seq % STAGE_CHUNKS as u64) as usize;
        let len = self.lens[slot].load(Ordering::Acquire);
        if len > enc.consumed {
            // SAFETY: [consumed, len) of the slot holds published samples
            // that the owner no longer writes and will not write again
            // before `encoded` passes `seq` (see the Sync impl); the slot
            // lies inside the stage.
            let words = unsafe {
                std::slice::from_raw_parts(
                    (self.stage.as_ptr() as *const u64).add(slot * self.chunk_words + enc.consumed),
                    len - enc.consumed,
                )
            };
            let Encoding { replay, writer, .. } = enc;
            let _ = replay.replay(writer, words);
        }
        len
    }

    /// Encode every complete chunk not encoded yet, in order, and with
    /// `partial` also the published samples of the chunk being filled.
    /// Returns whether a complete chunk was encoded.
    fn drain(&self, enc: &mut Encoding, partial: bool) -> bool {
        let mut any = false;
        while self.encode_chunk(enc) {
            any = true;
        }
        if partial {
            // The chunk being filled (`encoded` == `written` now; the
            // owner may complete it meanwhile, which only means more of
            // it is left for later).
            let e = self.encoded.load(Ordering::Relaxed);
            enc.consumed = self.encode_slot(enc, e);
        }
        any
    }
}

/// A thread's recording state, reached through [`LOCAL`] by [`Busy::local`].
struct Local {
    collector: u64,
    /// Generation whose header this thread has staged.
    generation: u64,
    /// Start of the chunk being filled.
    chunk: *mut u64,
    /// Its sequence number (`stream.written`).
    seq: u64,
    /// Its slot, `seq % STAGE_CHUNKS` (`stream.lens[slot]` is its
    /// published length).
    slot: usize,
    /// Words filled in it (local copy of its `stream.lens` entry).
    filled: usize,
    /// Chunk capacity, words.
    cap: usize,
    /// Words per sample.
    words: usize,
    group: PerfGroup,
    stream: Arc<Stream>,
    timer: Option<ThreadTimer>,
}

impl Local {
    /// Stage one sample (the state is borrowed through [`Busy`]).
    #[inline(always)]
    fn push(&mut self, tag: u64, a0: u64, a1: u64) {
        if self.filled + self.words > self.cap {
            self.next_chunk();
        }
        let ts = TraceClock.now();
        // SAFETY: [filled, filled + words) lies inside the chunk (checked
        // above; cap >= words >= SAMPLE_HEAD_WORDS) and past its published
        // part, so only this thread touches it.
        let s = unsafe {
            let p = self.chunk.add(self.filled);
            p.write(tag);
            p.add(1).write(a0);
            p.add(2).write(a1);
            p.add(3).write(ts);
            std::slice::from_raw_parts_mut(p.add(SAMPLE_HEAD_WORDS), self.words - SAMPLE_HEAD_WORDS)
        };
        self.group.read_members(s);
        self.filled += self.words;
        self.stream.lens[self.slot].store(self.filled, Ordering::Release);
    }

    /// The chunk is full: hand it to the encoder thread and continue in
    /// the next slot (rare, so out of line). If that slot still waits to
    /// be encoded, wait while another thread encodes this stream (encoding
    /// is sequential, so working here too would only take turns with it),
    /// and otherwise encode the oldest waiting chunk here: the encoder
    /// thread may get no CPU for a long time, and waiting for it then would
    /// stall the program.
    #[cold]
    #[inline(never)]
    fn next_chunk(&mut self) {
        let next = self.seq + 1;
        // The next slot last held chunk `next - STAGE_CHUNKS`; it is free
        // once that one is encoded. The chunks before this one are
        // complete, so the oldest is encodable.
        let s = &*self.stream;
        let waiting = || s.encoded.load(Ordering::Acquire) + (STAGE_CHUNKS as u64) <= next;
        let fork = if waiting() { Some(fork_read()) } else { None };
        while waiting() {
            // The encoder thread is awake: it is encoding this stream or
            // about to (it only sleeps when it finds nothing to do), so
            // wait for it rather than take turns with it.
            let encoder_awake = s.background && ENCODER_AWAKE.load(Ordering::Acquire);
            let lock = if encoder_awake {
                Err(TryLockError::WouldBlock)
            } else {
                s.enc.try_lock()
            };
            let mut enc = match lock {
                Ok(g) => g,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    // Another thread encodes this stream. It frees a slot
                    // within one chunk's encoding, usually sooner than a
                    // sleeping thread wakes up: poll that long, yielding
                    // this CPU (the encoder may be waiting for it: a spin
                    // here would triple the cost when both share a CPU),
                    // then sleep on the lock.
                    let t0 = std::time::Instant::now();
                    while waiting() && t0.elapsed() < SPIN_BEFORE_SLEEP {
                        std::thread::yield_now();
                    }
                    if !waiting() {
                        break;
                    }
                    s.lock()
                }
            };
            if waiting() && s.encode_chunk(&mut enc) {
                INLINE_CHUNKS.fetch_add(1, Ordering::Relaxed);
            }
        }
        drop(fork);
        let slot = (next % STAGE_CHUNKS as u64) as usize;
        s.lens[slot].store(0, Ordering::Relaxed);
        // Publishes the full chunk and the cleared length together.
        s.written.store(next, Ordering::Release);
        self.seq = next;
        self.slot = slot;
        self.filled = 0;
        // SAFETY: the slot lies inside the stage (slot < STAGE_CHUNKS).
        self.chunk = unsafe { (s.stage.as_ptr() as *mut u64).add(slot * s.chunk_words) };
        if s.background {
            if let Some(Some(t)) = ENCODER.get() {
                t.unpark();
            }
        }
    }
}

/// The current configuration: replaced by [`configure`], freed when the
/// last thread that took it ([`collector`]) is done with it. Locked only
/// under the locking thread's [`Busy`] flag.
static COLLECTOR: Mutex<Option<Arc<Collector>>> = Mutex::new(None);
/// Its id (0: none): what a thread's state is compared with.
static COLLECTOR_ID: AtomicU64 = AtomicU64::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Trace-on generations; never reused, so a thread whose staged header
/// carries the current generation belongs to the current collector.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Current generation while tracing is on (any mode), else 0.
static ON_GEN: AtomicU64 = AtomicU64::new(0);
/// Current generation while tracing is on in function entry/exit mode,
/// else 0: the hooks' only shared load.
static HOOK_GEN: AtomicU64 = AtomicU64::new(0);
static NEXT_SRC: AtomicU32 = AtomicU32::new(0);
static UNTRACED: AtomicU64 = AtomicU64::new(0);
/// Staging chunks recording threads encoded themselves.
static INLINE_CHUNKS: AtomicU64 = AtomicU64::new(0);
/// Whether the encoder thread is running its loop rather than parked: a
/// recording thread then leaves the waiting chunks to it.
static ENCODER_AWAKE: AtomicBool = AtomicBool::new(false);
/// This process is a fork()ed child of the one that started the encoder
/// thread: it has none.
static CHILD: AtomicBool = AtomicBool::new(false);
/// The encoder thread (started at the first configuration that asks for
/// it; `None` if it could not be, and then recording threads encode their
/// full chunks).
static ENCODER: OnceLock<Option<std::thread::Thread>> = OnceLock::new();
static STREAMS: Mutex<Vec<Arc<Stream>>> = Mutex::new(Vec::new());
/// Held for reading by a thread while it holds or waits for a stream's
/// lock or [`STREAMS`], always taken before them; held for writing by a
/// thread calling fork(), from `pthread_atfork`'s prepare handler to its
/// parent or child handler ([`fork_prepare`]), so no thread holds one of
/// those locks at the fork.
static FORK_LOCK: RwLock<()> = RwLock::new(());
/// Registers the fork handlers once per process.
static FORK_HANDLERS: Once = Once::new();

thread_local! {
    // Both have const initialisers and no destructor, so an access is a
    // plain thread-pointer-relative load: no lazy-initialisation check.
    /// This thread's state (owned; freed by [`GUARD`] at thread exit).
    static LOCAL: Cell<*mut Local> = const { Cell::new(std::ptr::null_mut()) };
    /// Set while this thread is inside the collector, so a signal handler
    /// (the sampling timer, or instrumented code it calls) arriving then
    /// is dropped instead of re-entering.
    static BUSY: Cell<bool> = const { Cell::new(false) };
    /// Collector id this thread found no free source in (not retried).
    static UNTRACED_IN: Cell<u64> = const { Cell::new(0) };
    /// Registered when [`LOCAL`] is first set; frees it at thread exit.
    static GUARD: LocalGuard = const { LocalGuard };
    /// The forking thread's hold of [`FORK_LOCK`] and its [`BUSY`] flag
    /// before the fork, between the fork handlers.
    static FORKING: RefCell<Option<(RwLockWriteGuard<'static, ()>, bool)>> =
        const { RefCell::new(None) };
}

/// [`FORK_LOCK`] for reading.
fn fork_read() -> RwLockReadGuard<'static, ()> {
    FORK_LOCK.read().unwrap_or_else(|e| e.into_inner())
}

/// `pthread_atfork` prepare handler: wait until no thread holds a
/// stream's lock or [`STREAMS`] and keep them from taking one until the
/// fork is done. The thread is marked busy meanwhile, so its own signal
/// handlers do not wait for the lock it holds.
extern "C" fn fork_prepare() {
    let busy = BUSY.with(|b| b.replace(true));
    let hold = FORK_LOCK.write().unwrap_or_else(|e| e.into_inner());
    // A thread that forks while exiting (its thread-locals gone) forks
    // unprotected, as before the handlers existed: the hold is dropped
    // with the closure that did not run.
    if FORKING
        .try_with(|f| *f.borrow_mut() = Some((hold, busy)))
        .is_err()
    {
        BUSY.with(|b| b.set(busy));
    }
}

/// `pthread_atfork` parent handler: the fork is done.
extern "C" fn fork_parent() {
    fork_done();
}

/// `pthread_atfork` child handler: the child has no encoder thread (only
/// the forking thread exists in it), so its threads encode their full
/// chunks themselves from now on; the locks are free.
extern "C" fn fork_child() {
    ENCODER_AWAKE.store(false, Ordering::Release);
    CHILD.store(true, Ordering::Release);
    fork_done();
}

fn fork_done() {
    if let Some((hold, busy)) = FORKING.try_with(|f| f.borrow_mut().take()).ok().flatten() {
        drop(hold);
        BUSY.with(|b| b.set(busy));
    }
}

/// Register the fork handlers (once per process).
fn register_fork_handlers() {
    FORK_HANDLERS.call_once(|| {
        // SAFETY: the handlers are plain extern "C" functions that live
        // as long as the program.
        unsafe { libc::pthread_atfork(Some(fork_prepare), Some(fork_parent), Some(fork_child)) };
    });
}

struct LocalGuard;

impl Drop for LocalGuard {
    fn drop(&mut self) {
        // Nothing on this thread uses the state unless it holds the flag;
        // if something does (a destructor that traces), the state is left
        // to it rather than freed under it.
        let Some(_busy) = Busy::enter() else { return };
        let p = LOCAL.with(|l| l.replace(std::ptr::null_mut()));
        if !p.is_null() {
            // SAFETY: LOCAL owned the box and no longer points to it;
            // references to it are borrowed from a `Busy`, and this thread
            // holds the only one.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// This thread's [`BUSY`] flag, held: proof that nothing else on this
/// thread (a signal handler, or instrumented code it calls) is inside the
/// collector meanwhile, because [`Busy::enter`] fails while another
/// `Busy` of the thread lives. The thread's state ([`LOCAL`]) is borrowed
/// through it ([`Busy::local`]), so it is never borrowed twice. Not
/// `Send`: it belongs to the thread that took it. Dropping it clears the
/// flag.
struct Busy(PhantomData<*const ()>);

impl Busy {
    /// Take this thread's flag; `None` if the thread holds it already
    /// (re-entered from a signal handler).
    #[inline(always)]
    fn enter() -> Option<Busy> {
        if BUSY.with(|b| b.replace(true)) {
            return None;
        }
        compiler_fence(Ordering::SeqCst);
        Some(Busy(PhantomData))
    }

    /// This thread's recording state, if it has one.
    #[inline(always)]
    fn local(&mut self) -> Option<&mut Local> {
        let p = LOCAL.with(|l| l.get());
        // SAFETY: LOCAL points to a box only this thread reaches, and only
        // through the one `Busy` it holds (this one, borrowed mutably for
        // as long as the reference lives): no other reference exists.
        unsafe { p.as_mut() }
    }
}

impl Drop for Busy {
    #[inline(always)]
    fn drop(&mut self) {
        compiler_fence(Ordering::SeqCst);
        BUSY.with(|b| b.set(false));
    }
}

/// The current configuration. Only under the thread's [`Busy`] flag, so
/// that a signal handler of a thread that holds the lock never waits for
/// it (its [`Busy::enter`] fails first).
fn collector(_busy: &Busy) -> Option<Arc<Collector>> {
    let _fork = fork_read();
    COLLECTOR.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Run `f` with this thread's [`Busy`] flag; `None` if the thread holds it
/// already (re-entered from a signal handler).
#[inline(always)]
fn exclusive<R>(f: impl FnOnce(&mut Busy) -> R) -> Option<R> {
    Busy::enter().map(|mut b| f(&mut b))
}

/// Install a configuration (tracing stays off). Replaces any previous one;
/// threads rebuild their state on their next record.
pub fn configure(cfg: &Config) -> Result<(), Error> {
    if cfg.channel >= crate::format::ITC_CHANNELS {
        return Err(Error::BadArgument("ITC channel must be 0..31"));
    }
    if cfg.max_threads == 0 || cfg.max_threads as usize > MAX_SOURCES {
        // More Nexus sources than the decoder tells apart would be a trace
        // nobody can read.
        return Err(Error::BadArgument("max_threads must be 1..256"));
    }
    if cfg.events.len() > MAX_COUNTERS {
        return Err(Error::Slots(SlotError::TooManyEvents));
    }
    if cfg.stage_bytes != 0 && cfg.stage_bytes < MIN_STAGE_BYTES {
        return Err(Error::BadArgument("stage_bytes must be 0 or at least 4096"));
    }
    let slots = assign_slots(&cfg.events).map_err(Error::Slots)?;
    // Decide per event what is really counted: probe on this thread.
    // (index in cfg.events, slot, event counted, counter_info)
    let mut chosen = Vec::new();
    for (i, &e) in cfg.events.iter().enumerate() {
        let slot = slots[i];
        if e.is_timestamp() {
            let info = CounterInfo {
                csr: 0,
                width: TIMESTAMP_BITS,
            };
            chosen.push((i, slot, e, info));
            continue;
        }
        let counted = match check_group_runs(&[(0, e)]) {
            Ok(()) => e,
            Err(err) => match cfg.unavailable {
                Unavailable::Fail => return Err(Error::Open(err)),
                Unavailable::LeaveOut => {
                    left_out(i, &err);
                    continue;
                }
                Unavailable::SoftwareStandIn => {
                    let s = software_stand_in(e);
                    PerfGroup::open(&[(0, s)]).map_err(|_| Error::Open(err))?;
                    s
                }
            },
        };
        let csr = if matches!(counted, Event::LinuxSoftware { .. }) {
            0
        } else {
            0xc00 + slot as u16
        };
        chosen.push((i, slot, counted, CounterInfo { csr, width: 64 }));
    }
    // The group as a whole must open and be scheduled too (group
    // constraints, e.g. more events than counters). Leaving out: from the
    // last event on, until it is.
    loop {
        let members: Vec<(usize, Event)> = chosen
            .iter()
            .filter(|c| !c.2.is_timestamp())
            .map(|c| (c.1 as usize, c.2))
            .collect();
        match check_group_runs(&members) {
            Ok(()) => break,
            Err(err) if cfg.unavailable == Unavailable::LeaveOut => {
                let Some(last) = chosen.iter().rposition(|c| !c.2.is_timestamp()) else {
                    break;
                };
                left_out(chosen[last].0, &err);
                chosen.remove(last);
            }
            Err(err) => return Err(Error::Open(err)),
        }
    }
    let counted: Vec<(u8, Event, CounterInfo)> = chosen
        .iter()
        .map(|&(_, slot, e, info)| (slot, e, info))
        .collect();
    let header = build_header(cfg.count_type, &counted);
    let ts_pos = timestamp_position(&header);
    // Counters read per record: every position but the timestamp's, in
    // record order (the sample layout of crate::stage).
    let perf_events: Vec<(usize, Event)> = header
        .iter()
        .enumerate()
        .filter(|(_, (_, c))| !c.event.is_timestamp())
        .map(|(pos, (_, c))| (pos, c.event))
        .collect();
    let buffer_bytes = if cfg.buffer_bytes == 0 {
        DEFAULT_BUFFER_BYTES
    } else {
        cfg.buffer_bytes
    };
    let stage_bytes = if cfg.stage_bytes == 0 {
        buffer_bytes.clamp(*DEFAULT_STAGE_BYTES.start(), *DEFAULT_STAGE_BYTES.end())
    } else {
        cfg.stage_bytes
    };
    let c = Collector {
        header,
        perf_events,
        ts_pos,
        framing: WriterConfig {
            channel: cfg.channel,
            src_bits: WriterConfig::src_bits_for(cfg.max_threads),
            timestamp_bits: TIMESTAMP_BITS,
        },
        buffer_bytes,
        stage_words: stage_bytes / 8,
        encoder_thread: cfg.encoder_thread,
        max_threads: cfg.max_threads,
        mode: cfg.mode,
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
    };
    trace_off();
    register_fork_handlers();
    {
        let _fork = fork_read();
        STREAMS.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
    NEXT_SRC.store(0, Ordering::Relaxed);
    UNTRACED.store(0, Ordering::Relaxed);
    INLINE_CHUNKS.store(0, Ordering::Relaxed);
    if c.encoder_thread {
        start_encoder();
    }
    let id = c.id;
    exclusive(|_| {
        let _fork = fork_read();
        *COLLECTOR.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(c));
        COLLECTOR_ID.store(id, Ordering::Release);
    })
    .ok_or(Error::Busy)?;
    if let Mode::Timer { interval_us } = cfg.mode {
        attach_timer_to_current_thread(interval_us)?;
    }
    Ok(())
}

/// Say on stderr that event `i` of the configuration is not in the trace.
fn left_out(i: usize, err: &OpenError) {
    let why = match err.error.raw_os_error() {
        Some(_) => format!("perf_event_open: {}", err.error),
        None => err.error.to_string(),
    };
    eprintln!(
        "hpmtrace: event {i} ({:?}) left out of the trace ({why}); HPMTRACE_SW_FALLBACK=1 \
         counts a Linux software event in its place (event type 16, which SiFive's \
         decoder does not read)",
        err.event
    );
}

/// The header of the current configuration.
pub fn header() -> Option<Header> {
    exclusive(|b| collector(b).map(|c| c.header)).flatten()
}

fn new_local(c: &Collector) -> Option<Box<Local>> {
    let src = NEXT_SRC.fetch_add(1, Ordering::Relaxed);
    if src >= c.max_threads {
        UNTRACED.fetch_add(1, Ordering::Relaxed);
        UNTRACED_IN.with(|u| u.set(c.id));
        return None;
    }
    let group = PerfGroup::open(&c.perf_events).ok()?;
    let replay = Replay::new(c.header, c.ts_pos);
    let words = replay.sample_words();
    let cap = (c.stage_words / STAGE_CHUNKS).max(words);
    let mut stage = Vec::with_capacity(cap * STAGE_CHUNKS);
    advise_huge_pages(stage.spare_capacity_mut());
    // Writes every word: the pages fault here, not in traced code.
    stage.resize_with(cap * STAGE_CHUNKS, || UnsafeCell::new(0u64));
    let stream = Arc::new(Stream {
        src: src as u16,
        background: c.encoder_thread
            && matches!(ENCODER.get(), Some(Some(_)))
            && !CHILD.load(Ordering::Acquire),
        stage: stage.into_boxed_slice(),
        chunk_words: cap,
        lens: Default::default(),
        written: AtomicU64::new(0),
        encoded: AtomicU64::new(0),
        enc: Mutex::new(Encoding {
            replay,
            writer: NexusWriter::new(
                c.framing,
                src as u16,
                VecBuffer::new(zeroed_buffer(c.buffer_bytes, true)),
            ),
            consumed: 0,
        }),
    });
    {
        let _fork = fork_read();
        STREAMS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(stream.clone());
    }
    Some(Box::new(Local {
        collector: c.id,
        generation: 0,
        chunk: stream.stage.as_ptr() as *mut u64,
        seq: 0,
        slot: 0,
        filled: 0,
        cap,
        words,
        group,
        stream,
        timer: None,
    }))
}

/// Start the encoder thread once per process. Its signals are blocked, so
/// the program's process-directed signals go to the program's threads.
fn start_encoder() {
    ENCODER.get_or_init(|| {
        std::thread::Builder::new()
            .name("hpmtrace-enc".into())
            .spawn(|| {
                // SAFETY: a zeroed sigset filled by sigfillset, passed to
                // pthread_sigmask for the calling thread only.
                unsafe {
                    let mut all: libc::sigset_t = std::mem::zeroed();
                    libc::sigfillset(&mut all);
                    libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
                }
                encoder_loop()
            })
            .ok()
            .map(|h| h.thread().clone())
    });
}

/// The encoder thread: encode every stream's complete chunks, sleep until
/// a recording thread completes another one. A stream whose lock is taken
/// is skipped: whoever holds it is encoding it.
fn encoder_loop() -> ! {
    ENCODER_AWAKE.store(true, Ordering::Release);
    loop {
        let (mut any, mut blocked) = (false, false);
        let fork = fork_read();
        for s in streams_by_src().into_iter().filter(|s| s.background) {
            let mut enc = match s.enc.try_lock() {
                Ok(g) => g,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    // Its owner (or a reader) encodes a chunk: look again
                    // soon rather than sleep while chunks wait.
                    blocked |=
                        s.encoded.load(Ordering::Acquire) < s.written.load(Ordering::Acquire);
                    continue;
                }
            };
            any |= s.drain(&mut enc, false);
        }
        drop(fork);
        if blocked && !any {
            std::thread::yield_now();
        } else if !any {
            ENCODER_AWAKE.store(false, Ordering::Release);
            // A chunk completed since the scan left an unpark token, so
            // this returns at once then.
            std::thread::park();
            ENCODER_AWAKE.store(true, Ordering::Release);
        }
    }
}

/// This thread's state for the current configuration; created
/// (allocating) when missing or stale if `create`.
fn local_for(busy: &mut Busy, create: bool) -> Option<&mut Local> {
    let id = COLLECTOR_ID.load(Ordering::Acquire);
    if busy.local().is_some_and(|l| l.collector == id) {
        return busy.local();
    }
    if !create || UNTRACED_IN.with(|u| u.get()) == id {
        return None;
    }
    // Registering the guard fails once the thread is exiting: trace no
    // more then (nothing would free the state).
    GUARD.try_with(|_| ()).ok()?;
    let c = collector(busy)?;
    let new = new_local(&c).map_or(std::ptr::null_mut(), Box::into_raw);
    let old = LOCAL.with(|l| l.replace(new));
    if !old.is_null() {
        // SAFETY: LOCAL owned the old state and no longer points to it;
        // references to it are borrowed from `busy`, and none lives here.
        drop(unsafe { Box::from_raw(old) });
    }
    busy.local()
}

/// The per-record fast path: this thread's state is current, so only the
/// sample is stored.
#[inline(always)]
fn stage_record(gen: u64, tag: u64, a0: u64, a1: u64) {
    let Some(mut busy) = Busy::enter() else {
        return;
    };
    match busy.local() {
        Some(l) if l.generation == gen => l.push(tag, a0, a1),
        _ => record_slow(&mut busy, gen, tag, a0, a1, true),
    }
}

/// First record of a thread or of a trace-on: create the state (if
/// `create`) and stage the header.
#[cold]
#[inline(never)]
fn record_slow(busy: &mut Busy, gen: u64, tag: u64, a0: u64, a1: u64, create: bool) {
    let Some(l) = local_for(busy, create) else {
        return;
    };
    if l.generation != gen {
        l.push(TAG_TRACE_ON, 0, 0);
        l.generation = gen;
    }
    l.push(tag, a0, a1);
}

/// Write one record for the calling thread (if tracing is on).
#[inline]
pub fn record(kind: RecordType, a0: u64, a1: u64) {
    let gen = ON_GEN.load(Ordering::Relaxed);
    if gen == 0 {
        return;
    }
    stage_record(gen, kind.as_u8() as u64, a0, a1);
}

/// Function entry/exit hook body.
#[inline(always)]
pub fn hook(kind: RecordType, this_fn: usize, call_site: usize) {
    let gen = HOOK_GEN.load(Ordering::Relaxed);
    if gen == 0 {
        return;
    }
    stage_record(gen, kind.as_u8() as u64, this_fn as u64, call_site as u64);
}

/// Start recording: every traced thread writes a header (the calling
/// thread now, others at their next record) and Delta restarts here.
pub fn trace_on() -> Result<(), Error> {
    let gen = GENERATION.fetch_add(1, Ordering::AcqRel) + 1;
    let mode = exclusive(|busy| {
        let mode = collector(busy)?.mode;
        if let Some(l) = local_for(busy, true) {
            l.push(TAG_TRACE_ON, 0, 0);
            l.generation = gen;
        }
        Some(mode)
    })
    .ok_or(Error::Busy)?
    .ok_or(Error::NotInitialized)?;
    ON_GEN.store(gen, Ordering::Release);
    HOOK_GEN.store(
        if mode == Mode::FuncEntryExit { gen } else { 0 },
        Ordering::Release,
    );
    Ok(())
}

/// Stop recording (state is kept; `trace_on` writes a new header) and
/// encode what every thread staged.
pub fn trace_off() {
    HOOK_GEN.store(0, Ordering::Release);
    ON_GEN.store(0, Ordering::Release);
    drain_all();
}

/// Whether tracing is on.
pub fn is_on() -> bool {
    ON_GEN.load(Ordering::Relaxed) != 0
}

/// The streams in source order. The caller holds [`fork_read`].
fn streams_by_src() -> Vec<Arc<Stream>> {
    let mut v = STREAMS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    v.sort_by_key(|s| s.src);
    v
}

/// Encode the staged samples of every stream (the calling thread is marked
/// busy meanwhile, so its signal handlers do not stage into a locked
/// stream).
fn drain_all() {
    exclusive(|_| {
        let _fork = fork_read();
        for s in streams_by_src() {
            let mut enc = s.lock();
            s.drain(&mut enc, true);
        }
    });
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
    /// Staging chunks a recording thread encoded itself: its staging
    /// buffer was full and the encoder thread was not encoding it (not
    /// running, busy with another thread's, or off:
    /// [`Config::encoder_thread`]).
    pub inline_chunks: u64,
}

/// Current statistics (staged samples are encoded first).
pub fn stats() -> Stats {
    let mut s = Stats {
        untraced_threads: UNTRACED.load(Ordering::Relaxed),
        inline_chunks: INLINE_CHUNKS.load(Ordering::Relaxed),
        ..Default::default()
    };
    exclusive(|_| {
        let _fork = fork_read();
        for b in streams_by_src() {
            let mut enc = b.lock();
            b.drain(&mut enc, true);
            let e = enc.replay.encoder().stats();
            s.streams += 1;
            s.records += e.records;
            s.wide_overflows += e.wide_overflows;
            s.bytes += enc.writer.inner().data().len() as u64;
            s.dropped_messages += enc.writer.inner().dropped();
        }
    });
    s
}

/// The recorded trace: every stream's valid bytes, in source order (staged
/// samples are encoded first).
pub fn snapshot() -> Vec<u8> {
    let mut out = Vec::new();
    exclusive(|_| {
        let _fork = fork_read();
        for b in streams_by_src() {
            let mut enc = b.lock();
            b.drain(&mut enc, true);
            out.extend_from_slice(enc.writer.inner().data());
        }
    });
    out
}

/// Write the trace to `path` (tracing state unchanged).
pub fn write_trace(path: &Path) -> Result<(), Error> {
    if COLLECTOR_ID.load(Ordering::Acquire) == 0 {
        return Err(Error::NotInitialized);
    }
    let data = snapshot();
    let mut f = std::fs::File::create(path).map_err(Error::Io)?;
    f.write_all(&data).map_err(Error::Io)?;
    Ok(())
}

/// The Nexus framing of the current configuration (for decoding).
pub fn writer_config() -> Option<WriterConfig> {
    exclusive(|b| collector(b).map(|c| c.framing)).flatten()
}

/// Start the sampling timer for the calling thread (timer mode).
pub fn attach_timer_to_current_thread(interval_us: u64) -> Result<(), Error> {
    if COLLECTOR_ID.load(Ordering::Acquire) == 0 {
        return Err(Error::NotInitialized);
    }
    install_timer_handler()?;
    exclusive(|busy| {
        let l = local_for(busy, true).ok_or(Error::BadArgument(
            "this thread is not traced (max_threads reached)",
        ))?;
        l.timer = Some(
            ThreadTimer::start(crate::linux::gettid(), libc::SIGPROF, interval_us.max(100))
                .map_err(Error::Io)?,
        );
        Ok(())
    })
    .unwrap_or(Err(Error::Busy))
}

extern "C" fn on_timer(_sig: i32, _info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    let gen = ON_GEN.load(Ordering::Relaxed);
    if gen == 0 {
        return;
    }
    // SAFETY: uc is this SA_SIGINFO handler's context argument.
    let pc = unsafe { crate::linux::interrupted_pc(uc) };
    // Only threads that already have state are sampled: creating one
    // allocates, which is not allowed in a signal handler.
    let Some(mut busy) = Busy::enter() else {
        return;
    };
    let tag = RecordType::Isr.as_u8() as u64;
    match busy.local() {
        Some(l) if l.generation == gen => l.push(tag, pc, 0),
        Some(_) => record_slow(&mut busy, gen, tag, pc, 0, false),
        None => {}
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::hw;

    #[test]
    fn a_replaced_configuration_is_freed() {
        let cfg = Config {
            count_type: CountType::Delta,
            events: vec![Event::General {
                code: hw::TIMESTAMP,
            }],
            channel: 6,
            buffer_bytes: 4096,
            stage_bytes: 0,
            max_threads: 1,
            unavailable: Unavailable::Fail,
            encoder_thread: false,
            mode: Mode::Manual,
        };
        let current = || COLLECTOR.lock().unwrap().clone().expect("a configuration");
        let mut first = None;
        for _ in 0..4 {
            configure(&cfg).unwrap();
            trace_on().unwrap();
            record(RecordType::Manual, 0x1000, 0);
            first.get_or_insert_with(|| Arc::downgrade(&current()));
        }
        assert!(
            first.unwrap().upgrade().is_none(),
            "the first configuration lives on"
        );
        assert_eq!(Arc::strong_count(&current()), 2, "only COLLECTOR holds it");
        trace_off();
    }
}
