//! Steal time as Linux reports it: `/proc/stat`'s cpu lines read before and
//! after an interval in which every online CPU runs a user busy loop, so no
//! CPU is idle (the SBI STA spec does not count idle time as steal) and the
//! whole interval is either the guest's or stolen. Shares are reported per
//! CPU and overall; xtask judges them against the injector it configured.

use super::sys;
use super::workload::rvpmu_alu_loop;
use crate::cmdline::Params;
use crate::procstat::{self, CpuLine};
use e2e_proto::json::{array, Obj};
use std::time::{Duration, Instant};

/// The kernel lines of Linux's STA client (arch/riscv/kernel/paravirt.c).
pub const STA_DETECTED: &str = "SBI STA extension detected";
pub const STA_COMPUTING: &str = "Computing paravirt steal-time";

/// Guest time of the interval after a re-online that lets cpu1 take its
/// first tick (where Linux folds the re-registered steal clock in) before
/// the measured interval starts.
const SETTLE_MS: u64 = 100;

fn read_stat() -> Result<Vec<CpuLine>, String> {
    let text = std::fs::read_to_string("/proc/stat")
        .map_err(|e| format!("cannot read /proc/stat: {e}"))?;
    procstat::parse(&text)
}

/// Iterations of the fixed loop between two clock reads of a busy thread.
const CHUNK: u64 = 10_000;

/// Spin in user mode until `deadline`; returns how many [`CHUNK`]s ran: the
/// guest's own progress on that CPU, which shrinks with the time withheld.
fn busy_until(deadline: Instant) -> u64 {
    let mut chunks = 0;
    while Instant::now() < deadline {
        rvpmu_alu_loop(CHUNK);
        chunks += 1;
    }
    chunks
}

