//! The Nexus writer: a whole record framed at once against its writes
//! framed one by one, stop-on-wrap included; how many SRC bits a number
//! of sources needs; a memory buffer that stops on wrap.

use hpmtrace::format::ItcWrite;
use hpmtrace::nexus::write::{NexusWriter, WriterConfig};
use hpmtrace::sink::{ByteSink, MemBuffer, Sink, Stopped, VecBuffer};

mod common;
use common::rng::Rng;

include!("common/writer_model.rs");

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
