//! The conformance suite: our firmware must pass everything with 1 and 2
//! harts (no failure, no N/A), and its JSON lines say what its text lines
//! say; rustsbi-fw (the RustSBI-based firmware) must fail exactly its
//! pinned checks, none of them the PMU's or STA's; the OpenSBI peers
//! (Debian's 1.5.1, trixie's 1.6) are reported only, but their runs must
//! reach every check on every hart, the checks that hang OpenSBI 1.6
//! included; the kernel reads a tree with NOP tokens; in a KVM guest KVM
//! must fail exactly its pinned deviations, on 7.2 and on 7.2-fixed (one
//! nested boot each).

use crate::build::conformance::build_kernel;
use crate::build::dt::with_nop_tokens;
use crate::build::kernel::Version;
use crate::guest::conformance::{
    consistent, kvm_fail_ids, kvm_skip, opensbi, opensbi_1_6, ours, print_not_passed,
    require_all_passed, rustsbi_fw_unpinned, suite, suite_with, unpinned, Report, Status, Target,
    Under,
};
use crate::guest::kvm::KvmHost;
use crate::host::{root, step};
use crate::qemu::Qemu;
use anyhow::{bail, Result};
use std::path::Path;
use std::rc::Rc;

/// The CI entry: our firmware must pass everything with 1 and 2 harts (no
/// failure, no N/A), the same in JSON lines; the OpenSBI peers are
/// reported, and must reach every check ours reaches.
pub fn test() -> Result<()> {
    let kernel = build_kernel()?;
    firmwares(&kernel)?;
    kvm(&kernel)
}

/// The kernel directly on the firmwares: ours, rustsbi-fw, OpenSBI 1.5.1,
/// OpenSBI 1.6.
fn firmwares(kernel: &Path) -> Result<()> {
    let kernel = kernel.to_path_buf();
    let mut reference: Vec<Option<Report>> = vec![None, None];
    match ours() {
        Ok(fw) => {
            for smp in [1, 2] {
                let rep = suite(&Target::firmware(fw.clone()), &kernel, smp, false, None)?;
                consistent(&rep)?;
                require_all_passed(&rep, smp)?;
                println!(
                    "ours -smp {smp}: all {} checks passed (0 failed, 0 N/A)",
                    rep.checks.len()
                );
                reference[smp as usize - 1] = Some(rep);
            }
            json_lines(&Target::firmware(fw), &kernel, reference[1].as_ref())?;
        }
        Err(e) => {
            eprintln!();
            eprintln!("**************************************************************************");
            eprintln!(
                "*** OUR FIRMWARE IS NOT AVAILABLE: the conformance suite did NOT run on it."
            );
            eprintln!("*** {e:#}");
            eprintln!("*** Only the OpenSBI reference reports follow.");
            eprintln!("**************************************************************************");
            eprintln!();
        }
    }
    rustsbi_fw(&kernel)?;
    let fw = Target::firmware(opensbi()?);
    let rep = suite(&fw, &kernel, 1, false, None)?;
    consistent(&rep)?;
    println!(
        "OpenSBI 1.5.1 (reference, report only): {} passed, {} failed, {} N/A of {} checks",
        rep.passed(),
        rep.failed(),
        rep.na(),
        rep.checks.len()
    );
    reaches_every_check("OpenSBI 1.5.1", &rep, reference[0].as_ref())?;
    reads_nop_tokens(&fw, &kernel, &rep)?;
    peer_1_6(&kernel, &reference)
}

