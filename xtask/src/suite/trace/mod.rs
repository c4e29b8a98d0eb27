//! hpmtrace's tests run by `cargo xtask test`: SiFive's fib example on
//! the host against the installed C API (software counters), on bare metal
//! (`baremetal`), and in the Linux guest on rvpmu-fw (hardware counters,
//! one boot; `linux`); `fibcheck` checks a fib trace against expectations
//! derived from the recursion and from fib's disassembly.

pub mod baremetal;
mod fibcheck;
mod linux;

use crate::build::hpmtrace::{build_cli, install_for, install_host};
use crate::host::{cargo, root, run, step};
use crate::host::{BARE_TARGET, LINUX_TARGET};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `cargo xtask test --bare-metal-only`: hpmtrace's bare-metal checks
/// alone.
pub fn bare_metal() -> Result<()> {
    let cli = build_cli()?;
    baremetal::test(&cli)?;
    step("hpmtrace bare-metal checks passed");
    Ok(())
}

/// SiFive's fib example against the *installed* C API, run on the host
/// with software counters, its trace decoded and checked. (The unit,
/// golden and round-trip tests run in the workspace `cargo test` step.)
pub fn test() -> Result<()> {
    step(&format!("hpmtrace: no_std core builds for {BARE_TARGET}"));
    run(cargo().args([
        "rustc",
        "-p",
        "hpmtrace",
        "--lib",
        "--crate-type",
        "rlib",
        "--no-default-features",
        "--target",
        BARE_TARGET,
    ]))?;
    step("hpmtrace: SiFive's fib example against the installed C API");
    let dir = root().join("target/xtask-trace");
    let _ = std::fs::remove_dir_all(&dir);
    install_host(&dir.join("prefix"))?;
    let exe = dir.join("fib");
    run(Command::new("gcc")
        .args(["-O2", "-finstrument-functions", "-I"])
        .arg(dir.join("prefix/include"))
        .arg(fib_c_path())
        .arg(dir.join("prefix/lib/libhpmtrace.a"))
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe))?;
    let out = Command::new(&exe)
        .current_dir(&dir)
        .env("HPMTRACE_SW_FALLBACK", "1")
        .env("HPMTRACE_BUFFER_BYTES", "32M")
        .output()
        .context("cannot run fib")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !stdout.contains("fib(20) = 6765") {
        bail!(
            "fib failed ({}): {stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    check_fib_trace(&dir.join("trace.rtd"))?;
    eprintln!("hpmtrace: fib trace OK");
    let cli = build_cli()?;
    check_pie_symbols(&cli, &dir, &exe)?;
    baremetal::test(&cli)?;
    guest(&cli)
}

/// gcc builds position-independent executables by default, and the trace
/// does not record where the program was loaded: the CLI must infer the
/// load bias and name every fib call.
fn check_pie_symbols(cli: &Path, dir: &Path, exe: &Path) -> Result<()> {
    step("hpmtrace: the host fib (a PIE) symbolized by the CLI");
    let src_bits = FIB_SRC_BITS.to_string();
    let out = Command::new(cli)
        .current_dir(dir)
        .args([
            "report",
            "trace.rtd",
            "--src-bits",
            &src_bits,
            "--counters",
            "task-clock",
            "--elf",
        ])
        .arg(exe)
        .output()
        .context("cannot run the hpmtrace CLI")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let fib_calls = stdout.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        (w.next() == Some("fib")).then(|| w.next().and_then(|c| c.parse::<u64>().ok()))?
    });
    // fib(20) makes 2 F(21) - 1 calls.
    if !out.status.success()
        || !stderr.contains("position-independent: load bias")
        || fib_calls != Some(21891)
    {
        bail!("the PIE fib was not symbolized (want fib with 21891 calls and an inferred load bias):\n{stdout}{stderr}");
    }
    eprintln!("    ok: fib resolved, 21891 calls; {}", stderr.trim());
    Ok(())
}

