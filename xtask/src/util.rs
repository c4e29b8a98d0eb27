//! Small helpers shared by the xtask modules.

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::Command;

/// The workspace root (parent of `xtask/`).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask has a parent")
        .to_path_buf()
}

/// Per-user cache for expensive artefacts (kernel builds), outside the
/// repository so fresh clones on the same machine reuse it.
pub fn cache_dir() -> PathBuf {
    let base = std::env::var_os("RVPMU_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|p| PathBuf::from(p).join("rvpmu")))
        .or_else(|| std::env::var_os("HOME").map(|p| PathBuf::from(p).join(".cache/rvpmu")))
        .unwrap_or_else(|| root().join("target/cache"));
    std::fs::create_dir_all(&base).ok();
    base
}

/// Print a step header so long runs show progress.
pub fn step(msg: &str) {
    eprintln!("\x1b[1m==>\x1b[0m {msg}");
}

/// The outcome of one test check, as the QEMU suites print it.
pub enum Verdict<'a> {
    Pass,
    /// An optional feature the peer firmware lacks: reported, not failed.
    Lacks,
    /// Failed; `context` (e.g. the guest console tail) follows the lines.
    Fail {
        context: Option<&'a str>,
    },
}

/// Prints one check line (`label` names firmware/scenario and check).
pub fn print_check(label: &str, verdict: Verdict<'_>, expected: &str, got: &str) {
    match verdict {
        Verdict::Pass => println!("  \x1b[32mpass\x1b[0m  {label}: {got}"),
        Verdict::Lacks => println!(
            "  \x1b[33mlacks\x1b[0m {label}: expected {expected}, got {got} (peer lacks this; not a failure)"
        ),
        Verdict::Fail { context } => {
            println!("  \x1b[31mFAIL\x1b[0m  {label}\n        expected: {expected}\n        got:      {got}");
            if let Some(c) = context {
                println!("        guest console tail:");
                for l in c.lines() {
                    println!("        | {l}");
                }
            }
        }
    }
}

/// Run a command, failing with its command line if it exits non-zero.
pub fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Run a command and return its stdout as a string.
pub fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// `cargo` as invoked by the user (respects $CARGO).
pub fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c
}