/// Debian trixie's OpenSBI 1.6, reported at -smp 1 and 2: some of its
/// event_get_info checks crash the firmware in M-mode and hang the hart
/// (docs/conformance.md, "OpenSBI and event_get_info"), so the run is
/// repeated without each; it must still reach every check on every
/// hart, and the kernel's summary must count the skipped ones.
fn peer_1_6(kernel: &Path, reference: &[Option<Report>]) -> Result<()> {
    let fw = Target::firmware(opensbi_1_6()?);
    for smp in [1, 2] {
        let start = std::time::Instant::now();
        let rep = suite(&fw, kernel, smp, false, None)?;
        consistent(&rep)?;
        let skipped: Vec<&str> = rep
            .checks
            .iter()
            .filter(|c| c.actual.starts_with("not run"))
            .map(|c| c.id.as_str())
            .collect();
        println!(
            "OpenSBI 1.6 -smp {smp} (reference, report only): {} passed, {} failed, {} N/A of {} checks; \
             not run because they hung it: {skipped:?}; {:.0} s",
            rep.passed(),
            rep.failed(),
            rep.na(),
            rep.checks.len(),
            start.elapsed().as_secs_f64()
        );
        reaches_every_check(
            &format!("OpenSBI 1.6 -smp {smp}"),
            &rep,
            reference[smp as usize - 1].as_ref(),
        )?;
    }
    Ok(())
}

/// A peer's run has a verdict for every check our firmware's run has
/// (the same names, each hart's prefix included): a hang skipped did not
/// hide the checks after it.
fn reaches_every_check(name: &str, rep: &Report, ours: Option<&Report>) -> Result<()> {
    let Some(ours) = ours else { return Ok(()) };
    let ids = |r: &Report| -> std::collections::BTreeSet<String> {
        r.checks.iter().map(|c| c.id.clone()).collect()
    };
    let (want, got) = (ids(ours), ids(rep));
    let missing: Vec<&String> = want.difference(&got).collect();
    let extra: Vec<&String> = got.difference(&want).collect();
    if !missing.is_empty() || !extra.is_empty() {
        bail!("{name} did not reach the checks ours reaches: missing {missing:?}, not on ours {extra:?}");
    }
    Ok(())
}

/// `rvpmu.format=json`: the same verdicts, in the same order, as the text
/// lines (the JSON run at -smp 2, against the text run `text`).
fn json_lines(fw: &Target, kernel: &Path, text: Option<&Report>) -> Result<()> {
    let Some(text) = text else { return Ok(()) };
    let rep = suite_with(fw, kernel, 2, false, None, &[], &["rvpmu.format=json"])?;
    consistent(&rep)?;
    // Names and verdicts (the actual values may read counters, and a JSON
    // line is longer to print than a text line).
    let lines = |r: &Report| -> Vec<(String, Status)> {
        r.checks.iter().map(|c| (c.id.clone(), c.status)).collect()
    };
    if lines(&rep) != lines(text) {
        bail!(
            "rvpmu.format=json gave {} verdicts, the text lines {}: they differ",
            rep.checks.len(),
            text.checks.len()
        );
    }
    println!(
        "ours -smp 2, rvpmu.format=json: the same {} verdicts as the text lines",
        rep.checks.len()
    );
    Ok(())
}

/// rustsbi-fw with 1 and 2 harts: exactly its pinned failures and N/As
/// (`guest::conformance::RUSTSBI_FW_FAIL`, all rustsbi's dispatch), so
/// every PMU, snapshot, event_get_info and STA check passes through the
/// adapter.
fn rustsbi_fw(kernel: &Path) -> Result<()> {
    let fw = crate::build::firmware::rustsbi()?;
    for smp in [1, 2] {
        let rep = suite(&Target::firmware(fw.clone()), kernel, smp, false, None)?;
        consistent(&rep)?;
        if let Some(d) = rustsbi_fw_unpinned(&rep, smp) {
            print_not_passed(&rep);
            bail!("rustsbi-fw -smp {smp} differs from its pinned results: {d}");
        }
        println!(
            "rustsbi-fw -smp {smp}: {} passed, {} failed, {} N/A of {} checks (as pinned: rustsbi's dispatch)",
            rep.passed(),
            rep.failed(),
            rep.na(),
            rep.checks.len()
        );
    }
    Ok(())
}

