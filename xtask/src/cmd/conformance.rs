//! `cargo xtask conformance`: the S-mode SBI conformance suite against a
//! firmware, directly or as the guest of a hypervisor on it, or two of
//! these side by side; with `--cost`, the kernel's per-call cost probes
//! instead.

use crate::build::conformance::build_kernel;
use crate::build::hv;
use crate::build::kernel::Version;
use crate::guest::conformance::{
    consistent, costs, kvm_fail_ids, opensbi, ours, require_all_passed, suite, unpinned, Check,
    CostMethod, Report, Status, Target, Under,
};
use crate::guest::hvcheck::{CONFORMANCE_FAIL, CONFORMANCE_NA};
use crate::guest::kvm::KvmHost;
use crate::host::setup;
use crate::qemu::Firmware;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::rc::Rc;

#[derive(clap::Args)]
pub struct ConformanceArgs {
    /// Firmware at the bottom: `ours`, `opensbi`, `both` (ours and
    /// OpenSBI side by side), the path of a raw -bios image, or two of
    /// these joined by a comma (side by side). Default: `both` with the
    /// kernel on the firmware directly, `ours` under a hypervisor.
    #[arg(long)]
    pub bios: Option<String>,
    /// Run the kernel as the guest of a hypervisor on the firmware:
    /// `rvpmu-hv` (VS-mode guest of crates/rvpmu-hv, one hart), `kvm`
    /// (a KVM guest of Linux booted as the KVM host, see --kernel), or
    /// both joined by a comma (side by side, one firmware).
    #[arg(long)]
    pub under: Option<String>,
    /// The KVM host's Linux with `--under kvm` (default 7.2): on 7.2 and
    /// 7.2-fixed KVM must fail exactly its pinned checks, on 6.12 and
    /// 6.12-fixed its results are reported only.
    #[arg(long, value_enum)]
    pub kernel: Option<Version>,
    /// Run the per-call cost probes instead of the suite, each call
    /// bracketed by edges of the `time` CSR (readable in any guest),
    /// converted to instructions (-icount: one per ns). One target: next
    /// to the `instret` bracket where the kernel can read instret (the
    /// difference checks the time method); two: side by side with their
    /// ratio.
    #[arg(long)]
    pub cost: bool,
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

/// The hypervisors of `--under`, each with what it needs built; KVM's
/// host runs `kernel` (7.2 if `None`), which only KVM takes.
fn hypervisors(under: Option<&str>, kernel: Option<Version>) -> Result<Vec<Under>> {
    let list = under.unwrap_or_default();
    if kernel.is_some() && !list.split(',').any(|h| h == "kvm") {
        bail!("--kernel is the KVM host's Linux: it goes with --under kvm");
    }
    if under.is_none() {
        return Ok(vec![Under::Firmware]);
    }
    list.split(',')
        .map(|h| match h {
            "rvpmu-hv" => Ok(Under::RvpmuHv(hv::build()?.hypervisor)),
            "kvm" => Ok(Under::Kvm(Rc::new(KvmHost::build(
                kernel.unwrap_or(Version::V7_2),
            )?))),
            other => bail!("--under {other}: no such hypervisor (use rvpmu-hv or kvm)"),
        })
        .collect()
}

/// Every firmware under every hypervisor: at most two targets.
fn targets(a: &ConformanceArgs) -> Result<Vec<Target>> {
    let default_bios = if a.under.is_some() { "ours" } else { "both" };
    let fws = resolve(a.bios.as_deref().unwrap_or(default_bios))?;
    let unders = hypervisors(a.under.as_deref(), a.kernel)?;
    if fws.len() * unders.len() > 2 {
        bail!("at most two runs side by side: two firmwares under one hypervisor, or one firmware under two");
    }
    Ok(unders
        .iter()
        .flat_map(|u| {
            fws.iter().map(|fw| Target {
                fw: fw.clone(),
                under: u.clone(),
            })
        })
        .collect())
}

pub fn run(a: ConformanceArgs) -> Result<()> {
    setup::ensure_host()?;
    let targets = targets(&a)?;
    let kernel = build_kernel()?;
    // Two firmwares under one hypervisor: name both parts.
    let with_fw = targets.len() == 2 && targets[0].fw.name != targets[1].fw.name;
    let names: Vec<String> = targets.iter().map(|t| t.name(with_fw)).collect();
    if a.cost {
        if a.smp != 1 {
            bail!("--cost runs on one hart");
        }
        return run_costs(&targets, &names, &kernel);
    }
    let mut reps = Vec::new();
    for (t, name) in targets.iter().zip(&names) {
        let rep = suite(t, &kernel, a.smp, a.verbose, None)?;
        consistent(&rep)?;
        if targets.len() == 1 {
            print_report(name, t, a.smp, &rep);
        }
        reps.push(rep);
    }
    if targets.len() == 2 {
        print_side_by_side((&names[0], &reps[0]), (&names[1], &reps[1]));
    }
    for (t, rep) in targets.iter().zip(&reps) {
        require_pinned(t, rep, a.smp)?;
    }
    Ok(())
}

/// Our firmware must pass everything; rvpmu-hv on it must show exactly
/// its documented failures and N/As (docs/hypervisor.md, "Conformance in
/// a guest"), KVM (on any firmware) exactly its pinned deviations on its
/// host's Linux ("KVM's SBI judged by the suite"; 7.2-fixed: those the
/// series leaves), both at -smp 1. Other results are reported only.
fn require_pinned(t: &Target, rep: &Report, smp: u32) -> Result<()> {
    let ours = t.fw.name == "ours";
    let off = match &t.under {
        Under::Firmware if ours => return require_all_passed(rep, smp),
        Under::RvpmuHv(_) if ours && smp == 1 => unpinned(rep, CONFORMANCE_FAIL, CONFORMANCE_NA),
        Under::Kvm(host) if smp == 1 => {
            kvm_fail_ids(host.version).and_then(|pinned| unpinned(rep, &pinned, &[]))
        }
        _ => None,
    };
    match off {
        None => Ok(()),
        Some(d) => bail!("{} differs from its pinned results: {d}", t.name(true)),
    }
}

/// One column of the cost table.
struct Column {
    name: String,
    costs: Vec<(String, u64, String)>,
}

impl Column {
    fn get(&self, call: &str) -> Option<&(String, u64, String)> {
        self.costs.iter().find(|c| c.0 == call)
    }

