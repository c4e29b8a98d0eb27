//! The S-mode SBI conformance kernel (crates/conformance) under QEMU on
//! a firmware, directly or as the guest of a hypervisor on it ([`Target`]),
//! and what it prints: the suite's runs and reports (for the
//! `conformance` command and the test suite) and its cost probes (for the
//! benchmark and `conformance --cost`), on our firmware and/or OpenSBI.
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

use crate::build::firmware;
use crate::host::{run_captured, step};
use crate::qemu::{exit, Firmware, Qemu, HV_MEMORY};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Wall-clock limit for one QEMU run (a normal run takes a few seconds).
const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// How many hanging checks one suite run may skip before giving up.
const MAX_SKIPS: usize = 8;

/// The suite must keep at least this many checks (guards against a
/// kernel that silently stops early).
const MIN_CHECKS: usize = 100;

/// Debian's OpenSBI, named `opensbi` in the reports.
pub fn opensbi() -> Result<Firmware> {
    Firmware::opensbi_installed("opensbi")
}

/// Our firmware, built, named `ours` in the reports.
pub fn ours() -> Result<Firmware> {
    firmware::ours("ours").context("building our firmware (cargo xtask firmware)")
}

/// What the conformance kernel runs under, on the firmware.
#[derive(Clone, Debug)]
pub enum Under {
    /// Nothing: the firmware enters it in S-mode.
    Firmware,
    /// The hypervisor rvpmu-hv (this raw image): the kernel is its
    /// VS-mode guest, with vs-check's RAM (crates/rvpmu-hv, one hart).
    RvpmuHv(PathBuf),
}

impl Under {
    /// Whether the kernel may read `instret` there (for the instret cost
    /// bracket): on the firmware, and under rvpmu-hv, which opens it in
    /// hcounteren.
    pub fn reads_instret(&self) -> bool {
        matches!(self, Under::Firmware | Under::RvpmuHv(_))
    }

    /// The name in reports (`None` for the firmware itself).
    pub fn name(&self) -> Option<&'static str> {
        match self {
            Under::Firmware => None,
            Under::RvpmuHv(_) => Some("rvpmu-hv"),
        }
    }
}

/// Where one run of the kernel happens: a firmware, and what runs on it.
#[derive(Clone, Debug)]
pub struct Target {
    pub fw: Firmware,
    pub under: Under,
}

impl Target {
    /// The kernel on `fw` directly.
    pub fn firmware(fw: Firmware) -> Target {
        Target {
            fw,
            under: Under::Firmware,
        }
    }

    /// The name in reports: the firmware's, or the hypervisor's (with the
    /// firmware's after a slash when `with_fw`).
    pub fn name(&self, with_fw: bool) -> String {
        match self.under.name() {
            None => self.fw.name.clone(),
            Some(h) if with_fw => format!("{h}/{}", self.fw.name),
            Some(h) => h.to_string(),
        }
    }
}

/// What one QEMU run printed and how it ended.
pub struct Capture {
    pub text: String,
    pub timed_out: bool,
    /// QEMU's exit status (`None`: killed at the timeout).
    pub status: Option<i32>,
}

