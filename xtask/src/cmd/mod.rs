//! The commands: `run` (the main job), `shell`, `dt-check`, `cabi`, and
//! the firmware, hypervisor and conformance commands (their `--test`
//! options run `suite`'s suites, from main.rs). One child per command;
//! the options `run` and `shell` share (`--smp`, `--bios`) are read here.

pub mod cabi;
pub mod conformance;
pub mod dtcheck;
pub mod firmware;
pub mod hv;
pub mod run;
pub mod shell;

use crate::build::firmware::RUSTSBI_BIOS;
use crate::qemu::Firmware;
use anyhow::{bail, Result};
use std::path::PathBuf;

/// `--smp N`: the kernels are built for 1 to 4 harts (NR_CPUS=4).
fn check_smp(smp: u32) -> Result<()> {
    if smp == 0 || smp > 4 {
        bail!("--smp {smp}: the kernel is built for 1 to 4 harts");
    }
    Ok(())
}

fn chosen_firmware(bios: &Option<PathBuf>) -> Result<Firmware> {
    match bios {
        Some(p) if p.as_os_str() == "opensbi" => Ok(Firmware::opensbi()),
        Some(p) if p.as_os_str() == RUSTSBI_BIOS => crate::build::firmware::rustsbi(),
        Some(p) => {
            if !p.is_file() {
                bail!(
                    "--bios {}: no such file (give a raw firmware image, `opensbi` or `rustsbi`)",
                    p.display()
                );
            }
            Ok(Firmware {
                name: p.display().to_string(),
                path: p.clone(),
            })
        }
        None => crate::build::firmware::ours("rvpmu-fw"),
    }
}
