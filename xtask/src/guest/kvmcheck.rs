//! What KVM decides for its guests, and how to read it: sampling through
//! KVM's overflow path, and steal time between KVM guests that share one
//! KVM-host CPU, read against the KVM host's own accounting. The Linux
//! suite and `cargo xtask run --kvm --guests 2` judge runs with these;
//! [`super::kvm`] starts the machines.
//!
//! **Two KVM guests at once** ([`Pair`]): one KVM-host plan command,
//! its shell on KVM-host CPU 0, starts both QEMUs pinned to CPU
//! [`PAIR_CPU`] (`taskset`), each with `-no-shutdown` (the guest's
//! power-off stops its vCPU and leaves QEMU running) and `-name
//! debug-threads=on` (QEMU names the vCPU thread `CPU 0/KVM`). It reads
//! each vCPU thread's `/proc/<pid>/task/<tid>/schedstat` when the guest
//! has registered its steal-time record and again after both powered
//! off, then ends both QEMUs. schedstat's fields are the thread's time on
//! a CPU, its time runnable but waiting for one (the run delay), and its
//! timeslices (Documentation/scheduler/sched-stats.rst). The run delay is
//! what KVM's STA reports as steal: `kvm_riscv_vcpu_record_steal_time`
//! (arch/riscv/kvm/vcpu_sbi_sta.c) adds `current->sched_info.run_delay`'s
//! growth since the guest registered its record, at every vcpu load. A
//! stopped vCPU thread waits for nothing, so the second reading is the
//! run delay at the guest's end, and the difference is what KVM put in
//! the record.
//!
//! **Sampling** ([`sampling_plan`], [`Sampling`]): a KVM guest's counter
//! is a KVM-host perf event; its overflow is that event's, which KVM
//! turns into the guest's interrupt 13. The plan counts the guest's PMU
//! interrupts around `perf record` and runs `rvpmu-overflow-repro`, whose
//! total count tells a counter that stood still (fewer than its loop's
//! instructions) from one whose overflow interrupts went missing while it
//! counted (all of them).
//!
//! **The cost of a guest switch** ([`switch_script`], [`SwitchInterval`]):
//! from the guests' side, interval by interval (below).

use super::demo::{HOT_N, RECORD_PERIOD};
use super::hv::{guest_mode, STEAL_MS};
use super::kvm::{guest_outcome, host_cmd, KvmGuest};
use super::linux::{Guest, Outcome};
use super::perftool::{parse_record_samples, parse_report, parse_stat_csv, CmdResult, Plan};

/// RAM of a KVM guest that boots the bare initramfs (our programs alone,
/// 3 MB): a 7.2 kernel and that initramfs boot in it.
pub const BARE_MEMORY: &str = "128M";

/// The KVM-host CPU both KVM guests of a [`Pair`] are pinned to: CPU 0
/// keeps the plan's shell, which polls their consoles.
pub const PAIR_CPU: u32 = 1;

/// The KVM host kills a KVM guest of these checks after this long of its
/// own clock ([`KvmGuest::timeout_s`]; each takes a few seconds): a hang
/// still returns its console so far.
pub const GUEST_TIMEOUT_S: u64 = 30;

/// The console line Linux prints once it has registered the CPU's
/// steal-time record (arch/riscv/kernel/paravirt.c, `pv_time_init`).
const STA_REGISTERED: &str = "riscv-pv: Computing paravirt steal-time";

/// The console line Linux prints just before its SBI shutdown call
/// (kernel/reboot.c, `kernel_power_off`).
const POWER_DOWN: &str = "reboot: Power down";

/// How many times the pair's shell polls in each phase before it gives
/// up (a KVM guest that never registers or never powers off).
const MAX_POLLS: u32 = 600;

/// The pair's poll while the guests run, until both power off: seldom,
/// because under icount a hart's counters also advance by what the other
/// hart runs (docs/anomalies.md 3), and a KVM guest's counts would take
/// in the poll's work on CPU 0.
const END_POLL_S: u32 = 1;

/// The name QEMU gives a KVM vCPU thread with `-name debug-threads=on`
/// (one vCPU: index 0).
const VCPU_THREAD: &str = "CPU 0/KVM";

