//! The conformance suite: our firmware must pass everything with 1 and 2
//! harts (no failure, no N/A); OpenSBI is reported only.

use crate::build::conformance::build_kernel;
use crate::build::dt::with_nop_tokens;
use crate::guest::conformance::{
    consistent, opensbi, ours, require_all_passed, suite, Report, Status, Target,
};
use crate::host::{root, step};
use crate::qemu::Qemu;
use anyhow::{bail, Result};
use std::path::Path;

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
    reads_nop_tokens(&fw, &kernel, &rep)
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
