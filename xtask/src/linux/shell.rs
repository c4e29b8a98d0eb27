//! `cargo xtask shell`: the demo's guest booted to busybox's shell on the
//! console, with `perf` and the workloads on the PATH, for a user to try
//! their own commands. Its test drives a real session through a
//! pseudo-terminal (util-linux `script`), typing commands and reading the
//! answers as a user would.

use super::dt::{Chosen, NoisyNeighbour};
use super::kernel::Version;
use super::qemu::{Boot, Machine};
use super::{chosen_firmware, Guest};
use crate::util::{print_check, step, Verdict};
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
}

/// The shell's prompt (e2e-init sets PS1).
const PROMPT: &str = "rvpmu# ";

fn boot<'a>(
    guest: &'a Guest,
    fw: &'a super::qemu::Firmware,
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

/// `cargo xtask shell`: an interactive guest on this terminal.
pub fn run(a: ShellArgs) -> Result<()> {
    super::check_smp(a.smp)?;
    crate::setup::ensure_host()?;
    let fw = chosen_firmware(&a.bios)?;
    let guest = Guest::build(a.kernel)?;
    let b = boot(&guest, &fw, &a, &guest.initramfs.archive)?;
    step(&format!(
        "booting {} on {} ({} hart(s){}) to a shell: try `perf stat -e cycles:u rvpmu-work alu 1000000`; leave with `poweroff` or Ctrl-A X",
        guest.version,
        fw.name,
        a.smp,
        if a.icount { ", icount" } else { "" }
    ));
    let st = b
        .command()?
        .status()
        .context("starting qemu-system-riscv64")?;
    if !st.success() {
        bail!("QEMU exited with {st}");
    }
    Ok(())
}

/// A session on a pseudo-terminal: what it printed, and its input.
struct Session {
    child: std::process::Child,
    out: Arc<Mutex<Vec<u8>>>,
    /// How much of `screen()` `expect` has consumed.
    seen: usize,
}

impl Session {
    /// Start `cmd` under `script`, which gives it a pseudo-terminal as its
    /// controlling terminal and copies our pipe to it.
    fn start(cmd: &Command) -> Result<Session> {
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
        let (out, _reader) = crate::util::collect_pipe(child.stdout.take().expect("piped"));
        Ok(Session {
            child,
            out,
            seen: 0,
        })
    }

    /// What the terminal has shown so far: lossy UTF-8, carriage returns
    /// removed.
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().expect("output lock")).replace('\r', "")
    }

    /// Wait until `text` appears after what was already consumed; return
    /// everything up to and including it.
    fn expect(&mut self, text: &str, timeout: Duration) -> Result<String> {
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

    fn type_line(&mut self, line: &str) -> Result<()> {
        let stdin = self.child.stdin.as_mut().expect("piped");
        stdin.write_all(line.as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()?;
        Ok(())
    }

    fn wait_exit(&mut self, timeout: Duration) -> Result<bool> {
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

/// A scripted session: the prompt comes, `perf stat` of a known loop
/// answers with its count, `echo $PATH`-style shell work answers, and
/// `poweroff` ends QEMU. Returns the number of failed checks.
pub(super) fn test(guest: &Guest, fw: &super::qemu::Firmware, alu_insns: u64) -> Result<u32> {
    step(&format!(
        "shell: a scripted session on a pseudo-terminal ({}, {}, icount)",
        guest.version, fw.name
    ));
    let a = ShellArgs {
        kernel: guest.version,
        bios: None,
        smp: 2,
        steal: 0,
        icount: true,
    };
    let b = boot(guest, fw, &a, &guest.initramfs.archive)?;
    let mut s = Session::start(&b.command()?)?;
    let mut failed = 0;
    let mut check = |name: &str, ok: bool, want: &str, got: &str| {
        print_check(
            &format!("[{} shell] {name}", guest.version.name()),
            if ok {
                Verdict::Pass
            } else {
                Verdict::Fail { context: None }
            },
            want,
            got,
        );
        failed += u32::from(!ok);
    };
    let prompt = s.expect(PROMPT, Duration::from_secs(300));
    check(
        "the shell's prompt appears",
        prompt.is_ok(),
        PROMPT,
        &prompt
            .as_ref()
            .map(|_| "seen".to_string())
            .unwrap_or_else(|e| format!("{e:#}")),
    );
    if prompt.is_err() {
        let _ = s.wait_exit(Duration::from_secs(1));
        return Ok(failed);
    }
    let n = 1_000_000u64;
    // The terminal echoes what is typed: the markers are quoted in the
    // typed line so that only the shell's output contains them whole.
    s.type_line(&format!(
        "perf stat -x, -e instructions:u -- rvpmu-work alu {n}; echo st''atus=$?"
    ))?;
    let got = s
        .expect("status=", Duration::from_secs(120))
        .unwrap_or_else(|e| format!("{e:#}"));
    let count = got
        .lines()
        .find_map(|l| {
            l.strip_suffix(",,instructions:u").or_else(|| {
                l.split(",,instructions:u,")
                    .next()
                    .filter(|_| l.contains(",,instructions:u,"))
            })
        })
        .and_then(|v| v.trim().parse::<u64>().ok());
    let want = alu_insns * n;
    // The process's start-up and exit add user instructions; under a
    // tenth of the loop by far (a static binary's start-up is ~1e5).
    check(
        "perf stat typed at the prompt counts the loop",
        count.is_some_and(|c| c >= want && c < want + want / 10),
        &format!("instructions:u >= {alu_insns} x {n} = {want}, start-up adding < 10%"),
        &format!("{count:?}"),
    );
    let status = s.expect("\n", Duration::from_secs(10)).unwrap_or_default();
    check(
        "perf exits 0",
        status.trim() == "0",
        "status=0",
        &format!("status={}", status.trim()),
    );
    s.type_line("grep -c ^processor /proc/cpuinfo; echo do''ne=$?")?;
    let got = s
        .expect("done=", Duration::from_secs(60))
        .unwrap_or_else(|e| format!("{e:#}"));
    check(
        "busybox tools answer (grep /proc/cpuinfo)",
        got.lines().any(|l| l.trim() == "2"),
        "a line `2` (-smp 2)",
        &format!(
            "lines {:?}",
            got.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.contains("grep"))
                .collect::<Vec<_>>()
        ),
    );
    s.type_line("poweroff")?;
    let exited = s.wait_exit(Duration::from_secs(120))?;
    check(
        "`poweroff` ends QEMU",
        exited,
        "QEMU exits",
        if exited {
            "exited"
        } else {
            "still running (killed)"
        },
    );
    Ok(failed)
}
