//! The hypervisor's QEMU test: vs-check ending with a shutdown (exit 0)
//! and with an unmapped load (the hypervisor reports it, exit 83), the
//! conformance kernel as a guest, Linux 7.2 booting to /init, Debian's
//! perf in one guest (with and without counter switches) and in two,
//! steal time in two guests; each run twice (under icount the two runs
//! must print the same text).

use super::{report, twice};
use crate::build::hv::{self, Images};
use crate::guest::demo::{HOT_N, RECORD_PERIOD};
use crate::guest::hv::{
    guest_mode, guest_run, run_conformance, run_linux, run_linux_with, run_two_guests,
    run_vs_check, switch_costs, PERF_BOTH, QUANTUM_US, SWITCH_EVERY_MS,
};
use crate::guest::hvcheck::{
    check_conformance, check_linux, check_perf, check_steal, check_vs_check, hot_per_iter,
    native_counts, perf_plan, Sampling, ALU_N,
};
use crate::host::step;
use crate::qemu::exit;
use anyhow::{bail, Result};
use e2e_proto::plan::MODE as PLAN_MODE;

/// The hypervisor's QEMU test: vs-check ending with a shutdown (exit 0)
/// and with an unmapped load (the hypervisor reports it, exit 83), the
/// conformance kernel, Linux 7.2 booting to /init, Debian's perf and
/// steal time; each run twice: under icount the two runs must print the
/// same text.
pub fn test() -> Result<()> {
    let images = hv::build()?;
    let mut failures = Vec::new();
    for end in ["shutdown", "fault"] {
        step(&format!("hypervisor + vs-check guest, vs-check.end={end}"));
        let (first, problems, ()) = twice(
            || run_vs_check(&images, end),
            |r| (check_vs_check(r, end), ()),
        )?;
        report(&mut failures, end, &first, &problems, || {
            eprintln!("    ok ({})", exit::describe(first.code))
        });
    }
    step("hypervisor + the conformance kernel as a VS-mode guest");
    let (first, problems, (pass, fail, na)) =
        twice(|| run_conformance(&images), check_conformance)?;
    report(&mut failures, "conformance", &first, &problems, || {
        eprintln!("    ok: {pass} passed, {fail} failed and {na} n/a as documented")
    });
    step("hypervisor + Linux 7.2 and the guest userland (rvpmu.mode=boot)");
    let (first, problems, ()) = twice(
        || run_linux(&images, "rvpmu.mode=boot"),
        |r| (check_linux(r), ()),
    )?;
    report(&mut failures, "linux", &first, &problems, || {
        eprintln!("    ok ({})", exit::describe(first.code))
    });
    let mut alone = None;
    for switch in [false, true] {
        let counts = perf_step(&images, switch, &mut failures)?;
        alone = alone.or(counts);
    }
    for busy in [[true, true], [true, false]] {
        steal_step(&images, busy, &mut failures)?;
    }
    perf_two_step(&images, alone, &mut failures)?;
    if !failures.is_empty() {
        bail!("hypervisor tests failed: {}", failures.join(", "));
    }
    Ok(())
}

/// Debian's perf in the guest (sampling, then exact counts), twice; with
/// `switch`, the guest's counters are saved and restored every 1 ms of
/// host time, which must change none of the results; the cost is reported.
/// Returns the first run's instructions:u counts of alu N and alu 2N
/// when it passed.
fn perf_step(
    images: &Images,
    switch: bool,
    failures: &mut Vec<&'static str>,
) -> Result<Option<[u64; 2]>> {
    step(&format!(
        "hypervisor + Linux 7.2: Debian's perf record and perf stat in the guest (rvpmu.mode=plan{})",
        if switch { ", counters saved and restored every 1 ms" } else { "" }
    ));
    let plan = perf_plan();
    let hot = hot_per_iter()?;
    let (first, mut problems, (v, s, costs)) = twice(
        || run_linux_with(images, PLAN_MODE, Some(&plan), switch),
        |r| {
            let (mut problems, v, s) = check_perf(r, hot);
            let costs = switch_costs(&r.text, "switch save+restore");
            if switch && !costs.iter().any(|c| c.0 >= 1 && c.1 > 0) {
                problems.push(format!(
                    "no switch with a running counter reported: {costs:?}"
                ));
            }
            if !switch && !costs.is_empty() {
                problems.push(format!(
                    "switch costs reported without {SWITCH_EVERY_MS}: {costs:?}"
                ));
            }
            (problems, (v, s, costs))
        },
    )?;
    if !switch {
        let native = native_counts(images, &plan)?;
        if native != [v[0], v[1]] {
            problems.push(format!(
                "instructions:u of alu N, 2N in the guest {:?}, native on rvpmu-fw {native:?}: want the same (the guest's user code and what it sees are the native ones)",
                [v[0], v[1]]
            ));
        } else {
            eprintln!("    ok: native on rvpmu-fw (same Image, initramfs and plan) counts the same instructions:u: {native:?}");
        }
    }
    let ok = problems.is_empty();
    let name = if switch {
        "linux-perf-switch"
    } else {
        "linux-perf"
    };
    report(failures, name, &first, &problems, || {
        perf_figures(v, s, &costs)
    });
    Ok(ok.then(|| [v[0].unwrap_or(0), v[1].unwrap_or(0)]))
}

