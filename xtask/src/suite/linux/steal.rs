//! Steal time: the cells /init reports from /proc/stat and the checks
//! with rvpmu-fw's noisy neighbour.

use super::{complaints, hotplug_writes_ok, Suite};
use crate::build::dt::{Chosen, NoisyNeighbour};
use crate::guest::linux::{Guest, Outcome, STEAL_BUSY_MS};
use serde_json::Value;

/// Steal injected by the noisy neighbour in the steal checks, and how far
/// Linux's share may be from busy/period: /proc/stat counts in 10 ms
/// USER_HZ ticks and the kernel folds steal in at its 4 ms ticks, so over
/// a 2 s interval (200 ticks per CPU) the share is good to about 1 point.
pub(super) const STEAL_PERCENT: u32 = 20;
pub(super) const STEAL_TOLERANCE: f64 = 0.03;
/// Wall-clock limit of a boot with the injector on: its M-mode spin reads
/// the time CSR, which is slow to emulate under icount.
pub(super) const STEAL_TIMEOUT_S: u64 = 400;

/// One CPU's (or all CPUs') steal over a busy interval, as /init reported
/// it from /proc/stat (USER_HZ ticks).
pub(super) struct StealCell {
    /// `cpuN` or `all`.
    pub(super) cpu: String,
    /// Steal and total time that passed (absent if /init could not tell).
    pub(super) delta: Option<(u64, u64)>,
    /// Absolute steal at the start and the end of the interval.
    pub(super) before: Option<u64>,
    pub(super) after: Option<u64>,
    /// Chunks of the guest's busy loop that ran: its own progress.
    pub(super) loop_chunks: Option<u64>,
}

impl StealCell {
    /// Steal / total, computed here from the integers.
    pub(super) fn share(&self) -> Option<f64> {
        match self.delta {
            Some((s, t)) if t > 0 => Some(s as f64 / t as f64),
            _ => None,
        }
    }

    pub(super) fn describe(&self) -> String {
        match (self.delta, self.share()) {
            (Some((s, t)), Some(sh)) => format!("{} {:.1}% ({s}/{t} ticks)", self.cpu, sh * 100.0),
            _ => format!(
                "{} n/a (before {:?}, after {:?})",
                self.cpu, self.before, self.after
            ),
        }
    }
}

/// The cells of a `steal` result, per CPU first, then `all`.
pub(super) fn steal_cells(r: &Value) -> Vec<StealCell> {
    r["cpus"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| StealCell {
            cpu: c["cpu"].as_str().unwrap_or("?").to_string(),
            delta: c["steal"].as_u64().zip(c["total"].as_u64()),
            before: c["steal_before"].as_u64(),
            after: c["steal_after"].as_u64(),
            loop_chunks: c["loop_chunks"].as_u64(),
        })
        .collect()
}

pub(super) fn describe_cells(cells: &[StealCell]) -> String {
    cells
        .iter()
        .map(StealCell::describe)
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn steal_result<'a>(out: &'a Outcome, phase: &str) -> Option<&'a Value> {
    out.scenario("steal")
        .into_iter()
        .find(|r| r["phase"] == phase)
}

