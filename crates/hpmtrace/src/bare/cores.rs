//! Per-core state and the protocol that keeps it sound.
//!
//! Slot `i` of the table belongs to the hart whose `tp` is `i` (the
//! program's contract, crate doc). On that hart, three kinds of code reach
//! it: the init calls, the hooks (`__cyg_profile_func_*`,
//! `perfWriteCntrs`) and the timer interrupt, which can arrive while a
//! hook runs. `BUSY[i]` is set for as long as a `&mut` to the slot lives,
//! so an interrupt that finds it set leaves the slot alone (the sample is
//! counted as skipped). `perfWriteTrace` reads other cores' buffers: it
//! turns recording off ([`ON`] = 0) and waits until no hart is inside a
//! record; a hook sets `BUSY` before it reads `ON` (both SeqCst), so one
//! that saw tracing on is always waited for.

use super::pmu::Counters;
use crate::counters::{read_user_counters, Clock, TimeCsr};
use crate::format::RecordType;
use crate::nexus::write::{NexusWriter, WriterConfig};
use crate::sink::MemBuffer;
use crate::stage::{Replay, SAMPLE_HEAD_WORDS, TAG_TRACE_ON};
use core::cell::UnsafeCell;
use core::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};

/// Most cores (`perfInit`'s `num_cores`).
pub const MAX_CORES: usize = 16;

/// How a core collects (SiFive's API allows one kind at a time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `perfManualInit`: `perfWriteCntrs` only.
    Manual,
    /// `perfTimerISRInit`: timer samples and `perfWriteCntrs`.
    Timer,
    /// `perfFuncEntryExitInit`: the hooks and `perfWriteCntrs`.
    FuncEntryExit,
}

impl Mode {
    fn records(self, kind: RecordType) -> bool {
        match kind {
            RecordType::Manual => true,
            RecordType::Isr => self == Mode::Timer,
            RecordType::FuncEnter | RecordType::FuncExit => self == Mode::FuncEntryExit,
        }
    }
}

/// One core's trace: its counters, staging area, encoder and buffer.
///
/// A record only stores the raw sample (record type, addresses, time,
/// counter readings: `crate::stage`'s layout) in the staging area, a fixed
/// number of instructions; the Delta and Nexus encoding into the trace
/// buffer runs when the staging area is full, at `perfTraceOff` and at
/// `perfWriteTrace`. The bytes are the ones encoding at once would write
/// (`Replay` feeds the same encoder calls in the same order).
pub struct Core {
    pub mode: Mode,
    pub counters: Counters,
    pub replay: Replay,
    pub out: NexusWriter<MemBuffer<'static>>,
    stage: &'static mut [u64],
    staged: usize,
    /// Words per sample.
    words: usize,
    /// The trace-on generation whose header this core has staged.
    generation: u32,
}

impl Core {
    /// A core recording `counters` in `mode` into `buffer`, staging in
    /// `stage` (at least one sample: [`crate::stage::sample_words`]).
    pub fn new(
        mode: Mode,
        counters: Counters,
        framing: WriterConfig,
        src: u16,
        buffer: &'static mut [u8],
        stage: &'static mut [u64],
    ) -> Core {
        let replay = Replay::new(counters.header, counters.ts_pos);
        Core {
            mode,
            words: replay.sample_words(),
            replay,
            counters,
            out: NexusWriter::new(framing, src, MemBuffer::new(buffer)),
            stage,
            staged: 0,
            generation: 0,
        }
    }

    /// Stage one sample: tag, addresses, time, then each counter.
    #[inline(always)]
    fn push(&mut self, tag: u64, addrs: [u64; 2]) {
        if self.staged + self.words > self.stage.len() {
            self.encode();
        }
        let s = &mut self.stage[self.staged..self.staged + self.words];
        s[0] = tag;
        s[1] = addrs[0];
        s[2] = addrs[1];
        s[3] = TimeCsr.now();
        read_user_counters(
            &self.counters.index[..self.counters.values],
            &mut s[SAMPLE_HEAD_WORDS..],
        );
        self.staged += self.words;
    }

    /// Encode what is staged into the trace buffer.
    pub fn encode(&mut self) {
        let _ = self
            .replay
            .replay(&mut self.out, &self.stage[..self.staged]);
        self.staged = 0;
    }

    /// Trace-on on this core: stage the header's sample now.
    pub fn start(&mut self, generation: u32) {
        self.generation = generation;
        self.push(TAG_TRACE_ON, [0, 0]);
    }

    /// One record, the header first if tracing was turned on since this
    /// core's last record.
    #[inline(always)]
    fn record(&mut self, generation: u32, kind: RecordType, addrs: [u64; 2]) {
        if !self.mode.records(kind) {
            return;
        }
        if self.generation != generation {
            self.start(generation);
        }
        self.push(kind.as_u8() as u64, addrs);
    }
}

struct Table([UnsafeCell<Option<Core>>; MAX_CORES]);

