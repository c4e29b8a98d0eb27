//! The e2e harness: one check line per expectation, boots that must be
//! clean (no kernel complaint but a known bug's exact lines), the known
//! kernel bugs by their console signatures.

use crate::build::disasm::loop_body_instructions;
use crate::build::dt::Chosen;
use crate::build::kernel::{Release, Version};
use crate::guest::linux::{kernel_command_line, Guest, Outcome};
use crate::qemu::Firmware;
use crate::suite::{print_check, Verdict};
use serde_json::Value;

/// A kernel bug the suite knows by its exact console signature: the lines
/// it prints are not counted as complaints of a boot, and a check
/// documents them instead.
pub(super) struct KnownBug {
    /// The signature only counts after a console line containing this.
    pub(super) after: &'static str,
    /// Line text around a decimal number (the counter index).
    pub(super) prefix: &'static str,
    pub(super) suffix: &'static str,
    pub(super) what: &'static str,
}

/// Linux 6.12 and 7.2: pmu_sbi_dying_cpu() disables the PMU snapshot area
/// at CPU offline, but pmu_sbi_snapshot_setup() returns early at CPU online
/// because `snapshot_set_done` is still true, so the area is never
/// registered again; every STOP with TAKE_SNAPSHOT on that CPU then gets
/// SBI_ERR_NO_SHMEM (spec: the snapshot shared memory is not available),
/// and the kernel reads stale values. 6.12 maps NO_SHMEM to -ENOTSUPP
/// (524), 7.2 to -ENOMEM (12) (drivers/perf/riscv_pmu_sbi.c's sbi_err_map_linux_errno): the signature is the kernel's.
pub(super) fn snapshot_not_reregistered(kernel: Version) -> KnownBug {
    KnownBug {
        after: "CPU1: off",
        prefix: "riscv-pmu-sbi: Stopping counter idx ",
        suffix: match kernel.release {
            Release::V6_12 => " failed with error -524",
            Release::V7_2 => " failed with error -12",
        },
        what: "known Linux bug (snapshot not re-registered after CPU online; 6.12 and 7.2); firmware answers NO_SHMEM per spec",
    }
}

impl KnownBug {
    pub(super) fn matches(&self, line: &str) -> bool {
        let Some(i) = line.find(self.prefix) else {
            return false;
        };
        let rest = &line[i + self.prefix.len()..];
        rest.trim_end()
            .strip_suffix(self.suffix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    Pass,
    Fail,
    /// The peer firmware lacks a feature: reported, not failed.
    Lacks,
}

pub(super) struct Report {
    pub(super) passed: u32,
    pub(super) failed: Vec<String>,
    pub(super) lacks: Vec<String>,
}

/// Checks for one kernel on one firmware.
pub(super) struct Suite<'a> {
    pub(super) kernel: Version,
    pub(super) fw: &'a Firmware,
    pub(super) report: &'a mut Report,
}

impl Suite<'_> {
    /// Instructions per iteration of each workload loop of the guest's
    /// /init (`symbols`), from its disassembly; a failed check, and
    /// `None`, when one is not found.
    pub(super) fn loop_bodies<const N: usize>(
        &mut self,
        label: &str,
        guest: &Guest,
        symbols: [&str; N],
    ) -> Option<[u64; N]> {
        let mut bodies = [0; N];
        for (body, symbol) in bodies.iter_mut().zip(symbols) {
            match loop_body_instructions(&guest.initramfs.init_elf, symbol) {
                Ok(n) => *body = n,
                Err(e) => {
                    self.check(
                        &format!("{label}: {symbol} disassembles"),
                        false,
                        false,
                        "its loop in /init",
                        &format!("{e:#}"),
                        None,
                    );
                    return None;
                }
            }
        }
        Some(bodies)
    }

    /// Record one check. `feature`: a capability the spec makes optional
    /// (the peer may lack it); our firmware must have it.
    pub(super) fn check(
        &mut self,
        name: &str,
        ok: bool,
        feature: bool,
        expected: &str,
        got: &str,
        out: Option<&Outcome>,
    ) {
        let status = match (ok, feature && self.fw.is_opensbi()) {
            (true, _) => Status::Pass,
            (false, true) => Status::Lacks,
            (false, false) => Status::Fail,
        };
        let label = format!("[{} {}] {name}", self.kernel.name(), self.fw.name);
        let tail = out.map(|o| o.tail(25));
        match status {
            Status::Pass => {
                print_check(&label, Verdict::Pass, expected, got);
                self.report.passed += 1;
            }
            Status::Lacks => {
                print_check(&label, Verdict::Lacks, expected, got);
                self.report.lacks.push(label);
            }
            Status::Fail => {
                let context = tail.as_deref();
                print_check(&label, Verdict::Fail { context }, expected, got);
                self.report.failed.push(label);
            }
        }
    }

