//! The S-mode SBI conformance suite (crates/conformance) and the per-call
//! cost benchmark, run under QEMU against our firmware and/or OpenSBI.
//!
//! The kernel prints one line per check (`[PASS] id - what | expected: E |
//! actual: A`, `[FAIL] ...`, `[N/A ] ...`), announces each check with
//! `..> id` first, and ends with `RESULT N passed, M failed, K n/a`. N/A
//! (an optional feature absent) is counted apart from passed and failed:
//! on our own firmware it fails the run like a failure, on other firmware
//! it is reported. If a firmware hangs or crashes on a check, the run is
//! repeated with that check on the kernel command line (`rvpmu.skip=`),
//! where it is reported as failed.
//!
//! The last check, `srst.upper32.shutdown`, passes by powering the machine
//! off: the kernel prints `PENDING id - what | expected: E` after RESULT
//! and makes the call; QEMU's exit status 0 makes it PASS, any other
//! status (or the kernel's own `[FAIL]` line when the call returns) FAIL.

use crate::util::{cargo, root, run_captured, step};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Debian's OpenSBI 1.5.1, the reference firmware.
const OPENSBI: &str = "/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.bin";
const KERNEL_TARGET: &str = "riscv64gc-unknown-none-elf";
/// Wall-clock limit for one QEMU run (a normal run takes a few seconds).
const RUN_TIMEOUT: Duration = Duration::from_secs(180);
/// How many hanging checks one suite run may skip before giving up.
const MAX_SKIPS: usize = 8;
/// The suite must keep at least this many checks (guards against a
/// kernel that silently stops early).
const MIN_CHECKS: usize = 100;

#[derive(clap::Args)]
pub struct ConformanceArgs {
    /// Firmware to test: `ours`, `opensbi`, `both` (ours and OpenSBI side
    /// by side), the path of a raw -bios image, or two of these joined by a
    /// comma (side by side).
    #[arg(long, default_value = "both")]
    pub bios: String,
    /// Number of harts; every hart runs the suite on its own PMU state.
    #[arg(long, default_value_t = 1)]
    pub smp: u32,
    /// Also print every line of the raw kernel output.
    #[arg(long)]
    pub verbose: bool,
}

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Use this raw -bios image as "ours" instead of building crates/rvpmu-fw.
    #[arg(long)]
    pub ours: Option<PathBuf>,
}

/// A firmware under test.
#[derive(Clone)]
struct Firmware {
    name: String,
    image: PathBuf,
}

fn opensbi() -> Result<Firmware> {
    let image = PathBuf::from(OPENSBI);
    if !image.exists() {
        bail!("{OPENSBI} is missing: run `cargo xtask setup` (package opensbi from bookworm-backports)");
    }
    Ok(Firmware {
        name: "opensbi".into(),
        image,
    })
}

fn ours() -> Result<Firmware> {
    let image = crate::firmware::build().context("building our firmware (cargo xtask firmware)")?;
    Ok(Firmware {
        name: "ours".into(),
        image,
    })
}

fn resolve_one(name: &str) -> Result<Firmware> {
    match name {
        "ours" => ours(),
        "opensbi" => opensbi(),
        path => {
            let image = PathBuf::from(path);
            if !image.is_file() {
                bail!("--bios {path}: no such file (use ours, opensbi, both or a path)");
            }
            Ok(Firmware {
                name: path.into(),
                image,
            })
        }
    }
}

fn resolve(bios: &str) -> Result<Vec<Firmware>> {
    if bios == "both" {
        return Ok(match ours() {
            Ok(o) => vec![o, opensbi()?],
            Err(e) => {
                eprintln!("*** OUR FIRMWARE IS NOT AVAILABLE ({e:#}); running OpenSBI only");
                vec![opensbi()?]
            }
        });
    }
    let fws = bios
        .split(',')
        .map(resolve_one)
        .collect::<Result<Vec<_>>>()?;
    if fws.len() > 2 {
        bail!("--bios takes at most two firmwares");
    }
    Ok(fws)
}

