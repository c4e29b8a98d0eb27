//! The perf mmap page of a counter and the system-call-free reads it
//! allows ([`UserRead`]): the seqlock protocol, `rdpmc` on x86-64 and the
//! counter CSRs on RISC-V.

use super::events::sw;
use crate::format::Event;

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

/// A counter's perf page, mapped read-only (unmapped with [`Self::unmap`]
/// by its owner).
#[derive(Clone, Copy)]
pub(super) struct PerfPage(*const MmapPage);

impl PerfPage {
    /// Map the perf page of counter `fd`; `None` if the kernel refuses.
    pub(super) fn map(fd: i32) -> Option<PerfPage> {
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
        (p != libc::MAP_FAILED).then_some(PerfPage(p as *const MmapPage))
    }

    /// Unmap the page.
    ///
    /// # Safety
    /// `self` (and every copy of it) must not be used afterwards.
    pub(super) unsafe fn unmap(self) {
        // SAFETY: the page was mapped by `map` with this length.
        libc::munmap(self.0 as *mut _, PAGE_BYTES);
    }

    /// The page's capabilities and counter index, as the read method needs.
    pub(super) fn capabilities_and_index(self) -> (u64, u32) {
        let p = self.0;
        // SAFETY: p is a live perf mmap page; fields read volatile.
        unsafe {
            (
                std::ptr::read_volatile(&(*p).capabilities),
                std::ptr::read_volatile(&(*p).index),
            )
        }
    }

    /// `fields(page)` as of one moment: retried while the kernel rewrote
    /// the page meanwhile (its seqlock, `lock`). `fields` gets the page as
    /// a raw pointer: the kernel writes the page, so no reference to it is
    /// made and every field is read volatile.
    #[inline(always)]
    fn consistent<T>(self, fields: impl Fn(*const MmapPage) -> T) -> T {
        let p = self.0;
        loop {
            // SAFETY: p is a live perf mmap page (unmapped only by
            // `unmap`, after which no copy is used); read volatile.
            let seq = unsafe { std::ptr::read_volatile(&raw const (*p).lock) };
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
            let v = fields(p);
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
            // SAFETY: as above.
            if unsafe { std::ptr::read_volatile(&raw const (*p).lock) } == seq {
                return v;
            }
        }
    }

    /// [`PerfPage::read`] of a [`UserRead::PageCount`] member (always
    /// readable): one load, no seqlock. The count is the page's one
    /// field `offset` (`index` stays 0 for a software event), which the
    /// kernel rewrites while the thread is switched out, never while it
    /// runs (see [`UserRead::PageCount`]); and an aligned 8-byte load is
    /// single-copy atomic on x86-64 and RV64, so it sees a whole value
    /// either way. A seqlock retry loop would add its loads and test to
    /// every counter read of the hook.
    #[inline(always)]
    pub(super) fn read_count(self) -> u64 {
        // SAFETY: a field of the live page (unmapped only by `unmap`,
        // after which no copy is used), read volatile: the kernel writes it.
        unsafe { std::ptr::read_volatile(&raw const (*self.0).offset) as u64 }
    }

    /// Read the counter from its page with the kernel's seqlock protocol;
    /// `None` when the counter is not user readable right now.
    #[inline(always)]
    pub(super) fn read(self, how: UserRead) -> Option<u64> {
        match how {
            UserRead::PageCount => Some(self.read_count()),
            // SAFETY: fields of the live page (see `consistent`).
            UserRead::Counter => self.consistent(|p| unsafe {
                let offset = std::ptr::read_volatile(&raw const (*p).offset) as u64;
                let idx = std::ptr::read_volatile(&raw const (*p).index);
                let caps = std::ptr::read_volatile(&raw const (*p).capabilities);
                if idx == 0 || caps & CAP_USER_RDPMC == 0 {
                    return None;
                }
                let width = std::ptr::read_volatile(&raw const (*p).pmc_width) as u32;
                let mut pmc = read_pmc(idx - 1);
                if (1..64).contains(&width) {
                    pmc = ((pmc << (64 - width)) as i64 >> (64 - width)) as u64;
                }
                Some(offset.wrapping_add(pmc))
            }),
        }
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

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::format::hw;

    /// Software events whose perf page is stale while the thread runs
    /// (their counts move in the kernel between page updates).
    pub(in crate::linux) const STALE_PAGE_EVENTS: [u16; 4] = [
        sw::TASK_CLOCK,
        sw::CPU_CLOCK,
        sw::PAGE_FAULTS,
        sw::CPU_MIGRATIONS,
    ];

    #[test]
    fn stale_page_events_have_no_user_read() {
        for code in STALE_PAGE_EVENTS {
            let e = Event::LinuxSoftware { code };
            assert_eq!(user_read_method(e, CAP_USER_RDPMC, 1), None);
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
