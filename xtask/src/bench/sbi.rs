//! The per-call SBI cost benchmark: the conformance kernel's cost probes
//! (`rvpmu.bench`) on our firmware and on OpenSBI, written to
//! target/bench/sbi.md and .json.

use crate::build::conformance::build_kernel;
use crate::guest::conformance::{boot, opensbi, ours, parse};
use crate::host::{root, step};
use crate::qemu::Firmware;
use anyhow::{bail, Result};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One firmware's cost-probe run.
struct Bench {
    fw: Firmware,
    costs: Vec<(String, u64, String)>,
    boot_instret: Option<u64>,
    image_bytes: u64,
}

fn bench_one(fw: Firmware, kernel: &Path) -> Result<Bench> {
    step(&format!("cost probes on {}", fw.name));
    let cap = boot(&fw, kernel, 1, "rvpmu.bench")?;
    let rep = parse(&cap.text);
    if cap.timed_out || !cap.text.contains("COST-END") {
        bail!(
            "the cost probes did not finish on {} ({:?})",
            fw.name,
            rep.fatal
        );
    }
    let image_bytes = std::fs::metadata(&fw.path)?.len();
    Ok(Bench {
        fw,
        costs: rep.costs,
        boot_instret: rep.boot_instret,
        image_bytes,
    })
}

/// The cost probes on our firmware (`ours`: this image instead of a
/// build) and on OpenSBI, side by side.
pub fn sbi_cost(ours_image: Option<PathBuf>) -> Result<()> {
    let kernel = build_kernel()?;
    let ours = match ours_image.map_or_else(ours, |path| {
        Ok(Firmware {
            name: "ours".into(),
            path,
        })
    }) {
        Ok(fw) => Some(bench_one(fw, &kernel)?),
        Err(e) => {
            eprintln!("*** OUR FIRMWARE IS NOT AVAILABLE ({e:#}); its column stays empty");
            None
        }
    };
    let peer = bench_one(opensbi()?, &kernel)?;

    let names: Vec<String> = peer.costs.iter().map(|c| c.0.clone()).collect();
    let find = |b: Option<&Bench>, n: &str| {
        b.and_then(|b| b.costs.iter().find(|c| c.0 == n))
            .map(|c| (c.1, c.2.clone()))
    };
    let mut md = String::new();
    let mut rows = Vec::new();
    let _ = writeln!(
        md,
        "# SBI per-call cost (instructions, QEMU virt, -icount shift=0)\n"
    );
    let _ = writeln!(
        md,
        "Instret delta around one ecall (firmware included), minus the empty bracket, minimum of 7 runs.\n\
         A call answered with an error (e.g. NOT_SUPPORTED) costs only the rejection; the answer is shown.\n"
    );
    let _ = writeln!(md, "| call | ours | OpenSBI 1.5.1 | ours / OpenSBI |");
    let _ = writeln!(md, "| --- | ---: | ---: | ---: |");
    for n in &names {
        let o = find(ours.as_ref(), n);
        let p = find(Some(&peer), n);
        let cell = |v: &Option<(u64, String)>| match v {
            None => "n/a".to_string(),
            Some((n, a)) if a == "SUCCESS" => n.to_string(),
            Some((n, a)) => format!("{n} ({a})"),
        };
        let ratio = match (&o, &p) {
            // Comparing a served call with a rejection would mislead.
            (Some((a, x)), Some((b, y))) if *b > 0 && x == y => Some(*a as f64 / *b as f64),
            _ => None,
        };
        let _ = writeln!(
            md,
            "| {n} | {} | {} | {} |",
            cell(&o),
            cell(&p),
            ratio.map_or("n/a".into(), |r| format!("{r:.2}"))
        );
        rows.push(json!({
            "call": n,
            "ours": o.as_ref().map(|v| v.0),
            "ours_answer": o.as_ref().map(|v| &v.1),
            "opensbi": p.as_ref().map(|v| v.0),
            "opensbi_answer": p.as_ref().map(|v| &v.1),
            "ratio": ratio.map(|r| (r * 1e4).round() / 1e4),
        }));
    }
    let _ = writeln!(
        md,
        "\n| firmware | image bytes | instructions from reset to S-mode entry |"
    );
    let _ = writeln!(md, "| --- | ---: | ---: |");
    for b in ours.iter().chain(std::iter::once(&peer)) {
        let _ = writeln!(
            md,
            "| {} | {} | {} |",
            b.fw.name,
            b.image_bytes,
            b.boot_instret.map_or("null".into(), |v| v.to_string())
        );
    }
    let fwjson = |b: &Bench| {
        json!({
            "image": b.fw.path.display().to_string(),
            "image_bytes": b.image_bytes,
            "boot_instret": b.boot_instret,
        })
    };
    let json = json!({
        "unit": "instructions (QEMU -icount shift=0)",
        "firmware": {
            "ours": ours.as_ref().map_or(Value::Null, fwjson),
            "opensbi": fwjson(&peer),
        },
        "calls": rows,
    });
    let json = serde_json::to_string_pretty(&json)? + "\n";
    let dir = root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("sbi.md"), &md)?;
    std::fs::write(dir.join("sbi.json"), &json)?;
    println!("{md}");
    println!(
        "wrote {} and {}",
        dir.join("sbi.md").display(),
        dir.join("sbi.json").display()
    );
    Ok(())
}
