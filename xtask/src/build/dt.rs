//! Device trees with rvpmu-fw's `/chosen` switches: QEMU's own DT for the
//! exact machine options (`-machine virt,dumpdtb=FILE`), decompiled with
//! dtc, the properties added to `/chosen`, recompiled and passed with
//! `-dtb`. QEMU still writes `bootargs` and the initrd range into a DT given
//! with `-dtb` (hw/riscv/boot.c), so the guest keeps its command line and
//! initramfs; the e2e suite checks that on every such boot. Cached in
//! `target/rvpmu-e2e/dtb/`, keyed by the machine options, the QEMU version
//! and the added properties.

use super::kernel::fnv64;
use crate::host::{output, root, step};
use crate::qemu::Machine;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The noisy-neighbour steal source of rvpmu-fw (`rvpmu,noisy-neighbour =
/// <busy_us period_us>`): every period each hart spins in M-mode for
/// `busy_us` and reports exactly that as steal time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoisyNeighbour {
    pub busy_us: u32,
    pub period_us: u32,
}

impl NoisyNeighbour {
    /// Period used by `--steal` and the e2e suite.
    pub const PERIOD_US: u32 = 10_000;
    /// The percentages `--steal` accepts: above 90 % the guest barely runs.
    pub const PERCENT_RANGE: std::ops::RangeInclusive<u32> = 1..=90;

    /// `percent` of a 10 ms period.
    pub fn from_percent(percent: u32) -> Result<NoisyNeighbour> {
        if !Self::PERCENT_RANGE.contains(&percent) {
            bail!(
                "the noisy neighbour can take {} to {} percent of each {} ms period (0 turns it off)",
                Self::PERCENT_RANGE.start(),
                Self::PERCENT_RANGE.end(),
                Self::PERIOD_US / 1000
            );
        }
        Ok(NoisyNeighbour {
            busy_us: Self::PERIOD_US / 100 * percent,
            period_us: Self::PERIOD_US,
        })
    }

    /// `--steal PERCENT` of `run` and `shell`: 0 turns the neighbour off.
    pub fn from_steal_option(percent: u32) -> Result<Option<NoisyNeighbour>> {
        match percent {
            0 => Ok(None),
            p => NoisyNeighbour::from_percent(p)
                .map(Some)
                .map_err(|e| anyhow::anyhow!("--steal {p}: {e}")),
        }
    }

    /// The fraction of a busy hart's time the firmware withholds: the
    /// steal share Linux must report.
    pub fn share(&self) -> f64 {
        self.busy_us as f64 / self.period_us as f64
    }
}

/// rvpmu-fw's switches under `/chosen` (other firmware ignores them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Chosen {
    pub noisy_neighbour: Option<NoisyNeighbour>,
    /// `Some(false)`: `rvpmu,pmu-snapshot = <0>` (no PMU snapshot offer).
    pub pmu_snapshot: Option<bool>,
    /// `Some(false)`: `rvpmu,pmu-alias-window = <0>` (counter sets based
    /// at 4096 refused, as on a firmware without the window).
    pub pmu_alias_window: Option<bool>,
}

impl Chosen {
    /// QEMU's DT unchanged.
    pub const NONE: Chosen = Chosen {
        noisy_neighbour: None,
        pmu_snapshot: None,
        pmu_alias_window: None,
    };

    pub fn is_none(&self) -> bool {
        *self == Chosen::NONE
    }

    /// The properties as DTS lines.
    fn properties(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(n) = self.noisy_neighbour {
            v.push(format!(
                "rvpmu,noisy-neighbour = <{} {}>;",
                n.busy_us, n.period_us
            ));
        }
        if let Some(s) = self.pmu_snapshot {
            v.push(format!("rvpmu,pmu-snapshot = <{}>;", s as u32));
        }
        if let Some(a) = self.pmu_alias_window {
            v.push(format!("rvpmu,pmu-alias-window = <{}>;", a as u32));
        }
        v
    }

    /// The DTS text appended after QEMU's tree: dtc merges a second
    /// definition of `/` into the first, so `/chosen` gains the properties.
    fn overlay(&self) -> String {
        let mut s =
            String::from("\n/* added by cargo xtask (rvpmu-fw switches) */\n/ {\n\tchosen {\n");
        for p in self.properties() {
            s.push_str(&format!("\t\t{p}\n"));
        }
        s.push_str("\t};\n};\n");
        s
    }

    /// For labels and progress lines.
    pub fn describe(&self) -> String {
        self.properties().join(" ")
    }
}

