//! Linux counter source (`perf_event_open`), trace clock and per-thread
//! sampling timer.
//!
//! Events are named in the SBI encoding ([`Event`]) and mapped to perf
//! attributes: general events to `PERF_TYPE_HARDWARE`, cache events to
//! `PERF_TYPE_HW_CACHE` (the SBI and perf cache/op/result ids coincide),
//! raw events to `PERF_TYPE_RAW` with `event_data` as config (what the
//! RISC-V SBI PMU driver expects), Linux software events to
//! `PERF_TYPE_SOFTWARE`.
//!
//! All counters of a thread form one group read with one `read()`
//! (`PERF_FORMAT_GROUP`). When the kernel lets user space read a counter
//! directly (`cap_user_rdpmc` in the perf mmap page, x86 `rdpmc` or RISC-V
//! counter CSRs with `perf_user_access`), that path is used instead and no
//! system call is made.

use crate::counters::{Clock, CounterSource};
use crate::format::{hw, Event};
use std::io;

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_TYPE_HW_CACHE: u32 = 3;
const PERF_TYPE_RAW: u32 = 4;
const PERF_FORMAT_GROUP: u64 = 1 << 3;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// `PERF_COUNT_SW_*` values used by the host fallback.
pub mod sw {
    /// cpu-clock (ns).
    pub const CPU_CLOCK: u16 = 0;
    /// task-clock (ns of CPU time of the thread).
    pub const TASK_CLOCK: u16 = 1;
    /// page-faults.
    pub const PAGE_FAULTS: u16 = 2;
    /// context-switches.
    pub const CONTEXT_SWITCHES: u16 = 3;
    /// cpu-migrations.
    pub const CPU_MIGRATIONS: u16 = 4;
    /// minor page faults.
    pub const PAGE_FAULTS_MIN: u16 = 5;
}

/// perf's `(type, config)` for an event, or `None` if it has no perf
/// equivalent (the timestamp pseudo event, unknown general codes).
pub fn perf_attr_of(e: Event) -> Option<(u32, u64)> {
    match e {
        Event::General { code } => {
            // SBI general codes 1..=10 are perf's PERF_COUNT_HW_* + 1.
            if (hw::CPU_CYCLES..=hw::REF_CPU_CYCLES).contains(&code) {
                Some((PERF_TYPE_HARDWARE, code as u64 - 1))
            } else {
                None
            }
        }
        Event::Cache {
            cache_id,
            op_id,
            result_id,
        } => Some((
            PERF_TYPE_HW_CACHE,
            cache_id as u64 | (op_id as u64) << 8 | (result_id as u64) << 16,
        )),
        Event::Raw { event_data } => Some((PERF_TYPE_RAW, event_data)),
        Event::LinuxSoftware { code } => Some((PERF_TYPE_SOFTWARE, code as u64)),
    }
}

/// The software event a host without hardware counters counts instead of
/// `e` (a stand-in so collection runs; the header names what was really
/// counted). Time-like events become task-clock, the rest distinct
/// software counters so every slot stays a separate counter.
pub fn software_stand_in(e: Event) -> Event {
    let code = match e {
        Event::General {
            code: hw::CPU_CYCLES | hw::REF_CPU_CYCLES | hw::BUS_CYCLES,
        } => sw::TASK_CLOCK,
        Event::General {
            code: hw::INSTRUCTIONS,
        } => sw::CPU_CLOCK,
        Event::General {
            code: hw::CACHE_REFERENCES | hw::CACHE_MISSES,
        } => sw::PAGE_FAULTS,
        Event::General {
            code: hw::BRANCH_INSTRUCTIONS,
        } => sw::CONTEXT_SWITCHES,
        Event::General {
            code: hw::BRANCH_MISSES,
        } => sw::CPU_MIGRATIONS,
        Event::LinuxSoftware { code } => code,
        _ => sw::PAGE_FAULTS_MIN,
    };
    Event::LinuxSoftware { code }
}

/// `struct perf_event_attr`, first 64 bytes (PERF_ATTR_SIZE_VER0).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    ty: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

