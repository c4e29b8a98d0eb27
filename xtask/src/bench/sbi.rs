//! The per-call SBI cost benchmark: the conformance kernel's cost probes
//! (`rvpmu.bench`) on our firmware and on every firmware of [`others`]
//! (the peers, and our engine under another firmware), each call's figure
//! beside the best peer's, written to target/bench/sbi.md and .json.

use crate::build::conformance::build_kernel;
use crate::guest::conformance::{costs, ours, CostMethod, Target};
use crate::host::root;
use crate::qemu::Firmware;
use anyhow::Result;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The share of the best peer's cost every call of ours should stay at
/// or under (docs/sbi-cost.md).
const TARGET_RATIO: f64 = 1.0 / 3.0;

/// What a firmware beside ours is in the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Another SBI implementation: ours is held to a third of the best.
    Peer,
    /// Our engine under another firmware (rustsbi-fw): shown beside the
    /// peers, never a best peer (it is not another implementation).
    OurEngine,
}

/// The firmware measured beside ours, one column each, named as the
/// report shows them. One that is not available (not installed, not
/// built) is left out with a warning; the others still run.
fn others() -> Vec<(Result<Firmware>, Role)> {
    vec![
        (Firmware::opensbi_installed("OpenSBI 1.5.1"), Role::Peer),
        (Firmware::opensbi_1_6("OpenSBI 1.6"), Role::Peer),
        (crate::build::firmware::rustsbi(), Role::OurEngine),
    ]
}

/// One firmware's cost-probe run.
struct Bench {
    fw: Firmware,
    role: Role,
    costs: Vec<(String, u64, String)>,
    boot_instret: Option<u64>,
    image_bytes: u64,
}

impl Bench {
    /// Instructions and answer of call `name`, if this firmware ran it.
    fn call(&self, name: &str) -> Option<(u64, &str)> {
        self.costs
            .iter()
            .find(|c| c.0 == name)
            .map(|c| (c.1, c.2.as_str()))
    }
}

fn bench_one(fw: Firmware, role: Role, kernel: &Path) -> Result<Bench> {
    let rep = costs(&Target::firmware(fw.clone()), kernel, CostMethod::Instret)?;
    let image_bytes = std::fs::metadata(&fw.path)?.len();
    Ok(Bench {
        fw,
        role,
        costs: rep.costs,
        boot_instret: rep.boot_instret,
        image_bytes,
    })
}

