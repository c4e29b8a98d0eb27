//! The per-sample cost benchmark: instructions from a counter overflow to
//! the sampled task's resumption, under icount, in Linux guests.

use crate::build::dt::Chosen;
use crate::build::{firmware, kernel};
use crate::guest::linux::Guest;
use crate::host::{root, step};
use crate::qemu::Firmware;
use anyhow::Result;
use std::fmt::Write as _;

/// Alu iterations and sampling period of the per-sample cost benchmark:
/// 100 M user instructions at a period of 1 M: 100 overflows a round.
const SAMPLECOST_ITERS: u64 = 50_000_000;

const SAMPLECOST_PERIOD: u64 = 1_000_000;

/// The per-sample cost benchmark: instructions from a counter overflow to
/// the sampled task's resumption (firmware + kernel), under icount, on
/// both kernels, rvpmu-fw with and without its snapshot area and OpenSBI
/// (which has none), in one run. Written to target/bench/sample-cost.md
/// and .json.
pub fn sample_cost_bench() -> Result<()> {
    let ours = firmware::ours("rvpmu-fw")?;
    let peer = Firmware::opensbi();
    let snapshot_off = Chosen {
        pmu_snapshot: Some(false),
        ..Chosen::NONE
    };
    let args = format!(
        "rvpmu.mode=samplecost rvpmu.iters={SAMPLECOST_ITERS} rvpmu.period={SAMPLECOST_PERIOD}"
    );
    let mut rows = Vec::new();
    for v in kernel::Version::ALL {
        let guest = Guest::build(v)?;
        for (label, fw, chosen) in [
            ("rvpmu-fw, snapshot", &ours, Chosen::NONE),
            ("rvpmu-fw, no snapshot", &ours, snapshot_off),
            ("OpenSBI 1.5.1 (no snapshot)", &peer, Chosen::NONE),
        ] {
            step(&format!("per-sample cost: {v} on {label}"));
            let out = guest.boot(fw, 1, chosen, &args, 600)?;
            let r = out
                .scenario("samplecost")
                .first()
                .map(|r| (*r).clone())
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "no samplecost result on {v} / {label}; console tail:\n{}",
                        out.tail(30)
                    )
                })?;
            let snap = out.console.contains("SBI PMU snapshot detected");
            rows.push((v, label, snap, r));
        }
    }
    let mut md = format!(
        "# Per-sample cost (instructions from a counter overflow to the sampled task's resumption)\n\n\
         QEMU -icount shift=0,sleep=off (1 instruction = 1 ns), -smp 1; `instructions:u` sampled every {SAMPLECOST_PERIOD} \
         over {SAMPLECOST_ITERS} iterations of a 2-instruction loop; cost = (time with sampling - time without) / samples, \
         min and median over rounds. Written by `cargo xtask bench`.\n\n\
         | kernel | firmware | snapshot in use | per sample (min) | per sample (median) | samples/round | ratio to OpenSBI |\n|---|---|---|---|---|---|---|\n"
    );
    for (v, label, snap, r) in &rows {
        let peer = rows
            .iter()
            .find(|(k, l, ..)| k == v && l.starts_with("OpenSBI"))
            .and_then(|(.., p)| p["per_sample_ns_median"].as_f64());
        let med = r["per_sample_ns_median"].as_f64();
        let ratio = med
            .zip(peer)
            .map(|(a, b)| format!("{:.2}", a / b))
            .unwrap_or("-".into());
        let samples = r["rounds"][0]["samples"]
            .as_u64()
            .map(|s| s.to_string())
            .unwrap_or("-".into());
        let _ = writeln!(
            md,
            "| {} | {label} | {} | {} | {} | {samples} | {ratio} |",
            v.name(),
            if *snap { "yes" } else { "no" },
            r["per_sample_ns_min"],
            r["per_sample_ns_median"],
        );
    }
    let dir = root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("sample-cost.md"), &md)?;
    let json: Vec<_> = rows
        .iter()
        .map(|(v, l, s, r)| serde_json::json!({"kernel": v.name(), "firmware": l, "snapshot": s, "result": r}))
        .collect();
    std::fs::write(
        dir.join("sample-cost.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    print!("{md}");
    Ok(())
}
