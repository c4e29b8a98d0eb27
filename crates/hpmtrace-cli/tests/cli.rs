//! End-to-end tests of the `hpmtrace` binary: a real ELF with DWARF built
//! from C here, a trace encoded for it, every output checked against
//! numbers worked out by hand below.

use hpmtrace::encoder::Encoder;
use hpmtrace::format::{CountType, CounterDesc, CounterInfo, Event, Header, RecordType};
use hpmtrace::nexus::write::{NexusWriter, WriterConfig};
use hpmtrace::sink::VecBuffer;
use object::{Object, ObjectSymbol};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const PROG_C: &str = "\
/* hpmtrace test program: one function per line, so DWARF lines are known */
int leaf(int x) { return x * 2; }
int fib(int n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }
int main(void) { return fib(2) + leaf(1); }
";
const LEAF_LINE: u32 = 2;
const FIB_LINE: u32 = 3;
const MAIN_LINE: u32 = 4;

struct Prog {
    dir: PathBuf,
    elf: PathBuf,
    leaf: u64,
    fib: u64,
    main: u64,
}

fn prog() -> &'static Prog {
    static P: OnceLock<Prog> = OnceLock::new();
    P.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hpmtrace-cli-tests");
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("prog.c");
        std::fs::write(&src, PROG_C).unwrap();
        let elf = dir.join("prog");
        // A RISC-V ELF: the trace format relies on even code addresses.
        let st = Command::new("riscv64-linux-gnu-gcc")
            .args([
                "-g",
                "-O0",
                "-fno-inline",
                "-ffreestanding",
                "-nostdlib",
                "-Wl,-e,main",
                "-o",
            ])
            .arg(&elf)
            .arg(&src)
            .status()
            .expect(
                "riscv64-linux-gnu-gcc is needed to build the test ELF: run `cargo xtask setup`",
            );
        assert!(st.success(), "riscv64-linux-gnu-gcc failed");
        let data = std::fs::read(&elf).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let addr = |n: &str| {
            file.symbols()
                .find(|s| s.name() == Ok(n))
                .unwrap_or_else(|| panic!("no symbol {n}"))
                .address()
        };
        Prog {
            leaf: addr("leaf"),
            fib: addr("fib"),
            main: addr("main"),
            dir,
            elf,
        }
    })
}

/// Cycles (general event 1) on counter 0 and instructions (2) on counter 2,
/// the `cycle` and `instret` CSRs.
fn header(ct: CountType) -> Header {
    let mut h = Header::new(ct);
    for (i, code) in [(0, 1), (2, 2)] {
        h.counters[i] = Some(CounterDesc {
            event: Event::General { code },
            info: CounterInfo {
                csr: 0xc00 + i as u16,
                width: 64,
            },
        });
    }
    h
}

/// A trace being written: the encoder of a `header(ct)` trace and the
/// writer of its core, traced on at tick `at` with the counters at `on`.
struct Trace {
    enc: Encoder,
    w: NexusWriter<VecBuffer>,
}

impl Trace {
    /// Core 0, the default configuration.
    fn on(ct: CountType, on: [u64; 2], at: u64) -> Trace {
        Trace::on_core(WriterConfig::default(), 0, ct, on, at)
    }

    fn on_core(cfg: WriterConfig, src: u16, ct: CountType, on: [u64; 2], at: u64) -> Trace {
        let mut enc = Encoder::new(header(ct));
        // Room for the largest trace here (100,000 records).
        let mut w = NexusWriter::new(cfg, src, VecBuffer::with_capacity(16 << 20));
        enc.trace_on(&mut w, &on, at).unwrap();
        Trace { enc, w }
    }

    /// A `kind` record at `addrs` with the counters at `r`, at tick `t`.
    fn record(&mut self, kind: RecordType, addrs: [u64; 2], r: [u64; 2], t: u64) {
        self.enc.record(&mut self.w, kind, addrs, &r, t).unwrap();
    }

    fn bytes(self) -> Vec<u8> {
        self.w.into_inner().data().to_vec()
    }
}

/// main -> fib(2) -> {fib(1), fib(0)}; main -> leaf. Readings are
/// (cycles, instructions) at each record; trace-on at (900, 450).
fn calls_trace(ct: CountType) -> Vec<u8> {
    calls_trace_at(ct, 0)
}

