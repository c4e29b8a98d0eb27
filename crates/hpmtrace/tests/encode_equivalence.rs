//! The encoder's fast paths (`Encoder` handing whole records to
//! `NexusWriter::put_values`, messages framed at once and reused, sync
//! messages in the middle of a record; `stage::Replay` over staged
//! samples) give the bytes of a plain reference written from the format's
//! rules: the record's ITC writes built field by field with
//! `format::encode_address` / `encode_count` and the count type's rule,
//! each framed on its own by the reference encoder of `tests/common` (an independent
//! framing implementation). Random headers (every count type, 1 to 32
//! counters, recorded widths below, at and above 48 bits), random
//! readings with 0, `u64::MAX`, wraps and anything in between, random
//! addresses and timestamps, framing configurations and sources. The
//! encoder's count of changes too wide to record matches the reference's.

use hpmtrace::encoder::Encoder;
use hpmtrace::format::{
    encode_address, encode_count, CountType, CounterDesc, CounterInfo, Event, Header, ItcWrite,
    RecordType, MAX_COUNTERS, MAX_HEADER_WRITES,
};
use hpmtrace::nexus::write::{NexusWriter, WriterConfig};
use hpmtrace::nexus::NexusConfig;
use hpmtrace::sink::VecBuffer;
use hpmtrace::stage::{sample_words, write_sample, Replay, SAMPLE_HEAD_WORDS, TAG_TRACE_ON};
use proptest::prelude::*;

mod common;
use common::reference_encoder::MessageWriter;

/// One operation: a trace-on (`kind` None) or a record, with its
/// addresses, timestamp and one reading per counter of the header.
#[derive(Clone, Debug)]
struct Op {
    kind: Option<RecordType>,
    addrs: [u64; 2],
    ts: u64,
    readings: Vec<u64>,
}

/// The ITC writes of `ops` by the format's rules, state kept here.
fn reference_writes(h: &Header, ops: &[Op]) -> Vec<(ItcWrite, u64)> {
    let masks: Vec<u64> = h
        .iter()
        .map(|(_, c)| hpmtrace::format::width_mask(c.info.recorded_width()))
        .collect();
    let mut prev = vec![0u64; masks.len()];
    let mut last_addr = 0u64;
    let mut out = Vec::new();
    for op in ops {
        let Some(kind) = op.kind else {
            let mut writes = [ItcWrite::w8(0); MAX_HEADER_WRITES];
            let k = h.to_writes(&mut writes);
            out.extend(writes[..k].iter().map(|&w| (w, op.ts)));
            for (p, (r, m)) in prev.iter_mut().zip(op.readings.iter().zip(&masks)) {
                *p = match h.count_type {
                    CountType::Delta => r & m,
                    CountType::Raw | CountType::DeltaXor => 0,
                };
            }
            last_addr = 0;
            continue;
        };
        out.push((ItcWrite::w8(kind.as_u8()), op.ts));
        for &a in &op.addrs[..kind.address_count()] {
            let v = match h.count_type {
                CountType::DeltaXor => a ^ last_addr,
                CountType::Raw | CountType::Delta => a,
            };
            last_addr = a;
            let w = encode_address(v);
            out.push((ItcWrite::w32(w.low), op.ts));
            if let Some(high) = w.high {
                out.push((ItcWrite::w32(high), op.ts));
            }
        }
        for (i, (&r, &m)) in op.readings.iter().zip(&masks).enumerate() {
            let now = r & m;
            let v = match h.count_type {
                CountType::Raw => now,
                CountType::Delta => hpmtrace::format::delta(now, prev[i], 64) & m,
                CountType::DeltaXor => hpmtrace::format::xor_step(prev[i], now),
            };
            prev[i] = now;
            let w = encode_count(v).expect("below 2^48");
            out.push((ItcWrite::w32(w.low), op.ts));
            if let Some(high) = w.high {
                out.push((ItcWrite::w16(high), op.ts));
            }
        }
    }
    out
}

/// The reference count of changes a record cannot carry: on a counter
/// wider than 48 bits, a reading 2^48 or more (modulo 2^64) past the one
/// of the previous record or trace-on.
fn reference_wide_overflows(h: &Header, ops: &[Op]) -> u64 {
    let wide: Vec<bool> = h.iter().map(|(_, c)| c.info.width > 48).collect();
    let mut prev = vec![0u64; wide.len()];
    let mut n = 0;
    for op in ops {
        for (i, &r) in op.readings.iter().enumerate() {
            if op.kind.is_some() && wide[i] && r.wrapping_sub(prev[i]) >> 48 != 0 {
                n += 1;
            }
            prev[i] = r;
        }
    }
    n
}

/// The reference bytes: every write framed on its own.
fn reference(h: &Header, cfg: WriterConfig, src: u16, ops: &[Op]) -> Vec<u8> {
    let mut mw = MessageWriter::new(NexusConfig {
        src_bits: cfg.src_bits,
        timestamp_bits: cfg.timestamp_bits,
    });
    let mut bytes = Vec::new();
    for (w, ts) in reference_writes(h, ops) {
        mw.data_acquisition(src, w.idtag(cfg.channel).0, w.value, Some(ts), &mut |b| {
            bytes.extend_from_slice(b)
        });
    }
    bytes
}

