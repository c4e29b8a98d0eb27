//! Deferred encoding: the hot path stores raw samples, [`Replay`] turns
//! them into ITC writes later.
//!
//! A function hook only has to remember what happened: the record type,
//! the addresses, the trace timestamp and the raw counter readings. The
//! Delta/DeltaXOR state and the Nexus framing are not needed until the
//! trace is read, so the Linux collector appends samples to a per-thread
//! staging buffer of `u64` words and encodes them when the buffer fills or
//! the trace is turned off or written. [`Replay`] feeds the samples to the
//! same [`Encoder`] calls, in the same order, with the same arguments as
//! encoding at once would: the bytes are identical (the tests compare both
//! paths on random streams).
//!
//! Sample layout, [`sample_words`] words each:
//! `[tag, addr0, addr1, timestamp, value_0 .. value_{k-1}]` where `tag` is
//! the [`RecordType`] byte or [`TAG_TRACE_ON`], and the values are the
//! counters of the header in record order *without* the timestamp counter
//! (its value is the sample's timestamp).
//!
//! `no_std`, no allocation.

use crate::encoder::{Encoder, Shape};
use crate::format::{Header, RecordType, MAX_COUNTERS};
use crate::sink::{Sink, Stopped};

/// Words before the counter values in every sample.
pub const SAMPLE_HEAD_WORDS: usize = 4;

/// Tag of a trace-on sample: the header is written there and Delta is
/// seeded with the sample's readings (addresses are ignored).
pub const TAG_TRACE_ON: u64 = 0xff;

/// The record type of a sample's tag other than [`TAG_TRACE_ON`]; `None`
/// for a tag this crate does not write.
#[inline(always)]
fn record_kind(tag: u64) -> Option<RecordType> {
    u8::try_from(tag).ok().and_then(RecordType::from_u8)
}

/// Words one sample takes when it carries `values` counter readings.
pub const fn sample_words(values: usize) -> usize {
    SAMPLE_HEAD_WORDS + values
}

/// Store one sample into `dst`, which must be exactly
/// `sample_words(values.len())` words long (shorter: the sample is cut).
#[inline(always)]
pub fn write_sample(dst: &mut [u64], tag: u64, a0: u64, a1: u64, ts: u64, values: &[u64]) {
    let head = [tag, a0, a1, ts];
    for (d, s) in dst.iter_mut().zip(head.iter().chain(values.iter())) {
        *d = *s;
    }
}

/// Encodes staged samples of one trace source.
#[derive(Clone, Debug)]
pub struct Replay {
    enc: Encoder,
    /// Record position of the timestamp counter, if the header has one.
    ts_pos: Option<usize>,
    /// Words per sample.
    words: usize,
}

impl Replay {
    /// A replayer for records of `header`; `ts_pos` is the record position
    /// of the timestamp counter ([`crate::counters::timestamp_position`]).
    pub fn new(header: Header, ts_pos: Option<usize>) -> Replay {
        let enc = Encoder::new(header);
        let n = enc.counters();
        let ts_pos = ts_pos.filter(|&p| p < n);
        let values = n - ts_pos.map_or(0, |_| 1);
        Replay {
            enc,
            ts_pos,
            words: sample_words(values),
        }
    }

    /// Words per sample.
    pub fn sample_words(&self) -> usize {
        self.words
    }

    /// The encoder (for its statistics).
    pub fn encoder(&self) -> &Encoder {
        &self.enc
    }

