//! The bare-metal hook cost benchmark: hpmtrace's enter + exit hooks on
//! rvpmu-fw, in instructions (QEMU icount).

use crate::build::hpmtrace::Mode;
use crate::guest::baremetal::{sources, tail, Build};
use crate::host::{root, step};
use anyhow::{bail, Result};

/// `cargo xtask bench`: the bare-metal hooks' cost per enter + exit pair
/// in instructions (QEMU icount), 1, 2 and 6 recorded counters, with the
/// staging area not filling (hooks alone) and filling (encoding included),
/// and with tracing off. Written to target/bench/hpmtrace-bare.md.
pub fn hook_cost_bench() -> Result<()> {
    step("hpmtrace bare-metal hook cost (instructions per enter+exit pair, QEMU icount)");
    let b = Build::new(
        Mode::Supervisor,
        root().join("target/xtask-trace/bare-bench"),
    )?;
    let elf = b.link("hookcost", &[sources().join("hookcost.c")], true)?;
    let console = b.boot(&elf, 1)?;
    let mut md = String::from(
        "# hpmtrace bare-metal hook cost\n\n\
         Instructions per enter+exit hook pair of an empty `-finstrument-functions` function, \
         minus the same calls uninstrumented; S-mode on rvpmu-fw, QEMU virt, -icount shift=0 (exact). \
         \"hooks\": the staging area never fills; \"with encoding\": it fills and is encoded inside the run, amortized.\n\n\
         | counters recorded | tracing off | hooks (200 pairs) | with encoding (20000 pairs) |\n| ---: | ---: | ---: | ---: |\n",
    );
    let mut rows: Vec<(u64, [u64; 3])> = Vec::new();
    for l in console.lines().filter(|l| l.starts_with("hookcost: ")) {
        let num = |k: &str| -> Option<u64> {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix(k)?.strip_prefix('=')?.parse().ok())
        };
        let (Some(n), Some(pairs), Some(plain), Some(off), Some(on)) = (
            num("counters"),
            num("pairs"),
            num("plain"),
            num("off"),
            num("on"),
        ) else {
            bail!("unparsable line {l:?}");
        };
        let per = |x: u64| x.saturating_sub(plain) / pairs.max(1);
        let row = match rows.iter_mut().find(|r| r.0 == n) {
            Some(r) => r,
            None => {
                rows.push((n, [0; 3]));
                rows.last_mut().unwrap()
            }
        };
        if pairs < 1000 {
            row.1[0] = per(off);
            row.1[1] = per(on);
        } else {
            row.1[2] = per(on);
        }
    }
    if rows.len() != 3 {
        bail!("expected 3 counter sets, got {rows:?}:\n{}", tail(&console));
    }
    for (n, [off, hooks, enc]) in &rows {
        md.push_str(&format!("| {n} | {off} | {hooks} | {enc} |\n"));
    }
    let out = root().join("target/bench/hpmtrace-bare.md");
    std::fs::create_dir_all(out.parent().unwrap())?;
    std::fs::write(&out, &md)?;
    println!("{md}\nwrote {}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    /// `cargo test -p xtask hpmtrace_bare_bench -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn hpmtrace_bare_bench() {
        super::hook_cost_bench().unwrap();
    }
}
