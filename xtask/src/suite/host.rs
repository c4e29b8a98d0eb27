//! The host tests: `cargo test` of the workspace, the warning gate
//! (clippy and rustdoc, host and targets; clippy's `incompatible_msrv`
//! holds the standard library to the declared `rust-version`), the
//! published crates' dry-run publish, rvpmu for the bare target, and the
//! loom model of the STA sequence protocol.

use crate::host::{cargo, root, run as run_cmd, step};
use crate::host::{BARE_TARGET, LINUX_TARGET};
use anyhow::{bail, Result};

/// The host tests, in order of cost.
pub fn run() -> Result<()> {
    step("host tests (cargo test)");
    run_cmd(cargo().args([
        "test",
        "--workspace",
        "--exclude",
        "rvpmu-fw",
        "--exclude",
        "conformance",
    ]))?;
    lint()?;
    // Each published crate packaged (only the files its `include` names)
    // and built from its package against the others' packages, as
    // crates.io would; nothing is uploaded. The working tree is what is
    // tested, committed or not.
    step("the published crates package and build (cargo publish --dry-run)");
    run_cmd(cargo().args([
        "publish",
        "--dry-run",
        "--allow-dirty",
        "-p",
        "rvpmu-sbi",
        "-p",
        "rvpmu-dtb",
        "-p",
        "rvpmu",
        "-p",
        "hpmtrace",
        "-p",
        "hpmtrace-cli",
    ]))?;
    step(&format!(
        "rvpmu builds for {BARE_TARGET} (no_std, no allocator)"
    ));
    run_cmd(cargo().args(["build", "-p", "rvpmu", "--target", BARE_TARGET]))?;
    step("rvpmu: loom model of the STA sequence protocol");
    // Its own target directory: `--cfg loom` changes every crate's flags,
    // and sharing target/ would rebuild the main cache each time. The
    // model's negative check panics on purpose; no backtrace for it.
    run_cmd(
        cargo()
            .env("RUSTFLAGS", "--cfg loom")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env("CARGO_TARGET_DIR", root().join("target/loom"))
            .env("RUST_BACKTRACE", "0")
            .args([
                "test",
                "-p",
                "rvpmu",
                "--release",
                "--test",
                "sta_loom",
                "--",
                "--nocapture",
            ]),
    )
}