/// The same example in the Linux guest with hardware counters: the C API
/// cross-built for riscv64 Linux, fib.c compiled static with
/// `-finstrument-functions`, twice: as written (`/fib`, whose events QEMU's
/// PMU cannot count are left out by default) and with its event list cut
/// to what QEMU's PMU counts (`/fib-hw`); run and checked in one boot by
/// [`linux`].
fn guest(cli: &Path) -> Result<()> {
    let target = LINUX_TARGET;
    step("hpmtrace: SiFive's fib example for the riscv64 Linux guest");
    let dir = root().join("target/xtask-trace/riscv64");
    let _ = std::fs::remove_dir_all(&dir);
    install_for(&dir.join("prefix"), target)?;
    let fib_c = fib_c_path();
    let text = fib_c_source()?;
    let hw_src = dir.join("fib_hw.c");
    std::fs::write(&hw_src, with_hardware_events(&text)?)?;
    let fib = dir.join("fib");
    let fib_hw = dir.join("fib-hw");
    for (src, exe) in [(&fib_c, &fib), (&hw_src, &fib_hw)] {
        run(Command::new("riscv64-linux-gnu-gcc")
            .args(["-O2", "-static", "-finstrument-functions", "-I"])
            .arg(dir.join("prefix/include"))
            .arg(src)
            .arg(dir.join("prefix/lib/libhpmtrace.a"))
            .args(["-lpthread", "-ldl", "-lm", "-o"])
            .arg(exe)
            // glibc's warnings about getpwuid_r/getaddrinfo in a static
            // link (std's unused home_dir/lookup_host) are noise here.
            .stderr(std::process::Stdio::null()))
        .with_context(|| format!("riscv64-linux-gnu-gcc could not build {} against the cross-built C API (run `cargo xtask setup`)", src.display()))?;
    }
    use linux::Program;
    linux::run(
        &[
            Program {
                guest_path: "/fib-hw",
                elf: &fib_hw,
                events: &FIB_EVENTS[..3],
            },
            Program {
                guest_path: "/fib",
                elf: &fib,
                events: &FIB_EVENTS,
            },
        ],
        cli,
        &dir,
    )
}

/// SiFive's fib example, the program every trace suite builds.
fn fib_c_path() -> PathBuf {
    root().join("crates/hpmtrace/tests/c/fib.c")
}

/// SiFive's fib example's source text.
fn fib_c_source() -> Result<String> {
    let p = fib_c_path();
    std::fs::read_to_string(&p).with_context(|| format!("cannot read {}", p.display()))
}

/// SiFive's fib example's `perfCntrList` (crates/hpmtrace/tests/c/fib.c).
const FIB_EVENTS: [hpmtrace::format::Event; 7] = {
    use hpmtrace::format::{hw, Event};
    [
        Event::General {
            code: hw::CPU_CYCLES,
        },
        Event::General {
            code: hw::TIMESTAMP,
        },
        Event::General {
            code: hw::INSTRUCTIONS,
        },
        Event::General {
            code: hw::CACHE_MISSES,
        },
        Event::General {
            code: hw::BRANCH_INSTRUCTIONS,
        },
        Event::General {
            code: hw::BRANCH_MISSES,
        },
        Event::Raw {
            event_data: 2 << 16,
        },
    ]
};

/// SiFive's fib example with its `perfCntrList` replaced by the events QEMU
/// virt's PMU counts: the first three of fib.c's list (HW_CPU_CYCLES,
/// HW_TIMESTAMP, HW_INSTRUCTIONS). The other four have no counter there
/// (cache misses and branches are not in QEMU's event map; raw event
/// 0x20000 opens but never gets a counter, and would keep the whole group
/// from counting). Everything else of the example stays as written.
fn with_hardware_events(fib_c: &str) -> Result<String> {
    const START: &str = "perfEvent perfCntrList[] = {";
    let a = fib_c
        .find(START)
        .context("fib.c: no `perfEvent perfCntrList[] = {` to replace")?;
    let b = a
        + fib_c[a..]
            .find("\n};")
            .context("fib.c: perfCntrList has no closing `};`")?
        + 3;
    let list = "perfEvent perfCntrList[] = {\n\
        \t{ .type = perfEventHWGeneral, .code = HW_CPU_CYCLES, .event_data = 0 },\n\
        \t{ .type = perfEventHWGeneral, .code = HW_TIMESTAMP, .event_data = 0 },\n\
        \t{ .type = perfEventHWGeneral, .code = HW_INSTRUCTIONS, .event_data = 0 },\n\
        };";
    Ok(format!(
        "/* Generated by xtask from crates/hpmtrace/tests/c/fib.c: event list cut to QEMU virt's PMU. */\n{}{list}{}",
        &fib_c[..a],
        &fib_c[b..]
    ))
}

/// The SRC field width of SiFive's fib traces: its perfInit(2, 1) asks
/// for 2 sources, 1 bit.
pub const FIB_SRC_BITS: u8 = 1;

