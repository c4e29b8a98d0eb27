//! The S-mode SBI conformance kernel (crates/conformance).

use crate::host::BARE_TARGET;
use crate::host::{cargo, root, run, step};
use anyhow::{bail, Result};
use std::path::PathBuf;

/// Builds the conformance kernel and returns its ELF.
pub fn build_kernel() -> Result<PathBuf> {
    step(&format!("building the conformance kernel ({BARE_TARGET})"));
    run(cargo().args([
        "build",
        "--release",
        "-p",
        "conformance",
        "--target",
        BARE_TARGET,
    ]))?;
    let elf = root()
        .join("target")
        .join(BARE_TARGET)
        .join("release/conformance");
    if !elf.is_file() {
        bail!("cargo did not produce {}", elf.display());
    }
    Ok(elf)
}
