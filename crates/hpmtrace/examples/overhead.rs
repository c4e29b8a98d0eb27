//! Benchmark (not a test): cost of one traced call (enter + exit record)
//! with hpmtrace against uftrace, on the same recursive fib program, and
//! where hpmtrace's time goes.
//!
//! `cargo run --release -p hpmtrace --example overhead [-- N [ROUNDS]]`
//!
//! A/B: with `HPMTRACE_BENCH_AB=/path/to/libhpmtrace.a` (other builds of
//! the library, e.g. before a change; several separated by `:`, each
//! optionally with `?VAR=VALUE`, an environment variable for its runs),
//! fib is also linked with each and every hpmtrace configuration runs
//! with all of them in the same rounds; a table per library gives its
//! figures and, per round, its cost over this build's in the same round.
//! `HPMTRACE_BENCH_SETS=1,2u,6u` runs only those counter sets (default:
//! all). `HPMTRACE_BENCH_RAW=FILE` writes every run's time (ns), one line
//! per configuration. `HPMTRACE_BENCH_NO_BREAKDOWN=1` skips the
//! in-process breakdown.
//!
//! End to end: builds benches/fib_bench.c with gcc -O1 -fno-inline
//! -fno-optimize-sibling-calls (so every fib call stays a real call in
//! every build) several ways and times fib(N) inside the program (tracer
//! start-up and trace write-out are excluded). Every configuration runs
//! once per round, ROUNDS rounds (default 7) one after the other, so that
//! a busy moment of the machine hits all of them alike; the median, minus
//! the uninstrumented median, divided by the number of calls, is the cost
//! per enter+exit pair (the best run is printed too), and the ratio to
//! uftrace's median; the ratios of each round (run over uftrace's run in
//! the same round) give their median and quartiles. hpmtrace runs twice
//! per counter set: with a staging buffer large enough for the whole run
//! (encoding happens at trace-off, outside the timed region, like
//! uftrace's recorder writing its buffers out in another process) and with
//! a 256 KiB one (chunks are encoded during the run, by the encoder thread
//! or, when it is behind, by the recording thread).
//!
//! Breakdown, in this process through the Rust API (no C call, so a few ns
//! cheaper than the hooks): the counter reads alone (two per pair), the
//! hook with the reads, the encoding of the staged samples, and the hooks
//! with a 256 KiB stage with how many chunks the recording thread had to
//! encode itself.

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

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// One run of `cmd` with `env`: the fib time in ns it prints.
fn run_once(dir: &Path, cmd: &[String], env: &[(String, String)]) -> f64 {
    let out = Command::new(&cmd[0])
        .args(&cmd[1..])
        .envs(env.iter().cloned())
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
}

