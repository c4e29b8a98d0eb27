//! The per-call SBI cost benchmark: the conformance kernel's cost probes
//! (`rvpmu.bench`) on our firmware and on OpenSBI, written to
//! target/bench/sbi.md and .json.

use crate::build::conformance::build_kernel;
use crate::guest::conformance::{costs, opensbi, ours, CostMethod, Target};
use crate::host::root;
use crate::qemu::Firmware;
use anyhow::Result;
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
    let rep = costs(&Target::firmware(fw.clone()), kernel, CostMethod::Instret)?;
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
    let (md, json) = report(ours.as_ref(), &peer);
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

/// The Markdown table and the JSON of the runs on our firmware (if it
/// ran) and on the peer; the peer's calls name the rows.
fn report(ours: Option<&Bench>, peer: &Bench) -> (String, Value) {
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
        let o = find(ours, n);
        let p = find(Some(peer), n);
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
    for b in ours.into_iter().chain(std::iter::once(peer)) {
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
            "ours": ours.map_or(Value::Null, fwjson),
            "opensbi": fwjson(peer),
        },
        "calls": rows,
    });
    (md, json)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(name: &str, costs: &[(&str, u64, &str)], boot: Option<u64>) -> Bench {
        Bench {
            fw: Firmware {
                name: name.into(),
                path: PathBuf::from(format!("/fw/{name}.bin")),
            },
            costs: costs
                .iter()
                .map(|(c, n, a)| (c.to_string(), *n, a.to_string()))
                .collect(),
            boot_instret: boot,
            image_bytes: 1000,
        }
    }

    #[test]
    fn rows_follow_the_peer_and_ratios_compare_like_answers_only() {
        let ours = bench(
            "ours",
            &[("base.probe", 100, "SUCCESS"), ("pmu.x", 30, "SUCCESS")],
            Some(7),
        );
        let peer = bench(
            "opensbi",
            &[
                ("base.probe", 300, "SUCCESS"),
                ("pmu.x", 10, "NOT_SUPPORTED"),
                ("sta.y", 5, "SUCCESS"),
            ],
            None,
        );
        let (md, json) = report(Some(&ours), &peer);
        assert!(md.contains("| base.probe | 100 | 300 | 0.33 |"), "{md}");
        assert!(
            md.contains("| pmu.x | 30 | 10 (NOT_SUPPORTED) | n/a |"),
            "{md}"
        );
        assert!(md.contains("| sta.y | n/a | 5 | n/a |"), "{md}");
        assert!(md.contains("| ours | 1000 | 7 |") && md.contains("| opensbi | 1000 | null |"));
        let calls = json["calls"].as_array().unwrap();
        assert_eq!(calls.len(), 3);
        assert_eq!(
            calls[0],
            json!({"call": "base.probe", "ours": 100, "ours_answer": "SUCCESS",
                   "opensbi": 300, "opensbi_answer": "SUCCESS", "ratio": 0.3333})
        );
        assert_eq!(calls[1]["ratio"], Value::Null);
        assert_eq!(calls[2]["ours"], Value::Null);
        assert_eq!(calls[2]["ours_answer"], Value::Null);
        assert_eq!(json["firmware"]["ours"]["image"], "/fw/ours.bin");
        assert_eq!(json["firmware"]["opensbi"]["boot_instret"], Value::Null);
        assert_eq!(json["unit"], "instructions (QEMU -icount shift=0)");
        // Without our firmware: its column and entry are empty.
        let (md, json) = report(None, &peer);
        assert!(md.contains("| base.probe | n/a | 300 | n/a |"), "{md}");
        assert_eq!(json["firmware"]["ours"], Value::Null);
    }
}
