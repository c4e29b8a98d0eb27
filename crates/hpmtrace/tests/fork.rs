//! fork() while the collector works in other threads: the child must be
//! able to trace and read its trace out. The parent's encoder thread and
//! recording threads hold stream locks while they encode; a child forked
//! at that moment would inherit a locked mutex whose owner does not exist
//! in it, and no encoder thread. Three threads record with a small
//! staging buffer (the encoder thread always has work) while the main
//! thread forks 200 times; each child records enough to fill its staging
//! chunks, reads every stream's statistics (locking each stream: the
//! child's and the ones it inherited) and exits 0 if its 4000 records are
//! there. A child that hangs is killed by an alarm and fails the test. One
//! test function: the collector is process-wide.

use hpmtrace::collect::{self, Mode};
use hpmtrace::format::{hw, CountType, Event, RecordType};
use hpmtrace::session::Session;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn a_child_forked_while_threads_encode_traces_and_reads_out() {
    let s = Session::builder()
        .count_type(CountType::Delta)
        .mode(Mode::FuncEntryExit)
        .event(Event::General {
            code: hw::TIMESTAMP,
        })
        .buffer_bytes(64 << 20)
        .stage_bytes(4096)
        .max_threads(8)
        .start()
        .expect("session");
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..3)
        .map(|t| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut i = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    collect::hook(RecordType::FuncEnter, 0x40_1000 + t, i);
                    collect::hook(RecordType::FuncExit, 0x40_1000 + t, i);
                    i += 1;
                }
            })
        })
        .collect();
    for round in 0..200 {
        // SAFETY: the child only records, reads statistics and leaves
        // with _exit (no destructors, no atexit handlers of the parent).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // SAFETY: alarm and _exit are async-signal-safe.
            unsafe { libc::alarm(10) };
            let before = collect::stats().records;
            for i in 0..2000 {
                collect::hook(RecordType::FuncEnter, 0x40_2000, i);
                collect::hook(RecordType::FuncExit, 0x40_2000, i);
            }
            // Only this thread records in the child.
            let ok = collect::stats().records - before == 4000;
            // SAFETY: see above.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(r, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child of round {round}: status {status:#x} (a signal: it hung and the alarm killed it)"
        );
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    assert!(s.stats().records > 0);
    s.finish().unwrap();
}
