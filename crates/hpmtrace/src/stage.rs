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

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use crate::format::{CountType, CounterDesc, CounterInfo, Event, TIMESTAMP_COUNTER_INDEX};
    use crate::nexus::write::{NexusWriter, WriterConfig};
    use crate::sink::VecBuffer;

    use crate::test_rng::Rng;

    /// A random header: random count type, slots, widths, maybe a
    /// timestamp counter.
    fn random_header(r: &mut Rng) -> Header {
        let ct = [CountType::Raw, CountType::Delta, CountType::DeltaXor][r.below(3) as usize];
        let mut h = Header::new(ct);
        for slot in 0..MAX_COUNTERS {
            if r.below(4) != 0 {
                continue;
            }
            let event = if slot == TIMESTAMP_COUNTER_INDEX as usize && r.below(2) == 0 {
                Event::General { code: 0x80 }
            } else {
                Event::General {
                    code: 1 + r.below(10) as u16,
                }
            };
            let width = [1, 12, 32, 40, 48, 56, 64][r.below(7) as usize];
            h.counters[slot] = Some(CounterDesc {
                event,
                info: CounterInfo { csr: 0, width },
            });
        }
        h
    }

    /// Random operation: a trace-on or a record with random addresses,
    /// readings near the previous ones (or anywhere), timestamps that
    /// mostly grow.
    fn random_stream(
        r: &mut Rng,
        values: usize,
        len: usize,
    ) -> Vec<(u64, u64, u64, u64, Vec<u64>)> {
        let mut ts = r.next() >> 20;
        let mut vals: Vec<u64> = (0..values).map(|_| r.next()).collect();
        let mut out = Vec::new();
        for _ in 0..len {
            ts = if r.below(50) == 0 {
                r.next()
            } else {
                ts + r.below(5000)
            };
            for v in vals.iter_mut() {
                *v = match r.below(20) {
                    0 => r.next(),
                    1 => v.wrapping_sub(r.below(3)),
                    _ => {
                        let bits = r.below(40) + 1;
                        v.wrapping_add(r.below(1 << bits))
                    }
                };
            }
            let tag = if r.below(40) == 0 {
                TAG_TRACE_ON
            } else {
                r.below(4)
            };
            let addr = |r: &mut Rng| match r.below(3) {
                0 => r.next() & !1,
                1 => r.below(1 << 32) & !1,
                _ => 0x40_1000 + 2 * r.below(4096),
            };
            let (a0, a1) = (addr(r), addr(r));
            out.push((tag, a0, a1, ts, vals.clone()));
        }
        out
    }

    /// Encode at once (the path before staging existed).
    fn immediate(
        h: Header,
        ts_pos: Option<usize>,
        cfg: WriterConfig,
        cap: usize,
        ops: &[(u64, u64, u64, u64, Vec<u64>)],
    ) -> (Vec<u8>, u64, crate::encoder::EncoderStats) {
        let mut enc = Encoder::new(h);
        let mut w = NexusWriter::new(cfg, 3, VecBuffer::with_capacity(cap));
        for (tag, a0, a1, ts, vals) in ops {
            let mut readings = Vec::new();
            let mut v = vals.iter();
            for i in 0..enc.counters() {
                readings.push(if Some(i) == ts_pos {
                    *ts
                } else {
                    *v.next().unwrap()
                });
            }
            let _ = if *tag == TAG_TRACE_ON {
                enc.trace_on(&mut w, &readings, *ts)
            } else {
                let kind = RecordType::from_u8(*tag as u8).unwrap();
                enc.record(&mut w, kind, [*a0, *a1], &readings, *ts)
            };
        }
        let b = w.into_inner();
        (b.data().to_vec(), b.dropped(), enc.stats())
    }

    /// Stage into a buffer of `stage_words`, replaying whenever the next
    /// sample does not fit and at the end (what the collector does).
    fn staged(
        h: Header,
        ts_pos: Option<usize>,
        cfg: WriterConfig,
        cap: usize,
        stage_words: usize,
        ops: &[(u64, u64, u64, u64, Vec<u64>)],
    ) -> (Vec<u8>, u64, crate::encoder::EncoderStats) {
        let mut rp = Replay::new(h, ts_pos);
        let mut w = NexusWriter::new(cfg, 3, VecBuffer::with_capacity(cap));
        let words = rp.sample_words();
        let mut stage = vec![0u64; stage_words.max(words)];
        let mut filled = 0;
        for (tag, a0, a1, ts, vals) in ops {
            if filled + words > stage.len() {
                let _ = rp.replay(&mut w, &stage[..filled]);
                filled = 0;
            }
            write_sample(
                &mut stage[filled..filled + words],
                *tag,
                *a0,
                *a1,
                *ts,
                vals,
            );
            filled += words;
        }
        let _ = rp.replay(&mut w, &stage[..filled]);
        let b = w.into_inner();
        (b.data().to_vec(), b.dropped(), rp.encoder().stats())
    }

    /// A staged sample: tag, addresses, timestamp, counter values.
    type Sample = (u64, u64, u64, u64, Vec<u64>);

    /// A stream of at least `min_len` random samples for a random
    /// header, starting with a header as the collector's streams do, and
    /// a random framing: (header, timestamp position, counter values per
    /// sample, samples, framing).
    fn random_case(
        r: &mut Rng,
        min_len: usize,
    ) -> (Header, Option<usize>, usize, Vec<Sample>, WriterConfig) {
        let h = random_header(r);
        let ts_pos = crate::counters::timestamp_position(&h);
        let n = h.iter().count();
        let values = n - ts_pos.map_or(0, |_| 1);
        let len = min_len + r.below(400) as usize;
        let mut ops = random_stream(r, values, len);
        ops[0].0 = TAG_TRACE_ON;
        let cfg = WriterConfig {
            channel: r.below(32) as u8,
            src_bits: r.below(5) as u8,
            timestamp_bits: [40, 48, 64][r.below(3) as usize],
        };
        (h, ts_pos, values, ops, cfg)
    }

    #[test]
    fn staged_bytes_equal_immediate_bytes_on_random_streams() {
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        let mut stopped_mid_stream = 0;
        for round in 0..300 {
            let (h, ts_pos, values, ops, cfg) = random_case(&mut r, 1);
            // Sometimes a buffer too small for the stream (stop-on-wrap).
            let cap = if r.below(3) == 0 {
                r.below(4000) as usize
            } else {
                1 << 22
            };
            let stage_words =
                sample_words(values) * (1 + r.below(20) as usize) + r.below(7) as usize;
            let a = immediate(h, ts_pos, cfg, cap, &ops);
            let b = staged(h, ts_pos, cfg, cap, stage_words, &ops);
            if cap == 1 << 22 {
                assert!(!a.0.is_empty(), "round {round}: nothing encoded");
            }
            if a.1 != 0 && !a.0.is_empty() {
                stopped_mid_stream += 1;
            }
            assert_eq!(a.0, b.0, "round {round}: bytes differ ({h:?})");
            assert_eq!(a.1, b.1, "round {round}: dropped messages differ");
            assert_eq!(a.2, b.2, "round {round}: encoder statistics differ");
        }
        assert!(
            stopped_mid_stream > 10,
            "stop-on-wrap exercised {stopped_mid_stream} times"
        );
    }

    /// The loops of fixed shape (`Replay::replay_fixed`) against
    /// encoding at once, for every shape up to 10 counters with the
    /// timestamp first, second or absent (the fixed ones and their
    /// neighbours), every count type, streams whose counters and
    /// addresses mostly repeat (the writer's copies) or mostly move.
    #[test]
    fn every_record_shape_stages_to_the_bytes_of_immediate_encoding() {
        let mut r = Rng(0x5ba9_e000_f1ed_0001);
        let mut cases = 0;
        for n in 1..=10usize {
            for ts_at in [None, Some(0), Some(1)] {
                if ts_at.is_some_and(|p| p >= n) {
                    continue;
                }
                for ct in [CountType::Raw, CountType::Delta, CountType::DeltaXor] {
                    let mut h = Header::new(ct);
                    // Slot 1 is the timestamp's; the others fill up from 0.
                    let mut slots =
                        (0..MAX_COUNTERS).filter(|&s| s != TIMESTAMP_COUNTER_INDEX as usize);
                    for pos in 0..n {
                        let (slot, event) = if Some(pos) == ts_at {
                            (
                                TIMESTAMP_COUNTER_INDEX as usize,
                                Event::General { code: 0x80 },
                            )
                        } else {
                            let s = slots.next().unwrap();
                            // Slot 0 goes before the timestamp's, so the
                            // timestamp is second only with it.
                            let s = if ts_at == Some(0) && s == 0 {
                                slots.next().unwrap()
                            } else {
                                s
                            };
                            (
                                s,
                                Event::General {
                                    code: 1 + pos as u16,
                                },
                            )
                        };
                        let width = [12, 32, 40, 48, 64][r.below(5) as usize];
                        h.counters[slot] = Some(CounterDesc {
                            event,
                            info: CounterInfo { csr: 0, width },
                        });
                    }
                    let ts_pos = crate::counters::timestamp_position(&h);
                    assert_eq!(ts_pos, ts_at, "{n} counters: timestamp at {ts_at:?}");
                    assert_eq!(h.iter().count(), n);
                    let values = n - ts_pos.map_or(0, |_| 1);
                    for repeating in [false, true] {
                        let len = 300 + r.below(300) as usize;
                        let mut ops = random_stream(&mut r, values, len);
                        ops[0].0 = TAG_TRACE_ON;
                        if repeating {
                            // Counters that rarely move, three call sites.
                            for i in 1..ops.len() {
                                if r.below(8) != 0 {
                                    ops[i].4 = ops[i - 1].4.clone();
                                }
                                ops[i].1 = 0x40_1000;
                                ops[i].2 = 0x40_2000 + 0x10 * r.below(3);
                            }
                        }
                        let cfg = WriterConfig::default();
                        let a = immediate(h, ts_pos, cfg, 1 << 20, &ops);
                        let b = staged(h, ts_pos, cfg, 1 << 20, sample_words(values) * 37, &ops);
                        assert!(a.0.len() > 1000);
                        assert_eq!(a.0, b.0, "{n} counters, timestamp at {ts_pos:?}, {ct:?}");
                        assert_eq!(a.2, b.2);
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 2 * 3 * (10 + 10 + 9));
    }

    #[test]
    fn unknown_tags_and_partial_samples_are_skipped() {
        let mut h = Header::new(CountType::Raw);
        h.counters[0] = Some(CounterDesc {
            event: Event::General { code: 1 },
            info: CounterInfo {
                csr: 0xc00,
                width: 64,
            },
        });
        let mut rp = Replay::new(h, None);
        assert_eq!(rp.sample_words(), 5);
        let mut log = crate::sink::WriteLog::default();
        let words = [
            TAG_TRACE_ON,
            0,
            0,
            1,
            7,
            9,
            0,
            0,
            2,
            8,
            2,
            0x10,
            0,
            3,
            9,
            1,
            2,
        ];
        rp.replay(&mut log, &words).unwrap();
        // header (3 + 3 writes) + one manual record (type, addr, value);
        // the tag-9 sample and the 2 trailing words are skipped.
        assert_eq!(log.writes.len(), 6 + 3);
        assert_eq!(log.writes[6].0.value, 2);
        assert_eq!(log.writes[7].0.value, 0x10);
        assert_eq!(log.writes[8].0.value, 9);
        assert_eq!(rp.encoder().stats().records, 1);
    }
}
