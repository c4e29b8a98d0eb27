//! `cargo xtask conformance`: the S-mode SBI conformance suite against a
//! firmware, directly or as the guest of a hypervisor on it, or two of
//! these side by side; with `--cost`, the kernel's per-call cost probes
//! instead.

use crate::build::conformance::build_kernel;
use crate::build::hv;
use crate::build::kernel::Version;
use crate::guest::conformance::{
    consistent, costs, kvm_fail_ids, opensbi, opensbi_1_6, ours, require_all_passed,
    rustsbi_fw_unpinned, suite, unpinned, Check, CostMethod, Report, Status, Target, Under,
};
use crate::guest::hvcheck::{CONFORMANCE_FAIL, CONFORMANCE_NA};
use crate::guest::kvm::KvmHost;
use crate::host::setup;
use crate::qemu::Firmware;
use anyhow::{bail, Result};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::rc::Rc;

#[derive(clap::Args)]
pub struct ConformanceArgs {
    /// Firmware at the bottom: `ours`, `opensbi` (Debian's OpenSBI 1.5.1),
    /// `opensbi-1.6` (Debian trixie's), `rustsbi` (the RustSBI-based
    /// firmware of crates/rustsbi-fw), `both` (ours and OpenSBI 1.5.1
    /// side by side), the path of a raw -bios image, or two of
    /// these joined by a comma (side by side). Default: `both` with the
    /// kernel on the firmware directly, `ours` under a hypervisor.
    #[arg(long)]
    pub bios: Option<String>,
    /// Run the kernel as the guest of a hypervisor on the firmware:
    /// `rvpmu-hv` (VS-mode guest of crates/rvpmu-hv, one hart), `kvm`
    /// (a KVM guest of Linux booted as the KVM host, see --kernel), or
    /// `none` (on the firmware itself), several joined by commas (side
    /// by side, each on every firmware of --bios, or, written `HV:FW`,
    /// on the firmware FW of --bios only: `none,rvpmu-hv:ours`).
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
    /// Also write the side-by-side table as Markdown to this file (check
    /// x implementation, the spec's words where the verdicts differ).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write the kernel to this directory (`conformance.elf` and the raw
    /// `conformance.bin`) and print how to run it with plain QEMU
    /// (docs/conformance.md), instead of running it.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["bios", "under", "kernel", "cost"])]
    pub image: Option<PathBuf>,
}