/// A program run to time: its command line and environment.
struct Config {
    cmd: Vec<String>,
    env: Vec<(String, String)>,
    times: Vec<f64>,
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
/// included) with a staging buffer of `stage` bytes, for encoding what is
/// still staged afterwards, and the staging chunks the recording thread
/// encoded itself (see `collect::Stats::inline_chunks`), medians.
fn hook_and_encode(set: &str, pairs: u64, stage: usize) -> (f64, f64, u64) {
    let mut hook = Vec::new();
    let mut encode = Vec::new();
    let mut inline = Vec::new();
    for _ in 0..5 {
        let mut b = Session::builder()
            .count_type(CountType::Delta)
            .mode(Mode::FuncEntryExit)
            .buffer_bytes(256 << 20)
            .stage_bytes(stage);
        for e in events(set) {
            b = b.event(e);
        }
        let s = b.start().expect("session");
        let before = s.stats();
        let t0 = Instant::now();
        for i in 0..pairs {
            // fib's pattern: one function, two call sites, addresses of a
            // position-independent executable (two words each).
            let site = 0x5555_5555_5180 + 8 * (i & 1) as usize;
            collect::hook(RecordType::FuncEnter, 0x5555_5555_5136, site);
            collect::hook(RecordType::FuncExit, 0x5555_5555_5136, site);
        }
        let t1 = Instant::now();
        let st = s.stats(); // encodes everything still staged
        let t2 = Instant::now();
        assert_eq!(st.records, 2 * pairs);
        assert_eq!(st.dropped_messages, 0);
        s.finish().unwrap();
        hook.push((t1 - t0).as_nanos() as f64 / pairs as f64);
        encode.push((t2 - t1).as_nanos() as f64 / pairs as f64);
        inline.push(st.inline_chunks - before.inline_chunks);
    }
    inline.sort();
    (median(hook), median(encode), inline[inline.len() / 2])
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|x| x.parse().ok()).unwrap_or(24);
    let rounds: usize = args.next().and_then(|x| x.parse().ok()).unwrap_or(7);
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
    // Each `path[?VAR=VALUE]`: a library, and an environment variable
    // its runs get.
    let ab_libs: Vec<(PathBuf, Option<(String, String)>)> = std::env::var("HPMTRACE_BENCH_AB")
        .unwrap_or_default()
        .split(':')
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once('?') {
            Some((lib, var)) => {
                let (k, v) = var.split_once('=').expect("?VAR=VALUE");
                (PathBuf::from(lib), Some((k.to_string(), v.to_string())))
            }
            None => (PathBuf::from(l), None),
        })
        .collect();
    let others: Vec<(PathBuf, Option<(String, String)>)> = ab_libs
        .iter()
        .enumerate()
        .map(|(i, (lib, var))| {
            let exe = gcc(
                &dir,
                &format!("traced-ab{i}"),
                &["-finstrument-functions", "-DUSE_HPMTRACE"],
                std::slice::from_ref(lib),
            );
            (exe, var.clone())
        })
        .collect();
    let sets: Vec<(&str, &str)> = match std::env::var("HPMTRACE_BENCH_SETS") {
        Ok(list) => SETS
            .into_iter()
            .filter(|(s, _)| list.split(',').any(|x| x.trim() == *s))
            .collect(),
        Err(_) => SETS.to_vec(),
    };
    let cyg = gcc(&dir, "cyg", &["-finstrument-functions"], &[]);
    let pg = gcc(&dir, "pg", &["-pg"], &[]);
    let ns = n.to_string();
    let p = |x: &Path| x.to_string_lossy().into_owned();
    let uftrace = |exe: &Path| {
        vec![
            "uftrace".into(),
            "record".into(),
            "--no-libcall".into(),
            "-d".into(),
            p(&dir.join("uftrace.data")),
            p(exe),
            ns.clone(),
        ]
    };
    let config = |cmd: Vec<String>, env: Vec<(String, String)>| Config {
        cmd,
        env,
        times: Vec::new(),
    };
    // 0: plain, 1: uftrace, 2: uftrace -pg, then per set: at off, in run.
    let mut configs = vec![
        config(vec![p(&plain), ns.clone()], vec![]),
        config(uftrace(&cyg), vec![]),
        config(uftrace(&pg), vec![]),
    ];
    // Per set: at off, in run; then the same with each A/B library.
    let this = (traced, None);
    let libs: Vec<&(PathBuf, Option<(String, String)>)> =
        std::iter::once(&this).chain(&others).collect();
    for (exe, var) in &libs {
        for &(set, _) in &sets {
            for stage in ["64M", "256K"] {
                let mut env = vec![("HPMTRACE_STAGE_BYTES".to_string(), stage.to_string())];
                env.extend(var.clone());
                configs.push(config(vec![p(exe), ns.clone(), set.into()], env));
            }
        }
    }
    for _ in 0..rounds {
        for c in configs.iter_mut() {
            c.times.push(run_once(&dir, &c.cmd, &c.env));
        }
    }
    if let Some(path) = std::env::var_os("HPMTRACE_BENCH_RAW") {
        let mut csv = String::new();
        for c in &configs {
            let env: Vec<String> = c.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let times: Vec<String> = c.times.iter().map(|t| format!("{t:.0}")).collect();
            csv += &format!(
                "{} {},{}\n",
                env.join(" "),
                c.cmd.join(" "),
                times.join(",")
            );
        }
        std::fs::write(path, csv).expect("HPMTRACE_BENCH_RAW");
    }
    let base = median(configs[0].times.clone());
    let base_min = min(&configs[0].times);
    // (median, best) ns per pair
    let per_pair = |c: &Config| {
        (
            (median(c.times.clone()) - base) / calls as f64,
            (min(&c.times) - base_min) / calls as f64,
        )
    };
    println!(
        "fib({n}): {calls} calls (enter+exit pairs), uninstrumented {:.2} ms; {rounds} rounds",
        base / 1e6
    );
    // Per round: this configuration's cost over uftrace's in the same
    // round (a few hundred ms apart), so a slow stretch of the host that
    // covers part of the run weighs on both sides of each ratio; median
    // and interquartile range.
    let paired = |c: &Config| {
        let mut r: Vec<f64> = (0..rounds)
            .map(|i| {
                let b = configs[0].times[i];
                (c.times[i] - b) / (configs[1].times[i] - b)
            })
            .collect();
        r.sort_by(|a, b| a.partial_cmp(b).unwrap());
        (r[rounds / 2], r[rounds / 4], r[(3 * rounds) / 4])
    };
    let (u_cyg, u_cyg_best) = per_pair(&configs[1]);
    let (u_pg, u_pg_best) = per_pair(&configs[2]);
    println!(
        "\nuftrace record, -finstrument-functions build: {u_cyg:7.1} ns/pair (best {u_cyg_best:.1}; the reference)"
    );
    println!(
        "uftrace record, -pg build:                    {u_pg:7.1} ns/pair (best {u_pg_best:.1})"
    );

    // Per round: this library's cost over this build's in the same round.
    let versus = |c: &Config, this: &Config| {
        let mut r: Vec<f64> = (0..rounds)
            .map(|i| {
                let b = configs[0].times[i];
                (c.times[i] - b) / (this.times[i] - b)
            })
            .collect();
        r.sort_by(|a, b| a.partial_cmp(b).unwrap());
        (r[rounds / 2], r[rounds / 4], r[(3 * rounds) / 4])
    };
    let iqr = |(m, lo, hi): (f64, f64, f64)| format!("{m:.2} [{lo:.2}-{hi:.2}]");
    for l in 0..libs.len() {
        println!(
            "\nhpmtrace end to end{} (C fib, ns per enter+exit pair, median (best); ratio = median / uftrace median; per round: ratio to uftrace in the same round, median [quartiles]; goal <= 0.50):",
            if l == 0 {
                String::new()
            } else {
                format!(", A/B library {l} ({:?})", ab_libs[l - 1])
            }
        );
        println!(
            "{:<40} {:>16} {:>6} {:>17} {:>16} {:>6} {:>17}",
            "counters",
            "encode at off",
            "ratio",
            "per round [IQR]",
            "encode in run",
            "ratio",
            "per round [IQR]"
        );
        let first = 3 + 2 * sets.len() * l;
        for (i, (set, label)) in sets.iter().enumerate() {
            let (off, off_best) = per_pair(&configs[first + 2 * i]);
            let (run, run_best) = per_pair(&configs[first + 1 + 2 * i]);
            println!(
                "{:<40} {:>16} {:>6.2} {:>17} {:>16} {:>6.2} {:>17}",
                format!("{set:>2}: {label}"),
                format!("{off:.1} ({off_best:.1})"),
                off / u_cyg,
                iqr(paired(&configs[first + 2 * i])),
                format!("{run:.1} ({run_best:.1})"),
                run / u_cyg,
                iqr(paired(&configs[first + 1 + 2 * i]))
            );
        }
        if l > 0 {
            println!("  cost over this build's in the same round, median [quartiles]:");
            for (i, (set, _)) in sets.iter().enumerate() {
                let (a, b) = (first + 2 * i, 3 + 2 * i);
                println!(
                    "  {set:>2}: at off {:>17}   in run {:>17}",
                    iqr(versus(&configs[a], &configs[b])),
                    iqr(versus(&configs[a + 1], &configs[b + 1]))
                );
            }
        }
    }

    if std::env::var_os("HPMTRACE_BENCH_NO_BREAKDOWN").is_some() {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    println!("\nbreakdown in-process (ns per enter+exit pair; the last two columns with a 256 KiB stage):");
    println!(
        "{:<40} {:>10} {:>14} {:>12} {:>8} {:>12} {:>22}",
        "counters",
        "hook total",
        "counter reads",
        "hook - reads",
        "encode",
        "hook in run",
        "chunks inline"
    );
    for (set, label) in sets {
        let (read, user) = read_cost(set);
        let (hook, encode, _) = hook_and_encode(set, calls, 128 << 20);
        let (hook_run, _, inline) = hook_and_encode(set, calls, 256 << 10);
        let words = (hpmtrace::stage::SAMPLE_HEAD_WORDS + events(set).len() - 1) as u64;
        let chunk = (256 << 10) / collect::STAGE_CHUNKS as u64;
        let chunks = 2 * calls * words * 8 / chunk;
        println!(
            "{:<40} {:>10.1} {:>14} {:>12.1} {:>8.1} {:>12.1} {:>22}",
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
            encode,
            hook_run,
            format!("{inline} of {chunks}")
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