fn perf_event_open(ty: u32, config: u64, group_fd: i32) -> io::Result<i32> {
    let attr = PerfEventAttr {
        ty,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        read_format: PERF_FORMAT_GROUP,
        // Software events fire in the kernel on the thread's behalf (page
        // faults, switches): excluding the kernel would hide them all.
        flags: if ty == PERF_TYPE_SOFTWARE {
            0
        } else {
            FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV
        },
        ..Default::default()
    };
    // SAFETY: attr is a valid, initialised perf_event_attr of the size it
    // declares; pid 0 / cpu -1 = the calling thread on any CPU.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            0 as libc::c_long,
            -1 as libc::c_long,
            group_fd as libc::c_long,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd as i32)
    }
}

/// The perf mmap page fields the user-space read needs.
#[repr(C)]
struct MmapPage {
    version: u32,
    compat_version: u32,
    lock: u32,
    index: u32,
    offset: i64,
    time_enabled: u64,
    time_running: u64,
    capabilities: u64,
    pmc_width: u16,
}

const CAP_USER_RDPMC: u64 = 1 << 2;

/// One thread's counter group.
pub struct PerfGroup {
    fds: Vec<i32>,
    /// Record position of each group member, in group order.
    positions: Vec<usize>,
    /// mmap pages (one per member) when every member is user-readable.
    pages: Vec<*const MmapPage>,
    buf: Vec<u64>,
}

// The raw pointers are mmap pages owned by this group.
unsafe impl Send for PerfGroup {}

/// A counter that could not be opened.
#[derive(Debug)]
pub struct OpenError {
    /// The event.
    pub event: Event,
    /// The OS error.
    pub error: io::Error,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "perf_event_open for {:?} failed: {}",
            self.event, self.error
        )?;
        if self.error.raw_os_error() == Some(libc::ENOENT)
            || self.error.raw_os_error() == Some(libc::EOPNOTSUPP)
        {
            write!(f, " (this machine has no such hardware event; use software events, e.g. HPMTRACE_SW_FALLBACK=1)")?;
        } else if self.error.raw_os_error() == Some(libc::EACCES) {
            write!(f, " (lower /proc/sys/kernel/perf_event_paranoid)")?;
        }
        Ok(())
    }
}

impl PerfGroup {
    /// Open `events` (position, event) for the calling thread. The
    /// timestamp pseudo event must not be among them.
    pub fn open(events: &[(usize, Event)]) -> Result<PerfGroup, OpenError> {
        let mut g = PerfGroup {
            fds: Vec::new(),
            positions: Vec::new(),
            pages: Vec::new(),
            buf: Vec::new(),
        };
        for &(pos, event) in events {
            let (ty, config) = perf_attr_of(event).ok_or(OpenError {
                event,
                error: io::Error::from_raw_os_error(libc::ENOENT),
            })?;
            let leader = g.fds.first().copied().unwrap_or(-1);
            let fd =
                perf_event_open(ty, config, leader).map_err(|error| OpenError { event, error })?;
            g.fds.push(fd);
            g.positions.push(pos);
        }
        g.buf = vec![0; 1 + g.fds.len()];
        g.map_pages();
        Ok(g)
    }