/// Builds the conformance kernel and returns its ELF.
pub(crate) fn build_kernel() -> Result<PathBuf> {
    step("building the conformance kernel (riscv64gc-unknown-none-elf)");
    crate::util::run(cargo().args([
        "build",
        "--release",
        "-p",
        "conformance",
        "--target",
        KERNEL_TARGET,
    ]))?;
    let elf = root()
        .join("target")
        .join(KERNEL_TARGET)
        .join("release/conformance");
    if !elf.is_file() {
        bail!("cargo did not produce {}", elf.display());
    }
    Ok(elf)
}

/// What one QEMU run printed and how it ended.
struct Capture {
    text: String,
    timed_out: bool,
    /// QEMU's exit status (`None`: killed at the timeout).
    status: Option<i32>,
}

/// Boots `kernel` on `fw` under exact instruction counting and collects
/// the serial output until QEMU exits or the timeout hits.
fn boot(fw: &Firmware, kernel: &Path, smp: u32, append: &str) -> Result<Capture> {
    let mut q = crate::qemu::Qemu::virt(smp);
    q.bios = Some(fw.image.clone());
    q.kernel = Some(kernel.to_path_buf());
    if !append.is_empty() {
        q.append = Some(append.to_string());
    }
    let mut cmd = q.command();
    let run = run_captured(&mut cmd, RUN_TIMEOUT, None)?;
    let status = run.status.and_then(|s| s.code());
    // A failure status after the kernel started is the firmware's or the
    // kernel's report (e.g. 83: SRST "system failure" after a fatal trap in
    // the kernel) and the output says more; without any kernel output it
    // is QEMU's or the firmware's own failure.
    if status.is_some_and(|c| c != 0) && !run.stdout.contains("BOOT hart=") {
        bail!(
            "{} before the kernel started on {}: {}{}",
            crate::firmware::exit::describe(status),
            fw.name,
            run.stderr.trim(),
            run.stdout.trim()
        );
    }
    Ok(Capture {
        text: run.stdout,
        timed_out: run.timed_out,
        status,
    })
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Status {
    Pass,
    Fail,
    Na,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Na => "N/A",
        }
    }
}

#[derive(Clone, Debug)]
struct Check {
    id: String,
    status: Status,
    what: String,
    expected: String,
    actual: String,
}

/// The parsed output of one suite run.
#[derive(Default)]
struct Report {
    checks: Vec<Check>,
    /// `RESULT N passed, M failed, K n/a`, if the kernel got that far.
    result: Option<(usize, usize, usize)>,
    /// How many checks came before the RESULT line (the ones it counts).
    counted: usize,
    /// A check announced with `..>` that never printed its result.
    unfinished: Option<String>,
    /// A check whose verdict is QEMU's exit status (`PENDING` line).
    pending: Option<Check>,
    fatal: Vec<String>,
    boot_instret: Option<u64>,
    costs: Vec<(String, u64, String)>,
}

/// (passed, failed, N/A) of some checks.
fn tally(checks: &[Check]) -> (usize, usize, usize) {
    let n = |s| checks.iter().filter(|c| c.status == s).count();
    (n(Status::Pass), n(Status::Fail), n(Status::Na))
}

impl Report {
    fn failed(&self) -> usize {
        tally(&self.checks).1
    }
    fn passed(&self) -> usize {
        tally(&self.checks).0
    }
    fn na(&self) -> usize {
        tally(&self.checks).2
    }
    /// Checks that keep our firmware's run from passing: failed or N/A.
    fn not_passed(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.status != Status::Pass)
    }
    /// Settles the `PENDING` check from QEMU's exit status: it passed if
    /// the machine powered off (status 0) while the call was under way.
    fn settle(&mut self, status: Option<i32>) {
        let Some(mut c) = self.pending.take() else {
            return;
        };
        if self.unfinished.as_deref() != Some(c.id.as_str()) {
            return;
        }
        self.unfinished = None;
        c.status = if status == Some(0) {
            Status::Pass
        } else {
            Status::Fail
        };
        c.actual = match status {
            Some(0) => "the machine powered off (QEMU exit status 0)".into(),
            _ => crate::firmware::exit::describe(status),
        };
        self.checks.push(c);
    }
}

