//! The hypervisor (crates/rvpmu-hv) and its test guest vs-check as raw
//! images, and guest bundles (`rvpmu_hv::bundle`: RAM size, command line,
//! kernel, initrd; the hypervisor's own library defines the format).

use super::{bare_dir, objcopy, FW_PROFILE};
use crate::host::BARE_TARGET;
use crate::host::{cargo, run, step};
use anyhow::{Context, Result};
use rvpmu_hv::bundle::{Header, HEADER_LEN};
use std::path::{Path, PathBuf};

/// The firmware, the hypervisor and the test guest, as raw images.
pub struct Images {
    pub firmware: PathBuf,
    pub hypervisor: PathBuf,
    pub vs_check: PathBuf,
}

/// Build everything a hypervisor run needs.
pub fn build() -> Result<Images> {
    let firmware = super::firmware::build()?;
    step("building the hypervisor (rvpmu-hv) and its test guest (vs-check)");
    run(cargo().args([
        "build",
        "-p",
        "rvpmu-hv",
        "-p",
        "vs-check",
        "--bins",
        "--target",
        BARE_TARGET,
        "--profile",
        FW_PROFILE,
    ]))?;
    let dir = bare_dir(FW_PROFILE);
    Ok(Images {
        firmware,
        hypervisor: objcopy(&dir.join("rvpmu-hv"))?,
        vs_check: objcopy(&dir.join("vs-check"))?,
    })
}

/// Write a guest bundle to `out`.
pub fn write_bundle(
    out: &Path,
    ram_size: u64,
    cmdline: &str,
    kernel: &[u8],
    initrd: &[u8],
) -> Result<()> {
    let h = Header::for_parts(
        ram_size,
        cmdline.len() as u64,
        kernel.len() as u64,
        initrd.len() as u64,
    );
    let mut b = vec![0u8; h.total_len() as usize];
    b[..HEADER_LEN].copy_from_slice(&h.to_bytes());
    for ((off, len), data) in [
        (h.cmdline, cmdline.as_bytes()),
        (h.kernel, kernel),
        (h.initrd, initrd),
    ] {
        b[off as usize..(off + len) as usize].copy_from_slice(data);
    }
    std::fs::write(out, b).with_context(|| format!("cannot write {}", out.display()))
}
