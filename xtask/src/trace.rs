//! hpmtrace: C API install (`cargo xtask cabi DIR`) and the trace library
//! tests run by `cargo xtask test`.

use crate::util::{cargo, root, run, step};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(clap::Args)]
pub struct CabiArgs {
    /// Destination: DIR/include and DIR/lib are created.
    pub dir: PathBuf,
}

/// Build the static library (release) and install headers and library.
pub fn cabi(a: CabiArgs) -> Result<()> {
    install(&a.dir)?;
    let d = a.dir.display();
    eprintln!("installed {d}/include/*.h and {d}/lib/libhpmtrace.a");
    eprintln!("build a program:  cc -finstrument-functions -I{d}/include prog.c {d}/lib/libhpmtrace.a -lpthread -ldl -lm");
    eprintln!("on a host without hardware counters run it with HPMTRACE_SW_FALLBACK=1");
    Ok(())
}

fn install(dir: &Path) -> Result<()> {
    step("building libhpmtrace.a (release)");
    run(cargo().args(["build", "--release", "-p", "hpmtrace"]))?;
    let lib = root().join("target/release/libhpmtrace.a");
    if !lib.exists() {
        bail!("{} was not produced", lib.display());
    }
    let inc = dir.join("include");
    let libdir = dir.join("lib");
    std::fs::create_dir_all(&inc).with_context(|| format!("cannot create {}", inc.display()))?;
    std::fs::create_dir_all(&libdir)
        .with_context(|| format!("cannot create {}", libdir.display()))?;
    std::fs::copy(&lib, libdir.join("libhpmtrace.a"))?;
    let src = root().join("crates/hpmtrace/include");
    for e in std::fs::read_dir(&src)? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "h") {
            std::fs::copy(&p, inc.join(p.file_name().unwrap()))?;
        }
    }
    Ok(())
}

/// The seed's fib example against the *installed* C API, run on the host
/// with software counters, its trace decoded and checked. (The unit,
/// golden and round-trip tests run in the workspace `cargo test` step.)
pub fn test() -> Result<()> {
    step("hpmtrace: no_std core builds for riscv64gc-unknown-none-elf");
    run(cargo().args([
        "rustc",
        "-p",
        "hpmtrace",
        "--lib",
        "--crate-type",
        "rlib",
        "--no-default-features",
        "--target",
        "riscv64gc-unknown-none-elf",
    ]))?;
    step("hpmtrace: seed fib example against the installed C API");
    let dir = root().join("target/xtask-trace");
    let _ = std::fs::remove_dir_all(&dir);
    install(&dir.join("prefix"))?;
    let exe = dir.join("fib");
    run(Command::new("gcc")
        .args(["-O2", "-finstrument-functions", "-I"])
        .arg(dir.join("prefix/include"))
        .arg(root().join("crates/hpmtrace/tests/c/fib.c"))
        .arg(dir.join("prefix/lib/libhpmtrace.a"))
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe))?;
    let out = Command::new(&exe)
        .current_dir(&dir)
        .env("HPMTRACE_SW_FALLBACK", "1")
        .env("HPMTRACE_BUFFER_BYTES", "32M")
        .output()
        .context("cannot run fib")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !stdout.contains("fib(20) = 6765") {
        bail!(
            "fib failed ({}): {stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    check_fib_trace(&dir.join("trace.rtd"))?;
    eprintln!("hpmtrace: fib trace OK");
    Ok(())
}

fn check_fib_trace(path: &Path) -> Result<()> {
    use hpmtrace::decode::{decode_stream, DecodeConfig, Output};
    use hpmtrace::format::RecordType;
    use hpmtrace::nexus::NexusConfig;
    let bytes =
        std::fs::read(path).with_context(|| format!("{} was not written", path.display()))?;
    // perfInit(2, 1): two sources, 1-bit SRC field.
    let cfg = DecodeConfig {
        channel: 6,
        nexus: NexusConfig {
            src_bits: 1,
            timestamp_bits: 40,
        },
    };
    let mut headers = 0;
    let mut stack = Vec::new();
    let mut enters = 0u64;
    let mut problems = Vec::new();
    decode_stream(
        &bytes[..],
        cfg,
        &mut |o| match o {
            Output::Header(_) => headers += 1,
            Output::Record(r) => match r.kind {
                RecordType::FuncEnter => {
                    enters += 1;
                    stack.push(r.addr);
                }
                RecordType::FuncExit => {
                    if stack.pop() != Some(r.addr) {
                        problems.push(format!("unbalanced exit at byte {}", r.offset));
                    }
                }
                k => problems.push(format!("unexpected {k:?} record")),
            },
            Output::Error(e) => problems.push(e.to_string()),
        },
        &mut |_| {},
    );
    if headers != 1 || enters != 21891 || !stack.is_empty() || !problems.is_empty() {
        bail!(
            "fib trace wrong: {headers} headers, {enters} enters (want 21891), {} open calls, problems: {:?}",
            stack.len(),
            &problems[..problems.len().min(5)]
        );
    }
    Ok(())
}
