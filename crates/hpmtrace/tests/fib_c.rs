//! SiFive's Fibonacci example (tests/c/fib.c, verbatim from the SiFive
//! README) built with `gcc -finstrument-functions` against the C API
//! (include/ + libhpmtrace.a), run on the host with software stand-ins
//! (`HPMTRACE_SW_FALLBACK=1`) and without (events the host cannot count
//! left out), and its trace.rtd decoded.
//!
//! `cargo xtask test` runs the same program against the headers and
//! library installed by `cargo xtask cabi`.

use hpmtrace::decode::{decode_stream, DecodeConfig, Output, Record};
use hpmtrace::format::{CountType, Event, RecordType};
use hpmtrace::nexus::NexusConfig;
use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The staticlib cargo built for this test run: the newest
/// target/<profile>/deps/libhpmtrace-*.a (cargo only copies it to
/// target/<profile>/ on `cargo build`, not for tests).
fn staticlib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let newest = std::fs::read_dir(deps)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("libhpmtrace-") && n.ends_with(".a")
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok());
    newest.expect("libhpmtrace staticlib not built").path()
}

fn build(dir: &Path) -> PathBuf {
    let out = dir.join("fib");
    let st = Command::new("gcc")
        .args(["-O2", "-finstrument-functions", "-I"])
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join("tests/c/fib.c"))
        .arg(staticlib())
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&out)
        .status()
        .expect("gcc must be installed (cargo xtask setup)");
    assert!(st.success(), "building fib.c failed");
    out
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hpmtrace-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Build fib.c in a fresh directory `name` and run it there, with
/// `HPMTRACE_SW_FALLBACK=1` or without it, and `HPMTRACE_BUFFER_BYTES`
/// set to `buffer_bytes` or unset: the directory and what the run gave.
fn run_fib(
    name: &str,
    sw_fallback: bool,
    buffer_bytes: Option<&str>,
) -> (PathBuf, std::process::Output) {
    let dir = tmpdir(name);
    let mut cmd = Command::new(build(&dir));
    cmd.current_dir(&dir);
    match sw_fallback {
        true => cmd.env("HPMTRACE_SW_FALLBACK", "1"),
        false => cmd.env_remove("HPMTRACE_SW_FALLBACK"),
    };
    match buffer_bytes {
        Some(b) => cmd.env("HPMTRACE_BUFFER_BYTES", b),
        None => cmd.env_remove("HPMTRACE_BUFFER_BYTES"),
    };
    (dir, cmd.output().unwrap())
}

struct Decoded {
    headers: Vec<hpmtrace::decode::HeaderInfo>,
    records: Vec<Record>,
    errors: Vec<String>,
}

impl Decoded {
    /// How many records are of `kind`.
    fn count(&self, kind: RecordType) -> usize {
        self.records.iter().filter(|r| r.kind == kind).count()
    }
}

fn decode(path: &Path) -> Decoded {
    let bytes = std::fs::read(path).unwrap();
    // perfInit(2, 1) in the example: two sources, a 1-bit SRC field.
    let cfg = DecodeConfig {
        channel: 6,
        nexus: NexusConfig {
            src_bits: 1,
            timestamp_bits: 40,
        },
    };
    let mut d = Decoded {
        headers: vec![],
        records: vec![],
        errors: vec![],
    };
    decode_stream(
        &bytes[..],
        cfg,
        &mut |o| match o {
            Output::Header(h) => d.headers.push(*h),
            Output::Record(r) => d.records.push(r.clone()),
            Output::Error(e) => d.errors.push(e.to_string()),
        },
        &mut |_| {},
    );
    d
}