/// A KVM guest of the steal scenarios: the bare initramfs, [`BARE_MEMORY`],
/// busy (e2e-init's steal mode: a user busy loop over a [`STEAL_MS`]
/// interval, /proc/stat before and after) or idle (it sleeps through the
/// busy one's interval).
pub fn steal_guest(name: &str, guest: &Guest, busy: bool) -> KvmGuest {
    let args = format!("rvpmu.busy_ms={STEAL_MS} {}", guest_mode(busy));
    let mut g = KvmGuest::linux(name, guest, guest.initramfs.bare.clone(), &args);
    g.memory = BARE_MEMORY.into();
    g.timeout_s = Some(GUEST_TIMEOUT_S);
    g
}

/// Two KVM guests run at once on one KVM-host CPU by one plan command
/// (module doc).
pub struct Pair {
    /// Names the plan commands: `<label>` runs both, `<label>-g0` and
    /// `<label>-g1` print their consoles.
    pub label: String,
    pub guests: [KvmGuest; 2],
}

/// One KVM vCPU thread's schedstat, in ns (time slices: a count).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedStat {
    pub run_ns: u64,
    pub delay_ns: u64,
    pub slices: u64,
}

/// What a [`Pair`]'s run gave: each KVM guest's console as an
/// [`Outcome`], each vCPU thread's schedstat, the KVM host's lowest
/// MemAvailable while both ran (kB).
pub struct PairRun {
    pub guests: [Option<Outcome>; 2],
    /// Each vCPU thread's schedstat at the first poll that saw its guest
    /// registered its steal-time record, and at the guest's end.
    pub registered: [Option<SchedStat>; 2],
    pub vcpus: [Option<SchedStat>; 2],
    pub mem_available_kb: Option<u64>,
    /// The pair command's own result (its stdout holds the readings).
    pub cmd: Option<CmdResult>,
}

impl Pair {
    /// `guests` both pinned to [`PAIR_CPU`].
    pub fn new(label: &str, mut guests: [KvmGuest; 2]) -> Pair {
        for g in &mut guests {
            g.cpus = Some(PAIR_CPU.to_string());
        }
        Pair {
            label: label.into(),
            guests,
        }
    }

    /// Both guests.
    pub fn guest_refs(&self) -> [&KvmGuest; 2] {
        [&self.guests[0], &self.guests[1]]
    }

    fn console(&self, g: usize) -> String {
        format!("/tmp/{}-g{g}.out", self.label)
    }

    /// The shell script of the pair command: start both; poll their
    /// consoles every 10 ms until both registered their steal-time record
    /// (Linux's [`STA_REGISTERED`] line), printing `registered G RUN DELAY
    /// SLICES` for each at the first poll that sees it; then every
    /// [`END_POLL_S`] until both powered off (or a QEMU ended, or
    /// [`MAX_POLLS`] passed), printing MemAvailable (read by the shell
    /// itself); let the vCPUs stop, print `vcpu G RUN DELAY SLICES` for
    /// each, end both QEMUs.
    pub fn script(&self) -> String {
        let mut s = String::new();
        for (g, guest) in self.guests.iter().enumerate() {
            s += &format!(
                "{} -no-shutdown -name debug-threads=on > {} 2>&1 & p{g}=$!; r{g}=0; ",
                guest.sh_line(),
                self.console(g)
            );
        }
        let (c0, c1) = (self.console(0), self.console(1));
        s += &format!(
            "stat() {{ eval p=\\$p$1; for t in /proc/$p/task/*; do \
             read -r c < $t/comm; [ \"$c\" = '{VCPU_THREAD}' ] && echo \"$2 $1 $(cat $t/schedstat)\"; \
             done; }}; \
             n=0; while [ $n -lt {MAX_POLLS} ]; do \
             for g in 0 1; do eval r=\\$r$g; [ $r = 0 ] && grep -q '{STA_REGISTERED}' /tmp/{label}-g$g.out && stat $g registered && eval r$g=1; done; \
             [ $r0 = 1 ] && [ $r1 = 1 ] && break; sleep {poll}; n=$((n+1)); done; \
             n=0; while [ $n -lt {MAX_POLLS} ]; do \
             grep -q '{POWER_DOWN}' {c0} && grep -q '{POWER_DOWN}' {c1} && break; \
             [ -d /proc/$p0 ] && [ -d /proc/$p1 ] || break; \
             while read -r k v u; do [ $k = MemAvailable: ] && echo $k $v $u && break; done < /proc/meminfo; \
             sleep {END_POLL_S}; n=$((n+1)); done; \
             sleep 0.1; stat 0 vcpu; stat 1 vcpu; kill $p0 $p1; wait; exit 0",
            label = self.label,
            poll = REGISTRATION_POLL_NS as f64 / 1e9
        );
        s
    }