fn resolve_one(name: &str) -> Result<Firmware> {
    match name {
        "ours" => ours(),
        "opensbi" => opensbi(),
        "opensbi-1.6" => opensbi_1_6(),
        crate::build::firmware::RUSTSBI_BIOS => crate::build::firmware::rustsbi(),
        path => {
            let image = PathBuf::from(path);
            if !image.is_file() {
                bail!(
                    "--bios {path}: no such file (use ours, opensbi, opensbi-1.6, rustsbi, both or a path)"
                );
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
    bios.split(',').map(resolve_one).collect()
}

/// The hypervisors of `--under`, each with what it needs built and the
/// firmware it is limited to (`HV:FW`), if any; KVM's host runs `kernel`
/// (7.2 if `None`), which only KVM takes.
fn hypervisors(under: Option<&str>, kernel: Option<Version>) -> Result<Vec<(Under, Option<&str>)>> {
    let list = under.unwrap_or_default();
    let items: Vec<(&str, Option<&str>)> = list
        .split(',')
        .map(|h| match h.split_once(':') {
            Some((h, fw)) => (h, Some(fw)),
            None => (h, None),
        })
        .collect();
    if kernel.is_some() && !items.iter().any(|(h, _)| *h == "kvm") {
        bail!("--kernel is the KVM host's Linux: it goes with --under kvm");
    }
    if under.is_none() {
        return Ok(vec![(Under::Firmware, None)]);
    }
    items
        .into_iter()
        .map(|(h, fw)| {
            let u = match h {
                "none" => Under::Firmware,
                "rvpmu-hv" => Under::RvpmuHv(hv::build()?.hypervisor),
                "kvm" => Under::Kvm(Rc::new(KvmHost::build(kernel.unwrap_or(Version::V7_2))?)),
                other => {
                    bail!("--under {other}: no such hypervisor (use none, rvpmu-hv or kvm)")
                }
            };
            Ok((u, fw))
        })
        .collect()
}

/// Every firmware under every hypervisor (a hypervisor given as `HV:FW`
/// on that firmware only); at most two for the cost probes.
fn targets(a: &ConformanceArgs) -> Result<Vec<Target>> {
    let default_bios = if a.under.is_some() { "ours" } else { "both" };
    let fws = resolve(a.bios.as_deref().unwrap_or(default_bios))?;
    let bios_names: Vec<&str> = a
        .bios
        .as_deref()
        .unwrap_or(default_bios)
        .split(',')
        .collect();
    let mut out = Vec::new();
    for (under, only) in hypervisors(a.under.as_deref(), a.kernel)? {
        let on: Vec<&Firmware> = match only {
            None => fws.iter().collect(),
            Some(name) => {
                let Some(i) = bios_names.iter().position(|b| *b == name) else {
                    bail!(
                        "--under ...:{name}: {name} is not one of --bios {}",
                        bios_names.join(",")
                    );
                };
                vec![&fws[i]]
            }
        };
        out.extend(on.into_iter().map(|fw| Target {
            fw: fw.clone(),
            under: under.clone(),
        }));
    }
    if a.cost && out.len() > 2 {
        bail!("--cost: at most two runs side by side: two firmwares under one hypervisor, or one firmware under two");
    }
    Ok(out)
}

pub fn run(a: ConformanceArgs) -> Result<()> {
    setup::ensure_host()?;
    if let Some(dir) = &a.image {
        return write_image(dir);
    }
    let targets = targets(&a)?;
    let kernel = build_kernel()?;
    // Several firmwares under a hypervisor: name both parts.
    let with_fw = targets.iter().any(|t| t.fw.name != targets[0].fw.name);
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
    if targets.len() >= 2 {
        let cols: Vec<(&str, &Report)> = names.iter().map(String::as_str).zip(&reps).collect();
        print_side_by_side(&cols);
        if let Some(path) = &a.markdown {
            std::fs::write(path, markdown(&cols, a.smp))?;
            println!("wrote {}", path.display());
        }
    }
    for (t, rep) in targets.iter().zip(&reps) {
        require_pinned(t, rep, a.smp)?;
    }
    Ok(())
}

/// The kernel as files of their own in `dir`, for anyone's QEMU: the ELF
/// (loaded at its link address) and the raw image (loaded where QEMU puts
/// a raw `-kernel`: the first 2 MiB boundary after the firmware).
fn write_image(dir: &std::path::Path) -> Result<()> {
    let elf = build_kernel()?;
    let bin = crate::build::objcopy(&elf)?;
    std::fs::create_dir_all(dir)?;
    let (e, b) = (dir.join("conformance.elf"), dir.join("conformance.bin"));
    std::fs::copy(&elf, &e)?;
    std::fs::copy(&bin, &b)?;
    println!("{}\n{}", e.display(), b.display());
    println!(
        "\nrun it (docs/conformance.md):\n  qemu-system-riscv64 -M virt -cpu rv64,sscofpmf=true -smp 1 -m 256M -nographic \\\n    -bios YOUR_FIRMWARE.bin -kernel {} -append \"rvpmu.format=text\"",
        e.display()
    );
    Ok(())
}

/// Our firmware must pass everything; rustsbi-fw exactly its pinned
/// failures and N/As (`guest::conformance::RUSTSBI_FW_FAIL`); rvpmu-hv on it must show exactly
/// its documented failures and N/As (docs/hypervisor.md, "Conformance in
/// a guest"), KVM (on any firmware) exactly its pinned deviations on its
/// host's Linux ("KVM's SBI judged by the suite"; 7.2-fixed: those the
/// series leaves), both at -smp 1. Other results are reported only.
fn require_pinned(t: &Target, rep: &Report, smp: u32) -> Result<()> {
    let ours = t.fw.name == "ours";
    let off = match &t.under {
        Under::Firmware if ours => return require_all_passed(rep, smp),
        Under::Firmware if t.fw.name == crate::build::firmware::RUSTSBI_FW => {
            rustsbi_fw_unpinned(rep, smp)
        }
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

/// The rows of a side-by-side table: every check of the first report in
/// its order, then those only the others have.
fn rows<'a>(cols: &[(&str, &'a Report)]) -> Vec<&'a str> {
    let mut ids: Vec<&str> = Vec::new();
    for (_, r) in cols {
        for c in &r.checks {
            if !ids.contains(&c.id.as_str()) {
                ids.push(&c.id);
            }
        }
    }
    ids
}

/// One row: each column's check (if it ran there), and whether the
/// answers differ (verdict or actual answer).
fn row<'a>(cols: &[(&str, &'a Report)], id: &str) -> (Vec<Option<&'a Check>>, bool) {
    let cells: Vec<Option<&Check>> = cols
        .iter()
        .map(|(_, r)| r.checks.iter().find(|c| c.id == id))
        .collect();
    let first = cells.iter().flatten().next();
    let differ = cells.iter().any(|c| match (c, first) {
        (Some(c), Some(f)) => c.status != f.status || c.actual != f.actual,
        _ => true,
    });
    (cells, differ)
}

