//! `cargo xtask test`: every test of the project. The suites are data
//! ([`SUITES`], in order of cost) run by one runner, which owns their
//! order, which of them an option selects, and the table of how each
//! ended; a failed suite stops the run. Helpers every suite uses: one
//! check line ([`print_check`]), and a QEMU run made twice and compared
//! ([`twice`], [`report`]): under icount two runs of the same thing print
//! the same text.

mod conformance;
mod firmware;
mod host;
mod hv;
mod linux;
mod trace;

use crate::build::kernel::Version;
use crate::host::{setup, step};
use crate::qemu::Run;
use anyhow::Result;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct TestArgs {
    /// Only the host-side tests (no QEMU, no kernel build).
    #[arg(long)]
    pub host_only: bool,
    /// Only hpmtrace's bare-metal checks on QEMU (fib with golden bytes,
    /// timer, manual, SMP; S- and M-mode), nothing else.
    #[arg(long, conflicts_with = "host_only")]
    pub bare_metal_only: bool,
    /// Run the Linux e2e suite on this kernel only (default: 7.2 and 6.12,
    /// then the proofs of patches/linux on 7.2-fixed and 6.12-fixed).
    #[arg(long, value_enum)]
    pub kernel: Option<Version>,
}

impl TestArgs {
    /// The kernels the Linux suite boots.
    fn kernels(&self) -> Vec<Version> {
        match self.kernel {
            Some(k) => vec![k],
            None => Version::TESTED.to_vec(),
        }
    }
}

/// Which runs of `cargo xtask test` include a suite.
#[derive(Clone, Copy, PartialEq, Eq)]
enum When {
    /// Every run but `--bare-metal-only`.
    Always,
    /// The full run (neither `--host-only` nor `--bare-metal-only`).
    Full,
    /// `--bare-metal-only` alone.
    BareMetalOnly,
}

/// A test suite: its name and what runs it.
struct Suite {
    name: &'static str,
    when: When,
    run: fn(&TestArgs) -> Result<()>,
}

/// Every suite, in the order they run.
const SUITES: &[Suite] = &[
    Suite {
        name: "host",
        when: When::Always,
        run: |_| host::run(),
    },
    Suite {
        name: "firmware",
        when: When::Full,
        run: |_| firmware::test(),
    },
    Suite {
        name: "hv",
        when: When::Full,
        run: |_| hv::test(),
    },
    Suite {
        name: "linux",
        when: When::Full,
        run: |a| linux::test(&a.kernels()),
    },
    Suite {
        name: "conformance",
        when: When::Full,
        run: |_| conformance::test(),
    },
    Suite {
        name: "trace",
        when: When::Full,
        run: |_| trace::test(),
    },
    Suite {
        name: "trace bare metal",
        when: When::BareMetalOnly,
        run: |_| trace::bare_metal(),
    },
];

/// `cargo xtask test`: the suites `args` select, in order.
pub fn run(args: TestArgs) -> Result<()> {
    let selected: Vec<&Suite> = SUITES
        .iter()
        .filter(|s| match s.when {
            When::Always => !args.bare_metal_only,
            When::Full => !args.bare_metal_only && !args.host_only,
            When::BareMetalOnly => args.bare_metal_only,
        })
        .collect();
    run_suites(&selected, &args)
}

/// One suite on its own (`cargo xtask firmware --test`, `cargo xtask hv
/// --test`).
pub fn run_only(name: &str) -> Result<()> {
    let s = SUITES
        .iter()
        .find(|s| s.name == name)
        .expect("a suite of that name");
    run_suites(
        &[s],
        &TestArgs {
            host_only: false,
            bare_metal_only: false,
            kernel: None,
        },
    )
}

/// Run `suites` in order until one fails; the table of how each ended
/// follows either way.
fn run_suites(suites: &[&Suite], args: &TestArgs) -> Result<()> {
    setup::ensure_host()?;
    let mut ended: Vec<(&str, bool, Duration)> = Vec::new();
    let mut failure = None;
    for s in suites {
        let start = Instant::now();
        let r = (s.run)(args);
        ended.push((s.name, r.is_ok(), start.elapsed()));
        if let Err(e) = r {
            failure = Some(e);
            break;
        }
    }
    step("test suites");
    for (name, ok, wall) in &ended {
        println!(
            "  {name:<18} {:<7} {:>6.0} s",
            if *ok { "passed" } else { "FAILED" },
            wall.as_secs_f64()
        );
    }
    for s in &suites[ended.len()..] {
        println!("  {:<18} not run", s.name);
    }
    if let Some(e) = failure {
        return Err(e);
    }
    step("all tests passed");
    Ok(())
}

/// Runs `run` twice and checks the first run with `check` (its problems
/// and what else it found): a second run that printed other text or ended
/// otherwise is a problem too.
pub fn twice<T>(
    mut run: impl FnMut() -> Result<Run>,
    check: impl FnOnce(&Run) -> (Vec<String>, T),
) -> Result<(Run, Vec<String>, T)> {
    let first = run()?;
    let (mut problems, found) = check(&first);
    let second = run()?;
    if second.text != first.text || second.code != first.code {
        problems.push("two identical runs printed different output".into());
    }
    Ok((first, problems, found))
}

/// A step's verdict: `ok` prints what passed, or the run's output and its
/// problems follow and `name` joins `failures`.
pub fn report(
    failures: &mut Vec<&'static str>,
    name: &'static str,
    run: &Run,
    problems: &[String],
    ok: impl FnOnce(),
) {
    if problems.is_empty() {
        ok();
    } else {
        eprintln!("--- output ---\n{}--- end ---", run.text);
        for p in problems {
            eprintln!("    FAIL: {p}");
        }
        failures.push(name);
    }
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
