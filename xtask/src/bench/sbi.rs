//! The per-call SBI cost benchmark: the conformance kernel's cost probes
//! (`rvpmu.bench`) on our firmware and on the peers, Debian's OpenSBI
//! 1.5.1 and Debian trixie's OpenSBI 1.6, written to target/bench/sbi.md
//! and .json.

use crate::build::conformance::build_kernel;
use crate::guest::conformance::{costs, opensbi, opensbi_1_6, ours, CostMethod, Target};
use crate::host::root;
use crate::qemu::Firmware;
use anyhow::Result;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One firmware's cost-probe run.
struct Bench {
    fw: Firmware,
    /// Its key in the JSON (`ours`, `opensbi`, `opensbi_1_6`) and its
    /// column's heading in the table.
    key: &'static str,
    title: &'static str,
    costs: Vec<(String, u64, String)>,
    boot_instret: Option<u64>,
    image_bytes: u64,
}

fn bench_one(fw: Firmware, key: &'static str, title: &'static str, kernel: &Path) -> Result<Bench> {
    let rep = costs(&Target::firmware(fw.clone()), kernel, CostMethod::Instret)?;
    let image_bytes = std::fs::metadata(&fw.path)?.len();
    Ok(Bench {
        fw,
        key,
        title,
        costs: rep.costs,
        boot_instret: rep.boot_instret,
        image_bytes,
    })
}

