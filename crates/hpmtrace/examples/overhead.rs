//! Benchmark (not a test): cost of one traced call (enter + exit record)
//! with hpmtrace against uftrace, on the same recursive fib program.
//!
//! `cargo run --release -p hpmtrace --example overhead [-- N]`
//!
//! Builds benches/fib_bench.c with gcc -O1 -fno-inline
//! -fno-optimize-sibling-calls (so every fib call stays a real call in
//! every build) several ways, runs each 5 times
//! and reports the median time of fib(N) (timed inside the program, so
//! tracer start-up and trace write-out are excluded), minus the
//! uninstrumented time, divided by the number of calls.

use std::path::{Path, PathBuf};
use std::process::Command;

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

/// Median fib time in ns over 5 runs of `cmd`.
fn time(dir: &Path, cmd: &[&str]) -> f64 {
    let mut v: Vec<f64> = (0..5)
        .map(|_| {
            let out = Command::new(cmd[0])
                .args(&cmd[1..])
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
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[2]
}

fn fib(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
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
    let base = time(&dir, &[&p(&plain), &ns]);
    println!(
        "fib({n}): {calls} calls, uninstrumented {:.2} ms",
        base / 1e6
    );
    println!(
        "{:<52} {:>12} {:>14}",
        "configuration", "fib ms", "ns/call pair"
    );
    let row = |name: &str, t: f64| {
        println!(
            "{:<52} {:>12.2} {:>14.1}",
            name,
            t / 1e6,
            (t - base) / calls as f64
        );
        (t - base) / calls as f64
    };
    row("uninstrumented", base);
    let mut results = Vec::new();
    for (k, label) in [
        ("1", "hpmtrace, 1 counter (HW_TIMESTAMP only)"),
        ("2", "hpmtrace, 2 counters (timestamp + task-clock)"),
        ("6", "hpmtrace, 6 counters (timestamp + 5 software)"),
    ] {
        let t = time(&dir, &[&p(&traced), &ns, k]);
        results.push((k, row(label, t)));
    }
    let uf = |exe: &Path| {
        time(
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
        )
    };
    let u_pg = row("uftrace record, -pg build", uf(&pg));
    let u_cyg = row("uftrace record, -finstrument-functions build", uf(&cyg));
    let u = u_pg.min(u_cyg);
    for (k, o) in results {
        println!(
            "hpmtrace {k} counter(s): {:.2}x uftrace's best overhead (goal <= 0.5)",
            o / u
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
