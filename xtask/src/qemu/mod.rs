//! The machines: the one place a `qemu-system-riscv64` command line is
//! made. Every runner (firmware tests, conformance, the Linux boots, the
//! hypervisor, the interactive shell) and every device-tree dump describe
//! a machine with [`Qemu`] and get their command from it, so the DT a
//! firmware receives and the DT dumped for checking come from the same
//! options. Also here: the firmware images they boot ([`Firmware`], Debian's OpenSBI as the
//! peer) and what QEMU's exit status means under rvpmu-fw ([`exit`]).

pub mod exit;

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian's OpenSBI 1.5.1 (bookworm-backports `opensbi`), the peer firmware.
pub const OPENSBI: &str = "/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.bin";

/// The QEMU binary.
pub const QEMU: &str = "qemu-system-riscv64";

/// A QEMU virt machine and what it boots.
#[derive(Clone, Debug)]
pub struct Qemu {
    /// `-machine` value (`virt`, or `virt,aclint=on`).
    pub machine: String,
    /// `-cpu` value.
    pub cpu: String,
    pub smp: u32,
    /// `-m` value.
    pub memory: String,
    /// `-icount shift=0,sleep=off` and `-seed 1`: 1 instruction = 1 cycle
    /// = 1 ns, exact and repeatable counts (every test and benchmark).
    pub icount: bool,
    pub bios: Option<PathBuf>,
    pub kernel: Option<PathBuf>,
    pub initrd: Option<PathBuf>,
    pub dtb: Option<PathBuf>,
    pub append: Option<String>,
    /// `-no-reboot`: a reset request ends QEMU (Linux guests).
    pub no_reboot: bool,
    /// `-accel kvm -nic none`: a KVM guest, the QEMU a KVM host runs
    /// (with `cpu` "host"; no icount under KVM).
    pub kvm: bool,
}

impl Qemu {
    /// QEMU virt as the project tests it: rv64 with Sscofpmf (sampling and
    /// mode filtering), 256 MiB, icount, one hart, nothing to boot yet.
    pub fn virt(smp: u32) -> Qemu {
        Qemu {
            machine: "virt".into(),
            cpu: "rv64,sscofpmf=true".into(),
            smp,
            memory: "256M".into(),
            icount: true,
            bios: None,
            kernel: None,
            initrd: None,
            dtb: None,
            append: None,
            no_reboot: false,
            kvm: false,
        }
    }

    /// A KVM guest as a KVM host's QEMU runs it: virt, the host's CPU
    /// (`-cpu host`: its extensions, its PMU through KVM's SBI), `smp`
    /// vCPUs, `memory` of RAM, nothing to boot yet.
    pub fn kvm_guest(smp: u32, memory: &str) -> Qemu {
        let mut q = Qemu::virt(smp);
        q.cpu = "host".into();
        q.memory = memory.into();
        q.icount = false;
        q.kvm = true;
        q
    }

    /// The hypervisor's machine ([`HV_CPU`], one hart) with `memory` of
    /// host RAM, nothing to boot yet.
    pub fn hv(memory: &str) -> Qemu {
        let mut q = Qemu::virt(1);
        q.cpu = HV_CPU.into();
        q.memory = memory.into();
        q
    }

    /// A KVM host's machine ([`KVM_HOST_CPU`], [`KVM_HOST_MEMORY`]) with
    /// `smp` harts, nothing to boot yet.
    pub fn kvm_host(smp: u32) -> Qemu {
        let mut q = Qemu::virt(smp);
        q.cpu = KVM_HOST_CPU.into();
        q.memory = KVM_HOST_MEMORY.into();
        q
    }

    /// The options that shape the machine (and so its generated DT).
    pub fn machine_args(&self) -> Vec<String> {
        let mut v: Vec<String> = vec![
            "-machine".into(),
            self.machine.clone(),
            "-cpu".into(),
            self.cpu.clone(),
            "-smp".into(),
            self.smp.to_string(),
            "-m".into(),
            self.memory.clone(),
        ];
        if self.icount {
            // A repeatable run needs repeatable randomness too: QEMU's
            // guest random numbers (the DT's /chosen/rng-seed, which the
            // hypervisor passes on to its guests) come from this seed.
            v.extend(["-icount".into(), "shift=0,sleep=off".into()]);
            v.extend(["-seed".into(), "1".into()]);
        }
        v
    }

