//! KVM guests: the project's Linux booted as a KVM host (on rvpmu-fw or
//! another firmware, QEMU with the hypervisor extension) whose /init runs
//! Debian's `qemu-system-riscv64 -accel kvm` on it, and what the KVM
//! guests print, read back with the same types as every other boot.
//!
//! The pieces, each usable alone:
//! - [`KvmGuest`]: what a KVM guest boots (a Linux Image and initramfs, or
//!   any S-mode kernel without one) and how its QEMU runs on the KVM host
//!   (vCPUs, RAM, pinning with `taskset`); [`KvmGuest::argv`] is the
//!   command that starts it there, its console on the command's stdout.
//! - [`KvmHost`]: the KVM host's kernel and initramfs (the KVM host
//!   userland, QEMU in it); [`KvmHost::initramfs_with`] adds a plan and
//!   the KVM guests' files, [`KvmHost::run_plan`] boots it and returns the
//!   KVM host's [`Outcome`] (its plan's commands can be anything: a KVM
//!   guest's QEMU alone, under `perf stat` or `taskset`, two at once).
//! - [`guest_outcome`]: the [`Outcome`] of a KVM guest, from the KVM
//!   host's result of the command that ran its QEMU: the perf parsers and
//!   the demo's summary read it as they read a native boot.
//!
//! The KVM host's machine: QEMU virt with [`crate::qemu::KVM_HOST_CPU`]
//! (H for KVM, Sscofpmf for the PMU and its filters, Sstc, Ssaia: KVM
//! injects a KVM guest's counter overflow interrupt through AIA's
//! hvien/hvip; Smcntrpmf) and [`crate::qemu::KVM_HOST_MEMORY`].
//! With icount the KVM host's and so the KVM guest's instructions are
//! counted exactly (a KVM guest runs on the KVM host's hart, in VS/VU).

use super::linux::{kernel_command_line, Guest, Outcome};
use super::perftool::{CmdResult, Plan};
use crate::build::initramfs::{self, Initramfs};
use crate::build::kernel::{self, Kernel, Version};
use crate::host::run_captured_watching;
use crate::qemu::{Firmware, Machine, Qemu, KVM_GUEST_MEMORY};
use anyhow::{bail, Result};
use e2e_proto::plan::{MODE as PLAN_MODE, SHELL_SCRIPT};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Where a KVM guest's files are in the KVM host's initramfs.
const DIR: &str = "/rvpmu/kvm";

/// One KVM guest: what it boots and how the KVM host's QEMU runs it.
#[derive(Clone, Debug)]
pub struct KvmGuest {
    /// Names its files in the KVM host (`/rvpmu/kvm/<name>.kernel`,
    /// `.initrd`): ASCII letters, digits and `-`.
    pub name: String,
    /// The kernel, here: a Linux Image or a raw S-mode binary.
    pub kernel: PathBuf,
    pub initrd: Option<PathBuf>,
    /// The kernel command line, if any.
    pub append: Option<String>,
    pub smp: u32,
    pub memory: String,
    /// `taskset -c CPUS` in front of its QEMU: its threads (the vCPUs
    /// among them) on these KVM host CPUs.
    pub cpus: Option<String>,
    /// `timeout -s KILL SECS` in front of its QEMU (busybox's): the KVM
    /// host kills it after SECS of the KVM host's clock (under icount: a
    /// second is 10^9 instructions of the machine), so that what its
    /// console printed until then still comes back in the command's
    /// result (the whole boot's wall-clock timeout would lose it).
    pub timeout_s: Option<u64>,
}

impl KvmGuest {
    /// The project's Linux (`guest`'s Image) with `initrd`, one vCPU,
    /// [`KVM_GUEST_MEMORY`], /init reading `args` (e.g. `rvpmu.mode=shell`).
    pub fn linux(name: &str, guest: &Guest, initrd: PathBuf, args: &str) -> KvmGuest {
        KvmGuest {
            name: name.into(),
            kernel: guest.kernel.image.clone(),
            initrd: Some(initrd),
            append: Some(kernel_command_line(args)),
            smp: 1,
            memory: KVM_GUEST_MEMORY.into(),
            cpus: None,
            timeout_s: None,
        }
    }

