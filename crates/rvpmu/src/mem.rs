//! Supervisor memory: the seam between the engine and physical memory.
//!
//! Every shared-memory address an SBI call receives comes from a less
//! privileged mode and is hostile. The engine asks [`SupervisorMemory::owns`]
//! before it registers or touches an area, and accesses go through
//! `read`/`write`, which implementations bound-check again.

use crate::Error;

/// An access outside what the implementation allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemFault {
    /// First address of the refused access.
    pub addr: u64,
}

/// Physical memory of the supervisor, as seen from the SBI implementation.
pub trait SupervisorMemory {
    /// Whether `[addr, addr + len)` is memory the supervisor may read and
    /// write (RAM it owns, not the firmware's own memory, no wrap-around).
    fn owns(&self, addr: u64, len: u64) -> bool;
    /// Copy `buf.len()` bytes from supervisor memory at `addr`.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault>;
    /// Copy `data` into supervisor memory at `addr`.
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemFault>;

    /// Read a little-endian u64.
    fn read_u64(&self, addr: u64) -> Result<u64, MemFault> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    /// Write a little-endian u64.
    fn write_u64(&mut self, addr: u64, v: u64) -> Result<(), MemFault> {
        self.write(addr, &v.to_le_bytes())
    }
    /// Read a little-endian u32.
    fn read_u32(&self, addr: u64) -> Result<u32, MemFault> {
        let mut b = [0u8; 4];
        self.read(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    /// Write a little-endian u32.
    fn write_u32(&mut self, addr: u64, v: u32) -> Result<(), MemFault> {
        self.write(addr, &v.to_le_bytes())
    }
    /// Zero `len` bytes at `addr`.
    fn zero(&mut self, addr: u64, len: u64) -> Result<(), MemFault> {
        let z = [0u8; 64];
        let mut off = 0;
        while off < len {
            let n = core::cmp::min(64, len - off);
            self.write(addr + off, &z[..n as usize])?;
            off += n;
        }
        Ok(())
    }
}

/// The physical base address a `(shmem_phys_lo, shmem_phys_hi)` pair names
/// on RV64, where any non-zero high word is beyond the physical address
/// space (SBI_ERR_INVALID_ADDRESS). `None` for the all-ones "disable" pair.
pub fn shmem_address(lo: u64, hi: u64) -> Result<Option<u64>, Error> {
    if lo == u64::MAX && hi == u64::MAX {
        return Ok(None);
    }
    if hi != 0 {
        return Err(Error::InvalidAddress);
    }
    Ok(Some(lo))
}

/// [`shmem_address`] of an area that must start on an `align`-byte
/// boundary (the snapshot page, the STA record): one that does not is
/// INVALID_PARAM, after the address checks.
#[inline(always)]
pub fn aligned_shmem_address(lo: u64, hi: u64, align: u64) -> Result<Option<u64>, Error> {
    let addr = shmem_address(lo, hi)?;
    if addr.is_some_and(|a| a % align != 0) {
        return Err(Error::InvalidParam);
    }
    Ok(addr)
}

/// Maximum RAM ranges and excluded ranges a [`Ranges`] holds.
pub const MAX_RANGES: usize = 8;

/// The supervisor's memory as RAM ranges minus excluded ranges (the
/// firmware's own image, reserved regions), checked without allocation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ranges {
    ram: [(u64, u64); MAX_RANGES],
    n_ram: usize,
    excluded: [(u64, u64); MAX_RANGES],
    n_excluded: usize,
}

impl Ranges {
    /// An empty set: owns nothing.
    pub const fn new() -> Ranges {
        Ranges {
            ram: [(0, 0); MAX_RANGES],
            n_ram: 0,
            excluded: [(0, 0); MAX_RANGES],
            n_excluded: 0,
        }
    }

    /// Add RAM `[base, base + size)`. Returns false when full.
    pub fn add_ram(&mut self, base: u64, size: u64) -> bool {
        if self.n_ram == MAX_RANGES {
            return false;
        }
        self.ram[self.n_ram] = (base, base.saturating_add(size));
        self.n_ram += 1;
        true
    }

    /// Exclude `[base, base + size)` (e.g. the firmware). Returns false when full.
    pub fn exclude(&mut self, base: u64, size: u64) -> bool {
        if self.n_excluded == MAX_RANGES {
            return false;
        }
        self.excluded[self.n_excluded] = (base, base.saturating_add(size));
        self.n_excluded += 1;
        true
    }

