//! The KVM checks: the project's Linux booted as a KVM host under icount
//! on each firmware (one hart, QEMU with H), running the same kernel as a
//! KVM guest with Debian's QEMU and KVM. One nested boot per firmware, all
//! checks from its one plan:
//!
//! - in the KVM guest, perf's `instructions:u` of `alu 2N` minus `alu N`
//!   is N loop iterations to the instruction, and each count equals the
//!   native boot's count of the same command (same kernel, same firmware);
//! - `:k` in the KVM guest: `alu 2N` minus `alu N` is small beside N (the
//!   guest kernel's timer ticks during the longer loop), so neither `:u`
//!   nor `:k` takes in the other mode or the KVM host;
//! - two Linux/KVM behaviours that make a KVM guest's perf read 0 (both
//!   firmwares alike; the checks pass while they are there);
//! - on the KVM host, `perf stat -e instructions:G,instructions:H --
//!   qemu-system-riscv64 ...` around a KVM guest that runs `alu M`: both
//!   events on a counter the whole time (Smcntrpmf puts one on the fixed
//!   instret counter), `:G` at least the loop, the two within the
//!   command's instructions, and `:G` of `alu 2M` minus `alu M` the loop's
//!   M more iterations plus the guest kernel's ticks meanwhile while `:H`
//!   stays.

use super::perf::{find, stat, value, ALU_N};
use super::{Report, Suite};
use crate::build::dt::Chosen;
use crate::guest::kvm::{guest_outcome, host_cmd, KvmGuest, KvmHost};
use crate::guest::linux::Guest;
use crate::guest::perftool::{CmdResult, Plan, StatLine};
use crate::host::step;
use crate::qemu::Firmware;
use crate::qemu::Machine;
use e2e_proto::plan::MODE as PLAN_MODE;
use std::time::Duration;

/// `alu` iterations of the KVM guests the KVM host's perf measures: M and
/// 2M have the same number of digits.
const SPLIT_N: u64 = 40_000_000;
/// The whole nested boot's wall-clock limit.
const TIMEOUT_S: u64 = 900;
/// Each KVM guest's limit on the KVM host's clock (icount: 10^9
/// instructions a second), far above what its plan takes: one that hangs
/// is killed and its console so far is reported.
const GUEST_TIMEOUT_S: u64 = 20;

/// A perf stat -x, line of `name`'s output for `event`.
fn line(r: &[CmdResult], name: &str, event: &str) -> Option<StatLine> {
    stat(r, name).into_iter().find(|l| l.event == event)
}

fn on_counter_always(l: &Option<StatLine>) -> bool {
    l.as_ref()
        .is_some_and(|l| l.running_pct.is_some_and(|p| p >= 100.0))
}

