//! The guest half of hpmtrace's test (called by `super::test`): the
//! SiFive's fib example, cross-compiled with `-finstrument-functions` against
//! hpmtrace's C API, runs as `/fib` in the Linux guest on rvpmu-fw (one
//! hart, icount) with the hardware cycles and instructions counters. /init
//! (`rvpmu.mode=trace`, crates/e2e-init/src/guest/trace.rs) counts the
//! whole process with perf on its own and copies the `.rtd` back over the
//! console; here it is decoded with the `hpmtrace` CLI (symbolized with the
//! fib ELF) and the library, and checked against expectations derived from
//! the recursion itself and from fib's disassembly.

use super::fib_decode_config;
use super::fibcheck::{self, Checks, FibPaths};
use crate::build::dt::Chosen;
use crate::build::{firmware, initramfs, kernel};
use crate::guest::linux::Guest;
use crate::host::step;
use crate::suite::linux::kernel_complaints;
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::Path;

/// Wall-clock limit of the boot (it takes well under a minute).
const TIMEOUT_S: u64 = 240;
/// One instrumented program for the guest.
pub struct Program<'a> {
    /// Path in the initramfs (the guest's /init runs `/fib-hw`, `/fib`).
    pub guest_path: &'a str,
    /// The unstripped ELF (symbols for the decoder, disassembly).
    pub elf: &'a Path,
    /// Its `perfCntrList`, in order.
    pub events: &'a [hpmtrace::format::Event],
}

/// Boot the guest once with the `programs` (stripped copies) in the
/// initramfs, decode the trace each writes with `cli` (the `hpmtrace`
/// binary) and check it. Work files go to `dir`.
pub fn run(programs: &[Program], cli: &Path, dir: &Path) -> Result<()> {
    let mut paths = Vec::new();
    for p in programs {
        let fp = FibPaths::derive(p.elf)?;
        step(&format!(
            "{}: fib's disassembly gives prologue {} instructions, leaf f=0 {}, leaf f=1 {}, inner call sites {:#x} {:#x}",
            p.guest_path, fp.prologue, fp.leaf0, fp.leaf1, fp.site1, fp.site2
        ));
        paths.push(fp);
    }
    let files: Vec<(&str, &Path)> = programs.iter().map(|p| (p.guest_path, p.elf)).collect();
    let firmware = firmware::ours("rvpmu-fw")?;
    let version = kernel::Version::V7_2;
    let kernel = kernel::build(version)?;
    let initramfs = initramfs::build_with(&kernel, &dir.join("initramfs"), &files)?;
    let guest = Guest {
        version,
        kernel,
        initramfs,
    };
    step(&format!(
        "hpmtrace in the guest: {} on {} ({version}, 1 hart, icount), rvpmu.mode=trace",
        programs
            .iter()
            .map(|p| p.guest_path)
            .collect::<Vec<_>>()
            .join(", "),
        firmware.name
    ));
    let out = guest.boot(&firmware, 1, Chosen::NONE, "rvpmu.mode=trace", TIMEOUT_S)?;
    let log = dir.join("console.log");
    std::fs::write(&log, &out.console)?;
    println!("  info  guest console saved to {}", log.display());
    let mut c = Checks {
        label: "trace".into(),
        ..Checks::default()
    };
    let complaints = kernel_complaints(&out.console);
    let finished =
        !out.timed_out && out.done.as_deref() == Some("ok") && out.bad_results.is_empty();
    c.check(
        "guest boots, /init finishes, no kernel warning",
        finished && complaints.is_empty(),
        "RVPMU-DONE ok, every result line parses, no firmware/kernel line with warn/error/fail/...",
        &if out.timed_out {
            format!("timed out after {TIMEOUT_S} s")
        } else {
            format!(
                "/init: {:?}; unparsable result lines: {}; complaints: {complaints:?}; {:.1} s wall",
                out.done,
                out.bad_results.len(),
                out.wall.as_secs_f64()
            )
        },
    );
    let results = out.scenario("trace");
    if let Some(r) = results.first() {
        println!(
            "  info  [trace] fib.c's events on this machine, each alone: {}",
            r["fib_events"]["alone"]
        );
        println!(
            "  info  [trace] ... and as one group: {}",
            r["fib_events"]["group"]
        );
    }
    for (p, fp) in programs.iter().zip(&paths) {
        c.label = format!("trace {}", p.guest_path);
        let Some(r) = results.iter().find(|r| r["program"] == p.guest_path) else {
            c.fail(
                "the guest ran the program",
                "an RVPMU-RESULT for it",
                "none (see the console log)",
            );
            continue;
        };
        let pdir = dir.join(format!("{}.out", p.guest_path.trim_start_matches('/')));
        std::fs::create_dir_all(&pdir)?;
        let result = guest_checks(&mut c, r, &out.console, p, cli, &pdir, fp);
        if let Err(e) = result {
            c.fail("trace decoded and analysed", "no error", &format!("{e:#}"));
        }
    }
    println!(
        "hpmtrace guest: {} passed, {} failed ({:.1} s wall for the boot)",
        c.passed,
        c.failed.len(),
        out.wall.as_secs_f64()
    );
    if !c.failed.is_empty() {
        bail!("hpmtrace guest checks failed:\n  {}", c.failed.join("\n  "));
    }
    Ok(())
}

