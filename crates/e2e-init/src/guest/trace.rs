//! The `trace` scenario: run SiFive's fib example, cross-compiled
//! with `-finstrument-functions` against hpmtrace's C API, in this guest
//! with the hardware counters: `/fib-hw` (the example with its event list
//! cut to what QEMU's PMU has: cycles, timestamp, instructions) and `/fib`
//! (the example unchanged). For each, /init counts the whole process with
//! perf on its own and copies the `.rtd` trace it writes out over the
//! console (`hpmtrace::dump`, the framing the bare-metal library's
//! perfWriteTrace uses) for xtask to decode.

use super::perf::{Counter, Event, Filter, Kind, Target};
use super::scenarios::{count_once, reading_json};
use super::workload::rvpmu_alu_loop;
use e2e_proto::json::{array, Obj};
use std::ffi::CString;
use std::io::{self, Read, Write};

/// The instrumented programs in the initramfs (by xtask), run in order.
/// Both ask for a 32 KiB trace buffer, far too small for fib(20)'s 43,782
/// records: the library's override gives them room. The unchanged example
/// also asks for events QEMU's PMU lacks (cache misses, branches, a raw
/// event): by default the library leaves them out of the trace, naming
/// each on stderr, so the trace stays readable by SiFive's decoder.
const PROGRAMS: [(&str, &[&str]); 2] = [
    ("/fib-hw", &["HPMTRACE_BUFFER_BYTES=32M"]),
    ("/fib", &["HPMTRACE_BUFFER_BYTES=32M"]),
];
/// Working directories: perfWriteTrace(NULL) writes `trace.rtd` there.
const WORK_DIR: &str = "/trace";

pub fn trace() -> Result<(), String> {
    let user_access = std::fs::read_to_string("/proc/sys/kernel/perf_user_access")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|e| format!("unreadable: {e}"));
    let rdpmc = probe_user_read();
    println!(
        "trace: kernel.perf_user_access = {user_access}; a hardware cycles counter is user-readable: {}",
        match &rdpmc {
            Ok(b) => b.to_string(),
            Err(e) => format!("probe failed: {e}"),
        }
    );
    let events = probe_fib_events();
    for (program, env) in PROGRAMS {
        let dir = format!("{WORK_DIR}{program}");
        std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {dir}: {e}"))?;
        let run = run_program(program, env, &dir)?;
        println!(
            "trace: {program} exited with {}; its output: {:?}",
            run.status, run.output
        );
        let counts: Vec<String> = run.counts.iter().map(|(n, v)| format!("{n} {v}")).collect();
        println!(
            "trace: {program} as a whole, counted by /init: {}",
            counts.join(", ")
        );
        let file = format!("{dir}/trace.rtd");
        let bytes = std::fs::read(&file).map_err(|e| format!("{program} wrote no {file}: {e}"))?;
        let hash = hpmtrace::dump::fnv1a64(&bytes);
        emit(program, &bytes).map_err(|e| format!("cannot copy the trace to the console: {e}"))?;
        let mut process = Obj::new();
        for (n, v) in &run.counts {
            process = process.u64(n, *v);
        }
        let mut o = Obj::new()
            .str("scenario", "trace")
            .str("program", program)
            .str("env", &env.join(" "))
            .str("stdout", &run.output)
            .u64("timebase_hz", timebase_hz().unwrap_or(0))
            .str("perf_user_access", &user_access)
            .raw("process", &process.finish())
            .raw("fib_events", &events)
            .u64("rtd_bytes", bytes.len() as u64)
            .str("rtd_fnv1a64", &format!("{hash:016x}"));
        o = if run.status >= 0 {
            o.u64("exit", run.status as u64)
        } else {
            o.u64("signal", run.status.unsigned_abs())
        };
        o = match &rdpmc {
            Ok(b) => o.bool("user_readable_probe", *b),
            Err(e) => o.str("user_readable_probe_error", e),
        };
        println!("{}", e2e_proto::result_line(&o.finish()));
    }
    Ok(())
}