/// [`calls_trace`] of the program loaded `bias` above its link addresses.
fn calls_trace_at(ct: CountType, bias: u64) -> Vec<u8> {
    let mut t = Trace::on(ct, [900, 450], 90);
    write_calls(&mut t, bias);
    t.bytes()
}

/// The records of [`calls_trace_at`] after its trace-on.
fn write_calls(t: &mut Trace, bias: u64) {
    let p = prog();
    let (m, f, l) = (p.main + bias, p.fib + bias, p.leaf + bias);
    use RecordType::{FuncEnter as In, FuncExit as Out};
    for (k, a, r, at) in [
        (In, [f, m], [1000, 500], 100),
        (In, [f, f], [1100, 540], 110),
        (Out, [f, f], [1150, 560], 120),
        (In, [f, f], [1200, 580], 130),
        (Out, [f, f], [1240, 600], 140),
        (Out, [f, m], [1300, 640], 150),
        (In, [l, m], [1400, 700], 160),
        (Out, [l, m], [1460, 730], 170),
    ] {
        t.record(k, a, r, at);
    }
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let p = prog().dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn hpmtrace(args: &[&str]) -> (String, String, bool) {
    let out = Command::new(env!("CARGO_BIN_EXE_hpmtrace"))
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.success(),
    )
}

/// `hpmtrace ARGS`, which must succeed: its stdout and stderr.
fn hpmtrace_ok(args: &[&str]) -> (String, String) {
    let (out, err, ok) = hpmtrace(args);
    assert!(ok, "{args:?}: {err}");
    (out, err)
}

/// `hpmtrace CMD TRACE --elf PROG MORE`, which must succeed: its stdout
/// and stderr.
fn run_elf(cmd: &str, trace: &Path, more: &[&str]) -> (String, String) {
    let mut args = vec![cmd, s(trace), "--elf", s(&prog().elf)];
    args.extend_from_slice(more);
    hpmtrace_ok(&args)
}

/// The words of the first line of `out` whose first word is `name`.
fn row<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    out.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name}:\n{out}"))
        .split_whitespace()
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn decode_perf_lines_match_sifives_format_with_source_lines() {
    let p = prog();
    let t = write("calls_delta.rtd", &calls_trace(CountType::Delta));
    let (out, _) = run_elf("decode", &t, &[]);
    let src = p.dir.join("prog.c");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("# ELFPATH={}", p.elf.display()));
    assert_eq!(lines[1], "# COUNT_TYPE: Delta");
    assert_eq!(lines[2], "[0] 90 [Perf Cntr Mask] [Mask=0x00000005]");
    assert_eq!(
        lines[3],
        "[0] 90 [Perf Cntr Def] [Counter=0] [Type=0] [Code=1] [EventData=0x00000000] [CntrCSR=0xc00] [CntrBits=64]"
    );
    assert!(lines[4].starts_with("[0] 90 [Perf Cntr Def] [Counter=2] [Type=0] [Code=2]"));
    let fib_ffl = format!(" ffl:{}:fib:{FIB_LINE}", src.display());
    assert_eq!(
        lines[5],
        format!(
            "[0] 100 [Func Enter at 0x{:08x}] [Called From 0x{:08x}]{fib_ffl}",
            p.fib, p.main
        )
    );
    // Delta traces: the recorded deltas, as SiFive's decoder prints them.
    assert_eq!(
        lines[6],
        format!(
            "[0] 100 PC=0x{:08x} [Perf Cntr] [Index=0] [Value=100] {fib_ffl}",
            p.fib
        )
    );
    assert_eq!(
        lines[7],
        format!(
            "[0] 100 PC=0x{:08x} [Perf Cntr] [Index=2] [Value=50] {fib_ffl}",
            p.fib
        )
    );
    // The exit of leaf, last record: its counters refer to main, and the
    // trace's last counter is printed.
    let main_ffl = format!(" ffl:{}:main:{MAIN_LINE}", src.display());
    let n = lines.len();
    assert_eq!(
        lines[n - 3],
        format!(
            "[0] 170 [Func Exit] [Func at 0x{:08x}] [Returning to 0x{:08x}]{main_ffl}",
            p.leaf, p.main
        )
    );
    assert_eq!(
        lines[n - 1],
        format!(
            "[0] 170 PC=0x{:08x} [Perf Cntr] [Index=2] [Value=30] {main_ffl}",
            p.main
        )
    );
    assert_eq!(n, 5 + 8 * 3);
}