/// The encoder as the collectors use it, record by record: bytes and
/// wide overflows.
fn encoded(h: &Header, cfg: WriterConfig, src: u16, ops: &[Op]) -> (Vec<u8>, u64) {
    let mut enc = Encoder::new(*h);
    let mut w = NexusWriter::new(cfg, src, VecBuffer::with_capacity(1 << 22));
    for op in ops {
        match op.kind {
            None => enc.trace_on(&mut w, &op.readings, op.ts),
            Some(kind) => enc.record(&mut w, kind, op.addrs, &op.readings, op.ts),
        }
        .expect("room");
    }
    (w.into_inner().data().to_vec(), enc.stats().wide_overflows)
}

/// The same through staged samples (the timestamp counter, if any, taken
/// from the sample's timestamp as the collector stores it).
fn replayed(h: &Header, cfg: WriterConfig, src: u16, ops: &[Op]) -> (Vec<u8>, u64) {
    let ts_pos = hpmtrace::counters::timestamp_position(h);
    let mut rp = Replay::new(*h, ts_pos);
    let words = sample_words(h.iter().count() - ts_pos.map_or(0, |_| 1));
    assert_eq!(rp.sample_words(), words);
    let mut staged = Vec::new();
    for op in ops {
        let values: Vec<u64> = op
            .readings
            .iter()
            .enumerate()
            .filter(|&(i, _)| Some(i) != ts_pos)
            .map(|(_, &r)| r)
            .collect();
        let tag = op.kind.map_or(TAG_TRACE_ON, |k| k.as_u8() as u64);
        let at = staged.len();
        staged.resize(at + words, 0);
        write_sample(
            &mut staged[at..],
            tag,
            op.addrs[0],
            op.addrs[1],
            op.ts,
            &values,
        );
    }
    let mut w = NexusWriter::new(cfg, src, VecBuffer::with_capacity(1 << 22));
    rp.replay(&mut w, &staged).expect("room");
    assert!(SAMPLE_HEAD_WORDS <= words);
    (
        w.into_inner().data().to_vec(),
        rp.encoder().stats().wide_overflows,
    )
}

fn reading() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(u64::MAX),
        0u64..1000,
        (1u64 << 48) - 1000..(1u64 << 48) + 1000,
        u64::MAX - 1000..=u64::MAX,
        any::<u64>(),
    ]
}

fn address() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(u64::MAX),
        0x40_1000u64..0x40_2000,
        0x5555_5555_0000u64..0x5555_5555_1000,
        any::<u64>(),
    ]
}

/// A header with `n` counters in random slots, of random widths; the
/// timestamp counter in its slot (index 1) when `ts` and slot 1 is taken.
fn header() -> impl Strategy<Value = Header> {
    (
        0u8..3,
        proptest::sample::subsequence((0..MAX_COUNTERS).collect::<Vec<_>>(), 1..=MAX_COUNTERS),
        proptest::collection::vec(
            proptest::sample::select(vec![1u8, 12, 32, 40, 47, 48, 49, 56, 64]),
            MAX_COUNTERS,
        ),
        any::<bool>(),
    )
        .prop_map(|(ct, slots, widths, ts)| {
            let mut h = Header::new(CountType::from_u8(ct).expect("count type"));
            for s in slots {
                let event = if s == 1 && ts {
                    Event::General {
                        code: hpmtrace::format::hw::TIMESTAMP,
                    }
                } else {
                    Event::General { code: 2 }
                };
                h.counters[s] = Some(CounterDesc {
                    event,
                    info: CounterInfo {
                        csr: 0,
                        width: widths[s],
                    },
                });
            }
            h
        })
}

fn ops(n: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = (
        0u8..12,
        address(),
        address(),
        prop_oneof![0u64..100, 0u64..1 << 20, any::<u64>()],
        proptest::collection::vec(reading(), n),
    );
    proptest::collection::vec(op, 1..400).prop_map(|v| {
        let mut ts = 0u64;
        v.into_iter()
            .map(|(k, a0, a1, step, readings)| {
                ts = ts.wrapping_add(step);
                Op {
                    // One trace-on in 12, the four record types otherwise.
                    kind: RecordType::from_u8(k % 4).filter(|_| k != 11),
                    addrs: [a0, a1],
                    ts,
                    readings,
                }
            })
            .collect()
    })
}

fn case() -> impl Strategy<Value = (Header, WriterConfig, u16, Vec<Op>)> {
    header().prop_flat_map(|h| {
        let n = h.iter().count();
        (
            Just(h),
            (
                0u8..32,
                0u8..=8,
                proptest::sample::select(vec![8u8, 40, 48, 63]),
            ),
            any::<u16>(),
            ops(n),
        )
            .prop_map(|(h, (channel, src_bits, timestamp_bits), src, ops)| {
                let cfg = WriterConfig {
                    channel,
                    src_bits,
                    timestamp_bits,
                };
                (h, cfg, src & ((1u16 << src_bits) - 1), ops)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn fast_paths_give_the_reference_bytes((h, cfg, src, ops) in case()) {
        // The timestamp counter's reading is the record's timestamp.
        let ts_pos = hpmtrace::counters::timestamp_position(&h);
        let ops: Vec<Op> = ops
            .into_iter()
            .map(|mut op| {
                if let Some(p) = ts_pos {
                    op.readings[p] = op.ts;
                }
                op
            })
            .collect();
        let want = (reference(&h, cfg, src, &ops), reference_wide_overflows(&h, &ops));
        prop_assert_eq!(&encoded(&h, cfg, src, &ops), &want);
        prop_assert_eq!(&replayed(&h, cfg, src, &ops), &want);
    }
}
