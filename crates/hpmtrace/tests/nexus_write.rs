//! The Nexus writer: a whole record framed at once, from its writes or
//! from its values, against its writes framed one by one, stop-on-wrap
//! included; how many SRC bits a number
//! of sources needs; a memory buffer that stops on wrap.

use hpmtrace::format::{ItcWrite, RecordType, RecordValues, MAX_COUNTERS, MAX_RECORD_WRITES};
use hpmtrace::nexus::write::{NexusWriter, WriterConfig};
use hpmtrace::sink::{ByteSink, MemBuffer, Sink, Stopped, VecBuffer};

mod common;
use common::rng::Rng;

/// What a writer whose buffer stops on wrap must hold: every message
/// framed on its own (each write its own call of `put_writes`, at its
/// record's timestamp) into a buffer that never fills, and of those
/// the whole records before the first that does not fit in `cap`.
struct Model {
    w: NexusWriter<VecBuffer>,
    cap: usize,
    kept: Vec<u8>,
    full: bool,
}

impl Model {
    fn record(&mut self, writes: &[ItcWrite], ts: u64) -> Result<(), Stopped> {
        let before = self.w.inner().data().len();
        for w in writes {
            self.w.put_writes(std::slice::from_ref(w), ts).unwrap();
        }
        let bytes = &self.w.inner().data()[before..];
        self.full |= self.kept.len() + bytes.len() > self.cap;
        if self.full {
            return Err(Stopped);
        }
        self.kept.extend_from_slice(bytes);
        Ok(())
    }
}

/// A random framing configuration, a writer of it for one source into
/// a buffer that a third of the time holds fewer than `small` bytes
/// (stop-on-wrap mid-stream), else 1 MiB, and its model.
fn writer_and_model(r: &mut Rng, small: u64) -> (WriterConfig, NexusWriter<VecBuffer>, Model) {
    let cfg = WriterConfig {
        channel: r.below(32) as u8,
        src_bits: r.below(9) as u8,
        timestamp_bits: [40, 48, 64][r.below(3) as usize],
    };
    let src = r.below(1 << cfg.src_bits) as u16;
    let cap = if r.below(3) == 0 {
        r.below(small) as usize
    } else {
        1 << 20
    };
    let model = Model {
        w: NexusWriter::new(cfg, src, VecBuffer::with_capacity(1 << 24)),
        cap,
        kept: Vec::new(),
        full: false,
    };
    (
        cfg,
        NexusWriter::new(cfg, src, VecBuffer::with_capacity(cap)),
        model,
    )
}

/// The timestamp of the next record: mostly a step of up to 2^40, now
/// and then the same or anywhere.
fn next_ts(r: &mut Rng, ts: u64) -> u64 {
    match r.below(20) {
        0 => r.next(),
        1 => ts,
        _ => {
            let bits = r.below(40);
            ts.wrapping_add(r.below(1 << bits))
        }
    }
}

/// `put_writes` (a whole record at once, straight into the buffer,
/// reusing recently framed messages) gives the bytes of framing the
/// writes one by one, and stops on wrap at a record: random records
/// crossing sync periods, every framing configuration, buffers that
/// stop mid-stream, values drawn mostly from a small pool so that
/// framed messages are reused and evicted.
#[test]
fn record_at_once_equals_write_by_write() {
    let mut r = Rng(0x5eed_1234_abcd_0001);
    let (mut stopped, mut fast) = (0, 0);
    for round in 0..300 {
        let (cfg, mut a, mut b) = writer_and_model(&mut r, 6000);
        let pool: Vec<u32> = (0..1 + r.below(300))
            .map(|_| match r.below(4) {
                0 => 0,
                1 => r.below(64) as u32,
                _ => r.next() as u32,
            })
            .collect();
        let mut ts = r.next();
        for rec in 0..1 + r.below(300) {
            let mut writes = Vec::new();
            for _ in 0..1 + r.below(69) {
                let v = if r.below(5) == 0 {
                    r.next() as u32
                } else {
                    pool[r.below(pool.len() as u64) as usize]
                };
                writes.push(match r.below(3) {
                    0 => ItcWrite::w8(v as u8),
                    1 => ItcWrite::w16(v as u16),
                    _ => ItcWrite::w32(v),
                });
            }
            ts = next_ts(&mut r, ts);
            let ra = a.put_writes(&writes, ts);
            assert_eq!(ra, b.record(&writes, ts), "round {round} record {rec}");
            if ra.is_ok() {
                fast += 1;
            }
        }
        let a = a.into_inner();
        assert_eq!(a.data(), b.kept, "round {round}: {cfg:?}");
        if b.full && !a.data().is_empty() {
            stopped += 1;
        }
    }
    assert!(stopped > 10, "stop-on-wrap exercised {stopped} times");
    assert!(fast > 10_000, "records framed at once: {fast}");
}