fn dtc(args: &[&str], input: &std::path::Path, out: &std::path::Path) -> Result<()> {
    let o = Command::new("dtc")
        .arg("-q")
        .args(args)
        .arg("-o")
        .arg(out)
        .arg(input)
        .output()
        .context("cannot run dtc: `cargo xtask setup` installs device-tree-compiler")?;
    if !o.status.success() {
        bail!(
            "dtc {args:?} {} failed: {}",
            input.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    Ok(())
}

/// The DTB for `machine` with `chosen` added (built once, then cached).
pub fn custom_dtb(machine: &Machine, chosen: &Chosen) -> Result<PathBuf> {
    let qemu_version = crate::qemu::version()?;
    let overlay = chosen.overlay();
    let key = fnv64(&[
        machine.args().join(" ").as_bytes(),
        qemu_version.as_bytes(),
        overlay.as_bytes(),
    ]);
    let dir = root().join("target/rvpmu-e2e/dtb");
    std::fs::create_dir_all(&dir)?;
    let dtb = dir.join(format!("virt-smp{}-{key:016x}.dtb", machine.smp));
    if dtb.is_file() {
        return Ok(dtb);
    }
    step(&format!(
        "device tree: QEMU's for {} + /chosen {} -> {}",
        machine.args().join(" "),
        chosen.describe(),
        dtb.display()
    ));
    let tmp = |ext: &str| dir.join(format!("tmp-{key:016x}-{}.{ext}", std::process::id()));
    let (base, dts, new) = (tmp("base.dtb"), tmp("dts"), tmp("dtb"));
    machine.qemu().dump_dtb(&base)?;
    dtc(&["-I", "dtb", "-O", "dts"], &base, &dts)?;
    let mut text = std::fs::read_to_string(&dts)?;
    text.push_str(&overlay);
    std::fs::write(&dts, text)?;
    dtc(&["-I", "dts", "-O", "dtb"], &dts, &new)?;
    verify(&new, chosen)?;
    std::fs::rename(&new, &dtb)?;
    let _ = std::fs::remove_file(&base);
    let _ = std::fs::remove_file(&dts);
    Ok(dtb)
}

/// Read the properties back from the compiled DTB (fdtget), so a dtc that
/// silently dropped the merge cannot hand out an unchanged tree.
fn verify(dtb: &std::path::Path, chosen: &Chosen) -> Result<()> {
    let get = |prop: &str| -> Result<String> {
        let out = output(
            Command::new("fdtget")
                .args(["-t", "u"])
                .arg(dtb)
                .args(["/chosen", prop]),
        )?;
        Ok(out.trim().to_string())
    };
    if let Some(n) = chosen.noisy_neighbour {
        let got = get("rvpmu,noisy-neighbour")?;
        if got != format!("{} {}", n.busy_us, n.period_us) {
            bail!(
                "{}: /chosen rvpmu,noisy-neighbour reads `{got}`",
                dtb.display()
            );
        }
    }
    for (prop, want) in [
        ("rvpmu,pmu-snapshot", chosen.pmu_snapshot),
        ("rvpmu,pmu-alias-window", chosen.pmu_alias_window),
    ] {
        if let Some(w) = want {
            let got = get(prop)?;
            if got != (w as u32).to_string() {
                bail!("{}: /chosen {prop} reads `{got}`", dtb.display());
            }
        }
    }
    Ok(())
}

/// Writes `tree` to `out` with what boot loaders' device-tree fixups leave:
/// libfdt's own `fdt_nop_property` on the root's `model` and on
/// `/chosen/rng-seed`, and `fdt_nop_node` on the RTC (through
/// python3-libfdt), so the blob holds FDT_NOP tokens in place of a
/// property and of a whole node. The tree must be QEMU virt's.
pub fn with_nop_tokens(tree: &Path, out: &Path) -> Result<()> {
    let status = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(
            "import libfdt, sys\n\
             f = libfdt.Fdt(bytearray(open(sys.argv[1], 'rb').read()))\n\
             assert libfdt.fdt_nop_property(f._fdt, 0, 'model') == 0\n\
             assert libfdt.fdt_nop_property(f._fdt, f.path_offset('/chosen'), 'rng-seed') == 0\n\
             assert libfdt.fdt_nop_node(f._fdt, f.path_offset('/soc/rtc@101000')) == 0\n\
             open(sys.argv[2], 'wb').write(f._fdt)\n",
        )
        .arg(tree)
        .arg(out)
        .status()
        .context("cannot run /usr/bin/python3")?;
    if !status.success() {
        bail!(
            "python3-libfdt could not NOP {} ({status}): `cargo xtask setup` installs python3-libfdt",
            tree.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_maps_to_busy_of_a_10ms_period() {
        let n = NoisyNeighbour::from_percent(20).unwrap();
        assert_eq!((n.busy_us, n.period_us), (2000, 10_000));
        assert!((n.share() - 0.2).abs() < 1e-12);
        assert_eq!(NoisyNeighbour::from_percent(1).unwrap().busy_us, 100);
        assert_eq!(NoisyNeighbour::from_percent(90).unwrap().busy_us, 9000);
        for bad in [0, 91, 100, 1000] {
            let e = NoisyNeighbour::from_percent(bad).unwrap_err().to_string();
            assert!(e.contains("1 to 90 percent"), "{e}");
        }
    }

    #[test]
    fn overlay_adds_to_chosen() {
        let c = Chosen {
            noisy_neighbour: Some(NoisyNeighbour {
                busy_us: 2000,
                period_us: 10_000,
            }),
            pmu_snapshot: Some(false),
            pmu_alias_window: Some(false),
        };
        let o = c.overlay();
        assert!(o.contains("/ {\n\tchosen {\n"), "{o}");
        assert!(o.contains("rvpmu,noisy-neighbour = <2000 10000>;"), "{o}");
        assert!(o.contains("rvpmu,pmu-snapshot = <0>;"), "{o}");
        assert!(o.contains("rvpmu,pmu-alias-window = <0>;"), "{o}");
        assert!(Chosen::NONE.is_none() && !c.is_none());
    }
}