/// Boots the kernel (its ELF `kernel`) on `target` under exact
/// instruction counting, with `smp` harts and the command line `append`
/// (with the device tree `dtb` instead of QEMU's own, if given: on the
/// firmware directly only) and collects the serial output until QEMU
/// exits or the timeout hits.
pub fn boot(
    target: &Target,
    kernel: &Path,
    smp: u32,
    append: &str,
    dtb: Option<&Path>,
) -> Result<Capture> {
    let fw = &target.fw;
    let q = match &target.under {
        Under::Firmware => {
            let mut q = Qemu::virt(smp);
            q.bios = Some(fw.path.clone());
            q.kernel = Some(kernel.to_path_buf());
            q.dtb = dtb.map(Path::to_path_buf);
            if !append.is_empty() {
                q.append = Some(append.to_string());
            }
            q
        }
        Under::RvpmuHv(hypervisor) => {
            if smp != 1 || dtb.is_some() {
                bail!(
                    "under rvpmu-hv the kernel runs on one hart with the hypervisor's device tree"
                );
            }
            let bundle = super::hv::conformance_bundle(kernel, append)?;
            super::hv::machine(&fw.path, hypervisor, &bundle, HV_MEMORY)
        }
    };
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
            exit::describe(status),
            target.name(true),
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
pub enum Status {
    Pass,
    Fail,
    Na,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Na => "N/A",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Check {
    pub id: String,
    pub status: Status,
    pub what: String,
    pub expected: String,
    pub actual: String,
}

/// The parsed output of one suite run.
#[derive(Default)]
pub struct Report {
    pub checks: Vec<Check>,
    /// `RESULT N passed, M failed, K n/a`, if the kernel got that far.
    pub result: Option<(usize, usize, usize)>,
    /// How many checks came before the RESULT line (the ones it counts).
    pub counted: usize,
    /// A check announced with `..>` that never printed its result.
    pub unfinished: Option<String>,
    /// A check whose verdict is QEMU's exit status (`PENDING` line).
    pub pending: Option<Check>,
    pub fatal: Vec<String>,
    pub boot_instret: Option<u64>,
    /// `COST-METHOD`: how the cost probes bracketed each call
    /// (`instret` or `time`).
    pub cost_method: Option<String>,
    pub costs: Vec<(String, u64, String)>,
}

/// (passed, failed, N/A) of some checks.
pub fn tally(checks: &[Check]) -> (usize, usize, usize) {
    let n = |s| checks.iter().filter(|c| c.status == s).count();
    (n(Status::Pass), n(Status::Fail), n(Status::Na))
}

impl Report {
    pub fn failed(&self) -> usize {
        tally(&self.checks).1
    }
    pub fn passed(&self) -> usize {
        tally(&self.checks).0
    }
    pub fn na(&self) -> usize {
        tally(&self.checks).2
    }
    /// Checks that keep our firmware's run from passing: failed or N/A.
    pub fn not_passed(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.status != Status::Pass)
    }
    /// Settles the `PENDING` check from QEMU's exit status: it passed if
    /// the machine powered off (status 0) while the call was under way.
    pub fn settle(&mut self, status: Option<i32>) {
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
            _ => exit::describe(status),
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

pub fn parse(text: &str) -> Report {
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
        } else if let Some(rest) = line.strip_prefix("COST-METHOD ") {
            r.cost_method = rest.split_whitespace().next().map(String::from);
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

/// Runs the suite on `fw` (with the device tree `dtb`, if given),
/// repeating the run without any check that hung or crashed the machine,
/// so one bad answer does not hide the rest.
pub fn suite(
    target: &Target,
    kernel: &Path,
    smp: u32,
    verbose: bool,
    dtb: Option<&Path>,
) -> Result<Report> {
    let mut skip: Vec<String> = Vec::new();
    loop {
        step(&format!(
            "conformance suite on {} (-smp {smp})",
            target.name(true)
        ));
        let append = if skip.is_empty() {
            String::new()
        } else {
            format!("rvpmu.skip={}", skip.join(","))
        };
        let cap = boot(target, kernel, smp, &append, dtb)?;
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
            format!("stopped early ({})", exit::describe(cap.status))
        };
        match rep.unfinished {
            Some(id) if skip.len() < MAX_SKIPS && !skip.contains(&id) => {
                eprintln!("  the run {why} in check {id}; repeating without it (it is reported as failed)");
                skip.push(id);
            }
            _ => bail!(
                "the conformance kernel {why} on {} after {} checks and no check to blame; rerun with --verbose",
                target.name(true),
                rep.checks.len()
            ),
        }
    }
}

/// How the cost probes bracket a call: `instret` around the ecall, or
/// the `time` CSR's edges around it (the one a KVM guest can read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostMethod {
    Instret,
    Time,
}

impl CostMethod {
    /// The kernel's command line for it, and its name in `COST-METHOD`.
    fn words(self) -> (&'static str, &'static str) {
        match self {
            CostMethod::Instret => ("rvpmu.bench", "instret"),
            CostMethod::Time => ("rvpmu.bench=time", "time"),
        }
    }

    pub fn name(self) -> &'static str {
        self.words().1
    }
}

/// The kernel's cost probes on `target` (one hart), bracketed by
/// `method`: the report's `costs` are each call's instructions (empty
/// bracket subtracted) and answer, in the kernel's order.
pub fn costs(target: &Target, kernel: &Path, method: CostMethod) -> Result<Report> {
    let (append, name) = method.words();
    step(&format!("cost probes ({name}) on {}", target.name(true)));
    let cap = boot(target, kernel, 1, append, None)?;
    let rep = parse(&cap.text);
    if cap.timed_out || !cap.text.contains("COST-END") || rep.cost_method.as_deref() != Some(name) {
        bail!(
            "the cost probes ({name}) did not finish on {} ({:?})",
            target.name(true),
            rep.fatal
        );
    }
    Ok(rep)
}

/// Sanity of a finished report: the kernel's own totals match the lines
/// before its RESULT line.
pub fn consistent(rep: &Report) -> Result<()> {
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

/// Our firmware implements every optional feature the suite checks, so an
/// N/A on it is as wrong as a failure: both fail the run (other firmware's
/// are reported only).
pub fn require_all_passed(rep: &Report, smp: u32) -> Result<()> {
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