fn parse_check(line: &str) -> Option<Check> {
    let (status, rest) = if let Some(r) = line.strip_prefix("[PASS] ") {
        (Status::Pass, r)
    } else if let Some(r) = line.strip_prefix("[FAIL] ") {
        (Status::Fail, r)
    } else if let Some(r) = line.strip_prefix("[N/A ] ") {
        (Status::Na, r)
    } else {
        return None;
    };
    let (head, actual) = rest.rsplit_once(" | actual: ")?;
    let (head, expected) = head.rsplit_once(" | expected: ")?;
    let (id, what) = head.split_once(" - ")?;
    Some(Check {
        id: id.into(),
        status,
        what: what.into(),
        expected: expected.into(),
        actual: actual.into(),
    })
}

fn parse(text: &str) -> Report {
    let mut r = Report::default();
    let mut open: Option<String> = None;
    for line in text.lines().map(|l| l.trim_end_matches('\r')) {
        if let Some(id) = line.strip_prefix("..> ") {
            open = Some(id.to_string());
        } else if let Some(c) = parse_check(line) {
            open = None;
            if r.pending.as_ref().is_some_and(|p| p.id == c.id) {
                r.pending = None;
            }
            r.checks.push(c);
        } else if let Some(rest) = line.strip_prefix("PENDING ") {
            // "PENDING id - what | expected: E": the verdict comes from how
            // the run ends (`Report::settle`).
            r.pending = parse_check(&format!("[FAIL] {rest} | actual: -"));
        } else if let Some(rest) = line.strip_prefix("RESULT ") {
            let nums: Vec<usize> = rest
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse().ok())
                .collect();
            if let [p, f, n] = nums[..] {
                r.result = Some((p, f, n));
                r.counted = r.checks.len();
            }
        } else if line.starts_with("FATAL") {
            r.fatal.push(line.to_string());
        } else if let Some(rest) = line.strip_prefix("BOOT ") {
            r.boot_instret = rest
                .split_whitespace()
                .find_map(|w| w.strip_prefix("instret=")?.parse().ok());
        } else if let Some(rest) = line.strip_prefix("COST ") {
            let f: Vec<&str> = rest.split_whitespace().collect();
            if let [name, n, answer] = f[..] {
                if let Ok(n) = n.parse() {
                    r.costs.push((name.into(), n, answer.into()));
                }
            }
        }
    }
    r.unfinished = open;
    r
}