#[test]
fn unresolvable_addresses_are_kept_and_marked() {
    let p = prog();
    let mut tr = Trace::on(CountType::Raw, [0, 0], 1);
    tr.record(RecordType::Manual, [0x10, 0], [5, 6], 2);
    tr.record(RecordType::Manual, [p.leaf + 4, 0], [9, 9], 3);
    let t = write("unresolved.rtd", &tr.bytes());
    let (out, _) = run_elf("decode", &t, &[]);
    assert!(
        out.contains("[0] 2 PC=0x00000010 [Address] ffl:??:??:0\n"),
        "{out}"
    );
    assert!(
        out.contains("[0] 2 PC=0x00000010 [Perf Cntr] [Index=2] [Value=6]  ffl:??:??:0\n"),
        "{out}"
    );
    assert!(out.contains(&format!(":leaf:{LEAF_LINE}\n")), "{out}");
    let (csv, _) = run_elf("decode", &t, &["-f", "csv"]);
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0][5], "function");
    assert_eq!(rows.len(), 1 + 4);
    assert_eq!((rows[1][4], rows[1][5], rows[1][8]), ("0x10", "", "false"));
    assert_eq!((rows[1][12], rows[1][14]), ("cycles", "5"));
    assert_eq!((rows[3][5], rows[3][8]), ("leaf", "true"));
    assert_eq!(
        (rows[4][12], rows[4][13], rows[4][15]),
        ("instructions", "9", "3")
    );
    let (js, _) = run_elf("decode", &t, &["-f", "json"]);
    let v: Vec<serde_json::Value> = js
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(v[0]["type"], "header");
    assert_eq!(v[0]["counters"][1]["event"], "instructions");
    assert_eq!(v[1]["location"]["resolved"], false);
    assert_eq!(v[1]["location"]["function"], serde_json::Value::Null);
    assert_eq!(v[2]["location"]["function"], "leaf");
    assert_eq!(v[2]["location"]["offset"], 4);
    assert_eq!(v[2]["counters"][0]["delta"], 4);
}

#[test]
fn report_has_exact_inclusive_exclusive_counts_ipc_and_a_call_tree() {
    for ct in [CountType::Raw, CountType::Delta, CountType::DeltaXor] {
        let t = write(&format!("calls_{}.rtd", ct as u8), &calls_trace(ct));
        let (out, _) = run_elf("report", &t, &["--tree"]);
        let row = |f: &str| row(&out, f);
        // function calls cyc.incl cyc.excl ins.incl ins.excl time.incl time.excl IPC
        let first_interval_known = ct == CountType::Delta;
        // Raw and DeltaXOR cannot know the counts between trace-on and the
        // first record; Delta records them.
        let (main_c, main_i) = if first_interval_known {
            (560, 280)
        } else {
            (460, 230)
        };
        let (main_ce, main_ie) = if first_interval_known {
            (200, 110)
        } else {
            (100, 60)
        };
        assert_eq!(
            row("fib")[..6],
            ["fib", "3", "300", "300", "140", "140"],
            "{ct:?}\n{out}"
        );
        assert_eq!(row("leaf")[..6], ["leaf", "1", "60", "60", "30", "30"]);
        let m = row("main");
        assert_eq!(m[..2], ["main", "0"]);
        assert_eq!(
            m[2..6],
            [main_c, main_ce, main_i, main_ie].map(|v| v.to_string())
        );
        assert_eq!(
            m[6..8],
            ["80", "20"],
            "time: main runs from trace-on (90) to 170"
        );
        assert_eq!(m[8], format!("{:.3}", main_ie as f64 / main_ce as f64));
        assert_eq!(row("fib")[8], "0.467");
        // Call tree: fib under main, recursive fib under fib.
        let tree: Vec<&str> = out
            .lines()
            .skip_while(|l| !l.starts_with("Call tree"))
            .collect();
        assert!(
            tree.contains(&"    fib  [cycles 300, instructions 140, time 50]  calls 1"),
            "{out}"
        );
        assert!(
            tree.contains(&"      fib  [cycles 90, instructions 40, time 20]  calls 2"),
            "{out}"
        );
        assert!(
            tree.contains(&"    leaf  [cycles 60, instructions 30, time 10]  calls 1"),
            "{out}"
        );
        // Without --tree the walker keeps no call tree; the rest of the
        // report must not change.
        let (flat, _) = run_elf("report", &t, &[]);
        let before_tree: Vec<&str> = out
            .lines()
            .take_while(|l| !l.starts_with("Call tree"))
            .collect();
        let flat: Vec<&str> = flat.lines().collect();
        assert_eq!(
            flat.join("\n").trim_end(),
            before_tree.join("\n").trim_end()
        );
    }
}

