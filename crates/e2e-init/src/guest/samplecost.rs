//! `rvpmu.mode=samplecost`: what one sample costs, in instructions, from
//! the counter's overflow to the sampled task's resumption.
//!
//! Under QEMU `-icount shift=0` every instruction retired advances
//! CLOCK_MONOTONIC by 1 ns, in every privilege mode. The same
//! `rvpmu_alu_loop(iters)` is timed without any perf event and with an
//! `instructions:u` sampling event of period `period` (ring buffer mapped,
//! as perf record does), in [`ROUNDS`] alternating pairs, pinned to one
//! CPU. The loop's own instructions are the same in both runs, so
//! `(sampled_ns - plain_ns) / overflows` is the cost of one overflow: the
//! local counter-overflow interrupt, the kernel's riscv-pmu-sbi handler
//! with its SBI calls into the firmware (counter stop / snapshot read,
//! restart with the period's initial value) and the firmware's own work
//! there, perf_event_overflow() writing the sample into the ring buffer,
//! the return to user mode.
//!
//! The difference also holds:
//! - the clock reads: the same two vDSO calls in both runs, so they cancel
//!   (the `instructions:u` event counts those of the sampled run, which
//!   shifts where samples fall, not how many instructions run);
//! - timer ticks (and other interrupts) that fall into the extra time of
//!   the sampled run: the plain run shows their rate, `plain_ns - 2 *
//!   iters` being ticks plus a few hundred ns of glue, so they inflate the
//!   per-sample figure by the same fraction `(plain_ns - 2 * iters) /
//!   plain_ns` (docs/sbi-cost.md, "Per-sample cost under Linux", gives
//!   the measured fraction); a tick's phase may also add or remove one whole tick per
//!   pair, at most one tick's cost / overflows per sample (500 ns with 20
//!   samples, 5 ns with 2000), which the median over the rounds damps;
//! - throttling: if the kernel throttles the event (`throttle` > 0; too
//!   many samples per tick), fewer periods end in an overflow and the
//!   unthrottle work is included; choose a period that does not throttle.
//!
//! Other harts add to CLOCK_MONOTONIC under icount (one vCPU runs at a time
//! and each one's instructions advance the clock): boot this mode with
//! `-smp 1`.

use super::perf::{Event, Filter, Kind, Sampler};
use super::sys;
use super::workload::rvpmu_alu_loop;
use crate::cmdline::Params;
use crate::samplecost::{min_median, result_json, Round};

/// Plain/sampled pairs.
pub const ROUNDS: usize = 5;

/// Time `work` with CLOCK_MONOTONIC.
fn timed(work: impl FnOnce()) -> u64 {
    let t0 = sys::monotonic_ns();
    work();
    sys::monotonic_ns().saturating_sub(t0)
}

/// One plain and one sampled run.
fn pair(ev: Event, p: &Params) -> Result<Round, String> {
    let plain_ns = timed(|| rvpmu_alu_loop(p.iters));
    // A fresh event and ring per round: its records are this round's.
    let s = Sampler::open(ev, p.period).map_err(|e| format!("open sampling {}: {e}", ev.name()))?;
    s.counter().enable().map_err(|e| format!("enable: {e}"))?;
    let sampled_ns = timed(|| rvpmu_alu_loop(p.iters));
    s.counter().disable().map_err(|e| format!("disable: {e}"))?;
    let st = s.stats();
    Ok(Round {
        plain_ns,
        sampled_ns,
        samples: st.samples,
        lost: st.lost,
        throttle: st.throttle,
    })
}

pub fn samplecost(p: &Params) -> Result<(), String> {
    let cpu = sys::current_cpu().max(0) as u32;
    sys::pin_to_cpu(cpu).map_err(|e| format!("pin to cpu{cpu}: {e}"))?;
    let ev = Event::filtered(Kind::Instructions, Filter::User);
    println!(
        "samplecost: {} rounds of rvpmu_alu_loop({}) plain and with {} sampled every {} on cpu{cpu} ({} CPUs online)",
        ROUNDS,
        p.iters,
        ev.name(),
        p.period,
        sys::online_cpus().len()
    );
    // One pair more than reported, the first discarded: the first timed
    // loop after boot meets one-off kernel work that the later ones do
    // not repeat.
    let warm = pair(ev, p)?;
    println!(
        "warm-up (not reported): plain {} ns, sampled {} ns",
        warm.plain_ns, warm.sampled_ns
    );
    let mut rounds = Vec::new();
    for i in 0..ROUNDS {
        let r = pair(ev, p)?;
        println!(
            "round {i}: plain {} ns, sampled {} ns, {} samples, {} lost, {} throttled: {} ns per sample",
            r.plain_ns,
            r.sampled_ns,
            r.samples,
            r.lost,
            r.throttle,
            r.per_sample_ns().map_or("-".into(), |c| format!("{c:.0}"))
        );
        rounds.push(r);
    }
    let per: Vec<f64> = rounds.iter().filter_map(Round::per_sample_ns).collect();
    if let Some((min, median)) = min_median(&per) {
        println!("samplecost: {min:.0} ns (instructions) per sample at least, {median:.0} median");
    }
    println!(
        "{}",
        e2e_proto::result_line(&result_json(p.iters, p.period, &rounds))
    );
    Ok(())
}
