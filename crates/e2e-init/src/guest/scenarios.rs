//! The scenarios. Each prints a human report and `RVPMU-RESULT {json}` lines;
//! judging the numbers is xtask's job (it knows the expectations), except
//! for facts only the guest can see, which it reports as plain values.

use super::ipi::Pinger;
use super::perf::{
    fw_event, fw_name, Counter, Event, Filter, FwEvent, Kind, Reading, Sampler, Target,
    LINUX_FW_EVENTS,
};
use super::sys;
use super::workload::{rvpmu_alu_loop, Pages, ALU_INSNS_PER_ITER, WALK_INSNS_PER_PAGE};
use crate::cmdline::Params;
use e2e_proto::json::{array, Obj};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

fn result(json: String) {
    println!("{}", e2e_proto::result_line(&json));
}

fn err_name(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT) => "ENOENT".into(),
        Some(libc::EOPNOTSUPP) => "EOPNOTSUPP".into(),
        Some(libc::EINVAL) => "EINVAL".into(),
        Some(libc::EBUSY) => "EBUSY".into(),
        Some(libc::EACCES) => "EACCES".into(),
        _ => e.to_string(),
    }
}

pub(super) fn reading_json(name: &str, r: &Result<Reading, String>) -> String {
    match r {
        Ok(r) => Obj::new()
            .str("name", name)
            .u64("value", r.value)
            .u64("enabled", r.enabled)
            .u64("running", r.running)
            .finish(),
        Err(e) => Obj::new().str("name", name).str("error", e).finish(),
    }
}

// ---------------------------------------------------------------- boot

pub(super) fn boot() -> Result<(), String> {
    let cpus = sys::online_cpus();
    let log = sys::kernel_log();
    let (fw, hw) = sys::pmu_counter_numbers(&log).unwrap_or((0, 0));
    let pmu_type = std::fs::read_to_string("/sys/bus/event_source/devices/cpu/type")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    // One counted loop (user mode only, so the count is exactly known)
    // proves the PMU counts at all.
    let counted = count_once(Event::filtered(Kind::Instructions, Filter::User), || {
        rvpmu_alu_loop(1000)
    });
    let value = counted.as_ref().map(|r| r.value).unwrap_or(0);
    println!("online CPUs {cpus:?}; PMU type {pmu_type:?}; {fw} firmware + {hw} hardware counters; 1000-iteration loop: {value} user instructions");
    let mut o = Obj::new()
        .str("scenario", "boot")
        .u64("cpus", cpus.len() as u64)
        .u64("fw_counters", fw as u64)
        .u64("hw_counters", hw as u64)
        .raw("loop1000", &reading_json("instructions:u", &counted));
    if cpus.len() > 1 {
        o = o.raw("hotplug", &hotplug(1));
    }
    result(o.finish());
    Ok(())
}

pub(super) fn count_once(ev: Event, work: impl FnOnce()) -> Result<Reading, String> {
    let c = Counter::open(ev, Target::ThisThread, None).map_err(|e| err_name(&e))?;
    c.enable().map_err(|e| e.to_string())?;
    work();
    c.disable().map_err(|e| e.to_string())?;
    c.read().map_err(|e| e.to_string())
}

/// Take `cpu` offline and online again through sysfs, then count a loop on
/// it (SBI HSM stop/start under the hood).
fn hotplug(cpu: u32) -> String {
    let path = format!("/sys/devices/system/cpu/cpu{cpu}/online");
    let off = sys::write_file(&path, "0");
    let offline_seen = !sys::online_cpus().contains(&cpu);
    let on = sys::write_file(&path, "1");
    let online_seen = sys::online_cpus().contains(&cpu);
    let counted = std::thread::spawn(move || {
        sys::pin_to_cpu(cpu).map_err(|e| e.to_string())?;
        if sys::current_cpu() != cpu as i32 {
            return Err(format!("thread not on cpu{cpu}"));
        }
        count_once(Event::filtered(Kind::Instructions, Filter::User), || {
            rvpmu_alu_loop(1000)
        })
    })
    .join()
    .unwrap_or_else(|_| Err("thread panicked".into()));
    println!(
        "hotplug cpu{cpu}: offline {} (gone from online list: {offline_seen}), online {} (back: {online_seen}); loop on cpu{cpu}: {:?}",
        off.clone().err().unwrap_or("ok".into()),
        on.clone().err().unwrap_or("ok".into()),
        counted
    );
    Obj::new()
        .u64("cpu", cpu as u64)
        .str("offline", &off.err().unwrap_or_default())
        .bool("offline_seen", offline_seen)
        .str("online", &on.err().unwrap_or_default())
        .bool("online_seen", online_seen)
        .raw("loop1000", &reading_json("instructions:u", &counted))
        .finish()
}