/// Steal time with rvpmu-fw's noisy neighbour: off (exactly 0), 20 % on
/// one hart, 20 % on two harts plus cpu1 offline/online. The peer firmware
/// (no STA) runs only the one-hart 20 % boot, where it is reported as
/// lacking STA. Returns one summary line per boot for the final report.
pub(super) fn steal_checks(s: &mut Suite, guest: &Guest) -> Vec<(String, String)> {
    let noisy = NoisyNeighbour::from_percent(STEAL_PERCENT).expect("constant in range");
    let want = noisy.share();
    let on = Chosen {
        noisy_neighbour: Some(noisy),
        ..Chosen::NONE
    };
    let expect_share = format!(
        "{:.0}% +/- {:.0} points (busy {} us / period {} us from the DT)",
        want * 100.0,
        STEAL_TOLERANCE * 100.0,
        noisy.busy_us,
        noisy.period_us
    );
    let near = |c: &StealCell| {
        c.share()
            .is_some_and(|sh| (sh - want).abs() <= STEAL_TOLERANCE)
    };
    let args = |extra: &str| format!("rvpmu.mode=steal rvpmu.busy_ms={STEAL_BUSY_MS}{extra}");
    let mut summary = Vec::new();
    let peer = s.fw.is_opensbi();

    // Injector off: no steal at all. Its busy-loop progress on cpu0 is the
    // reference for the guest's own view of the time withheld below.
    let mut progress_off = None;
    if !peer {
        if let Some(out) = s.boot(guest, "steal off -smp 1", 1, &args(""), STEAL_TIMEOUT_S) {
            let cells = steal_result(&out, "busy")
                .map(steal_cells)
                .unwrap_or_default();
            let ok = !cells.is_empty()
                && cells
                    .iter()
                    .all(|c| matches!(c.delta, Some((0, t)) if t > 0));
            s.check(
                "steal off -smp 1: steal share over the busy interval",
                ok,
                false,
                &format!("exactly 0 steal ticks on every CPU and overall, over a {STEAL_BUSY_MS} ms interval that counted some time"),
                &describe_cells(&cells),
                Some(&out),
            );
            progress_off = cells
                .iter()
                .find(|c| c.cpu == "cpu0")
                .and_then(|c| c.loop_chunks);
            summary.push(("off, -smp 1".to_string(), describe_cells(&cells)));
        }
    }

    // Injector at 20 %, one hart.
    let label = format!("steal {STEAL_PERCENT}% -smp 1");
    if let Some(out) = s.boot_with(guest, &label, 1, on, None, &args(""), STEAL_TIMEOUT_S) {
        let r = steal_result(&out, "busy");
        let (det, comp) = (
            out.console.contains("riscv-pv: SBI STA extension detected"),
            out.console
                .contains("riscv-pv: Computing paravirt steal-time"),
        );
        let guest_saw =
            r.is_some_and(|r| r["sta_detected"] == true && r["steal_computing"] == true);
        s.check(
            &format!("{label}: kernel detects SBI STA and computes paravirt steal time"),
            det && comp && guest_saw,
            true,
            "\"SBI STA extension detected\" and \"Computing paravirt steal-time\" on the console and in /init's kernel log",
            &format!("console: detected {det}, computing {comp}; /init's dmesg: {}", r.map(|r| format!("detected {}, computing {}", r["sta_detected"], r["steal_computing"])).unwrap_or("no result".into())),
            Some(&out),
        );
        let cells = r.map(steal_cells).unwrap_or_default();
        s.check(
            &format!("{label}: steal share over the busy interval"),
            !cells.is_empty() && cells.iter().all(near),
            true,
            &format!("{expect_share} on cpu0 and overall"),
            &describe_cells(&cells),
            Some(&out),
        );
        // Independent of the STA record: the guest's busy loop must lose
        // the share the firmware withholds (one hart: all instructions of
        // the interval are that hart's).
        let progress = cells
            .iter()
            .find(|c| c.cpu == "cpu0")
            .and_then(|c| c.loop_chunks);
        if let (Some(off), Some(on)) = (progress_off, progress) {
            let lost = 1.0 - on as f64 / off.max(1) as f64;
            s.check(
                &format!("{label}: the guest's own progress drops by the withheld share"),
                (lost - want).abs() <= STEAL_TOLERANCE,
                false,
                &format!("busy-loop progress lost vs the injector-off boot: {expect_share}"),
                &format!("{:.1}% ({on} vs {off} loop chunks)", lost * 100.0),
                Some(&out),
            );
        }
        summary.push((format!("{STEAL_PERCENT}%, -smp 1"), describe_cells(&cells)));
    }
    if peer {
        return summary;
    }

    // Injector at 20 %, two harts both busy (per-hart registration), then
    // cpu1 offline and online (Linux unregisters and re-registers cpu1's
    // STA record) and a second interval.
    let label = format!("steal {STEAL_PERCENT}% -smp 2");
    if let Some(out) = s.boot_with(
        guest,
        &label,
        2,
        on,
        None,
        &args(" rvpmu.hotplug=1"),
        STEAL_TIMEOUT_S,
    ) {
        let cells = steal_result(&out, "busy")
            .map(steal_cells)
            .unwrap_or_default();
        let per_cpu: Vec<&StealCell> = cells.iter().filter(|c| c.cpu != "all").collect();
        s.check(
            &format!("{label}: per-CPU steal share, both CPUs busy"),
            per_cpu.len() == 2 && per_cpu.iter().all(|c| near(c)),
            false,
            &format!("{expect_share} on cpu0 and on cpu1"),
            &describe_cells(&cells),
            Some(&out),
        );
        summary.push((format!("{STEAL_PERCENT}%, -smp 2"), describe_cells(&cells)));
        let r = steal_result(&out, "after-hotplug");
        let h = r.cloned().unwrap_or(Value::Null);
        let sta_complaints: Vec<&str> = complaints(&out.console)
            .into_iter()
            .filter(|l| l.contains("steal") || l.contains("riscv-pv") || l.contains("STA"))
            .collect();
        s.check(
            &format!("{label}: cpu1 offline/online via sysfs with the injector on"),
            hotplug_writes_ok(&h) && sta_complaints.is_empty(),
            false,
            "both writes succeed, cpu1 leaves and rejoins the online list, no kernel complaint about steal time",
            &format!(
                "offline {:?} (gone {}), online {:?} (back {}); STA complaints: {}",
                h["offline"], h["offline_seen"], h["online"], h["online_seen"],
                if sta_complaints.is_empty() { "none".to_string() } else { sta_complaints.join(" | ") }
            ),
            Some(&out),
        );
        let cells = r.map(steal_cells).unwrap_or_default();
        let cpu1 = cells.iter().find(|c| c.cpu == "cpu1");
        let history = format!(
            "cpu1 steal ticks: {} before offline, {} right after online, {} after {} ms settling, {} after the interval",
            h["steal_before_offline"],
            h["steal_after_online"],
            cpu1.and_then(|c| c.before).map(|v| v.to_string()).unwrap_or("-".into()),
            h["settle_ms"],
            cpu1.and_then(|c| c.after).map(|v| v.to_string()).unwrap_or("-".into()),
        );
        s.check(
            &format!("{label}: cpu1's steal keeps increasing after it is back (STA re-registered)"),
            cpu1.is_some_and(|c| matches!(c.delta, Some((st, _)) if st > 0)),
            false,
            &format!("steal ticks on cpu1 grow over a {STEAL_BUSY_MS} ms busy interval after the re-online"),
            &format!("{}; {history}", cpu1.map(StealCell::describe).unwrap_or("no cpu1 cell".into())),
            Some(&out),
        );
        s.check(
            &format!("{label}: per-CPU steal share after cpu1 came back"),
            cells.iter().filter(|c| c.cpu != "all").count() == 2
                && cells.iter().filter(|c| c.cpu != "all").all(near),
            false,
            &format!("{expect_share} on cpu0 and on cpu1"),
            &describe_cells(&cells),
            Some(&out),
        );
        summary.push((
            format!("{STEAL_PERCENT}%, -smp 2, after cpu1 off/on"),
            describe_cells(&cells),
        ));
    }
    summary
}
#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn steal_cells_compute_shares_from_integers() {
        let r: Value = serde_json::from_str(
            r#"{"cpus":[{"cpu":"cpu0","steal_before":2,"steal_after":42,"steal":40,"total":200,"share":0.2},
                {"cpu":"cpu1","error":"x","steal_before":5}]}"#,
        )
        .unwrap();
        let c = steal_cells(&r);
        assert_eq!(c.len(), 2);
        assert!((c[0].share().unwrap() - 0.2).abs() < 1e-12);
        assert_eq!(c[0].describe(), "cpu0 20.0% (40/200 ticks)");
        assert_eq!(c[1].share(), None);
        assert!(c[1].describe().starts_with("cpu1 n/a"));
    }
}
