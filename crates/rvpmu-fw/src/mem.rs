//! Supervisor physical memory as the firmware lets S-mode hand it over
//! (SBI shared memory, DBCN buffers): DRAM from the device tree minus the
//! firmware's protected region, accessed directly from M-mode.

use crate::platform::{Platform, Region};

/// Range checks and direct access to supervisor-owned DRAM.
pub struct SupervisorRam<'a> {
    platform: &'a Platform,
}

impl<'a> SupervisorRam<'a> {
    pub fn new(platform: &'a Platform) -> Self {
        Self { platform }
    }

    /// Whether `[addr, addr + len)` is DRAM S-mode may use (inside one
    /// memory region, not touching the firmware). `len` 0 is never valid.
    pub fn check(&self, addr: u64, len: u64) -> bool {
        let fw: Region = self.platform.firmware;
        self.platform.memory().iter().any(|r| r.contains(addr, len)) && !fw.overlaps(addr, len)
    }

    /// Copy `buf.len()` bytes from supervisor memory at `addr`.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
        if !self.check(addr, buf.len() as u64) {
            return false;
        }
        for (i, b) in buf.iter_mut().enumerate() {
            // SAFETY: checked to be DRAM outside the firmware; M-mode has
            // direct physical access.
            *b = unsafe { core::ptr::read_volatile((addr as usize + i) as *const u8) };
        }
        true
    }

    /// Copy `buf` into supervisor memory at `addr`.
    pub fn write(&self, addr: u64, buf: &[u8]) -> bool {
        if !self.check(addr, buf.len() as u64) {
            return false;
        }
        for (i, &b) in buf.iter().enumerate() {
            // SAFETY: as read.
            unsafe { core::ptr::write_volatile((addr as usize + i) as *mut u8, b) };
        }
        true
    }
}