    /// Whether `[addr, addr + len)` lies inside one RAM range and touches no
    /// excluded range. Zero-length and wrapping areas are refused.
    pub fn owns(&self, addr: u64, len: u64) -> bool {
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        if len == 0 {
            return false;
        }
        let in_ram = self.ram[..self.n_ram]
            .iter()
            .any(|&(b, e)| addr >= b && end <= e);
        let hits_excluded = self.excluded[..self.n_excluded]
            .iter()
            .any(|&(b, e)| addr < e && end > b);
        in_ram && !hits_excluded
    }
}

/// Direct physical access for M-mode firmware (no translation in M-mode).
#[derive(Clone, Copy, Debug)]
pub struct PhysMemory {
    ranges: Ranges,
}

impl PhysMemory {
    /// # Safety
    /// Every address `ranges` owns must be RAM that M-mode may access with
    /// plain loads and stores, and no Rust object may live there.
    pub const unsafe fn new(ranges: Ranges) -> PhysMemory {
        PhysMemory { ranges }
    }

    /// The ranges this memory allows.
    pub fn ranges(&self) -> &Ranges {
        &self.ranges
    }
}

impl SupervisorMemory for PhysMemory {
    fn owns(&self, addr: u64, len: u64) -> bool {
        self.ranges.owns(addr, len)
    }
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        if !self.owns(addr, buf.len() as u64) {
            return Err(MemFault { addr });
        }
        // SAFETY: owns() checked the range; see PhysMemory::new.
        unsafe { raw_read(addr as usize, buf) };
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemFault> {
        if !self.owns(addr, data.len() as u64) {
            return Err(MemFault { addr });
        }
        // SAFETY: owns() checked the range; see PhysMemory::new.
        unsafe { raw_write(addr as usize, data) };
        Ok(())
    }
    fn zero(&mut self, addr: u64, len: u64) -> Result<(), MemFault> {
        if !self.owns(addr, len) {
            return Err(MemFault { addr });
        }
        // SAFETY: owns() checked the range; see PhysMemory::new.
        unsafe { raw_zero(addr as usize, len as usize) };
        Ok(())
    }
}

// The plain accesses behind a `SupervisorMemory` whose addresses are (or
// translate to) addresses the implementation dereferences directly: the
// firmware's `PhysMemory` and a hypervisor's guest RAM.

/// Copy `buf.len()` bytes from address `p`: a naturally aligned u64 or
/// u32 in one access (the layouts are made of aligned u32/u64 fields, and
/// the supervisor may read them concurrently, e.g. the STA sequence, so
/// no tearing into bytes), anything else byte by byte.
///
/// # Safety
///
/// `[p, p + buf.len())` is memory the caller may read with plain loads,
/// in which no Rust object lives.
#[inline]
pub unsafe fn raw_read(p: usize, buf: &mut [u8]) {
    match buf.len() {
        8 if p.is_multiple_of(8) => {
            // SAFETY: [p, p+8) is readable (the caller's contract);
            // 8-aligned by the guard.
            let v = unsafe { core::ptr::read_volatile(p as *const u64) };
            buf.copy_from_slice(&v.to_le_bytes());
        }
        4 if p.is_multiple_of(4) => {
            // SAFETY: [p, p+4) is readable; 4-aligned by the guard.
            let v = unsafe { core::ptr::read_volatile(p as *const u32) };
            buf.copy_from_slice(&v.to_le_bytes());
        }
        _ => {
            for (i, b) in buf.iter_mut().enumerate() {
                // SAFETY: p + i lies in the range the caller gave.
                *b = unsafe { core::ptr::read_volatile((p + i) as *const u8) };
            }
        }
    }
}

/// Copy `data` to address `p`, with [`raw_read`]'s accesses.
///
/// # Safety
///
/// `[p, p + data.len())` is memory the caller may write with plain
/// stores, in which no Rust object lives.
#[inline]
pub unsafe fn raw_write(p: usize, data: &[u8]) {
    match data.len() {
        // SAFETY: [p, p+8) is writable (the caller's contract); 8-aligned
        // by the guard.
        8 if p.is_multiple_of(8) => unsafe {
            core::ptr::write_volatile(p as *mut u64, u64::from_le_bytes(data.try_into().unwrap()))
        },
        // SAFETY: [p, p+4) is writable; 4-aligned by the guard.
        4 if p.is_multiple_of(4) => unsafe {
            core::ptr::write_volatile(p as *mut u32, u32::from_le_bytes(data.try_into().unwrap()))
        },
        _ => {
            for (i, b) in data.iter().enumerate() {
                // SAFETY: p + i lies in the range the caller gave.
                unsafe { core::ptr::write_volatile((p + i) as *mut u8, *b) };
            }
        }
    }
}

/// Zero `n` bytes at address `p`: bytes up to the first 8-aligned
/// address, then words, eight per round (the loop overhead would
/// otherwise cost more than the stores: a 4 KiB snapshot area is 512).
///
/// # Safety
///
/// As [`raw_write`]'s, for `[p, p + n)`.
#[inline]
pub unsafe fn raw_zero(p: usize, n: usize) {
    let mut i = 0;
    // SAFETY: every store is to p + i with i < n, or to the words
    // [p + i, p + i + 64) / [p + i, p + i + 8) the loop bounds keep below
    // p + n: the range the caller gave.
    unsafe {
        while i < n && !(p + i).is_multiple_of(8) {
            core::ptr::write_volatile((p + i) as *mut u8, 0);
            i += 1;
        }
        while i + 64 <= n {
            let w = (p + i) as *mut u64;
            core::ptr::write_volatile(w, 0);
            core::ptr::write_volatile(w.add(1), 0);
            core::ptr::write_volatile(w.add(2), 0);
            core::ptr::write_volatile(w.add(3), 0);
            core::ptr::write_volatile(w.add(4), 0);
            core::ptr::write_volatile(w.add(5), 0);
            core::ptr::write_volatile(w.add(6), 0);
            core::ptr::write_volatile(w.add(7), 0);
            i += 64;
        }
        while i + 8 <= n {
            core::ptr::write_volatile((p + i) as *mut u64, 0);
            i += 8;
        }
        while i < n {
            core::ptr::write_volatile((p + i) as *mut u8, 0);
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_refuse_firmware_and_wrap() {
        let mut r = Ranges::new();
        r.add_ram(0x8000_0000, 0x1000_0000);
        r.exclude(0x8000_0000, 0x4_0000);
        assert!(!r.owns(0x8000_0000, 8));
        assert!(!r.owns(0x8003_fff8, 16)); // straddles the end of the firmware
        assert!(r.owns(0x8004_0000, 4096));
        assert!(!r.owns(0x8fff_f000, 0x2000)); // past the end of RAM
        assert!(!r.owns(u64::MAX - 8, 16));
        assert!(!r.owns(0x8004_0000, 0));
        assert!(!r.owns(0x1000, 8));
    }

    #[test]
    fn shmem_address_pairs() {
        assert_eq!(shmem_address(u64::MAX, u64::MAX), Ok(None));
        assert_eq!(shmem_address(0x8000_1000, 0), Ok(Some(0x8000_1000)));
        assert_eq!(shmem_address(0x1000, 1), Err(Error::InvalidAddress));
        assert_eq!(shmem_address(u64::MAX, 0), Ok(Some(u64::MAX)));
    }

    #[test]
    fn phys_memory_word_and_byte_paths_on_a_host_buffer() {
        extern crate std;
        let mut buf = std::vec![0xAAu8; 256];
        let base = buf.as_mut_ptr() as u64;
        let mut r = Ranges::new();
        r.add_ram(base + 16, 128);
        // SAFETY: the range is inside `buf`, which outlives `m`.
        let mut m = unsafe { PhysMemory::new(r) };
        let a = (base + 16 + 7) & !7; // aligned, inside
        m.write_u64(a, 0x1122_3344_5566_7788).unwrap();
        m.write_u32(a + 8, 0xdead_beef).unwrap();
        m.write(a + 13, &[1, 2, 3]).unwrap();
        assert_eq!(m.read_u64(a).unwrap(), 0x1122_3344_5566_7788);
        assert_eq!(m.read_u32(a + 8).unwrap(), 0xdead_beef);
        m.zero(a + 1, 20).unwrap();
        assert_eq!(m.read_u64(a).unwrap(), 0x88);
        assert_eq!(m.write_u64(base, 1), Err(MemFault { addr: base }));
        assert_eq!(m.zero(base + 100, 100), Err(MemFault { addr: base + 100 }));
        assert_eq!(buf[0], 0xAA, "nothing outside the range was written");
        assert_eq!(buf[255], 0xAA);
        assert_eq!(
            buf[(a - base) as usize + 21],
            0xAA,
            "zero stopped at its length"
        );
    }
}
