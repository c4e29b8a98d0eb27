//! The conformance suite: our firmware must pass everything with 1 and 2
//! harts (no failure, no N/A); OpenSBI is reported only; in a KVM guest
//! KVM must fail exactly its pinned deviations, on 7.2 and on 7.2-fixed
//! (one nested boot each).

use crate::build::conformance::build_kernel;
use crate::build::dt::with_nop_tokens;
use crate::build::kernel::Version;
use crate::guest::conformance::{
    consistent, kvm_fail_ids, kvm_skip, opensbi, ours, print_not_passed, require_all_passed, suite,
    suite_skipping, unpinned, Report, Status, Target, Under,
};
use crate::guest::kvm::KvmHost;
use crate::host::{root, step};
use crate::qemu::Qemu;
use anyhow::{bail, Result};
use std::path::Path;
use std::rc::Rc;

/// The CI entry: our firmware must pass everything with 1 and 2 harts (no
/// failure, no N/A); OpenSBI is reported only.
pub fn test() -> Result<()> {
    let kernel = build_kernel()?;
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
            }
        }
        Err(e) => {
            eprintln!();
            eprintln!("**************************************************************************");
            eprintln!(
                "*** OUR FIRMWARE IS NOT AVAILABLE: the conformance suite did NOT run on it."
            );
            eprintln!("*** {e:#}");
            eprintln!("*** Only the OpenSBI reference report follows.");
            eprintln!("**************************************************************************");
            eprintln!();
        }
    }
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
    reads_nop_tokens(&fw, &kernel, &rep)?;
    kvm(&kernel)
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
        let rep = suite_skipping(&target, kernel, 1, false, None, &kvm_skip(host))?;
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