    /// Add the pair command and the two console commands to `plan`.
    pub fn add_to(&self, plan: &mut Plan) {
        plan.args(&self.label, on_cpu0(&self.script()));
        for g in 0..2 {
            plan.args(
                &format!("{}-g{g}", self.label),
                ["cat".to_string(), self.console(g)],
            );
        }
    }

    /// Read the pair's commands back from the KVM host's outcome.
    pub fn read(&self, host: &Outcome) -> PairRun {
        let cmd = host_cmd(host, &self.label);
        let text = cmd.as_ref().map(|c| c.stdout.as_str()).unwrap_or("");
        let o = parse_pair_output(text);
        let guests = [0, 1].map(|g| {
            host_cmd(host, &format!("{}-g{g}", self.label))
                .filter(|c| c.ok())
                .map(|c| guest_outcome(&c))
        });
        PairRun {
            guests,
            registered: o.registered,
            vcpus: o.vcpus,
            mem_available_kb: o.mem_available_kb,
            cmd,
        }
    }
}

/// The pair script's readings: `TAG G RUN DELAY SLICES` lines (TAG
/// `registered` or `vcpu`) and the lowest `MemAvailable: N kB`.
#[derive(Debug, Default, PartialEq)]
struct PairOutput {
    registered: [Option<SchedStat>; 2],
    vcpus: [Option<SchedStat>; 2],
    mem_available_kb: Option<u64>,
}

fn parse_pair_output(text: &str) -> PairOutput {
    let mut o = PairOutput::default();
    for l in text.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            [tag @ ("vcpu" | "registered"), g, run, delay, slices] => {
                let (Ok(g), Ok(run_ns), Ok(delay_ns), Ok(slices)) = (
                    g.parse::<usize>(),
                    run.parse(),
                    delay.parse(),
                    slices.parse(),
                ) else {
                    continue;
                };
                let slot = if *tag == "vcpu" {
                    &mut o.vcpus
                } else {
                    &mut o.registered
                };
                if let Some(v) = slot.get_mut(g) {
                    *v = Some(SchedStat {
                        run_ns,
                        delay_ns,
                        slices,
                    });
                }
            }
            ["MemAvailable:", kb, "kB"] => {
                if let Ok(kb) = kb.parse::<u64>() {
                    o.mem_available_kb = Some(o.mem_available_kb.map_or(kb, |m| m.min(kb)));
                }
            }
            _ => {}
        }
    }
    o
}

/// A busy KVM guest's steal over its interval (e2e-init's steal result,
/// the `all` cell): ticks of USER_HZ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StealShare {
    pub steal: u64,
    pub total: u64,
    /// Absolute steal at the interval's end.
    pub steal_after: u64,
    pub user_hz: u64,
}

impl StealShare {
    /// Steal over the ticks /proc/stat accounted in the interval.
    pub fn share(&self) -> f64 {
        self.steal as f64 / self.total.max(1) as f64
    }

    /// Steal over the interval's own length (`ms` of the guest's
    /// CLOCK_MONOTONIC): the share a user reads as "half of the time".
    /// Unlike [`StealShare::share`] it does not depend on how many ticks
    /// the guest accounted: a vCPU that is not running when its tick is
    /// due takes the missed ticks late and /proc/stat counts fewer of them
    /// (the total fell to 94 of 100 in a run where steal was exactly 50).
    pub fn share_of(&self, ms: u64) -> f64 {
        self.steal as f64 * 1000.0 / (ms * self.user_hz.max(1)) as f64
    }

    /// The absolute steal at the interval's end, in ns.
    pub fn after_ns(&self) -> u64 {
        self.steal_after * 1_000_000_000 / self.user_hz.max(1)
    }
}

