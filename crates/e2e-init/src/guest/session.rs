//! The userland modes: `plan` runs the commands of /rvpmu/plan and reports
//! each one; `shell` gives an interactive busybox shell on the console.
//! Both run with the same environment (see [`setup_env`]).

use super::sys;
use e2e_proto::plan;
use e2e_proto::result::{CmdResult, Outcome};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

/// PATH of plan commands and of the shell.
pub const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Home and working directory of plan commands and of the shell.
pub const HOME: &str = "/root";

/// Environment and directories shared by `plan` and `shell`: PATH, HOME,
/// /root (0700) and /tmp (1777) created when absent. Called while /init
/// is single-threaded (setting the environment is not thread-safe).
fn setup_env() -> Result<(), String> {
    std::env::set_var("PATH", PATH);
    std::env::set_var("HOME", HOME);
    for (dir, mode) in [(HOME, 0o700), ("/tmp", 0o1777)] {
        if std::fs::metadata(dir).is_err() {
            std::fs::create_dir_all(dir).map_err(|e| format!("mkdir {dir}: {e}"))?;
            // Set after creation: mkdir's mode passes through the umask.
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))
                .map_err(|e| format!("chmod {dir}: {e}"))?;
        }
    }
    // Debian's busybox-static package ships only /usr/bin/busybox; the
    // applet links (sh, taskset, ...) are what `--install -s` makes, once
    // per boot (the initramfs is in RAM). xtask cannot make them: the
    // applet list lives in the riscv64 binary. An initramfs of our own
    // files alone (no Debian userland) has no busybox: its plans run our
    // programs only.
    if std::fs::symlink_metadata("/bin/sh").is_err()
        && std::fs::symlink_metadata("/bin/busybox").is_ok()
    {
        let st = Command::new("/bin/busybox")
            .args(["--install", "-s"])
            .status()
            .map_err(|e| format!("busybox --install -s: {e}"))?;
        if !st.success() {
            return Err(format!("busybox --install -s: {st}"));
        }
    }
    // Children inherit /init's working directory. (Command::current_dir
    // would not do: with it std cannot use posix_spawn from this static
    // binary and falls back to fork + a SOCK_SEQPACKET socketpair for
    // exec errors, and this kernel has no sockets: ENOSYS.)
    std::env::set_current_dir(HOME).map_err(|e| format!("chdir {HOME}: {e}"))
}

// ---------------------------------------------------------------- plan

/// `rvpmu.mode=plan`: run every command of the plan in order, whatever
/// the previous one did, and print one `RVPMU-RESULT` line after each.
pub fn plan() -> Result<(), String> {
    setup_env()?;
    let bytes =
        std::fs::read(plan::PATH).map_err(|e| format!("cannot read {}: {e}", plan::PATH))?;
    let text = String::from_utf8(bytes).map_err(|e| format!("{}: not UTF-8: {e}", plan::PATH))?;
    let cmds = plan::parse(&text)?;
    println!(
        "rvpmu /init: plan {} with {} command(s), cwd {HOME}",
        plan::PATH,
        cmds.len()
    );
    for c in &cmds {
        println!("{}", plan::announce(&c.argv));
        let _ = std::io::stdout().flush();
        let t0 = sys::monotonic_ns();
        // output() reads stdout and stderr together (poll), so a command
        // filling one pipe while we wait on the other cannot deadlock; it
        // returns once the command exited and both pipes are closed (a
        // background child still holding them delays it). stdin is
        // /dev/null.
        let run = Command::new(&c.argv[0])
            .args(&c.argv[1..])
            .stdin(Stdio::null())
            .output();
        let elapsed = sys::monotonic_ns().saturating_sub(t0);
        let json = match run {
            Ok(out) => {
                let outcome = match (out.status.code(), out.status.signal()) {
                    (Some(code), _) => Outcome::Exited(code),
                    (None, Some(sig)) => Outcome::Signalled(sig),
                    // Neither exited nor killed: cannot happen for a
                    // waited child; report the raw status.
                    (None, None) => Outcome::NotStarted(format!(
                        "unexpected wait status {:#x}",
                        out.status.into_raw()
                    )),
                };
                CmdResult::new(
                    &c.name,
                    &c.argv,
                    &outcome,
                    elapsed,
                    &out.stdout,
                    &out.stderr,
                )
            }
            Err(e) => CmdResult::new(
                &c.name,
                &c.argv,
                &Outcome::NotStarted(format!("cannot run {}: {e}", c.argv[0])),
                elapsed,
                b"",
                b"",
            ),
        }
        .to_json();
        println!("{}", e2e_proto::result_line(&json));
        // Orphans the command left behind are ours now (PID 1).
        sys::reap();
    }
    Ok(())
}