/// Where the answers differ: who the spec supports, and each answer.
fn differ_note(cols: &[(&str, &Report)], cells: &[Option<&Check>]) -> String {
    let spec = cells
        .iter()
        .flatten()
        .next()
        .map_or("", |c| c.expected.as_str());
    let good: Vec<&str> = cols
        .iter()
        .zip(cells)
        .filter(|(_, c)| c.is_some_and(|c| c.status != Status::Fail))
        .map(|((n, _), _)| *n)
        .collect();
    let verdict = match good.len() {
        0 => "neither matches the spec".to_string(),
        n if n == cols.len() => "all allowed by the spec".to_string(),
        _ => format!("spec supports {}", good.join(", ")),
    };
    let answers: Vec<String> = cols
        .iter()
        .zip(cells)
        .map(|((n, _), c)| format!("{n}: {}", c.map_or("-", |c| c.actual.as_str())))
        .collect();
    format!("{} | spec: {spec} -> {verdict}", answers.join(" | "))
}

/// Side-by-side table; where the answers differ, the line names the
/// targets whose answer the spec supports (the check's expectation is
/// the spec's).
fn print_side_by_side(cols: &[(&str, &Report)]) {
    let ids = rows(cols);
    let w = ids.iter().map(|i| i.len()).max().unwrap_or(0).max(34);
    let widths: Vec<usize> = cols.iter().map(|(n, _)| n.len().max(6)).collect();
    let mut head = format!("\n{:<w$}", "check");
    for ((n, _), wi) in cols.iter().zip(&widths) {
        let _ = write!(head, " {n:<wi$}");
    }
    println!("{head}  where they differ");
    let mut differ = 0;
    for id in &ids {
        let (cells, d) = row(cols, id);
        let mut line = format!("{id:<w$}");
        for (c, wi) in cells.iter().zip(&widths) {
            let _ = write!(line, " {:<wi$}", c.map_or("-", |c| c.status.label()));
        }
        if d {
            differ += 1;
            let _ = write!(line, "  {}", differ_note(cols, &cells));
        }
        println!("{line}");
    }
    let totals: Vec<String> = cols
        .iter()
        .map(|(n, r)| {
            format!(
                "{n}: {} passed, {} failed, {} N/A",
                r.passed(),
                r.failed(),
                r.na()
            )
        })
        .collect();
    println!(
        "\n{} | {differ} checks answered differently",
        totals.join(" | ")
    );
}

/// The side-by-side table as Markdown: a row per check, a column per
/// target, and where the verdicts differ the spec's words (the check's
/// expectation) and each answer.
fn markdown(cols: &[(&str, &Report)], smp: u32) -> String {
    let esc = |t: &str| t.replace('|', "\\|");
    let mut md = String::new();
    let names: Vec<&str> = cols.iter().map(|(n, _)| *n).collect();
    let _ = writeln!(
        md,
        "| check (-smp {smp}) | {} | the spec, where the verdicts differ |",
        names.join(" | ")
    );
    let _ = writeln!(md, "| --- |{} --- |", " :-: |".repeat(cols.len()));
    for id in rows(cols) {
        let (cells, _) = row(cols, id);
        let verdicts: Vec<&str> = cells
            .iter()
            .map(|c| c.map_or("-", |c| c.status.label()))
            .collect();
        let note = if verdicts.iter().any(|v| *v != verdicts[0]) {
            let spec = cells
                .iter()
                .flatten()
                .next()
                .map_or("", |c| c.expected.as_str());
            let answers: Vec<String> = names
                .iter()
                .zip(&cells)
                .map(|(n, c)| format!("{n}: {}", c.map_or("-", |c| c.actual.as_str())))
                .collect();
            esc(&format!("{spec} (answers: {})", answers.join("; ")))
        } else {
            String::new()
        };
        let _ = writeln!(md, "| `{id}` | {} | {note} |", verdicts.join(" | "));
    }
    let _ = writeln!(md);
    for (n, r) in cols {
        let _ = writeln!(
            md,
            "- {n}: {} passed, {} failed, {} N/A",
            r.passed(),
            r.failed(),
            r.na()
        );
    }
    md
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
