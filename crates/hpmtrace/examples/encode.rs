//! Benchmark (not a test): the cost of encoding staged samples (Delta +
//! Nexus framing into the trace buffer), single thread, per enter+exit
//! pair, for 1, 2 and 6 counters laid out as the Linux collector lays
//! them out (timestamp in slot 1, 64-bit software counters).
//!
//! `cargo run --release -p hpmtrace --example encode [-- N [REPEATS [COUNTERS [moving]]]]`
//!
//! The samples are those of the overhead benchmark's fib program: a
//! recursive fib's enters and exits (one function, three call sites, PIE
//! addresses) for fib(N) (default 24), trace-clock steps of 20-60 ticks, counters that rarely
//! move (with `moving`: every counter after the timestamp moves by 1 to
//! 1024 on every sample, as cycles and instructions do on hardware).
//! They are encoded REPEATS times (default 20) into a fresh trace
//! buffer; the best time per pair is printed. Under `perf record`, this is
//! the encoder alone; under callgrind, `encode::encode_all` inclusive is
//! the encoding (crates/hpmtrace/BENCH.md).

use hpmtrace::counters::{assign_slots, build_header, timestamp_position};
use hpmtrace::format::{hw, CountType, CounterInfo, Event, RecordType};
use hpmtrace::linux::{sw, zeroed_buffer};
use hpmtrace::nexus::write::{NexusWriter, WriterConfig};
use hpmtrace::sink::VecBuffer;
use hpmtrace::stage::{sample_words, write_sample, Replay, TAG_TRACE_ON};
use std::time::Instant;

/// The samples of fib(n)'s calls with `values` counters besides the
/// timestamp, after a trace-on sample.
fn fib_samples(n: u32, values: usize, moving: bool) -> Vec<u64> {
    struct Gen {
        words: Vec<u64>,
        values: Vec<u64>,
        ts: u64,
        rng: u64,
        sw: usize,
        moving: bool,
    }
    impl Gen {
        fn sample(&mut self, tag: u64, a0: u64, a1: u64) {
            // xorshift: clock steps of 20-60 ticks, a counter moves once in
            // ~4096 samples.
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            self.ts += 20 + self.rng % 41;
            if self.moving {
                for (i, v) in self.values.iter_mut().enumerate() {
                    *v += 1 + self.rng.rotate_right(4 * i as u32) % 1024;
                }
            } else if self.rng >> 52 == 0 && !self.values.is_empty() {
                let i = (self.rng >> 8) as usize % self.values.len();
                self.values[i] += 1;
            }
            let at = self.words.len();
            self.words.resize(at + self.sw, 0);
            write_sample(&mut self.words[at..], tag, a0, a1, self.ts, &self.values);
        }
        fn fib(&mut self, n: u32, site: u64) -> u64 {
            const FIB: u64 = 0x5555_5555_5136;
            self.sample(RecordType::FuncEnter.as_u8() as u64, FIB, site);
            let r = if n < 2 {
                n as u64
            } else {
                self.fib(n - 1, FIB + 0x2a) + self.fib(n - 2, FIB + 0x37)
            };
            self.sample(RecordType::FuncExit.as_u8() as u64, FIB, site);
            r
        }
    }
    let mut g = Gen {
        words: Vec::new(),
        values: (0..values as u64).map(|i| 1000 + i).collect(),
        ts: 1 << 34,
        rng: 0x9e37_79b9_7f4a_7c15,
        sw: sample_words(values),
        moving,
    };
    g.sample(TAG_TRACE_ON, 0, 0);
    g.fib(n, 0x5555_5555_52a0);
    g.words
}

/// The encoding measured: a function of its own, so that callgrind
/// counts it (`encode::encode_all`) whatever the compiler inlines into it.
#[inline(never)]
fn encode_all(replay: &mut Replay, w: &mut NexusWriter<VecBuffer>, words: &[u64]) {
    replay.replay(w, words).expect("room for the trace");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u32 = args.next().and_then(|x| x.parse().ok()).unwrap_or(24);
    let repeats: usize = args.next().and_then(|x| x.parse().ok()).unwrap_or(20);
    let sets: Vec<usize> = match args.next().and_then(|x| x.parse().ok()) {
        Some(c) => vec![c],
        None => vec![1, 2, 6],
    };
    let moving = args.next().as_deref() == Some("moving");
    for counters in sets {
        let mut events = vec![Event::General {
            code: hw::TIMESTAMP,
        }];
        let sw_events = [sw::CONTEXT_SWITCHES, sw::CGROUP_SWITCHES];
        for i in 1..counters {
            events.push(Event::LinuxSoftware {
                code: sw_events[i % 2],
            });
        }
        let slots = assign_slots(&events).expect("slots");
        let chosen: Vec<(u8, Event, CounterInfo)> = events
            .iter()
            .zip(&slots)
            .map(|(&e, &s)| {
                let width = if e.is_timestamp() { 40 } else { 64 };
                (s, e, CounterInfo { csr: 0, width })
            })
            .collect();
        let header = build_header(CountType::Delta, &chosen);
        let ts_pos = timestamp_position(&header);
        let words = fib_samples(n, counters - 1, moving);
        let pairs = (words.len() / sample_words(counters - 1) - 1) / 2;
        let mut best = f64::INFINITY;
        let mut bytes = 0;
        for _ in 0..repeats {
            let mut replay = Replay::new(header, ts_pos);
            let mut w = NexusWriter::new(
                WriterConfig::default(),
                0,
                VecBuffer::new(zeroed_buffer(words.len() * 16 + (1 << 16), true)),
            );
            let t0 = Instant::now();
            encode_all(&mut replay, &mut w, &words);
            let t = t0.elapsed().as_nanos() as f64 / pairs as f64;
            best = best.min(t);
            bytes = w.inner().data().len();
        }
        println!(
            "{counters} counter(s): {best:6.1} ns per pair (best of {repeats}), {pairs} pairs, {:.1} bytes per pair",
            bytes as f64 / pairs as f64
        );
    }
}
