//! `cargo xtask shell`: an interactive guest on this terminal, booted to
//! busybox's shell with `perf` and the workloads on the PATH (`--kvm`: a
//! KVM guest's, through a KVM host).

use super::{check_smp, chosen_firmware};
use crate::guest::kvm::KvmHost;
use crate::guest::linux::Guest;
use crate::guest::shell::{boot, kvm_guest, ShellArgs};
use crate::host::{setup, step};
use crate::qemu::Machine;
use anyhow::{bail, Context, Result};

/// `cargo xtask shell`: an interactive guest on this terminal.
pub fn run(a: ShellArgs) -> Result<()> {
    check_smp(a.smp)?;
    setup::ensure_host()?;
    let fw = chosen_firmware(&a.bios)?;
    let guest = Guest::build(a.kernel)?;
    if a.kvm {
        return kvm(&a, &fw, &guest);
    }
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

/// `cargo xtask shell --kvm`: the KVM host's console handed to its KVM
/// guest's QEMU, whose console is the KVM guest's shell.
fn kvm(a: &ShellArgs, fw: &crate::qemu::Firmware, guest: &Guest) -> Result<()> {
    if a.smp != 1 {
        bail!("--kvm: a one-hart KVM host and a one-vCPU KVM guest (no --smp)");
    }
    let host = KvmHost::build(a.kernel)?;
    let kvm_guest = kvm_guest(guest);
    let machine = Machine {
        smp: 1,
        icount: a.icount,
    };
    let mut cmd = host.shell_command(fw, machine, &kvm_guest)?;
    step(&format!(
        "booting {} as a KVM host on {}{}, then the same kernel as its KVM guest to a shell: \
         try `perf stat -e instructions:u rvpmu-work alu 1000000`; `poweroff` ends both; \
         Ctrl-A X quits the outer QEMU (Ctrl-A Ctrl-A X the inner one)",
        host.version,
        fw.name,
        if a.icount { " (icount)" } else { "" }
    ));
    let st = cmd.status().context("starting qemu-system-riscv64")?;
    if !st.success() {
        bail!("QEMU exited with {st}");
    }
    Ok(())
}
