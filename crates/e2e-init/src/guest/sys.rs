//! Small wrappers over the system calls /init needs besides perf.

use std::io;

/// Mount /proc, /sys and /dev (devtmpfs); "already mounted" is fine.
pub fn mount_pseudo_filesystems() -> Result<(), String> {
    for (src, dir, fs) in [
        ("proc", "/proc", "proc"),
        ("sysfs", "/sys", "sysfs"),
        ("devtmpfs", "/dev", "devtmpfs"),
    ] {
        let _ = std::fs::create_dir_all(dir);
        let c = |s: &str| std::ffi::CString::new(s).expect("no NUL in constant");
        let (csrc, cdir, cfs) = (c(src), c(dir), c(fs));
        // SAFETY: NUL-terminated strings that outlive the call; no data.
        let r = unsafe {
            libc::mount(
                csrc.as_ptr(),
                cdir.as_ptr(),
                cfs.as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if r != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EBUSY) {
                return Err(format!("mount {fs} on {dir}: {e}"));
            }
        }
    }
    Ok(())
}

/// Power the machine off (QEMU exits). PID 1 must never return.
pub fn power_off() -> ! {
    // SAFETY: sync and reboot take no pointers.
    unsafe {
        libc::sync();
        libc::reboot(libc::LINUX_REBOOT_CMD_POWER_OFF);
    }
    // reboot() only returns on failure; nothing sensible is left to do.
    loop {
        // SAFETY: pause() takes no arguments.
        unsafe { libc::pause() };
    }
}

/// CLOCK_MONOTONIC in nanoseconds (the vDSO's clock_gettime; under QEMU
/// icount shift=0 one nanosecond per instruction retired).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Reap every child that has exited (PID 1 inherits orphans); returns the
/// (pid, wait status) pairs. Never blocks.
pub fn reap() -> Vec<(libc::pid_t, libc::c_int)> {
    let mut out = Vec::new();
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status we pass.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return out;
        }
        out.push((pid, status));
    }
}

/// Parse a CPU list such as "0-1,3".
pub fn parse_cpu_list(s: &str) -> Vec<u32> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
            cpus.extend(a..=b);
        }
    }
    cpus
}

/// CPUs currently online.
pub fn online_cpus() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .map(|s| parse_cpu_list(&s))
        .unwrap_or_default()
}

/// Pin the calling thread to one CPU.
pub fn pin_to_cpu(cpu: u32) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET stays in bounds for cpu < 1024.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPU the calling thread runs on.
pub fn current_cpu() -> i32 {
    // SAFETY: no arguments.
    unsafe { libc::sched_getcpu() }
}

/// The kernel log (needs CONFIG_PRINTK; /init is root).
pub fn kernel_log() -> String {
    let mut buf = vec![0u8; 1 << 17];
    // SAFETY: buffer and length match; 3 = SYSLOG_ACTION_READ_ALL.
    let n = unsafe { libc::klogctl(3, buf.as_mut_ptr().cast(), buf.len() as libc::c_int) };
    if n <= 0 {
        return String::new();
    }
    buf.truncate(n as usize);
    String::from_utf8_lossy(&buf).into_owned()
}

/// (firmware, hardware) counter numbers from the riscv-pmu-sbi probe line
/// "N firmware and M hardware counters".
pub fn pmu_counter_numbers(log: &str) -> Option<(u32, u32)> {
    let line = log
        .lines()
        .find(|l| l.contains("firmware and") && l.contains("hardware counters"))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let i = words.iter().position(|w| *w == "firmware")?;
    let fw = words.get(i.checked_sub(1)?)?.parse().ok()?;
    let hw = words.get(i + 2)?.parse().ok()?;
    Some((fw, hw))
}

/// Write a sysfs/procfs file.
pub fn write_file(path: &str, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("write {value:?} to {path}: {e}"))
}

/// A raw system call with up to three integer arguments.
pub fn syscall3(nr: libc::c_long, a: usize, b: usize, c: usize) -> io::Result<libc::c_long> {
    // SAFETY: callers pass integer arguments only (no pointers the kernel
    // writes through) for the calls used here (riscv_flush_icache).
    let r = unsafe { libc::syscall(nr, a, b, c) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}
