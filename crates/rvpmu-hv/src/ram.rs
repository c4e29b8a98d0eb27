//! The guest's RAM: one window of host RAM, seen by the guest at
//! [`GUEST_RAM_BASE`](crate::layout::GUEST_RAM_BASE). Every guest-physical
//! address the guest hands the hypervisor (SBI buffers, later the PMU
//! snapshot and STA records) goes through [`GuestRam::translate`], which
//! refuses anything not wholly inside the window, so a guest can never
//! make the hypervisor touch host memory outside it.

use rvpmu::mem::{raw_read, raw_write, raw_zero, MemFault, SupervisorMemory};

/// Granule of the window: the G-stage maps it with 2 MiB pages.
pub const GRANULE: u64 = 2 << 20;

/// A guest-physical window `[gpa, gpa + size)` backed by host-physical
/// `[hpa, hpa + size)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuestRam {
    gpa: u64,
    hpa: u64,
    size: u64,
}

impl GuestRam {
    /// A window; `None` unless both bases and the size are multiples of
    /// [`GRANULE`], the size is not zero and neither range wraps.
    pub const fn new(gpa: u64, hpa: u64, size: u64) -> Option<GuestRam> {
        if size == 0 || !(gpa | hpa | size).is_multiple_of(GRANULE) {
            return None;
        }
        if gpa.checked_add(size).is_none() || hpa.checked_add(size).is_none() {
            return None;
        }
        Some(GuestRam { gpa, hpa, size })
    }

    /// First guest-physical address.
    pub const fn gpa(&self) -> u64 {
        self.gpa
    }
    /// First host-physical address.
    pub const fn hpa(&self) -> u64 {
        self.hpa
    }
    /// Size in bytes.
    pub const fn size(&self) -> u64 {
        self.size
    }
    /// One past the last guest-physical address.
    pub const fn gpa_end(&self) -> u64 {
        self.gpa + self.size
    }

    /// Whether `[gpa, gpa + len)` is inside the window (`len` > 0, no
    /// wrap-around).
    pub fn contains(&self, gpa: u64, len: u64) -> bool {
        let Some(end) = gpa.checked_add(len) else {
            return false;
        };
        len != 0 && gpa >= self.gpa && end <= self.gpa_end()
    }

    /// The host-physical address of guest-physical `[gpa, gpa + len)`, if
    /// the whole range is inside the window.
    pub fn translate(&self, gpa: u64, len: u64) -> Option<u64> {
        self.contains(gpa, len).then(|| gpa - self.gpa + self.hpa)
    }
}

/// The guest's RAM as `rvpmu`'s [`SupervisorMemory`]: addresses are
/// guest-physical, accesses are plain host-physical loads and stores
/// (the hypervisor runs with translation off) after [`GuestRam::translate`],
/// with the firmware's accesses (`rvpmu::mem::raw_read` and the others:
/// an aligned word in one access).
#[derive(Debug)]
pub struct GuestMemory {
    ram: GuestRam,
}

impl GuestMemory {
    /// # Safety
    ///
    /// The host-physical range of `ram` is memory the caller may read and
    /// write with plain loads and stores for as long as the value lives
    /// (given to the guest, mapped by nothing else of the hypervisor's),
    /// and no Rust object lives in it.
    pub const unsafe fn new(ram: GuestRam) -> GuestMemory {
        GuestMemory { ram }
    }

    /// The window.
    pub const fn ram(&self) -> &GuestRam {
        &self.ram
    }

    /// The host-physical address of the guest's `[addr, addr + len)`, or
    /// `None` when `len` is 0 (nothing to touch, wherever `addr` is).
    fn host_range(&self, addr: u64, len: u64) -> Result<Option<u64>, MemFault> {
        if len == 0 {
            return Ok(None);
        }
        let hpa = self.ram.translate(addr, len);
        hpa.map(Some).ok_or(MemFault { addr })
    }
}