/// The warning gate: clippy on every crate, built for the target it runs
/// on (on the host the bare-metal crates are empty stubs and e2e-init is
/// its unit tests), then rustdoc; both with `-D warnings`. Every unsafe
/// block must say why it is sound (`clippy::undocumented_unsafe_blocks`):
/// every crate with unsafe code denies it in its Cargo.toml `[lints]`,
/// xtask and hpmtrace-cli (no unsafe code) get it here. Every step runs, so one run shows
/// everything to fix; the gate fails at the end, naming the failed steps.
fn lint() -> Result<()> {
    let clippy = |target: Option<&str>, args: &[&str], lints: &[&str]| {
        let mut c = cargo();
        c.arg("clippy").args(args);
        if let Some(t) = target {
            c.args(["--target", t]);
        }
        c.args(["--", "-D", "warnings"]).args(lints);
        c
    };
    // Libraries: their public API; binaries: their private items too
    // (cargo's default for a binary).
    let rustdoc = |target: Option<&str>, crates: &[&str]| {
        let mut c = cargo();
        c.env("RUSTDOCFLAGS", "-D warnings")
            .args(["doc", "--no-deps"]);
        if let Some(t) = target {
            c.args(["--target", t]);
        }
        for k in crates {
            c.args(["-p", k]);
        }
        c
    };
    let host_all = [
        "--workspace",
        "--exclude",
        "rvpmu-fw",
        "--exclude",
        "conformance",
        "--all-targets",
    ];
    let steps = [
        (
            "clippy -D warnings, host, all targets: rvpmu-sbi, rvpmu-dtb, rvpmu, hpmtrace, \
             hpmtrace-cli, e2e-init (unit tests), xtask"
                .to_string(),
            vec![
                clippy(None, &host_all, &[]),
                clippy(
                    None,
                    &[
                        "-p",
                        "xtask",
                        "-p",
                        "hpmtrace-cli",
                        "--all-targets",
                        "--no-deps",
                    ],
                    &["-D", "clippy::undocumented_unsafe_blocks"],
                ),
            ],
        ),
        (
            // The firmware's profile; conformance builds with --release,
            // which has the same cfgs (no debug assertions).
            format!(
                "clippy -D warnings, {BARE_TARGET}: rvpmu-sbi, rvpmu-dtb, rvpmu (no_std), rvpmu-rt, rvpmu-fw, \
                 rvpmu-hv, conformance, sbi-check, vs-check"
            ),
            vec![clippy(
                Some(BARE_TARGET),
                &[
                    "--profile",
                    "fw",
                    "-p",
                    "rvpmu-sbi",
                    "-p",
                    "rvpmu-dtb",
                    "-p",
                    "rvpmu",
                    "-p",
                    "rvpmu-rt",
                    "-p",
                    "rvpmu-fw",
                    "-p",
                    "rvpmu-hv",
                    "-p",
                    "conformance",
                    "-p",
                    "sbi-check",
                    "-p",
                    "vs-check",
                ],
                &[],
            )],
        ),
        (
            format!("clippy -D warnings, {BARE_TARGET}: hpmtrace with its bare-metal C API"),
            vec![clippy(
                Some(BARE_TARGET),
                &[
                    "--release",
                    "-p",
                    "hpmtrace",
                    "--no-default-features",
                    "--features",
                    "bare-capi",
                ],
                &[],
            )],
        ),
        (
            format!(
                "clippy -D warnings, {LINUX_TARGET}: e2e-init (the guest's /init), e2e-proto, hpmtrace \
                 (the guest's library)"
            ),
            vec![clippy(
                Some(LINUX_TARGET),
                &["--release", "-p", "e2e-init", "-p", "e2e-proto", "-p", "hpmtrace"],
                &[],
            )],
        ),
        // Not hpmtrace-cli: its binary is named `hpmtrace`, like the
        // library, and its documentation would overwrite the library's
        // (cargo issue 6313).
        (
            "rustdoc -D warnings, host: rvpmu-sbi, rvpmu-dtb, rvpmu, rvpmu-hv, hpmtrace, xtask"
                .to_string(),
            vec![rustdoc(None, &["rvpmu-sbi", "rvpmu-dtb", "rvpmu", "rvpmu-hv", "hpmtrace", "xtask"])],
        ),
        (
            format!(
                "rustdoc -D warnings, {BARE_TARGET}: rvpmu-sbi, rvpmu-dtb, rvpmu, rvpmu-rt, rvpmu-fw, \
                 rvpmu-hv, conformance"
            ),
            vec![rustdoc(
                Some(BARE_TARGET),
                &[
                    "rvpmu-sbi",
                    "rvpmu-dtb",
                    "rvpmu",
                    "rvpmu-rt",
                    "rvpmu-fw",
                    "rvpmu-hv",
                    "conformance",
                ],
            )],
        ),
        (
            format!("rustdoc -D warnings, {BARE_TARGET}: hpmtrace with its bare-metal C API"),
            vec![{
                let mut c = rustdoc(Some(BARE_TARGET), &["hpmtrace"]);
                c.args(["--no-default-features", "--features", "bare-capi"]);
                c
            }],
        ),
        (
            format!("rustdoc -D warnings, {LINUX_TARGET}: e2e-init, e2e-proto, hpmtrace"),
            vec![rustdoc(Some(LINUX_TARGET), &["e2e-init", "e2e-proto", "hpmtrace"])],
        ),
    ];
    let total = steps.len();
    let mut failed = Vec::new();
    for (label, cmds) in steps {
        step(&label);
        let mut ok = true;
        for mut cmd in cmds {
            if let Err(e) = run_cmd(&mut cmd) {
                eprintln!("{e:#}");
                ok = false;
            }
        }
        if !ok {
            failed.push(label);
        }
    }
    if !failed.is_empty() {
        bail!(
            "the warning gate failed ({} of {total} steps):\n  {}",
            failed.len(),
            failed.join("\n  ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The warning gate on its own (a minute or two once built):
    /// `cargo test -p xtask warning_gate -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn warning_gate() {
        super::lint().unwrap();
    }
}