#[test]
fn fib_example_traces_balanced_calls_with_consistent_counts() {
    let (dir, out) = run_fib("fib", true, Some("32M"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "fib failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("fib(20) = 6765"), "{stdout}");
    let d = decode(&dir.join("trace.rtd"));
    assert!(d.errors.is_empty(), "{:?}", d.errors);

    // One header: Delta, counters 0..6; slot 1 is the timestamp, the
    // hardware events were replaced by software ones (named as such).
    assert_eq!(d.headers.len(), 1);
    let h = d.headers[0].header;
    assert_eq!(h.count_type, CountType::Delta);
    assert_eq!(h.mask(), 0x7f);
    for (slot, c) in h.iter() {
        if slot == 1 {
            assert!(c.event.is_timestamp());
        } else {
            assert!(
                matches!(c.event, Event::LinuxSoftware { .. }),
                "slot {slot}: {:?}",
                c.event
            );
        }
    }

    // fib(20) makes 2*fib(21)-1 = 21891 calls; main's own entry and exit
    // fall outside trace on/off.
    let enters = d.count(RecordType::FuncEnter);
    let exits = d.count(RecordType::FuncExit);
    assert_eq!(enters, 21891);
    assert_eq!(exits, 21891);
    assert_eq!(d.records.len(), enters + exits);

    // Proper nesting: every exit closes the innermost open call, with the
    // same function and call site.
    let mut stack: Vec<(u64, Option<u64>)> = Vec::new();
    let mut depth_max = 0;
    for r in &d.records {
        match r.kind {
            RecordType::FuncEnter => {
                stack.push((r.addr, r.addr2));
                depth_max = depth_max.max(stack.len());
            }
            RecordType::FuncExit => {
                let top = stack.pop().expect("exit without enter");
                assert_eq!(top, (r.addr, r.addr2));
            }
            _ => panic!("unexpected record kind {:?}", r.kind),
        }
    }
    assert!(stack.is_empty());
    assert_eq!(depth_max, 20, "fib(20) recursion depth");

    // Counts add up: the timestamp counter's deltas, summed from trace-on,
    // give every record's Nexus timestamp (two independent paths: counter
    // values vs message timestamps).
    let t0 = d.headers[0].timestamp.expect("header timestamp");
    let mask40 = (1u64 << 40) - 1;
    let mut t = t0;
    for r in &d.records {
        t = (t + r.counter(1).unwrap().recorded) & mask40;
        assert_eq!(Some(t), r.timestamp);
    }
    // task-clock (slot 0) is CPU time of the thread: it advances, and by
    // no more than the wall time the records span (plus one read's slack).
    let task: u64 = d
        .records
        .iter()
        .map(|r| r.counter(0).unwrap().recorded)
        .sum();
    let span = (t - t0) & mask40;
    assert!(task > 0);
    assert!(
        task <= span + 1_000_000,
        "task-clock {task} ns > span {span} ns"
    );
}

#[test]
fn fib_example_unchanged_buffer_stops_on_wrap() {
    let (dir, out) = run_fib("fib32k", true, None);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("trace buffer full"), "{stderr}");
    let len = std::fs::metadata(dir.join("trace.rtd")).unwrap().len();
    assert!(len <= 32 * 1024 && len > 30 * 1024, "{len}");
    let d = decode(&dir.join("trace.rtd"));
    assert_eq!(d.headers.len(), 1);
    assert!(d.records.len() > 300, "{}", d.records.len());
    // At most the record cut by the full buffer is reported.
    assert!(d.errors.len() <= 1, "{:?}", d.errors);
}

/// Without `HPMTRACE_SW_FALLBACK` an event the machine cannot count is
/// left out, each named on stderr, and init succeeds: the trace keeps to
/// SiFive's event types (0 general, 1 cache, 2 raw), which SiFive's
/// decoder reads.
#[test]
fn fib_example_without_fallback_leaves_out_what_cannot_be_counted() {
    let (dir, out) = run_fib("fibnohw", false, Some("32M"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout} {stderr}");
    assert!(stdout.contains("fib(20) = 6765"), "{stdout}");
    let d = decode(&dir.join("trace.rtd"));
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.headers.len(), 1);
    let h = d.headers[0].header;
    // fib.c's list, in its order, with the slot each event gets.
    let listed = [
        (0, Event::General { code: 1 }),
        (1, Event::General { code: 0x80 }),
        (2, Event::General { code: 2 }),
        (3, Event::General { code: 4 }),
        (4, Event::General { code: 5 }),
        (5, Event::General { code: 6 }),
        (
            6,
            Event::Raw {
                event_data: 2 << 16,
            },
        ),
    ];
    for (i, (slot, event)) in listed.into_iter().enumerate() {
        match h.counters[slot] {
            // Counted: the event asked for, never a stand-in.
            Some(c) => assert_eq!(c.event, event, "slot {slot}"),
            // Left out: said so, naming the event.
            None => assert!(
                stderr.contains(&format!("event {i} ({event:?}) left out of the trace")),
                "slot {slot}: {stderr}"
            ),
        }
    }
    assert_eq!(h.mask() & !0x7f, 0);
    // The timestamp is the trace clock: always there.
    assert!(h.counters[1].is_some());
    let enters = d.count(RecordType::FuncEnter);
    assert_eq!(enters, 21891);
    assert_eq!(d.records.len(), 2 * enters);
}