impl SupervisorMemory for GuestMemory {
    fn owns(&self, addr: u64, len: u64) -> bool {
        self.ram.contains(addr, len)
    }

    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        if let Some(hpa) = self.host_range(addr, buf.len() as u64)? {
            // SAFETY: [hpa, hpa + len) is inside the window (translate), which
            // the constructor's contract makes readable and free of Rust
            // objects.
            unsafe { raw_read(hpa as usize, buf) };
        }
        Ok(())
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemFault> {
        if let Some(hpa) = self.host_range(addr, data.len() as u64)? {
            // SAFETY: as in `read`, writable by the constructor's contract.
            unsafe { raw_write(hpa as usize, data) };
        }
        Ok(())
    }

    /// One translation for the whole range, then word stores (the
    /// default zeroes 64 bytes per `write`, each translated again).
    fn zero(&mut self, addr: u64, len: u64) -> Result<(), MemFault> {
        if let Some(hpa) = self.host_range(addr, len)? {
            // SAFETY: as in `write`; the range is inside the window, so
            // `len` fits in the address space.
            unsafe { raw_zero(hpa as usize, len as usize) };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 1 << 20;

    #[test]
    fn window_needs_granule_alignment_and_no_wrap() {
        assert!(GuestRam::new(0x8000_0000, 0x8840_0000, 64 * M).is_some());
        assert!(GuestRam::new(0x8000_0000, 0x8840_1000, 64 * M).is_none());
        assert!(GuestRam::new(0x8000_0000, 0x8840_0000, 64 * M + 4096).is_none());
        assert!(GuestRam::new(0x8000_0000, 0x8840_0000, 0).is_none());
        assert!(GuestRam::new(u64::MAX - GRANULE + 1, 0, 2 * GRANULE).is_none());
    }

    #[test]
    fn translate_refuses_anything_not_wholly_inside() {
        let r = GuestRam::new(0x8000_0000, 0x8840_0000, 64 * M).unwrap();
        assert_eq!(r.translate(0x8000_0000, 1), Some(0x8840_0000));
        assert_eq!(r.translate(0x8000_1234, 16), Some(0x8840_1234));
        assert_eq!(r.translate(0x8400_0000 - 8, 8), Some(0x8c40_0000 - 8));
        // Straddling either end, outside, empty, wrapping.
        assert_eq!(r.translate(0x8400_0000 - 8, 9), None);
        assert_eq!(r.translate(0x7fff_ffff, 2), None);
        assert_eq!(r.translate(0x8400_0000, 1), None);
        assert_eq!(r.translate(0x1000_0000, 1), None);
        assert_eq!(r.translate(0x8000_0000, 0), None);
        assert_eq!(r.translate(0x8000_0000, u64::MAX), None);
        assert_eq!(r.translate(u64::MAX, 2), None);
    }

    #[test]
    fn guest_memory_reads_and_writes_only_the_window() {
        // A host buffer stands in for host RAM: the window is its first
        // 2 MiB-aligned 4 MiB.
        let mut host = vec![0u8; 8 << 20];
        let base = (host.as_mut_ptr() as u64).div_ceil(GRANULE) * GRANULE;
        let ram = GuestRam::new(0x8000_0000, base, 2 * GRANULE).unwrap();
        // SAFETY: [base, base + 4 MiB) lies inside `host`, which outlives
        // `mem` and is touched only through it below.
        let mut mem = unsafe { GuestMemory::new(ram) };
        mem.write_u64(0x8000_0008, 0x1122_3344_5566_7788).unwrap();
        assert_eq!(mem.read_u64(0x8000_0008), Ok(0x1122_3344_5566_7788));
        let off = (base - host.as_ptr() as u64) as usize;
        assert_eq!(host[off + 8], 0x88);
        // SAFETY: as above (the first `mem` is no longer used).
        let mut mem = unsafe { GuestMemory::new(ram) };
        let end = ram.gpa_end();
        assert_eq!(mem.write_u32(end - 2, 1), Err(MemFault { addr: end - 2 }));
        assert_eq!(
            mem.read_u32(0x7fff_fffe),
            Err(MemFault { addr: 0x7fff_fffe })
        );
        assert!(mem.owns(0x8000_0000, 4 * M) && !mem.owns(0x8000_0000, 4 * M + 1));
        assert_eq!(mem.zero(end - 64, 64), Ok(()));
        assert_eq!(mem.zero(end - 64, 65), Err(MemFault { addr: end - 64 }));
    }

    #[test]
    fn guest_memory_zero_and_word_accesses_touch_exactly_their_bytes() {
        // Host RAM stand-in filled with 0xAA; the window is its first
        // 2 MiB-aligned 4 MiB, with buffer on both sides of it unless the
        // allocation happens to be aligned (then only after it).
        let mut host = vec![0xAAu8; 8 << 20];
        let base = (host.as_mut_ptr() as u64).div_ceil(GRANULE) * GRANULE;
        let off = (base - host.as_ptr() as u64) as usize;
        let ram = GuestRam::new(0x8000_0000, base, 2 * GRANULE).unwrap();
        let (gpa, end, size) = (ram.gpa(), ram.gpa_end(), ram.size() as usize);
        {
            // SAFETY: the window lies inside `host`, which outlives `mem`
            // and is not accessed otherwise while `mem` lives.
            let mut mem = unsafe { GuestMemory::new(ram) };
            // The last page (a snapshot area), an unaligned short range.
            assert_eq!(mem.zero(end - 4096, 4096), Ok(()));
            assert_eq!(mem.zero(gpa + 3, 13), Ok(()));
            // Refused whole, nothing written: past either end, wrapping.
            assert_eq!(mem.zero(end - 64, 65), Err(MemFault { addr: end - 64 }));
            assert_eq!(mem.zero(gpa - 8, 16), Err(MemFault { addr: gpa - 8 }));
            assert_eq!(
                mem.zero(u64::MAX - 7, 16),
                Err(MemFault { addr: u64::MAX - 7 })
            );
            assert_eq!(mem.zero(end, 0), Ok(()), "empty: nothing to touch");
            // Unaligned words go byte by byte, aligned ones in one access;
            // both little-endian.
            mem.write_u64(gpa + 0x101, 0x0102_0304_0506_0708).unwrap();
            assert_eq!(mem.read_u64(gpa + 0x101), Ok(0x0102_0304_0506_0708));
            mem.write_u32(gpa + 0x202, 0xdead_beef).unwrap();
            assert_eq!(mem.read_u32(gpa + 0x202), Ok(0xdead_beef));
            mem.write_u64(gpa + 0x300, 0x1111_2222_3333_4444).unwrap();
            assert_eq!(mem.read_u32(gpa + 0x304), Ok(0x1111_2222));
            assert_eq!(mem.read_u32(end - 4), Ok(0));
            assert_eq!(mem.read_u64(end - 4), Err(MemFault { addr: end - 4 }));
            assert_eq!(
                mem.write_u64(end - 8, 1),
                Ok(()),
                "the last word is the guest's"
            );
            assert_eq!(mem.write_u32(end - 3, 1), Err(MemFault { addr: end - 3 }));
        }
        let w = &host[off..off + size];
        assert!(w[size - 4096..size - 8].iter().all(|&b| b == 0));
        assert_eq!(w[size - 8..], [1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(w[..3], [0xAA; 3]);
        assert_eq!(w[3..16], [0; 13]);
        assert_eq!(w[16], 0xAA);
        assert_eq!(w[size - 4097], 0xAA);
        assert_eq!(w[0x100..0x10a], [0xAA, 8, 7, 6, 5, 4, 3, 2, 1, 0xAA]);
        assert_eq!(w[0x201..0x207], [0xAA, 0xef, 0xbe, 0xad, 0xde, 0xAA]);
        assert!(host[off + size..off + size + 4096]
            .iter()
            .all(|&b| b == 0xAA));
        assert!(host[off.saturating_sub(4096)..off]
            .iter()
            .all(|&b| b == 0xAA));
    }
}
