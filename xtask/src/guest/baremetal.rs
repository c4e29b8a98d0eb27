//! Bare-metal C programs on hpmtrace's C API: built with Debian's
//! `riscv64-linux-gnu-gcc -ffreestanding` against the bare-metal
//! `libhpmtrace.a` and a small S-mode runtime
//! (`crates/hpmtrace/tests/bare`: entry, trap vector, SBI console, HSM),
//! and run under QEMU icount as rvpmu-fw's `-kernel` payload (S-mode) or
//! as the machine's `-bios` (M-mode).

use crate::build::hpmtrace::{install, Mode};
use crate::host::{root, run, run_captured};
use crate::qemu::{exit, Qemu};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The test build's pool (PERF_MEM_POOL_SIZE): fib(20)'s whole trace with
/// cycles, timestamp and instructions is 1.6 MB.
const TEST_POOL: &str = "16M";

/// QEMU's wall-clock limit per run (each takes a few seconds).
const TIMEOUT: Duration = Duration::from_secs(120);

const CFLAGS: &[&str] = &[
    "-march=rv64gc",
    "-mabi=lp64d",
    "-mcmodel=medany",
    "-ffreestanding",
    "-fno-builtin",
    "-fno-pic",
    "-fno-stack-protector",
    "-O2",
    "-g",
];

pub fn sources() -> PathBuf {
    root().join("crates/hpmtrace/tests/bare")
}

/// One mode's library, installed, and where its programs go.
pub struct Build {
    pub mode: Mode,
    pub prefix: PathBuf,
    pub dir: PathBuf,
    /// The firmware S-mode programs run on.
    pub fw: PathBuf,
}

impl Build {
    pub fn new(mode: Mode, dir: PathBuf) -> Result<Build> {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let prefix = dir.join("prefix");
        install(&prefix, mode, Some(TEST_POOL))?;
        Ok(Build {
            mode,
            prefix,
            dir,
            fw: crate::build::firmware::build()?,
        })
    }

    /// Compile and link one program: `srcs` with the runtime and the
    /// library; `instrument` adds -finstrument-functions to the program's
    /// own sources (never to the runtime).
    pub fn link(&self, name: &str, srcs: &[PathBuf], instrument: bool) -> Result<PathBuf> {
        let gcc = || {
            let mut c = Command::new("riscv64-linux-gnu-gcc");
            c.args(CFLAGS)
                .arg("-I")
                .arg(self.prefix.join("include"))
                .arg("-I")
                .arg(sources());
            if self.mode == Mode::Machine {
                c.arg("-DMMODE");
            }
            c
        };
        let mut objs = Vec::new();
        for (src, inst) in [
            (sources().join("crt0.S"), false),
            (sources().join("rt.c"), false),
        ]
        .into_iter()
        .chain(srcs.iter().map(|s| (s.clone(), instrument)))
        {
            let o = self.dir.join(format!(
                "{name}-{}.o",
                src.file_stem().unwrap().to_string_lossy()
            ));
            let mut c = gcc();
            if inst {
                c.arg("-finstrument-functions");
            }
            run(c.arg("-c").arg(&src).arg("-o").arg(&o)).with_context(|| {
                format!(
                    "riscv64-linux-gnu-gcc could not compile {} (run `cargo xtask setup`)",
                    src.display()
                )
            })?;
            objs.push(o);
        }
        let elf = self.dir.join(format!("{name}.elf"));
        let mut c = gcc();
        c.args([
            "-nostdlib",
            "-static",
            "-no-pie",
            "-Wl,--build-id=none",
            "-Wl,--no-warn-rwx-segments",
            "-Wl,--gc-sections",
        ]);
        if self.mode == Mode::Machine {
            // The -bios address.
            c.arg("-Wl,--defsym=rt_origin=0x80000000");
        }
        run(c
            .arg("-T")
            .arg(sources().join("link.ld"))
            .args(&objs)
            .arg(self.prefix.join("lib/libhpmtrace.a"))
            .arg("-lgcc")
            .arg("-o")
            .arg(&elf))?;
        Ok(elf)
    }

    /// Run `elf` with `smp` harts under icount (on rvpmu-fw in S-mode, as
    /// the firmware in M-mode): its console, once it powered off cleanly.
    pub fn boot(&self, elf: &Path, smp: u32) -> Result<String> {
        let mut q = Qemu::virt(smp);
        match self.mode {
            Mode::Supervisor => {
                q.bios = Some(self.fw.clone());
                q.kernel = Some(elf.to_path_buf());
            }
            Mode::Machine => q.bios = Some(elf.to_path_buf()),
        }
        let r = run_captured(&mut q.command(), TIMEOUT, None)?;
        let code = r.status.and_then(|s| s.code());
        if code != Some(exit::POWER_OFF) {
            bail!(
                "{} did not power off cleanly: {}\n{}",
                elf.display(),
                exit::describe(code),
                tail(&r.stdout)
            );
        }
        Ok(r.stdout)
    }
}

/// The console without the dumps' hex lines, last 30 lines.
pub fn tail(console: &str) -> String {
    let lines: Vec<&str> = console
        .lines()
        .filter(|l| !(l.len() > 16 && l.bytes().all(|b| b.is_ascii_hexdigit())))
        .collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}
