//! A thread's counters as one perf group: opened together, read with one
//! `read()` or, when every member allows it, from their perf pages.

use super::events::perf_attr_of;
use super::mmap_page::{
    page_count, read_registers, user_read_method, PageFields, PerfPage, UserRead,
};
use super::perf_event::{
    perf_event_open, PERF_FORMAT_GROUP, PERF_FORMAT_TOTAL_TIME_ENABLED,
    PERF_FORMAT_TOTAL_TIME_RUNNING,
};
use crate::format::Event;
use std::io;
use std::sync::atomic::{compiler_fence, Ordering};

/// One thread's counter group.
///
/// All members are read with one `read()` of the group leader
/// (`PERF_FORMAT_GROUP`), unless every member can be read from its perf
/// page ([`UserRead`]); then no system call is made.
pub struct PerfGroup {
    fds: Vec<i32>,
    /// Each member's perf page, when every member has a [`UserRead`]
    /// (else empty).
    pages: Vec<PerfPage>,
    /// Whether any member is a [`UserRead::Counter`]: a register to read
    /// ([`PerfGroup::read_with_registers`]), else only page counts
    /// ([`PerfPage::read_count`]).
    registers: bool,
    /// Per member, whether it is a [`UserRead::Counter`] and what one
    /// read of the pages takes (kept here so that a read allocates
    /// nothing), and the register indices and values as
    /// [`read_registers`] takes and gives them.
    reads: Vec<PageRead>,
    index: Vec<u32>,
    pmc: Vec<u64>,
    /// The system call's buffer: nr + one value per member.
    buf: Vec<u64>,
}

/// A member of a group read from its page: whether it is a
/// [`UserRead::Counter`], its page's `lock` as read before its fields,
/// and the fields.
#[derive(Clone, Copy)]
struct PageRead {
    counter: bool,
    lock: u32,
    fields: PageFields,
}