    /// Map the perf pages; keep them only if every member can be read from
    /// user space (otherwise one group read is cheaper than mixing).
    fn map_pages(&mut self) {
        if !cfg!(any(target_arch = "x86_64", target_arch = "riscv64")) || self.fds.is_empty() {
            return;
        }
        let page = 4096;
        let mut pages = Vec::new();
        for &fd in &self.fds {
            // SAFETY: mapping one read-only page of a perf fd.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    page,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    fd,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                break;
            }
            pages.push(p as *const MmapPage);
        }
        let usable = pages.len() == self.fds.len()
            && pages.iter().all(|&p| {
                // SAFETY: p is a live perf mmap page.
                let m = unsafe { &*p };
                m.capabilities & CAP_USER_RDPMC != 0
                    && unsafe { std::ptr::read_volatile(&m.index) } != 0
            });
        if usable {
            self.pages = pages;
        } else {
            for p in pages {
                // SAFETY: unmapping what we mapped above.
                unsafe { libc::munmap(p as *mut _, page) };
            }
        }
    }

    /// True when reads avoid system calls.
    pub fn user_space_reads(&self) -> bool {
        !self.pages.is_empty()
    }

    fn read_mmap(p: *const MmapPage) -> Option<u64> {
        // The kernel's seqlock protocol for the perf user page.
        loop {
            // SAFETY: p is a live perf mmap page; fields read volatile.
            unsafe {
                let seq = std::ptr::read_volatile(&(*p).lock);
                std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
                let idx = std::ptr::read_volatile(&(*p).index);
                let offset = std::ptr::read_volatile(&(*p).offset);
                let caps = std::ptr::read_volatile(&(*p).capabilities);
                if idx == 0 || caps & CAP_USER_RDPMC == 0 {
                    return None;
                }
                let width = std::ptr::read_volatile(&(*p).pmc_width) as u32;
                let mut pmc = read_pmc(idx - 1);
                if (1..64).contains(&width) {
                    pmc = ((pmc << (64 - width)) as i64 >> (64 - width)) as u64;
                }
                std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
                if std::ptr::read_volatile(&(*p).lock) == seq {
                    return Some((offset as u64).wrapping_add(pmc));
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn read_pmc(idx: u32) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: rdpmc of a counter the kernel advertised as user readable.
    unsafe {
        std::arch::asm!("rdpmc", in("ecx") idx, out("eax") lo, out("edx") hi, options(nomem, nostack))
    };
    (hi as u64) << 32 | lo as u64
}

#[cfg(target_arch = "riscv64")]
fn read_pmc(idx: u32) -> u64 {
    // On RISC-V the perf page index is the counter number + 1.
    crate::counters::read_user_counter(idx as u8)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "riscv64")))]
fn read_pmc(_idx: u32) -> u64 {
    0
}

impl CounterSource for PerfGroup {
    #[inline]
    fn read(&mut self, out: &mut [u64]) {
        if !self.pages.is_empty() {
            let mut ok = true;
            for (k, &p) in self.pages.iter().enumerate() {
                match Self::read_mmap(p) {
                    Some(v) => out[self.positions[k]] = v,
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                return;
            }
        }
        let Some(&leader) = self.fds.first() else {
            return;
        };
        let bytes = self.buf.len() * 8;
        // SAFETY: buf has room for `bytes` bytes: nr + one value per member.
        let n = unsafe { libc::read(leader, self.buf.as_mut_ptr() as *mut libc::c_void, bytes) };
        if n as usize == bytes {
            for (k, &pos) in self.positions.iter().enumerate() {
                out[pos] = self.buf[1 + k];
            }
        }
    }
}

impl Drop for PerfGroup {
    fn drop(&mut self) {
        for p in self.pages.drain(..) {
            // SAFETY: unmapping our own page.
            unsafe { libc::munmap(p as *mut _, 4096) };
        }
        for &fd in &self.fds {
            // SAFETY: closing our own fd.
            unsafe { libc::close(fd) };
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds (vDSO, no system call).
pub struct MonotonicNs;

impl Clock for MonotonicNs {
    #[inline]
    fn now(&self) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid out pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

/// The trace clock of the Linux collector, standing in for the trace
/// encoder's timestamp counter: the `time` CSR on RISC-V (what SiFive
/// encoders count), the TSC on x86-64 (invariant TSC; ~4x cheaper than
/// `clock_gettime` in a VM), `CLOCK_MONOTONIC` ns elsewhere.
pub struct TraceClock;

impl Clock for TraceClock {
    #[inline(always)]
    fn now(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: rdtsc has no side effects.
            unsafe { core::arch::x86_64::_rdtsc() }
        }
        #[cfg(target_arch = "riscv64")]
        {
            let v: u64;
            // SAFETY: reading `time` has no side effects (Linux lets user
            // space read it).
            unsafe { core::arch::asm!("rdtime {0}", out(reg) v) };
            v
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "riscv64")))]
        {
            MonotonicNs.now()
        }
    }
}

/// The interrupted program counter in a signal handler's ucontext.
///
/// # Safety
/// `uc` must be the third argument of an `SA_SIGINFO` handler.
pub unsafe fn interrupted_pc(uc: *const libc::c_void) -> u64 {
    let uc = uc as *const libc::ucontext_t;
    #[cfg(target_arch = "x86_64")]
    {
        (*uc).uc_mcontext.gregs[libc::REG_RIP as usize] as u64
    }
    #[cfg(target_arch = "riscv64")]
    {
        (*uc).uc_mcontext.__gregs[0] as u64
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "riscv64")))]
    {
        let _ = uc;
        0
    }
}

