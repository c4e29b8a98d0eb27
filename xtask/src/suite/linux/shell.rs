//! The shell tests: a scripted session on a pseudo-terminal drives the
//! guest's busybox shell as a user would, natively and in a KVM guest.

use crate::guest::kvm::KvmHost;
use crate::guest::linux::Guest;
use crate::guest::shell::{boot, kvm_guest, Session, ShellArgs, PROMPT};
use crate::host::step;
use crate::qemu::Firmware;
use crate::qemu::Machine;
use crate::suite::{print_check, Verdict};
use anyhow::Result;
use std::time::Duration;

/// A scripted session: the prompt comes, `perf stat` of a known loop
/// answers with its count, `echo $PATH`-style shell work answers, and
/// `poweroff` ends QEMU. Returns the number of failed checks.
pub fn test(guest: &Guest, fw: &Firmware, alu_insns: u64) -> Result<u32> {
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
        kvm: false,
    };
    let b = boot(guest, fw, &a, &guest.initramfs.archive)?;
    let s = Session::start(&b.command()?)?;
    session(
        s,
        &format!("{} shell", guest.version.name()),
        alu_insns,
        None,
    )
}

/// `cargo xtask shell --kvm`'s session, scripted the same way: the KVM
/// guest's prompt on the terminal, its perf and tools, its SBI KVM's, and
/// `poweroff` ending both QEMUs. Returns the number of failed checks.
pub fn test_kvm(guest: &Guest, host: &KvmHost, fw: &Firmware, alu_insns: u64) -> Result<u32> {
    step(&format!(
        "shell --kvm: a scripted session on a pseudo-terminal ({} KVM host on {}, icount)",
        guest.version, fw.name
    ));
    let machine = Machine {
        smp: 1,
        icount: true,
    };
    let cmd = host.shell_command(fw, machine, &kvm_guest(guest))?;
    let s = Session::start(&cmd)?;
    session(
        s,
        &format!("{} shell --kvm", guest.version.name()),
        alu_insns,
        Some("SBI implementation ID=0x3 "),
    )
}

/// The scripted session on `s`, checks labelled `[label]`; `kvm`: the
/// kernel line that says the shell is in a KVM guest (one vCPU), else
/// the native guest's two harts are checked.
fn session(mut s: Session, label: &str, alu_insns: u64, kvm: Option<&str>) -> Result<u32> {
    let mut failed = 0;
    let mut check = |name: &str, ok: bool, want: &str, got: &str| {
        print_check(
            &format!("[{label}] {name}"),
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
    let cpus = if kvm.is_some() { "1" } else { "2" };
    check(
        "busybox tools answer (grep /proc/cpuinfo)",
        got.lines().any(|l| l.trim() == cpus),
        &format!("a line `{cpus}` ({cpus} CPU(s))"),
        &format!(
            "lines {:?}",
            got.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.contains("grep"))
                .collect::<Vec<_>>()
        ),
    );
    if let Some(line) = kvm {
        // Quoted apart in the typed line, whole only in the answer.
        s.type_line(&format!(
            "echo s''bi=$(dmesg | grep -c '{line}'); echo do''ne=$?"
        ))?;
        let got = s
            .expect("done=", Duration::from_secs(60))
            .unwrap_or_else(|e| format!("{e:#}"));
        check(
            "the shell runs in the KVM guest (its kernel found KVM's SBI)",
            got.lines().any(|l| l.trim() == "sbi=1"),
            &format!("`sbi=1`: one \"{line}\" line in dmesg"),
            &format!(
                "lines {:?}",
                got.lines()
                    .map(str::trim)
                    .filter(|l| l.starts_with("sbi="))
                    .collect::<Vec<_>>()
            ),
        );
    }
    s.type_line("poweroff")?;
    let exited = s.wait_exit(Duration::from_secs(120))?;
    check(
        if kvm.is_some() {
            "`poweroff` ends the KVM guest's QEMU, then the KVM host's"
        } else {
            "`poweroff` ends QEMU"
        },
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
