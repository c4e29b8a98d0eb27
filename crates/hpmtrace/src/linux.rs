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
//! (`PERF_FORMAT_GROUP`). When every counter of the group can be read from
//! user space, that path is used instead and no system call is made: a
//! hardware counter the kernel lets user space read (`cap_user_rdpmc` in
//! the perf mmap page: x86 `rdpmc`, RISC-V counter CSRs with the sysctl
//! `kernel.perf_user_access`), or a software event whose perf page is exact
//! while the thread runs ([`UserRead::PageCount`]).

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
    /// cgroup-switches (context switches into another cgroup).
    pub const CGROUP_SWITCHES: u16 = 11;
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

fn perf_event_open(ty: u32, config: u64, group_fd: i32, read_format: u64) -> io::Result<i32> {
    let attr = PerfEventAttr {
        ty,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        read_format,
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
const PAGE_BYTES: usize = 4096;

/// How a group member is read without a system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserRead {
    /// A hardware counter the kernel lets user space read
    /// (`cap_user_rdpmc`): the page's `offset` plus `rdpmc` (x86-64) or the
    /// counter CSR (RISC-V, `perf_user_access`) named by the page's `index`.
    Counter,
    /// A software event that only counts while its thread is switched out
    /// (context-switches, cgroup-switches: the kernel counts them in
    /// `perf_event_task_sched_out`). The kernel rewrites the page's
    /// `offset` with the event count every time it schedules the event in
    /// again (`perf_swevent_add`), so whenever the thread itself runs, the
    /// page holds the exact count.
    PageCount,
}

/// The system-call-free read method of `event`, given its perf page's
/// capabilities and index, if it has one. Time-based software events
/// (task-clock, cpu-clock) and in-thread software events (page faults,
/// migrations, which the kernel counts after its last page update) have
/// none: their page value would be stale.
pub fn user_read_method(event: Event, capabilities: u64, index: u32) -> Option<UserRead> {
    match event {
        Event::LinuxSoftware {
            code: sw::CONTEXT_SWITCHES | sw::CGROUP_SWITCHES,
        } => Some(UserRead::PageCount),
        Event::LinuxSoftware { .. } => None,
        _ if cfg!(any(target_arch = "x86_64", target_arch = "riscv64"))
            && capabilities & CAP_USER_RDPMC != 0
            && index != 0 =>
        {
            Some(UserRead::Counter)
        }
        _ => None,
    }
}

/// One thread's counter group.
///
/// All members are read with one `read()` of the group leader
/// (`PERF_FORMAT_GROUP`), unless every member can be read from its perf
/// page ([`UserRead`]); then no system call is made.
pub struct PerfGroup {
    fds: Vec<i32>,
    /// Record position of each group member, in group order.
    positions: Vec<usize>,
    /// Page and read method of each member, when every member has one.
    user: Vec<(*const MmapPage, UserRead)>,
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

const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;

/// Open `events` (position, event) together for a moment and check that
/// the kernel really schedules them. `perf_event_open` accepts some events
/// that no counter can count (a raw event the platform has no mapping for
/// is only matched to a counter when the group is scheduled); such a member
/// keeps its whole group from ever counting, silently. Names the member to
/// blame. An event that does not open at all fails as in [`PerfGroup::open`].
pub fn check_group_runs(events: &[(usize, Event)]) -> Result<(), OpenError> {
    let Some(&(_, last)) = events.last() else {
        return Ok(());
    };
    let g = PerfGroup::open_fds(
        events,
        PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
    )?;
    // Give the scheduler a moment of this thread's CPU time.
    let mut x = 0u64;
    for i in 0..200_000u64 {
        x = std::hint::black_box(x.wrapping_add(i));
    }
    let mut buf = vec![0u64; 3 + events.len()];
    // SAFETY: reading a group into a buffer sized for nr + 2 times + values.
    let n = unsafe { libc::read(g.fds[0], buf.as_mut_ptr().cast(), buf.len() * 8) };
    drop(g);
    let running = buf[2];
    if n > 0 && running > 0 {
        return Ok(());
    }
    // Find the member that cannot run even alone; else blame the group.
    if events.len() > 1 {
        for &e in events {
            check_group_runs(&[e])?;
        }
    }
    Err(OpenError {
        event: last,
        error: io::Error::new(
            io::ErrorKind::Unsupported,
            "opened, but the kernel never schedules it: no counter can count it here (together with the others)",
        ),
    })
}

impl PerfGroup {
    /// Open `events` (position, event) for the calling thread. The
    /// timestamp pseudo event must not be among them.
    pub fn open(events: &[(usize, Event)]) -> Result<PerfGroup, OpenError> {
        let mut g = Self::open_fds(events, PERF_FORMAT_GROUP)?;
        g.buf = vec![0; 1 + g.fds.len()];
        let evs: Vec<Event> = events.iter().map(|&(_, e)| e).collect();
        g.map_pages(&evs);
        Ok(g)
    }

    /// Open the members, read as `read_format`; no buffer, no pages (the
    /// descriptors opened so far are closed on an error, by `Drop`).
    fn open_fds(events: &[(usize, Event)], read_format: u64) -> Result<PerfGroup, OpenError> {
        let mut g = PerfGroup {
            fds: Vec::new(),
            positions: Vec::new(),
            user: Vec::new(),
            buf: Vec::new(),
        };
        for &(pos, event) in events {
            let (ty, config) = perf_attr_of(event).ok_or(OpenError {
                event,
                error: io::Error::from_raw_os_error(libc::ENOENT),
            })?;
            let leader = g.fds.first().copied().unwrap_or(-1);
            let fd = perf_event_open(ty, config, leader, read_format)
                .map_err(|error| OpenError { event, error })?;
            g.fds.push(fd);
            g.positions.push(pos);
        }
        Ok(g)
    }

    /// Map the perf pages; keep them only if every member can be read from
    /// user space (otherwise one group read is cheaper than mixing).
    fn map_pages(&mut self, events: &[Event]) {
        if self.fds.is_empty() {
            return;
        }
        let mut user = Vec::new();
        for (&fd, &event) in self.fds.iter().zip(events) {
            // SAFETY: mapping one read-only page of a perf fd.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    PAGE_BYTES,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    fd,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                break;
            }
            let p = p as *const MmapPage;
            // SAFETY: p is a live perf mmap page; fields read volatile.
            let (caps, index) = unsafe {
                (
                    std::ptr::read_volatile(&(*p).capabilities),
                    std::ptr::read_volatile(&(*p).index),
                )
            };
            match user_read_method(event, caps, index) {
                Some(how) => user.push((p, how)),
                None => {
                    // SAFETY: unmapping what we just mapped.
                    unsafe { libc::munmap(p as *mut _, PAGE_BYTES) };
                    break;
                }
            }
        }
        if user.len() == self.fds.len() {
            self.user = user;
        } else {
            for (p, _) in user {
                // SAFETY: unmapping what we mapped above.
                unsafe { libc::munmap(p as *mut _, PAGE_BYTES) };
            }
        }
    }

    /// True when reads avoid system calls.
    pub fn user_space_reads(&self) -> bool {
        !self.user.is_empty()
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.fds.len()
    }

    /// True for a group without members.
    pub fn is_empty(&self) -> bool {
        self.fds.is_empty()
    }

    /// Read a member from its page with the kernel's seqlock protocol;
    /// `None` when the counter is not user readable right now.
    #[inline(always)]
    fn read_page(p: *const MmapPage, how: UserRead) -> Option<u64> {
        loop {
            // SAFETY: p is a live perf mmap page; fields read volatile.
            unsafe {
                let seq = std::ptr::read_volatile(&(*p).lock);
                std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
                let offset = std::ptr::read_volatile(&(*p).offset) as u64;
                let value = match how {
                    UserRead::PageCount => offset,
                    UserRead::Counter => {
                        let idx = std::ptr::read_volatile(&(*p).index);
                        let caps = std::ptr::read_volatile(&(*p).capabilities);
                        if idx == 0 || caps & CAP_USER_RDPMC == 0 {
                            return None;
                        }
                        let width = std::ptr::read_volatile(&(*p).pmc_width) as u32;
                        let mut pmc = read_pmc(idx - 1);
                        if (1..64).contains(&width) {
                            pmc = ((pmc << (64 - width)) as i64 >> (64 - width)) as u64;
                        }
                        offset.wrapping_add(pmc)
                    }
                };
                std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
                if std::ptr::read_volatile(&(*p).lock) == seq {
                    return Some(value);
                }
            }
        }
    }

    /// Read every member, in group order, into `out[0..len()]` (what the
    /// collector's hot path stores). Members `out` has no room for are
    /// skipped; on a failed read `out` is left unchanged.
    #[inline]
    pub fn read_members(&mut self, out: &mut [u64]) {
        if self.fds.is_empty() {
            return;
        }
        if !self.user.is_empty() {
            let mut ok = true;
            for (o, &(p, how)) in out.iter_mut().zip(self.user.iter()) {
                match Self::read_page(p, how) {
                    Some(v) => *o = v,
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
        self.read_syscall(out);
    }

    /// The group read system call.
    #[inline(never)]
    fn read_syscall(&mut self, out: &mut [u64]) {
        let Some(&leader) = self.fds.first() else {
            return;
        };
        let bytes = self.buf.len() * 8;
        // SAFETY: buf has room for `bytes` bytes: nr + one value per member.
        let n = unsafe { libc::read(leader, self.buf.as_mut_ptr() as *mut libc::c_void, bytes) };
        if n as usize == bytes {
            for (o, v) in out.iter_mut().zip(&self.buf[1..]) {
                *o = *v;
            }
        }
    }

    /// Read every member with the group read system call, whatever
    /// [`PerfGroup::user_space_reads`] says (to check the user-space path
    /// against the kernel, and to time the system call).
    pub fn read_members_syscall(&mut self, out: &mut [u64]) {
        self.read_syscall(out);
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read_pmc(idx: u32) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: rdpmc of a counter the kernel advertised as user readable.
    unsafe {
        std::arch::asm!("rdpmc", in("ecx") idx, out("eax") lo, out("edx") hi, options(nomem, nostack))
    };
    (hi as u64) << 32 | lo as u64
}

#[cfg(target_arch = "riscv64")]
#[inline(always)]
fn read_pmc(idx: u32) -> u64 {
    // The perf page index is the counter number + 1; `idx` is already the
    // counter number (0 cycle, 2 instret, 3.. hpmcounterN).
    crate::counters::read_user_counter(idx as u8)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "riscv64")))]
fn read_pmc(_idx: u32) -> u64 {
    0
}

impl CounterSource for PerfGroup {
    #[inline]
    fn read(&mut self, out: &mut [u64]) {
        let mut v = [0u64; crate::format::MAX_COUNTERS];
        let n = self.fds.len().min(v.len());
        for (k, &pos) in self.positions.iter().enumerate().take(n) {
            v[k] = out.get(pos).copied().unwrap_or(0);
        }
        self.read_members(&mut v[..n]);
        for (k, &pos) in self.positions.iter().enumerate().take(n) {
            if let Some(o) = out.get_mut(pos) {
                *o = v[k];
            }
        }
    }
}

impl Drop for PerfGroup {
    fn drop(&mut self) {
        for (p, _) in self.user.drain(..) {
            // SAFETY: unmapping our own page.
            unsafe { libc::munmap(p as *mut _, PAGE_BYTES) };
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

    #[test]
    fn context_switches_read_from_the_page_equal_the_kernel_count() {
        let mut g = PerfGroup::open(&[
            (
                0,
                Event::LinuxSoftware {
                    code: sw::CONTEXT_SWITCHES,
                },
            ),
            (
                1,
                Event::LinuxSoftware {
                    code: sw::CGROUP_SWITCHES,
                },
            ),
        ])
        .expect("software perf events must open on the host");
        assert!(
            g.user_space_reads(),
            "context/cgroup switches are page readable"
        );
        let mut prev = [0u64; 2];
        g.read_members_syscall(&mut prev);
        for i in 0..100 {
            // Blocking switches this thread out (at least one switch).
            std::thread::sleep(std::time::Duration::from_micros(20 + i));
            let mut page = [u64::MAX; 2];
            g.read_members(&mut page);
            let mut kernel = [u64::MAX; 2];
            g.read_members_syscall(&mut kernel);
            assert_eq!(page, kernel, "after sleep {i}");
            assert!(
                page[0] > prev[0],
                "a sleep switches out: {prev:?} -> {page:?}"
            );
            prev = page;
        }
    }

    #[test]
    fn stale_page_events_are_read_with_the_system_call() {
        for code in [
            sw::TASK_CLOCK,
            sw::CPU_CLOCK,
            sw::PAGE_FAULTS,
            sw::CPU_MIGRATIONS,
        ] {
            let e = Event::LinuxSoftware { code };
            assert_eq!(user_read_method(e, CAP_USER_RDPMC, 1), None);
            let g = PerfGroup::open(&[
                (
                    0,
                    Event::LinuxSoftware {
                        code: sw::CONTEXT_SWITCHES,
                    },
                ),
                (1, e),
            ])
            .expect("software perf events must open on the host");
            assert!(
                !g.user_space_reads(),
                "one stale member: the whole group uses read()"
            );
        }
        let cycles = Event::General {
            code: hw::CPU_CYCLES,
        };
        assert_eq!(user_read_method(cycles, 0, 1), None);
        assert_eq!(user_read_method(cycles, CAP_USER_RDPMC, 0), None);
        assert_eq!(
            user_read_method(cycles, CAP_USER_RDPMC, 3),
            Some(UserRead::Counter)
        );
    }
}
