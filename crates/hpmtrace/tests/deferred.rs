//! The collector stages raw samples and encodes them later: full staging
//! chunks on the encoder thread, or on the recording thread when every
//! chunk is waiting, the rest at pause and at read-out. Its trace must be
//! the bytes that encoding every record at once gives, whoever encoded
//! which chunk: the test decodes the collector's trace and encodes the
//! decoded records again, immediately, with the encoder and Nexus writer,
//! and compares the bytes. That comparison cannot see a value recorded
//! wrong (it is re-encoded as decoded), so the decoded records are also
//! checked against what the threads did. Three threads, a staging buffer
//! of 4096 bytes for a trace of 12001 records (a chunk holds 21 of them),
//! with and without the encoder thread. One test function: the collector
//! is process-wide.

use hpmtrace::collect::{self, Mode};
use hpmtrace::encoder::Encoder;
use hpmtrace::format::{hw, width_mask, CountType, Event, RecordType, TIMESTAMP_COUNTER_INDEX};
use hpmtrace::linux::sw;
use hpmtrace::nexus::write::{NexusWriter, WriterConfig};
use hpmtrace::session::{Session, SessionBuilder};
use hpmtrace::sink::VecBuffer;

mod common;
use common::{decode_items as decode, Item};

/// Encode the decoded headers and records again, one record at a time,
/// every source into its own writer; sources concatenated in order.
/// Delta readings decode as sums since the header, so the header is seeded
/// with zeros: the recorded differences come out the same.
fn encode_at_once(items: &[Item], framing: WriterConfig, sources: u16) -> Vec<u8> {
    let mut out = Vec::new();
    for src in 0..sources {
        let mut w = NexusWriter::new(framing, src, VecBuffer::with_capacity(1 << 26));
        let mut enc: Option<Encoder> = None;
        for it in items {
            match it {
                Item::Header(h) if h.src == src => {
                    let e = enc.get_or_insert_with(|| Encoder::new(h.header));
                    assert_eq!(e.header(), &h.header, "one configuration per session");
                    let zeros = vec![0u64; e.counters()];
                    e.trace_on(&mut w, &zeros, h.timestamp.expect("header time"))
                        .unwrap();
                }
                Item::Record(r) if r.src == src => {
                    let e = enc.as_mut().expect("record after a header");
                    let readings: Vec<u64> = r.counters.iter().map(|c| c.reading).collect();
                    e.record(
                        &mut w,
                        r.kind,
                        [r.addr, r.addr2.unwrap_or(0)],
                        &readings,
                        r.timestamp.expect("record time"),
                    )
                    .unwrap();
                }
                _ => {}
            }
        }
        out.extend_from_slice(w.into_inner().data());
    }
    out
}

/// Thread `t`'s `i`th function: addresses below and above 4 GiB (one and
/// two words).
fn func_addr(t: u64, i: u64) -> u64 {
    let base = if i.is_multiple_of(7) {
        0x7f12_3456_0000
    } else {
        0x40_0000
    };
    base + 0x100 * t + 2 * i
}

/// The records `work(t)` makes: (kind, function, call site).
fn calls(t: u64) -> Vec<(RecordType, u64, Option<u64>)> {
    let mut v = Vec::new();
    for i in 0..1500u64 {
        let f = func_addr(t, i);
        v.push((RecordType::FuncEnter, f, Some(0x40_1000)));
        v.push((RecordType::FuncExit, f, Some(0x40_1000)));
    }
    v
}

/// What the collector must have recorded, whatever the encoder does (the
/// byte comparison re-encodes the decoded values, so it cannot see a
/// wrong value): each source's records are one thread's hooks in order,
/// and the timestamp counter is the record's trace time (Raw, DeltaXOR) or
/// the time since the source's header (Delta).
fn check_values(items: &[Item], ct: CountType) {
    let mut got: Vec<Vec<(RecordType, u64, Option<u64>)>> = vec![Vec::new(); 3];
    let mut since = [0u64; 3];
    for it in items {
        match it {
            Item::Header(h) => since[h.src as usize] = h.timestamp.unwrap(),
            Item::Record(r) => {
                let t = r.timestamp.unwrap();
                let want = match ct {
                    CountType::Delta => t.wrapping_sub(since[r.src as usize]) & width_mask(40),
                    _ => t,
                };
                let clock = r.counter(TIMESTAMP_COUNTER_INDEX).unwrap().reading;
                assert_eq!(clock, want, "{ct:?}: {r:?}");
                got[r.src as usize].push((r.kind, r.addr, r.addr2));
            }
        }
    }
    // The main thread (source 0): work(0), a mark, work(3).
    let mark = got[0].remove(3000);
    assert_eq!(mark.0, RecordType::Manual, "{ct:?}");
    assert!(got[0] == [calls(0), calls(3)].concat(), "{ct:?}: source 0");
    // The two workers, in the order they first recorded.
    got[1..].sort_by_key(|v| v.first().map(|r| r.1));
    assert!(got[1..] == [calls(1), calls(2)], "{ct:?}: sources 1 and 2");
}

/// Function hooks with the trace clock and context switches, a staging
/// buffer of 4096 bytes (4 chunks of 128 words) and room for the whole
/// trace.
fn small_stage(count_type: CountType, encoder_thread: bool) -> SessionBuilder {
    Session::builder()
        .count_type(count_type)
        .event(Event::General {
            code: hw::TIMESTAMP,
        })
        .event(Event::LinuxSoftware {
            code: sw::CONTEXT_SWITCHES,
        })
        .mode(Mode::FuncEntryExit)
        .stage_bytes(4096)
        .encoder_thread(encoder_thread)
        .buffer_bytes(8 << 20)
}