/// The steal result of a busy guest's console.
pub fn steal_share(out: &Outcome) -> Option<StealShare> {
    let v = out.scenario("steal").into_iter().next()?;
    let all = v["cpus"].as_array()?.iter().find(|c| c["cpu"] == "all")?;
    Some(StealShare {
        steal: all["steal"].as_u64()?,
        total: all["total"].as_u64()?,
        steal_after: all["steal_after"].as_u64()?,
        user_hz: v["user_hz"].as_u64()?,
    })
}

/// An idle guest's steal and total ticks over its sleep.
pub fn idle_steal(out: &Outcome) -> Option<(u64, u64)> {
    let v = out.scenario("idle").into_iter().next()?;
    Some((v["steal"].as_u64()?, v["total"].as_u64()?))
}

/// Bounds of the steal checks, from what is measured and how:
///
/// - the share: steal over the [`STEAL_MS`] interval itself
///   ([`StealShare::share_of`]); /proc/stat gives USER_HZ ticks (10 ms),
///   truncated at both ends of the interval, so steal is good to one tick
///   (1% of 100); two equal busy vCPU threads on one CPU share it within
///   one host tick (4 ms at HZ=250) over the interval. Two busy guests:
///   0.50 +- 0.03; beside an idle guest: at most one tick of
///   steal (the idle guest runs only for its own timer ticks, far under a
///   tick, and the truncation at both readings can make that one);
/// - the idle guest's steal over its sleep: at most one tick;
/// - /proc/stat's steal at the interval's end against what KVM put in the
///   record by the guest's end, the vCPU thread's run delay at the end
///   minus its run delay when the guest registered the record (read at
///   the first 10 ms poll that sees the registration, so up to one poll
///   late): /proc/stat truncates to a tick and folds steal in at the
///   guest's 4 ms ticks, the record grows on while the guest prints its
///   result and powers off, and the registration reading is up to one
///   poll late; within 1% of the record, plus one tick, plus one poll.
pub const SHARE_BOTH_BUSY: (f64, f64) = (0.50, 0.03);
pub const STEAL_BESIDE_IDLE_MAX_TICKS: u64 = 1;
pub const AGREEMENT: f64 = 0.01;
/// The pair script's poll while the guests register their records.
pub const REGISTRATION_POLL_NS: u64 = 10_000_000;

/// What is wrong with a steal pair's run, `busy[g]` saying whether guest
/// g ran the steal scenario (else it slept), and one line of figures per
/// guest.
pub fn check_pair(run: &PairRun, busy: [bool; 2]) -> (Vec<String>, Vec<String>) {
    let mut p = Vec::new();
    let mut f = Vec::new();
    let both_busy = busy == [true, true];
    for (g, &is_busy) in busy.iter().enumerate() {
        let Some(out) = &run.guests[g] else {
            p.push(format!("guest {g}: no console"));
            continue;
        };
        if !out.console.contains("SBI STA extension detected") {
            p.push(format!("guest {g}: no \"SBI STA extension detected\""));
        }
        if out.done.as_deref() != Some("ok") {
            p.push(format!("guest {g}: /init ended {:?}", out.done));
        }
        let Some(v) = run.vcpus[g] else {
            p.push(format!("guest {g}: no `{VCPU_THREAD}` thread read"));
            continue;
        };
        let kvm = format!(
            "vCPU thread: run {} ms, run delay {} ms, {} slices",
            v.run_ns / 1_000_000,
            v.delay_ns / 1_000_000,
            v.slices
        );
        if !is_busy {
            match idle_steal(out) {
                Some((steal, total)) => {
                    f.push(format!(
                        "guest {g} (idle): /proc/stat over its sleep: steal {steal} of {total} ticks; {kvm}"
                    ));
                    if steal > 1 {
                        p.push(format!(
                            "guest {g}: steal {steal} of {total} ticks while idle, want at most 1"
                        ));
                    }
                }
                None => p.push(format!("guest {g}: no idle result")),
            }
            continue;
        }
        let Some(s) = steal_share(out) else {
            p.push(format!("guest {g}: no steal result"));
            continue;
        };
        let Some(reg) = run.registered[g] else {
            p.push(format!("guest {g}: its registration was not seen"));
            continue;
        };
        let record = v.delay_ns.saturating_sub(reg.delay_ns);
        let diff = s.after_ns() as i64 - record as i64;
        let rel = diff as f64 / record.max(1) as f64;
        f.push(format!(
            "guest {g} (busy): /proc/stat steal {:.2}% of its {STEAL_MS} ms interval ({} ticks; {:.2}% of the {} ticks accounted), {} ms at its end; {kvm}, {} ms of it after the guest registered its record; difference {:+.2}%",
            s.share_of(STEAL_MS) * 100.0,
            s.steal,
            s.share() * 100.0,
            s.total,
            s.after_ns() / 1_000_000,
            record / 1_000_000,
            rel * 100.0
        ));
        let (want, tol) = SHARE_BOTH_BUSY;
        if both_busy && (s.share_of(STEAL_MS) - want).abs() > tol {
            p.push(format!(
                "guest {g}: steal share of the interval {:.4}, want {want} +-{tol}",
                s.share_of(STEAL_MS)
            ));
        }
        if !both_busy && s.steal > STEAL_BESIDE_IDLE_MAX_TICKS {
            p.push(format!(
                "guest {g}: steal {} ticks beside an idle guest, want <= {STEAL_BESIDE_IDLE_MAX_TICKS}",
                s.steal
            ));
        }
        let tick_ns = 1e9 / s.user_hz.max(1) as f64;
        let bound = AGREEMENT * record as f64 + tick_ns + REGISTRATION_POLL_NS as f64;
        if diff.unsigned_abs() as f64 > bound {
            p.push(format!(
                "guest {g}: /proc/stat steal {} ns vs KVM's record {record} ns: {:+.2}%, want within {}% + one tick + one poll ({:.0} ns)",
                s.after_ns(),
                rel * 100.0,
                AGREEMENT * 100.0,
                bound
            ));
        }
    }
    (p, f)
}

