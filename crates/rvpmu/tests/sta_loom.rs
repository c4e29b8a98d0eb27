//! A loom model of the STA sequence protocol: the library's writer
//! (`StealTime::account`) and reader (`read_steal`) run on loom threads
//! over a record made of loom atomics, and loom explores their
//! interleavings (up to a preemption bound) and the values each relaxed
//! load may return in its model of C11 (which leaves out some behaviours,
//! e.g. load buffering). `tests/sta_race.rs` races the same code on real
//! threads; this checks the orderings instead of hoping to hit them.
//!
//! Run with (what `cargo xtask test` does):
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p rvpmu --release --test sta_loom -- --nocapture
//! ```
//!
//! Under `cfg(loom)` the fences in `sta.rs` are loom's (its private `sync`
//! shim), so loom sees every ordering the protocol relies on.
//!
//! Every store and load of the record is `Relaxed`: the atomics only make
//! the accesses data-race free, and whatever ordering the protocol has
//! comes from its own fences (`SeqCst` around the writer's data, `Acquire`
//! in the reader). Stronger orderings here would hide a missing fence.
//!
//! The 64-bit `steal` is stored as two 32-bit halves, written and read
//! separately (low, then high): a 64-bit atomic cannot tear, so with one
//! the only inconsistency left to catch would be between `steal` and
//! `preempted`. Two halves are also the weaker memory (a 32-bit hart, or
//! a byte-wise copy), so a protocol that holds here holds for single
//! 64-bit accesses too. Every increment changes both halves.
#![cfg(loom)]

use loom::sync::atomic::{AtomicU32, AtomicU8, Ordering::Relaxed};
use loom::sync::Arc;
use loom::thread;
use rvpmu::mem::SupervisorMemory;
use rvpmu::sta::{read_steal, StaArea, StealTime};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

mod sta_record;
use sta_record::{Shared, BASE};

/// What the writer accounts, in order: `(steal_ns, preempted)`: the hart
/// is withheld (preempted, some steal so far), then released with the rest
/// of the wait. Each increment moves both 32-bit halves of the total. Two
/// updates are enough for a read to overlap one update, to straddle both,
/// and to see preempted flip; with a third the model ran for over a
/// minute even at preemption bound 2.
const UPDATES: [(u64, bool); 2] = [(0x1_0000_0001, true), (0x2_0000_0002, false)];

/// Preemption bound when `LOOM_MAX_PREEMPTIONS` does not set one.
const PREEMPTION_BOUND: usize = 3;

/// The record's fields as loom atomics.
struct Record {
    sequence: AtomicU32,
    steal_lo: AtomicU32,
    steal_hi: AtomicU32,
    preempted: AtomicU8,
}

impl Record {
    fn new() -> Record {
        Record {
            sequence: AtomicU32::new(0),
            steal_lo: AtomicU32::new(0),
            steal_hi: AtomicU32::new(0),
            preempted: AtomicU8::new(0),
        }
    }
}

impl sta_record::Fields for Arc<Record> {
    fn store_sequence(&self, v: u32) {
        self.sequence.store(v, Relaxed);
    }
    /// Low half, then high half.
    fn store_steal(&self, v: u64) {
        self.steal_lo.store(v as u32, Relaxed);
        self.steal_hi.store((v >> 32) as u32, Relaxed);
    }
    fn store_preempted(&self, v: u8) {
        self.preempted.store(v, Relaxed);
    }
}

/// Which writer the model runs.
#[derive(Clone, Copy)]
enum Writer {
    /// The library's `StealTime::account`.
    Library,
    /// A broken writer for the negative check: the data and then the
    /// sequence (+2), with the same fences but no odd step, so a reader
    /// can read a half-written record between two equal even sequences.
    NoOddStep,
}

/// The `(steal, preempted)` pairs the writer publishes: registration's
/// zeroes, then one per update.
fn published() -> Vec<(u64, u8)> {
    let mut total = 0u64;
    let mut v = vec![(0, 0)];
    for (inc, pre) in UPDATES {
        total += inc;
        v.push((total, pre as u8));
    }
    v
}

/// Counters over all iterations of one model (outside loom).
struct Stats {
    iterations: AtomicUsize,
    /// Reads that returned a value other than the registration's zeroes.
    updated_reads: AtomicUsize,
    /// `read_steal` calls that gave up.
    gave_up: AtomicUsize,
    /// `read_steal` calls that returned a value from a later attempt.
    retried: AtomicUsize,
}

impl Stats {
    const fn new() -> Stats {
        Stats {
            iterations: AtomicUsize::new(0),
            updated_reads: AtomicUsize::new(0),
            gave_up: AtomicUsize::new(0),
            retried: AtomicUsize::new(0),
        }
    }
}

/// What one reader does: `reads` calls of `read_steal`, each giving up
/// after `tries` attempts (`None` is an allowed answer). Every attempt is
/// a retry loom has to explore, so the two are traded against each other.
#[derive(Clone, Copy)]
struct Reader {
    reads: usize,
    tries: usize,
}