/// The test ELF is a PIE, as gcc builds by default: a trace of it loaded
/// elsewhere is symbolized once the load bias is inferred from the
/// function entries, or given.
#[test]
fn a_pie_loaded_elsewhere_is_symbolized() {
    let bias = 0x5555_5555_4000;
    let at_link = write("calls_link.rtd", &calls_trace(CountType::Raw));
    let loaded = write("calls_loaded.rtd", &calls_trace_at(CountType::Raw, bias));
    let report = |t: &Path, more: &[&str]| run_elf("report", t, more);
    let (want, err) = report(&at_link, &[]);
    assert!(err.contains("load bias 0x0,"), "{err}");
    assert!(want.lines().any(|l| l.starts_with("fib ")), "{want}");
    let (got, err) = report(&loaded, &[]);
    assert!(err.contains("load bias 0x555555554000,"), "{err}");
    assert_eq!(got, want);
    let (got, err) = report(&loaded, &["--load-bias", "0x5555_5555_4000"]);
    assert!(!err.contains("inferred"), "{err}");
    assert_eq!(got, want);
    // Without the bias nothing resolves.
    let (got, _) = report(&loaded, &["--load-bias", "0"]);
    assert!(!got.lines().any(|l| l.starts_with("fib ")), "{got}");
}

#[test]
fn report_summarises_manual_and_sampled_traces() {
    let p = prog();
    let mut tr = Trace::on(CountType::DeltaXor, [0, 0], 1);
    let samples = [
        (p.fib + 8, 100u64),
        (p.fib + 12, 250),
        (p.leaf, 300),
        (p.fib, 400),
    ];
    for (i, (a, c)) in samples.into_iter().enumerate() {
        tr.record(RecordType::Isr, [a, 0], [c, c / 2], 10 + i as u64);
    }
    let t = write("samples.rtd", &tr.bytes());
    let (out, _) = run_elf("report", &t, &[]);
    assert!(
        out.contains("Trace: 4 records (0 enter, 0 exit, 0 manual, 4 timer samples)"),
        "{out}"
    );
    // fib: 3 samples; counts since the previous sample: 0 (first), 150, 100;
    // time since the previous record or trace-on (tick 1): 9, 1, 1.
    assert_eq!(row(&out, "fib"), ["fib", "3", "75.0", "250", "125", "11"]);
    assert_eq!(row(&out, "leaf"), ["leaf", "1", "25.0", "50", "25", "1"]);
}

#[test]
fn folded_stacks_are_exclusive_weights_per_path() {
    let t = write("calls_folded.rtd", &calls_trace(CountType::Delta));
    let (out, _) = run_elf("export", &t, &["-f", "folded"]);
    assert_eq!(
        out,
        "main 200\nmain;fib 210\nmain;fib;fib 90\nmain;leaf 60\n"
    );
    let (out, _) = run_elf("export", &t, &["-f", "folded", "-w", "calls"]);
    assert_eq!(out, "main;fib 1\nmain;fib;fib 2\nmain;leaf 1\n");
    let (_, err, ok) = hpmtrace(&["export", s(&t), "-f", "folded", "-w", "nosuch"]);
    assert!(!ok);
    assert!(
        err.contains("no counter named `nosuch`") && err.contains("cycles"),
        "{err}"
    );
}