/// The cost of a switch between KVM guests, measured from the guests'
/// side. Under icount one instruction is one ns, so over an interval of a
/// KVM-host CPU whose KVM guests never idle, the interval's length minus
/// the guests' instructions in it is everything else that ran there in
/// every mode: the KVM host's kernel, KVM, its perf core and the
/// firmware calls they make (and what the other hart ran meanwhile:
/// little, and the same in every run). [`switch_script`] runs KVM guests
/// pinned to [`PAIR_CPU`] and, once each has started its workload,
/// `perf stat -I` of `instructions:G` (VS and VU: the guests) and
/// `context-switches` on that CPU from CPU 0, interval by interval; the
/// guests' own counters, when they run some, count `cycles`, another
/// event id. With one guest the CPU barely switches; with two the KVM
/// host's scheduler switches between their vCPU threads at a steady
/// rate, and [`SwitchInterval::cost_against`] is the extra work per
/// extra switch.
pub const SWITCH_INTERVAL_MS: u64 = 100;
/// How long `perf stat -I` runs (s): the guests' workloads outlast it.
pub const SWITCH_MEASURE_S: f64 = 1.8;
/// Intervals left out at the start: the two vCPU threads' switching
/// settles into its steady rate within them.
pub const SWITCH_SETTLE_INTERVALS: usize = 2;

/// `script` run by busybox's shell pinned to KVM-host CPU 0, so that its
/// polls and the programs it starts never take the guests' CPU (the
/// QEMUs it starts pin themselves to [`PAIR_CPU`]).
pub fn on_cpu0(script: &str) -> Vec<String> {
    ["taskset", "-c", "0", "sh", "-c", script]
        .map(String::from)
        .to_vec()
}

/// The console line e2e-init prints as it starts a plan command.
const PLAN_COMMAND: &str = "rvpmu /init: $ ";

/// The script of a switch cost run of `guests` (their consoles in
/// /tmp/`label`-gN.out; `perf stat -I -x,` on the script's stderr), for
/// [`on_cpu0`].
pub fn switch_script(label: &str, guests: &[&KvmGuest]) -> String {
    let mut s = String::new();
    let mut outs = Vec::new();
    for (g, guest) in guests.iter().enumerate() {
        let out = format!("/tmp/{label}-g{g}.out");
        s += &format!("{} > {out} 2>&1 & ", guest.sh_line());
        outs.push(out);
    }
    s += &format!(
        "n=0; while [ $n -lt {MAX_POLLS} ]; do a=1; for f in {}; do grep -q '{PLAN_COMMAND}' $f || a=0; done; \
         [ $a = 1 ] && break; sleep 0.01; n=$((n+1)); done; \
         perf stat -I {SWITCH_INTERVAL_MS} -a -C {PAIR_CPU} -x, -e instructions:G,context-switches -- sleep {SWITCH_MEASURE_S}; \
         wait; exit 0",
        outs.join(" ")
    );
    s
}

