//! `cargo xtask conformance`: the S-mode SBI conformance suite against a
//! firmware, or two side by side.

use crate::build::conformance::build_kernel;
use crate::guest::conformance::{
    consistent, opensbi, ours, require_all_passed, suite, Check, Report, Status,
};
use crate::host::setup;
use crate::qemu::Firmware;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ConformanceArgs {
    /// Firmware to test: `ours`, `opensbi`, `both` (ours and OpenSBI side
    /// by side), the path of a raw -bios path: image, or two of these joined by a
    /// comma (side by side).
    #[arg(long, default_value = "both")]
    pub bios: String,
    /// Number of harts; every hart runs the suite on its own PMU state.
    #[arg(long, default_value_t = 1)]
    pub smp: u32,
    /// Also print every line of the raw kernel output.
    #[arg(long)]
    pub verbose: bool,
}

fn resolve_one(name: &str) -> Result<Firmware> {
    match name {
        "ours" => ours(),
        "opensbi" => opensbi(),
        path => {
            let image = PathBuf::from(path);
            if !image.is_file() {
                bail!("--bios {path}: no such file (use ours, opensbi, both or a path)");
            }
            Ok(Firmware {
                name: path.into(),
                path: image,
            })
        }
    }
}

fn resolve(bios: &str) -> Result<Vec<Firmware>> {
    if bios == "both" {
        return Ok(match ours() {
            Ok(o) => vec![o, opensbi()?],
            Err(e) => {
                eprintln!("*** OUR FIRMWARE IS NOT AVAILABLE ({e:#}); running OpenSBI only");
                vec![opensbi()?]
            }
        });
    }
    let fws = bios
        .split(',')
        .map(resolve_one)
        .collect::<Result<Vec<_>>>()?;
    if fws.len() > 2 {
        bail!("--bios takes at most two firmwares");
    }
    Ok(fws)
}

pub fn run(a: ConformanceArgs) -> Result<()> {
    setup::ensure_host()?;
    let fws = resolve(&a.bios)?;
    let kernel = build_kernel()?;
    let mut reps = Vec::new();
    for fw in &fws {
        let rep = suite(fw, &kernel, a.smp, a.verbose, None)?;
        consistent(&rep)?;
        if fws.len() == 1 {
            print_report(fw, a.smp, &rep);
        }
        reps.push(rep);
    }
    if fws.len() == 2 {
        print_side_by_side((&fws[0], &reps[0]), (&fws[1], &reps[1]));
    }
    for (fw, rep) in fws.iter().zip(&reps) {
        if fw.name == "ours" {
            require_all_passed(rep, a.smp)?;
        }
    }
    Ok(())
}

/// Side-by-side table; where the answers differ, the line names the firmware
/// whose answer the spec supports (the check's expectation is the spec's).
fn print_side_by_side(a: (&Firmware, &Report), b: (&Firmware, &Report)) {
    let bmap: BTreeMap<&str, &Check> = b.1.checks.iter().map(|c| (c.id.as_str(), c)).collect();
    let w =
        a.1.checks
            .iter()
            .map(|c| c.id.len())
            .max()
            .unwrap_or(0)
            .max(34);
    println!(
        "\n{:<w$} {:<6} {:<6}  where they differ",
        "check", a.0.name, b.0.name
    );
    let mut differ = 0;
    for ca in &a.1.checks {
        let cb = bmap.get(ca.id.as_str());
        let sb = cb.map_or("-", |c| c.status.label());
        let mut note = String::new();
        if let Some(cb) = cb {
            if ca.status != cb.status || ca.actual != cb.actual {
                differ += 1;
                let good: Vec<&str> = [(a.0, ca), (b.0, *cb)]
                    .iter()
                    .filter(|(_, c)| c.status != Status::Fail)
                    .map(|(f, _)| f.name.as_str())
                    .collect();
                let verdict = match good.len() {
                    2 => "both allowed by the spec".to_string(),
                    1 => format!("spec supports {}", good[0]),
                    _ => "neither matches the spec".to_string(),
                };
                let _ = write!(
                    note,
                    "{}: {} | {}: {} | spec: {} -> {verdict}",
                    a.0.name, ca.actual, b.0.name, cb.actual, ca.expected
                );
            }
        }
        println!("{:<w$} {:<6} {:<6}  {note}", ca.id, ca.status.label(), sb);
    }
    println!(
        "\n{}: {} passed, {} failed, {} N/A | {}: {} passed, {} failed, {} N/A | {differ} checks answered differently",
        a.0.name,
        a.1.passed(),
        a.1.failed(),
        a.1.na(),
        b.0.name,
        b.1.passed(),
        b.1.failed(),
        b.1.na()
    );
}

fn print_report(fw: &Firmware, smp: u32, rep: &Report) {
    println!("\n# {} (-smp {smp}): {}", fw.name, fw.path.display());
    for c in &rep.checks {
        println!(
            "[{:<4}] {} - {} | expected: {} | actual: {}",
            c.status.label(),
            c.id,
            c.what,
            c.expected,
            c.actual
        );
    }
    println!(
        "{} passed, {} failed, {} N/A",
        rep.passed(),
        rep.failed(),
        rep.na()
    );
}
