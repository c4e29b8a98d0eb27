//! Linux kernel (7.2 and 6.12), guest userland and initramfs builds, QEMU
//! boots, the perf demo (`cargo xtask run`) and the Linux-in-QEMU
//! end-to-end tests.

pub(crate) mod demo;
mod dt;
mod e2e;
pub(crate) mod initramfs;
pub mod kernel;
pub(crate) mod perftool;
mod qemu;
pub mod shell;
pub mod trace;
mod userland;

use crate::util::step;
use anyhow::{bail, Result};
use dt::{Chosen, NoisyNeighbour};
use qemu::{Boot, Firmware, Machine, Outcome};
use std::path::{Path, PathBuf};
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
    /// 2 both run the demo and its busy interval, and the steal each
    /// one's /proc/stat shows is printed with the hypervisor's accounting.
    #[arg(long, default_value_t = 1, requires = "hv", value_parser = clap::value_parser!(u32).range(1..=2))]
    pub guests: u32,
}

/// Guest milliseconds of the busy interval over which steal is measured
/// (under icount: 10^9 instructions per second of guest time).
pub const STEAL_BUSY_MS: u64 = 2000;

/// The kernel and the initramfs, built (or taken from the cache).
struct Guest {
    version: kernel::Version,
    kernel: kernel::Kernel,
    initramfs: initramfs::Initramfs,
}

impl Guest {
    fn build(version: kernel::Version) -> Result<Guest> {
        let kernel = kernel::build(version)?;
        let initramfs = initramfs::build(&kernel)?;
        Ok(Guest {
            version,
            kernel,
            initramfs,
        })
    }

    /// Boot with `plan` (lines of TAB-separated argv, see e2e-init) as
    /// /rvpmu/plan and `rvpmu.mode=plan`: /init runs each command and
    /// reports its output as a `cmd` result.
    fn run_plan(
        &self,
        firmware: &Firmware,
        smp: u32,
        chosen: Chosen,
        plan: &str,
        timeout_s: u64,
    ) -> Result<Outcome> {
        let initrd = self.initramfs.with_plan(&self.kernel, plan)?;
        Boot {
            firmware,
            image: &self.kernel.image,
            initrd: &initrd,
            machine: Machine { smp, icount: true },
            chosen,
            args: "rvpmu.mode=plan".to_string(),
            timeout: Duration::from_secs(timeout_s),
        }
        .run()
    }

    fn boot(
        &self,
        firmware: &Firmware,
        smp: u32,
        chosen: Chosen,
        args: &str,
        timeout_s: u64,
    ) -> Result<Outcome> {
        Boot {
            firmware,
            image: &self.kernel.image,
            initrd: &self.initramfs.archive,
            machine: Machine { smp, icount: true },
            chosen,
            args: args.to_string(),
            timeout: Duration::from_secs(timeout_s),
        }
        .run()
    }
}

/// `--smp N`: the kernels are built for 1 to 4 harts (NR_CPUS=4).
fn check_smp(smp: u32) -> Result<()> {
    if smp == 0 || smp > 4 {
        bail!("--smp {smp}: the kernel is built for 1 to 4 harts");
    }
    Ok(())
}

/// Our firmware, built by crate::firmware.
fn our_firmware() -> Result<Firmware> {
    Ok(Firmware {
        name: "rvpmu-fw".into(),
        path: crate::firmware::build()?,
    })
}

/// Boot Linux 7.2 with `plan` (see [`Guest::run_plan`]) on the firmware
/// image `firmware`, one hart, icount, QEMU's own DT; returns the console.
/// The hypervisor's test sets a guest's counts against these.
pub fn run_plan_natively(firmware: &Path, plan: &str) -> Result<String> {
    let fw = Firmware {
        name: "rvpmu-fw".into(),
        path: firmware.to_path_buf(),
    };
    let guest = Guest::build(kernel::Version::V7_2)?;
    Ok(guest
        .run_plan(&fw, 1, Chosen::default(), plan, 300)?
        .console)
}

fn chosen_firmware(bios: &Option<PathBuf>) -> Result<Firmware> {
    match bios {
        Some(p) if p.as_os_str() == "opensbi" => Ok(Firmware::opensbi()),
        Some(p) => {
            if !p.is_file() {
                bail!(
                    "--bios {}: no such file (give a raw firmware image, or `opensbi`)",
                    p.display()
                );
            }
            Ok(Firmware {
                name: p.display().to_string(),
                path: p.clone(),
            })
        }
        None => our_firmware(),
    }
}

