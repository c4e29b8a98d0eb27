//! Decoder robustness on traces from the crate's encoder: corrupted bytes,
//! instruction-trace messages mixed in, all count types in one buffer.

use hpmtrace::decode::{decode_stream, DecodeConfig, Output, Record};
use hpmtrace::encoder::Encoder;
use hpmtrace::format::{CountType, CounterDesc, CounterInfo, Event, Header, RecordType};
use hpmtrace::nexus::read::MessageReader;
use hpmtrace::nexus::write::{NexusWriter, WriterConfig, SYNC_PERIOD};
use hpmtrace::nexus::NexusConfig;
use hpmtrace::sink::VecBuffer;

fn header(ct: CountType) -> Header {
    let mut h = Header::new(ct);
    h.counters[0] = Some(CounterDesc {
        event: Event::General { code: 1 },
        info: CounterInfo {
            csr: 0xc00,
            width: 64,
        },
    });
    h.counters[4] = Some(CounterDesc {
        event: Event::Raw { event_data: 0x42 },
        info: CounterInfo {
            csr: 0xc04,
            width: 40,
        },
    });
    h
}

type Expected = Vec<(u64, [u64; 2])>;

/// `n` manual records per count type, each type after its own header.
fn trace(types: &[CountType], n: u64) -> (Vec<u8>, Expected) {
    let mut w = NexusWriter::new(
        WriterConfig::default(),
        0,
        VecBuffer::with_capacity(1 << 22),
    );
    let mut expect = Vec::new();
    let mut ts = 10;
    let mut r = [0u64; 2];
    for &ct in types {
        let mut enc = Encoder::new(header(ct));
        enc.trace_on(&mut w, &r, ts).unwrap();
        for i in 0..n {
            ts += 3;
            r[0] += 1000 + 17 * i;
            r[1] = (r[1] + 0x1_2345_6789) & ((1 << 40) - 1);
            let addr = 0x8000_0000 + 0x40 * (i % 37) + if i % 5 == 0 { 0x7_0000_0000 } else { 0 };
            enc.record(&mut w, RecordType::Manual, [addr, 0], &r, ts)
                .unwrap();
            expect.push((addr, r));
        }
    }
    (w.into_inner().data().to_vec(), expect)
}

fn decode(bytes: &[u8]) -> (Vec<Record>, u64) {
    let mut recs = Vec::new();
    let stats = decode_stream(
        bytes,
        DecodeConfig::default(),
        &mut |o| {
            if let Output::Record(r) = o {
                recs.push(r.clone());
            }
        },
        &mut |_| {},
    );
    (recs, stats.errors)
}

/// `n` copies of a Raw trace of trace(), each with one bit flipped at a
/// pseudo-random offset in its first half (xorshift from `seed`), with
/// the offset. The header is spared: a damaged header loses everything up
/// to the next header (the counter layout is unknown).
fn bit_flips(bytes: &[u8], seed: u64, n: usize) -> impl Iterator<Item = (usize, Vec<u8>)> + '_ {
    let header_len = trace(&[CountType::Raw], 0).0.len();
    let mut x = seed;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = header_len + (x as usize) % (bytes.len() / 2);
        let mut bad = bytes.to_vec();
        bad[at] ^= 1 << ((x >> 32) % 8);
        (at, bad)
    })
}

fn got(r: &Record) -> (u64, [u64; 2]) {
    (r.addr, [r.counters[0].reading, r.counters[1].reading])
}

#[test]
fn all_count_types_in_one_buffer_decode_exactly() {
    let types = [
        CountType::Raw,
        CountType::DeltaXor,
        CountType::Delta,
        CountType::Raw,
    ];
    let (bytes, expect) = trace(&types, 50);
    let (recs, errors) = decode(&bytes);
    assert_eq!(errors, 0);
    assert_eq!(recs.len(), expect.len());
    for (i, (r, e)) in recs.iter().zip(&expect).enumerate() {
        let g = got(r);
        if r.count_type == CountType::Delta {
            // Delta readings are sums since trace-on; the deltas match.
            assert_eq!(g.0, e.0, "record {i}");
            if i % 50 != 0 {
                let prev = expect[i - 1].1;
                assert_eq!(r.counters[0].delta, Some(e.1[0] - prev[0]), "record {i}");
            }
        } else {
            assert_eq!(g, *e, "record {i}");
        }
    }
}