/// One busy thread pinned to each of `cpus` for `ms` guest milliseconds;
/// returns each thread's chunk count, in the order of `cpus`.
fn busy_all(cpus: &[u32], ms: u64) -> Result<Vec<u64>, String> {
    let deadline = Instant::now() + Duration::from_millis(ms);
    let handles: Vec<_> = cpus
        .iter()
        .map(|&c| {
            std::thread::spawn(move || -> Result<u64, String> {
                sys::pin_to_cpu(c).map_err(|e| format!("pin to cpu{c}: {e}"))?;
                Ok(busy_until(deadline))
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| {
            h.join()
                .unwrap_or_else(|_| Err("busy thread panicked".into()))
        })
        .collect()
}

/// /proc/stat before and after a busy interval on `cpus`.
struct Interval {
    ms: u64,
    cpus: Vec<u32>,
    /// Chunks of the busy loop each CPU ran (order of `cpus`).
    chunks: Vec<u64>,
    before: Vec<CpuLine>,
    after: Vec<CpuLine>,
}

impl Interval {
    fn measure(cpus: &[u32], ms: u64) -> Result<Interval, String> {
        let before = read_stat()?;
        let chunks = busy_all(cpus, ms)?;
        let after = read_stat()?;
        Ok(Interval {
            ms,
            cpus: cpus.to_vec(),
            chunks,
            before,
            after,
        })
    }

    fn abs_steal(lines: &[CpuLine], cpu: Option<u32>) -> Option<u64> {
        lines.iter().find(|l| l.cpu == cpu).map(|l| l.steal())
    }

    /// `{"cpu":N,"steal":d,"total":d,"share":f,...}` and a human cell.
    fn item(&self, cpu: Option<u32>) -> (String, String) {
        let name = cpu.map(|c| format!("cpu{c}")).unwrap_or("all".into());
        let mut o = Obj::new().str("cpu", &name);
        let chunks = match cpu {
            Some(c) => self
                .cpus
                .iter()
                .position(|&x| x == c)
                .map(|i| self.chunks[i]),
            None => Some(self.chunks.iter().sum()),
        };
        if let Some(n) = chunks {
            o = o.u64("loop_chunks", n);
        }
        for (key, lines) in [("steal_before", &self.before), ("steal_after", &self.after)] {
            if let Some(v) = Self::abs_steal(lines, cpu) {
                o = o.u64(key, v);
            }
        }
        match procstat::delta(&self.before, &self.after, cpu) {
            Some(d) => (
                o.u64("steal", d.steal)
                    .u64("total", d.total)
                    .f64("share", d.share())
                    .finish(),
                format!("{name} {:.1}% ({}/{})", d.share() * 100.0, d.steal, d.total),
            ),
            None => (
                o.str(
                    "error",
                    "line missing or a value went backwards between the readings",
                )
                .finish(),
                format!("{name} n/a"),
            ),
        }
    }

    /// Print the shares and return the JSON fields' object builder.
    fn report(&self, phase: &str) -> Obj {
        let mut items = Vec::new();
        let mut human = Vec::new();
        for cpu in self.cpus.iter().map(|&c| Some(c)).chain([None]) {
            let (j, h) = self.item(cpu);
            items.push(j);
            human.push(h);
        }
        println!(
            "steal ({phase}): share of a {} ms busy interval on CPUs {:?} (steal/total USER_HZ ticks): {}",
            self.ms,
            self.cpus,
            human.join(", ")
        );
        Obj::new()
            .str("scenario", "steal")
            .str("phase", phase)
            .u64("ms", self.ms)
            .u64("chunk_iters", CHUNK)
            .raw("cpus", &array(&items))
    }
}

/// What the kernel said about STA, from its log.
fn kernel_sta(o: Obj) -> Obj {
    let log = sys::kernel_log();
    let (det, comp) = (log.contains(STA_DETECTED), log.contains(STA_COMPUTING));
    println!("kernel log: \"{STA_DETECTED}\": {det}; \"{STA_COMPUTING}\": {comp}");
    o.bool("sta_detected", det).bool("steal_computing", comp)
}

fn user_hz() -> u64 {
    // SAFETY: sysconf has no memory arguments.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    v.max(0) as u64
}

/// The steal share of a busy interval on every online CPU (the demo's
/// addition when `rvpmu.busy_ms` is given).
pub fn demo_steal(ms: u64) -> Result<(), String> {
    let cpus = sys::online_cpus();
    let iv = Interval::measure(&cpus, ms)?;
    let o = kernel_sta(iv.report("demo")).u64("user_hz", user_hz());
    println!("{}", e2e_proto::result_line(&o.finish()));
    Ok(())
}

/// The idle scenario: sleep `rvpmu.busy_ms` (every CPU idle: nothing
/// to steal from), then report this guest's steal over the sleep.
pub fn idle(p: &Params) -> Result<(), String> {
    let ms = p.busy_ms.unwrap_or(Params::STEAL_MS);
    let before = read_stat()?;
    std::thread::sleep(Duration::from_millis(ms));
    let after = read_stat()?;
    let d = procstat::delta(&before, &after, None)
        .ok_or("/proc/stat: line missing or a value went backwards")?;
    println!(
        "idle: slept {ms} ms; steal {} of {} USER_HZ ticks",
        d.steal, d.total
    );
    let o = Obj::new()
        .str("scenario", "idle")
        .u64("ms", ms)
        .u64("steal", d.steal)
        .u64("total", d.total);
    println!("{}", e2e_proto::result_line(&o.finish()));
    Ok(())
}

/// The steal scenario: one interval on all CPUs; with `hotplug`, cpu1
/// offline and online through sysfs (Linux unregisters and re-registers
/// its STA record) and a second interval.
pub fn steal(p: &Params) -> Result<(), String> {
    let ms = p.busy_ms.unwrap_or(Params::STEAL_MS);
    let cpus = sys::online_cpus();
    let iv = Interval::measure(&cpus, ms)?;
    let o = kernel_sta(iv.report("busy")).u64("user_hz", user_hz());
    println!("{}", e2e_proto::result_line(&o.finish()));
    if !p.hotplug {
        return Ok(());
    }
    let cpu = 1u32;
    if !cpus.contains(&cpu) {
        return Err(format!("rvpmu.hotplug=1 needs cpu{cpu} online"));
    }
    let path = format!("/sys/devices/system/cpu/cpu{cpu}/online");
    let before_offline = Interval::abs_steal(&read_stat()?, Some(cpu));
    let off = sys::write_file(&path, "0");
    let offline_seen = !sys::online_cpus().contains(&cpu);
    let on = sys::write_file(&path, "1");
    let online_seen = sys::online_cpus().contains(&cpu);
    let after_online = Interval::abs_steal(&read_stat()?, Some(cpu));
    println!(
        "hotplug cpu{cpu}: offline {} (gone: {offline_seen}), online {} (back: {online_seen}); cpu{cpu} steal ticks before offline {before_offline:?}, right after online {after_online:?}",
        off.clone().err().unwrap_or("ok".into()),
        on.clone().err().unwrap_or("ok".into()),
    );
    busy_all(&cpus, SETTLE_MS)?;
    let iv = Interval::measure(&cpus, ms)?;
    let mut o = iv
        .report("after-hotplug")
        .u64("hotplug_cpu", cpu as u64)
        .str("offline", &off.err().unwrap_or_default())
        .bool("offline_seen", offline_seen)
        .str("online", &on.err().unwrap_or_default())
        .bool("online_seen", online_seen)
        .u64("settle_ms", SETTLE_MS);
    if let Some(v) = before_offline {
        o = o.u64("steal_before_offline", v);
    }
    if let Some(v) = after_online {
        o = o.u64("steal_after_online", v);
    }
    println!("{}", e2e_proto::result_line(&o.finish()));
    Ok(())
}