#[test]
fn perfetto_json_has_nested_slices_and_counter_tracks() {
    let t = write("calls_perfetto.rtd", &calls_trace(CountType::Delta));
    let (out, _) = run_elf("export", &t, &["-f", "perfetto", "--tick-ns", "1000"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let slices: Vec<(String, String, f64)> = ev
        .iter()
        .filter(|e| e["ph"] == "B" || e["ph"] == "E")
        .map(|e| {
            (
                e["ph"].as_str().unwrap().into(),
                e["name"].as_str().unwrap_or("").into(),
                e["ts"].as_f64().unwrap(),
            )
        })
        .collect();
    // ts in microseconds = ticks since the first record (1 tick = 1 us here).
    // main runs from trace-on (tick 90) on.
    let expect = [
        ("B", "main", 0.0),
        ("B", "fib", 10.0),
        ("B", "fib", 20.0),
        ("E", "", 30.0),
        ("B", "fib", 40.0),
        ("E", "", 50.0),
        ("E", "", 60.0),
        ("B", "leaf", 70.0),
        ("E", "", 80.0),
        ("E", "", 80.0),
    ];
    let got: Vec<(&str, &str, f64)> = slices
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), *c))
        .collect();
    assert_eq!(got, expect);
    let last_cycles = ev
        .iter()
        .rfind(|e| e["ph"] == "C" && e["name"] == "core 0 cycles")
        .unwrap();
    assert_eq!(last_cycles["args"]["value"], 560);
    assert!(ev
        .iter()
        .any(|e| e["ph"] == "M" && e["args"]["name"] == "core 0"));
}

#[test]
fn speedscope_profile_is_balanced_and_weighted() {
    let p = prog();
    let t = write("calls_speedscope.rtd", &calls_trace(CountType::Delta));
    let profiles = speedscope(&[s(&t), "--elf", s(&p.elf), "-w", "instructions"]);
    let prof = &profiles[0];
    assert_eq!(prof.end, 280.0, "instructions from trace-on");
    let mut stack = Vec::new();
    let mut last = 0.0;
    for (kind, f, at) in &prof.events {
        assert!(*at >= last);
        last = *at;
        if kind == "O" {
            stack.push(f);
        } else {
            assert_eq!(stack.pop(), Some(f));
        }
    }
    assert!(stack.is_empty());
    let frames: Vec<&str> = prof.events.iter().map(|e| e.1.as_str()).collect();
    assert!(frames.contains(&"fib") && frames.contains(&"leaf") && frames.contains(&"main"));
}

/// One speedscope profile: name, end value, (type, frame name, at) events.
struct Profile {
    name: String,
    end: f64,
    events: Vec<(String, String, f64)>,
}

/// `hpmtrace export -f speedscope ARGS`, parsed; every profile evented.
fn speedscope(args: &[&str]) -> Vec<Profile> {
    let mut all = vec!["export", "-f", "speedscope"];
    all.extend_from_slice(args);
    let (out, err, ok) = hpmtrace(&all);
    assert!(ok, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let frames: Vec<&str> = doc["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    doc["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            assert_eq!(p["type"], "evented");
            Profile {
                name: p["name"].as_str().unwrap().to_string(),
                end: p["endValue"].as_f64().unwrap(),
                events: p["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| {
                        let frame = frames[e["frame"].as_u64().unwrap() as usize];
                        let kind = e["type"].as_str().unwrap().to_string();
                        (kind, frame.to_string(), e["at"].as_f64().unwrap())
                    })
                    .collect(),
            }
        })
        .collect()
}

#[test]
fn errors_name_byte_offsets_and_missing_files_say_what_to_do() {
    let mut bytes = calls_trace(CountType::Raw);
    let cut = bytes.len() - 3;
    bytes.truncate(cut);
    let t = write("truncated.rtd", &bytes);
    let (out, err, ok) = hpmtrace(&["decode", s(&t)]);
    assert!(ok, "decoding goes on: {err}");
    assert!(
        err.contains("byte offset") && err.contains("truncated"),
        "{err}"
    );
    assert!(out.contains("[Func Exit]"));
    let (_, err, ok) = hpmtrace(&["decode", "/nonexistent/trace.rtd"]);
    assert!(!ok);
    assert!(
        err.contains("cannot open trace /nonexistent/trace.rtd"),
        "{err}"
    );
    let (_, err, ok) = hpmtrace(&["decode", s(&t), "--channel", "40"]);
    assert!(!ok);
    assert!(err.contains("--channel"), "{err}");
    // Nothing on channel 5: nothing decoded, an error (exit status 1).
    let (_, err, ok) = hpmtrace(&["decode", s(&t), "--channel", "5"]);
    assert!(!ok);
    assert!(
        err.contains("no performance header found on ITC channel 5"),
        "{err}"
    );
}

