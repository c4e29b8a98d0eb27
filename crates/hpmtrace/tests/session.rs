//! The safe Rust API on the host: manual records, several threads at once,
//! timer sampling, flush on drop, events the machine cannot count. One test function: the collector is
//! process-wide and one session is active at a time.

use hpmtrace::collect::{Error, Mode, Unavailable};
use hpmtrace::decode::Record;
use hpmtrace::format::{hw, CountType, Event, RecordType};
use hpmtrace::linux::sw;
use hpmtrace::nexus::write::WriterConfig;
use hpmtrace::session::{Session, SessionBuilder};
use std::path::Path;

mod common;
use common::{decode_items, Item};

/// The trace's header count and records.
fn decode(bytes: &[u8], framing: WriterConfig) -> (usize, Vec<Record>) {
    let mut headers = 0;
    let mut records = Vec::new();
    for item in decode_items(bytes, framing) {
        match item {
            Item::Header(_) => headers += 1,
            Item::Record(r) => records.push(r),
        }
    }
    (headers, records)
}

/// A session with task-clock, the timestamp and page faults.
fn three_events() -> SessionBuilder {
    Session::builder()
        .event(Event::LinuxSoftware {
            code: sw::TASK_CLOCK,
        })
        .event(Event::General {
            code: hw::TIMESTAMP,
        })
        .event(Event::LinuxSoftware {
            code: sw::PAGE_FAULTS,
        })
}

/// One call site for many marks (an optimised loop calling `mark`
/// directly may be unrolled into several call sites).
#[inline(never)]
fn mark_here(s: &Session) {
    s.mark();
}

fn manual_flushes_on_drop(dir: &Path) {
    let out = dir.join("manual.rtd");
    let s = three_events()
        .count_type(CountType::DeltaXor)
        .output(&out)
        .start()
        .unwrap();
    assert!(matches!(Session::builder().start(), Err(Error::Busy)));
    let framing = s.writer_config();
    for _ in 0..50 {
        mark_here(&s);
    }
    s.pause();
    s.mark(); // off: not recorded
    s.resume().unwrap(); // a second header
    s.mark();
    assert_eq!(s.stats().records, 51);
    drop(s);
    let (headers, recs) = decode(&std::fs::read(&out).unwrap(), framing);
    assert_eq!(headers, 2);
    assert_eq!(recs.len(), 51);
    assert!(recs
        .iter()
        .all(|r| r.kind == RecordType::Manual && r.addr != 0));
    // The marks come from one call site: one address for the first 50.
    assert!(recs[..50].iter().all(|r| r.addr == recs[0].addr));
    // DeltaXOR readings are the counters themselves: task-clock grows.
    // (task-clock is in slot 3: software events take programmable slots)
    assert!(recs[49].counter(3).unwrap().reading >= recs[0].counter(3).unwrap().reading);
    assert!(recs[49].counter(1).unwrap().reading > recs[0].counter(1).unwrap().reading);
}

fn threads_get_their_own_sources() {
    let s = three_events().max_threads(4).start().unwrap();
    let framing = s.writer_config();
    assert_eq!(framing.src_bits, 2);
    std::thread::scope(|sc| {
        for t in 0..3u64 {
            let s = &s;
            sc.spawn(move || {
                for i in 0..200u64 {
                    s.record(RecordType::FuncEnter, 0x1000 * (t + 1) + 2 * i, 0x10);
                    s.record(RecordType::FuncExit, 0x1000 * (t + 1) + 2 * i, 0x10);
                }
            });
        }
    });
    // A fifth thread finds no free source and is not traced.
    std::thread::scope(|sc| {
        sc.spawn(|| {
            std::thread::scope(|sc2| {
                sc2.spawn(|| s.mark());
            });
        });
    });
    let st = s.stats();
    assert_eq!(st.streams, 4, "main thread + 3 workers");
    let (headers, recs) = decode(&s.bytes(), framing);
    s.finish().unwrap();
    assert_eq!(headers, 4, "one header per source");
    let mut per_src = [0usize; 4];
    for r in &recs {
        per_src[r.src as usize] += 1;
        let t = r.addr / 0x1000;
        // every record of a source comes from one thread
        assert_eq!(
            recs.iter().find(|x| x.src == r.src).unwrap().addr / 0x1000,
            t
        );
    }
    assert_eq!(per_src[0], 0, "main thread recorded nothing");
    assert_eq!(&per_src[1..], &[400, 400, 400]);
    assert!(st.untraced_threads >= 1);
}

fn timer_samples_the_running_thread() {
    let s = three_events()
        .mode(Mode::Timer { interval_us: 1000 })
        .start()
        .unwrap();
    let framing = s.writer_config();
    // Busy for ~60 ms of wall time (no clock assertion: only counts).
    let t0 = std::time::Instant::now();
    let mut x = 0u64;
    while t0.elapsed().as_millis() < 60 {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
    }
    s.pause();
    let (_, recs) = decode(&s.bytes(), framing);
    s.finish().unwrap();
    assert!(recs.len() >= 5, "only {} samples", recs.len());
    assert!(recs
        .iter()
        .all(|r| r.kind == RecordType::Isr && r.addr != 0));
}

/// An event no machine counts (a general code perf has no event for), next
/// to a software event and the timestamp: each policy of
/// `Unavailable`, the header it gives.
fn unavailable_events_fail_are_left_out_or_stood_in_for() {
    let none = Event::General { code: 0x7f };
    let sw = Event::LinuxSoftware {
        code: sw::CONTEXT_SWITCHES,
    };
    let start = |u| {
        Session::builder()
            .event(none)
            .event(Event::General {
                code: hw::TIMESTAMP,
            })
            .event(sw)
            .unavailable(u)
            .start()
    };
    match start(Unavailable::Fail) {
        Err(Error::Open(e)) => assert_eq!(e.event, none),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("an event nothing counts was accepted"),
    }
    // Slots: the unknown event 3, the timestamp 1, the software event 4.
    let s = start(Unavailable::LeaveOut).unwrap();
    let h = hpmtrace::collect::header().unwrap();
    s.finish().unwrap();
    assert_eq!(h.mask(), 1 << 1 | 1 << 4);
    assert_eq!(h.counters[4].unwrap().event, sw);
    let s = start(Unavailable::SoftwareStandIn).unwrap();
    let h = hpmtrace::collect::header().unwrap();
    s.finish().unwrap();
    assert_eq!(h.mask(), 1 << 1 | 1 << 3 | 1 << 4);
    assert!(matches!(
        h.counters[3].unwrap().event,
        Event::LinuxSoftware { .. }
    ));
}

#[test]
fn session_api() {
    let dir = std::env::temp_dir().join(format!("hpmtrace-session-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    manual_flushes_on_drop(&dir);
    threads_get_their_own_sources();
    timer_samples_the_running_thread();
    unavailable_events_fail_are_left_out_or_stood_in_for();
}