#[test]
fn src_bits_for_sources() {
    assert_eq!(WriterConfig::src_bits_for(1), 0);
    assert_eq!(WriterConfig::src_bits_for(2), 1);
    assert_eq!(WriterConfig::src_bits_for(3), 2);
    assert_eq!(WriterConfig::src_bits_for(4), 2);
    assert_eq!(WriterConfig::src_bits_for(5), 3);
}

#[test]
fn mem_buffer_stops_on_wrap_and_stays_stopped() {
    let mut raw = [0u8; 5];
    let mut b = MemBuffer::new(&mut raw);
    assert_eq!(b.put_bytes(&[1, 2, 3]), Ok(()));
    assert_eq!(b.put_bytes(&[4, 5, 6]), Err(Stopped));
    // would fit, but the buffer has stopped
    assert_eq!(b.put_bytes(&[7]), Err(Stopped));
    assert_eq!(b.data(), &[1, 2, 3]);
    assert_eq!(b.dropped(), 2);
}

/// `put_values` (address pairs copied from what was framed before,
/// zero tails made of one message) gives the bytes of framing the
/// record's writes one by one, and stops on wrap at a record: every
/// record type, counter values below 2^48 with and without a high
/// word, tails of 0 to `MAX_COUNTERS` counters, marked as zeros or not,
/// values drawn from small pools so that pairs repeat and evict each
/// other, records crossing sync periods, buffers that stop mid-stream.
#[test]
fn record_values_equal_write_by_write() {
    let mut r = Rng(0x5eed_7a11_0000_0002);
    let (mut pairs_repeated, mut records) = (0u64, 0u64);
    let mut zero_tails = 0u64;
    for round in 0..200 {
        let (cfg, mut a, mut b) = writer_and_model(&mut r, 20_000);
        let n = r.below(MAX_COUNTERS as u64 + 1) as usize;
        let tail_from = r.below(n as u64 + 2) as usize;
        let pool = |r: &mut Rng, k: u64| -> Vec<u64> {
            (0..1 + r.below(k))
                .map(|_| match r.below(4) {
                    0 => 0,
                    1 => r.below(64),
                    2 => r.next() & ((1 << 48) - 1),
                    _ => r.next() >> r.below(64),
                })
                .collect()
        };
        let addrs = pool(&mut r, 40);
        let mut tails: Vec<Vec<u64>> = (0..1 + r.below(4))
            .map(|_| {
                (0..n)
                    .map(|_| r.next() & ((1 << 48) - 1) >> r.below(49))
                    .collect()
            })
            .collect();
        // Zeros not marked as such, beside marked ones.
        if r.below(2) == 0 {
            tails.push(vec![0; n]);
        }
        let mut ts = r.next();
        let mut recent = [[u64::MAX; 2]; 64];
        for rec in 0..1 + r.below(400) {
            let kind = RecordType::from_u8(r.below(4) as u8).unwrap();
            let pick = |r: &mut Rng| addrs[r.below(addrs.len() as u64) as usize];
            let pair = [pick(&mut r), pick(&mut r)];
            let mut counts = tails[r.below(tails.len() as u64) as usize].clone();
            for c in counts.iter_mut() {
                if r.below(8) == 0 {
                    *c = r.next() & ((1 << 48) - 1) >> r.below(49);
                }
            }
            ts = next_ts(&mut r, ts);
            // A quarter of the records have a tail the encoder marks as
            // zeros (Delta's unmoved counters), beside unmarked ones.
            let v = RecordValues::new(kind, pair, &counts, tail_from);
            let v = if r.below(4) == 0 {
                zero_tails += 1;
                v.with_zero_tail()
            } else {
                v
            };
            let mut writes = [ItcWrite::w8(0); MAX_RECORD_WRITES];
            let k = v.to_writes(&mut writes);
            assert!(k <= v.max_writes());
            // A pair among the last 64 enter/exit records' is one the
            // writer's table of framed pairs holds, unless evicted.
            if kind.address_count() == 2 {
                pairs_repeated += recent.contains(&pair) as u64;
                recent.rotate_right(1);
                recent[0] = pair;
            }
            let ra = a.put_values(&v, ts);
            let rb = b.record(&writes[..k], ts);
            assert_eq!(ra, rb, "round {round} record {rec}");
            records += 1;
        }
        assert_eq!(a.into_inner().data(), b.kept, "round {round}: {cfg:?}");
    }
    assert!(records > 30_000, "{records} records");
    assert!(zero_tails > 5_000, "{zero_tails} zero tails");
    assert!(
        pairs_repeated > 5_000,
        "{pairs_repeated} records repeated a recent pair"
    );
}
