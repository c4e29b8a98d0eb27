//! hpmtrace on bare metal, the seed's own mode: the bare-metal
//! `libhpmtrace.a` (riscv64gc-unknown-none-elf, feature `bare-capi`), C
//! programs linked with it and with a small S-mode runtime
//! (`crates/hpmtrace/tests/bare`: entry, trap vector, SBI console, HSM),
//! built with Debian's `riscv64-linux-gnu-gcc -ffreestanding` (already
//! the project's guest compiler: no other toolchain to install, and the
//! programs need no libc), run as rvpmu-fw's `-kernel` payload under QEMU
//! icount. Each program's trace comes back over the console
//! (`perfWriteTrace` -> `hpmtrace::dump`) and is checked:
//! - the seed's fib example (its include lines swapped for the bare-metal
//!   headers, its buffer enlarged): balance, nesting, call tree and
//!   instructions per call against the disassembly (crate::fibcheck); the
//!   events QEMU cannot count are left out of the header, each named;
//! - a timer-sampling program: samples = run time / interval +-1, every
//!   PC inside the sampled loop;
//! - four harts tracing fib at once, each with its own SRC and buffer.

use crate::fibcheck::{self, Checks};
use crate::util::{cargo, root, run, run_captured, step};
use anyhow::{bail, Context, Result};
use hpmtrace::decode::{decode_stream, DecodeConfig, Output};
use hpmtrace::format::{Event, RecordType};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const TARGET: &str = "riscv64gc-unknown-none-elf";
/// The test build's pool (PERF_MEM_POOL_SIZE): fib(20)'s whole trace with
/// cycles, timestamp and instructions is 1.6 MB.
const TEST_POOL: &str = "16M";
/// The buffer the test's copy of the seed's fib asks for instead of 32K.
const FIB_BUFFER: &str = "8*1024*1024";
/// Channel all programs write (the seed's 6).
const CHANNEL: u8 = 6;
/// QEMU's wall-clock limit per run (each takes a few seconds).
const TIMEOUT: Duration = Duration::from_secs(120);
const CFLAGS: &[&str] = &[
    "-march=rv64gc",
    "-mabi=lp64d",
    "-mcmodel=medany",
    "-ffreestanding",
    "-fno-builtin",
    "-fno-pic",
    "-fno-stack-protector",
    "-O2",
    "-g",
];

fn sources() -> PathBuf {
    root().join("crates/hpmtrace/tests/bare")
}

/// The privilege mode a program and its library run in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// S-mode on an SBI firmware (rvpmu-fw): `-kernel`.
    Supervisor,
    /// M-mode on the bare machine: the program is the `-bios`.
    Machine,
}

impl Mode {
    fn feature(self) -> &'static str {
        match self {
            Mode::Supervisor => "bare-capi",
            Mode::Machine => "bare-machine",
        }
    }
    fn name(self) -> &'static str {
        match self {
            Mode::Supervisor => "S",
            Mode::Machine => "M",
        }
    }
}

/// Build the bare-metal library for `mode` (pool of `pool` bytes, default
/// 256K) and install it with the headers into `dir`. Test builds use
/// target directories of their own, so neither setting rebuilds another.
pub fn install(dir: &Path, mode: Mode, pool: Option<&str>) -> Result<()> {
    let mut cmd = cargo();
    let suffix = match mode {
        Mode::Supervisor => "",
        Mode::Machine => "-m",
    };
    let target_dir = match pool {
        Some(p) => {
            cmd.env("HPMTRACE_POOL_BYTES", p);
            root().join(format!("target/bare-test{suffix}"))
        }
        None => {
            cmd.env_remove("HPMTRACE_POOL_BYTES");
            root().join(format!("target/bare{suffix}"))
        }
    };
    crate::trace::install_lib(
        dir,
        &mut cmd,
        Some(TARGET),
        &target_dir,
        &["--no-default-features", "--features", mode.feature()],
    )
}

