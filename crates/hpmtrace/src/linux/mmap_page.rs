//! The perf mmap page of a counter and the system-call-free reads it
//! allows ([`UserRead`]), as `include/uapi/linux/perf_event.h` documents
//! them (`struct perf_event_mmap_page`): `offset` plus, for a counter on a
//! user-readable register (`cap_user_rdpmc`, `index` non-zero), that
//! register (`rdpmc` on x86-64, the counter CSRs on RISC-V), all read
//! between two reads of the page's `lock` and again while it changed.

use super::events::sw;
use crate::format::Event;
use std::sync::atomic::{compiler_fence, Ordering};

/// The head of `struct perf_event_mmap_page` (the fields up to
/// `pmc_width` the read needs; the layout is the uapi header's).
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

/// Field `$f` of the page `$p` points to, read volatile: the kernel
/// writes it, so no reference to the page is made. In an `unsafe` block
/// whose page is live (unmapped only by `unmap`, after which no copy is
/// used).
macro_rules! field {
    ($p:expr, $f:ident) => {
        std::ptr::read_volatile(&raw const (*$p).$f)
    };
}

const CAP_USER_RDPMC: u64 = 1 << 2;
const PAGE_BYTES: usize = 4096;

/// How a group member is read without a system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserRead {
    /// A hardware counter the kernel lets user space read
    /// (`cap_user_rdpmc`; on RISC-V with the sysctl
    /// `kernel.perf_user_access`): the page's `offset` plus the register its
    /// `index` names. While the event is not on a register (`index` 0)
    /// the group is read with the system call.
    Counter,
    /// A software event that only counts while its thread is switched out
    /// (context-switches, cgroup-switches: the kernel counts them in
    /// `perf_event_task_sched_out`). Its `index` is 0, so its count is the
    /// page's `offset`, which the kernel rewrites with the event count
    /// every time it schedules the event in again (`perf_swevent_add`):
    /// whenever the thread itself runs, the page holds the exact count.
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

/// What one read of a page between two reads of its `lock` gives.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PageFields {
    /// `offset`: the count, or the count less the register's value.
    pub(super) offset: u64,
    /// `index` when the register it names may be read (`cap_user_rdpmc`),
    /// else 0.
    pub(super) index: u32,
    /// `pmc_width`: the register's width, for sign extension.
    pub(super) width: u16,
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
        // SAFETY: fields of the live page, read volatile (`field!`).
        unsafe { (field!(self.0, capabilities), field!(self.0, index)) }
    }

    /// The page's `lock`, the sequence count the kernel changes around
    /// every update of the page.
    #[inline(always)]
    pub(super) fn lock(self) -> u32 {
        // SAFETY: a field of the live page, read volatile (`field!`).
        unsafe { field!(self.0, lock) }
    }

    /// The count of a counter that is not on a register (`index` 0, as
    /// for every software event), read as the uapi header documents it:
    /// `offset` between two reads of `lock` that agree. `None` when
    /// `index` names a register.
    #[inline(always)]
    pub(super) fn read_count(self) -> Option<u64> {
        let p = self.0;
        loop {
            let seq = self.lock();
            compiler_fence(Ordering::SeqCst);
            // SAFETY: fields of the live page, read volatile (`field!`).
            let (index, offset) = unsafe { (field!(p, index), field!(p, offset) as u64) };
            compiler_fence(Ordering::SeqCst);
            if self.lock() == seq {
                return (index == 0).then_some(offset);
            }
        }
    }

    /// `index`, `offset` and `pmc_width`, to be read between two reads of
    /// [`Self::lock`] that agree. `capabilities` and `pmc_width` only
    /// matter for a register, so they are read only when `index` names
    /// one.
    #[inline(always)]
    pub(super) fn fields(self) -> PageFields {
        let p = self.0;
        // SAFETY: fields of the live page, read volatile (`field!`).
        unsafe {
            let index = field!(p, index);
            let offset = field!(p, offset) as u64;
            if index == 0 {
                return PageFields {
                    offset,
                    index: 0,
                    width: 0,
                };
            }
            let caps = field!(p, capabilities);
            PageFields {
                offset,
                index: if caps & CAP_USER_RDPMC != 0 { index } else { 0 },
                width: field!(p, pmc_width),
            }
        }
    }
}

/// The count of a page whose fields are `f` and whose register (if
/// `f.index` names one) read `pmc`: `offset` plus the register's value
/// sign-extended from its width, as the uapi header computes it.
#[inline(always)]
pub(super) fn page_count(f: PageFields, pmc: u64) -> u64 {
    if f.index == 0 {
        return f.offset;
    }
    let shift = 64 - (f.width as u32).clamp(1, 64);
    f.offset
        .wrapping_add((((pmc << shift) as i64) >> shift) as u64)
}

/// Read the registers the perf pages' `index` fields name into `out`
/// (index 0: 0), all in one go: see
/// [`crate::counters::read_user_counters`].
#[cfg(target_arch = "riscv64")]
#[inline(always)]
pub(super) fn read_registers(index: &[u32], out: &mut [u64]) {
    crate::counters::read_user_counters(index, out);
}

/// Read the registers the perf pages' `index` fields name into `out`
/// (index 0: 0) with `rdpmc`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn read_registers(index: &[u32], out: &mut [u64]) {
    for (o, &i) in out.iter_mut().zip(index) {
        *o = match i {
            0 => 0,
            i => {
                let (lo, hi): (u32, u32);
                // SAFETY: rdpmc of a counter the kernel advertised as user
                // readable (`cap_user_rdpmc`, non-zero index).
                unsafe {
                    std::arch::asm!("rdpmc", in("ecx") i - 1, out("eax") lo, out("edx") hi, options(nomem, nostack))
                };
                (hi as u64) << 32 | lo as u64
            }
        }
    }
}

/// No user-readable registers on other architectures
/// ([`user_read_method`] gives them no [`UserRead::Counter`]).
#[cfg(not(any(target_arch = "x86_64", target_arch = "riscv64")))]
pub(super) fn read_registers(_index: &[u32], out: &mut [u64]) {
    out.fill(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_register_is_sign_extended_from_its_width_and_added_to_offset() {
        let f = |offset: u64, index, width| PageFields {
            offset,
            index,
            width,
        };
        assert_eq!(page_count(f(7, 0, 0), 123), 7, "no register: offset");
        assert_eq!(page_count(f(100, 1, 48), 5), 105);
        // A 48-bit register at 2^48 - 1 is -1: offset counts it in.
        assert_eq!(page_count(f(100, 1, 48), (1 << 48) - 1), 99);
        assert_eq!(page_count(f(1, 2, 64), u64::MAX), 0);
    }
}
