//! Benchmark (not a test): cost of one traced call (enter + exit record)
//! with hpmtrace against uftrace, on the same recursive fib program, and
//! where hpmtrace's time goes.
//!
//! `cargo run --release -p hpmtrace --example overhead [-- N]`
//!
//! End to end: builds benches/fib_bench.c with gcc -O1 -fno-inline
//! -fno-optimize-sibling-calls (so every fib call stays a real call in
//! every build) several ways, runs each 5 times and reports the median time
//! of fib(N) (timed inside the program, so tracer start-up and trace
//! write-out are excluded), minus the uninstrumented time, divided by the
//! number of calls. hpmtrace runs twice per counter set: with a staging
//! buffer large enough for the whole run (encoding happens at trace-off,
//! outside the timed region, like uftrace's recorder writing its buffers
//! out in another process) and with a 256 KiB one (encoding happens inside
//! the timed region every time it fills).
//!
//! Breakdown, in this process through the Rust API (no C call, so a few ns
//! cheaper than the hooks): the counter reads alone (two per pair), the
//! hook with the reads, and the encoding of the staged samples.

use hpmtrace::collect::{self, Mode};
use hpmtrace::format::{hw, CountType, Event, RecordType};
use hpmtrace::linux::{sw, PerfGroup};
use hpmtrace::session::Session;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Counter sets of benches/fib_bench.c (same names, same events).
const SETS: [(&str, &str); 5] = [
    ("1", "timestamp only"),
    ("2", "timestamp + task-clock [read()]"),
    ("6", "timestamp + 5 software [read()]"),
    ("2u", "timestamp + context-switches [page]"),
    ("6u", "timestamp + 5 switch counters [page]"),
];

fn events(set: &str) -> Vec<Event> {
    let sw = |code| Event::LinuxSoftware { code };
    let syscall_read = [
        sw(sw::TASK_CLOCK),
        sw(sw::PAGE_FAULTS),
        sw(sw::CONTEXT_SWITCHES),
        sw(sw::CPU_MIGRATIONS),
        sw(sw::CPU_CLOCK),
    ];
    let page_read = [
        sw(sw::CONTEXT_SWITCHES),
        sw(sw::CGROUP_SWITCHES),
        sw(sw::CONTEXT_SWITCHES),
        sw(sw::CGROUP_SWITCHES),
        sw(sw::CONTEXT_SWITCHES),
    ];
    let n: usize = set.trim_end_matches('u').parse().unwrap();
    let list = if set.ends_with('u') {
        page_read
    } else {
        syscall_read
    };
    let mut v = vec![Event::General {
        code: hw::TIMESTAMP,
    }];
    v.extend_from_slice(&list[..n - 1]);
    v
}

fn staticlib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().parent().unwrap().join("deps");
    std::fs::read_dir(&deps)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("libhpmtrace-") && n.ends_with(".a")
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .expect("libhpmtrace staticlib not built")
        .path()
}

