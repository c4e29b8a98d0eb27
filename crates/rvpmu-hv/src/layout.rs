//! Where things go. In host RAM: the guest's window, the first
//! 2 MiB-aligned range of the bundle's RAM size that touches none of the
//! hypervisor's image, the bundle, the host DTB and the host's reserved
//! memory (the firmware). In guest RAM (guest-physical, starting at
//! [`GUEST_RAM_BASE`], as QEMU virt's DRAM does):
//!
//! ```text
//! GUEST_RAM_BASE + 2 MiB   kernel (entry point), as QEMU loads -kernel
//!                          after a firmware; its footprint is the Linux
//!                          Image header's image_size when it has one
//! ...                      free
//! below the DTB            initrd, 4 KiB-aligned
//! top - DTB_SPACE          the guest device tree (up to DTB_SPACE bytes)
//! ```

use crate::ram::{GuestRam, GRANULE};

/// Guest-physical start of guest RAM (QEMU virt's DRAM base).
pub const GUEST_RAM_BASE: u64 = 0x8000_0000;
/// Offset of the kernel in guest RAM.
pub const KERNEL_OFFSET: u64 = 2 << 20;
/// Space for the guest device tree at the top of guest RAM.
pub const DTB_SPACE: u64 = 64 << 10;
/// Smallest guest RAM: the kernel offset plus one granule.
pub const MIN_RAM: u64 = KERNEL_OFFSET + GRANULE;
/// Host ranges the window must avoid, at most.
pub const MAX_RESERVED: usize = 8;

/// Why a guest cannot be placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// The bundle's RAM size is not a multiple of 2 MiB or below [`MIN_RAM`].
    BadRamSize,
    /// No free range of host RAM is that large.
    NoHostRoom,
    /// Kernel, initrd and DTB do not fit the guest's RAM.
    GuestTooSmall,
}

impl LayoutError {
    /// For the hypervisor's boot report.
    pub const fn as_str(self) -> &'static str {
        match self {
            LayoutError::BadRamSize => {
                "guest RAM size is not a multiple of 2 MiB of at least 4 MiB"
            }
            LayoutError::NoHostRoom => "no free host RAM range is as large as the guest's RAM",
            LayoutError::GuestTooSmall => {
                "kernel, initrd and device tree do not fit the guest's RAM"
            }
        }
    }
}

/// Host-physical ranges `[start, end)` the window must not touch.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reserved {
    ranges: [(u64, u64); MAX_RESERVED],
    n: usize,
}

impl Reserved {
    /// Add `[start, end)`; false when full.
    pub fn add(&mut self, start: u64, end: u64) -> bool {
        if self.n == MAX_RESERVED {
            return false;
        }
        self.ranges[self.n] = (start, end);
        self.n += 1;
        true
    }

    fn hit(&self, start: u64, end: u64) -> Option<u64> {
        self.ranges[..self.n]
            .iter()
            .filter(|&&(s, e)| start < e && end > s)
            .map(|&(_, e)| e)
            .max()
    }
}

const fn align_up(x: u64, a: u64) -> Option<u64> {
    match x.checked_add(a - 1) {
        Some(v) => Some(v & !(a - 1)),
        None => None,
    }
}

/// The guest's window: `ram_size` bytes of host RAM `[mem_start, mem_end)`
/// at the lowest 2 MiB boundary clear of `reserved`, seen by the guest at
/// [`GUEST_RAM_BASE`].
pub fn place_window(
    mem_start: u64,
    mem_end: u64,
    reserved: &Reserved,
    ram_size: u64,
) -> Result<GuestRam, LayoutError> {
    if !ram_size.is_multiple_of(GRANULE) || ram_size < MIN_RAM {
        return Err(LayoutError::BadRamSize);
    }
    let mut base = align_up(mem_start, GRANULE).ok_or(LayoutError::NoHostRoom)?;
    loop {
        let end = base.checked_add(ram_size).ok_or(LayoutError::NoHostRoom)?;
        if end > mem_end {
            return Err(LayoutError::NoHostRoom);
        }
        match reserved.hit(base, end) {
            None => break,
            Some(e) => base = align_up(e, GRANULE).ok_or(LayoutError::NoHostRoom)?,
        }
    }
    GuestRam::new(GUEST_RAM_BASE, base, ram_size).ok_or(LayoutError::NoHostRoom)
}

/// The memory a kernel image needs from its load address: a Linux RISC-V
/// Image (magic "RSC\x05" at offset 56) says so in `image_size` (offset
/// 16, which includes its .bss); anything else needs its own length.
pub fn kernel_footprint(kernel: &[u8]) -> u64 {
    let len = kernel.len() as u64;
    if kernel.len() >= 64 && kernel[56..60] == *b"RSC\x05" {
        let mut w = [0u8; 8];
        w.copy_from_slice(&kernel[16..24]);
        len.max(u64::from_le_bytes(w))
    } else {
        len
    }
}

