//! `/init` of the end-to-end initramfs, and `rvpmu-work`, the workloads
//! perf measures in the guest: one static riscv64 Linux program with two
//! names.
//!
//! # `rvpmu-work` (the program started under that name)
//!
//! When the basename of `argv[0]` is `rvpmu-work` (xtask installs the binary,
//! symbol table kept, as /usr/bin/rvpmu-work) the program runs one
//! workload and exits; it never touches PID 1 duties and never powers off.
//! Its user-mode instructions are known from the code (inline assembly in
//! `#[no_mangle] #[inline(never)] extern "C"` functions):
//!
//! | command | what it does | exit |
//! |---|---|---|
//! | `rvpmu-work alu N` | `rvpmu_alu_loop(N)`: 2 instructions per iteration (`addi`, `bnez`) | 0 |
//! | `rvpmu-work hot N` | `rvpmu_hot_a(3N)` then `rvpmu_hot_b(N)`: 4 instructions per iteration each (`addi`, `xor`, `addi`, `bnez`), so `cycles:u` samples fall 75% / 25% into them | 0 |
//! | `rvpmu-work spin MS` | spins in user mode (the alu loop, a vDSO clock read every 10,000 iterations) until MS ms of CLOCK_MONOTONIC have passed | 0 |
//! | `rvpmu-work ipi N` | makes the kernel send N IPIs through SBI from the CPU it runs on (it pins itself there) to the lowest other online CPU, one per read() of a context-switches event bound to that CPU; prints `rvpmu-work ipi: attempted N IPIs from cpuA to cpuB (...)` on stdout | 0; 1 with a message on stderr if fewer than 2 CPUs are online or a perf call fails |
//! | anything else (unknown workload, missing/extra argument, N not plain decimal digits or above u64) | usage on stderr | 2 |
//!
//! N and MS are plain decimal digits; 0 is allowed. `alu`, `hot` and `spin`
//! print nothing. Counting a whole process (`perf stat -e instructions:u
//! rvpmu-work alu N`), `count(alu N) - count(alu 0)` is exactly 2N when the
//! two arguments have the same number of digits (`alu 0000000`, `alu
//! 1000000`): copying and parsing the argument costs a few instructions per
//! digit, nothing else depends on N. Likewise for `hot` (16N). Measured
//! exact (2N and 16N for N = 8,000,000 and 1,000,000, Linux 6.12 and 7.2)
//! under two conditions that are the booter's: `-smp 1`, and address
//! space randomisation off (`echo 0 > /proc/sys/kernel/randomize_va_space`
//! as the plan's first command). With randomisation on, start-up varies by
//! up to ~150 user instructions run to run (alignment-dependent string
//! and memory routines); at `-smp 2` the excess grows with the run's
//! length (under icount the counters follow QEMU's instruction count,
//! which the other hart advances too).
//!
//! For `ipi`, opening, enabling and closing the event send a constant few
//! IPIs to the target, so `count(ipi N) - count(ipi 0)` = N, plus whatever
//! the kernel sends on its own meanwhile (`perf stat -a -A -e
//! r8000000000000006,r8000000000000007 taskset -c 0 rvpmu-work ipi 1000`
//! on 7.2: cpu0 sent 1005 and cpu1 received 1005, against 4 and 4 for
//! `ipi 0000`). 1000 IPIs take about 0.4 s of guest time (each read waits
//! for the other vCPU's turn). Why a perf read and not membarrier:
//! guest/ipi.rs (on Linux 7.2, expedited membarrier misses the target
//! whenever a kernel thread runs there, and then keeps missing).
//!
//! # `/init` (PID 1)
//!
//! /init mounts /proc, /sys and /dev (devtmpfs), reads `rvpmu.*` words from
//! the kernel command line and runs one mode
//! (`rvpmu.mode=boot|demo|sampling|stress|fwevents|steal|trace|plan|shell|samplecost`,
//! default demo), prints a human report, `RVPMU-RESULT {json}` lines for
//! `cargo xtask` and finally `RVPMU-DONE ok` (or `RVPMU-DONE error:
//! <why>`), then syncs and powers off (QEMU exits). Started as anything but
//! PID 1 and not as `rvpmu-work`, it prints usage and exits 2.
//!
//! ## `rvpmu.mode=plan`
//!
//! Environment: PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin,
//! HOME=/root (the rest as the kernel gave it); /root (0700) and /tmp
//! (1777) are created if absent; busybox's applet links are made when
//! /bin/busybox is there (an initramfs of our files alone has none, and
//! its plans run only our programs). /init reads `/rvpmu/plan` (a missing or
//! malformed plan is an error: `RVPMU-DONE error: ...` before any command
//! runs): UTF-8 text, one command per line, empty lines and lines starting
//! with `#` (after blanks) ignored, fields separated by TAB, the first the
//! command's name, the rest its argv (`argv[0]` looked up on PATH; no shell,
//! no quoting; an empty field is an empty argument; a trailing CR is
//! dropped). Pinning is done in argv (`taskset -c 1 ...`). Each command
//! runs in order, cwd /root, stdin /dev/null, stdout and stderr captured
//! separately (read together, so large outputs cannot deadlock), and
//! whatever its outcome the next one follows. Per command, on the console:
//!
//! ```text
//! rvpmu /init: $ <argv joined by spaces>
//! RVPMU-RESULT {"scenario":"cmd","name":"<name>","argv":["perf","stat",...],"status":0,"signal":null,"elapsed_ns":1234,"stdout":"...","stderr":"..."}
//! ```
//!
//! `status` is the exit code (null if killed by a signal or not started),
//! `signal` the killing signal (else null), `elapsed_ns` CLOCK_MONOTONIC
//! from spawn to exit (under icount: instructions of every hart), stdout
//! and stderr the captured bytes as JSON strings (non-UTF-8 bytes replaced
//! lossily by U+FFFD; control characters, DEL and C1 controls escaped as
//! `\u00XX`). A command that cannot be started has `status` and `signal`
//! null, empty stdout and the error in `stderr`. After the last command:
//! `RVPMU-DONE ok`. There is no timeout (xtask's QEMU timeout applies), and
//! a background child that keeps the command's stdout open delays its
//! result until it exits. Orphans are reaped after each command.
//!
//! ## `rvpmu.mode=shell`
//!
//! Same environment as plan, plus TERM=linux (if unset) and PS1=`rvpmu# `.
//! /init prints a banner (what is on the PATH, how to leave), then runs
//! busybox's `/bin/sh` on the console's real device (from
//! /sys/class/tty/console/active, e.g. /dev/ttyS0) as leader of a new
//! session with that terminal as its controlling tty (setsid + TIOCSCTTY),
//! so Ctrl-C, Ctrl-Z and job control work. With `/rvpmu/shell` in the
//! initramfs, the shell runs that script instead (no banner): a KVM host
//! hands its console to its KVM guest's QEMU that way. PID 1 reaps every orphan while
//! the shell runs and powers off (after sync) when the shell exits or when
//! busybox's `poweroff`, `reboot` or `halt` (without -f: SIGUSR2, SIGTERM,
//! SIGUSR1 to PID 1) asks; all three power off. Ctrl-A X quits QEMU.
//!
//! ## `rvpmu.mode=samplecost rvpmu.iters=N rvpmu.period=P`
//!
//! The guest side of the per-sample cost benchmark (boot it with `-smp 1`
//! under icount): 5 rounds, each `rvpmu_alu_loop(N)` timed with
//! CLOCK_MONOTONIC once without perf and once with an `instructions:u`
//! sampling event of period P (ring buffer mapped). One line:
//!
//! ```text
//! RVPMU-RESULT {"scenario":"samplecost","iters":N,"period":P,"rounds":[{"plain_ns":..,"sampled_ns":..,"samples":..,"lost":..,"throttle":..,"per_sample_ns":..},...],"per_sample_ns_min":..,"per_sample_ns_median":..}
//! ```
//!
//! per_sample_ns = (sampled_ns - plain_ns) / (samples + lost) (lost should
//! be 0; null without samples). What the difference includes and how large
//! the timer-tick error is: guest/samplecost.rs.
//!
//! ## The other modes
//!
//! boot, demo, sampling, stress, fwevents, steal and trace are the
//! end-to-end scenarios checked by xtask/src/suite/linux/mod.rs; their result
//! lines are documented where they are built (guest/scenarios.rs,
//! guest/steal.rs, guest/trace.rs). fwevents makes its 50 IPIs with the
//! same perf reads as `rvpmu-work ipi`.
//!
//! On any other target the program only explains itself: it is a guest
//! binary, built by `cargo xtask run` for riscv64gc-unknown-linux-gnu.
//!
//! # Modules
//!
//! The host-testable parts (command line, /proc/stat, the sample-cost
//! arithmetic, `rvpmu-work`'s arguments) are top-level modules; `guest`
//! is what runs on riscv64 Linux. The plan and the result lines are the
//! protocol shared with xtask (crate `e2e-proto`).
//!
//! ## Layering
//!
//! | module | uses |
//! |---|---|
//! | `cmdline` | |
//! | `procstat` | |
//! | `samplecost` | |
//! | `workcmd` | |
//! | `guest` | `cmdline`, `procstat`, `samplecost`, `workcmd` |

// On the host only the unit tests of these modules run; the guest code
// uses the rest.
#![cfg_attr(
    not(all(target_os = "linux", target_arch = "riscv64")),
    allow(dead_code)
)]

mod cmdline;
mod procstat;
mod samplecost;
mod workcmd;

#[cfg(all(target_os = "linux", target_arch = "riscv64"))]
mod guest;

/// Owned copies of `s` (the unit tests' argument vectors).
#[cfg(test)]
fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| s.to_string()).collect()
}

#[cfg(all(target_os = "linux", target_arch = "riscv64"))]
fn main() {
    guest::main()
}

#[cfg(not(all(target_os = "linux", target_arch = "riscv64")))]
fn main() {
    // Keep the host-only items referenced so the host build stays warning-free.
    let _ = cmdline::Params::parse("");
    let _ = procstat::parse("").map(|l| procstat::delta(&l, &l, None).map(|d| d.share()));
    eprintln!(
        "e2e-init is the /init of the riscv64 guest; build and boot it with `cargo xtask run`"
    );
    std::process::exit(2);
}