/// The kernel thread id of the caller.
pub fn gettid() -> i32 {
    // SAFETY: no arguments.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// A POSIX timer delivering `signo` to one thread every `interval_us`.
pub struct ThreadTimer {
    id: libc::timer_t,
}

// timer_t is an opaque id.
unsafe impl Send for ThreadTimer {}

impl ThreadTimer {
    /// Start a CLOCK_MONOTONIC timer for thread `tid`.
    pub fn start(tid: i32, signo: i32, interval_us: u64) -> io::Result<ThreadTimer> {
        // SAFETY: zeroed sigevent is a valid starting point.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = signo;
        sev.sigev_notify_thread_id = tid;
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid pointers.
        if unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut id) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let iv = libc::timespec {
            tv_sec: (interval_us / 1_000_000) as _,
            tv_nsec: ((interval_us % 1_000_000) * 1000) as _,
        };
        let spec = libc::itimerspec {
            it_interval: iv,
            it_value: iv,
        };
        // SAFETY: id was just created.
        if unsafe { libc::timer_settime(id, 0, &spec, std::ptr::null_mut()) } != 0 {
            let e = io::Error::last_os_error();
            unsafe { libc::timer_delete(id) };
            return Err(e);
        }
        Ok(ThreadTimer { id })
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        // SAFETY: deleting our own timer.
        unsafe { libc::timer_delete(self.id) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbi_events_map_to_perf() {
        assert_eq!(
            perf_attr_of(Event::General {
                code: hw::CPU_CYCLES
            }),
            Some((0, 0))
        );
        assert_eq!(
            perf_attr_of(Event::General {
                code: hw::BRANCH_MISSES
            }),
            Some((0, 5))
        );
        assert_eq!(
            perf_attr_of(Event::General {
                code: hw::TIMESTAMP
            }),
            None
        );
        assert_eq!(
            perf_attr_of(Event::Cache {
                cache_id: 2,
                op_id: 0,
                result_id: 1
            }),
            Some((3, 2 | 1 << 16))
        );
        assert_eq!(
            perf_attr_of(Event::Raw {
                event_data: 0x20000
            }),
            Some((4, 0x20000))
        );
    }

    #[test]
    fn software_group_counts_task_clock() {
        let mut g = PerfGroup::open(&[
            (
                0,
                Event::LinuxSoftware {
                    code: sw::TASK_CLOCK,
                },
            ),
            (
                1,
                Event::LinuxSoftware {
                    code: sw::PAGE_FAULTS,
                },
            ),
        ])
        .expect("software perf events must open on the host");
        let mut a = [0u64; 2];
        g.read(&mut a);
        // Touch 16 MiB of fresh memory: page faults and CPU time.
        let mut v: Vec<u8> = Vec::with_capacity(1 << 24);
        for i in 0..(1 << 24) {
            v.push(i as u8);
        }
        std::hint::black_box(&v);
        let mut b = [0u64; 2];
        g.read(&mut b);
        assert!(b[0] > a[0], "task-clock advances: {a:?} -> {b:?}");
        assert!(b[1] > a[1], "page faults counted: {a:?} -> {b:?}");
    }
}