/// One execution: the writer publishes `UPDATES` while one reader thread
/// reads and checks every value it gets. One reader only: readers never
/// write, so a second one adds no ordering for the protocol to get right,
/// only states for loom to explore.
fn model(writer: Writer, reader: Reader, stats: &'static Stats) {
    stats.iterations.fetch_add(1, SeqCst);
    let rec = Arc::new(Record::new());
    let mut mem = Shared(rec.clone());
    let mut st = StealTime::new();
    st.set_shmem(&mut mem, StaArea::parse(BASE, 0).unwrap())
        .unwrap();

    let reader_thread = {
        let rec = rec.clone();
        thread::spawn(move || {
            let published = published();
            let mut last = 0u64;
            for _ in 0..reader.reads {
                let pre = Cell::new(0u8);
                let attempts = Cell::new(0usize);
                let got = read_steal(
                    || rec.sequence.load(Relaxed),
                    || {
                        let lo = rec.steal_lo.load(Relaxed) as u64;
                        let hi = rec.steal_hi.load(Relaxed) as u64;
                        pre.set(rec.preempted.load(Relaxed));
                        attempts.set(attempts.get() + 1);
                        hi << 32 | lo
                    },
                    reader.tries,
                );
                let Some(v) = got else {
                    stats.gave_up.fetch_add(1, SeqCst);
                    continue;
                };
                // The closure ran last for the attempt that succeeded,
                // so `pre` is the preempted byte read with `v`.
                let pair = (v, pre.get());
                assert!(
                    published.contains(&pair),
                    "torn read: (steal {v:#x}, preempted {}) was never published \
                         (published: {published:x?})",
                    pair.1
                );
                assert!(v >= last, "steal went back from {last:#x} to {v:#x}");
                if v != 0 {
                    stats.updated_reads.fetch_add(1, SeqCst);
                }
                if attempts.get() > 1 {
                    stats.retried.fetch_add(1, SeqCst);
                }
                last = v;
            }
        })
    };

    match writer {
        Writer::Library => {
            for (inc, pre) in UPDATES {
                st.account(&mut mem, inc, pre);
            }
            assert_eq!(st.steal_ns(), published().last().unwrap().0);
        }
        Writer::NoOddStep => {
            use loom::sync::atomic::{fence, Ordering};
            let (mut seq, mut total) = (0u32, 0u64);
            for (inc, pre) in UPDATES {
                total += inc;
                fence(Ordering::SeqCst);
                mem.write_u64(BASE + 8, total).unwrap();
                mem.write(BASE + 16, &[pre as u8]).unwrap();
                fence(Ordering::SeqCst);
                seq += 2;
                mem.write_u32(BASE, seq).unwrap();
            }
        }
    }
    reader_thread.join().unwrap();
}

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = b.preemption_bound.or(Some(PREEMPTION_BOUND));
    // Always explore the whole (bounded) space: a time or permutation cap
    // from the environment would make a pass mean less.
    b.max_duration = None;
    b.max_permutations = None;
    b
}

fn check(name: &str, reader: Reader, stats: &'static Stats) {
    let start = std::time::Instant::now();
    builder().check(move || model(Writer::Library, reader, stats));
    let n = stats.iterations.load(SeqCst);
    eprintln!(
        "{name}: {n} loom iterations in {:.1?} (preemption bound {:?}); \
         {} reads saw an update, {} succeeded on a retry, {} gave up after {} tries",
        start.elapsed(),
        builder().preemption_bound,
        stats.updated_reads.load(SeqCst),
        stats.retried.load(SeqCst),
        stats.gave_up.load(SeqCst),
        reader.tries,
    );
    // The model is not vacuous: reads did return published updates, some
    // gave up because they kept meeting a write in flight, and with a retry
    // allowed, some succeeded on it.
    assert!(stats.updated_reads.load(SeqCst) > 0);
    assert!(stats.gave_up.load(SeqCst) > 0);
    assert_eq!(stats.retried.load(SeqCst) > 0, reader.tries > 1);
}

/// Two reads of one attempt each: no torn value, and the second read
/// never returns less than the first.
#[test]
fn reads_are_never_torn_and_never_go_back() {
    static STATS: Stats = Stats::new();
    let reader = Reader { reads: 2, tries: 1 };
    check("2 reads x 1 try", reader, &STATS);
}

/// One read with a retry: what the retry returns is consistent too.
#[test]
fn a_retried_read_is_never_torn() {
    static STATS: Stats = Stats::new();
    let reader = Reader { reads: 1, tries: 2 };
    check("1 read x 2 tries", reader, &STATS);
}

/// The negative check: the same model with a writer that skips the odd
/// sequence step must fail, so the model can catch a broken protocol.
#[test]
fn a_writer_without_the_odd_step_is_caught() {
    static STATS: Stats = Stats::new();
    let caught = std::panic::catch_unwind(|| {
        builder().check(|| model(Writer::NoOddStep, Reader { reads: 1, tries: 1 }, &STATS));
    });
    let n = STATS.iterations.load(SeqCst);
    let Err(payload) = caught else {
        panic!("loom explored {n} iterations of the broken writer without a torn read");
    };
    // It must fail for the right reason, not e.g. on a loom limit.
    let msg = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    assert!(msg.starts_with("torn read"), "failed otherwise: {msg:?}");
    eprintln!(
        "broken writer (no odd step): caught after {n} loom iterations (panic above is expected)"
    );
}
