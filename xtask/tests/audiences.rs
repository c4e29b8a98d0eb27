//! Crates by audience: the programs that call an SBI implementation never
//! link one. The S-mode programs (the conformance kernel, sbi-check,
//! vs-check, bare-metal hpmtrace) and the runtime they share reach the
//! engine `rvpmu` through no chain of normal dependencies on the target
//! they are built for, so a wrong constant in the engine cannot be agreed
//! with by the suite that judges it; and the wire-format crate
//! `rvpmu-sbi` depends on `sbi-spec` alone.
//!
//! The graph is cargo's own (`cargo metadata`, resolved for the bare-metal
//! target with every feature on), not a reading of the manifests.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

const BARE_TARGET: &str = "riscv64gc-unknown-none-elf";

/// Package name -> names of its normal (not dev, not build) dependencies.
fn normal_graph() -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--all-features",
            "--filter-platform",
            BARE_TARGET,
        ])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata is JSON");
    let name_of: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let mut graph = BTreeMap::new();
    for node in meta["resolve"]["nodes"].as_array().expect("resolve") {
        let deps = node["deps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| {
                d["dep_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k["kind"].is_null())
            })
            .map(|d| name_of[d["pkg"].as_str().unwrap()].to_string())
            .collect();
        graph.insert(name_of[node["id"].as_str().unwrap()].to_string(), deps);
    }
    graph
}

/// Every package `from` reaches through normal dependencies.
fn reach(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(p) = todo.pop() {
        for d in graph.get(&p).into_iter().flatten() {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

#[test]
fn s_mode_programs_never_link_the_engine() {
    let g = normal_graph();
    for program in [
        "conformance",
        "sbi-check",
        "vs-check",
        "rvpmu-rt",
        "hpmtrace",
        "rvpmu-sbi",
        "rvpmu-dtb",
    ] {
        let r = reach(&g, program);
        assert!(
            r.contains("rvpmu-sbi") || program.starts_with("rvpmu-"),
            "{program} does not use the client crate: the graph is not what this test expects"
        );
        assert!(
            !r.contains("rvpmu"),
            "{program} depends on the engine rvpmu: {r:?}"
        );
    }
    // The engine itself is in the graph and reachable from the firmware, so
    // the search above can see it.
    assert!(reach(&g, "rvpmu-fw").contains("rvpmu"));
}

#[test]
fn the_wire_format_depends_on_sbi_spec_alone() {
    let g = normal_graph();
    let r = reach(&g, "rvpmu-sbi");
    assert!(
        r.iter()
            .all(|p| p == "sbi-spec" || reach(&g, "sbi-spec").contains(p)),
        "rvpmu-sbi reaches {r:?}"
    );
    assert!(r.contains("sbi-spec"));
}