    /// The whole command: the machine, the console on stdio, what boots.
    pub fn command(&self) -> Command {
        let mut c = Command::new(QEMU);
        c.args(self.args());
        c
    }

    /// [`Qemu::command`] as an argv, program first (a command a guest
    /// runs: its paths are the guest's).
    pub fn argv(&self) -> Vec<String> {
        std::iter::once(QEMU.to_string())
            .chain(self.args())
            .collect()
    }

    /// The arguments of [`Qemu::command`].
    fn args(&self) -> Vec<String> {
        let mut v = self.machine_args();
        if self.kvm {
            v.extend(["-accel", "kvm", "-nic", "none"].map(String::from));
        }
        v.push("-nographic".into());
        if self.no_reboot {
            v.push("-no-reboot".into());
        }
        let files = [
            ("-bios", &self.bios),
            ("-kernel", &self.kernel),
            ("-initrd", &self.initrd),
            ("-dtb", &self.dtb),
        ];
        for (opt, path) in files {
            if let Some(p) = path {
                v.push(opt.into());
                v.push(p.display().to_string());
            }
        }
        if let Some(a) = &self.append {
            v.push("-append".into());
            v.push(a.clone());
        }
        v
    }

    /// Write the DT QEMU generates for this machine to `out`
    /// (`-machine ...,dumpdtb=`): nothing boots.
    pub fn dump_dtb(&self, out: &Path) -> Result<()> {
        let mut m = self.clone();
        m.machine = format!("{},dumpdtb={}", self.machine, out.display());
        m.bios = Some(PathBuf::from("none"));
        m.kernel = None;
        m.initrd = None;
        m.dtb = None;
        m.append = None;
        let o = m
            .command()
            .output()
            .with_context(|| format!("cannot run {QEMU}; `cargo xtask setup` installs it"))?;
        if !o.status.success() || !out.is_file() {
            bail!(
                "{QEMU} did not dump its device tree ({}): {}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            );
        }
        Ok(())
    }
}

/// `qemu-system-riscv64 --version`, for cache keys.
pub fn version() -> Result<String> {
    crate::host::output(Command::new(QEMU).arg("--version"))
        .with_context(|| format!("cannot run {QEMU}: run `cargo xtask setup`"))
}

/// What one QEMU run printed on its console and how QEMU ended.
pub struct Run {
    pub text: String,
    /// QEMU's exit status (`None`: killed at the timeout, or once what the
    /// runner waited for appeared).
    pub code: Option<i32>,
}

impl Run {
    /// The run of a captured QEMU process.
    pub fn from_captured(c: crate::host::Captured) -> Run {
        Run {
            text: c.stdout,
            code: c.status.and_then(|s| s.code()),
        }
    }
}

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

    /// Debian's OpenSBI under `name`, or an error saying how to install it.
    pub fn opensbi_installed(name: &str) -> Result<Firmware> {
        if !Path::new(OPENSBI).exists() {
            bail!("{OPENSBI} is missing: run `cargo xtask setup` (package opensbi from bookworm-backports)");
        }
        Ok(Firmware {
            name: name.into(),
            path: PathBuf::from(OPENSBI),
        })
    }

    pub fn is_opensbi(&self) -> bool {
        self.path == Path::new(OPENSBI)
    }
}

/// The machine Linux guests boot on: everything that shapes the guest and
/// its DT. One place, so the DT dumped for `-dtb` matches the machine
/// booted. A KVM host's harts and icount are given the same way (its
/// CPU and RAM are [`Qemu::kvm_host`]'s).
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
    pub fn qemu(&self) -> Qemu {
        let mut q = Qemu::virt(self.smp);
        q.memory = "1G".into();
        q.icount = self.icount;
        q
    }

    /// QEMU options for this machine.
    pub fn args(&self) -> Vec<String> {
        self.qemu().machine_args()
    }
}