    /// [`KvmGuest::linux`] running `plan` (its initramfs with the plan,
    /// `rvpmu.mode=plan`): its RESULT lines come back in [`guest_outcome`].
    pub fn linux_plan(name: &str, guest: &Guest, plan: &Plan) -> Result<KvmGuest> {
        let initrd = guest.initramfs.with_plan(&guest.kernel, &plan.text())?;
        Ok(KvmGuest::linux(name, guest, initrd, PLAN_MODE))
    }

    /// [`KvmGuest::linux_plan`] on the initramfs of our files alone (no
    /// shell, no perf: a plan of our programs), whose boot runs a
    /// fraction of the instructions of a boot with the Debian userland.
    pub fn bare_plan(name: &str, guest: &Guest, plan: &Plan) -> Result<KvmGuest> {
        let initrd = guest
            .initramfs
            .bare_with_plan(&guest.kernel, &plan.text())?;
        Ok(KvmGuest::linux(name, guest, initrd, PLAN_MODE))
    }

    fn check_name(&self) -> Result<()> {
        if self.name.is_empty()
            || !self
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            bail!(
                "KVM guest name {:?}: ASCII letters, digits and `-` only",
                self.name
            );
        }
        Ok(())
    }

    fn kernel_path(&self) -> String {
        format!("{DIR}/{}.kernel", self.name)
    }

    fn initrd_path(&self) -> String {
        format!("{DIR}/{}.initrd", self.name)
    }

    /// The files the KVM host needs for it: (path in the KVM host, file
    /// here).
    pub fn files(&self) -> Vec<(String, PathBuf)> {
        let mut v = vec![(self.kernel_path(), self.kernel.clone())];
        if let Some(i) = &self.initrd {
            v.push((self.initrd_path(), i.clone()));
        }
        v
    }

    /// The command that starts it on the KVM host, its console on the
    /// command's stdout (QEMU's `-nographic`); a reset ends QEMU.
    pub fn argv(&self) -> Vec<String> {
        let mut q = Qemu::kvm_guest(self.smp, &self.memory);
        q.no_reboot = true;
        q.kernel = Some(self.kernel_path().into());
        q.initrd = self.initrd.as_ref().map(|_| self.initrd_path().into());
        q.append = self.append.clone();
        let mut v = Vec::new();
        if let Some(t) = self.timeout_s {
            v.extend([
                "timeout".to_string(),
                "-s".into(),
                "KILL".into(),
                t.to_string(),
            ]);
        }
        if let Some(c) = &self.cpus {
            v.extend(["taskset".to_string(), "-c".into(), c.clone()]);
        }
        v.extend(q.argv());
        v
    }
}