/// Guest-physical addresses of what the hypervisor puts in guest RAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuestLayout {
    /// Kernel load address and entry point.
    pub kernel: u64,
    /// Initrd `[start, end)` (start == end: none).
    pub initrd: (u64, u64),
    /// The device tree.
    pub dtb: u64,
}

/// Lay out a kernel of `kernel_footprint` bytes and an initrd of
/// `initrd_len` bytes in `ram`.
pub fn guest_layout(
    ram: &GuestRam,
    kernel_footprint: u64,
    initrd_len: u64,
) -> Result<GuestLayout, LayoutError> {
    let kernel = ram.gpa() + KERNEL_OFFSET;
    let dtb = ram.gpa_end() - DTB_SPACE;
    let initrd_start = dtb
        .checked_sub(initrd_len)
        .ok_or(LayoutError::GuestTooSmall)?
        & !0xfff;
    let kernel_end = kernel
        .checked_add(kernel_footprint)
        .ok_or(LayoutError::GuestTooSmall)?;
    if kernel_end > initrd_start {
        return Err(LayoutError::GuestTooSmall);
    }
    let initrd = if initrd_len == 0 {
        (dtb, dtb)
    } else {
        (initrd_start, initrd_start + initrd_len)
    };
    Ok(GuestLayout {
        kernel,
        initrd,
        dtb,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 1 << 20;

    /// A machine shaped like QEMU virt with -m 512M: firmware at
    /// 0x80000000 (reserved), the hypervisor at 0x80200000, a bundle in
    /// the middle of RAM (at 0x88200000 here, to leave room on both sides),
    /// the DTB in the top 2 MiB.
    fn qemu_512m(bundle_len: u64) -> Reserved {
        let mut r = Reserved::default();
        assert!(r.add(0x8000_0000, 0x8004_0000));
        assert!(r.add(0x8020_0000, 0x8023_4000));
        assert!(r.add(0x8820_0000, 0x8820_0000 + bundle_len));
        assert!(r.add(0x9fe0_0000, 0x9fe0_2000));
        r
    }

    #[test]
    fn window_goes_after_the_last_reserved_range_in_the_way() {
        let r = qemu_512m(0x1_2345);
        let w = place_window(0x8000_0000, 0xa000_0000, &r, 64 * M).unwrap();
        // Below the bundle there is room: 0x80400000 + 64 MiB < 0x88200000.
        assert_eq!(
            (w.gpa(), w.hpa(), w.size()),
            (GUEST_RAM_BASE, 0x8040_0000, 64 * M)
        );
        let w = place_window(0x8000_0000, 0xa000_0000, &r, 256 * M).unwrap();
        // Not below the bundle: right after it, 2 MiB-aligned.
        assert_eq!(w.hpa(), 0x8840_0000);
        assert_eq!(
            place_window(0x8000_0000, 0xa000_0000, &r, 384 * M),
            Err(LayoutError::NoHostRoom)
        );
        assert_eq!(
            place_window(0x8000_0000, 0xa000_0000, &r, 3 * M),
            Err(LayoutError::BadRamSize)
        );
        assert_eq!(
            place_window(0x8000_0000, u64::MAX, &r, !(GRANULE - 1)),
            Err(LayoutError::NoHostRoom)
        );
    }

    #[test]
    fn guest_layout_keeps_kernel_initrd_and_dtb_apart() {
        let ram = GuestRam::new(GUEST_RAM_BASE, 0x8840_0000, 64 * M).unwrap();
        let l = guest_layout(&ram, 3 * M, 10_000).unwrap();
        assert_eq!(l.kernel, 0x8020_0000);
        assert_eq!(l.dtb, 0x8400_0000 - 0x1_0000);
        // 0x83ff0000 - 10000 = 0x83fed8f0, rounded down to 4 KiB.
        assert_eq!(l.initrd, (0x83fe_d000, 0x83fe_d000 + 10_000));
        assert!(l.initrd.1 <= l.dtb && l.kernel + 3 * M <= l.initrd.0);
        let l = guest_layout(&ram, 3 * M, 0).unwrap();
        assert_eq!(l.initrd, (l.dtb, l.dtb));
        assert_eq!(
            guest_layout(&ram, 62 * M, 0),
            Err(LayoutError::GuestTooSmall)
        );
        assert_eq!(
            guest_layout(&ram, M, 61 * M),
            Err(LayoutError::GuestTooSmall)
        );
        assert_eq!(
            guest_layout(&ram, 0, u64::MAX),
            Err(LayoutError::GuestTooSmall)
        );
        assert_eq!(
            guest_layout(&ram, u64::MAX, 0),
            Err(LayoutError::GuestTooSmall)
        );
    }

    #[test]
    fn linux_image_footprint_is_its_image_size() {
        let mut image = vec![0u8; 4096];
        image[16..24].copy_from_slice(&(3_000_000u64).to_le_bytes());
        assert_eq!(kernel_footprint(&image), 4096);
        image[56..60].copy_from_slice(b"RSC\x05");
        assert_eq!(kernel_footprint(&image), 3_000_000);
        assert_eq!(kernel_footprint(&image[..63]), 63);
    }
}
