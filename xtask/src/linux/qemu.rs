//! Booting the kernel under QEMU virt and collecting what /init reports.

use super::dt::Chosen;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Debian's OpenSBI 1.5.1 (bookworm-backports `opensbi`), the peer firmware.
pub const OPENSBI: &str = "/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.bin";

/// A firmware image for `-bios`, with the name used in reports.
#[derive(Clone, Debug)]
pub struct Firmware {
    pub name: String,
    pub path: PathBuf,
}

impl Firmware {
    pub fn opensbi() -> Firmware {
        Firmware {
            name: "OpenSBI 1.5.1".into(),
            path: PathBuf::from(OPENSBI),
        }
    }

    pub fn is_opensbi(&self) -> bool {
        self.path == Path::new(OPENSBI)
    }
}

/// The emulated machine: everything that shapes the guest and its DT.
/// One place, so the DT dumped for `-dtb` matches the machine booted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    pub smp: u32,
    /// `-icount shift=0,sleep=off`: 1 instruction = 1 cycle = 1 ns, exact
    /// and repeatable counts (every test and benchmark); off only for the
    /// interactive shell, which then runs at host speed.
    pub icount: bool,
}

impl Machine {
    /// This machine as a QEMU virt configuration (1 GiB: the Debian
    /// userland unpacks into RAM, about 140 MB).
    pub fn qemu(&self) -> crate::qemu::Qemu {
        let mut q = crate::qemu::Qemu::virt(self.smp);
        q.memory = "1G".into();
        q.icount = self.icount;
        q
    }

    /// QEMU options for this machine.
    pub fn args(&self) -> Vec<String> {
        self.qemu().machine_args()
    }
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
            q.dtb = Some(super::dt::custom_dtb(&self.machine, &self.chosen)?);
        }
        q.no_reboot = true;
        q.bios = Some(self.firmware.path.clone());
        q.kernel = Some(self.image.to_path_buf());
        q.initrd = Some(self.initrd.to_path_buf());
        q.append = Some(self.command_line());
        Ok(q.command())
    }

    pub fn run(&self) -> Result<Outcome> {
        let run = crate::util::run_captured(&mut self.command()?, self.timeout, None)?;
        let mut console = run.stdout;
        if !run.stderr.trim().is_empty() {
            console.push_str("\n[qemu stderr] ");
            console.push_str(&run.stderr.replace('\r', ""));
        }
        Ok(Outcome::from_console(console, run.timed_out, run.wall))
    }
}

impl Outcome {
    /// A guest's console text, its results and its RVPMU-DONE line.
    pub fn from_console(console: String, timed_out: bool, wall: Duration) -> Outcome {
        let mut results = Vec::new();
        let mut bad_results = Vec::new();
        let mut done = None;
        for line in console.lines() {
            if let Some(json) = line.strip_prefix("RVPMU-RESULT ") {
                match serde_json::from_str(json) {
                    Ok(v) => results.push(v),
                    Err(_) => bad_results.push(line.to_string()),
                }
            } else if let Some(d) = line.strip_prefix("RVPMU-DONE ") {
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