/// The cost probes on our firmware (`ours`: this image instead of a
/// build) and on every peer, side by side.
pub fn sbi_cost(ours_image: Option<PathBuf>) -> Result<()> {
    let kernel = build_kernel()?;
    let ours = match ours_image.map_or_else(ours, |path| {
        Ok(Firmware {
            name: "ours".into(),
            path,
        })
    }) {
        Ok(fw) => Some(bench_one(fw, Role::Peer, &kernel)?),
        Err(e) => {
            eprintln!("*** OUR FIRMWARE IS NOT AVAILABLE ({e:#}); its column stays empty");
            None
        }
    };
    let mut peers_run = Vec::new();
    for (fw, role) in others() {
        match fw {
            Ok(fw) => peers_run.push(bench_one(fw, role, &kernel)?),
            Err(e) => {
                eprintln!("*** a firmware to compare with is not available ({e:#}); left out")
            }
        }
    }
    let (md, json) = report(ours.as_ref(), &peers_run);
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

/// The best peer of one call: the cheapest peer (`Role::Peer`) whose
/// answer is ours (or, without ours, SUCCESS): comparing a served call
/// with a rejection would mislead. Its index in `peers` and its
/// instructions.
fn best_peer(ours: Option<(u64, &str)>, peers: &[Bench], call: &str) -> Option<(usize, u64)> {
    let answer = ours.map_or("SUCCESS", |o| o.1);
    peers
        .iter()
        .enumerate()
        .filter(|(_, p)| p.role == Role::Peer)
        .filter_map(|(i, p)| p.call(call).map(|(n, a)| (i, n, a)))
        .filter(|&(_, n, a)| a == answer && n > 0)
        .min_by_key(|&(_, n, _)| n)
        .map(|(i, n, _)| (i, n))
}

/// The Markdown table and the JSON of the runs on our firmware (if it
/// ran) and on the peers. Rows: ours' calls in their order, then any
/// call only a peer ran.
fn report(ours: Option<&Bench>, peers: &[Bench]) -> (String, Value) {
    let mut names: Vec<&str> = Vec::new();
    for b in ours.into_iter().chain(peers) {
        for c in &b.costs {
            if !names.contains(&c.0.as_str()) {
                names.push(&c.0);
            }
        }
    }
    let cell = |v: Option<(u64, &str)>| match v {
        None => "n/a".to_string(),
        Some((n, "SUCCESS")) => n.to_string(),
        Some((n, a)) => format!("{n} ({a})"),
    };
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# SBI per-call cost (instructions, QEMU virt, -icount shift=0)\n"
    );
    let _ = writeln!(
        md,
        "Instret delta around one ecall (firmware included), minus the empty bracket, minimum of 7 runs.\n\
         A call answered with an error (e.g. NOT_SUPPORTED) costs only the rejection; the answer is shown.\n\
         Best peer: the cheapest peer answering as ours does; the target is ours / best <= 1/3.\n\
         A firmware running our engine (\"our engine\") is shown, never a best peer.\n"
    );
    let peer_cols: String = peers
        .iter()
        .map(|p| match p.role {
            Role::Peer => format!(" {} |", p.fw.name),
            Role::OurEngine => format!(" {} (our engine) |", p.fw.name),
        })
        .collect();
    let _ = writeln!(md, "| call | ours |{peer_cols} best peer | ours / best |");
    let _ = writeln!(
        md,
        "| --- | ---: |{} --- | ---: |",
        " ---: |".repeat(peers.len())
    );
    let mut rows = Vec::new();
    let mut over = Vec::new();
    let mut compared = 0;
    for n in &names {
        let o = ours.and_then(|b| b.call(n));
        let best = best_peer(o, peers, n);
        let ratio = o.zip(best).map(|(o, (_, b))| o.0 as f64 / b as f64);
        if let Some(r) = ratio {
            compared += 1;
            if r > TARGET_RATIO {
                over.push(format!("{n} ({r:.2})"));
            }
        }
        let peer_cells: String = peers
            .iter()
            .map(|p| format!(" {} |", cell(p.call(n))))
            .collect();
        let best_name = best.map(|(i, _)| peers[i].fw.name.as_str());
        let _ = writeln!(
            md,
            "| {n} | {} |{peer_cells} {} | {} |",
            cell(o),
            best_name.unwrap_or("n/a"),
            ratio.map_or("n/a".into(), |r| format!("{r:.2}"))
        );
        let figure = |v: Option<(u64, &str)>| {
            v.map_or(
                Value::Null,
                |(n, a)| json!({"instructions": n, "answer": a}),
            )
        };
        let per_peer: Map<String, Value> = peers
            .iter()
            .map(|p| (p.fw.name.clone(), figure(p.call(n))))
            .collect();
        rows.push(json!({
            "call": n,
            "ours": figure(o),
            "peers": per_peer,
            "best_peer": best_name,
            "ratio_to_best": ratio.map(|r| (r * 1e4).round() / 1e4),
        }));
    }
    let _ = writeln!(
        md,
        "\n{} of {compared} calls served alike at or under 1/3 of the best peer{}",
        compared - over.len(),
        if over.is_empty() {
            String::new()
        } else {
            format!("; above: {}", over.join(", "))
        }
    );
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
            "name": b.fw.name,
            "image": b.fw.path.display().to_string(),
            "image_bytes": b.image_bytes,
            "boot_instret": b.boot_instret,
            "role": match b.role {
                Role::Peer => "peer",
                Role::OurEngine => "our engine",
            },
        })
    };
    let json = json!({
        "unit": "instructions (QEMU -icount shift=0)",
        "target_ratio": TARGET_RATIO,
        "firmware": {
            "ours": ours.map_or(Value::Null, fwjson),
            "peers": peers.iter().map(fwjson).collect::<Vec<_>>(),
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
            role: Role::Peer,
            costs: costs
                .iter()
                .map(|(c, n, a)| (c.to_string(), *n, a.to_string()))
                .collect(),
            boot_instret: boot,
            image_bytes: 1000,
        }
    }

    #[test]
    fn the_best_peer_is_the_cheapest_that_answers_alike() {
        let ours = bench(
            "ours",
            &[
                ("base.probe", 100, "SUCCESS"),
                ("pmu.x", 30, "SUCCESS"),
                ("pmu.y", 50, "SUCCESS"),
            ],
            Some(7),
        );
        let a = bench(
            "A",
            &[
                ("base.probe", 300, "SUCCESS"),
                ("pmu.x", 10, "NOT_SUPPORTED"),
                ("pmu.y", 200, "SUCCESS"),
                ("sta.y", 5, "SUCCESS"),
            ],
            None,
        );
        let b = bench(
            "B",
            &[
                ("base.probe", 250, "SUCCESS"),
                ("pmu.x", 60, "SUCCESS"),
                ("pmu.y", 100, "NOT_SUPPORTED"),
            ],
            Some(9),
        );
        let (md, json) = report(Some(&ours), &[a, b]);
        assert!(
            md.contains("| call | ours | A | B | best peer | ours / best |"),
            "{md}"
        );
        assert!(
            md.contains("| base.probe | 100 | 300 | 250 | B | 0.40 |"),
            "{md}"
        );
        // A rejection is never the best, however cheap.
        assert!(
            md.contains("| pmu.x | 30 | 10 (NOT_SUPPORTED) | 60 | B | 0.50 |"),
            "{md}"
        );
        assert!(
            md.contains("| pmu.y | 50 | 200 | 100 (NOT_SUPPORTED) | A | 0.25 |"),
            "{md}"
        );
        // A call ours did not run: the cheapest SUCCESS.
        assert!(md.contains("| sta.y | n/a | 5 | n/a | A | n/a |"), "{md}");
        assert!(
            md.contains("1 of 3 calls served alike at or under 1/3 of the best peer; above: base.probe (0.40), pmu.x (0.50)"),
            "{md}"
        );
        assert!(md.contains("| ours | 1000 | 7 |") && md.contains("| A | 1000 | null |"));
        let calls = json["calls"].as_array().unwrap();
        assert_eq!(calls.len(), 4);
        assert_eq!(
            calls[1],
            json!({"call": "pmu.x",
                   "ours": {"instructions": 30, "answer": "SUCCESS"},
                   "peers": {"A": {"instructions": 10, "answer": "NOT_SUPPORTED"},
                             "B": {"instructions": 60, "answer": "SUCCESS"}},
                   "best_peer": "B", "ratio_to_best": 0.5})
        );
        assert_eq!(calls[3]["ours"], Value::Null);
        assert_eq!(calls[3]["peers"]["B"], Value::Null);
        assert_eq!(calls[3]["best_peer"], "A");
        assert_eq!(json["firmware"]["ours"]["image"], "/fw/ours.bin");
        assert_eq!(json["firmware"]["peers"][1]["boot_instret"], 9);
        assert_eq!(json["unit"], "instructions (QEMU -icount shift=0)");
    }

    #[test]
    fn without_ours_the_best_peer_is_the_cheapest_success() {
        let a = bench("A", &[("c", 300, "SUCCESS"), ("d", 3, "FAILED")], None);
        let b = bench("B", &[("c", 200, "SUCCESS"), ("d", 2, "FAILED")], None);
        let (md, json) = report(None, &[a, b]);
        assert!(md.contains("| c | n/a | 300 | 200 | B | n/a |"), "{md}");
        assert!(
            md.contains("| d | n/a | 3 (FAILED) | 2 (FAILED) | n/a | n/a |"),
            "{md}"
        );
        assert!(md.contains("0 of 0 calls"), "{md}");
        assert_eq!(json["firmware"]["ours"], Value::Null);
    }

    #[test]
    fn our_engine_elsewhere_is_shown_but_never_the_best_peer() {
        let ours = bench("ours", &[("c", 30, "SUCCESS")], Some(1));
        let peer = bench("P", &[("c", 300, "SUCCESS")], None);
        let mut ours_too = bench("R", &[("c", 50, "SUCCESS")], None);
        ours_too.role = Role::OurEngine;
        let (md, json) = report(Some(&ours), &[peer, ours_too]);
        assert!(
            md.contains("| call | ours | P | R (our engine) | best peer | ours / best |"),
            "{md}"
        );
        assert!(md.contains("| c | 30 | 300 | 50 | P | 0.10 |"), "{md}");
        assert_eq!(json["firmware"]["peers"][1]["role"], "our engine");
    }

    #[test]
    fn no_peer_leaves_every_comparison_empty() {
        let ours = bench("ours", &[("c", 30, "SUCCESS")], Some(1));
        let (md, _) = report(Some(&ours), &[]);
        assert!(
            md.contains("| call | ours | best peer | ours / best |"),
            "{md}"
        );
        assert!(md.contains("| c | 30 | n/a | n/a |"), "{md}");
    }
}