/// The hardware events of SiFive's fib example in perf terms (its
/// timestamp comes from the trace clock, not perf): cycles, instructions,
/// cache-misses, branches, branch-misses and raw event_data 0x20000.
const FIB_EVENTS: [Kind; 6] = [
    Kind::Cycles,
    Kind::Instructions,
    Kind::Hardware(3),
    Kind::Hardware(4),
    Kind::Hardware(5),
    Kind::Raw(0x20000),
];

/// What this machine does with each of fib.c's events, alone and all
/// together as one group (as the library opens them): opened or not, and
/// when opened, whether it got a counter (time running) over a short loop.
/// perf_event_open can succeed for an event the PMU later cannot place
/// (riscv-pmu-sbi asks the firmware for a counter only when the event is
/// scheduled); such an event never runs, and neither does its group.
fn probe_fib_events() -> String {
    let mut alone = Vec::new();
    let mut group: Vec<Counter> = Vec::new();
    for kind in FIB_EVENTS {
        let ev = Event::filtered(kind, Filter::User);
        let r = count_once(ev, || rvpmu_alu_loop(1000));
        if r.is_ok() {
            if let Ok(m) = Counter::open(ev, Target::ThisThread, group.first()) {
                group.push(m);
            }
        }
        alone.push(reading_json(&ev.name(), &r));
    }
    let mut together = Vec::new();
    if let Some(leader) = group.first() {
        let _ = leader.enable_group();
        rvpmu_alu_loop(1000);
        let _ = leader.disable_group();
        for c in &group {
            together.push(reading_json(
                &c.event.name(),
                &c.read().map_err(|e| format!("read: {e}")),
            ));
        }
    }
    for (what, list) in [("alone", &alone), ("as one group", &together)] {
        println!("trace: fib.c's events {what}: {}", list.join(" "));
    }
    Obj::new()
        .raw("alone", &array(&alone))
        .raw("group", &array(&together))
        .finish()
}

/// The `time` CSR's frequency from the device tree (the trace's
/// timestamps are `rdtime` readings).
fn timebase_hz() -> Option<u64> {
    let b = std::fs::read("/sys/firmware/devicetree/base/cpus/timebase-frequency").ok()?;
    Some(u32::from_be_bytes(b.get(..4)?.try_into().ok()?) as u64)
}

/// Whether a hardware cycles:u counter of this thread is readable from
/// user space once enabled (what the library's syscall-free path needs).
fn probe_user_read() -> Result<bool, String> {
    let c = Counter::open(
        Event::filtered(Kind::Cycles, Filter::User),
        Target::ThisThread,
        None,
    )
    .map_err(|e| format!("open cycles:u: {e}"))?;
    c.enable().map_err(|e| format!("enable: {e}"))?;
    let r = c.user_readable().map_err(|e| format!("mmap: {e}"));
    let _ = c.disable();
    r
}