/// `cargo xtask run`: boot Linux on the chosen firmware, run the real
/// perf tool on known workloads and print what it said and the summary.
pub fn run(a: RunArgs) -> Result<()> {
    if a.hv {
        return run_hv(a);
    }
    check_smp(a.smp)?;
    let noisy = NoisyNeighbour::from_steal_option(a.steal)?;
    crate::setup::ensure_host()?;
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
            "kernel": e2e::kernel_pmu_lines(&out),
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
            userland::PACKAGES.join(", ")
        );
        for l in e2e::kernel_pmu_lines(&out) {
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
    crate::setup::ensure_host()?;
    let guest = Guest::build(a.kernel)?;
    let two = a.guests == 2;
    let demo = demo::Demo {
        smp: 1,
        steal_busy_ms: two.then_some(crate::hv::STEAL_MS),
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
    let run = crate::hv::run_plan(&demo.plan(), a.guests)?;
    let log = crate::util::root()
        .join("target")
        .join("hv")
        .join("run-hv.log");
    std::fs::write(&log, &run.text)?;
    step(&format!(
        "the whole console (hypervisor and guests): {}",
        log.display()
    ));
    let outs: Vec<Outcome> = (0..a.guests as usize)
        .map(|g| {
            let text = if two {
                crate::hv::guest_text(&run.text, g)
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
    for l in e2e::kernel_pmu_lines(&outs[0]) {
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
                crate::hv::STEAL_MS,
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

/// Linux-in-QEMU end-to-end tests on `kernels`.
pub fn test(kernels: &[kernel::Version]) -> Result<()> {
    e2e::run_all(kernels)
}

/// Alu iterations and sampling period of the per-sample cost benchmark:
/// 100 M user instructions at a period of 1 M: 100 overflows a round.
const SAMPLECOST_ITERS: u64 = 50_000_000;
const SAMPLECOST_PERIOD: u64 = 1_000_000;

/// The per-sample cost benchmark: instructions from a counter overflow to
/// the sampled task's resumption (firmware + kernel), under icount, on
/// both kernels, rvpmu-fw with and without its snapshot area and OpenSBI
/// (which has none), in one run. Written to target/bench/sample-cost.md
/// and .json.
pub fn sample_cost_bench() -> Result<()> {
    use std::fmt::Write as _;
    let ours = our_firmware()?;
    let peer = Firmware::opensbi();
    let snapshot_off = Chosen {
        pmu_snapshot: Some(false),
        ..Chosen::NONE
    };
    let args = format!(
        "rvpmu.mode=samplecost rvpmu.iters={SAMPLECOST_ITERS} rvpmu.period={SAMPLECOST_PERIOD}"
    );
    let mut rows = Vec::new();
    for v in kernel::Version::ALL {
        let guest = Guest::build(v)?;
        for (label, fw, chosen) in [
            ("rvpmu-fw, snapshot", &ours, Chosen::NONE),
            ("rvpmu-fw, no snapshot", &ours, snapshot_off),
            ("OpenSBI 1.5.1 (no snapshot)", &peer, Chosen::NONE),
        ] {
            step(&format!("per-sample cost: {v} on {label}"));
            let out = guest.boot(fw, 1, chosen, &args, 600)?;
            let r = out
                .scenario("samplecost")
                .first()
                .map(|r| (*r).clone())
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "no samplecost result on {v} / {label}; console tail:\n{}",
                        out.tail(30)
                    )
                })?;
            let snap = out.console.contains("SBI PMU snapshot detected");
            rows.push((v, label, snap, r));
        }
    }
    let mut md = format!(
        "# Per-sample cost (instructions from a counter overflow to the sampled task's resumption)\n\n\
         QEMU -icount shift=0,sleep=off (1 instruction = 1 ns), -smp 1; `instructions:u` sampled every {SAMPLECOST_PERIOD} \
         over {SAMPLECOST_ITERS} iterations of a 2-instruction loop; cost = (time with sampling - time without) / samples, \
         min and median over rounds. Written by `cargo xtask bench`.\n\n\
         | kernel | firmware | snapshot in use | per sample (min) | per sample (median) | samples/round | ratio to OpenSBI |\n|---|---|---|---|---|---|---|\n"
    );
    for (v, label, snap, r) in &rows {
        let peer = rows
            .iter()
            .find(|(k, l, ..)| k == v && l.starts_with("OpenSBI"))
            .and_then(|(.., p)| p["per_sample_ns_median"].as_f64());
        let med = r["per_sample_ns_median"].as_f64();
        let ratio = med
            .zip(peer)
            .map(|(a, b)| format!("{:.2}", a / b))
            .unwrap_or("-".into());
        let samples = r["rounds"][0]["samples"]
            .as_u64()
            .map(|s| s.to_string())
            .unwrap_or("-".into());
        let _ = writeln!(
            md,
            "| {} | {label} | {} | {} | {} | {samples} | {ratio} |",
            v.name(),
            if *snap { "yes" } else { "no" },
            r["per_sample_ns_min"],
            r["per_sample_ns_median"],
        );
    }
    let dir = crate::util::root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("sample-cost.md"), &md)?;
    let json: Vec<_> = rows
        .iter()
        .map(|(v, l, s, r)| serde_json::json!({"kernel": v.name(), "firmware": l, "snapshot": s, "result": r}))
        .collect();
    std::fs::write(
        dir.join("sample-cost.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    print!("{md}");
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The whole Linux e2e suite on its own (minutes; needs QEMU and the
    /// kernel): `cargo test -p xtask linux_e2e -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn linux_e2e() {
        super::test(&super::kernel::Version::ALL).unwrap();
    }
}