fn run(count_type: CountType, encoder_thread: bool) {
    // A sample is 6 words: a thread hands over a chunk every 21 records.
    let s = small_stage(count_type, encoder_thread)
        .event(Event::LinuxSoftware {
            code: sw::TASK_CLOCK,
        })
        .max_threads(3)
        .start()
        .unwrap();
    let framing = s.writer_config();
    let work = |t: u64| {
        for i in 0..1500u64 {
            let f = func_addr(t, i);
            collect::hook(RecordType::FuncEnter, f as usize, 0x40_1000);
            if i % 300 == 0 {
                std::thread::yield_now();
            }
            collect::hook(RecordType::FuncExit, f as usize, 0x40_1000);
        }
    };
    work(0);
    s.mark();
    std::thread::scope(|sc| {
        let a = sc.spawn(|| work(1));
        let b = sc.spawn(|| work(2));
        // With the encoder thread, also read the workers' staged samples
        // while they record (the reader encodes under each stream's lock,
        // the encoder thread and the owners too). Without it, only the
        // owners encode, when every chunk is waiting.
        while encoder_thread && !(a.is_finished() && b.is_finished()) {
            let _ = s.stats();
            std::thread::yield_now();
        }
    });
    // A second header mid-trace on the main thread.
    s.pause();
    collect::hook(RecordType::FuncEnter, 0x1234, 0x10); // off: not recorded
    s.resume().unwrap();
    work(3);
    let stats = s.stats();
    let bytes = s.bytes();
    s.finish().unwrap();

    let items = decode(&bytes, framing);
    check_values(&items, count_type);
    let records = items
        .iter()
        .filter(|i| matches!(i, Item::Record(_)))
        .count();
    assert_eq!(records as u64, stats.records, "{count_type:?}");
    assert_eq!(records, 4 * 3000 + 1, "{count_type:?}");
    assert_eq!(stats.streams, 3);
    assert_eq!(stats.dropped_messages, 0);
    if !encoder_thread {
        // 12001 records in chunks of 21, and nobody else encodes while
        // the threads record: all but the last few chunks of each thread.
        assert!(stats.inline_chunks > 100, "{}", stats.inline_chunks);
    }

    assert_eq!(stats.bytes, bytes.len() as u64);
    let again = encode_at_once(&items, framing, 3);
    assert_eq!(again.len(), bytes.len(), "{count_type:?}: lengths differ");
    assert!(again == bytes, "{count_type:?}: bytes differ");
}

/// Counters that stay put between most records and move at known ones:
/// one thread sleeps before every 50th call (a context switch), so the
/// context-switch counter moves there and nowhere else, mostly. The
/// decoded readings must move at those records (the Nexus writer copies
/// an unchanged tail of counters whole, so a stale copy would record 0)
/// and the trace must be the bytes encoded at once.
fn run_counter_stays_put(count_type: CountType) {
    let s = small_stage(count_type, true).start().unwrap();
    let framing = s.writer_config();
    let calls = 3000u64;
    for i in 0..calls {
        if i % 50 == 49 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let f = 0x40_0000 + 2 * (i % 64);
        collect::hook(RecordType::FuncEnter, f as usize, 0x40_1000);
        collect::hook(RecordType::FuncExit, f as usize, 0x40_1000);
    }
    let bytes = s.bytes();
    s.finish().unwrap();
    let items = decode(&bytes, framing);
    let switches: Vec<u64> = items
        .iter()
        .filter_map(|i| match i {
            Item::Record(r) => Some(
                r.counters
                    .iter()
                    .find(|c| c.index != TIMESTAMP_COUNTER_INDEX)
                    .unwrap()
                    .reading,
            ),
            _ => None,
        })
        .collect();
    assert_eq!(switches.len() as u64, 2 * calls, "{count_type:?}");
    let (mut still, mut moved_after_sleep) = (0, 0);
    for (k, w) in switches.windows(2).enumerate() {
        // Record j is call j / 2's enter (j even) or exit.
        let j = k + 1;
        let enter_after_sleep = j % 2 == 0 && (j / 2) as u64 % 50 == 49;
        // Delta decodes as the sum since the header, the others as the
        // readings: never smaller.
        assert!(
            w[1] >= w[0],
            "{count_type:?}: record {j}: {} after {}",
            w[1],
            w[0]
        );
        if enter_after_sleep {
            assert!(
                w[1] > w[0],
                "{count_type:?}: no context switch recorded after a sleep at record {j}"
            );
            moved_after_sleep += 1;
        } else if w[1] == w[0] {
            still += 1;
        }
    }
    assert_eq!(moved_after_sleep, calls / 50, "{count_type:?}");
    // Most records see the counter where the previous one left it: their
    // tails are copied.
    assert!(
        still > calls,
        "{count_type:?}: {still} records without a switch"
    );
    let again = encode_at_once(&items, framing, 1);
    assert!(again == bytes, "{count_type:?}: bytes differ");
}

#[test]
fn staged_trace_equals_trace_encoded_at_once() {
    for ct in [CountType::Delta, CountType::DeltaXor, CountType::Raw] {
        run_counter_stays_put(ct);
    }
    for ct in [CountType::Delta, CountType::DeltaXor, CountType::Raw] {
        run(ct, true);
        run(ct, false);
    }
}
