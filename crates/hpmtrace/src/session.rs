//! Safe Rust API: a trace session that is on while it lives and writes its
//! trace when dropped.
//!
//! ```no_run
//! use hpmtrace::format::{hw, CountType, Event};
//! use hpmtrace::session::Session;
//! let s = Session::builder()
//!     .count_type(CountType::Delta)
//!     .event(Event::General { code: hw::CPU_CYCLES })
//!     .event(Event::General { code: hw::TIMESTAMP })
//!     .output("trace.rtd")
//!     .start()?;
//! s.mark(); // a manual record here
//! drop(s); // trace off, trace.rtd written
//! # Ok::<(), hpmtrace::collect::Error>(())
//! ```
//!
//! The collector is process-wide (the C hooks need it), so one session can
//! be active at a time; starting a second one fails with
//! [`Error::Busy`].
//!
//! Starting a session starts what [`crate::collect`] adds to the
//! process: the encoder thread (unless
//! [`SessionBuilder::encoder_thread`] turns it off) and, once per process,
//! its `pthread_atfork` handlers.

use crate::collect::{self, Config, Error, Mode, Stats, Unavailable};
use crate::format::{CountType, Event, RecordType, DEFAULT_CHANNEL};
use crate::nexus::write::WriterConfig;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Builds a [`Session`].
#[derive(Clone, Debug)]
pub struct SessionBuilder {
    cfg: Config,
    output: Option<PathBuf>,
}

/// Builder methods that set one field of the collector's [`Config`].
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident($ty:ty) => $field:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, v: $ty) -> Self {
            self.cfg.$field = v;
            self
        }
    )*};
}

impl SessionBuilder {
    setters! {
        /// Raw, Delta (default) or DeltaXOR.
        count_type(CountType) => count_type;
        /// ITC channel (default 6).
        channel(u8) => channel;
        /// Per-thread buffer in bytes (default 1 MiB); stops on wrap.
        buffer_bytes(usize) => buffer_bytes;
        /// Per-thread staging buffer for raw samples in bytes (default: the
        /// trace buffer size within 64 KiB..16 MiB; at least 4096), in
        /// [`collect::STAGE_CHUNKS`] chunks. Full chunks are encoded into the
        /// trace buffer by the encoder thread; the rest at pause and when the
        /// trace is read or written.
        stage_bytes(usize) => stage_bytes;
        /// Whether full staging chunks are encoded on the encoder thread
        /// (default true; off, no thread is started: see
        /// [`Config::encoder_thread`]).
        encoder_thread(bool) => encoder_thread;
        /// Most threads traced at once (default 1).
        max_threads(u32) => max_threads;
        /// What to do with an event the machine cannot count (default
        /// [`Unavailable::Fail`]: `start` fails naming it).
        unavailable(Unavailable) => unavailable;
        /// Trigger (default [`Mode::Manual`]).
        mode(Mode) => mode;
    }
    /// Add an event.
    pub fn event(mut self, e: Event) -> Self {
        self.cfg.events.push(e);
        self
    }
    /// Write the trace here when the session ends.
    pub fn output(mut self, p: impl AsRef<Path>) -> Self {
        self.output = Some(p.as_ref().to_path_buf());
        self
    }
    /// Configure and turn tracing on.
    pub fn start(self) -> Result<Session, Error> {
        if ACTIVE.swap(true, Ordering::AcqRel) {
            return Err(Error::Busy);
        }
        let r = collect::configure(&self.cfg).and_then(|_| collect::trace_on());
        if let Err(e) = r {
            ACTIVE.store(false, Ordering::Release);
            return Err(e);
        }
        Ok(Session {
            output: self.output,
        })
    }
}

/// An active trace. Dropping it turns tracing off and writes the output
/// file, if one was set (errors are printed; call [`Session::finish`] to
/// get them).
pub struct Session {
    output: Option<PathBuf>,
}

impl Session {
    /// A builder with Delta counts, channel 6, 1 MiB per thread, one
    /// thread, manual mode.
    pub fn builder() -> SessionBuilder {
        SessionBuilder {
            cfg: Config {
                count_type: CountType::Delta,
                events: Vec::new(),
                channel: DEFAULT_CHANNEL,
                buffer_bytes: 0,
                stage_bytes: 0,
                max_threads: 1,
                unavailable: Unavailable::Fail,
                encoder_thread: true,
                mode: Mode::Manual,
            },
            output: None,
        }
    }

    /// Write a manual record at the caller's location (always inlined, so
    /// the recorded address is inside the calling function).
    #[inline(always)]
    pub fn mark(&self) {
        self.mark_at(current_pc());
    }

    /// Write a manual record with an explicit address.
    pub fn mark_at(&self, pc: u64) {
        collect::record(RecordType::Manual, pc, 0);
    }

    /// Write an enter or exit record (two addresses).
    pub fn record(&self, kind: RecordType, addr: u64, other: u64) {
        collect::record(kind, addr, other);
    }

    /// Stop recording for now.
    pub fn pause(&self) {
        collect::trace_off();
    }

    /// Record again; writes a new header.
    pub fn resume(&self) -> Result<(), Error> {
        collect::trace_on()
    }

    /// Start the sampling timer on the calling thread (timer mode).
    pub fn attach_timer(&self, interval_us: u64) -> Result<(), Error> {
        collect::attach_timer_to_current_thread(interval_us)
    }

    /// Counters of what was recorded and lost.
    pub fn stats(&self) -> Stats {
        collect::stats()
    }

    /// The trace bytes so far.
    pub fn bytes(&self) -> Vec<u8> {
        collect::snapshot()
    }

    /// The Nexus framing the trace uses (tell the decoder).
    pub fn writer_config(&self) -> WriterConfig {
        collect::writer_config().unwrap_or_default()
    }

    /// Write the trace to `path` now.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        collect::write_trace(path)
    }

    /// End the session: tracing off, output written; returns the write
    /// error, if any.
    pub fn finish(mut self) -> Result<(), Error> {
        self.end()
    }

    fn end(&mut self) -> Result<(), Error> {
        collect::trace_off();
        let r = match self.output.take() {
            Some(p) => collect::write_trace(&p),
            None => Ok(()),
        };
        ACTIVE.store(false, Ordering::Release);
        r
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if ACTIVE.load(Ordering::Acquire) {
            if let Err(e) = self.end() {
                eprintln!("hpmtrace: writing the trace failed: {e}");
            }
        }
    }
}

/// The address of the instruction being executed; inlined into the
/// caller so it names the caller's code.
#[inline(always)]
fn current_pc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let pc: u64;
        // SAFETY: lea of rip has no side effects.
        unsafe { std::arch::asm!("lea {0}, [rip]", out(reg) pc, options(nomem, nostack)) };
        pc
    }
    #[cfg(target_arch = "riscv64")]
    {
        let pc: u64;
        // SAFETY: auipc has no side effects.
        unsafe { std::arch::asm!("auipc {0}, 0", out(reg) pc, options(nomem, nostack)) };
        pc
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "riscv64")))]
    {
        0
    }
}