fn guest_checks(
    c: &mut Checks,
    r: &Value,
    console: &str,
    program: &Program,
    cli: &Path,
    dir: &Path,
    paths: &FibPaths,
) -> Result<()> {
    // The program's own answer, against fib computed here.
    let stdout = r["stdout"].as_str().unwrap_or("");
    let parsed = fibcheck::parse_fib_line(stdout);
    let fib = fibcheck::fib;
    let (n, value) = parsed.unwrap_or((0, 0));
    c.check(
        "the program exits 0 and prints fib(n) correctly",
        r["exit"] == 0 && parsed.is_some() && value == fib(n),
        "exit 0 and \"fib(n) = F(n)\"",
        &format!(
            "exit {}, output {stdout:?} (F({n}) = {})",
            r["exit"],
            fib(n)
        ),
    );
    if parsed.is_none() {
        bail!("no fib(n) line from /fib, nothing to compare the trace with");
    }
    // The trace bytes, as copied over the console.
    let fib_elf = program.elf;
    // hpmtrace::dump::parse checks each dump's length and checksum.
    let dumps = hpmtrace::dump::parse(console).context("the trace copy on the console")?;
    let bytes = dumps
        .into_iter()
        .find(|d| d.name == program.guest_path)
        .with_context(|| {
            format!(
                "the guest console has no trace copy of {}",
                program.guest_path
            )
        })?
        .data;
    let hash = hpmtrace::dump::fnv1a64(&bytes);
    let guest_hash = r["rtd_fnv1a64"].as_str().unwrap_or("");
    c.check(
        "trace copied out intact",
        r["rtd_bytes"] == bytes.len() as u64 && guest_hash == format!("{hash:016x}"),
        &format!(
            "the guest's result: {} bytes, FNV-1a {guest_hash}",
            r["rtd_bytes"]
        ),
        &format!(
            "{} bytes, FNV-1a {hash:016x} (length and checksum of the dump checked)",
            bytes.len()
        ),
    );
    let rtd = dir.join("trace.rtd");
    std::fs::write(&rtd, &bytes)?;

    let t = fibcheck::check_trace(
        c,
        &fibcheck::Trace {
            bytes: &bytes,
            rtd: &rtd,
            elf: fib_elf,
            n,
            cli,
            dir,
            decode: fib_decode_config(),
            // The Linux library names the user counter CSRs of its events.
            csrs: Some((0xc00, 0xc02)),
        },
    )?;
    // Without HPMTRACE_SW_FALLBACK an event the machine cannot count is
    // left out (and named on stderr), never replaced by a Linux software
    // event: the trace stays readable by SiFive's decoder.
    let header = t.header.as_ref().map(|h| h.counters);
    let names: Vec<String> = t
        .header
        .as_ref()
        .map(|h| {
            h.iter()
                .map(|(i, d)| format!("{i}:{:?}", d.event))
                .collect()
        })
        .unwrap_or_default();
    let sifive_types = header.is_some_and(|h| {
        h.iter()
            .flatten()
            .all(|d| !matches!(d.event, hpmtrace::format::Event::LinuxSoftware { .. }))
    });
    c.check(
        "the header keeps to SiFive's event types (0 general, 1 cache, 2 raw) that SiFive's decoder reads",
        sifive_types,
        "no type-16 (Linux software) counter",
        &format!("counters [{}]", names.join(", ")),
    );
    let slots = hpmtrace::counters::assign_slots(program.events)
        .map_err(|e| anyhow::anyhow!("the program's event list: {e:?}"))?;
    let mut left_out = Vec::new();
    let mut unaccounted = Vec::new();
    for (i, e) in program.events.iter().enumerate() {
        let counted = header.is_some_and(|h| h[slots[i] as usize].is_some_and(|d| d.event == *e));
        let named = stdout.contains(&format!("event {i} ({e:?}) left out of the trace"));
        if !counted {
            left_out.push(format!("{i}:{e:?}"));
        }
        if counted == named {
            unaccounted.push(format!(
                "{i}:{e:?} (counted {counted}, named as left out {named})"
            ));
        }
    }
    c.check(
        "each event of the program's list is counted in its slot, or left out and named on stderr",
        unaccounted.is_empty(),
        "counted xor \"hpmtrace: event i (...) left out of the trace\"",
        &if unaccounted.is_empty() {
            format!("left out: [{}]", left_out.join(", "))
        } else {
            format!("neither or both: [{}]", unaccounted.join(", "))
        },
    );
    let records = &t.records;
    if !records.is_empty() && t.zero_deltas == records.len() {
        // Name the likely cause from /init's probe of fib.c's events.
        let never: Vec<&str> = r["fib_events"]["alone"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["running"] == 0 && e["error"].is_null())
            .filter_map(|e| e["name"].as_str())
            .collect();
        if !never.is_empty() {
            println!(
                "  cause [{}] no hardware count at all: {never:?} opens with perf_event_open but never gets a counter on this machine (probe: running 0 ns); \
                 in one group with cycles and instructions it keeps the whole group from counting, and the library reads zeros without noticing \
                 (library fix: treat an event that never runs like one that fails to open; see e2e/NOTES.md)",
                c.label
            );
        }
    }
    let (sum_c, sum_i) = (t.sum_cycles, t.sum_instructions);
    let (tree, paths) = (&t.tree, paths);
    let want_calls = fibcheck::calls(n);

    // Against fib's own code and two clocks the library does not count
    // with: the trace's timestamps (`rdtime`) and /init's task-clock of the
    // whole process. Under icount shift=0 a nanosecond is one instruction
    // of any privilege mode, so user instructions can never exceed them.
    let fib_own = tree.fib_instructions(paths);
    let task_ns = r["process"]["task_clock_ns"].as_u64().unwrap_or(0);
    let timebase = r["timebase_hz"].as_u64().unwrap_or(0);
    let ns_per_tick = 1_000_000_000u64.checked_div(timebase).unwrap_or(0);
    let span_ns = match (
        records.first().and_then(|r| r.timestamp),
        records.last().and_then(|r| r.timestamp),
    ) {
        (Some(a), Some(b)) => b.saturating_sub(a) * ns_per_tick,
        _ => 0,
    };
    let user_in_span: u64 = records.iter().skip(1).map(|r| r.instructions.delta).sum();
    c.check(
        "traced instructions: at least fib's own code, at most the instructions the clocks allow",
        fib_own > 0
            && fib_own <= sum_i
            && sum_c <= task_ns
            && timebase > 0
            && 1_000_000_000 % timebase == 0
            && user_in_span <= span_ns + ns_per_tick,
        &format!(
            "{fib_own} (fib's code on its {want_calls} calls, from the disassembly) <= traced; traced cycles <= /fib's task-clock ns; instructions after the first record <= timestamp span x {ns_per_tick} ns/tick (+1 tick)"
        ),
        &format!(
            "traced instructions {sum_i} ({user_in_span} after the first record), cycles {sum_c}; task-clock {task_ns} ns; timestamp span {span_ns} ns (timebase {timebase} Hz)"
        ),
    );

    // How the library read its counters: what the timestamps saw beyond
    // the user instructions is kernel and firmware time between records.
    let gaps = records.len().saturating_sub(1).max(1) as f64;
    let other_per_record = span_ns.saturating_sub(user_in_span) as f64 / gaps;
    let path = if other_per_record > 100.0 {
        "read() system call per record"
    } else {
        "user-space counter reads (no system call per record)"
    };
    println!(
        "  info  [{}] counter read path: {path} (kernel+firmware time between records: {other_per_record:.0} ns = instructions per record); kernel.perf_user_access = {}, hardware cycles:u user-readable: {}",
        c.label,
        r["perf_user_access"],
        r.get("user_readable_probe").unwrap_or(&r["user_readable_probe_error"]),
    );
    Ok(())
}