struct Run {
    status: i64,
    output: String,
    /// (name, count) of the whole program ([`PROCESS_EVENTS`]).
    counts: Vec<(&'static str, u64)>,
}

/// The events /init counts over the whole program (from its execve to its
/// exit). Not cycles or instructions: QEMU virt's PMU maps each to one
/// counter only (mcycle, minstret), which the library's own events hold,
/// so counting them here too would multiplex both. task-clock is a
/// software clock: under icount shift=0 its nanoseconds are instructions
/// of every mode, an independent upper bound for the trace's totals.
const PROCESS_EVENTS: [(&str, Kind, Filter); 1] = [("task_clock_ns", Kind::TaskClock, Filter::All)];

/// Fork, attach the counters to the child before it execs the program,
/// capture its output, wait for it.
fn run_program(program: &str, env: &[&str], dir: &str) -> Result<Run, String> {
    let path = CString::new(program).map_err(|_| "NUL in program path")?;
    let dir = CString::new(dir).map_err(|_| "NUL in directory")?;
    let env: Vec<CString> = env
        .iter()
        .map(|e| CString::new(*e).map_err(|_| "NUL in environment".to_string()))
        .collect::<Result<_, _>>()?;
    let mut envp: Vec<*const libc::c_char> = env.iter().map(|e| e.as_ptr()).collect();
    envp.push(std::ptr::null());
    let argv = [path.as_ptr(), std::ptr::null()];
    let (go_r, go_w) = pipe()?;
    let (out_r, out_w) = pipe()?;
    // SAFETY: /init is single-threaded here; the child only makes
    // async-signal-safe calls (read, dup2, close, chdir, execve, _exit) on
    // data prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: see above; every pointer is live in the child's copy.
        unsafe {
            libc::close(go_w);
            libc::close(out_r);
            let mut b = 0u8;
            // Wait until the parent has attached the counters.
            libc::read(go_r, (&mut b as *mut u8).cast(), 1);
            libc::dup2(out_w, 1);
            libc::dup2(out_w, 2);
            if libc::chdir(dir.as_ptr()) == 0 {
                libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr());
            }
            libc::_exit(127);
        }
    }
    // SAFETY: closing the child's ends of the pipes in the parent.
    unsafe {
        libc::close(go_r);
        libc::close(out_w);
    }
    let mut counters = Vec::new();
    let mut attach_error = None;
    for (name, kind, filter) in PROCESS_EVENTS {
        match Counter::open_on_exec(Event::filtered(kind, filter), pid) {
            Ok(c) => counters.push((name, c)),
            Err(e) => {
                attach_error = Some(format!("cannot count {name} of {program}: {e}"));
                break;
            }
        }
    }
    // Let the child go (or, on an attach error, run and be reaped anyway).
    // SAFETY: writing one byte from a live buffer to our pipe, then closing it.
    unsafe {
        libc::write(go_w, b"g".as_ptr().cast(), 1);
        libc::close(go_w);
    }
    // SAFETY: out_r is our open read end; File takes ownership and closes it.
    let mut out = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(out_r) };
    let mut output = Vec::new();
    let read = out.read_to_end(&mut output);
    let mut wstatus = 0;
    // SAFETY: waiting for our own child.
    if unsafe { libc::waitpid(pid, &mut wstatus, 0) } != pid {
        return Err(format!("waitpid: {}", io::Error::last_os_error()));
    }
    read.map_err(|e| format!("reading {program}'s output: {e}"))?;
    if let Some(e) = attach_error {
        return Err(e);
    }
    let status = if libc::WIFEXITED(wstatus) {
        libc::WEXITSTATUS(wstatus) as i64
    } else {
        -(libc::WTERMSIG(wstatus) as i64)
    };
    let mut counts = Vec::new();
    for (name, c) in &counters {
        let r = c.read().map_err(|e| format!("read {name}: {e}"))?;
        if r.enabled != r.running {
            return Err(format!(
                "{name} was multiplexed ({} of {} ns on a counter): no exact total",
                r.running, r.enabled
            ));
        }
        counts.push((*name, r.value));
    }
    Ok(Run {
        status,
        output: String::from_utf8_lossy(&output).into_owned(),
        counts,
    })
}

fn pipe() -> Result<(libc::c_int, libc::c_int), String> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", io::Error::last_os_error()));
    }
    Ok((fds[0], fds[1]))
}

/// Copy `bytes` to the console as a dump named after the program. Kernel
/// messages may interleave with its lines; xtask skips them and checks
/// length and checksum.
fn emit(program: &str, bytes: &[u8]) -> io::Result<()> {
    let info = hpmtrace::dump::DumpInfo {
        name: program,
        core: 0,
        src_bits: None,
    };
    let mut out = io::stdout().lock();
    let mut res = Ok(());
    hpmtrace::dump::write(info, bytes, &mut |line| {
        if res.is_ok() {
            res = out.write_all(line);
        }
    });
    res?;
    out.flush()
}