// ---------------------------------------------------------------- shell

const BANNER: &str = "\
rvpmu /init: interactive shell (busybox sh) on the console, cwd /root.
  perf                      Debian's perf: perf list, perf stat -e cycles:u,instructions:u CMD,
                            perf record -e cycles:u CMD, perf report --stdio
  rvpmu-work alu N          N iterations of a 2-instruction user loop (rvpmu_alu_loop)
  rvpmu-work hot N          3N iterations of rvpmu_hot_a, N of rvpmu_hot_b (4 instructions each):
                            cycles:u samples split 75% / 25%
  rvpmu-work spin MS        spin in user mode for MS milliseconds
  rvpmu-work ipi N          N IPIs from this CPU to another one (needs 2+ CPUs)
  busybox applets           ls, cat, taskset -c CPU CMD, dmesg, top, ...
Leave with `poweroff` (or `exit`); Ctrl-A X quits QEMU at once.";

/// Signals PID 1 waits for in the shell mode. busybox's poweroff, reboot
/// and halt without -f send SIGUSR2, SIGTERM and SIGUSR1 to PID 1; all
/// three power off here (a reboot would only boot the same guest again).
const WAITED: [libc::c_int; 4] = [libc::SIGCHLD, libc::SIGUSR1, libc::SIGUSR2, libc::SIGTERM];

/// The console's real device (`/dev/ttyS0`): /dev/console works for
/// reading and writing, but the real device is the one a session can
/// unambiguously take as its controlling terminal (what busybox's
/// cttyhack also does). The last name in /sys/class/tty/console/active is
/// the one /dev/console writes to.
fn console_device() -> String {
    std::fs::read_to_string("/sys/class/tty/console/active")
        .ok()
        .and_then(|s| s.split_whitespace().last().map(|n| format!("/dev/{n}")))
        .filter(|p| std::path::Path::new(p).exists())
        .unwrap_or_else(|| "/dev/console".to_string())
}

