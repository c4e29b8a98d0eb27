//! Linux kernel (7.2 and 6.12), guest userland and initramfs builds, QEMU
//! boots, the perf demo (`cargo xtask run`) and the Linux-in-QEMU
//! end-to-end tests.

mod dt;
mod e2e;
mod initramfs;
mod kernel;
mod qemu;
pub mod trace;
mod userland;

use crate::util::step;
use anyhow::{bail, Result};
use dt::{Chosen, NoisyNeighbour};
use qemu::{Boot, Firmware, Machine, Outcome};
use std::path::PathBuf;
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
}

/// Iterations of the demo's fixed loop (2 instructions each).
pub const DEMO_ITERS: u64 = 10_000_000;
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
            machine: Machine { smp },
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
            machine: Machine { smp },
            chosen,
            args: args.to_string(),
            timeout: Duration::from_secs(timeout_s),
        }
        .run()
    }
}

/// Our firmware, built by crate::firmware.
fn our_firmware() -> Result<Firmware> {
    Ok(Firmware {
        name: "rvpmu-fw".into(),
        path: crate::firmware::build()?,
    })
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

/// `cargo xtask run`: boot Linux on the chosen firmware and print the demo.
pub fn run(a: RunArgs) -> Result<()> {
    if a.smp == 0 || a.smp > 4 {
        bail!("--smp {}: the kernel is built for 1 to 4 harts", a.smp);
    }
    let noisy = match a.steal {
        0 => None,
        p => {
            Some(NoisyNeighbour::from_percent(p).map_err(|e| anyhow::anyhow!("--steal {p}: {e}"))?)
        }
    };
    crate::setup::ensure_host()?;
    let firmware = chosen_firmware(&a.bios)?;
    let guest = Guest::build(a.kernel)?;
    let chosen = Chosen {
        noisy_neighbour: noisy,
        ..Chosen::NONE
    };
    let mut args = format!("rvpmu.mode=demo rvpmu.iters={DEMO_ITERS}");
    if noisy.is_some() {
        args.push_str(&format!(" rvpmu.busy_ms={STEAL_BUSY_MS}"));
    }
    step(&format!(
        "booting Linux on {} ({} hart(s), icount), demo scenario{}",
        firmware.name,
        a.smp,
        match noisy {
            Some(n) => format!(
                ", noisy neighbour {} us of every {} us, then a {STEAL_BUSY_MS} ms busy interval (guest time; slow under icount)",
                n.busy_us, n.period_us
            ),
            None => String::new(),
        }
    ));
    // The injector's M-mode spin is slow to emulate under icount.
    let timeout = if noisy.is_some() { 600 } else { 120 };
    let out = guest.boot(&firmware, a.smp, chosen, &args, timeout)?;
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
    let rows = e2e::demo_rows(&out);
    let steal = out.scenario("steal").first().map(|r| (*r).clone());
    if noisy.is_some() && steal.is_none() {
        bail!(
            "the guest printed no steal result; console tail:\n{}",
            out.tail(40)
        );
    }
    if a.json {
        let v = serde_json::json!({
            "firmware": firmware.name,
            "bios": firmware.path,
            "smp": a.smp,
            "kernel": e2e::kernel_pmu_lines(&out),
            "iters": DEMO_ITERS,
            "events": rows.iter().map(|r| serde_json::json!({
                "pass": r.pass, "event": r.event, "count": r.value,
                "time_enabled_ns": r.enabled, "time_running_ns": r.running,
                "error": r.error, "meaning": e2e::meaning(&r.event),
            })).collect::<Vec<_>>(),
            "steal": noisy.map(|n| serde_json::json!({
                "busy_us": n.busy_us, "period_us": n.period_us,
                "expected_share": n.share(), "busy_ms": STEAL_BUSY_MS,
                "guest": steal,
            })),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("firmware: {} ({})", firmware.name, firmware.path.display());
        for l in e2e::kernel_pmu_lines(&out) {
            println!("kernel:   {l}");
        }
        println!(
            "workload: {DEMO_ITERS} iterations of a 2-instruction loop + 4 x 1024-page load/store walk (user mode)\n"
        );
        e2e::print_demo_table(&rows);
        if let (Some(n), Some(r)) = (noisy, &steal) {
            println!(
                "\nsteal: DT asks the firmware's noisy neighbour (rvpmu-fw) for {} us of every {} us ({:.1}% of a busy hart)",
                n.busy_us,
                n.period_us,
                n.share() * 100.0
            );
            println!(
                "       Linux (/proc/stat, steal / all time over a {STEAL_BUSY_MS} ms busy interval on every CPU): {}",
                e2e::steal_cells(r)
                    .iter()
                    .map(e2e::StealCell::describe)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            println!(
                "       kernel: \"SBI STA extension detected\": {}, \"Computing paravirt steal-time\": {}",
                r["sta_detected"], r["steal_computing"]
            );
            if r["sta_detected"] != true {
                println!(
                    "       (this firmware offers no SBI STA, so Linux cannot see steal time)"
                );
            }
        }
    }
    Ok(())
}

/// Linux-in-QEMU end-to-end tests.
pub fn test() -> Result<()> {
    e2e::run_all()
}

#[cfg(test)]
mod tests {
    /// The whole Linux e2e suite on its own (minutes; needs QEMU and the
    /// kernel): `cargo test -p xtask linux_e2e -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn linux_e2e() {
        super::test().unwrap();
    }
}
