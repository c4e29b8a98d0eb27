//! The host: where things are (workspace, cache), the Rust targets it
//! builds for, running its programs, progress lines; `setup` installs what a fresh Debian 12 machine lacks,
//! `debian` is the private apt that fetches the guest's Debian packages.

pub mod debian;
pub mod setup;

use anyhow::{bail, Context, Result};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The Rust target (installed by `setup`) of everything that runs on the bare machine: rvpmu
/// (no_std), the firmware and sbi-check, the hypervisor and vs-check, the
/// conformance kernel, hpmtrace's bare-metal C API.
pub const BARE_TARGET: &str = "riscv64gc-unknown-none-elf";
/// The Rust target of the Linux guest's programs: /init (e2e-init) and
/// hpmtrace's C API for Linux.
pub const LINUX_TARGET: &str = "riscv64gc-unknown-linux-gnu";

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

/// What a child prints on `pipe`, collected by a thread as it arrives, so
/// that the caller can watch it while the child runs.
pub fn collect_pipe(
    mut pipe: impl Read + Send + 'static,
) -> (Arc<Mutex<Vec<u8>>>, std::thread::JoinHandle<()>) {
    let out = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&out);
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .expect("output lock")
                .extend_from_slice(&buf[..n]);
        }
    });
    (out, reader)
}

/// What a captured child process (a QEMU run) printed and how it ended.
pub struct Captured {
    /// Standard output, lossy UTF-8, carriage returns removed.
    pub stdout: String,
    pub stderr: String,
    /// Exit status; `None` when it was killed (timeout or `stop_at`).
    pub status: Option<ExitStatus>,
    pub timed_out: bool,
    pub wall: Duration,
}

/// Runs `cmd` with stdin closed and both outputs captured, until it exits,
/// `timeout` passes (killed, `timed_out`) or `stop_at` appears in its
/// output (killed).
pub fn run_captured(
    cmd: &mut Command,
    timeout: Duration,
    stop_at: Option<&str>,
) -> Result<Captured> {
    run_captured_watching(cmd, timeout, stop_at, &mut |_| {})
}

/// How often [`run_captured_watching`] shows its watcher the output.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// [`run_captured`], showing `watch` the standard output so far (lossy
/// UTF-8) about once a second while the child runs: a long run's
/// progress lines.
pub fn run_captured_watching(
    cmd: &mut Command,
    timeout: Duration,
    stop_at: Option<&str>,
    watch: &mut dyn FnMut(&str),
) -> Result<Captured> {
    let start = Instant::now();
    let mut watched = start;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!(
                "cannot start {}: run `cargo xtask setup`",
                cmd.get_program().to_string_lossy()
            )
        })?;
    let (out, reader) = collect_pipe(child.stdout.take().expect("stdout is piped"));
    let mut epipe = child.stderr.take().expect("stderr is piped");
    let ereader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = epipe.read_to_end(&mut buf);
        buf
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        let seen = stop_at.is_some_and(|s| {
            String::from_utf8_lossy(&out.lock().expect("output lock")).contains(s)
        });
        if watched.elapsed() >= WATCH_EVERY {
            let text = String::from_utf8_lossy(&out.lock().expect("output lock")).into_owned();
            watch(&text);
            watched = Instant::now();
        }
        timed_out = !seen && start.elapsed() > timeout;
        if seen || timed_out {
            // Our own child, by handle.
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let wall = start.elapsed();
    let _ = reader.join();
    let stderr = String::from_utf8_lossy(&ereader.join().unwrap_or_default()).into_owned();
    let stdout = String::from_utf8_lossy(&out.lock().expect("output lock")).replace('\r', "");
    Ok(Captured {
        stdout,
        stderr,
        status,
        timed_out,
        wall,
    })
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
