//! `cargo xtask run`: boot Linux on the chosen firmware (or in a guest of
//! the hypervisor, or as a KVM guest of the same Linux), run the real perf
//! tool on known workloads and print what it said and the summary.

use super::{check_smp, chosen_firmware};
use crate::build::dt::{Chosen, NoisyNeighbour};
use crate::build::{kernel, userland};
use crate::guest::demo;
use crate::guest::hv::{guest_text, run_plan, STEAL_MS};
use crate::guest::kvm::{guest_outcome, host_cmd, KvmGuest, KvmHost};
use crate::guest::kvmcheck::{Pair, PAIR_CPU};
use crate::guest::linux::{kernel_pmu_lines, Guest, Outcome, STEAL_BUSY_MS};
use crate::guest::perftool::{parse_proc_stat, Plan};
use crate::host::{root, setup, step};
use crate::qemu::{Firmware, Machine};
use anyhow::{bail, Result};
use std::time::Duration;

#[derive(clap::Args)]
pub struct RunArgs {
    /// Kernel to boot.
    #[arg(long, value_enum, default_value = "7.2")]
    pub kernel: kernel::Version,
    /// Print the demo's results as JSON.
    #[arg(long)]
    pub json: bool,
    /// Number of harts.
    #[arg(long, default_value_t = 1)]
    pub smp: u32,
    /// Firmware image for -bios (default: ours; `opensbi` for Debian's
    /// OpenSBI 1.5.1).
    #[arg(long)]
    pub bios: Option<std::path::PathBuf>,
    /// Steal time to inject, in percent (1-90; 0 = off): our firmware's
    /// noisy neighbour takes this share of every 10 ms period on each hart
    /// (DT `/chosen rvpmu,noisy-neighbour`), and the demo also prints the
    /// steal share Linux reports in /proc/stat over a busy interval.
    #[arg(long, default_value_t = 0, value_name = "PERCENT")]
    pub steal: u32,
    /// Run the demo in a VS-mode guest of rvpmu-hv (Linux 7.2, one
    /// hart) instead of on the firmware directly.
    #[arg(long, conflicts_with_all = ["bios", "steal", "json"])]
    pub hv: bool,
    /// With --hv: this many guests (1 or 2) time-sliced on the hart; with
    /// --kvm: this many KVM guests (1 or 2; with 2 the KVM host has two
    /// harts and both KVM guests are pinned to one). With 2 both run the
    /// demo and its busy interval, and the steal each one's /proc/stat
    /// shows is printed with the hypervisor's (or KVM's) accounting.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=2))]
    pub guests: u32,
    /// Run the demo in a KVM guest: the same Linux booted as a KVM host
    /// on the firmware (QEMU with H, one hart, icount) starts it with
    /// Debian's QEMU and KVM (one vCPU).
    #[arg(long, conflicts_with_all = ["hv", "steal"])]
    pub kvm: bool,
}

