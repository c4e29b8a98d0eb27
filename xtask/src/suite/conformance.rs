//! The conformance suite: our firmware must pass everything with 1 and 2
//! harts (no failure, no N/A); OpenSBI is reported only.

use crate::build::conformance::build_kernel;
use crate::guest::conformance::{consistent, opensbi, ours, require_all_passed, suite};
use anyhow::Result;

/// The CI entry: our firmware must pass everything with 1 and 2 harts (no
/// failure, no N/A); OpenSBI is reported only.
pub fn test() -> Result<()> {
    let kernel = build_kernel()?;
    match ours() {
        Ok(fw) => {
            for smp in [1, 2] {
                let rep = suite(&fw, &kernel, smp, false)?;
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
    let fw = opensbi()?;
    let rep = suite(&fw, &kernel, 1, false)?;
    consistent(&rep)?;
    println!(
        "OpenSBI 1.5.1 (reference, report only): {} passed, {} failed, {} N/A of {} checks",
        rep.passed(),
        rep.failed(),
        rep.na(),
        rep.checks.len()
    );
    Ok(())
}