impl KvmGuest {
    /// [`KvmGuest::argv`] as one POSIX shell command line (for a plan's
    /// `sh -c`, e.g. two KVM guests at once with `&` and `wait`).
    pub fn sh_line(&self) -> String {
        self.argv()
            .iter()
            .map(|a| sh_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The result of the KVM host's plan command `name`.
pub fn host_cmd(host: &Outcome, name: &str) -> Option<CmdResult> {
    host.commands().into_iter().find(|c| c.name == name)
}

/// The KVM guest of a KVM host's plan command that ran its QEMU: its
/// console (the command's stdout, then QEMU's stderr), results and
/// RVPMU-DONE line; `wall` is the command's time on the KVM host's clock
/// (under icount: instructions of the KVM host's machine). A QEMU that did
/// not exit 0 leaves its status in the console's last line.
pub fn guest_outcome(cmd: &CmdResult) -> Outcome {
    let mut stderr = cmd.stderr.clone();
    if !cmd.ok() {
        stderr.push_str(&format!(
            "\n[{}: exit status {:?}, signal {:?}]",
            cmd.argv.first().map(String::as_str).unwrap_or("?"),
            cmd.status,
            cmd.signal
        ));
    }
    Outcome::of_qemu(
        &cmd.stdout,
        &stderr,
        false,
        Duration::from_nanos(cmd.elapsed_ns),
    )
}

/// The KVM host: the project's kernel and its initramfs with the KVM host
/// userland (Debian's QEMU in it).
pub struct KvmHost {
    pub version: Version,
    pub kernel: Kernel,
    pub initramfs: Initramfs,
}

impl KvmHost {
    pub fn build(version: Version) -> Result<KvmHost> {
        let kernel = kernel::build(version)?;
        let initramfs = initramfs::build_kvm_host(&kernel)?;
        Ok(KvmHost {
            version,
            kernel,
            initramfs,
        })
    }

    /// The KVM host's initramfs with `plan` as /rvpmu/plan and every file
    /// of `guests` under /rvpmu/kvm.
    pub fn initramfs_with(&self, plan: &Plan, guests: &[&KvmGuest]) -> Result<PathBuf> {
        let mut files = Vec::new();
        for g in guests {
            g.check_name()?;
            if guests.iter().filter(|o| o.name == g.name).count() > 1 {
                bail!("two KVM guests named {:?}", g.name);
            }
            files.extend(g.files());
        }
        self.initramfs
            .with_files(&self.kernel, &plan.text(), &files)
    }

    /// The KVM host's QEMU command: `firmware` under it, /init reading
    /// `args`.
    fn command(&self, firmware: &Firmware, m: Machine, initrd: &Path, args: &str) -> Command {
        let mut q = Qemu::kvm_host(m.smp);
        q.icount = m.icount;
        q.no_reboot = true;
        q.bios = Some(firmware.path.clone());
        q.kernel = Some(self.kernel.image.clone());
        q.initrd = Some(initrd.to_path_buf());
        q.append = Some(kernel_command_line(args));
        q.command()
    }

    /// Boot the KVM host on `firmware` with `plan` (e2e-init's plan mode)
    /// and `guests`' files; its outcome, each plan command's result one
    /// of its results. Progress lines while it runs: the KVM host's boot,
    /// each command it starts and ends (a KVM guest's own console comes
    /// with the command's result).
    pub fn run_plan(
        &self,
        firmware: &Firmware,
        m: Machine,
        plan: &Plan,
        guests: &[&KvmGuest],
        timeout: Duration,
    ) -> Result<Outcome> {
        let initrd = self.initramfs_with(plan, guests)?;
        let mut cmd = self.command(firmware, m, &initrd, PLAN_MODE);
        let mut progress = Progress::new();
        let run = run_captured_watching(&mut cmd, timeout, None, &mut |t| progress.show(t))?;
        Ok(Outcome::of_qemu(
            &run.stdout,
            &run.stderr,
            run.timed_out,
            run.wall,
        ))
    }

    /// The KVM host booted to e2e-init's shell mode with a
    /// /rvpmu/shell that execs `guest`'s QEMU: the KVM guest's console
    /// is the terminal's (`cargo xtask shell --kvm`); when it ends, the
    /// KVM host powers off.
    pub fn shell_command(
        &self,
        firmware: &Firmware,
        m: Machine,
        guest: &KvmGuest,
    ) -> Result<Command> {
        guest.check_name()?;
        let dir = crate::host::root().join("target/rvpmu-e2e/kvm-host");
        std::fs::create_dir_all(&dir)?;
        let script = dir.join(format!("shell-{}.sh", guest.name));
        std::fs::write(&script, format!("exec {}\n", guest.sh_line()))?;
        let mut files = guest.files();
        files.push((SHELL_SCRIPT.to_string(), script));
        let initrd = self.initramfs.with_files(&self.kernel, "", &files)?;
        Ok(self.command(firmware, m, &initrd, "rvpmu.mode=shell"))
    }
}

/// `s` as one word of a POSIX shell command line.
fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=,:".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Progress lines of a KVM host's boot from its console as it grows: its
/// kernel starting, KVM found, each plan command started and ended, and
/// a line every [`Progress::QUIET`] without news.
struct Progress {
    lines: usize,
    start: Instant,
    last: Instant,
}

impl Progress {
    const QUIET: Duration = Duration::from_secs(30);

    fn new() -> Progress {
        Progress {
            lines: 0,
            start: Instant::now(),
            last: Instant::now(),
        }
    }

    fn show(&mut self, text: &str) {
        // Whole lines only: the last one may still be growing.
        let complete = text.rsplit_once('\n').map(|(a, _)| a).unwrap_or("");
        let lines: Vec<&str> = complete.lines().collect();
        for l in &lines[self.lines.min(lines.len())..] {
            if let Some(news) = milestone(l) {
                eprintln!(
                    "    [{:>4} s] KVM host: {news}",
                    self.start.elapsed().as_secs()
                );
                self.last = Instant::now();
            }
        }
        self.lines = lines.len();
        if self.last.elapsed() >= Self::QUIET {
            eprintln!(
                "    [{:>4} s] still running",
                self.start.elapsed().as_secs()
            );
            self.last = Instant::now();
        }
    }
}

/// What a KVM host console line says about the run's progress, if
/// anything.
fn milestone(line: &str) -> Option<String> {
    let l = line.trim_end_matches('\r');
    // Result lines first: a KVM guest's console inside one says
    // anything.
    if let Some(json) = l.strip_prefix(e2e_proto::RESULT) {
        let v: serde_json::Value = serde_json::from_str(json).ok()?;
        return Some(format!(
            "`{}` ended (status {}, {:.1} s of its time)",
            v["name"].as_str()?,
            v["status"],
            v["elapsed_ns"].as_u64()? as f64 / 1e9
        ));
    }
    if let Some(d) = l.strip_prefix(e2e_proto::DONE) {
        return Some(format!("/init done: {d}"));
    }
    if let Some(cmd) = l.strip_prefix("rvpmu /init: $ ") {
        let short: String = cmd.chars().take(100).collect();
        let more = if cmd.chars().count() > 100 {
            " ..."
        } else {
            ""
        };
        return Some(format!("runs {short}{more}"));
    }
    if l.contains("Linux version") {
        Some("Linux booting".into())
    } else if l.contains("kvm [") && l.contains("hypervisor extension available") {
        Some("KVM available".into())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use e2e_proto::result::Outcome as Ended;

    fn guest() -> KvmGuest {
        KvmGuest {
            name: "demo".into(),
            kernel: "/k/Image".into(),
            initrd: Some("/k/initrd.cpio".into()),
            append: Some("console=ttyS0 rvpmu.mode=plan".into()),
            smp: 1,
            memory: KVM_GUEST_MEMORY.into(),
            cpus: None,
            timeout_s: None,
        }
    }

    #[test]
    fn argv_names_the_files_in_the_host() {
        let mut g = guest();
        let a = g.argv();
        assert_eq!(a[0], crate::qemu::QEMU);
        let after = |opt: &str| a.iter().position(|x| x == opt).map(|i| a[i + 1].as_str());
        assert_eq!(after("-kernel"), Some("/rvpmu/kvm/demo.kernel"));
        assert_eq!(after("-initrd"), Some("/rvpmu/kvm/demo.initrd"));
        assert_eq!(after("-append"), Some("console=ttyS0 rvpmu.mode=plan"));
        assert_eq!(after("-accel"), Some("kvm"));
        assert_eq!(after("-cpu"), Some("host"));
        assert!(!a.iter().any(|x| x == "-icount"));
        assert_eq!(
            g.files(),
            [
                (
                    "/rvpmu/kvm/demo.kernel".to_string(),
                    PathBuf::from("/k/Image")
                ),
                (
                    "/rvpmu/kvm/demo.initrd".to_string(),
                    PathBuf::from("/k/initrd.cpio")
                ),
            ]
        );
        // A bare kernel (no initramfs, no command line), pinned.
        g.initrd = None;
        g.append = None;
        g.cpus = Some("0".into());
        let a = g.argv();
        assert_eq!(&a[..4], ["taskset", "-c", "0", crate::qemu::QEMU]);
        g.timeout_s = Some(60);
        assert_eq!(
            &g.argv()[..8],
            [
                "timeout",
                "-s",
                "KILL",
                "60",
                "taskset",
                "-c",
                "0",
                crate::qemu::QEMU
            ]
        );
        g.timeout_s = None;
        assert!(!a.iter().any(|x| x == "-initrd" || x == "-append"));
        assert_eq!(g.files().len(), 1);
        g.name = "a b".into();
        assert!(g.check_name().is_err());
    }

    #[test]
    fn guest_outcome_reads_the_inner_console() {
        let console = "[    0.0] Linux version 7.2\r\nrvpmu /init: $ true\r\n\
                       RVPMU-RESULT {\"scenario\":\"cmd\",\"name\":\"t\",\"status\":0}\r\nRVPMU-DONE ok\r\n";
        let c = CmdResult::new(
            "kvm",
            &["qemu-system-riscv64".to_string()],
            &Ended::Exited(0),
            2_000_000_000,
            console.as_bytes(),
            b"",
        );
        let o = guest_outcome(&c);
        assert_eq!(o.done.as_deref(), Some("ok"));
        assert_eq!(o.scenario("cmd").len(), 1);
        assert!(!o.console.contains('\r'));
        assert_eq!(o.wall, Duration::from_secs(2));
        let bad = CmdResult::new("kvm", &["q".into()], &Ended::Exited(1), 0, b"x\n", b"oops");
        let o = guest_outcome(&bad);
        assert_eq!(o.done, None);
        assert!(o.tail(1).contains("exit status Some(1)"), "{}", o.console);
    }

    #[test]
    fn shell_words_are_quoted() {
        assert_eq!(sh_quote("-m"), "-m");
        assert_eq!(sh_quote("/rvpmu/kvm/a.kernel"), "/rvpmu/kvm/a.kernel");
        assert_eq!(sh_quote("console=ttyS0 x"), "'console=ttyS0 x'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote(""), "''");
        let mut g = guest();
        g.cpus = Some("1".into());
        let line = g.sh_line();
        assert!(
            line.starts_with("taskset -c 1 qemu-system-riscv64 "),
            "{line}"
        );
        assert!(
            line.ends_with(" -append 'console=ttyS0 rvpmu.mode=plan'"),
            "{line}"
        );
    }

    #[test]
    fn milestones() {
        assert_eq!(
            milestone("[    0.000000] Linux version 7.2.11 (x)").as_deref(),
            Some("Linux booting")
        );
        assert_eq!(
            milestone("rvpmu /init: $ qemu-system-riscv64 -machine virt").as_deref(),
            Some("runs qemu-system-riscv64 -machine virt")
        );
        let r = "RVPMU-RESULT {\"scenario\":\"cmd\",\"name\":\"kvm\",\"status\":0,\"elapsed_ns\":1500000000}";
        assert_eq!(
            milestone(r).as_deref(),
            Some("`kvm` ended (status 0, 1.5 s of its time)")
        );
        assert_eq!(milestone("[ 1.0] random: crng init done"), None);
        let inner = "RVPMU-RESULT {\"name\":\"kvm\",\"status\":0,\"elapsed_ns\":1,\"stdout\":\"Linux version\"}";
        assert!(milestone(inner).unwrap().starts_with("`kvm` ended"));
    }
}