/// What [`verdicts`] finds in one run.
pub(crate) struct Verdicts {
    /// Each check's id and `PASS`, `FAIL` or `N/A`, in order.
    pub checks: Vec<(String, &'static str)>,
    /// The kernel's RESULT line: passed, failed, n/a.
    pub result: Option<(usize, usize, usize)>,
    /// A check announced that never printed its result.
    pub unfinished: Option<String>,
}

/// The verdicts of one run's output (QEMU's exit status `status` settles
/// the last, PENDING check). For other runners of the same kernel
/// (`cargo xtask hv`, which boots it as a VS-mode guest).
pub(crate) fn verdicts(text: &str, status: Option<i32>) -> Verdicts {
    let mut r = parse(text);
    r.settle(status);
    Verdicts {
        checks: r
            .checks
            .iter()
            .map(|c| (c.id.clone(), c.status.label()))
            .collect(),
        result: r.result,
        unfinished: r.unfinished,
    }
}

/// Runs the suite on `fw`, repeating the run without any check that hung
/// or crashed the machine, so one bad answer does not hide the rest.
fn suite(fw: &Firmware, kernel: &Path, smp: u32, verbose: bool) -> Result<Report> {
    let mut skip: Vec<String> = Vec::new();
    loop {
        step(&format!("conformance suite on {} (-smp {smp})", fw.name));
        let append = if skip.is_empty() {
            String::new()
        } else {
            format!("rvpmu.skip={}", skip.join(","))
        };
        let cap = boot(fw, kernel, smp, &append)?;
        if verbose {
            println!("{}", cap.text);
        }
        let mut rep = parse(&cap.text);
        rep.settle(cap.status);
        for f in &rep.fatal {
            eprintln!("  {f}");
        }
        if rep.result.is_some() && !cap.timed_out {
            return Ok(rep);
        }
        let why = if cap.timed_out {
            "hung (timeout)".to_string()
        } else {
            format!(
                "stopped early ({})",
                crate::firmware::exit::describe(cap.status)
            )
        };
        match rep.unfinished {
            Some(id) if skip.len() < MAX_SKIPS && !skip.contains(&id) => {
                eprintln!("  the run {why} in check {id}; repeating without it (it is reported as failed)");
                skip.push(id);
            }
            _ => bail!(
                "the conformance kernel {why} on {} after {} checks and no check to blame; rerun with --verbose",
                fw.name,
                rep.checks.len()
            ),
        }
    }
}

fn print_report(fw: &Firmware, smp: u32, rep: &Report) {
    println!("\n# {} (-smp {smp}): {}", fw.name, fw.image.display());
    for c in &rep.checks {
        println!(
            "[{:<4}] {} - {} | expected: {} | actual: {}",
            c.status.label(),
            c.id,
            c.what,
            c.expected,
            c.actual
        );
    }
    println!(
        "{} passed, {} failed, {} N/A",
        rep.passed(),
        rep.failed(),
        rep.na()
    );
}

/// Side-by-side table; where the answers differ, the line names the firmware
/// whose answer the spec supports (the check's expectation is the spec's).
fn print_side_by_side(a: (&Firmware, &Report), b: (&Firmware, &Report)) {
    let bmap: BTreeMap<&str, &Check> = b.1.checks.iter().map(|c| (c.id.as_str(), c)).collect();
    let w =
        a.1.checks
            .iter()
            .map(|c| c.id.len())
            .max()
            .unwrap_or(0)
            .max(34);
    println!(
        "\n{:<w$} {:<6} {:<6}  where they differ",
        "check", a.0.name, b.0.name
    );
    let mut differ = 0;
    for ca in &a.1.checks {
        let cb = bmap.get(ca.id.as_str());
        let sb = cb.map_or("-", |c| c.status.label());
        let mut note = String::new();
        if let Some(cb) = cb {
            if ca.status != cb.status || ca.actual != cb.actual {
                differ += 1;
                let good: Vec<&str> = [(a.0, ca), (b.0, *cb)]
                    .iter()
                    .filter(|(_, c)| c.status != Status::Fail)
                    .map(|(f, _)| f.name.as_str())
                    .collect();
                let verdict = match good.len() {
                    2 => "both allowed by the spec".to_string(),
                    1 => format!("spec supports {}", good[0]),
                    _ => "neither matches the spec".to_string(),
                };
                let _ = write!(
                    note,
                    "{}: {} | {}: {} | spec: {} -> {verdict}",
                    a.0.name, ca.actual, b.0.name, cb.actual, ca.expected
                );
            }
        }
        println!("{:<w$} {:<6} {:<6}  {note}", ca.id, ca.status.label(), sb);
    }
    println!(
        "\n{}: {} passed, {} failed, {} N/A | {}: {} passed, {} failed, {} N/A | {differ} checks answered differently",
        a.0.name,
        a.1.passed(),
        a.1.failed(),
        a.1.na(),
        b.0.name,
        b.1.passed(),
        b.1.failed(),
        b.1.na()
    );
}

/// Sanity of a finished report: the kernel's own totals match the lines
/// before its RESULT line.
fn consistent(rep: &Report) -> Result<()> {
    let Some((p, f, n)) = rep.result else {
        bail!("no RESULT line")
    };
    let (lp, lf, ln) = tally(&rep.checks[..rep.counted]);
    if (p, f, n) != (lp, lf, ln) {
        bail!("kernel says {p} passed, {f} failed, {n} n/a but printed {lp} / {lf} / {ln}");
    }
    if rep.checks.len() < MIN_CHECKS {
        bail!(
            "only {} checks ran (expected at least {MIN_CHECKS})",
            rep.checks.len()
        );
    }
    Ok(())
}

pub fn run(a: ConformanceArgs) -> Result<()> {
    crate::setup::ensure_host()?;
    let fws = resolve(&a.bios)?;
    let kernel = build_kernel()?;
    let mut reps = Vec::new();
    for fw in &fws {
        let rep = suite(fw, &kernel, a.smp, a.verbose)?;
        consistent(&rep)?;
        if fws.len() == 1 {
            print_report(fw, a.smp, &rep);
        }
        reps.push(rep);
    }
    if fws.len() == 2 {
        print_side_by_side((&fws[0], &reps[0]), (&fws[1], &reps[1]));
    }
    for (fw, rep) in fws.iter().zip(&reps) {
        if fw.name == "ours" {
            require_all_passed(rep, a.smp)?;
        }
    }
    Ok(())
}

/// Our firmware implements every optional feature the suite checks, so an
/// N/A on it is as wrong as a failure: both fail the run (other firmware's
/// are reported only).
fn require_all_passed(rep: &Report, smp: u32) -> Result<()> {
    let bad: Vec<&Check> = rep.not_passed().collect();
    for c in &bad {
        eprintln!(
            "  {} {} - {} | expected: {} | actual: {}",
            c.status.label(),
            c.id,
            c.what,
            c.expected,
            c.actual
        );
    }
    if !bad.is_empty() {
        bail!(
            "{} failed and {} N/A of {} conformance checks on our firmware (-smp {smp}); N/A counts as not passed on our firmware",
            rep.failed(),
            rep.na(),
            rep.checks.len()
        );
    }
    Ok(())
}

/// The CI entry: our firmware must pass everything with 1 and 2 harts (no
/// failure, no N/A); OpenSBI is reported only.
pub fn test() -> Result<()> {
    let kernel = build_kernel()?;
    match ours() {
        Ok(fw) => {
            for smp in [1, 2] {
                let rep = suite(&fw, &kernel, smp, false)?;
                consistent(&rep)?;
                require_all_passed(&rep, smp)?;
                println!(
                    "ours -smp {smp}: all {} checks passed (0 failed, 0 N/A)",
                    rep.checks.len()
                );
            }
        }
        Err(e) => {
            eprintln!();
            eprintln!("**************************************************************************");
            eprintln!(
                "*** OUR FIRMWARE IS NOT AVAILABLE: the conformance suite did NOT run on it."
            );
            eprintln!("*** {e:#}");
            eprintln!("*** Only the OpenSBI reference report follows.");
            eprintln!("**************************************************************************");
            eprintln!();
        }
    }
    let fw = opensbi()?;
    let rep = suite(&fw, &kernel, 1, false)?;
    consistent(&rep)?;
    println!(
        "OpenSBI 1.5.1 (reference, report only): {} passed, {} failed, {} N/A of {} checks",
        rep.passed(),
        rep.failed(),
        rep.na(),
        rep.checks.len()
    );
    Ok(())
}

/// One firmware's cost-probe run.
struct Bench {
    fw: Firmware,
    costs: Vec<(String, u64, String)>,
    boot_instret: Option<u64>,
    image_bytes: u64,
}

fn bench_one(fw: Firmware, kernel: &Path) -> Result<Bench> {
    step(&format!("cost probes on {}", fw.name));
    let cap = boot(&fw, kernel, 1, "rvpmu.bench")?;
    let rep = parse(&cap.text);
    if cap.timed_out || !cap.text.contains("COST-END") {
        bail!(
            "the cost probes did not finish on {} ({:?})",
            fw.name,
            rep.fatal
        );
    }
    let image_bytes = std::fs::metadata(&fw.image)?.len();
    Ok(Bench {
        fw,
        costs: rep.costs,
        boot_instret: rep.boot_instret,
        image_bytes,
    })
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn opt_num(v: Option<u64>) -> String {
    v.map_or("null".into(), |v| v.to_string())
}

pub fn bench(a: BenchArgs) -> Result<()> {
    crate::setup::ensure_host()?;
    let kernel = build_kernel()?;
    let ours = match a.ours.map_or_else(ours, |image| {
        Ok(Firmware {
            name: "ours".into(),
            image,
        })
    }) {
        Ok(fw) => Some(bench_one(fw, &kernel)?),
        Err(e) => {
            eprintln!("*** OUR FIRMWARE IS NOT AVAILABLE ({e:#}); its column stays empty");
            None
        }
    };
    let peer = bench_one(opensbi()?, &kernel)?;

    let names: Vec<String> = peer.costs.iter().map(|c| c.0.clone()).collect();
    let find = |b: Option<&Bench>, n: &str| {
        b.and_then(|b| b.costs.iter().find(|c| c.0 == n))
            .map(|c| (c.1, c.2.clone()))
    };
    let mut md = String::new();
    let mut rows = Vec::new();
    let _ = writeln!(
        md,
        "# SBI per-call cost (instructions, QEMU virt, -icount shift=0)\n"
    );
    let _ = writeln!(
        md,
        "Instret delta around one ecall (firmware included), minus the empty bracket, minimum of 7 runs.\n\
         A call answered with an error (e.g. NOT_SUPPORTED) costs only the rejection; the answer is shown.\n"
    );
    let _ = writeln!(md, "| call | ours | OpenSBI 1.5.1 | ours / OpenSBI |");
    let _ = writeln!(md, "| --- | ---: | ---: | ---: |");
    for n in &names {
        let o = find(ours.as_ref(), n);
        let p = find(Some(&peer), n);
        let cell = |v: &Option<(u64, String)>| match v {
            None => "n/a".to_string(),
            Some((n, a)) if a == "SUCCESS" => n.to_string(),
            Some((n, a)) => format!("{n} ({a})"),
        };
        let ratio = match (&o, &p) {
            // Comparing a served call with a rejection would mislead.
            (Some((a, x)), Some((b, y))) if *b > 0 && x == y => Some(*a as f64 / *b as f64),
            _ => None,
        };
        let _ = writeln!(
            md,
            "| {n} | {} | {} | {} |",
            cell(&o),
            cell(&p),
            ratio.map_or("n/a".into(), |r| format!("{r:.2}"))
        );
        rows.push(format!(
            "    {{\"call\": {}, \"ours\": {}, \"ours_answer\": {}, \"opensbi\": {}, \"opensbi_answer\": {}, \"ratio\": {}}}",
            json_str(n),
            opt_num(o.as_ref().map(|v| v.0)),
            o.as_ref().map_or("null".into(), |v| json_str(&v.1)),
            opt_num(p.as_ref().map(|v| v.0)),
            p.as_ref().map_or("null".into(), |v| json_str(&v.1)),
            ratio.map_or("null".into(), |r| format!("{r:.4}"))
        ));
    }
    let _ = writeln!(
        md,
        "\n| firmware | image bytes | instructions from reset to S-mode entry |"
    );
    let _ = writeln!(md, "| --- | ---: | ---: |");
    for b in ours.iter().chain(std::iter::once(&peer)) {
        let _ = writeln!(
            md,
            "| {} | {} | {} |",
            b.fw.name,
            b.image_bytes,
            opt_num(b.boot_instret)
        );
    }
    let fwjson = |b: &Bench| {
        format!(
            "{{\"image\": {}, \"image_bytes\": {}, \"boot_instret\": {}}}",
            json_str(&b.fw.image.display().to_string()),
            b.image_bytes,
            opt_num(b.boot_instret)
        )
    };
    let json = format!(
        "{{\n  \"unit\": \"instructions (QEMU -icount shift=0)\",\n  \"firmware\": {{\"ours\": {}, \"opensbi\": {}}},\n  \"calls\": [\n{}\n  ]\n}}\n",
        ours.as_ref().map_or("null".into(), fwjson),
        fwjson(&peer),
        rows.join(",\n")
    );
    let dir = root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("sbi.md"), &md)?;
    std::fs::write(dir.join("sbi.json"), &json)?;
    println!("{md}");
    println!(
        "wrote {} and {}",
        dir.join("sbi.md").display(),
        dir.join("sbi.json").display()
    );
    crate::baremetal::hook_cost_bench()?;
    // The per-sample cost needs Linux boots: same command, one run.
    crate::linux::sample_cost_bench()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_check_lines_and_totals() {
        let text = "junk\n..> a.b\n[PASS] a.b - what - with dash | expected: X | actual: Y | z\n\
                    ..> c\n[N/A ] c - w | expected: n/a | actual: n/a: optional\n..> d\n[FAIL] d - w | expected: E | actual: A\n\
                    ..> e\nRESULT 1 passed, 1 failed, 1 n/a\n";
        let r = parse(text);
        assert_eq!(r.checks.len(), 3);
        assert_eq!(r.checks[0].id, "a.b");
        assert_eq!(r.checks[0].what, "what - with dash");
        assert_eq!(r.checks[0].actual, "Y | z");
        assert_eq!(r.checks[1].status, Status::Na);
        assert_eq!(r.checks[2].status, Status::Fail);
        assert_eq!(r.result, Some((1, 1, 1)));
        // N/A is neither passed nor failed.
        assert_eq!((r.passed(), r.failed(), r.na()), (1, 1, 1));
        assert_eq!(r.not_passed().count(), 2);
        assert_eq!(r.unfinished.as_deref(), Some("e"));
        assert!(consistent_counts(&r));
    }

    fn consistent_counts(r: &Report) -> bool {
        r.result == Some(tally(&r.checks[..r.counted]))
    }

    const FINAL: &str =
        "[PASS] a - w | expected: E | actual: A\nRESULT 1 passed, 0 failed, 0 n/a\n\
                         ..> srst.x\nPENDING srst.x - shutdown | expected: off\n";

    #[test]
    fn pending_check_passes_on_power_off() {
        let mut r = parse(FINAL);
        assert_eq!(r.unfinished.as_deref(), Some("srst.x"));
        r.settle(Some(0));
        assert_eq!(r.unfinished, None);
        assert_eq!(r.checks.len(), 2);
        let c = &r.checks[1];
        assert_eq!((c.id.as_str(), c.status), ("srst.x", Status::Pass));
        assert_eq!((c.what.as_str(), c.expected.as_str()), ("shutdown", "off"));
        // RESULT counts only the checks before it.
        assert!(consistent_counts(&r));
    }

    #[test]
    fn pending_check_fails_on_other_exits_or_a_returned_call() {
        for status in [Some(1), Some(83), None] {
            let mut r = parse(FINAL);
            r.settle(status);
            assert_eq!(r.checks[1].status, Status::Fail, "{status:?}");
        }
        let text = format!("{FINAL}[FAIL] srst.x - shutdown | expected: off | actual: the call returned INVALID_PARAM\n");
        let mut r = parse(&text);
        r.settle(Some(0));
        assert_eq!(r.checks.len(), 2);
        assert_eq!(r.checks[1].status, Status::Fail);
        assert!(consistent_counts(&r));
    }

    #[test]
    fn parses_costs_and_boot() {
        let r =
            parse("BOOT hart=0 instret=13114836\nCOST pmu.num_counters 332 SUCCESS\nCOST bad\n");
        assert_eq!(r.boot_instret, Some(13114836));
        assert_eq!(
            r.costs,
            vec![("pmu.num_counters".to_string(), 332, "SUCCESS".to_string())]
        );
    }
}