/// The hypervisor's machine: -cpu; H for the hypervisor, Sstc for the guest's vstimecmp, Sscofpmf as on
/// every machine the project tests, Ssaia for `hvien` (the guest's
/// counter overflow interrupt is injected through hvip bit 13).
pub const HV_CPU: &str = "rv64,h=true,sscofpmf=true,sstc=true,ssaia=true";

/// Host RAM for vs-check: the firmware, the hypervisor, the guest's RAM,
/// the bundle (QEMU 10.0 puts -initrd 256 MiB after the kernel here), the DTB at
/// the top.
pub const HV_MEMORY: &str = "512M";

/// Host RAM for Linux: its bundle holds the 150 MB uncompressed
/// initramfs, and its guest RAM (as much as a native run's 1 GiB) goes
/// after the bundle; with more than 1 GiB QEMU puts the host DTB below
/// 3 GiB, and the window goes after it.
pub const HV_MEMORY_LINUX: &str = "2G";

/// A KVM host's CPU: the hypervisor's ([`HV_CPU`]: H for KVM, Ssaia for
/// a KVM guest's counter overflow interrupt) and Smcntrpmf, so that a
/// mode-filtered cycles or instructions event (the KVM host's perf
/// `:G`/`:H`, a KVM guest's counter) can go on the fixed counter: QEMU
/// counts an event id on one HPM counter at a time.
pub const KVM_HOST_CPU: &str = "rv64,h=true,sscofpmf=true,sstc=true,ssaia=true,smcntrpmf=true";

/// A KVM host's RAM (Linux on the hypervisor machine, [`HV_CPU`]): its
/// initramfs holds the KVM host userland and its KVM guests' kernel and
/// initramfs, unpacked into RAM, and a KVM guest's RAM and QEMU come on
/// top.
pub const KVM_HOST_MEMORY: &str = "2G";

/// A KVM guest's RAM inside the KVM host: the guest userland unpacks
/// into it, and with 256 MiB QEMU finds no room for the DTB after the
/// kernel and the initramfs.
pub const KVM_GUEST_MEMORY: &str = "512M";

/// Host RAM for two Linux guests: two 1 GiB windows and the bundle
/// (150 MB) fit below 4 GiB with the firmware, the hypervisor and the
/// host DTB.
pub const HV_MEMORY_LINUX_2: &str = "3G";

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(c: &Command) -> Vec<String> {
        c.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn command_lists_machine_then_what_boots() {
        let mut q = Qemu::virt(2);
        q.bios = Some("fw.bin".into());
        q.kernel = Some("Image".into());
        q.append = Some("console=ttyS0".into());
        let a = argv(&q.command());
        assert_eq!(
            a,
            [
                "-machine",
                "virt",
                "-cpu",
                "rv64,sscofpmf=true",
                "-smp",
                "2",
                "-m",
                "256M",
                "-icount",
                "shift=0,sleep=off",
                "-seed",
                "1",
                "-nographic",
                "-bios",
                "fw.bin",
                "-kernel",
                "Image",
                "-append",
                "console=ttyS0"
            ]
        );
        q.icount = false;
        q.no_reboot = true;
        let a = argv(&q.command());
        assert!(
            !a.contains(&"-icount".to_string())
                && !a.contains(&"-seed".to_string())
                && a.contains(&"-no-reboot".to_string())
        );
    }

    #[test]
    fn kvm_guest_argv() {
        let mut q = Qemu::kvm_guest(1, KVM_GUEST_MEMORY);
        q.kernel = Some("/rvpmu/kvm/Image".into());
        q.append = Some("console=ttyS0 rvpmu.mode=plan".into());
        assert_eq!(
            q.argv(),
            [
                QEMU,
                "-machine",
                "virt",
                "-cpu",
                "host",
                "-smp",
                "1",
                "-m",
                "512M",
                "-accel",
                "kvm",
                "-nic",
                "none",
                "-nographic",
                "-kernel",
                "/rvpmu/kvm/Image",
                "-append",
                "console=ttyS0 rvpmu.mode=plan"
            ]
        );
    }
}