/// The cost probes on our firmware (`ours`: this image instead of a
/// build) and on the two OpenSBI peers, side by side.
pub fn sbi_cost(ours_image: Option<PathBuf>) -> Result<()> {
    let kernel = build_kernel()?;
    let ours = match ours_image.map_or_else(ours, |path| {
        Ok(Firmware {
            name: "ours".into(),
            path,
        })
    }) {
        Ok(fw) => Some(bench_one(fw, "ours", "ours", &kernel)?),
        Err(e) => {
            eprintln!("*** OUR FIRMWARE IS NOT AVAILABLE ({e:#}); its column stays empty");
            None
        }
    };
    let peers = [
        bench_one(opensbi()?, "opensbi", "OpenSBI 1.5.1", &kernel)?,
        bench_one(opensbi_1_6()?, "opensbi_1_6", "OpenSBI 1.6", &kernel)?,
    ];
    let (md, json) = report(ours.as_ref(), &peers);
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
/// ran) and on the peers; the first peer's calls name the rows, and each
/// peer has the ratio ours / peer.
fn report(ours: Option<&Bench>, peers: &[Bench]) -> (String, Value) {
    let names: Vec<String> = peers[0].costs.iter().map(|c| c.0.clone()).collect();
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
    let titles: String = peers.iter().map(|p| format!(" {} |", p.title)).collect();
    let ratios: String = peers
        .iter()
        .map(|p| format!(" ours / {} |", p.title))
        .collect();
    let _ = writeln!(md, "| call | ours |{titles}{ratios}");
    let _ = writeln!(md, "| --- | ---: |{}", " ---: |".repeat(2 * peers.len()));
    let cell = |v: &Option<(u64, String)>| match v {
        None => "n/a".to_string(),
        Some((n, a)) if a == "SUCCESS" => n.to_string(),
        Some((n, a)) => format!("{n} ({a})"),
    };
    for n in &names {
        let o = find(ours, n);
        let mut row = json!({
            "call": n,
            "ours": o.as_ref().map(|v| v.0),
            "ours_answer": o.as_ref().map(|v| &v.1),
        });
        let (mut cells, mut ratio_cells) = (String::new(), String::new());
        for peer in peers {
            let p = find(Some(peer), n);
            let ratio = match (&o, &p) {
                // Comparing a served call with a rejection would mislead.
                (Some((a, x)), Some((b, y))) if *b > 0 && x == y => Some(*a as f64 / *b as f64),
                _ => None,
            };
            let _ = write!(cells, " {} |", cell(&p));
            let _ = write!(
                ratio_cells,
                " {} |",
                ratio.map_or("n/a".into(), |r| format!("{r:.2}"))
            );
            let suffix = peer.key.strip_prefix("opensbi").unwrap_or(peer.key);
            row[peer.key] = json!(p.as_ref().map(|v| v.0));
            row[format!("{}_answer", peer.key)] = json!(p.as_ref().map(|v| &v.1));
            row[format!("ratio{suffix}")] = json!(ratio.map(|r| (r * 1e4).round() / 1e4));
        }
        let _ = writeln!(md, "| {n} | {} |{cells}{ratio_cells}", cell(&o));
        rows.push(row);
    }
    let _ = writeln!(
        md,
        "\n| firmware | image bytes | instructions from reset to S-mode entry |"
    );
    let _ = writeln!(md, "| --- | ---: | ---: |");
    for b in ours.into_iter().chain(peers) {
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
    let mut firmware = json!({ "ours": ours.map_or(Value::Null, fwjson) });
    for p in peers {
        firmware[p.key] = fwjson(p);
    }
    let json = json!({
        "unit": "instructions (QEMU -icount shift=0)",
        "firmware": firmware,
        "calls": rows,
    });
    (md, json)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(key: &'static str, costs: &[(&str, u64, &str)], boot: Option<u64>) -> Bench {
        Bench {
            fw: Firmware {
                name: key.into(),
                path: PathBuf::from(format!("/fw/{key}.bin")),
            },
            key,
            title: key,
            costs: costs
                .iter()
                .map(|(c, n, a)| (c.to_string(), *n, a.to_string()))
                .collect(),
            boot_instret: boot,
            image_bytes: 1000,
        }
    }

    #[test]
    fn rows_follow_the_first_peer_and_ratios_compare_like_answers_only() {
        let ours = bench(
            "ours",
            &[("base.probe", 100, "SUCCESS"), ("pmu.x", 30, "SUCCESS")],
            Some(7),
        );
        let peers = [
            bench(
                "opensbi",
                &[
                    ("base.probe", 300, "SUCCESS"),
                    ("pmu.x", 10, "NOT_SUPPORTED"),
                    ("sta.y", 5, "SUCCESS"),
                ],
                None,
            ),
            bench(
                "opensbi_1_6",
                &[("base.probe", 200, "SUCCESS"), ("pmu.x", 60, "SUCCESS")],
                Some(9),
            ),
        ];
        let (md, json) = report(Some(&ours), &peers);
        assert!(
            md.contains(
                "| call | ours | opensbi | opensbi_1_6 | ours / opensbi | ours / opensbi_1_6 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| base.probe | 100 | 300 | 200 | 0.33 | 0.50 |"),
            "{md}"
        );
        assert!(
            md.contains("| pmu.x | 30 | 10 (NOT_SUPPORTED) | 60 | n/a | 0.50 |"),
            "{md}"
        );
        assert!(md.contains("| sta.y | n/a | 5 | n/a | n/a | n/a |"), "{md}");
        assert!(md.contains("| ours | 1000 | 7 |") && md.contains("| opensbi | 1000 | null |"));
        assert!(md.contains("| opensbi_1_6 | 1000 | 9 |"), "{md}");
        let calls = json["calls"].as_array().unwrap();
        assert_eq!(calls.len(), 3);
        assert_eq!(
            calls[0],
            json!({"call": "base.probe", "ours": 100, "ours_answer": "SUCCESS",
                   "opensbi": 300, "opensbi_answer": "SUCCESS", "ratio": 0.3333,
                   "opensbi_1_6": 200, "opensbi_1_6_answer": "SUCCESS", "ratio_1_6": 0.5})
        );
        assert_eq!(calls[1]["ratio"], Value::Null);
        assert_eq!(calls[1]["ratio_1_6"], 0.5);
        assert_eq!(calls[2]["ours"], Value::Null);
        assert_eq!(calls[2]["ours_answer"], Value::Null);
        assert_eq!(calls[2]["opensbi_1_6"], Value::Null);
        assert_eq!(json["firmware"]["ours"]["image"], "/fw/ours.bin");
        assert_eq!(json["firmware"]["opensbi"]["boot_instret"], Value::Null);
        assert_eq!(json["firmware"]["opensbi_1_6"]["boot_instret"], 9);
        assert_eq!(json["unit"], "instructions (QEMU -icount shift=0)");
        // Without our firmware: its column and entry are empty.
        let (md, json) = report(None, &peers);
        assert!(
            md.contains("| base.probe | n/a | 300 | 200 | n/a | n/a |"),
            "{md}"
        );
        assert_eq!(json["firmware"]["ours"], Value::Null);
    }
}
