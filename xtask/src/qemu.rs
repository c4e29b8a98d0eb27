//! The one place a `qemu-system-riscv64` command line is made: every runner
//! (firmware tests, conformance, the Linux boots, the interactive shell)
//! and every device-tree dump describe a machine with [`Qemu`] and get
//! their command from it, so the DT a firmware receives and the DT dumped
//! for checking come from the same options.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

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
        }
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
        c.args(self.machine_args()).arg("-nographic");
        if self.no_reboot {
            c.arg("-no-reboot");
        }
        let files = [
            ("-bios", &self.bios),
            ("-kernel", &self.kernel),
            ("-initrd", &self.initrd),
            ("-dtb", &self.dtb),
        ];
        for (opt, path) in files {
            if let Some(p) = path {
                c.arg(opt).arg(p);
            }
        }
        if let Some(a) = &self.append {
            c.arg("-append").arg(a);
        }
        c
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
    crate::util::output(Command::new(QEMU).arg("--version"))
        .with_context(|| format!("cannot run {QEMU}: run `cargo xtask setup`"))
}

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
}