/// `rvpmu.mode=shell`: busybox's `/bin/sh` on the console as the leader of
/// a new session with the console as its controlling terminal, so Ctrl-C,
/// Ctrl-Z and job control work. When the initramfs has
/// [`plan::SHELL_SCRIPT`], the shell runs that script instead of reading
/// commands (a KVM host execs its KVM guest's QEMU there, which then owns
/// the console), and no banner is printed. We start the session ourselves (setsid +
/// TIOCSCTTY in the child, see [`spawn_session_leader`]) rather than
/// through `busybox setsid -c` or `cttyhack`: it needs no applet and we
/// know exactly which terminal the shell gets. Returns when the shell
/// exits or a power-off signal arrives; the caller then syncs and powers
/// off. Meanwhile PID 1 reaps every orphan.
pub fn shell() -> Result<(), String> {
    setup_env()?;
    if std::env::var_os("TERM").is_none() {
        std::env::set_var("TERM", "linux");
    }
    std::env::set_var("PS1", "rvpmu# ");

    // Block the waited signals before the shell exists, so none is lost
    // (a blocked signal is queued even for PID 1, which otherwise drops
    // signals it has no handler for) and take them with sigwaitinfo().
    // SAFETY: sigset_t is plain data, initialised by sigemptyset.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in WAITED {
            libc::sigaddset(&mut set, s);
        }
        set
    };
    // SAFETY: a valid set; /init has no other thread in this mode.
    if unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) } != 0 {
        return Err("cannot block signals".into());
    }

    if !std::path::Path::new("/bin/sh").exists() {
        return Err(
            "no /bin/sh in this initramfs (the shell mode needs the Debian userland)".into(),
        );
    }
    let dev = console_device();
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&dev)
        .map_err(|e| format!("open {dev}: {e}"))?;
    let script = std::path::Path::new(plan::SHELL_SCRIPT).is_file();
    let argv: &[&str] = if script {
        println!(
            "rvpmu /init: running {} with /bin/sh on {dev}",
            plan::SHELL_SCRIPT
        );
        &["sh", plan::SHELL_SCRIPT]
    } else {
        println!("{BANNER}");
        println!("rvpmu /init: starting /bin/sh on {dev}");
        &["sh"]
    };
    let _ = std::io::stdout().flush();

    let shell_pid = spawn_session_leader(&tty, "/bin/sh", argv)
        .map_err(|e| format!("cannot start /bin/sh: {e}"))?;
    drop(tty);

    loop {
        // SAFETY: siginfo_t is a plain C struct (integers and a union of
        // integers and pointers), for which all zeroes is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is an initialised sigset_t and `info` a live,
        // writable siginfo_t; sigwaitinfo only reads the one and fills in
        // the other, keeping neither pointer after it returns.
        let sig = unsafe { libc::sigwaitinfo(&set, &mut info) };
        if sig < 0 {
            continue; // EINTR
        }
        let reason = match sig {
            libc::SIGUSR2 => "poweroff",
            libc::SIGTERM => "reboot",
            libc::SIGUSR1 => "halt",
            _ => {
                let exited = sys::reap().into_iter().find(|&(pid, _)| pid == shell_pid);
                match exited {
                    Some((_, status)) => {
                        println!(
                            "\nrvpmu /init: the shell exited ({}); powering off",
                            describe(status)
                        );
                        return Ok(());
                    }
                    None => continue,
                }
            }
        };
        // SAFETY: si_pid is valid for signals sent by kill().
        let from = unsafe { info.si_pid() };
        println!("\nrvpmu /init: {reason} requested (pid {from}); syncing and powering off");
        return Ok(());
    }
}

/// fork + exec of `path` with `argv` (the current environment) as the
/// leader of a new session whose controlling terminal, stdin, stdout and
/// stderr are `tty`. By hand: std's Command needs fork's path for this
/// (pre_exec), and that path reports exec errors through a socketpair,
/// which this kernel (no CONFIG_NET) does not have.
fn spawn_session_leader(
    tty: &std::fs::File,
    path: &str,
    argv: &[&str],
) -> std::io::Result<libc::pid_t> {
    use std::ffi::CString;
    use std::os::fd::AsRawFd;
    let cpath = CString::new(path)?;
    let cargs: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(*a))
        .collect::<Result<_, _>>()?;
    let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let fd = tty.as_raw_fd();
    // SAFETY: /init has no other thread here; between fork and exec the
    // child makes only async-signal-safe calls on data prepared before.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: the child, see above; it exits if anything fails.
        unsafe {
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            // Rust ignores SIGPIPE, and ignored signals survive exec.
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            if libc::setsid() < 0 {
                libc::_exit(126);
            }
            for target in 0..3 {
                if fd != target && libc::dup2(fd, target) < 0 {
                    libc::_exit(126);
                }
            }
            if fd > 2 {
                libc::close(fd);
            }
            // 1: take the terminal even if another session had it.
            if libc::ioctl(0, libc::TIOCSCTTY as _, 1) < 0 {
                libc::_exit(126);
            }
            libc::execv(cpath.as_ptr(), ptrs.as_ptr());
            libc::_exit(127);
        }
    }
    Ok(pid)
}

/// "exit 0" / "signal 9" for a wait status.
fn describe(status: libc::c_int) -> String {
    if libc::WIFEXITED(status) {
        format!("exit {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("signal {}", libc::WTERMSIG(status))
    } else {
        format!("status {status:#x}")
    }
}