/// `cargo xtask run`: boot Linux on the chosen firmware, run the real
/// perf tool on known workloads and print what it said and the summary.
pub fn run(a: RunArgs) -> Result<()> {
    if a.guests > 1 && !a.hv && !a.kvm {
        bail!("--guests 2 needs --hv or --kvm");
    }
    if a.hv {
        return run_hv(a);
    }
    if a.kvm {
        return run_kvm(a);
    }
    check_smp(a.smp)?;
    let noisy = NoisyNeighbour::from_steal_option(a.steal)?;
    setup::ensure_host()?;
    let firmware = chosen_firmware(&a.bios)?;
    let guest = Guest::build(a.kernel)?;
    let chosen = Chosen {
        noisy_neighbour: noisy,
        ..Chosen::NONE
    };
    let demo = demo::Demo {
        smp: a.smp,
        steal_busy_ms: noisy.map(|_| STEAL_BUSY_MS),
    };
    step(&format!(
        "booting {} on {} ({} hart(s), icount): perf stat, perf record, perf report{}",
        guest.version,
        firmware.name,
        a.smp,
        match noisy {
            Some(n) => format!(
                "; noisy neighbour {} us of every {} us, then a {STEAL_BUSY_MS} ms busy interval (guest time; slow under icount)",
                n.busy_us, n.period_us
            ),
            None => String::new(),
        }
    ));
    // The injector's M-mode spin is slow to emulate under icount.
    let timeout = if noisy.is_some() { 900 } else { 300 };
    let out = guest.run_plan(&firmware, a.smp, chosen, &demo.plan().text(), timeout)?;
    check_demo_done(&out)?;
    let results = demo::Results::collect(&out, &guest.initramfs.init_elf)?;
    let rows = results.summary(a.smp);
    let steal = noisy.map(|n| demo::steal(&results, n));
    if a.json {
        let v = serde_json::json!({
            "firmware": firmware.name,
            "bios": firmware.path,
            "kernel_version": guest.version.name(),
            "smp": a.smp,
            "kernel": kernel_pmu_lines(&out),
            "summary": rows.json(),
            "commands": results.cmds.iter().map(|c| serde_json::json!({
                "name": c.name, "argv": c.argv, "status": c.status,
                "stdout": c.stdout, "stderr": c.stderr,
            })).collect::<Vec<_>>(),
            "steal": steal,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("firmware: {} ({})", firmware.name, firmware.path.display());
        println!("kernel:   {} ({} hart(s))", guest.version, a.smp);
        println!(
            "guest:    Debian trixie riscv64, {} packages ({} and their dependencies) + our /init and rvpmu-work",
            guest.initramfs.userland.packages.len(),
            userland::GUEST.wanted.join(", ")
        );
        for l in kernel_pmu_lines(&out) {
            println!("          {l}");
        }
        println!();
        print_demo(&results, &rows);
        if a.smp > 1 {
            println!(
                "(-smp {}: under icount QEMU derives each hart's counts from the whole machine's instruction count, \
                 so a hart's count takes in what other harts ran meanwhile; counts are exact at -smp 1; docs/anomalies.md)",
                a.smp
            );
        }
        if let Some(s) = &steal {
            println!("\n{}", s["text"].as_str().unwrap_or(""));
        }
    }
    Ok(())
}

/// Wall-clock limit of the nested run (it takes a minute or two).
const KVM_TIMEOUT: Duration = Duration::from_secs(1200);

/// `cargo xtask run --kvm`: the demo in a KVM guest (one vCPU) of the
/// same Linux booted as a KVM host on the chosen firmware (one hart,
/// icount): the KVM host's plan runs the KVM guest's QEMU, whose console
/// (the demo's results) comes back as that command's output.
fn run_kvm(a: RunArgs) -> Result<()> {
    if a.smp != 1 {
        bail!("--kvm runs a one-hart KVM host and a one-vCPU KVM guest (no --smp)");
    }
    setup::ensure_host()?;
    let firmware = chosen_firmware(&a.bios)?;
    let guest = Guest::build(a.kernel)?;
    let host = KvmHost::build(a.kernel)?;
    if a.guests == 2 {
        return run_kvm_two(&firmware, &guest, &host);
    }
    let demo = demo::Demo {
        smp: 1,
        steal_busy_ms: None,
    };
    let mut kvm_guest = KvmGuest::linux_plan("demo", &guest, &demo.plan())?;
    // On the KVM host's clock (icount: 10^9 instructions a second), far
    // above what the demo takes: a KVM guest that hangs is killed and
    // its console so far shown.
    kvm_guest.timeout_s = Some(30);
    let mut plan = Plan::default();
    plan.args("kvm-guest", kvm_guest.argv());
    step(&format!(
        "booting {} as a KVM host on {} (QEMU with H, 1 hart, icount); its QEMU runs the same kernel as a KVM guest: perf stat, perf record, perf report (the nested boot is slow; progress below)",
        host.version, firmware.name
    ));
    let machine = Machine {
        smp: 1,
        icount: true,
    };
    let out = host.run_plan(&firmware, machine, &plan, &[&kvm_guest], KVM_TIMEOUT)?;
    let dir = root().join("target/rvpmu-e2e/kvm-host");
    std::fs::create_dir_all(&dir)?;
    let log = dir.join("run-kvm.log");
    std::fs::write(&log, &out.console)?;
    let Some(cmd) = host_cmd(&out, "kvm-guest") else {
        bail!(
            "the KVM host did not run the KVM guest's QEMU ({}); console tail:\n{}",
            if out.timed_out {
                "timed out"
            } else {
                "no result"
            },
            out.tail(40)
        );
    };
    let inner = guest_outcome(&cmd);
    let inner_log = dir.join("run-kvm-guest.log");
    std::fs::write(&inner_log, &inner.console)?;
    step(&format!(
        "consoles: KVM host {}, KVM guest {}",
        log.display(),
        inner_log.display()
    ));
    check_demo_done(&inner)?;
    let results = demo::Results::collect(&inner, &guest.initramfs.init_elf)?;
    let mut rows = results.summary(1);
    rows.kvm_guest = true;
    if a.json {
        let v = serde_json::json!({
            "firmware": firmware.name,
            "bios": firmware.path,
            "kernel_version": guest.version.name(),
            "kvm_host_kernel": kernel_pmu_lines(&out),
            "kernel": kernel_pmu_lines(&inner),
            "summary": rows.json(),
            "commands": results.cmds.iter().map(|c| serde_json::json!({
                "name": c.name, "argv": c.argv, "status": c.status,
                "stdout": c.stdout, "stderr": c.stderr,
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!("firmware:  {} ({})", firmware.name, firmware.path.display());
    println!(
        "KVM host:  {} (1 hart), Debian trixie riscv64 with qemu-system-riscv ({} packages)",
        host.version,
        host.initramfs.userland.packages.len()
    );
    for l in kernel_pmu_lines(&out) {
        println!("           {l}");
    }
    println!(
        "KVM guest: {} (1 vCPU, -accel kvm -cpu host), {} packages + our /init and rvpmu-work",
        guest.version,
        guest.initramfs.userland.packages.len()
    );
    for l in kernel_pmu_lines(&inner) {
        println!("           {l}");
    }
    println!();
    print_demo(&results, &rows);
    Ok(())
}

/// /proc/stat's unit: a USER_HZ tick (USER_HZ is 100 on RISC-V Linux).
const TICK_MS: u64 = 10;

/// `cargo xtask run --kvm --guests 2`: the demo and its busy interval in
/// two KVM guests at once, pinned to one CPU of a two-hart KVM host; the
/// demo of the first, then each one's steal over its busy interval beside
/// KVM's accounting (its vCPU thread's run delay on the KVM host).
fn run_kvm_two(firmware: &Firmware, guest: &Guest, host: &KvmHost) -> Result<()> {
    let demo = demo::Demo {
        smp: 1,
        steal_busy_ms: Some(STEAL_MS),
    };
    let plan = demo.plan();
    let pair = Pair::new(
        "demo",
        [
            KvmGuest::linux_plan("demo-0", guest, &plan)?,
            KvmGuest::linux_plan("demo-1", guest, &plan)?,
        ],
    );
    let mut outer = Plan::default();
    pair.add_to(&mut outer);
    step(&format!(
        "booting {} as a KVM host on {} (QEMU with H, 2 harts, icount); two KVM guests pinned to its CPU {PAIR_CPU} run the demo at once, then a {STEAL_MS} ms busy interval (the nested boot is slow; progress below)",
        host.version, firmware.name
    ));
    let machine = Machine {
        smp: 2,
        icount: true,
    };
    let out = host.run_plan(firmware, machine, &outer, &pair.guest_refs(), KVM_TIMEOUT)?;
    let dir = root().join("target/rvpmu-e2e/kvm-host");
    std::fs::create_dir_all(&dir)?;
    let log = dir.join("run-kvm-2.log");
    std::fs::write(&log, &out.console)?;
    step(&format!("the KVM host's console: {}", log.display()));
    let run = pair.read(&out);
    let mut inner = Vec::new();
    for (g, o) in run.guests.iter().enumerate() {
        let Some(o) = o else {
            bail!(
                "KVM guest {g} left no console; the KVM host's console tail:\n{}",
                out.tail(40)
            );
        };
        check_demo_done(o)?;
        inner.push(o);
    }
    let results = demo::Results::collect(inner[0], &guest.initramfs.init_elf)?;
    let mut rows = results.summary(1);
    rows.kvm_guest = true;
    println!(
        "KVM host:  {} on {} (2 harts), KVM guests {} (1 vCPU each) pinned to its CPU {PAIR_CPU}",
        host.version, firmware.name, guest.version
    );
    println!();
    print_demo(&results, &rows);
    println!();
    for (g, o) in inner.iter().enumerate() {
        let r = demo::Results::collect(o, &guest.initramfs.init_elf)?;
        let end = r
            .cmd("procstat-after")
            .map(|c| parse_proc_stat(&c.stdout))
            .and_then(|v| v.into_iter().find(|(cpu, ..)| cpu == "cpu"))
            .map(|(_, steal, _)| format!("{} ms", steal * TICK_MS))
            .unwrap_or("-".into());
        println!(
            "guest {g}: /proc/stat over its {STEAL_MS} ms busy interval: steal {}; at its end {end}",
            demo::steal_text(&demo::steal_cells(&r))
        );
        match (run.vcpus[g], run.registered[g]) {
            (Some(v), Some(reg)) => println!(
                "         KVM: its vCPU thread waited {} ms for the CPU ({} ms of it after the guest registered its steal-time record), ran {} ms",
                v.delay_ns / 1_000_000,
                v.delay_ns.saturating_sub(reg.delay_ns) / 1_000_000,
                v.run_ns / 1_000_000
            ),
            _ => println!("         KVM: its vCPU thread was not read"),
        }
    }
    Ok(())
}

/// The guest ran the demo to its end, or an error with the console's tail.
fn check_demo_done(out: &Outcome) -> Result<()> {
    if out.timed_out || out.done.as_deref() != Some("ok") {
        bail!(
            "the guest did not finish the demo ({}); console tail:\n{}",
            if out.timed_out {
                "timed out".to_string()
            } else {
                format!("/init said: {:?}", out.done)
            },
            out.tail(40)
        );
    }
    Ok(())
}

/// The demo's transcript and summary table.
fn print_demo(results: &demo::Results, summary: &demo::Summary) {
    print!("{}", results.transcript());
    summary.print();
}

/// `cargo xtask run --hv [--guests 2]`: the demo in a VS-mode guest of
/// rvpmu-hv on rvpmu-fw (Linux 7.2, one hart, icount); with two guests
/// both run it time-sliced, guest 0's transcript is shown, and each
/// guest's steal over its busy interval next to the hypervisor's
/// accounting.
fn run_hv(a: RunArgs) -> Result<()> {
    if a.smp != 1 || a.kernel != kernel::Version::V7_2 {
        bail!("--hv runs Linux 7.2 on one hart (the hypervisor's guests have one vCPU)");
    }
    setup::ensure_host()?;
    let guest = Guest::build(a.kernel)?;
    let two = a.guests == 2;
    let demo = demo::Demo {
        smp: 1,
        steal_busy_ms: two.then_some(STEAL_MS),
    };
    step(&format!(
        "the demo in {} under rvpmu-hv (perf stat, perf record, perf report{})",
        if two {
            "two Linux 7.2 guests time-sliced"
        } else {
            "a Linux 7.2 guest"
        },
        if two {
            "; then a busy interval for steal"
        } else {
            ""
        }
    ));
    let run = run_plan(&demo.plan(), a.guests)?;
    let log = root().join("target").join("hv").join("run-hv.log");
    std::fs::write(&log, &run.text)?;
    step(&format!(
        "the whole console (hypervisor and guests): {}",
        log.display()
    ));
    let outs: Vec<Outcome> = (0..a.guests as usize)
        .map(|g| {
            let text = if two {
                guest_text(&run.text, g)
            } else {
                run.text.clone()
            };
            Outcome::from_console(text, run.code.is_none(), Duration::ZERO)
        })
        .collect();
    for out in &outs {
        check_demo_done(out)?;
    }
    let results = demo::Results::collect(&outs[0], &guest.initramfs.init_elf)?;
    let rows = results.summary(1);
    println!("hypervisor: rvpmu-hv on rvpmu-fw, {} guest(s)", a.guests);
    println!("kernel:     {} (one vCPU per guest)", guest.version);
    for l in kernel_pmu_lines(&outs[0]) {
        println!("            {l}");
    }
    println!();
    print_demo(&results, &rows);
    if two {
        println!();
        for (g, out) in outs.iter().enumerate() {
            let r = demo::Results::collect(out, &guest.initramfs.init_elf)?;
            println!(
                "guest {g}: /proc/stat over its {} ms busy interval: steal {}",
                STEAL_MS,
                demo::steal_text(&demo::steal_cells(&r))
            );
        }
        for l in run
            .text
            .lines()
            .filter(|l| l.starts_with("rvpmu-hv: guest") && l.contains(": run "))
        {
            println!("{l}");
        }
    }
    Ok(())
}