/// `n` pseudo-random bytes (xorshift64, fixed seed).
fn noise(n: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

/// Every command and output format that reads a trace, without the trace.
const EVERY_COMMAND: [&[&str]; 9] = [
    &["decode", "-f", "perf"],
    &["decode", "-f", "csv"],
    &["decode", "-f", "json"],
    &["report", "--tree"],
    &["export", "-f", "perfetto"],
    &["export", "-f", "speedscope"],
    &["export", "-f", "folded"],
    &["export", "-f", "svg"],
    &["decode", "--single-thread"],
];

#[test]
fn a_file_without_a_performance_header_is_an_error() {
    let p = prog();
    let random = write("random.rtd", &noise(256 << 10));
    let empty = write("empty.rtd", &[]);
    // A wrong file: the program instead of its trace.
    for t in [&random, &empty, &p.elf] {
        for cmd in EVERY_COMMAND {
            let args: Vec<&str> = cmd.iter().copied().chain([s(t), "-q"]).collect();
            let out = Command::new(env!("CARGO_BIN_EXE_hpmtrace"))
                .args(&args)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            let want = format!(
                "hpmtrace: error: {}: no performance header found on ITC channel 6 (",
                s(t)
            );
            assert!(err.contains(&want), "{args:?}: {err}");
            assert!(err.contains("check --channel and --src-bits"), "{err}");
            // Outputs written at the end are not written; streamed ones
            // (decode, perfetto) may have begun.
            if !matches!(cmd, ["decode", ..] | [_, _, "perfetto"]) {
                assert!(out.stdout.is_empty(), "{args:?}: no report or export");
            }
        }
    }
    // Random bytes: the decoding errors are shown and counted in the error.
    let (_, err, _) = hpmtrace(&["decode", s(&random), "-q", "--max-errors", "3"]);
    assert_eq!(err.matches(": byte offset ").count(), 3, "{err}");
    let n: u64 = err
        .split(" on other channels, ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no error count: {err}"));
    assert!(n > 3, "{err}");
    // A header and no records is a trace (that traced nothing); only a
    // flame graph cannot be drawn from it.
    let t = write(
        "header_only.rtd",
        &Trace::on(CountType::Delta, [900, 450], 90).bytes(),
    );
    for cmd in EVERY_COMMAND {
        let args: Vec<&str> = cmd.iter().copied().chain([s(&t), "-q"]).collect();
        let (_, err, ok) = hpmtrace(&args);
        if cmd.contains(&"svg") {
            assert!(!ok && err.contains("nothing to draw"), "{err}");
        } else {
            assert!(ok && err.is_empty(), "{args:?}: {err}");
        }
    }
}

#[test]
fn a_damaged_trace_decodes_what_it_can_and_exits_0_with_the_error_count() {
    let p = prog();
    // Raw: decoding resumes at the next record. Two corrupted bytes
    // (reserved MSEO) in the records, the last record cut short.
    let mut bytes = calls_trace(CountType::Raw);
    let n = bytes.len();
    for at in [n / 3, 2 * n / 3] {
        bytes[at] = (bytes[at] & !3) | 0b10;
    }
    bytes.truncate(n - 3);
    let t = write("damaged.rtd", &bytes);
    for cmd in EVERY_COMMAND {
        let args: Vec<&str> = cmd
            .iter()
            .copied()
            .chain([s(&t), "-q", "--elf", s(&p.elf)])
            .collect();
        let (out, err, ok) = hpmtrace(&args);
        assert!(ok, "{args:?}: {err}");
        let shown = err.matches(": byte offset ").count();
        assert!(shown >= 3, "{args:?}: {err}");
        assert!(
            err.ends_with(&format!(
                "hpmtrace: warning: {shown} decoding errors in total\n"
            )),
            "{args:?}: {err}"
        );
        assert!(!out.is_empty(), "{args:?}");
        if cmd[0] == "report" {
            // Some records decoded, and the same error count.
            let first = out.lines().next().unwrap();
            assert!(
                first.ends_with(&format!(", {shown} decoding errors")),
                "{first}"
            );
            assert!(!first.starts_with("Trace: 0 records"), "{first}");
        }
    }
    // More errors than shown: the count says so.
    let (_, err) = hpmtrace_ok(&["decode", s(&t), "-q", "--max-errors", "1"]);
    assert_eq!(err.matches(": byte offset ").count(), 1, "{err}");
    assert!(
        err.contains("decoding errors in total (1 shown; raise --max-errors to see more)"),
        "{err}"
    );
}