/// One mode's library, installed, and where its programs go.
struct Build {
    mode: Mode,
    prefix: PathBuf,
    dir: PathBuf,
    /// The firmware S-mode programs run on.
    fw: PathBuf,
}

impl Build {
    fn new(mode: Mode, dir: PathBuf) -> Result<Build> {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let prefix = dir.join("prefix");
        install(&prefix, mode, Some(TEST_POOL))?;
        Ok(Build {
            mode,
            prefix,
            dir,
            fw: crate::firmware::build()?,
        })
    }

    /// Compile and link one program: `srcs` with the runtime and the
    /// library; `instrument` adds -finstrument-functions to the program's
    /// own sources (never to the runtime).
    fn link(&self, name: &str, srcs: &[PathBuf], instrument: bool) -> Result<PathBuf> {
        let gcc = || {
            let mut c = Command::new("riscv64-linux-gnu-gcc");
            c.args(CFLAGS)
                .arg("-I")
                .arg(self.prefix.join("include"))
                .arg("-I")
                .arg(sources());
            if self.mode == Mode::Machine {
                c.arg("-DMMODE");
            }
            c
        };
        let mut objs = Vec::new();
        for (src, inst) in [
            (sources().join("crt0.S"), false),
            (sources().join("rt.c"), false),
        ]
        .into_iter()
        .chain(srcs.iter().map(|s| (s.clone(), instrument)))
        {
            let o = self.dir.join(format!(
                "{name}-{}.o",
                src.file_stem().unwrap().to_string_lossy()
            ));
            let mut c = gcc();
            if inst {
                c.arg("-finstrument-functions");
            }
            run(c.arg("-c").arg(&src).arg("-o").arg(&o)).with_context(|| {
                format!(
                    "riscv64-linux-gnu-gcc could not compile {} (run `cargo xtask setup`)",
                    src.display()
                )
            })?;
            objs.push(o);
        }
        let elf = self.dir.join(format!("{name}.elf"));
        let mut c = gcc();
        c.args([
            "-nostdlib",
            "-static",
            "-no-pie",
            "-Wl,--build-id=none",
            "-Wl,--no-warn-rwx-segments",
            "-Wl,--gc-sections",
        ]);
        if self.mode == Mode::Machine {
            // The -bios address.
            c.arg("-Wl,--defsym=rt_origin=0x80000000");
        }
        run(c
            .arg("-T")
            .arg(sources().join("link.ld"))
            .args(&objs)
            .arg(self.prefix.join("lib/libhpmtrace.a"))
            .arg("-lgcc")
            .arg("-o")
            .arg(&elf))?;
        Ok(elf)
    }

    /// Run `elf` with `smp` harts under icount (on rvpmu-fw in S-mode, as
    /// the firmware in M-mode): its console, once it powered off cleanly.
    fn boot(&self, elf: &Path, smp: u32) -> Result<String> {
        let mut q = crate::qemu::Qemu::virt(smp);
        match self.mode {
            Mode::Supervisor => {
                q.bios = Some(self.fw.clone());
                q.kernel = Some(elf.to_path_buf());
            }
            Mode::Machine => q.bios = Some(elf.to_path_buf()),
        }
        let r = run_captured(&mut q.command(), TIMEOUT, None)?;
        let code = r.status.and_then(|s| s.code());
        if code != Some(crate::firmware::exit::POWER_OFF) {
            bail!(
                "{} did not power off cleanly: {}\n{}",
                elf.display(),
                crate::firmware::exit::describe(code),
                tail(&r.stdout)
            );
        }
        Ok(r.stdout)
    }
}