/// One `perf stat -I` interval of a switch cost run: the guests'
/// instructions, the context switches on the CPU, the interval's length
/// (ns).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwitchInterval {
    pub guest_instructions: u64,
    pub switches: u64,
    pub ns: u64,
}

impl SwitchInterval {
    /// The intervals of a switch script's stderr (`perf stat -I -x,`:
    /// `time,value,unit,event,run ns,percent,...` per event), in order.
    pub fn parse_all(stderr: &str) -> Vec<SwitchInterval> {
        /// One interval's fields as they come, keyed by perf's timestamp.
        #[derive(Default)]
        struct Partial {
            time: String,
            guest: Option<u64>,
            switches: Option<u64>,
            ns: Option<u64>,
        }
        let mut v: Vec<Partial> = Vec::new();
        for l in stderr.lines() {
            let f: Vec<&str> = l.trim().split(',').collect();
            if f.len() < 6 {
                continue;
            }
            let i = match v.iter().position(|x| x.time == f[0]) {
                Some(i) => i,
                None => {
                    v.push(Partial {
                        time: f[0].to_string(),
                        ..Partial::default()
                    });
                    v.len() - 1
                }
            };
            match f[3] {
                "instructions:G" => {
                    v[i].guest = f[1].parse().ok();
                    v[i].ns = f[4].parse().ok();
                }
                "context-switches" => v[i].switches = f[1].parse().ok(),
                _ => {}
            }
        }
        v.into_iter()
            .filter_map(|p| {
                Some(SwitchInterval {
                    guest_instructions: p.guest?,
                    switches: p.switches?,
                    ns: p.ns?,
                })
            })
            .collect()
    }

    /// Everything but the guests in this interval, in instructions.
    pub fn other(&self) -> f64 {
        self.ns as f64 - self.guest_instructions as f64
    }

    /// The extra work per extra context switch of this interval against
    /// `base`'s rates (other work and switches per ns, one guest alone).
    pub fn cost_against(&self, base: &Rates) -> Option<f64> {
        let extra = self.switches as f64 - base.switches_per_ns * self.ns as f64;
        (extra > 0.0).then(|| (self.other() - base.other_per_ns * self.ns as f64) / extra)
    }
}

/// Other work and switches per ns over a run's settled intervals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    pub other_per_ns: f64,
    pub switches_per_ns: f64,
}

impl Rates {
    pub fn of(intervals: &[SwitchInterval]) -> Option<Rates> {
        let ns: f64 = intervals.iter().map(|i| i.ns as f64).sum();
        (ns > 0.0).then(|| Rates {
            other_per_ns: intervals.iter().map(SwitchInterval::other).sum::<f64>() / ns,
            switches_per_ns: intervals.iter().map(|i| i.switches as f64).sum::<f64>() / ns,
        })
    }
}

/// `rvpmu-overflow-repro` iterations (2 user instructions each: 16 M,
/// 160 periods of [`RECORD_PERIOD`]).
pub const REPRO_N: u64 = 8_000_000;

/// The sampling plan of a KVM guest: the guest's PMU interrupts (its
/// `riscv-pmu` line of /proc/interrupts) before and after
/// `perf record -e instructions:u -c P -- rvpmu-work hot H`, the report,
/// the reproducer's sampling run of `instructions:u` over its 2 x
/// [`REPRO_N`]-instruction loop (`quiet`: its SUMMARY line), and the
/// start-up a record of `hot` also sees (`hot 0`).
pub fn sampling_plan() -> Plan {
    let mut p = Plan::exact();
    let irqs = "grep riscv-pmu /proc/interrupts";
    p.cmd("irq-before", irqs);
    p.cmd(
        "record",
        &format!("perf record -e instructions:u -c {RECORD_PERIOD} -o /root/perf.data -- rvpmu-work hot {HOT_N}"),
    );
    p.cmd("irq-after", irqs);
    p.cmd(
        "report",
        "perf report -i /root/perf.data --stdio --sort symbol",
    );
    p.cmd(
        "repro",
        &format!("rvpmu-overflow-repro {RECORD_PERIOD} {REPRO_N} u instr quiet"),
    );
    p.cmd(
        "hot-base",
        "perf stat -x, -e instructions:u -- rvpmu-work hot 0",
    );
    p
}