    /// The readings of sample `s` in record order (`copy` holds them when
    /// the timestamp goes between the values).
    #[inline(always)]
    fn readings_shaped<'a>(
        s: &'a [u64],
        copy: &'a mut [u64; MAX_COUNTERS],
        n: usize,
        ts_pos: Option<usize>,
    ) -> &'a [u64] {
        // Without a timestamp counter, or with it first (no cycles counter
        // before it), the sample holds them in that order already.
        match ts_pos {
            None => &s[SAMPLE_HEAD_WORDS..],
            Some(0) => &s[SAMPLE_HEAD_WORDS - 1..],
            Some(p) => {
                let values = &s[SAMPLE_HEAD_WORDS..];
                copy[..p].copy_from_slice(&values[..p]);
                copy[p] = s[3];
                copy[p + 1..n].copy_from_slice(&values[p..]);
                &copy[..n]
            }
        }
    }

    /// Encode the whole samples in `words` into `sink`, in order. A
    /// trailing partial sample and samples with an unknown tag are skipped.
    /// Returns the first `Stopped` of the sink, if any (encoding goes on,
    /// like the immediate path, so statistics count every record).
    pub fn replay<S: Sink>(&mut self, sink: &mut S, words: &[u64]) -> Result<(), Stopped> {
        // The usual shapes get a loop each, in which the number of
        // counters, the timestamp's place and the count type are
        // constants, so the counter loops unroll, their bounds checks go,
        // and no record asks for the count type: Delta with up to 8
        // counters, the timestamp first (the Linux collector's layout
        // without a cycles counter) or second (with one, as hardware
        // counters are listed). Not in `no_std` builds, where code size
        // counts more.
        #[cfg(feature = "std")]
        {
            let s = self.enc.shape();
            let delta = s.count_type == crate::format::CountType::Delta;
            match (delta, s.n, self.ts_pos, s.tail_from) {
                (true, n @ 1..=8, Some(0), 1) => return self.replay_fixed::<S, 0>(n, sink, words),
                (true, n @ 2..=8, Some(1), 2) => return self.replay_fixed::<S, 1>(n, sink, words),
                _ => {}
            }
        }
        self.replay_shaped(sink, words, self.enc.shape(), self.ts_pos)
    }

    /// [`Replay::replay_shaped`] for `n` (1 to 8) Delta counters with the
    /// timestamp at `TS`: a function per number of counters, in which the
    /// shape is a constant.
    #[cfg(feature = "std")]
    fn replay_fixed<S: Sink, const TS: usize>(
        &mut self,
        n: usize,
        sink: &mut S,
        words: &[u64],
    ) -> Result<(), Stopped> {
        #[inline(never)]
        fn fixed<S: Sink, const N: usize, const TS: usize>(
            r: &mut Replay,
            sink: &mut S,
            words: &[u64],
        ) -> Result<(), Stopped> {
            let shape = Shape {
                n: N,
                tail_from: TS + 1,
                count_type: crate::format::CountType::Delta,
            };
            r.replay_shaped(sink, words, shape, Some(TS))
        }
        match n {
            1 => fixed::<S, 1, TS>(self, sink, words),
            2 => fixed::<S, 2, TS>(self, sink, words),
            3 => fixed::<S, 3, TS>(self, sink, words),
            4 => fixed::<S, 4, TS>(self, sink, words),
            5 => fixed::<S, 5, TS>(self, sink, words),
            6 => fixed::<S, 6, TS>(self, sink, words),
            7 => fixed::<S, 7, TS>(self, sink, words),
            _ => fixed::<S, 8, TS>(self, sink, words),
        }
    }

    /// [`Replay::replay`] with the encoder's [`Shape`] and the timestamp's
    /// place in the sample passed in, so that constants make a loop of
    /// their own.
    #[inline(always)]
    fn replay_shaped<S: Sink>(
        &mut self,
        sink: &mut S,
        words: &[u64],
        shape: Shape,
        ts_pos: Option<usize>,
    ) -> Result<(), Stopped> {
        debug_assert!(shape == self.enc.shape() && ts_pos == self.ts_pos);
        let n = shape.n;
        // Known to the compiler too when `n` and `ts_pos` are.
        let sample = sample_words(n - ts_pos.is_some() as usize);
        debug_assert!(sample == self.words);
        // Stopped carries nothing, so the first error is any error.
        let mut stopped = false;
        let mut copy = [0u64; MAX_COUNTERS];
        for s in words.chunks_exact(sample) {
            let (tag, a0, a1, ts) = (s[0], s[1], s[2], s[3]);
            let readings = Self::readings_shaped(s, &mut copy, n, ts_pos);
            // Records first: one comparison for the common case.
            let r = match record_kind(tag) {
                Some(kind) => self
                    .enc
                    .record_shaped(sink, kind, [a0, a1], readings, ts, shape),
                None if tag == TAG_TRACE_ON => self.enc.trace_on(sink, readings, ts),
                None => Ok(()),
            };
            stopped |= r.is_err();
        }
        if stopped {
            Err(Stopped)
        } else {
            Ok(())
        }
    }
}