/// The KVM checks of `guest`'s kernel on `fw`; `native`: the native
/// boot's `instructions:u` of `alu N` and `alu 2N` (the perf suite's
/// `user` and `base` commands, the same as here), when it ran.
pub fn suite(
    guest: &Guest,
    host: &KvmHost,
    fw: &Firmware,
    native: Option<(u64, u64)>,
    report: &mut Report,
) {
    step(&format!(
        "KVM: {} as a KVM host on {} (icount), the same kernel as its KVM guest",
        guest.version, fw.name
    ));
    let mut s = Suite {
        kernel: guest.version,
        fw,
        report,
    };
    let Some([alu]) = s.loop_bodies("kvm", guest, ["rvpmu_alu_loop"]) else {
        return;
    };
    let (n, n2) = (ALU_N, 2 * ALU_N);
    let mut p = Plan::exact();
    let user = "perf stat -x, -e instructions:u,cycles:u -- rvpmu-work alu";
    p.cmd("user", &format!("{user} {n}"));
    p.cmd("base", &format!("{user} {n2}"));
    let kernel = "perf stat -x, -e instructions:k -- rvpmu-work alu";
    p.cmd("k-n", &format!("{kernel} {n}"));
    p.cmd("k-2n", &format!("{kernel} {n2}"));
    p.cmd(
        "fixed-twice",
        &format!("perf stat -x, -e instructions,cycles,instructions:k -- rvpmu-work alu {n}"),
    );
    p.cmd(
        "hpm-alone",
        &format!("perf stat -x, -e dTLB-load-misses:k -- rvpmu-work alu {n}"),
    );
    p.cmd(
        "hpm-twice",
        &format!("perf stat -x, -e dTLB-load-misses:u,dTLB-load-misses:k -- rvpmu-work alu {n}"),
    );
    let split_guest = |m: u64| -> anyhow::Result<KvmGuest> {
        let mut p = Plan::default();
        p.cmd("alu", &format!("rvpmu-work alu {m}"));
        let mut g = KvmGuest::bare_plan(&format!("alu-{m}"), guest, &p)?;
        g.timeout_s = Some(GUEST_TIMEOUT_S);
        Ok(g)
    };
    let guests = (|| -> anyhow::Result<_> {
        let mut counts = KvmGuest::linux_plan("counts", guest, &p)?;
        counts.timeout_s = Some(GUEST_TIMEOUT_S);
        Ok((counts, split_guest(SPLIT_N)?, split_guest(2 * SPLIT_N)?))
    })();
    let (counts, split1, split2) = match guests {
        Ok(g) => g,
        Err(e) => {
            s.check(
                "kvm: the KVM guests' initramfs",
                false,
                false,
                "built",
                &format!("{e:#}"),
                None,
            );
            return;
        }
    };
    let mut outer = Plan::default();
    outer.args("kvm-guest", counts.argv());
    let split_stat = [
        "perf",
        "stat",
        "-x,",
        "-e",
        "instructions:G,instructions:H",
        "--",
    ];
    for (name, g) in [("split-n", &split1), ("split-2n", &split2)] {
        outer.args(
            name,
            split_stat.iter().map(|w| w.to_string()).chain(g.argv()),
        );
    }
    let label = "kvm host -smp 1";
    let booted = host.run_plan(
        fw,
        Machine {
            smp: 1,
            icount: true,
        },
        &outer,
        &[&counts, &split1, &split2],
        Duration::from_secs(TIMEOUT_S),
    );
    let Some(out) = s.judge_boot(label, Chosen::NONE, None, PLAN_MODE, TIMEOUT_S, booted) else {
        return;
    };
    let outer_r = out.commands();
    let inner = host_cmd(&out, "kvm-guest").map(|c| guest_outcome(&c));
    let Some(inner) = s.judge_boot(
        "kvm guest (1 vCPU, -accel kvm -cpu host)",
        Chosen::NONE,
        None,
        PLAN_MODE,
        TIMEOUT_S,
        inner.ok_or_else(|| anyhow::anyhow!("the KVM host ran no KVM guest")),
    ) else {
        return;
    };
    let r = inner.commands();
    let label = "kvm guest";
    let impl_kvm = inner.console.contains("SBI implementation ID=0x3 ");
    s.check(
        &format!("{label}: its SBI is KVM's"),
        impl_kvm,
        false,
        "\"SBI implementation ID=0x3\" (KVM) on the KVM guest's console",
        if impl_kvm { "KVM" } else { "another" },
        Some(&inner),
    );

    // N and 2N iterations: the same digits to parse and the same
    // start-up, so the difference is N loop iterations exactly.
    let want = alu * n;
    let (u1, u2) = (
        value(&r, "user", "instructions:u"),
        value(&r, "base", "instructions:u"),
    );
    let diff = u1.zip(u2).map(|(a, b)| b as i64 - a as i64);
    s.check(
        &format!("{label}: perf stat instructions:u of `alu {n2}` minus `alu {n}` (icount: exact)"),
        diff == Some(want as i64),
        false,
        &format!("{alu} x {n} = {want} (loop body from the disassembly)"),
        &format!("{u2:?} - {u1:?} = {diff:?}"),
        Some(&inner),
    );
    if let Some((a, b)) = native {
        s.check(
            &format!("{label}: instructions:u of `alu {n}` and `alu {n2}` equal the native boot's"),
            u1 == Some(a) && u2 == Some(b),
            false,
            &format!("{a} and {b} (perf -smp 1, same kernel and firmware, natively)"),
            &format!("{u1:?} and {u2:?}"),
            Some(&inner),
        );
    }
    // The kernel work of the longer loop: the timer ticks of N more
    // iterations (N x alu instructions = 20 ms of guest time at one
    // instruction per ns: 5 ticks at HZ=250), together far under N / 100.
    let (k1, k2) = (
        value(&r, "k-n", "instructions:k"),
        value(&r, "k-2n", "instructions:k"),
    );
    let kdiff = k1.zip(k2).map(|(a, b)| b as i64 - a as i64);
    let kmax = (n / 100) as i64;
    s.check(
        &format!("{label}: instructions:k of `alu {n2}` minus `alu {n}` is the kernel's, not the loop's"),
        k1.is_some_and(|v| v > 0) && kdiff.is_some_and(|d| d.abs() < kmax),
        false,
        &format!("|difference| < {kmax} (N / 100; the loop's {want} user instructions not in it), both > 0"),
        &format!("{k2:?} - {k1:?} = {kdiff:?}"),
        Some(&inner),
    );

    // KVM (arch/riscv/kvm/vcpu_pmu.c, pmu_get_pmc_index) gives every
    // cycles event the KVM guest's counter 0 and every instructions event
    // counter 2 without looking whether another event holds it, and
    // kvm_pmu_create_perf_event releases that event's host perf event
    // before making the new one: the guest's driver refuses the duplicate
    // index (riscv_pmu_sbi.c pmu_sbi_ctr_get_idx: -ENOENT) and
    // multiplexes, while the first event now reads a host event that was
    // never enabled. docs/kvm.md has the lines.
    let fixed = |ev: &str| line(&r, "fixed-twice", ev);
    let (i, c, ik) = (
        fixed("instructions"),
        fixed("cycles"),
        fixed("instructions:k"),
    );
    let val = |l: &Option<StatLine>| l.as_ref().and_then(|l| l.value);
    s.check(
        &format!("{label}: instructions beside instructions:k read 0, cycles counts (known KVM bug: both events get counter 2; both firmwares)"),
        val(&i) == Some(0) && val(&ik) == Some(0) && val(&c).is_some_and(|v| v > want),
        false,
        &format!("instructions 0, instructions:k 0, cycles > {want}"),
        &format!("instructions {:?} ({:?}%), cycles {:?}, instructions:k {:?} ({:?}%)",
            val(&i), i.as_ref().and_then(|l| l.running_pct), val(&c), val(&ik), ik.as_ref().and_then(|l| l.running_pct)),
        Some(&inner),
    );
    // A KVM guest's counter is a pinned host perf event
    // (kvm_riscv_vcpu_pmu_ctr_cfg_match: .pinned = true). A second
    // counter of an event id QEMU counts once is refused by rvpmu-fw
    // (OpenSBI hands out one that QEMU never advances); the host's perf
    // core puts a pinned event it cannot schedule in error state
    // (kernel/events/core.c merge_sched_in), which reads 0, and KVM's
    // counter_start does not look (perf_event_enable returns nothing): the
    // guest reads 0 "the whole time" on either firmware.
    let alone = value(&r, "hpm-alone", "dTLB-load-misses:k");
    let (tu, tk) = (
        line(&r, "hpm-twice", "dTLB-load-misses:u"),
        line(&r, "hpm-twice", "dTLB-load-misses:k"),
    );
    s.check(
        &format!("{label}: dTLB-load-misses:k beside :u reads 0 on a counter the whole time (KVM's pinned host events; both firmwares)"),
        alone.is_some_and(|v| v > 0) && val(&tu).is_some_and(|v| v > 0) && val(&tk) == Some(0) && on_counter_always(&tk),
        false,
        "alone > 0; beside dTLB-load-misses:u: :u > 0, :k 0 at 100%",
        &format!("alone {alone:?}; beside :u: :u {:?}, :k {:?} ({:?}%)", val(&tu), val(&tk), tk.as_ref().and_then(|l| l.running_pct)),
        Some(&inner),
    );

    // The KVM host's perf around a KVM guest: guest (VS/VU) and host
    // (HS/U) instructions apart.
    let label = "kvm host";
    let split = |name: &str| {
        (
            line(&outer_r, name, "instructions:G"),
            line(&outer_r, name, "instructions:H"),
            find(&outer_r, name).map(|c| c.elapsed_ns),
            find(&outer_r, name).is_some_and(|c| c.ok()),
        )
    };
    let loop_insns = alu * SPLIT_N;
    let (mut g, mut h) = (Vec::new(), Vec::new());
    for (name, m) in [("split-n", SPLIT_N), ("split-2n", 2 * SPLIT_N)] {
        let (gl, hl, elapsed, ok) = split(name);
        let (gv, hv) = (val(&gl), val(&hl));
        g.push(gv);
        h.push(hv);
        let lower = alu * m;
        s.check(
            &format!("{label}: perf stat -e instructions:G,instructions:H -- qemu-system-riscv64 (KVM guest runs `alu {m}`)"),
            ok && on_counter_always(&gl) && on_counter_always(&hl)
                && gv.is_some_and(|v| v >= lower)
                && hv.is_some_and(|v| v > 0)
                && gv.zip(hv).zip(elapsed).is_some_and(|((a, b), e)| a + b <= e),
            true,
            &format!("both on a counter the whole time; :G >= {lower} (the loop); :H > 0; :G + :H <= the command's time in ns (icount: every instruction of the machine)"),
            &format!("exit ok {ok}; :G {gv:?} ({:?}%), :H {hv:?} ({:?}%), elapsed {elapsed:?} ns; :G share of :G + :H {}",
                gl.as_ref().and_then(|l| l.running_pct), hl.as_ref().and_then(|l| l.running_pct),
                gv.zip(hv).map(|(a, b)| format!("{:.1}%", 100.0 * a as f64 / (a + b).max(1) as f64)).unwrap_or("-".into())),
            Some(&out),
        );
    }
    // M more iterations in the KVM guest run `loop_insns` ns longer
    // (icount): 20 more ticks of each kernel at HZ=250 for M = 40,000,000.
    // :G grows by the loop and the guest kernel's ticks meanwhile (a tick
    // far under 40,000 instructions: under 1% of the loop); :H, the KVM
    // host's own work, only by what it does while the guest runs longer
    // (its ticks, KVM's exits and entries around them, `timeout`
    // waiting: far under 100,000 instructions a tick, under 5% of the
    // loop), not by the loop.
    let diff = |v: &[Option<u64>]| v[0].zip(v[1]).map(|(a, b)| b as i64 - a as i64);
    let (gdiff, hdiff) = (diff(&g), diff(&h));
    let (gslack, hslack) = ((loop_insns / 100) as i64, (loop_insns / 20) as i64);
    s.check(
        &format!("{label}: the `alu {}` KVM guest against the `alu {SPLIT_N}` one: :G grows by the loop, :H stays", 2 * SPLIT_N),
        gdiff.is_some_and(|d| d >= loop_insns as i64 && d < loop_insns as i64 + gslack)
            && hdiff.is_some_and(|d| d.abs() < hslack)
            && h.iter().all(|v| v.is_some_and(|v| v > 0)),
        true,
        &format!("instructions:G: + {alu} x {SPLIT_N} = {loop_insns} (the loop) .. + {gslack} (the guest kernel's ticks meanwhile); instructions:H: > 0, within +-{hslack} (the KVM host's ticks)"),
        &format!("instructions:G {:?} - {:?} = {gdiff:?}; instructions:H {:?} - {:?} = {hdiff:?}", g[1], g[0], h[1], h[0]),
        Some(&out),
    );
}