#[test]
fn svg_flame_graph_renders_in_headless_chromium() {
    let p = prog();
    let t = write("calls_svg.rtd", &calls_trace(CountType::Delta));
    let svg = p.dir.join("flame.svg");
    run_elf("export", &t, &["-f", "svg", "-o", s(&svg)]);
    let profile = p
        .dir
        .join(format!("chromium-profile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&profile);
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", svg.display()))
        .output()
        .expect(
            "chromium is required for this test: run `cargo xtask setup` (Debian package chromium)",
        );
    let _ = std::fs::remove_dir_all(&profile);
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dom.contains("<svg"), "no svg in the DOM:\n{dom}");
    assert!(
        !dom.contains("parsererror") && !dom.contains("This page contains the following errors"),
        "{dom}"
    );
    // Frame titles carry inclusive counts.
    for frame in [
        "main (560 cycles",
        "fib (300 cycles",
        "fib (90 cycles",
        "leaf (60 cycles",
    ] {
        assert!(
            dom.contains(frame),
            "frame {frame} missing from the rendered DOM"
        );
    }
}

#[test]
fn cores_are_reported_separately() {
    let p = prog();
    let cfg = WriterConfig {
        src_bits: 1,
        ..WriterConfig::default()
    };
    // Core 0: the usual calls trace; core 1: main -> leaf.
    let mut core0 = Trace::on_core(cfg, 0, CountType::Delta, [900, 450], 90);
    write_calls(&mut core0, 0);
    let (m, l) = (p.main, p.leaf);
    let mut core1 = Trace::on_core(cfg, 1, CountType::Delta, [0, 0], 5);
    core1.record(RecordType::FuncEnter, [l, m], [100, 50], 10);
    core1.record(RecordType::FuncExit, [l, m], [130, 60], 20);
    let mut bytes = core1.bytes();
    bytes.extend_from_slice(&core0.bytes());
    let t = write("two_cores.rtd", &bytes);
    let (out, _) = run_elf("export", &t, &["--src-bits", "1", "-f", "folded"]);
    assert_eq!(
        out,
        "core 0;main 200\ncore 0;main;fib 210\ncore 0;main;fib;fib 90\ncore 0;main;leaf 60\n\
         core 1;main 100\ncore 1;main;leaf 30\n"
    );
    let (out, _) = hpmtrace_ok(&["decode", s(&t), "--src-bits", "1"]);
    assert!(
        out.contains(&format!(
            "[1] 10 [Func Enter at 0x{l:08x}] [Called From 0x{m:08x}]\n"
        )),
        "{out}"
    );
    assert!(out.contains(&format!(
        "[0] 170 [Func Exit] [Func at 0x{l:08x}] [Returning to 0x{m:08x}]\n"
    )));
    let (out, _) = run_elf("report", &t, &["--src-bits", "1"]);
    assert!(out.contains("2 cores"), "{out}");
    // leaf: 60 cycles on core 0 plus 30 on core 1.
    assert_eq!(row(&out, "leaf")[..4], ["leaf", "2", "90", "90"]);
    // speedscope: one profile per core, each core's events on its own.
    let profiles = speedscope(&[s(&t), "--elf", s(&p.elf), "--src-bits", "1"]);
    assert_eq!(profiles.len(), 2);
    assert_eq!(profiles[0].name, "core 0 (cycles)");
    assert_eq!(profiles[0].end, 560.0);
    assert_eq!(profiles[1].name, "core 1 (cycles)");
    assert_eq!(profiles[1].end, 130.0);
    // Core 1: main (made up: the trace starts inside it) from 0, leaf's
    // entry after 100 cycles, 30 cycles in leaf.
    let ev: Vec<(&str, &str, f64)> = profiles[1]
        .events
        .iter()
        .map(|(k, f, at)| (k.as_str(), f.as_str(), *at))
        .collect();
    assert_eq!(
        ev,
        [
            ("O", "main", 0.0),
            ("O", "leaf", 100.0),
            ("C", "leaf", 130.0),
            ("C", "main", 130.0)
        ]
    );
}

#[test]
fn decoding_on_a_second_thread_changes_nothing() {
    // 40,000 records: many hand-over batches and a partial last one.
    let p = prog();
    let (m, f) = (p.main, p.fib);
    // Raw: decoding resumes at the next record after damage.
    let mut tr = Trace::on(CountType::Raw, [900, 450], 90);
    let mut t = 100;
    for i in 0..20_000u64 {
        t += 7;
        let r = [1000 + 50 * i, 500 + 20 * i];
        tr.record(RecordType::FuncEnter, [f, m], r, t);
        tr.record(RecordType::FuncExit, [f, m], [r[0] + 9, r[1] + 4], t + 3);
    }
    let mut bytes = tr.bytes();
    // Damage along the way: errors must come out in the same places.
    for k in 1..30 {
        let at = k * bytes.len() / 31;
        bytes[at] ^= 0x26;
    }
    let t = write("threads.rtd", &bytes);
    for format in ["perf", "csv", "json"] {
        let one = hpmtrace(&["decode", "-f", format, "--single-thread", s(&t)]);
        let two = hpmtrace(&["decode", "-f", format, s(&t)]);
        assert!(one.2 && two.2);
        assert!(one.1.contains("byte offset"), "{}", one.1);
        assert_eq!(one, two, "{format}");
        let last = (1000 + 50 * 19_999 + 9).to_string();
        assert!(one.0.contains(&last), "{format}: the last record is kept");
    }
    let one = hpmtrace(&["report", "--single-thread", "--elf", s(&p.elf), s(&t)]);
    let two = hpmtrace(&["report", "--elf", s(&p.elf), s(&t)]);
    assert_eq!(one, two);
    // A reader that stops early (`| head`) stops the decoder: clean exit.
    let mut child = Command::new(env!("CARGO_BIN_EXE_hpmtrace"))
        .args(["decode", "-q", s(&t)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("error"),
        "{:?}",
        out
    );
}

#[test]
fn a_trace_nesting_deeper_than_any_stack_is_reported_not_a_crash() {
    // 100,000 entries and no exit (e.g. the exits were lost): recursive
    // walks of the call tree would overflow the thread's stack.
    const DEPTH: u64 = 100_000;
    let p = prog();
    let mut tr = Trace::on(CountType::Raw, [0, 0], 0);
    for i in 1..=DEPTH {
        tr.record(RecordType::FuncEnter, [p.fib, p.fib], [10 * i, i], i);
    }
    let t = write("deep.rtd", &tr.bytes());
    let (out, _) = hpmtrace_ok(&["export", s(&t), "-f", "folded", "-w", "calls", "-q"]);
    let lines: Vec<&str> = out.lines().collect();
    // The first entry's caller is a made-up frame (0 calls, no line);
    // then one line per depth down to the cap, the last carrying the rest.
    let max = 2048usize;
    assert_eq!(lines.len(), max - 1);
    let (path, weight) = lines[max - 2].rsplit_once(' ').unwrap();
    assert_eq!(path.split(';').count(), max);
    assert_eq!(weight.parse::<u64>().unwrap(), DEPTH - (max as u64 - 2));
    let (out, _) = hpmtrace_ok(&["report", s(&t), "--tree", "--depth", "1024", "-q"]);
    let tree: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("Call tree"))
        .collect();
    assert_eq!(tree.len(), 1 + 1025, "levels 0 (the core) to 1024");
    assert!(
        tree[1025].starts_with(&" ".repeat(2048)),
        "{}",
        &tree[1025][..2100]
    );
}
