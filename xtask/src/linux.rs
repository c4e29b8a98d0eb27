//! Linux 6.12 kernel and initramfs builds, QEMU boots, the perf demo
//! (`cargo xtask run`) and the Linux-in-QEMU end-to-end tests.

mod e2e;
mod initramfs;
mod kernel;
mod qemu;

use crate::util::step;
use anyhow::{bail, Result};
use qemu::{Boot, Firmware, Outcome};
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct RunArgs {
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
}

/// Iterations of the demo's fixed loop (2 instructions each).
pub const DEMO_ITERS: u64 = 10_000_000;

/// The kernel and the initramfs, built (or taken from the cache).
struct Guest {
    kernel: kernel::Kernel,
    initramfs: initramfs::Initramfs,
}

impl Guest {
    fn build() -> Result<Guest> {
        let kernel = kernel::build()?;
        let initramfs = initramfs::build(&kernel)?;
        Ok(Guest { kernel, initramfs })
    }

    fn boot(&self, firmware: &Firmware, smp: u32, args: &str, timeout_s: u64) -> Result<Outcome> {
        Boot {
            firmware,
            image: &self.kernel.image,
            initrd: &self.initramfs.archive,
            smp,
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
    crate::setup::ensure_host()?;
    let firmware = chosen_firmware(&a.bios)?;
    let guest = Guest::build()?;
    step(&format!(
        "booting Linux on {} ({} hart(s), icount), demo scenario",
        firmware.name, a.smp
    ));
    let out = guest.boot(
        &firmware,
        a.smp,
        &format!("rvpmu.mode=demo rvpmu.iters={DEMO_ITERS}"),
        120,
    )?;
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