// SAFETY: the raw pointers are mmap pages owned by this group (unmapped
// on drop), not shared with any other value.
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
        match self.error.raw_os_error() {
            Some(libc::ENOENT | libc::EOPNOTSUPP) => {
                f.write_str(" (this machine has no such hardware event)")
            }
            Some(libc::EACCES) => f.write_str(" (lower /proc/sys/kernel/perf_event_paranoid)"),
            _ => Ok(()),
        }
    }
}

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
        let n = g.fds.len();
        g.buf = vec![0; 1 + n];
        g.index = vec![0; n];
        g.pmc = vec![0; n];
        g.map_pages(events);
        Ok(g)
    }

    /// Open the members, read as `read_format`; no buffer, no pages (the
    /// descriptors opened so far are closed on an error, by `Drop`).
    fn open_fds(events: &[(usize, Event)], read_format: u64) -> Result<PerfGroup, OpenError> {
        let mut g = PerfGroup {
            fds: Vec::new(),
            pages: Vec::new(),
            registers: false,
            reads: Vec::new(),
            index: Vec::new(),
            pmc: Vec::new(),
            buf: Vec::new(),
        };
        for &(_, event) in events {
            let (ty, config) = perf_attr_of(event).ok_or(OpenError {
                event,
                error: io::Error::from_raw_os_error(libc::ENOENT),
            })?;
            let leader = g.fds.first().copied().unwrap_or(-1);
            let fd = perf_event_open(ty, config, leader, read_format)
                .map_err(|error| OpenError { event, error })?;
            g.fds.push(fd);
        }
        Ok(g)
    }

    /// Map the perf pages; keep them only if every member can be read from
    /// user space (otherwise one group read is cheaper than mixing).
    fn map_pages(&mut self, events: &[(usize, Event)]) {
        for (&fd, &(_, event)) in self.fds.iter().zip(events) {
            let Some(page) = PerfPage::map(fd) else {
                break;
            };
            self.pages.push(page);
            let (caps, index) = page.capabilities_and_index();
            let Some(how) = user_read_method(event, caps, index) else {
                break;
            };
            self.reads.push(PageRead {
                counter: how == UserRead::Counter,
                lock: 0,
                fields: PageFields::default(),
            });
        }
        if self.reads.len() < self.fds.len() {
            self.reads.clear();
            for page in self.pages.drain(..) {
                // SAFETY: unmapping what we mapped above, never used again.
                unsafe { page.unmap() };
            }
        }
        self.registers = self.reads.iter().any(|r| r.counter);
    }

    /// True when reads avoid system calls.
    pub fn user_space_reads(&self) -> bool {
        !self.pages.is_empty()
    }

    /// Read every member, in group order, into `out[0..len()]` (what the
    /// collector's hot path stores). Members `out` has no room for are
    /// skipped.
    #[inline(always)]
    pub fn read_members(&mut self, out: &mut [u64]) {
        if self.fds.is_empty() {
            return;
        }
        let read = if self.pages.is_empty() {
            false
        } else if self.registers {
            self.read_with_registers(out)
        } else {
            read_counts(&self.pages, out)
        };
        if !read {
            self.read_members_syscall(out);
        }
    }

    /// Read every member of a group with hardware counters from its perf
    /// page as the uapi header documents it: each page's `index`,
    /// `offset` and register between two reads of its `lock`, again while
    /// one of them changed. The registers of all members are read in one
    /// go after the pages' fields ([`read_registers`]): two members'
    /// registers are then read a fixed number of instructions apart,
    /// whatever the compiler makes of this code and wherever it inlines
    /// it. False when a hardware member is not on a user-readable
    /// register right now. Out of line, so that the hook of a group
    /// without registers stays small.
    #[inline(never)]
    fn read_with_registers(&mut self, out: &mut [u64]) -> bool {
        let n = self.pages.len().min(out.len());
        let (pages, reads) = (&self.pages[..n], &mut self.reads[..n]);
        let (index, pmc) = (&mut self.index[..n], &mut self.pmc[..n]);
        'read: loop {
            for ((r, i), p) in reads.iter_mut().zip(index.iter_mut()).zip(pages) {
                r.lock = p.lock();
                compiler_fence(Ordering::SeqCst);
                r.fields = p.fields();
                *i = r.fields.index;
            }
            read_registers(index, pmc);
            compiler_fence(Ordering::SeqCst);
            for (((o, r), p), &v) in out.iter_mut().zip(reads.iter()).zip(pages).zip(pmc.iter()) {
                if p.lock() != r.lock {
                    continue 'read;
                }
                // A hardware counter off its register has no count here.
                if r.counter && r.fields.index == 0 {
                    return false;
                }
                *o = page_count(r.fields, v);
            }
            return true;
        }
    }

    /// Read every member with the group read system call, whatever
    /// [`PerfGroup::user_space_reads`] says (the fallback of
    /// [`PerfGroup::read_members`]; also to check the user-space path
    /// against the kernel, and to time the system call).
    #[inline(never)]
    pub fn read_members_syscall(&mut self, out: &mut [u64]) {
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
}

/// The page counts of `pages` into `out`, as far as both go
/// ([`PerfPage::read_count`]); false, with `out` partly written, when a
/// page names a register.
#[inline(always)]
fn read_counts(pages: &[PerfPage], out: &mut [u64]) -> bool {
    for (o, p) in out.iter_mut().zip(pages) {
        match p.read_count() {
            Some(v) => *o = v,
            None => return false,
        }
    }
    true
}

impl Drop for PerfGroup {
    fn drop(&mut self) {
        for page in self.pages.drain(..) {
            // SAFETY: unmapping our own page, never used again.
            unsafe { page.unmap() };
        }
        for &fd in &self.fds {
            // SAFETY: closing our own fd.
            unsafe { libc::close(fd) };
        }
    }
}