/// The seed's fib example for bare metal: "The bare-metal version is
/// similar": its two include lines name the bare-metal headers, and its
/// 32K buffer becomes [`FIB_BUFFER`] so the whole of fib(20) fits.
fn with_bare_metal(seed: &str) -> Result<String> {
    for needle in ["sifive_linux_trace.h", "sifive_linux_perf.h", "32*1024"] {
        if !seed.contains(needle) {
            bail!("fib.c: no `{needle}` to replace");
        }
    }
    Ok(format!(
        "/* Generated by xtask from crates/hpmtrace/tests/c/fib.c: bare-metal headers, {FIB_BUFFER}-byte buffer. */\n{}",
        seed.replace("sifive_linux_trace.h", "sifive_trace.h")
            .replace("sifive_linux_perf.h", "sifive_bare_perf.h")
            .replace("32*1024", FIB_BUFFER)
    ))
}

/// The console without the dumps' hex lines, last 30 lines.
fn tail(console: &str) -> String {
    let lines: Vec<&str> = console
        .lines()
        .filter(|l| !(l.len() > 16 && l.bytes().all(|b| b.is_ascii_hexdigit())))
        .collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// The dumps named `name` on `console`, concatenated in core order (what
/// `hpmtrace import` writes), saved as `out`.
fn import(console: &str, name: &str, out: &Path) -> Result<Vec<u8>> {
    let mut dumps: Vec<_> = hpmtrace::dump::parse(console)
        .context("the trace dump on the console")?
        .into_iter()
        .filter(|d| d.name == name)
        .collect();
    if dumps.is_empty() {
        bail!(
            "no trace dump named {name} on the console:\n{}",
            tail(console)
        );
    }
    dumps.sort_by_key(|d| d.core);
    let bytes: Vec<u8> = dumps.iter().flat_map(|d| d.data.iter().copied()).collect();
    std::fs::write(out, &bytes)?;
    Ok(bytes)
}

fn decode_config(src_bits: u8) -> DecodeConfig {
    DecodeConfig {
        channel: CHANNEL,
        nexus: hpmtrace::nexus::NexusConfig {
            src_bits,
            timestamp_bits: hpmtrace::wire::DEFAULT_TIMESTAMP_BITS,
        },
    }
}

/// Build the library and the programs for both modes, run them, check
/// them: S-mode on rvpmu-fw (fib, timer, manual records, 4 harts), M-mode
/// as the machine's firmware (fib, timer).
pub fn test(cli: &Path) -> Result<()> {
    let seed = root().join("crates/hpmtrace/tests/c/fib.c");
    let seed = with_bare_metal(&std::fs::read_to_string(&seed)?)?;
    let mut c = Checks::default();
    for mode in [Mode::Supervisor, Mode::Machine] {
        step(&format!(
            "hpmtrace on bare metal, {}-mode: libhpmtrace.a for riscv64, programs on QEMU virt (icount){}",
            mode.name(),
            if mode == Mode::Supervisor { " under rvpmu-fw" } else { " as the firmware" }
        ));
        let b = Build::new(
            mode,
            root().join(format!("target/xtask-trace/bare-{}", mode.name())),
        )?;
        let fib_src = b.dir.join("fib.c");
        std::fs::write(&fib_src, &seed)?;
        type Run<'a> = Box<dyn Fn(&mut Checks, &Build) -> Result<()> + 'a>;
        let mut runs: Vec<(&str, Run)> = vec![
            (
                "fib",
                Box::new(|c: &mut Checks, b: &Build| fib(c, b, &fib_src, cli)),
            ),
            ("timer", Box::new(timer)),
        ];
        // M-mode: one hart and no HSM; manual records are S-mode's alone.
        if mode == Mode::Supervisor {
            runs.push(("manual", Box::new(manual)));
            runs.push(("smp", Box::new(smp)));
        }
        for (name, run) in runs {
            c.label = format!("bare {} {name}", mode.name());
            if let Err(e) = run(&mut c, &b) {
                c.fail("traced and checked", "no error", &format!("{e:#}"));
            }
        }
    }
    println!(
        "hpmtrace bare metal: {} passed, {} failed",
        c.passed,
        c.failed.len()
    );
    if !c.failed.is_empty() {
        bail!(
            "hpmtrace bare-metal checks failed:\n  {}",
            c.failed.join("\n  ")
        );
    }
    Ok(())
}

/// The seed's fib on one hart.
fn fib(c: &mut Checks, b: &Build, src: &Path, cli: &Path) -> Result<()> {
    let dir = &b.dir;
    let elf = b.link("fib", &[src.to_path_buf()], true)?;
    let console = b.boot(&elf, 1)?;
    std::fs::write(dir.join("fib.console"), &console)?;
    let answer = fibcheck::parse_fib_line(&console);
    c.check(
        "the seed's fib runs and prints fib(20) = 6765",
        answer == Some((20, fibcheck::fib(20))),
        "fib(20) = 6765, QEMU powered off (exit 0)",
        &format!("{answer:?}"),
    );
    // The seed's list: cycles, timestamp, instructions, then cache misses,
    // branch instructions, branch misses and raw 0x20000. In S-mode the
    // SBI PMU (QEMU virt's riscv,pmu event map) has none of the last four;
    // in M-mode the library takes no general event but cycles and
    // instructions (the seed's bare-metal rule) and writes a raw event's
    // selector as given (what the hardware counts for it is its business).
    let (want_out, want_raw): (&[usize], bool) = match b.mode {
        Mode::Supervisor => (&[3, 4, 5, 6], false),
        Mode::Machine => (&[3, 4, 5], true),
    };
    let left_out: Vec<usize> = console
        .lines()
        .filter(|l| {
            l.starts_with("hpmtrace: perfFuncEntryExitInit: perfEvent ") && l.contains("left out")
        })
        .filter_map(|l| {
            l["hpmtrace: perfFuncEntryExitInit: perfEvent ".len()..]
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    c.check(
        "events the platform cannot count are left out, each named on the console",
        left_out == want_out,
        &format!("perfEvent {want_out:?} of HW_CACHE_MISSES, HW_BRANCH_INSTRUCTIONS, HW_BRANCH_MISSES, raw 0x20000 (3..6)"),
        &format!("perfEvent {left_out:?}"),
    );
    let rtd = dir.join("fib.rtd");
    let bytes = import(&console, "trace.rtd", &rtd)?;
    let decode = decode_config(1); // perfInit(2, 1): two sources, 1 SRC bit
    let mut header = None;
    decode_stream(
        &bytes[..],
        decode,
        &mut |o| {
            if let Output::Header(h) = o {
                header.get_or_insert(h.header);
            }
        },
        &mut |_| {},
    );
    let events: Vec<(u8, Event)> = header
        .iter()
        .flat_map(|h| h.iter().map(|(i, d)| (i, d.event)))
        .collect();
    let mut want_events = vec![
        (0, Event::General { code: 1 }),
        (1, Event::General { code: 0x80 }),
        (2, Event::General { code: 2 }),
    ];
    if want_raw {
        want_events.push((
            3,
            Event::Raw {
                event_data: 0x20000,
            },
        ));
    }
    c.check(
        "the header keeps to the seed's event types: the counted events in the seed's slots",
        events == want_events,
        &format!("{want_events:?}"),
        &format!("{events:?}"),
    );
    fibcheck::check_trace(
        c,
        &fibcheck::Trace {
            bytes: &bytes,
            rtd: &rtd,
            elf: &elf,
            n: 20,
            cli,
            dir,
            decode,
            csrs: None,
        },
    )?;
    Ok(())
}

/// `/cpus/timebase-frequency` of QEMU virt as the firmware receives it.
fn timebase_hz(dir: &Path) -> Result<u64> {
    let dtb = dir.join("virt.dtb");
    crate::qemu::Qemu::virt(1).dump_dtb(&dtb)?;
    let mut blob = std::fs::read(&dtb)?;
    let fdt = rvpmu::dtb::open(&mut blob).map_err(|e| anyhow::anyhow!("QEMU's DT: {e}"))?;
    fdt.find_node("/cpus")
        .and_then(|n| n.property("timebase-frequency"))
        .and_then(|p| p.as_usize())
        .map(|v| v as u64)
        .context("QEMU's DT has no /cpus/timebase-frequency")
}

/// `value` of `key=value` / `key value` words in the line starting with
/// `prefix`.
fn reported(console: &str, prefix: &str, key: &str) -> Option<u64> {
    let l = console.lines().find(|l| l.starts_with(prefix))?;
    let mut words = l.split_whitespace();
    words.find(|w| *w == key)?;
    words.next()?.parse().ok()
}

/// Timer-ISR sampling of a known loop.
fn timer(c: &mut Checks, b: &Build) -> Result<()> {
    let dir = &b.dir;
    let elf = b.link("timer", &[sources().join("timer.c")], false)?;
    let console = b.boot(&elf, 1)?;
    std::fs::write(dir.join("timer.console"), &console)?;
    let ran = reported(&console, "timer: spin ran", "ran")
        .context("no \"timer: spin ran N ticks\" line")?;
    let interval_us = reported(&console, "timer: spin ran", "interval")
        .context("no interval on the timer line")?;
    let hz = timebase_hz(dir)?;
    let interval = hz * interval_us / 1_000_000;
    let bytes = import(&console, "timer.rtd", &dir.join("timer.rtd"))?;
    let mut samples = Vec::new();
    let mut other = 0;
    let stats = decode_stream(
        &bytes[..],
        decode_config(0),
        &mut |o| {
            if let Output::Record(r) = o {
                if r.kind == RecordType::Isr {
                    samples.push((r.addr, r.timestamp));
                } else {
                    other += 1;
                }
            }
        },
        &mut |_| {},
    );
    // Samples fall on a grid of the interval; the loop ran `ran` ticks
    // between two time reads, so it saw floor or ceil of ran / interval.
    let want = ran / interval.max(1);
    let n = samples.len() as u64;
    c.check(
        "timer samples = run time / interval, +-1",
        stats.errors == 0 && other == 0 && n + 1 >= want && n <= want + 1 && want > 0,
        &format!("{want} +-1 ISR records ({ran} ticks / {interval} ticks = {interval_us} us at {hz} Hz), nothing else, no decoding error"),
        &format!("{n} ISR records, {other} others, {} errors", stats.errors),
    );
    let spin = symbol_range(&elf, "spin")?;
    let outside = samples.iter().filter(|(pc, _)| !spin.contains(pc)).count();
    c.check(
        "every sample's PC is inside the sampled loop (spin)",
        outside == 0 && n > 0,
        &format!("all PCs in {:#x}..{:#x}", spin.start, spin.end),
        &format!("{outside} of {n} outside"),
    );
    let steps: Vec<u64> = samples
        .windows(2)
        .filter_map(|w| w[1].1?.checked_sub(w[0].1?))
        .collect();
    let off_grid = steps.iter().filter(|&&d| d.abs_diff(interval) > 1).count();
    c.check(
        "samples are one interval apart (timestamps, +-1 tick of interrupt latency)",
        off_grid == 0 && steps.len() + 1 == samples.len(),
        &format!("every step {interval} +-1 ticks"),
        &format!(
            "{off_grid} of {} steps off; first steps {:?}",
            steps.len(),
            &steps[..steps.len().min(4)]
        ),
    );
    Ok(())
}

/// Address range of function `name` in `elf` (`nm -S`).
fn symbol_range(elf: &Path, name: &str) -> Result<std::ops::Range<u64>> {
    let out = crate::util::output(Command::new("riscv64-linux-gnu-nm").arg("-S").arg(elf))?;
    for l in out.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if let [addr, size, _, sym] = w[..] {
            if sym == name {
                let a = u64::from_str_radix(addr, 16)?;
                return Ok(a..a + u64::from_str_radix(size, 16)?);
            }
        }
    }
    bail!("no symbol {name} with a size in {}", elf.display())
}

/// The buffer of `manual.c` up to its first record, derived by hand from
/// the format rules (FACTS 8; the same derivation as
/// crates/hpmtrace/tests/decode_format.rs): an ICT sync message with the
/// full timestamp (`None` here: its value is the time of trace-on), then
/// the header as Data Acquisition messages, TCODE 7 (0x1c), IDTAG 0x18
/// (32-bit write, channel 6: 011000 | MSEO 01 = 0x61) or 0x1b (8-bit:
/// 0x6d), DQDATA in 6-bit groups LSB first, and a TIMESTAMP field XORed
/// with the previous one: 0 (0x03) as all share trace-on's time.
fn manual_header_bytes() -> Vec<Option<u8>> {
    let known: &[&[u8]] = &[
        // marker 0x70657266
        &[0x1c, 0x61, 0x98, 0x24, 0x5c, 0x64, 0xc0, 0x05, 0x03],
        // count type 0 (Raw), 8 bits
        &[0x1c, 0x6d, 0x01, 0x03],
        // counter mask: slot 1 (the timestamp) = 0b10: 000010 | 01
        &[0x1c, 0x61, 0x09, 0x03],
        // slot 1: type 0
        &[0x1c, 0x61, 0x01, 0x03],
        // code 0x80 = 000000, 000010 | 01
        &[0x1c, 0x61, 0x00, 0x09, 0x03],
        // counter_info: CSR 0, width 40 -> (40 - 1) << 12 = 0x27000:
        // 000000, 000000, 100111 | 01
        &[0x1c, 0x61, 0x00, 0x00, 0x9d, 0x03],
    ];
    // ICT sync: TCODE 35 (0x8c), CKSRC 0 + CKDF 0 (0x00), CKDATA0 0 (0x01).
    let mut v: Vec<Option<u8>> = [0x8c, 0x00, 0x01].iter().map(|&b| Some(b)).collect();
    v.push(None); // the timestamp field, any length, ends in MSEO 11
    v.extend(known.iter().flat_map(|m| m.iter().map(|&b| Some(b))));
    v
}

/// `perfManualInit` + two `perfWriteCntrs`: the header bytes against the
/// hand derivation, the records at the calls' return addresses.
fn manual(c: &mut Checks, b: &Build) -> Result<()> {
    let dir = &b.dir;
    let elf = b.link("manual", &[sources().join("manual.c")], false)?;
    let console = b.boot(&elf, 1)?;
    std::fs::write(dir.join("manual.console"), &console)?;
    let bytes = import(&console, "manual.rtd", &dir.join("manual.rtd"))?;
    let want = manual_header_bytes();
    // Match the template: a `None` swallows bytes up to one whose MSEO is 11.
    let mut at = 0;
    let mut ok = true;
    for w in &want {
        match w {
            Some(b) => {
                ok &= bytes.get(at) == Some(b);
                at += 1;
            }
            None => {
                while bytes.get(at).is_some_and(|b| b & 3 != 3) {
                    at += 1;
                }
                at += 1;
            }
        }
    }
    c.check(
        "the buffer starts with the header bytes derived by hand (ICT sync, marker, count type, mask, counter 1)",
        ok,
        &format!("{want:02x?}"),
        &format!("{:02x?}", &bytes[..at.min(bytes.len())]),
    );
    let insns = crate::linux::initramfs::parse_disassembly(&crate::linux::initramfs::disassemble(
        &elf, "main",
    )?);
    let sites: Vec<u64> = insns
        .iter()
        .filter(|i| i.target_symbol.as_deref() == Some("perfWriteCntrs"))
        .map(|i| i.addr + i.len)
        .collect();
    let mut records = Vec::new();
    let stats = decode_stream(
        &bytes[..],
        decode_config(0),
        &mut |o| {
            if let Output::Record(r) = o {
                records.push((r.kind, r.addr, r.timestamp));
            }
        },
        &mut |_| {},
    );
    let pcs: Vec<u64> = records.iter().map(|r| r.1).collect();
    c.check(
        "two manual records at the return addresses of the two perfWriteCntrs() calls",
        stats.errors == 0
            && records.iter().all(|r| r.0 == RecordType::Manual)
            && pcs == sites
            && sites.len() == 2
            && records[0].2 < records[1].2,
        &format!("Manual at {sites:x?} (from main's disassembly), timestamps increasing"),
        &format!("{records:x?}, {} errors", stats.errors),
    );
    Ok(())
}

/// Four harts, each tracing fib(10 + hart) with its own SRC.
fn smp(c: &mut Checks, b: &Build) -> Result<()> {
    let dir = &b.dir;
    const HARTS: u16 = 4;
    const FIB_BASE: u64 = 10;
    let elf = b.link("smp", &[sources().join("smp.c")], true)?;
    let console = b.boot(&elf, HARTS as u32)?;
    std::fs::write(dir.join("smp.console"), &console)?;
    let answers: Vec<bool> = (0..HARTS as u64)
        .map(|h| {
            console.contains(&format!(
                "smp: hart {h} fib({}) = {}",
                FIB_BASE + h,
                fibcheck::fib(FIB_BASE + h)
            ))
        })
        .collect();
    c.check(
        "4 harts compute fib(10..13)",
        answers.iter().all(|&a| a),
        "smp: hart h fib(10+h) = F(10+h) for h = 0..3",
        &format!("{answers:?}"),
    );
    let bytes = import(&console, "smp.rtd", &dir.join("smp.rtd"))?;
    let mut headers = [0u32; HARTS as usize];
    let mut enters = [0u64; HARTS as usize];
    let mut stacks: Vec<Vec<u64>> = vec![Vec::new(); HARTS as usize];
    let mut problems = Vec::new();
    let stats = decode_stream(
        &bytes[..],
        decode_config(2),
        &mut |o| match o {
            Output::Header(h) => match headers.get_mut(h.src as usize) {
                Some(n) => *n += 1,
                None => problems.push(format!("header from source {}", h.src)),
            },
            Output::Record(r) => {
                let Some(stack) = stacks.get_mut(r.src as usize) else {
                    problems.push(format!("record from source {}", r.src));
                    return;
                };
                match r.kind {
                    RecordType::FuncEnter => {
                        enters[r.src as usize] += 1;
                        stack.push(r.addr);
                    }
                    RecordType::FuncExit if stack.pop() == Some(r.addr) => {}
                    k => problems.push(format!(
                        "core {}: {k:?} at offset {} does not nest",
                        r.src, r.offset
                    )),
                }
            }
            Output::Error(e) => problems.push(e.to_string()),
        },
        &mut |_| {},
    );
    let want: Vec<u64> = (0..HARTS as u64)
        .map(|h| fibcheck::calls(FIB_BASE + h))
        .collect();
    let open: Vec<usize> = stacks.iter().map(Vec::len).collect();
    c.check(
        "each core's records decode under its own SRC: one header, enter/exit balanced and nested, calls = fib's",
        headers == [1; HARTS as usize]
            && enters.to_vec() == want
            && open.iter().all(|&o| o == 0)
            && problems.is_empty()
            && stats.errors == 0,
        &format!("per core: 1 header, {want:?} enters, 0 open, no problem"),
        &format!(
            "headers {headers:?}, enters {enters:?}, open {open:?}, problems {:?}",
            &problems[..problems.len().min(3)]
        ),
    );
    Ok(())
}

/// `cargo xtask bench`: the bare-metal hooks' cost per enter + exit pair
/// in instructions (QEMU icount), 1, 2 and 6 recorded counters, with the
/// staging area not filling (hooks alone) and filling (encoding included),
/// and with tracing off. Written to target/bench/hpmtrace-bare.md.
pub fn hook_cost_bench() -> Result<()> {
    step("hpmtrace bare-metal hook cost (instructions per enter+exit pair, QEMU icount)");
    let b = Build::new(
        Mode::Supervisor,
        root().join("target/xtask-trace/bare-bench"),
    )?;
    let elf = b.link("hookcost", &[sources().join("hookcost.c")], true)?;
    let console = b.boot(&elf, 1)?;
    let mut md = String::from(
        "# hpmtrace bare-metal hook cost\n\n\
         Instructions per enter+exit hook pair of an empty `-finstrument-functions` function, \
         minus the same calls uninstrumented; S-mode on rvpmu-fw, QEMU virt, -icount shift=0 (exact). \
         \"hooks\": the staging area never fills; \"with encoding\": it fills and is encoded inside the run, amortized.\n\n\
         | counters recorded | tracing off | hooks (200 pairs) | with encoding (20000 pairs) |\n| ---: | ---: | ---: | ---: |\n",
    );
    let mut rows: Vec<(u64, [u64; 3])> = Vec::new();
    for l in console.lines().filter(|l| l.starts_with("hookcost: ")) {
        let num = |k: &str| -> Option<u64> {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix(k)?.strip_prefix('=')?.parse().ok())
        };
        let (Some(n), Some(pairs), Some(plain), Some(off), Some(on)) = (
            num("counters"),
            num("pairs"),
            num("plain"),
            num("off"),
            num("on"),
        ) else {
            bail!("unparsable line {l:?}");
        };
        let per = |x: u64| x.saturating_sub(plain) / pairs.max(1);
        let row = match rows.iter_mut().find(|r| r.0 == n) {
            Some(r) => r,
            None => {
                rows.push((n, [0; 3]));
                rows.last_mut().unwrap()
            }
        };
        if pairs < 1000 {
            row.1[0] = per(off);
            row.1[1] = per(on);
        } else {
            row.1[2] = per(on);
        }
    }
    if rows.len() != 3 {
        bail!("expected 3 counter sets, got {rows:?}:\n{}", tail(&console));
    }
    for (n, [off, hooks, enc]) in &rows {
        md.push_str(&format!("| {n} | {off} | {hooks} | {enc} |\n"));
    }
    let out = root().join("target/bench/hpmtrace-bare.md");
    std::fs::create_dir_all(out.parent().unwrap())?;
    std::fs::write(&out, &md)?;
    println!("{md}\nwrote {}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The bare-metal runs on their own (needs QEMU):
    /// `cargo test -p xtask hpmtrace_bare -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn hpmtrace_bare() {
        super::test(&crate::trace::build_cli().unwrap()).unwrap();
    }

    /// `cargo test -p xtask hpmtrace_bare_bench -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn hpmtrace_bare_bench() {
        super::hook_cost_bench().unwrap();
    }

    #[test]
    fn bare_metal_fib_changes_includes_and_buffer_only() {
        let seed =
            std::fs::read_to_string(crate::util::root().join("crates/hpmtrace/tests/c/fib.c"))
                .unwrap();
        let b = super::with_bare_metal(&seed).unwrap();
        assert!(
            b.contains("#include \"sifive_bare_perf.h\"")
                && b.contains("#include \"sifive_trace.h\"")
        );
        assert!(!b.contains("sifive_linux"));
        assert!(b.contains("perfCount_Delta,8*1024*1024)"));
        assert!(b.contains("unsigned long fib(unsigned long f)") && b.contains("HW_BRANCH_MISSES"));
        assert!(super::with_bare_metal("int main() {}").is_err());
    }
}
