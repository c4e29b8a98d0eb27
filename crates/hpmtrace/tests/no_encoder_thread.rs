//! With the encoder thread off (`SessionBuilder::encoder_thread(false)`,
//! the C API's `HPMTRACE_ENCODER_THREAD=0`) the library starts no thread:
//! a trace eight times the staging buffer is recorded and read out, and
//! the process never had a thread named `hpmtrace-enc`. Its own test
//! binary: the encoder thread, once started, stays for the process.

use hpmtrace::collect::Mode;
use hpmtrace::format::{hw, CountType, Event, RecordType};
use hpmtrace::session::Session;

/// The names of this process's threads.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .collect()
}

#[test]
fn encoder_thread_off_starts_no_thread() {
    let s = Session::builder()
        .count_type(CountType::Delta)
        .mode(Mode::FuncEntryExit)
        .event(Event::General {
            code: hw::TIMESTAMP,
        })
        .stage_bytes(4096)
        .encoder_thread(false)
        .start()
        .expect("session");
    // 5 words a sample: 4096 bytes hold about 100 records.
    for i in 0..400 {
        hpmtrace::collect::hook(RecordType::FuncEnter, 0x40_1000, i);
        hpmtrace::collect::hook(RecordType::FuncExit, 0x40_1000, i);
    }
    let names = thread_names();
    assert!(
        !names.iter().any(|n| n == "hpmtrace-enc"),
        "threads: {names:?}"
    );
    let st = s.stats();
    assert_eq!(st.records, 800);
    assert!(st.inline_chunks >= 6, "{st:?}");
    s.finish().unwrap();
}