/// A passing perf run's figures.
fn perf_figures(v: [Option<u64>; 3], s: Sampling, costs: &[(u64, u64, u64, u64, u64)]) {
    let [n, n2, all] = v.map(|x| x.unwrap_or(0));
    eprintln!(
        "    ok: instructions:u alu {ALU_N} = {n}, alu {} = {n2} (difference {}, exactly 2N); instructions (VU + VS) alu {ALU_N} = {all}",
        2 * ALU_N,
        n2 - n
    );
    eprintln!(
        "    ok: perf record -e instructions:u -c {RECORD_PERIOD} of rvpmu-work hot {HOT_N}: {} samples for {} periods; rvpmu_hot_a {:.2}%, rvpmu_hot_b {:.2}%",
        s.samples, s.periods, s.hot_a, s.hot_b
    );
    for (k, n, min, max, mean) in costs {
        eprintln!(
            "    switch with {k} counter(s) running: {n} times, {min}..{max} instructions (mean {mean})"
        );
    }
}

/// Two Linux guests time-sliced (`busy[g]`: guest g runs the steal
/// scenario, else it idles), twice: [`check_steal`]'s assertions, and
/// the same text in both runs.
fn steal_step(images: &Images, busy: [bool; 2], failures: &mut Vec<&'static str>) -> Result<()> {
    let name = if busy[1] {
        "two busy guests"
    } else {
        "a busy and an idle guest"
    };
    step(&format!(
        "hypervisor + two Linux 7.2 guests time-sliced at {QUANTUM_US} us: {name}, steal time"
    ));
    let (first, problems, figures) = twice(
        || run_two_guests(images, None, busy.map(guest_mode)),
        |r| check_steal(r, busy),
    )?;
    let name = if busy[1] {
        "two-busy-guests"
    } else {
        "busy-and-idle-guests"
    };
    report(failures, name, &first, &problems, || {
        for f in figures {
            eprintln!("    ok: {f}");
        }
    });
    Ok(())
}

/// Debian's perf in both guests at once, time-sliced, twice: the perf
/// plan's assertions in each, and each guest's instructions:u counts of
/// alu N and alu 2N exactly what a guest counts alone (`alone`, from
/// [`perf_step`]): neither the other guest's nor the hypervisor's
/// instructions are in them, though both guests use the same host
/// counters for the same events in turn.
fn perf_two_step(
    images: &Images,
    alone: Option<[u64; 2]>,
    failures: &mut Vec<&'static str>,
) -> Result<()> {
    step("hypervisor + two Linux 7.2 guests time-sliced: Debian's perf in both");
    let plan = perf_plan();
    let hot = hot_per_iter()?;
    let (first, problems, (figures, costs)) = twice(
        || run_two_guests(images, Some(&plan), PERF_BOTH),
        |r| {
            let mut problems = Vec::new();
            let mut figures = Vec::new();
            for g in 0..2 {
                let (p, v, s) = check_perf(&guest_run(r, g), hot);
                problems.extend(p.into_iter().map(|p| format!("guest {g}: {p}")));
                match alone {
                    Some(a) if [v[0], v[1]] != [Some(a[0]), Some(a[1])] => problems.push(format!(
                        "guest {g}: instructions:u of alu N, 2N time-sliced {:?}, alone {a:?}: want the same",
                        [v[0], v[1]]
                    )),
                    Some(_) => {}
                    None => problems.push("no single-guest counts to compare with".into()),
                }
                figures.push((v, s));
            }
            let costs = switch_costs(&r.text, "guest switch");
            if !costs.iter().any(|c| c.0 >= 1 && c.1 > 0) {
                problems.push(format!("no guest switch with a running counter: {costs:?}"));
            }
            (problems, (figures, costs))
        },
    )?;
    report(failures, "perf-two-guests", &first, &problems, || {
        for (g, (v, s)) in figures.into_iter().enumerate() {
            eprintln!("    guest {g}:");
            perf_figures(v, s, if g == 1 { &costs } else { &[] });
        }
        eprintln!("    ok: both guests count exactly what a guest counts alone");
    });
    Ok(())
}
