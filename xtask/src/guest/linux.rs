//! Linux guests: the kernel and initramfs booted under QEMU virt on a
//! firmware, and what /init reports on the console (the result lines of
//! the protocol in crate `e2e_proto`).

use super::perftool::CmdResult;
use crate::build::dt::{custom_dtb, Chosen};
use crate::build::{initramfs, kernel};
use crate::host::run_captured;
use crate::qemu::{Firmware, Machine};
use anyhow::Result;
use e2e_proto::plan::MODE as PLAN_MODE;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Guest milliseconds of the busy interval over which steal is measured
/// (under icount: 10^9 instructions per second of guest time).
pub const STEAL_BUSY_MS: u64 = 2000;

/// The kernel and the initramfs, built (or taken from the cache).
pub struct Guest {
    pub version: kernel::Version,
    pub kernel: kernel::Kernel,
    pub initramfs: initramfs::Initramfs,
}

impl Guest {
    pub fn build(version: kernel::Version) -> Result<Guest> {
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
    pub fn run_plan(
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
            args: PLAN_MODE.to_string(),
            timeout: Duration::from_secs(timeout_s),
        }
        .run()
    }

    pub fn boot(
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

/// One guest boot: what to boot and how long it may take.
pub struct Boot<'a> {
    pub firmware: &'a Firmware,
    pub image: &'a Path,
    pub initrd: &'a Path,
    pub machine: Machine,
    /// rvpmu-fw switches added to QEMU's DT (`-dtb`); none: QEMU's own DT.
    pub chosen: Chosen,
    /// Extra kernel command line words (e.g. `rvpmu.mode=demo`).
    pub args: String,
    /// Wall-clock limit; a guest that hangs is killed and reported.
    pub timeout: Duration,
}

/// What came out of a boot.
#[derive(Clone)]
pub struct Outcome {
    pub console: String,
    /// Parsed `RVPMU-RESULT` objects, in order.
    pub results: Vec<serde_json::Value>,
    /// `RVPMU-RESULT` lines that were not valid JSON.
    pub bad_results: Vec<String>,
    /// The `RVPMU-DONE` line's text, if /init got that far.
    pub done: Option<String>,
    pub timed_out: bool,
    pub wall: Duration,
}

impl Outcome {
    /// The last `n` console lines, for failure reports.
    pub fn tail(&self, n: usize) -> String {
        let lines: Vec<&str> = self.console.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Results of one scenario.
    pub fn scenario(&self, name: &str) -> Vec<&serde_json::Value> {
        self.results
            .iter()
            .filter(|r| r["scenario"] == name)
            .collect()
    }

    /// The plan's commands as they ran (scenario `cmd`).
    pub fn commands(&self) -> Vec<CmdResult> {
        self.scenario("cmd")
            .into_iter()
            .map(CmdResult::from_json)
            .collect()
    }
}

impl Outcome {
    /// A guest's console text, its results and its RVPMU-DONE line.
    pub fn from_console(console: String, timed_out: bool, wall: Duration) -> Outcome {
        let mut results = Vec::new();
        let mut bad_results = Vec::new();
        let mut done = None;
        for line in console.lines() {
            if let Some(json) = line.strip_prefix(e2e_proto::RESULT) {
                match serde_json::from_str(json) {
                    Ok(v) => results.push(v),
                    Err(_) => bad_results.push(line.to_string()),
                }
            } else if let Some(d) = line.strip_prefix(e2e_proto::DONE) {
                done = Some(d.trim().to_string());
            }
        }
        Outcome {
            console,
            results,
            bad_results,
            done,
            timed_out,
            wall,
        }
    }
}

/// The kernel command line of a boot with these extra words.
pub fn kernel_command_line(args: &str) -> String {
    format!("console=ttyS0 earlycon=sbi {args}")
}

impl Boot<'_> {
    pub fn command_line(&self) -> String {
        kernel_command_line(&self.args)
    }

    /// The QEMU command of this boot (console on stdio).
    pub fn command(&self) -> Result<Command> {
        let mut q = self.machine.qemu();
        if !self.chosen.is_none() {
            q.dtb = Some(custom_dtb(&self.machine, &self.chosen)?);
        }
        q.no_reboot = true;
        q.bios = Some(self.firmware.path.clone());
        q.kernel = Some(self.image.to_path_buf());
        q.initrd = Some(self.initrd.to_path_buf());
        q.append = Some(self.command_line());
        Ok(q.command())
    }

    pub fn run(&self) -> Result<Outcome> {
        let run = run_captured(&mut self.command()?, self.timeout, None)?;
        Ok(Outcome::of_qemu(
            &run.stdout,
            &run.stderr,
            run.timed_out,
            run.wall,
        ))
    }
}

impl Outcome {
    /// A QEMU run's outcome: its console (`stdout`) with what QEMU
    /// printed on `stderr` after it, carriage returns removed.
    pub fn of_qemu(stdout: &str, stderr: &str, timed_out: bool, wall: Duration) -> Outcome {
        let mut console = stdout.replace('\r', "");
        if !stderr.trim().is_empty() {
            console.push_str("\n[qemu stderr] ");
            console.push_str(&stderr.replace('\r', ""));
        }
        Outcome::from_console(console, timed_out, wall)
    }
}

/// The kernel's riscv-pmu-sbi lines (extension, counters, snapshot).
pub fn kernel_pmu_lines(out: &Outcome) -> Vec<String> {
    out.console
        .lines()
        .filter(|l| !l.starts_with(e2e_proto::RESULT))
        .filter(|l| l.contains("riscv-pmu-sbi") || l.contains("SBI PMU") || l.contains("riscv-pv"))
        .map(|l| match l.find("] ") {
            Some(i) if l.starts_with('[') => l[i + 2..].to_string(),
            _ => l.to_string(),
        })
        .collect()
}