// SAFETY: slot i is reached only on the hart whose tp is i while BUSY[i]
// is set, or by `for_each_stopped` while no hart is inside a record (module
// doc); never from two places at once.
unsafe impl Sync for Table {}

static TABLE: Table = Table([const { UnsafeCell::new(None) }; MAX_CORES]);
static BUSY: [AtomicBool; MAX_CORES] = [const { AtomicBool::new(false) }; MAX_CORES];
/// Samples a core could not take because its state was in use (a timer
/// interrupt that arrived inside a hook).
static SKIPPED: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

/// The generation of the current trace-on, 0 while tracing is off.
pub static ON: AtomicU32 = AtomicU32::new(0);
/// The last generation handed out.
static GENERATION: AtomicU32 = AtomicU32::new(0);

/// This hart's core index: `tp` (crate contract).
#[inline(always)]
pub fn this_core() -> usize {
    let tp: usize;
    // SAFETY: reads a register.
    unsafe { core::arch::asm!("mv {0}, tp", out(reg) tp, options(nomem, nostack)) };
    tp
}

/// Run `f` on this hart's slot, unless it is in use (an interrupted call
/// on this hart holds it) or `tp` is out of range; `None` then.
///
/// # Safety
/// `tp` holds this hart's core index, distinct from every other hart's
/// (the library's contract with the program, crate doc).
#[inline(always)]
pub unsafe fn with_core<R>(f: impl FnOnce(&mut Option<Core>) -> R) -> Option<R> {
    let i = this_core();
    let busy = BUSY.get(i)?;
    if busy.load(Ordering::Relaxed) {
        SKIPPED[i].fetch_add(1, Ordering::Relaxed);
        return None;
    }
    busy.store(true, Ordering::SeqCst);
    // SAFETY: slot i is this hart's (caller's contract), and BUSY[i] was
    // clear, so no other reference to it lives on this hart; an interrupt
    // arriving now finds BUSY set and does not take one. Other harts take
    // no reference to it while BUSY is set (module doc).
    let r = f(unsafe { &mut *TABLE.0[i].get() });
    busy.store(false, Ordering::SeqCst);
    Some(r)
}

/// Record on this hart's core if tracing is on and the core collects
/// `kind`: the hooks' and the timer's path.
///
/// # Safety
/// As [`with_core`].
#[inline(always)]
pub unsafe fn record(kind: RecordType, addrs: [u64; 2]) {
    if ON.load(Ordering::Relaxed) == 0 {
        return;
    }
    // SAFETY: the caller's contract.
    unsafe {
        with_core(|c| {
            // Read ON after BUSY is set (SeqCst on both sides), so a writer
            // that turned tracing off and saw BUSY clear is never raced.
            let generation = ON.load(Ordering::SeqCst);
            if let (Some(c), true) = (c, generation != 0) {
                c.record(generation, kind, addrs);
            }
        })
    };
}

/// Turn tracing on (a new generation: every core writes a header at its
/// next record, this one now).
///
/// # Safety
/// As [`with_core`].
pub unsafe fn trace_on() {
    let generation = GENERATION
        .fetch_add(1, Ordering::SeqCst)
        .wrapping_add(1)
        .max(1);
    ON.store(generation, Ordering::SeqCst);
    // SAFETY: the caller's contract.
    unsafe {
        with_core(|c| {
            if let Some(c) = c {
                c.start(generation);
            }
        })
    };
}

/// Stop recording on every core and wait until no hart is inside a
/// record; returns the generation that was on (0: none).
pub fn stop_and_wait() -> u32 {
    let was = ON.swap(0, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    let me = this_core();
    for (i, b) in BUSY.iter().enumerate() {
        if i != me {
            while b.load(Ordering::SeqCst) {
                core::hint::spin_loop();
            }
        }
    }
    was
}

/// Visit every configured core's state with tracing stopped, then restore
/// tracing to `resume` (the generation [`stop_and_wait`] returned).
///
/// # Safety
/// As [`with_core`], and no other hart calls an init function or
/// `perfTraceOn` meanwhile (the C API documents it for `perfWriteTrace`).
pub unsafe fn for_each_stopped(resume: u32, mut f: impl FnMut(usize, &mut Core, u64)) {
    // This hart's own slot too: keep its timer interrupt out meanwhile.
    let mine = BUSY.get(this_core());
    if let Some(b) = mine {
        b.store(true, Ordering::SeqCst);
    }
    for (i, (slot, skipped)) in TABLE.0.iter().zip(&SKIPPED).enumerate() {
        // SAFETY: recording is off and every hart that was inside a record
        // has left it (stop_and_wait), this hart's own slot is marked busy
        // (its interrupts leave it alone), and no init runs elsewhere
        // (caller): nothing else reaches slot i while this reference lives.
        if let Some(c) = unsafe { &mut *slot.get() } {
            f(i, c, skipped.load(Ordering::Relaxed));
        }
    }
    if let Some(b) = mine {
        b.store(false, Ordering::SeqCst);
    }
    ON.store(resume, Ordering::SeqCst);
}