/// What a KVM guest's [`sampling_plan`] gave.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sampling {
    /// perf record's samples, and the periods by construction:
    /// (4 x H x the loop body + the `hot 0` start-up) / P.
    pub samples: Option<u64>,
    pub periods: Option<u64>,
    /// The guest's PMU interrupts during the record.
    pub irqs: Option<u64>,
    pub hot_a: f64,
    pub hot_b: f64,
    /// The reproducer's total count and samples.
    pub repro_count: Option<u64>,
    pub repro_samples: Option<u64>,
}

/// The count of the `riscv-pmu` line of /proc/interrupts (one CPU).
fn pmu_irqs(text: &str) -> Option<u64> {
    let l = text.lines().find(|l| l.contains("riscv-pmu"))?;
    l.split_whitespace().nth(1)?.parse().ok()
}

/// `key=N` in the reproducer's SUMMARY line.
fn summary_field(text: &str, key: &str) -> Option<u64> {
    let l = text.lines().find(|l| l.starts_with("SUMMARY "))?;
    l.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))?
        .parse()
        .ok()
}

impl Sampling {
    /// Read a [`sampling_plan`]'s results; `hot_per_iter`: the hot loop's
    /// body from the disassembly.
    pub fn read(out: &Outcome, hot_per_iter: u64) -> Sampling {
        let r = out.commands();
        let cmd = |name: &str| r.iter().find(|c| c.name == name);
        let irq = |name: &str| cmd(name).and_then(|c| pmu_irqs(&c.stdout));
        let report = cmd("report")
            .map(|c| parse_report(&c.stdout))
            .unwrap_or_default();
        let base = cmd("hot-base").and_then(|c| {
            parse_stat_csv(&c.stderr)
                .into_iter()
                .find(|l| l.event == "instructions:u")?
                .value
        });
        let repro = cmd("repro").map(|c| c.stdout.as_str()).unwrap_or("");
        Sampling {
            samples: cmd("record").and_then(|c| parse_record_samples(&c.stderr)),
            periods: base.map(|b| (4 * HOT_N * hot_per_iter + b) / RECORD_PERIOD),
            irqs: irq("irq-before")
                .zip(irq("irq-after"))
                .map(|(a, b)| b.saturating_sub(a)),
            hot_a: report.share("rvpmu_hot_a"),
            hot_b: report.share("rvpmu_hot_b"),
            repro_count: summary_field(repro, "count"),
            repro_samples: summary_field(repro, "samples"),
        }
    }

    /// "N samples / P periods, I interrupts, 75.00% / 25.00%; reproducer:
    /// count C, S samples".
    pub fn describe(&self) -> String {
        let o = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or("-".into());
        format!(
            "perf record {} samples / {} periods, {} PMU interrupts, rvpmu_hot_a {:.2}% / rvpmu_hot_b {:.2}%; reproducer: count {}, {} samples",
            o(self.samples),
            o(self.periods),
            o(self.irqs),
            self.hot_a,
            self.hot_b,
            o(self.repro_count),
            o(self.repro_samples)
        )
    }
}

