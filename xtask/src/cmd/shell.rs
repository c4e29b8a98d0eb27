//! `cargo xtask shell`: an interactive guest on this terminal, booted to
//! busybox's shell with `perf` and the workloads on the PATH.

use super::{check_smp, chosen_firmware};
use crate::guest::linux::Guest;
use crate::guest::shell::{boot, ShellArgs};
use crate::host::{setup, step};
use anyhow::{bail, Context, Result};

/// `cargo xtask shell`: an interactive guest on this terminal.
pub fn run(a: ShellArgs) -> Result<()> {
    check_smp(a.smp)?;
    setup::ensure_host()?;
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