    /// Boot and check that the boot itself was clean; returns the outcome
    /// only when /init finished.
    pub(super) fn boot(
        &mut self,
        guest: &Guest,
        label: &str,
        smp: u32,
        args: &str,
        timeout_s: u64,
    ) -> Option<Outcome> {
        self.boot_with(guest, label, smp, Chosen::NONE, None, args, timeout_s)
    }

    /// [`Suite::boot`] with rvpmu-fw switches in the DT and, optionally, a
    /// known kernel bug whose exact lines do not count as complaints.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn boot_with(
        &mut self,
        guest: &Guest,
        label: &str,
        smp: u32,
        chosen: Chosen,
        known: Option<&KnownBug>,
        args: &str,
        timeout_s: u64,
    ) -> Option<Outcome> {
        let booted = guest.boot(self.fw, smp, chosen, args, timeout_s);
        self.judge_boot(label, chosen, known, args, timeout_s, booted)
    }

    /// The checks of every boot, however it was started: QEMU ran, /init
    /// finished, no complaint on the console (but `known`'s exact lines),
    /// and with rvpmu-fw switches in the DT, QEMU's bootargs and initrd
    /// arrived. Returns the outcome only when /init finished.
    pub(super) fn judge_boot(
        &mut self,
        label: &str,
        chosen: Chosen,
        known: Option<&KnownBug>,
        args: &str,
        timeout_s: u64,
        booted: anyhow::Result<Outcome>,
    ) -> Option<Outcome> {
        let out = match booted {
            Ok(o) => o,
            Err(e) => {
                self.check(
                    &format!("{label}: QEMU starts"),
                    false,
                    false,
                    "QEMU to start",
                    &format!("{e:#}"),
                    None,
                );
                return None;
            }
        };
        let (known_lines, bad) = split_complaints(&out.console, known);
        let finished =
            !out.timed_out && out.done.as_deref() == Some("ok") && out.bad_results.is_empty();
        let got = if out.timed_out {
            format!("timed out after {timeout_s} s")
        } else if !bad.is_empty() {
            format!("console complained: {}", bad.join(" | "))
        } else {
            format!(
                "/init: {:?}, {} result(s), {} unparsable; {:.1} s wall",
                out.done,
                out.results.len(),
                out.bad_results.len(),
                out.wall.as_secs_f64()
            )
        };
        let (name, expected) = match known {
            Some(k) => (
                format!("{label}: boots to /init, finishes, powers off, no kernel warning but the known bug's"),
                format!("RVPMU-DONE ok; no firmware/kernel line with warn, error, fail, panic, oops, BUG, invalid, except \"{}N{}\" after \"{}\" ({} such line(s) set aside)", k.prefix, k.suffix, k.after, known_lines.len()),
            ),
            None => (
                format!("{label}: boots to /init, finishes, powers off, no kernel warning"),
                "RVPMU-DONE ok; no firmware/kernel line with warn, error, fail, panic, oops, BUG, invalid".to_string(),
            ),
        };
        self.check(
            &name,
            finished && bad.is_empty(),
            false,
            &expected,
            &got,
            Some(&out),
        );
        if finished && !chosen.is_none() {
            // QEMU must have written bootargs and the initrd into our DT:
            // the kernel echoes its command line, and /init (from the
            // initramfs) finished.
            let want = format!("Kernel command line: {}", kernel_command_line(args));
            let seen = out.console.lines().any(|l| l.trim_end().ends_with(&want));
            self.check(
                &format!(
                    "{label}: -dtb with /chosen {} keeps QEMU's bootargs and initrd",
                    chosen.describe()
                ),
                seen,
                false,
                &format!("\"{want}\" on the console and /init from the initramfs finished"),
                if seen {
                    "command line and initramfs arrived"
                } else {
                    "command line missing"
                },
                Some(&out),
            );
        }
        finished.then_some(out)
    }
}

/// Console lines from the firmware or the kernel (not /init's own report)
/// that signal trouble. A clean boot on either firmware has none.
pub(super) fn complaints(console: &str) -> Vec<&str> {
    split_complaints(console, None).1
}

/// [`complaints`], owned, for other xtask modules booting the guest.
pub fn kernel_complaints(console: &str) -> Vec<String> {
    complaints(console).into_iter().map(String::from).collect()
}

