//! Per-hart shared-memory pages handed to the firmware by physical address
//! (the kernel runs with satp = 0, so addresses are physical). All accesses
//! are volatile: the firmware writes them behind the compiler's back.

use crate::rt::MAX_HARTS;
use core::ptr::{addr_of_mut, read_volatile, write_volatile};

#[repr(C, align(4096))]
struct Page([u8; 4096]);

const ZERO: Page = Page([0; 4096]);

/// The kinds of shared memory the checks use, one page each per hart.
#[derive(Clone, Copy)]
pub enum Area {
    Snapshot = 0,
    EventInfo = 1,
    Sta = 2,
}

static mut PAGES: [[Page; 3]; MAX_HARTS] = [[ZERO; 3], [ZERO; 3], [ZERO; 3], [ZERO; 3]];

/// A page-aligned 4 KiB area owned by the calling hart.
#[derive(Clone, Copy)]
pub struct Shm(usize);

impl Shm {
    pub fn of(slot: usize, area: Area) -> Self {
        // SAFETY: only the address is taken; each hart uses its own slot.
        Shm(unsafe { addr_of_mut!(PAGES[slot][area as usize]) } as usize)
    }
    pub fn addr(self) -> usize {
        self.0
    }
    pub fn rd8(self, off: usize) -> u8 {
        assert!(off < 4096);
        // SAFETY: inside the page.
        unsafe { read_volatile((self.0 + off) as *const u8) }
    }
    pub fn rd32(self, off: usize) -> u32 {
        assert!(off + 4 <= 4096 && off.is_multiple_of(4));
        // SAFETY: inside the page, aligned.
        unsafe { read_volatile((self.0 + off) as *const u32) }
    }
    pub fn rd64(self, off: usize) -> u64 {
        assert!(off + 8 <= 4096 && off.is_multiple_of(8));
        // SAFETY: inside the page, aligned.
        unsafe { read_volatile((self.0 + off) as *const u64) }
    }
    pub fn wr32(self, off: usize, v: u32) {
        assert!(off + 4 <= 4096 && off.is_multiple_of(4));
        // SAFETY: inside the page, aligned.
        unsafe { write_volatile((self.0 + off) as *mut u32, v) }
    }
    pub fn wr64(self, off: usize, v: u64) {
        assert!(off + 8 <= 4096 && off.is_multiple_of(8));
        // SAFETY: inside the page, aligned.
        unsafe { write_volatile((self.0 + off) as *mut u64, v) }
    }
    pub fn fill(self, byte: u8) {
        for off in 0..4096 {
            // SAFETY: inside the page.
            unsafe { write_volatile((self.0 + off) as *mut u8, byte) }
        }
    }
    /// First offset in `range` whose byte differs from `byte`.
    pub fn find_not(self, range: core::ops::Range<usize>, byte: u8) -> Option<usize> {
        range.into_iter().find(|&o| self.rd8(o) != byte)
    }
}