/// The channel SiFive's fib writes (its perfFuncEntryExitInit argument).
pub const FIB_CHANNEL: u8 = 6;

/// Decoder settings for SiFive's fib traces (host and guest).
pub fn fib_decode_config() -> hpmtrace::decode::DecodeConfig {
    hpmtrace::decode::DecodeConfig {
        channel: FIB_CHANNEL,
        nexus: hpmtrace::nexus::NexusConfig {
            src_bits: FIB_SRC_BITS,
            timestamp_bits: hpmtrace::nexus::DEFAULT_TIMESTAMP_BITS,
        },
    }
}

fn check_fib_trace(path: &Path) -> Result<()> {
    use hpmtrace::decode::{decode_stream, Output};
    use hpmtrace::format::RecordType;
    let bytes =
        std::fs::read(path).with_context(|| format!("{} was not written", path.display()))?;
    let cfg = fib_decode_config();
    let mut headers = 0;
    let mut stack = Vec::new();
    let mut enters = 0u64;
    let mut problems = Vec::new();
    decode_stream(
        &bytes[..],
        cfg,
        &mut |o| match o {
            Output::Header(_) => headers += 1,
            Output::Record(r) => match r.kind {
                RecordType::FuncEnter => {
                    enters += 1;
                    stack.push(r.addr);
                }
                RecordType::FuncExit => {
                    if stack.pop() != Some(r.addr) {
                        problems.push(format!("unbalanced exit at byte {}", r.offset));
                    }
                }
                k => problems.push(format!("unexpected {k:?} record")),
            },
            Output::Error(e) => problems.push(e.to_string()),
        },
        &mut |_| {},
    );
    if headers != 1 || enters != 21891 || !stack.is_empty() || !problems.is_empty() {
        bail!(
            "fib trace wrong: {headers} headers, {enters} enters (want 21891), {} open calls, problems: {:?}",
            stack.len(),
            &problems[..problems.len().min(5)]
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The trace tests on their own (host fib, then the guest boot; needs
    /// QEMU and the cached kernel):
    /// `cargo test -p xtask hpmtrace_fib -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn hpmtrace_fib() {
        super::test().unwrap();
    }

    #[test]
    fn hardware_event_list_replaces_the_fib_list_only() {
        let fib_c = super::fib_c_source().unwrap();
        let hw = super::with_hardware_events(&fib_c).unwrap();
        assert!(hw.contains("HW_CPU_CYCLES") && hw.contains("HW_INSTRUCTIONS"));
        assert!(!hw.contains("HW_CACHE_MISSES") && !hw.contains("perfEventHWRaw"));
        assert!(hw.contains("unsigned long fib(unsigned long f)"));
        assert!(hw.contains("perfFuncEntryExitInit(perfCntrList"));
        assert!(super::with_hardware_events("int main() {}").is_err());
    }

    #[test]
    fn fib_events_are_the_list_of_fib_c() {
        use hpmtrace::format::Event;
        let fib_c = super::fib_c_source().unwrap();
        let list = &fib_c[fib_c.find("perfCntrList[] = {").unwrap()..];
        let list = &list[..list.find("\n};").unwrap()];
        // The `.code = NAME` of each entry, in order.
        let codes: Vec<&str> = list
            .split(".code = ")
            .skip(1)
            .map(|t| {
                t.split(|c: char| c == ',' || c.is_whitespace())
                    .next()
                    .unwrap()
            })
            .collect();
        let names: Vec<String> = super::FIB_EVENTS
            .iter()
            .map(|e| match e {
                Event::General { code } => match *code {
                    1 => "HW_CPU_CYCLES".to_string(),
                    2 => "HW_INSTRUCTIONS".to_string(),
                    4 => "HW_CACHE_MISSES".to_string(),
                    5 => "HW_BRANCH_INSTRUCTIONS".to_string(),
                    6 => "HW_BRANCH_MISSES".to_string(),
                    0x80 => "HW_TIMESTAMP".to_string(),
                    c => format!("code {c}"),
                },
                Event::Raw { event_data } => {
                    assert_eq!(*event_data, 2 << 16);
                    assert!(list.contains(".event_data = (2 << 16) | (0 << 0)"));
                    "0".to_string()
                }
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(codes, names);
        assert_eq!(list.matches("perfEventHWRaw").count(), 1);
    }
}