// ---------------------------------------------------------------- demo

/// Pages of the data-TLB part of the demo workload, and how often they are
/// walked.
const WALK_PAGES: u64 = 1024;
const WALK_ROUNDS: u64 = 4;

/// Open `events` as one group on the calling thread, run `work` between a
/// group enable and a group disable, read every member. Events that cannot
/// be opened are reported with their error and left out of the group.
fn count_group(events: &[Event], work: impl FnOnce()) -> Vec<(Event, Result<Reading, String>)> {
    let mut leader: Option<Counter> = None;
    let mut members: Vec<Counter> = Vec::new();
    let mut out = Vec::new();
    let mut failed = Vec::new();
    for &ev in events {
        match Counter::open(ev, Target::ThisThread, leader.as_ref()) {
            Ok(c) if leader.is_none() => leader = Some(c),
            Ok(c) => members.push(c),
            Err(e) => failed.push((ev, Err(format!("open: {}", err_name(&e))))),
        }
    }
    if let Some(l) = &leader {
        let en = l.enable_group();
        work();
        let dis = l.disable_group();
        for c in std::iter::once(l).chain(members.iter()) {
            let r = match (&en, &dis) {
                (Err(e), _) | (_, Err(e)) => Err(format!("enable/disable: {e}")),
                _ => c.read().map_err(|e| e.to_string()),
            };
            out.push((c.event, r));
        }
    }
    out.extend(failed);
    out
}

pub(super) fn demo(p: &Params) -> Result<(), String> {
    use Kind::*;
    let pages = Pages::new(WALK_PAGES).map_err(|e| format!("mmap: {e}"))?;
    let work = || {
        rvpmu_alu_loop(p.iters);
        for _ in 0..WALK_ROUNDS {
            pages.walk();
        }
    };
    let fw: Vec<Event> = (4..14).map(|i| Event::new(Firmware(fw_event(i)))).collect();
    let passes: Vec<(&str, Vec<Event>)> = vec![
        (
            "all",
            vec![
                Event::new(Cycles),
                Event::new(Instructions),
                Event::new(DtlbLoadMisses),
                Event::new(DtlbStoreMisses),
                Event::new(ItlbLoadMisses),
            ],
        ),
        (
            "user",
            vec![
                Event::filtered(Cycles, Filter::User),
                Event::filtered(Instructions, Filter::User),
            ],
        ),
        (
            "kernel",
            vec![
                Event::filtered(Cycles, Filter::Kernel),
                Event::filtered(Instructions, Filter::Kernel),
            ],
        ),
        ("firmware", fw),
    ];
    println!(
        "workload: {} x {}-instruction loop + {} rounds x {} pages x {}-instruction page walk",
        p.iters, ALU_INSNS_PER_ITER, WALK_ROUNDS, WALK_PAGES, WALK_INSNS_PER_PAGE
    );
    println!(
        "{:<8} {:<30} {:>14} {:>14} {:>14}",
        "pass", "event", "count", "enabled ns", "running ns"
    );
    for (pass, events) in passes {
        let rows = count_group(&events, work);
        let mut items = Vec::new();
        for (ev, r) in &rows {
            match r {
                Ok(r) => println!(
                    "{:<8} {:<30} {:>14} {:>14} {:>14}",
                    pass,
                    ev.name(),
                    r.value,
                    r.enabled,
                    r.running
                ),
                Err(e) => println!("{:<8} {:<30} {e}", pass, ev.name()),
            }
            items.push(reading_json(&ev.name(), r));
        }
        result(
            Obj::new()
                .str("scenario", "demo")
                .str("pass", pass)
                .u64("iters", p.iters)
                .u64("walk_pages", WALK_PAGES)
                .u64("walk_rounds", WALK_ROUNDS)
                .raw("events", &array(&items))
                .finish(),
        );
    }
    if let Some(ms) = p.busy_ms {
        super::steal::demo_steal(ms)?;
    }
    Ok(())
}