#[test]
fn instruction_trace_messages_in_between_are_skipped() {
    let (bytes, expect) = trace(&[CountType::DeltaXor], 40);
    let offsets: Vec<usize> = MessageReader::new(&bytes[..], NexusConfig::default())
        .map(|m| m.unwrap().offset as usize)
        .collect();
    // An indirect-branch message (TCODE 4: BTYPE, ICNT, UADDR, TSTAMP)
    // after every third message.
    let btm = [4 << 2, 0x05, 0x0c, 0x10, 0x41, 0x4b];
    let mut mixed = Vec::new();
    for (k, w) in offsets.windows(2).enumerate() {
        mixed.extend_from_slice(&bytes[w[0]..w[1]]);
        if k % 3 == 0 {
            mixed.extend_from_slice(&btm);
        }
    }
    mixed.extend_from_slice(&bytes[*offsets.last().unwrap()..]);
    let (recs, errors) = decode(&mixed);
    assert_eq!(errors, 0);
    assert_eq!(recs.iter().map(got).collect::<Vec<_>>(), expect);
}

#[test]
fn corruption_anywhere_loses_little_and_decoding_recovers() {
    let (bytes, expect) = trace(&[CountType::Raw], 300);
    for (at, bad) in bit_flips(&bytes, 0x1234_5678_9abc_def1, 200) {
        let (recs, _) = decode(&bad);
        // One flipped bit ruins at most the record it is in and the one
        // after (a framing error can swallow the start of the next).
        assert!(
            recs.len() + 2 >= expect.len(),
            "flip at {at}: {} records",
            recs.len()
        );
        // Everything well after the corruption decodes exactly.
        let tail = 100;
        let g: Vec<_> = recs[recs.len() - tail..].iter().map(got).collect();
        assert_eq!(g, expect[expect.len() - tail..], "flip at {at}");
    }
}

#[test]
fn times_are_right_again_at_the_next_full_timestamp() {
    // trace() gives record i the time 10 + 3 * (i + 1) and the reading
    // r[0] = sum of (1000 + 17 k), k <= i: strictly increasing, so the
    // reading names the record.
    let (bytes, expect) = trace(&[CountType::Raw], 600);
    // (None for a reading a flip changed: not this test's concern.)
    let time_of = |reading: u64| {
        let i = expect.iter().position(|e| e.1[0] == reading)?;
        Some(10 + 3 * (i as u64 + 1))
    };
    let (clean, errors) = decode(&bytes);
    assert_eq!(errors, 0);
    for r in &clean {
        assert_eq!(r.timestamp, time_of(r.counters[0].reading));
    }
    let messages = MessageReader::new(&bytes[..], NexusConfig::default()).count();
    let per_record = messages / expect.len();
    // Records a flip can mistime: up to the next full timestamp, which the
    // writer resends every SYNC_PERIOD messages (a flipped TIMESTAMP bit
    // is a valid message with a wrong XOR: no decoder can tell).
    let reach = SYNC_PERIOD as usize / per_record + 2;
    let mut absent = 0;
    for (at, bad) in bit_flips(&bytes, 0x9e37_79b9_7f4a_7c15, 300) {
        let (recs, _) = decode(&bad);
        let mut wrong = 0;
        for r in &recs {
            match r.timestamp {
                Some(t) if Some(t) != time_of(r.counters[0].reading) => wrong += 1,
                Some(_) => {}
                None => absent += 1,
            }
        }
        assert!(
            wrong <= reach,
            "flip at {at}: {wrong} records mistimed (reach {reach})"
        );
        // The second half of the trace is past the next full timestamp.
        for r in &recs[recs.len() - expect.len() / 2 + reach..] {
            assert_eq!(r.timestamp, time_of(r.counters[0].reading), "flip at {at}");
        }
    }
    // Some flips break framing: those records get no time, not a wrong one.
    assert!(absent > 0);
}