/// KVM's SBI judged by the suite: the kernel in a KVM guest of Linux 7.2
/// booted as a KVM host on our firmware (OpenSBI if ours is not
/// available: KVM answers alike on both), -smp 1, fails exactly the
/// pinned checks (`guest::conformance::KVM_FAIL`) and nothing is N/A, so a
/// change in KVM or in the suite shows; then the same on 7.2-fixed, whose
/// KVM fails exactly what the series' KVM patches leave
/// (`guest::conformance::KVM_FIXES`). One nested boot each: on 7.2 the
/// check that shuts KVM's guest down is skipped from the start
/// ([`kvm_skip`]); on 7.2-fixed KVM answers it INVALID_PARAM.
fn kvm(kernel: &Path) -> Result<()> {
    let fw = ours().or_else(|_| opensbi())?;
    for host in [Version::V7_2, Version::V7_2_FIXED] {
        let Some(pinned) = kvm_fail_ids(host) else {
            bail!("KVM on {host} has no pinned conformance results");
        };
        let target = Target {
            fw: fw.clone(),
            under: Under::Kvm(Rc::new(KvmHost::build(host)?)),
        };
        let rep = suite_with(&target, kernel, 1, false, None, &kvm_skip(host), &[])?;
        consistent(&rep)?;
        if let Some(d) = unpinned(&rep, &pinned, &[]) {
            print_not_passed(&rep);
            bail!("KVM's conformance on {host} differs from its pinned deviations (docs/hypervisor.md, \"KVM's SBI judged by the suite\"): {d}");
        }
        println!(
            "{} on {host}: {} passed, {} failed (exactly the pinned KVM deviations), 0 N/A",
            target.name(true),
            rep.passed(),
            rep.failed()
        );
    }
    Ok(())
}

/// The conformance kernel reads a device tree with FDT_NOP tokens (a
/// NOPed property and a NOPed node, as boot loaders' fixups leave them)
/// as the tree without them: every check ends as on QEMU's own tree.
/// OpenSBI hands the tree on with its NOP tokens (our firmware removes
/// them in place, so on it the kernel would never see one).
fn reads_nop_tokens(fw: &Target, kernel: &Path, plain: &Report) -> Result<()> {
    step("conformance kernel on OpenSBI 1.5.1, QEMU's tree with libfdt's NOP tokens (-dtb)");
    let dir = root().join("target/conformance");
    std::fs::create_dir_all(&dir)?;
    let (tree, nopped) = (dir.join("virt.dtb"), dir.join("virt-nop.dtb"));
    Qemu::virt(1).dump_dtb(&tree)?;
    with_nop_tokens(&tree, &nopped)?;
    let rep = suite(fw, kernel, 1, false, Some(&nopped))?;
    consistent(&rep)?;
    let verdicts = |r: &Report| -> Vec<(String, Status)> {
        r.checks.iter().map(|c| (c.id.clone(), c.status)).collect()
    };
    let (want, got) = (verdicts(plain), verdicts(&rep));
    if got != want {
        let differ: Vec<&str> = want
            .iter()
            .zip(&got)
            .filter(|(a, b)| a != b)
            .map(|(a, _)| a.0.as_str())
            .collect();
        bail!(
            "with NOP tokens the kernel ran {} checks ({} without); verdicts differ in {differ:?}",
            got.len(),
            want.len()
        );
    }
    println!(
        "OpenSBI 1.5.1 with NOP tokens in the tree: the same {} verdicts as without",
        got.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The firmwares' part of the suite on its own (ours, OpenSBI 1.5.1
    /// and 1.6; no Linux): `cargo test -p xtask firmware_conformance --
    /// --ignored --nocapture`.
    #[test]
    #[ignore]
    fn firmware_conformance() {
        let kernel = super::build_kernel().unwrap();
        super::firmwares(&kernel).unwrap();
    }

    /// KVM's part of the suite on its own, on 7.2 and 7.2-fixed (two
    /// nested boots; the kernels built first if they are not cached):
    /// `cargo test -p xtask kvm_conformance -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn kvm_conformance() {
        let kernel = super::build_kernel().unwrap();
        super::kvm(&kernel).unwrap();
    }
}