    /// A cell: the instructions, with the answer when it is not SUCCESS.
    fn cell(&self, call: &str) -> String {
        match self.get(call) {
            None => "n/a".into(),
            Some((_, n, a)) if a == "SUCCESS" => n.to_string(),
            Some((_, n, a)) => format!("{n} ({a})"),
        }
    }
}

/// The cost probes on one target (time next to instret where the kernel
/// can read instret, whose difference checks the time method) or on two
/// (time, side by side, with their ratio), as a Markdown table.
fn run_costs(targets: &[Target], names: &[String], kernel: &std::path::Path) -> Result<()> {
    let mut cols = Vec::new();
    for (t, name) in targets.iter().zip(names) {
        let methods: &[CostMethod] = if targets.len() == 1 && t.under.reads_instret() {
            &[CostMethod::Instret, CostMethod::Time]
        } else {
            &[CostMethod::Time]
        };
        for &m in methods {
            let name = if targets.len() == 1 {
                format!("{name} ({})", m.name())
            } else {
                name.clone()
            };
            cols.push(Column {
                name,
                costs: costs(t, kernel, m)?.costs,
            });
        }
    }
    let calls: Vec<String> = cols[0].costs.iter().map(|c| c.0.clone()).collect();
    let pair = (cols.len() == 2).then(|| (&cols[0], &cols[1]));
    // One target, two methods: their difference; two targets: the ratio.
    let ratio = targets.len() == 2;
    let mut md = String::new();
    let _ = writeln!(
        md,
        "\nInstructions per SBI call (QEMU -icount shift=0, the whole machine: every mode, every layer), \
         empty bracket subtracted, minimum of 7 calls; the time bracket (edges of the time CSR) is good to 3 instructions.\n"
    );
    let head: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
    let last = match pair {
        Some((a, b)) if ratio => format!(" {} / {} |", a.name, b.name),
        Some(_) => " time - instret |".to_string(),
        None => String::new(),
    };
    let _ = writeln!(md, "| call | {} |{last}", head.join(" | "));
    let _ = writeln!(
        md,
        "| --- |{}{}",
        " ---: |".repeat(cols.len()),
        if pair.is_some() { " ---: |" } else { "" }
    );
    let mut worst = 0i64;
    let mut within_third = Vec::new();
    let mut over_third = Vec::new();
    for call in &calls {
        let cells: Vec<String> = cols.iter().map(|c| c.cell(call)).collect();
        let last = match pair.map(|(a, b)| (a.get(call), b.get(call))) {
            None => String::new(),
            // Comparing a served call with a rejection would mislead.
            Some((Some(x), Some(y))) if x.2 == y.2 => {
                if !ratio {
                    let d = y.1 as i64 - x.1 as i64;
                    worst = worst.max(d.abs());
                    format!(" {d:+} |")
                } else if y.1 > 0 {
                    let r = x.1 as f64 / y.1 as f64;
                    if 3 * x.1 <= y.1 {
                        within_third.push(call.as_str());
                    } else {
                        over_third.push(format!("{call} ({r:.2})"));
                    }
                    format!(" {r:.2} |")
                } else {
                    " n/a |".into()
                }
            }
            Some(_) => " n/a |".into(),
        };
        let _ = writeln!(md, "| {call} | {} |{last}", cells.join(" | "));
    }
    println!("{md}");
    match pair {
        Some(_) if !ratio => println!(
            "largest |time - instret|: {worst} instructions (the time bracket is good to 3)"
        ),
        Some((a, b)) => println!(
            "{} of {} calls answered alike cost on {} at most a third of {}; above a third: {}",
            within_third.len(),
            within_third.len() + over_third.len(),
            a.name,
            b.name,
            if over_third.is_empty() {
                "none".to_string()
            } else {
                over_third.join(", ")
            }
        ),
        None => {}
    }
    Ok(())
}

/// Side-by-side table; where the answers differ, the line names the target
/// whose answer the spec supports (the check's expectation is the spec's).
fn print_side_by_side(a: (&str, &Report), b: (&str, &Report)) {
    let bmap: BTreeMap<&str, &Check> = b.1.checks.iter().map(|c| (c.id.as_str(), c)).collect();
    let w =
        a.1.checks
            .iter()
            .map(|c| c.id.len())
            .max()
            .unwrap_or(0)
            .max(34);
    let wa = a.0.len().max(6);
    let wb = b.0.len().max(6);
    println!(
        "\n{:<w$} {:<wa$} {:<wb$}  where they differ",
        "check", a.0, b.0
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
                    .map(|(n, _)| *n)
                    .collect();
                let verdict = match good.len() {
                    2 => "both allowed by the spec".to_string(),
                    1 => format!("spec supports {}", good[0]),
                    _ => "neither matches the spec".to_string(),
                };
                let _ = write!(
                    note,
                    "{}: {} | {}: {} | spec: {} -> {verdict}",
                    a.0, ca.actual, b.0, cb.actual, ca.expected
                );
            }
        }
        println!(
            "{:<w$} {:<wa$} {:<wb$}  {note}",
            ca.id,
            ca.status.label(),
            sb
        );
    }
    println!(
        "\n{}: {} passed, {} failed, {} N/A | {}: {} passed, {} failed, {} N/A | {differ} checks answered differently",
        a.0,
        a.1.passed(),
        a.1.failed(),
        a.1.na(),
        b.0,
        b.1.passed(),
        b.1.failed(),
        b.1.na()
    );
}

fn print_report(name: &str, t: &Target, smp: u32, rep: &Report) {
    let host = match &t.under {
        Under::Kvm(host) => format!(", KVM host {}", host.version),
        _ => String::new(),
    };
    println!("\n# {name} (-smp {smp}{host}): {}", t.fw.path.display());
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