/// The reproducer's loop: 2 user instructions per iteration (its inline
/// assembly, e2e/repro/qemu_stale_overflow.c).
pub const REPRO_LOOP: u64 = 2 * REPRO_N;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_output_is_parsed() {
        let t = "MemAvailable:    1500000 kB\nMemAvailable:    1200000 kB\n\
                 vcpu 0 1039000000 590700000 365\nvcpu 1 1040000000 592900000 366\n\
                 vcpu x 1 2 3\nMemAvailable:    1300000 kB\n";
        let o = parse_pair_output(&format!("registered 1 5 6 7\n{t}"));
        let (v, mem) = (o.vcpus, o.mem_available_kb);
        assert_eq!(
            o.registered,
            [
                None,
                Some(SchedStat {
                    run_ns: 5,
                    delay_ns: 6,
                    slices: 7
                })
            ]
        );
        assert_eq!(
            v[0],
            Some(SchedStat {
                run_ns: 1_039_000_000,
                delay_ns: 590_700_000,
                slices: 365
            })
        );
        assert_eq!(v[1].map(|s| s.delay_ns), Some(592_900_000));
        assert_eq!(mem, Some(1_200_000));
        assert_eq!(parse_pair_output(""), PairOutput::default());
    }

    #[test]
    fn switch_intervals_give_the_cost_per_extra_switch() {
        let err = "0.1,100000000,,instructions:G,102500000,100.00,,\n0.1,75,,context-switches,102500000,100.00,,\n\
                   # a comment\n0.2,99000000,,instructions:G,100000000,100.00,,\n0.2,5,,context-switches,100000000,100.00,,\n";
        let v = SwitchInterval::parse_all(err);
        assert_eq!(
            v,
            [
                SwitchInterval {
                    guest_instructions: 100_000_000,
                    switches: 75,
                    ns: 102_500_000
                },
                SwitchInterval {
                    guest_instructions: 99_000_000,
                    switches: 5,
                    ns: 100_000_000
                },
            ]
        );
        assert!(SwitchInterval::parse_all("x").is_empty());
        // Alone: 1,000,000 other and 5 switches per 100,000,000 ns.
        let base = Rates::of(&v[1..]).unwrap();
        assert_eq!(base.switches_per_ns, 5e-8);
        // 2,500,000 - 1,025,000 other instructions for 75 - 5.125 switches.
        let c = v[0].cost_against(&base).unwrap();
        assert!((c - 1_475_000.0 / 69.875).abs() < 1e-6, "{c}");
        let none = SwitchInterval {
            guest_instructions: 1,
            switches: 1,
            ns: 100_000_000,
        };
        assert_eq!(none.cost_against(&base), None);
    }

    #[test]
    fn sampling_lines_are_parsed() {
        assert_eq!(
            pmu_irqs(" 13:        160  RISC-V INTC   13 Edge      riscv-pmu\n"),
            Some(160)
        );
        assert_eq!(pmu_irqs("  5: 1 x\n"), None);
        let s = "S 0 ip=1 t=2\nSUMMARY period=100000 n=8000000 mode=u ev=instr count=16000035 samples=4 expected=160\n";
        assert_eq!(summary_field(s, "count"), Some(16_000_035));
        assert_eq!(summary_field(s, "samples"), Some(4));
        assert_eq!(summary_field(s, "n"), Some(8_000_000));
        assert_eq!(summary_field("no summary", "count"), None);
    }

    #[test]
    fn steal_share_of_the_interval_ignores_missed_ticks() {
        let s = StealShare {
            steal: 50,
            total: 94,
            steal_after: 58,
            user_hz: 100,
        };
        assert!((s.share_of(1000) - 0.50).abs() < 1e-12);
        assert!((s.share() - 50.0 / 94.0).abs() < 1e-12);
        assert!((s.share_of(2000) - 0.25).abs() < 1e-12);
    }

    #[test]
    fn the_pair_script_pins_names_and_waits() {
        let g = |name: &str| KvmGuest {
            name: name.into(),
            kernel: "/k/Image".into(),
            initrd: Some("/k/bare.cpio".into()),
            append: Some("console=ttyS0 rvpmu.mode=steal".into()),
            smp: 1,
            memory: BARE_MEMORY.into(),
            cpus: None,
            timeout_s: Some(GUEST_TIMEOUT_S),
        };
        let pair = Pair::new("both-busy", [g("a"), g("b")]);
        let s = pair.script();
        assert_eq!(
            s.matches("timeout -s KILL 30 taskset -c 1 qemu-system-riscv64 ")
                .count(),
            2
        );
        assert_eq!(s.matches("-no-shutdown -name debug-threads=on").count(), 2);
        assert!(s.contains("> /tmp/both-busy-g0.out 2>&1 & p0=$!"));
        assert!(s.contains("grep -q 'reboot: Power down' /tmp/both-busy-g1.out"));
        assert!(s.contains("= 'CPU 0/KVM' ]"));
        assert!(s.ends_with("kill $p0 $p1; wait; exit 0"));
        let mut plan = Plan::default();
        pair.add_to(&mut plan);
        assert_eq!(&plan.cmds[0].argv[..5], ["taskset", "-c", "0", "sh", "-c"]);
        let names: Vec<&str> = plan.cmds.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["both-busy", "both-busy-g0", "both-busy-g1"]);
    }
}