/// [`complaints`], split into the lines of `known` (only after its marker
/// line) and all others.
pub(super) fn split_complaints<'a>(
    console: &'a str,
    known: Option<&KnownBug>,
) -> (Vec<&'a str>, Vec<&'a str>) {
    let mut after_marker = false;
    let mut known_lines = Vec::new();
    let mut others = Vec::new();
    let mut in_init = false;
    for l in console.lines() {
        if let Some(k) = known {
            if l.contains(k.after) {
                after_marker = true;
            }
        }
        if l.starts_with("rvpmu /init:") {
            in_init = true;
        }
        if !is_complaint(l, in_init) {
            continue;
        }
        match known {
            Some(k) if after_marker && k.matches(l) => known_lines.push(l),
            _ => others.push(l),
        }
    }
    (known_lines, others)
}

/// Whether one console line signals trouble. `in_init`: /init has
/// started; from then on only kernel lines (timestamped) count, /init's
/// own report may say "error" about what it measured.
pub(super) fn is_complaint(line: &str, in_init: bool) -> bool {
    const WORDS: [&str; 8] = [
        "warn",
        "error",
        "fail",
        "panic",
        "oops",
        "bug:",
        "unable to handle",
        "invalid",
    ];
    let from_init = in_init && !line.starts_with('[');
    let lower = line.to_ascii_lowercase();
    !from_init && WORDS.iter().any(|w| lower.contains(w))
}

pub(super) fn within(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= want.abs() * rel
}

pub(super) fn event<'a>(r: &'a Value, name: &str) -> Option<&'a Value> {
    r["events"].as_array()?.iter().find(|e| e["name"] == name)
}

pub(super) fn val(r: &Value, name: &str) -> Option<u64> {
    event(r, name)?["value"].as_u64()
}

/// Counter numbers from "riscv-pmu-sbi: N firmware and M hardware counters".
pub(super) fn counter_line(out: &Outcome) -> Option<(u64, u64)> {
    let l = out
        .console
        .lines()
        .find(|l| l.contains("firmware and") && l.contains("hardware counters"))?;
    let w: Vec<&str> = l.split_whitespace().collect();
    let i = w.iter().position(|x| *x == "firmware")?;
    Some((
        w.get(i.checked_sub(1)?)?.parse().ok()?,
        w.get(i + 2)?.parse().ok()?,
    ))
}
#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn complaints_ignore_init_report_but_not_kernel_lines() {
        let console =
            "OpenSBI v1.5\n[    0.1] riscv-pmu-sbi: 16 firmware and 18 hardware counters\n\
                       rvpmu /init: mode stress\nstress: 0 open errors\n\
                       [    1.0] WARNING: CPU: 0 PID: 1 at drivers/perf/riscv_pmu_sbi.c\n";
        assert_eq!(
            complaints(console),
            vec!["[    1.0] WARNING: CPU: 0 PID: 1 at drivers/perf/riscv_pmu_sbi.c"]
        );
        assert_eq!(
            complaints("fw: Warning: bad DT\nrvpmu /init: x\n"),
            vec!["fw: Warning: bad DT"]
        );
        assert!(complaints("[ 0.1] riscv-pmu-sbi: SBI PMU extension is available\n").is_empty());
    }

    #[test]
    fn known_bug_lines_are_set_aside_only_after_the_marker() {
        let bug = &snapshot_not_reregistered(Version::V6_12);
        assert!(
            bug.matches("[    2.1] riscv-pmu-sbi: Stopping counter idx 3 failed with error -524")
        );
        assert!(bug.matches("riscv-pmu-sbi: Stopping counter idx 12 failed with error -524  "));
        assert!(
            !bug.matches("[    2.1] riscv-pmu-sbi: Stopping counter idx 3 failed with error -22")
        );
        assert!(
            !bug.matches("[    2.1] riscv-pmu-sbi: Stopping counter idx x failed with error -524")
        );
        assert!(
            !bug.matches("[    2.1] riscv-pmu-sbi: Stopping counter idx  failed with error -524")
        );
        let sig = "[    2.1] riscv-pmu-sbi: Stopping counter idx 3 failed with error -524";
        let before = format!("{sig}\n[    2.0] CPU1: off\nrvpmu /init: mode boot\n");
        // Before the marker the line is an ordinary complaint.
        assert_eq!(split_complaints(&before, Some(bug)), (vec![], vec![sig]));
        let after = format!("[    2.0] CPU1: off\n{sig}\n[    2.2] WARNING: something else\n");
        assert_eq!(
            split_complaints(&after, Some(bug)),
            (vec![sig], vec!["[    2.2] WARNING: something else"])
        );
        // Without the known bug everything counts.
        assert_eq!(complaints(&after).len(), 2);
    }

    #[test]
    fn counter_line_parses_kernel_probe_message() {
        let out = Outcome {
            console: "[    0.106070] riscv-pmu-sbi: 16 firmware and 18 hardware counters\n".into(),
            results: vec![],
            bad_results: vec![],
            done: None,
            timed_out: false,
            wall: std::time::Duration::ZERO,
        };
        assert_eq!(counter_line(&out), Some((16, 18)));
    }
}
