//! Encoder -> Nexus writer -> decoder round trip over random record
//! streams, all three count types, counters that wrap, several sources.

use hpmtrace::decode::{decode_stream, DecodeConfig, Output};
use hpmtrace::encoder::Encoder;
use hpmtrace::format::{
    width_mask, CountType, CounterDesc, CounterInfo, Event, Header, RecordType,
};
use hpmtrace::nexus::write::{NexusWriter, WriterConfig};
use hpmtrace::nexus::NexusConfig;
use hpmtrace::sink::VecBuffer;

mod common;
use common::rng::Rng;

struct Expected {
    kind: RecordType,
    addr: u64,
    addr2: Option<u64>,
    ts: u64,
    /// Readings modulo the recorded width, record order.
    readings: Vec<u64>,
    /// Increase since the previous record / trace-on, modulo width.
    deltas: Vec<u64>,
}

fn header(ct: CountType) -> Header {
    let mut h = Header::new(ct);
    let mut put = |slot: usize, event, csr, width| {
        h.counters[slot] = Some(CounterDesc {
            event,
            info: CounterInfo { csr, width },
        });
    };
    put(0, Event::General { code: 1 }, 0xc00, 64); // recorded as 48 bits
    put(1, Event::General { code: 0x80 }, 0, 40); // timestamp
    put(3, Event::Raw { event_data: 7 }, 0xc03, 32); // wraps often
    put(
        9,
        Event::Cache {
            cache_id: 1,
            op_id: 0,
            result_id: 1,
        },
        0xc09,
        40,
    );
    h
}

/// One source's random stream; returns its bytes and expectations.
fn stream(
    rng: &mut Rng,
    ct: CountType,
    cfg: WriterConfig,
    src: u16,
    records: usize,
) -> (Vec<u8>, Vec<Expected>) {
    let h = header(ct);
    let widths: Vec<u8> = h.iter().map(|(_, c)| c.info.recorded_width()).collect();
    let mut enc = Encoder::new(h);
    let mut w = NexusWriter::new(cfg, src, VecBuffer::with_capacity(1 << 22));
    // counters start anywhere; the 32-bit one close to its wrap
    let mut now: Vec<u64> = vec![
        rng.next() >> 20,
        0,
        0xffff_ff00,
        rng.next() & width_mask(40),
    ];
    let mut ts = rng.next() & width_mask(40);
    now[1] = ts;
    enc.trace_on(&mut w, &now, ts).unwrap();
    let mut prev: Vec<u64> = now
        .iter()
        .zip(&widths)
        .map(|(v, &wd)| v & width_mask(wd))
        .collect();
    let mut exp = Vec::new();
    for _ in 0..records {
        // Increments: mostly small, sometimes past 32 bits (16-bit high
        // part), never 2^48 or more (not representable); some counters
        // stay, and in a quarter of the records all after the timestamp
        // do (Delta's record of zeros there).
        let tail_stays = rng.below(4) == 0;
        for (i, v) in now.iter_mut().enumerate() {
            let inc = match rng.below(10) {
                _ if tail_stays && i > 1 => 0,
                9 if rng.below(2) == 0 => 0,
                0 => rng.below(1 << 40),
                1..=3 => rng.below(1 << 33),
                _ => rng.below(5000),
            };
            if i != 1 {
                *v = v.wrapping_add(inc);
            }
        }
        ts += rng.below(100_000);
        now[1] = ts;
        let kind = RecordType::from_u8(rng.below(4) as u8).unwrap();
        let mut addr = || {
            if rng.below(2) == 0 {
                rng.next() & 0xffff_fffe
            } else {
                rng.next() & 0x3f_ffff_fffe
            }
        };
        let a0 = addr();
        let a1 = addr();
        enc.record(&mut w, kind, [a0, a1], &now, ts).unwrap();
        let readings: Vec<u64> = now
            .iter()
            .zip(&widths)
            .map(|(v, &wd)| v & width_mask(wd))
            .collect();
        let deltas = readings
            .iter()
            .zip(&prev)
            .zip(&widths)
            .map(|((n, p), &wd)| n.wrapping_sub(*p) & width_mask(wd))
            .collect();
        prev = readings.clone();
        exp.push(Expected {
            kind,
            addr: a0,
            addr2: (kind.address_count() == 2).then_some(a1),
            ts: ts & width_mask(40),
            readings,
            deltas,
        });
    }
    assert_eq!(enc.stats().wide_overflows, 0);
    (w.into_inner().data().to_vec(), exp)
}