fn gcc(dir: &Path, out: &str, flags: &[&str], extra: &[PathBuf]) -> PathBuf {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let exe = dir.join(out);
    let st = Command::new("gcc")
        .args(["-O1", "-fno-inline", "-fno-optimize-sibling-calls"])
        .args(flags)
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join("benches/fib_bench.c"))
        .args(extra)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .status()
        .expect("gcc");
    assert!(st.success(), "gcc {out} failed");
    exe
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Median fib time in ns over 5 runs of `cmd` with `env`.
fn time(dir: &Path, cmd: &[&str], env: &[(&str, &str)]) -> f64 {
    median(
        (0..5)
            .map(|_| {
                let out = Command::new(cmd[0])
                    .args(&cmd[1..])
                    .envs(env.iter().copied())
                    .current_dir(dir)
                    .output()
                    .expect("run");
                assert!(
                    out.status.success(),
                    "{cmd:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let s = String::from_utf8_lossy(&out.stdout);
                let line = s.lines().last().unwrap_or("");
                line.split_whitespace()
                    .nth(1)
                    .and_then(|x| x.parse().ok())
                    .unwrap_or_else(|| panic!("{cmd:?}: {s}"))
            })
            .collect(),
    )
}

fn fib(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

/// ns per read of the set's counters (the timestamp is not a read), as the
/// hook reads them; also whether that avoids system calls.
fn read_cost(set: &str) -> (f64, bool) {
    let ev: Vec<(usize, Event)> = events(set)[1..].iter().copied().enumerate().collect();
    if ev.is_empty() {
        return (0.0, true);
    }
    let mut g = PerfGroup::open(&ev).expect("software perf events");
    let mut out = [0u64; 8];
    let n = 20_000;
    let t = median(
        (0..5)
            .map(|_| {
                let t0 = Instant::now();
                for _ in 0..n {
                    g.read_members(std::hint::black_box(&mut out[..ev.len()]));
                }
                t0.elapsed().as_nanos() as f64 / n as f64
            })
            .collect(),
    );
    (t, g.user_space_reads())
}

/// In-process: ns per enter+exit pair for the hooks (counter reads
/// included, encoding deferred) and for encoding the staged samples.
fn hook_and_encode(set: &str, pairs: u64) -> (f64, f64) {
    let mut hook = Vec::new();
    let mut encode = Vec::new();
    for _ in 0..5 {
        let mut b = Session::builder()
            .count_type(CountType::Delta)
            .mode(Mode::FuncEntryExit)
            .buffer_bytes(256 << 20)
            .stage_bytes(128 << 20);
        for e in events(set) {
            b = b.event(e);
        }
        let s = b.start().expect("session");
        let t0 = Instant::now();
        for i in 0..pairs {
            // fib's pattern: one function, two call sites.
            let site = 0x40_1180 + 8 * (i & 1) as usize;
            collect::hook(RecordType::FuncEnter, 0x40_1136, site);
            collect::hook(RecordType::FuncExit, 0x40_1136, site);
        }
        let t1 = Instant::now();
        let st = s.stats(); // encodes everything staged
        let t2 = Instant::now();
        assert_eq!(st.records, 2 * pairs);
        assert_eq!(st.dropped_messages, 0);
        s.finish().unwrap();
        hook.push((t1 - t0).as_nanos() as f64 / pairs as f64);
        encode.push((t2 - t1).as_nanos() as f64 / pairs as f64);
    }
    (median(hook), median(encode))
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(24);
    let calls = 2 * fib(n + 1) - 1;
    let dir = std::env::temp_dir().join(format!("hpmtrace-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lib = staticlib();
    let plain = gcc(&dir, "plain", &[], &[]);
    let traced = gcc(
        &dir,
        "traced",
        &["-finstrument-functions", "-DUSE_HPMTRACE"],
        &[lib],
    );
    let cyg = gcc(&dir, "cyg", &["-finstrument-functions"], &[]);
    let pg = gcc(&dir, "pg", &["-pg"], &[]);
    let ns = n.to_string();
    let p = |x: &Path| x.to_string_lossy().into_owned();
    let base = time(&dir, &[&p(&plain), &ns], &[]);
    let per_pair = |t: f64| (t - base) / calls as f64;
    println!(
        "fib({n}): {calls} calls (enter+exit pairs), uninstrumented {:.2} ms",
        base / 1e6
    );

    let uf = |exe: &Path| {
        per_pair(time(
            &dir,
            &[
                "uftrace",
                "record",
                "--no-libcall",
                "-d",
                &p(&dir.join("uftrace.data")),
                &p(exe),
                &ns,
            ],
            &[],
        ))
    };
    let u_cyg = uf(&cyg);
    let u_pg = uf(&pg);
    println!("\nuftrace record, -finstrument-functions build: {u_cyg:7.1} ns/pair (the reference)");
    println!("uftrace record, -pg build:                    {u_pg:7.1} ns/pair");

    println!("\nhpmtrace end to end (C fib, ns per enter+exit pair; ratio = / uftrace -finstrument-functions; goal <= 0.50):");
    println!(
        "{:<40} {:>16} {:>7} {:>18} {:>7}",
        "counters", "encode at off", "ratio", "encode in run", "ratio"
    );
    for (set, label) in SETS {
        let deferred = per_pair(time(
            &dir,
            &[&p(&traced), &ns, set],
            &[("HPMTRACE_STAGE_BYTES", "64M")],
        ));
        let inline = per_pair(time(
            &dir,
            &[&p(&traced), &ns, set],
            &[("HPMTRACE_STAGE_BYTES", "256K")],
        ));
        println!(
            "{:<40} {:>16.1} {:>7.2} {:>18.1} {:>7.2}",
            format!("{set:>2}: {label}"),
            deferred,
            deferred / u_cyg,
            inline,
            inline / u_cyg
        );
    }

    println!("\nbreakdown in-process (ns per enter+exit pair):");
    println!(
        "{:<40} {:>12} {:>14} {:>14} {:>10}",
        "counters", "hook total", "counter reads", "hook - reads", "encode"
    );
    for (set, label) in SETS {
        let (read, user) = read_cost(set);
        let (hook, encode) = hook_and_encode(set, calls);
        println!(
            "{:<40} {:>12.1} {:>14} {:>14.1} {:>10.1}",
            format!("{set:>2}: {label}"),
            hook,
            format!(
                "{:.1}{}",
                2.0 * read,
                if set == "1" {
                    ""
                } else if user {
                    " page"
                } else {
                    " syscall"
                }
            ),
            hook - 2.0 * read,
            encode
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
