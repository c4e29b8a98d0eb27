//! The demo's guest booted to busybox's shell on the console, with `perf`
//! and the workloads on the PATH (natively, or as a KVM guest), and a session on it through a
//! pseudo-terminal (util-linux `script`) that types commands and reads the
//! answers as a user would (the Linux suite's shell test).

use super::kvm::KvmGuest;
use super::linux::{Boot, Guest};
use crate::build::dt::{Chosen, NoisyNeighbour};
use crate::build::kernel::Version;
use crate::host::collect_pipe;
use crate::qemu::{Firmware, Machine};
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct ShellArgs {
    /// Kernel to boot.
    #[arg(long, value_enum, default_value = "7.2")]
    pub kernel: Version,
    /// Firmware image for -bios (default: ours; `opensbi` for Debian's).
    #[arg(long)]
    pub bios: Option<PathBuf>,
    /// Number of harts (1 to 4).
    #[arg(long, default_value_t = 1)]
    pub smp: u32,
    /// Steal time the firmware's noisy neighbour injects, in percent.
    #[arg(long, default_value_t = 0, value_name = "PERCENT")]
    pub steal: u32,
    /// Exact counts (QEMU -icount shift=0,sleep=off): slower, but every
    /// count is repeatable. Off: host speed, counts of host time.
    #[arg(long)]
    pub icount: bool,
    /// The shell of a KVM guest (one vCPU): the same Linux booted as a
    /// KVM host on the firmware (one hart) hands its console to the KVM
    /// guest's QEMU.
    #[arg(long, conflicts_with_all = ["steal"])]
    pub kvm: bool,
}

/// The shell's prompt (e2e-init sets PS1).
pub const PROMPT: &str = "rvpmu# ";

pub fn boot<'a>(
    guest: &'a Guest,
    fw: &'a Firmware,
    a: &ShellArgs,
    initrd: &'a std::path::Path,
) -> Result<Boot<'a>> {
    let noisy = NoisyNeighbour::from_steal_option(a.steal)?;
    Ok(Boot {
        firmware: fw,
        image: &guest.kernel.image,
        initrd,
        machine: Machine {
            smp: a.smp,
            icount: a.icount,
        },
        chosen: Chosen {
            noisy_neighbour: noisy,
            ..Chosen::NONE
        },
        args: "rvpmu.mode=shell".into(),
        timeout: Duration::from_secs(3600),
    })
}

/// The KVM guest of `cargo xtask shell --kvm`: the guest's Linux and
/// initramfs in the shell mode, one vCPU.
pub fn kvm_guest(guest: &Guest) -> KvmGuest {
    KvmGuest::linux(
        "shell",
        guest,
        guest.initramfs.archive.clone(),
        "rvpmu.mode=shell",
    )
}

/// A session on a pseudo-terminal: what it printed, and its input.
pub struct Session {
    child: std::process::Child,
    out: Arc<Mutex<Vec<u8>>>,
    /// How much of `screen()` `expect` has consumed.
    seen: usize,
}

impl Session {
    /// Start `cmd` under `script`, which gives it a pseudo-terminal as its
    /// controlling terminal and copies our pipe to it.
    pub fn start(cmd: &Command) -> Result<Session> {
        let quoted: Vec<String> = std::iter::once(cmd.get_program())
            .chain(cmd.get_args())
            .map(|a| format!("'{}'", a.to_string_lossy().replace('\'', "'\\''")))
            .collect();
        let mut child = Command::new("script")
            .args(["-qfec", &quoted.join(" "), "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting `script` (util-linux)")?;
        let (out, _reader) = collect_pipe(child.stdout.take().expect("piped"));
        Ok(Session {
            child,
            out,
            seen: 0,
        })
    }

    /// What the terminal has shown so far: lossy UTF-8, carriage returns
    /// removed.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().expect("output lock")).replace('\r', "")
    }

    /// Wait until `text` appears after what was already consumed; return
    /// everything up to and including it.
    pub fn expect(&mut self, text: &str, timeout: Duration) -> Result<String> {
        let start = Instant::now();
        loop {
            let out = self.screen();
            if let Some(i) = out[self.seen..].find(text) {
                let got = out[self.seen..self.seen + i + text.len()].to_string();
                self.seen += i + text.len();
                return Ok(got);
            }
            if start.elapsed() > timeout {
                let tail: String = out
                    .chars()
                    .rev()
                    .take(1500)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                bail!(
                    "waited {} s for {text:?}; the terminal shows:\n{tail}",
                    timeout.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn type_line(&mut self, line: &str) -> Result<()> {
        let stdin = self.child.stdin.as_mut().expect("piped");
        stdin.write_all(line.as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()?;
        Ok(())
    }

    pub fn wait_exit(&mut self, timeout: Duration) -> Result<bool> {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.child.try_wait()?.is_some() {
                return Ok(true);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        Ok(false)
    }
}