fn check(ct: CountType, sources: u16, seed: u64) {
    let mut rng = Rng(seed);
    let cfg = WriterConfig {
        src_bits: WriterConfig::src_bits_for(sources as u32),
        ..WriterConfig::default()
    };
    let mut bytes = Vec::new();
    let mut expected = Vec::new();
    for src in 0..sources {
        let (b, e) = stream(&mut rng, ct, cfg, src, 300);
        bytes.extend(b);
        expected.push(e);
    }
    let dcfg = DecodeConfig::from(cfg);
    let mut got: Vec<Vec<hpmtrace::decode::Record>> = vec![Vec::new(); sources as usize];
    let mut headers = 0;
    let mut errors = Vec::new();
    decode_stream(
        &bytes[..],
        dcfg,
        &mut |o| match o {
            Output::Header(h) => {
                assert_eq!(h.header, header(ct));
                headers += 1;
            }
            Output::Record(r) => got[r.src as usize].push(r.clone()),
            Output::Error(e) => errors.push(format!("{e}")),
        },
        &mut |_| {},
    );
    assert!(errors.is_empty(), "{ct:?}: {errors:?}");
    assert_eq!(headers, sources as usize);
    for src in 0..sources as usize {
        assert_eq!(got[src].len(), expected[src].len(), "{ct:?} src {src}");
        for (k, (g, e)) in got[src].iter().zip(&expected[src]).enumerate() {
            let at = format!("{ct:?} src {src} record {k}");
            assert_eq!(g.kind, e.kind, "{at}");
            assert_eq!(g.addr, e.addr, "{at}");
            assert_eq!(g.addr2, e.addr2, "{at}");
            assert_eq!(g.timestamp, Some(e.ts), "{at}: Nexus timestamp");
            assert_eq!(g.counters.len(), e.readings.len(), "{at}");
            for (i, c) in g.counters.iter().enumerate() {
                match ct {
                    CountType::Raw => assert_eq!(c.recorded, e.readings[i], "{at} counter {i}"),
                    CountType::Delta => assert_eq!(c.recorded, e.deltas[i], "{at} counter {i}"),
                    CountType::DeltaXor => assert_eq!(c.reading, e.readings[i], "{at} counter {i}"),
                }
            }
            // the timestamp counter agrees with the Nexus timestamps
            if ct != CountType::Delta {
                assert_eq!(g.counters[1].reading, e.ts, "{at}");
            }
        }
    }
}

#[test]
fn raw_round_trip() {
    check(CountType::Raw, 1, 1);
}

#[test]
fn delta_round_trip() {
    check(CountType::Delta, 1, 2);
}

#[test]
fn deltaxor_round_trip() {
    check(CountType::DeltaXor, 1, 3);
}

#[test]
fn three_sources_each_count_type() {
    for (i, ct) in [CountType::Raw, CountType::Delta, CountType::DeltaXor]
        .into_iter()
        .enumerate()
    {
        check(ct, 3, 100 + i as u64);
    }
}

#[test]
fn writer_bytes_equal_the_reference_encoders() {
    use common::reference_encoder::MessageWriter;
    use hpmtrace::format::ItcWrite;
    use hpmtrace::sink::Sink;
    let cfg = WriterConfig {
        src_bits: 3,
        ..WriterConfig::default()
    };
    let mut mine = NexusWriter::new(cfg, 5, VecBuffer::with_capacity(1 << 16));
    let mut theirs = MessageWriter::new(NexusConfig {
        src_bits: 3,
        timestamp_bits: 40,
    });
    let mut out = Vec::new();
    let mut rng = Rng(9);
    let mut ts = 12345u64;
    for _ in 0..500 {
        ts += rng.below(1 << 20);
        let w = match rng.below(3) {
            0 => ItcWrite::w32(rng.next() as u32),
            1 => ItcWrite::w16(rng.next() as u16),
            _ => ItcWrite::w8(rng.next() as u8),
        };
        mine.put_writes(&[w], ts).unwrap();
        theirs.data_acquisition(5, w.idtag(6).0, w.value, Some(ts), &mut |b: &[u8]| {
            out.extend_from_slice(b)
        });
    }
    assert_eq!(mine.inner().data(), &out[..]);
}

/// The sync rule, read back with the Nexus reader (the reference encoder
/// may share a misreading of it): a full timestamp before the
/// first Data Acquisition message and after every `SYNC_PERIOD` of them,
/// one write per record; each message's TIMESTAMP is the previous message's
/// time XOR its own, across a wrap of the 40-bit counter.
#[test]
fn full_timestamp_first_and_after_every_sync_period_messages() {
    use hpmtrace::format::ItcWrite;
    use hpmtrace::nexus::read::{Message, MessageReader};
    use hpmtrace::nexus::write::SYNC_PERIOD;
    use hpmtrace::sink::Sink;
    let mut w = NexusWriter::new(
        WriterConfig::default(),
        0,
        VecBuffer::with_capacity(1 << 16),
    );
    let n = 3 * SYNC_PERIOD as usize + 10;
    let time = |i: usize| (0xff_ffff_f000 + 977 * i as u64) & width_mask(40);
    for i in 0..n {
        w.put_writes(&[ItcWrite::w8(i as u8)], time(i)).unwrap();
    }
    let (mut prev, mut da, mut syncs) = (None, 0, Vec::new());
    for m in MessageReader::new(w.inner().data(), NexusConfig::default()) {
        match m.unwrap().message {
            Message::Ict(s) => {
                assert!(s.sync, "message {da}");
                assert_eq!(s.timestamp, Some(time(da)), "sync before {da}");
                syncs.push(da);
                prev = s.timestamp;
            }
            Message::DataAcquisition(d) => {
                assert_eq!(d.data, da as u8 as u32);
                assert_eq!(d.timestamp, Some(prev.unwrap() ^ time(da)), "{da}");
                prev = Some(time(da));
                da += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(da, n);
    let every: Vec<usize> = (0..n).step_by(SYNC_PERIOD as usize).collect();
    assert_eq!(syncs, every);
}