// ---------------------------------------------------------------- sampling

pub(super) fn sampling(p: &Params) -> Result<(), String> {
    for kind in [Kind::Cycles, Kind::Instructions] {
        let ev = Event::new(kind);
        let s = Sampler::open(ev, p.period)
            .map_err(|e| format!("open sampling {}: {}", ev.name(), err_name(&e)))?;
        s.counter().enable().map_err(|e| e.to_string())?;
        rvpmu_alu_loop(p.iters);
        s.counter().disable().map_err(|e| e.to_string())?;
        let r = s.counter().read().map_err(|e| e.to_string());
        let st = s.stats();
        println!(
            "sampling {}: period {}, {} samples, {} lost, {} throttled; count {:?}",
            ev.name(),
            p.period,
            st.samples,
            st.lost,
            st.throttle,
            r
        );
        result(
            Obj::new()
                .str("scenario", "sampling")
                .str("event", &ev.name())
                .u64("period", p.period)
                .u64("iters", p.iters)
                .u64("samples", st.samples)
                .u64("lost", st.lost)
                .u64("throttle", st.throttle)
                .u64("unthrottle", st.unthrottle)
                .raw("count", &reading_json(&ev.name(), &r))
                .finish(),
        );
    }
    Ok(())
}

// ---------------------------------------------------------------- stress

/// 24 per-thread events: 20 hardware ones (more than the 18 hardware
/// counters, and the filtered ones cannot use the fixed counters) and 4
/// firmware ones, so the kernel must multiplex.
fn stress_events() -> Vec<Event> {
    use Kind::*;
    let mut v = Vec::new();
    for f in [Filter::All, Filter::User, Filter::Kernel, Filter::All] {
        for k in [
            Cycles,
            Instructions,
            DtlbLoadMisses,
            DtlbStoreMisses,
            ItlbLoadMisses,
        ] {
            v.push(Event::filtered(k, f));
        }
    }
    for f in [
        FwEvent::SetTimer,
        FwEvent::IpiSent,
        FwEvent::IpiReceived,
        FwEvent::IllegalInsn,
    ] {
        v.push(Event::new(Firmware(f)));
    }
    v
}

#[derive(Default, Debug, Clone, Copy)]
struct StressStats {
    rounds: u64,
    opened: u64,
    open_errors: u64,
    read_errors: u64,
    multiplexed: u64,
    never_ran: u64,
    full: u64,
}

fn stress_thread(cpu: u32, rounds: u64, iters: u64) -> Result<StressStats, String> {
    sys::pin_to_cpu(cpu).map_err(|e| format!("pin to cpu{cpu}: {e}"))?;
    let events = stress_events();
    let mut st = StressStats::default();
    for round in 0..rounds {
        let mut open = Vec::new();
        for i in 0..events.len() {
            // Rotate the order so different events land on the fixed counters.
            let ev = events[(i + round as usize) % events.len()];
            match Counter::open(ev, Target::ThisThread, None) {
                Ok(c) => open.push(c),
                Err(_) => st.open_errors += 1,
            }
        }
        st.opened += open.len() as u64;
        for c in &open {
            c.enable().map_err(|e| format!("enable: {e}"))?;
        }
        rvpmu_alu_loop(iters);
        for c in &open {
            c.disable().map_err(|e| format!("disable: {e}"))?;
        }
        for c in &open {
            match c.read() {
                Ok(r) if r.running == 0 => st.never_ran += 1,
                Ok(r) if r.running < r.enabled => st.multiplexed += 1,
                Ok(_) => st.full += 1,
                Err(_) => st.read_errors += 1,
            }
        }
        st.rounds += 1;
    }
    Ok(st)
}

/// On one CPU: try to take every counter with pinned events (as many
/// hardware and firmware events as the kernel reported counters) and report
/// how many of each ran the whole time. Run before and after the stress
/// rounds: a counter the firmware failed to release shows as a lower number
/// afterwards.
fn capacity(cpu: u32, fw: u32, hw: u32) -> String {
    use Kind::*;
    // Events only the HPM counters can count first, then cycles and
    // instructions, which may also use the fixed counters 0 and 2: a
    // firmware that can place them there fits all `hw` events.
    let mut pinned = Vec::new();
    let tlb = [DtlbLoadMisses, DtlbStoreMisses, ItlbLoadMisses];
    for i in 0..hw.saturating_sub(2) as usize {
        pinned.push(Event::new(tlb[i % 3]));
    }
    pinned.push(Event::new(Cycles));
    pinned.push(Event::new(Instructions));
    for i in 0..fw as usize {
        pinned.push(Event::new(Firmware(fw_event(i % LINUX_FW_EVENTS))));
    }
    for e in &mut pinned {
        e.pinned = true;
    }
    let t = Target::Cpu(cpu as i32);
    let mut open_err = 0u64;
    let mut pc = Vec::new();
    for &e in &pinned {
        match Counter::open(e, t, None) {
            Ok(c) => pc.push(c),
            Err(_) => open_err += 1,
        }
    }
    for c in &pc {
        let _ = c.enable();
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    for c in &pc {
        let _ = c.disable();
    }
    let (mut hw_full, mut fw_full) = (0u64, 0u64);
    let mut short = Vec::new();
    for c in &pc {
        match c.read() {
            Ok(r) if r.enabled > 0 && r.running == r.enabled => match c.event.kind {
                Firmware(_) => fw_full += 1,
                _ => hw_full += 1,
            },
            Ok(r) => short.push(format!(
                "{} running {} of {}",
                c.event.name(),
                r.running,
                r.enabled
            )),
            Err(e) => short.push(format!("{}: {e}", c.event.name())),
        }
    }
    println!(
        "cpu{cpu}: {hw_full} of {hw} pinned hardware and {fw_full} of {fw} pinned firmware events ran all the time ({open_err} open errors)"
    );
    let shorts: Vec<String> = short
        .iter()
        .map(|s| format!("\"{}\"", s.replace('"', "'")))
        .collect();
    Obj::new()
        .u64("cpu", cpu as u64)
        .u64("hw_full", hw_full)
        .u64("fw_full", fw_full)
        .u64("open_errors", open_err)
        .raw("problems", &array(&shorts))
        .finish()
}

pub(super) fn stress(p: &Params) -> Result<(), String> {
    let cpus = sys::online_cpus();
    if cpus.is_empty() {
        return Err("no online CPUs listed in /sys".into());
    }
    let (fw, hw) = sys::pmu_counter_numbers(&sys::kernel_log())
        .ok_or("kernel log lacks the riscv-pmu-sbi counter line")?;
    // Rotate multiplexed events every millisecond so short rounds see it.
    let _ = sys::write_file(
        "/sys/bus/event_source/devices/cpu/perf_event_mux_interval_ms",
        "1",
    );
    let per_cpu = p.rounds.div_ceil(cpus.len() as u64);
    let iters = 1_000_000;
    println!(
        "stress: {} rounds of 24 events on each of {} CPUs, {iters}-iteration loop each",
        per_cpu,
        cpus.len()
    );
    let before: Vec<String> = cpus.iter().map(|&c| capacity(c, fw, hw)).collect();
    let handles: Vec<_> = cpus
        .iter()
        .map(|&c| std::thread::spawn(move || stress_thread(c, per_cpu, iters)))
        .collect();
    let mut total = StressStats::default();
    let mut errors = Vec::new();
    for h in handles {
        match h
            .join()
            .unwrap_or_else(|_| Err("stress thread panicked".into()))
        {
            Ok(s) => {
                total.rounds += s.rounds;
                total.opened += s.opened;
                total.open_errors += s.open_errors;
                total.read_errors += s.read_errors;
                total.multiplexed += s.multiplexed;
                total.never_ran += s.never_ran;
                total.full += s.full;
            }
            Err(e) => errors.push(format!("\"{}\"", e.replace('"', "'"))),
        }
    }
    println!("stress: {total:?}; thread errors {errors:?}");
    let after: Vec<String> = cpus.iter().map(|&c| capacity(c, fw, hw)).collect();
    result(
        Obj::new()
            .str("scenario", "stress")
            .u64("cpus", cpus.len() as u64)
            .u64("fw_counters", fw as u64)
            .u64("hw_counters", hw as u64)
            .u64("rounds", total.rounds)
            .u64("opened", total.opened)
            .u64("open_errors", total.open_errors)
            .u64("read_errors", total.read_errors)
            .u64("multiplexed", total.multiplexed)
            .u64("never_ran", total.never_ran)
            .u64("full", total.full)
            .raw("thread_errors", &array(&errors))
            .raw("before", &array(&before))
            .raw("after", &array(&after))
            .finish(),
    );
    Ok(())
}

// ---------------------------------------------------------------- fwevents

/// Calls of each triggering kind made by the sender thread.
const FW_CALLS: u64 = 50;
const SYS_RISCV_FLUSH_ICACHE: libc::c_long = 259;

const FW_WATCHED: [FwEvent; 9] = [
    FwEvent::SetTimer,
    FwEvent::IpiSent,
    FwEvent::IpiReceived,
    FwEvent::FenceISent,
    FwEvent::FenceIReceived,
    FwEvent::SfenceVmaSent,
    FwEvent::SfenceVmaReceived,
    FwEvent::SfenceVmaAsidSent,
    FwEvent::SfenceVmaAsidReceived,
];

fn open_cpu_fw(cpu: u32) -> Result<Vec<Counter>, String> {
    FW_WATCHED
        .iter()
        .map(|&f| {
            Counter::open(Event::new(Kind::Firmware(f)), Target::Cpu(cpu as i32), None)
                .map_err(|e| format!("open {} on cpu{cpu}: {}", fw_name(f), err_name(&e)))
        })
        .collect()
}

/// Phases of the two threads, advanced by spinning on an atomic so the
/// hand-over itself sends no IPI. Both threads read their counters at the
/// same two points (after GO and at SENDER_DONE) and report the difference,
/// so what cpu0 sends outside the loops (e.g. while cpu1 still waits for it
/// to enable its events) counts on neither side.
const PH_START: u32 = 0;
const PH_RECEIVER_READY: u32 = 1;
const PH_GO: u32 = 2;
const PH_RECEIVER_BASE: u32 = 3;
const PH_SENDER_DONE: u32 = 4;
const PH_RECEIVER_DONE: u32 = 5;

fn wait_phase(phase: &AtomicU32, want: u32) {
    while phase.load(Ordering::SeqCst) != want {
        std::hint::spin_loop();
    }
}

pub(super) fn fwevents() -> Result<(), String> {
    let cpus = sys::online_cpus();
    if cpus.len() < 2 {
        return Err(format!("fwevents needs 2 CPUs, {} online", cpus.len()));
    }
    let page = Pages::new(1).map_err(|e| format!("mmap: {e}"))?;
    let page_addr = page.as_ptr() as usize;
    let phase = Arc::new(AtomicU32::new(PH_START));

    // Receiver on cpu1: enables, reads and disables its own per-CPU events
    // locally (no cross-CPU perf IPI), spinning in user mode in between so
    // the process's memory map stays live on cpu1.
    let ph = phase.clone();
    let receiver = std::thread::spawn(move || -> Result<Vec<(FwEvent, Reading)>, String> {
        sys::pin_to_cpu(1).map_err(|e| e.to_string())?;
        let cs = open_cpu_fw(1)?;
        for c in &cs {
            c.enable().map_err(|e| e.to_string())?;
        }
        ph.store(PH_RECEIVER_READY, Ordering::SeqCst);
        wait_phase(&ph, PH_GO);
        let base = read_fw(&cs)?;
        ph.store(PH_RECEIVER_BASE, Ordering::SeqCst);
        wait_phase(&ph, PH_SENDER_DONE);
        let end = read_fw(&cs)?;
        for c in &cs {
            c.disable().map_err(|e| e.to_string())?;
        }
        ph.store(PH_RECEIVER_DONE, Ordering::SeqCst);
        Ok(since(&base, end))
    });

    sys::pin_to_cpu(0).map_err(|e| e.to_string())?;
    let cs0 = open_cpu_fw(0)?;
    // Opening and enabling it interrupts cpu1 too: before both windows.
    let pinger = Pinger::open(1)?;
    wait_phase(&phase, PH_RECEIVER_READY);
    for c in &cs0 {
        c.enable().map_err(|e| e.to_string())?;
    }
    phase.store(PH_GO, Ordering::SeqCst);
    wait_phase(&phase, PH_RECEIVER_BASE);
    let base0 = read_fw(&cs0)?;
    let mut call_errors = 0u64;
    for _ in 0..FW_CALLS {
        // IPI: a read of a perf event bound to cpu1 runs on cpu1
        // (smp_call_function_single), one IPI per read whatever cpu1 runs.
        // Expedited membarrier, used before, interrupts cpu1 only while
        // this process's thread is cpu1's current task: on Linux 7.2 most
        // calls missed (guest/ipi.rs).
        call_errors += pinger.ping().is_err() as u64;
    }
    for _ in 0..FW_CALLS {
        // Remote FENCE.I: flush_icache_mm() on a mm live on both CPUs.
        call_errors +=
            sys::syscall3(SYS_RISCV_FLUSH_ICACHE, page_addr, page_addr + 4096, 0).is_err() as u64;
    }
    for _ in 0..FW_CALLS {
        // Remote SFENCE.VMA: write-protecting a present page flushes its
        // translation on every CPU of the mm; re-enabling writes again.
        // SAFETY: mprotect on our own mapped page.
        unsafe {
            call_errors += (libc::mprotect(page_addr as *mut _, 4096, libc::PROT_READ) != 0) as u64;
            call_errors += (libc::mprotect(
                page_addr as *mut _,
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
            ) != 0) as u64;
        }
    }
    let r0 = since(&base0, read_fw(&cs0)?);
    phase.store(PH_SENDER_DONE, Ordering::SeqCst);
    // Spin (not join) until cpu1 has read: cpu0 must send nothing more.
    wait_phase(&phase, PH_RECEIVER_DONE);
    for c in &cs0 {
        c.disable().map_err(|e| e.to_string())?;
    }
    // Closing interrupts cpu1: after both windows.
    drop(pinger);
    let r1 = receiver
        .join()
        .map_err(|_| "receiver panicked".to_string())??;
    println!(
        "{:<30} {:>10} {:>10}",
        "event (sender cpu0 -> cpu1)", "cpu0", "cpu1"
    );
    let mut items = Vec::new();
    for (i, f) in FW_WATCHED.iter().enumerate() {
        println!(
            "{:<30} {:>10} {:>10}",
            fw_name(*f),
            r0[i].1.value,
            r1[i].1.value
        );
        items.push(
            Obj::new()
                .str("name", &fw_name(*f))
                .u64("cpu0", r0[i].1.value)
                .u64("cpu1", r1[i].1.value)
                .u64("cpu0_running", r0[i].1.running)
                .u64("cpu1_running", r1[i].1.running)
                .finish(),
        );
    }
    result(
        Obj::new()
            .str("scenario", "fwevents")
            .u64("calls", FW_CALLS)
            .u64("call_errors", call_errors)
            .raw("events", &array(&items))
            .finish(),
    );
    Ok(())
}

/// Counts between two readings of the same events (times as at the end).
fn since(base: &[(FwEvent, Reading)], end: Vec<(FwEvent, Reading)>) -> Vec<(FwEvent, Reading)> {
    end.into_iter()
        .zip(base)
        .map(|((f, mut r), (_, b))| {
            r.value = r.value.wrapping_sub(b.value);
            (f, r)
        })
        .collect()
}

fn read_fw(cs: &[Counter]) -> Result<Vec<(FwEvent, Reading)>, String> {
    cs.iter()
        .zip(FW_WATCHED)
        .map(|(c, f)| {
            c.read()
                .map(|r| (f, r))
                .map_err(|e| format!("read {}: {e}", fw_name(f)))
        })
        .collect()
}
