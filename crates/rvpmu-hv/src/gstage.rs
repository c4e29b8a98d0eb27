//! The G-stage (second-stage) page table: Sv39x4, mapping the guest's RAM
//! window with 2 MiB pages and nothing else. Any other guest-physical
//! address (MMIO included) faults to the hypervisor as a guest page fault.
//!
//! Sv39x4 (privileged spec, "Guest physical address translation"): a
//! 41-bit guest-physical address; the root table has 2048 entries (16 KiB,
//! 16 KiB-aligned) indexed by bits 40:30, the next level 512 entries
//! indexed by bits 29:21, whose leaves map 2 MiB. Every leaf has U set:
//! G-stage accesses are checked as user accesses.

use crate::ram::{GuestRam, GRANULE};

/// hgatp.MODE for Sv39x4.
pub const HGATP_MODE_SV39X4: u64 = 8;
/// Guest-physical addresses Sv39x4 translates: 41 bits.
pub const GPA_BITS: u32 = 41;
/// Second-level tables, each mapping 1 GiB: the largest window is 2 GiB.
pub const L1_TABLES: usize = 2;

const PTE_V: u64 = 1 << 0;
const PTE_R: u64 = 1 << 1;
const PTE_W: u64 = 1 << 2;
const PTE_X: u64 = 1 << 3;
const PTE_U: u64 = 1 << 4;
const PTE_A: u64 = 1 << 6;
const PTE_D: u64 = 1 << 7;
const GIB: u64 = 1 << 30;

/// A non-leaf entry pointing at the table at `pa`.
pub const fn table_pte(pa: u64) -> u64 {
    (pa >> 12) << 10 | PTE_V
}

/// A read-write-execute user leaf for `pa`, accessed and dirty already (so
/// the hardware never needs to update it: it works without Svadu too).
pub const fn leaf_pte(pa: u64) -> u64 {
    (pa >> 12) << 10 | PTE_V | PTE_R | PTE_W | PTE_X | PTE_U | PTE_A | PTE_D
}

/// The hgatp value for the root table at `root_pa` and `vmid`.
pub const fn hgatp(root_pa: u64, vmid: u16) -> u64 {
    HGATP_MODE_SV39X4 << 60 | (vmid as u64 & 0x3fff) << 44 | root_pa >> 12
}

/// The root table (16 KiB-aligned, as Sv39x4 requires).
#[repr(C, align(16384))]
pub struct Root(pub [u64; 2048]);

/// A second-level table.
#[repr(C, align(4096))]
pub struct Table(pub [u64; 512]);

/// Why a window cannot be mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// The window extends beyond 41-bit guest-physical addresses.
    BeyondSv39x4,
    /// The window spans more 1 GiB regions than there are tables.
    TooLarge,
}

/// The tables (in the hypervisor's .bss: with translation off, a table's
/// address is its physical address).
pub struct GStage {
    /// The root (hgatp points here).
    pub root: Root,
    /// The second-level tables.
    pub l1: [Table; L1_TABLES],
}

impl GStage {
    /// Empty tables: nothing mapped.
    pub const fn new() -> GStage {
        GStage {
            root: Root([0; 2048]),
            l1: [Table([0; 512]), Table([0; 512])],
        }
    }

    /// Map `ram` (and only it, clearing whatever was mapped before). The
    /// tables' own addresses go into the entries, so they must not move
    /// afterwards.
    pub fn map(&mut self, ram: &GuestRam) -> Result<(), MapError> {
        if ram.gpa_end() > 1 << GPA_BITS {
            return Err(MapError::BeyondSv39x4);
        }
        let first = ram.gpa() / GIB;
        let last = (ram.gpa_end() - 1) / GIB;
        if (last - first + 1) as usize > L1_TABLES {
            return Err(MapError::TooLarge);
        }
        self.root.0 = [0; 2048];
        for (i, region) in (first..=last).enumerate() {
            let table = &mut self.l1[i];
            table.0 = [0; 512];
            self.root.0[region as usize] = table_pte(table.0.as_ptr() as u64);
        }
        let mut gpa = ram.gpa();
        while gpa < ram.gpa_end() {
            let table = &mut self.l1[(gpa / GIB - first) as usize];
            let hpa = gpa - ram.gpa() + ram.hpa();
            table.0[((gpa % GIB) / GRANULE) as usize] = leaf_pte(hpa);
            gpa += GRANULE;
        }
        Ok(())
    }

    /// The host-physical address `gpa` translates to, walking the tables
    /// as the hardware does (for checks; the hypervisor itself uses
    /// [`GuestRam::translate`]).
    pub fn walk(&self, gpa: u64) -> Option<u64> {
        if gpa >= 1 << GPA_BITS {
            return None;
        }
        let root = self.root.0[(gpa / GIB) as usize];
        if root & PTE_V == 0 {
            return None;
        }
        let table_pa = (root >> 10) << 12;
        let table = self.l1.iter().find(|t| t.0.as_ptr() as u64 == table_pa)?;
        let leaf = table.0[((gpa % GIB) / GRANULE) as usize];
        if leaf & PTE_V == 0 || leaf & (PTE_R | PTE_X) == 0 {
            return None;
        }
        Some(((leaf >> 10) << 12) + gpa % GRANULE)
    }
}

impl Default for GStage {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_have_the_spec_layout() {
        // PPN in bits 53:10; V R W X U A D in bits 0-4, 6, 7.
        assert_eq!(leaf_pte(0x8840_0000), 0x2210_0000 | 0xdf);
        assert_eq!(table_pte(0x8021_4000), 0x2008_5000 | 1);
        assert_eq!(hgatp(0x8021_0000, 1), 8 << 60 | 1 << 44 | 0x80210);
        assert_eq!(core::mem::align_of::<Root>(), 16384);
        assert_eq!(core::mem::size_of::<Root>(), 16384);
    }

    #[test]
    fn maps_the_window_and_nothing_else() {
        let mut g = Box::new(GStage::new());
        let ram = GuestRam::new(0x8000_0000, 0x8840_0000, 128 << 20).unwrap();
        g.map(&ram).unwrap();
        for off in (0..ram.size()).step_by(GRANULE as usize) {
            assert_eq!(g.walk(0x8000_0000 + off + 0x123), Some(0x8840_0123 + off));
        }
        for gpa in [
            0,
            0x1000_0000,
            0x0c00_0000,
            0x7fff_ffff,
            ram.gpa_end(),
            1 << 40,
        ] {
            assert_eq!(g.walk(gpa), None, "{gpa:#x}");
        }
        let mapped = g.l1[0].0.iter().filter(|&&e| e != 0).count();
        assert_eq!(mapped, 64);
        assert_eq!(g.root.0.iter().filter(|&&e| e != 0).count(), 1);
    }

    #[test]
    fn a_window_across_a_gib_boundary_uses_two_tables() {
        let mut g = Box::new(GStage::new());
        let ram = GuestRam::new(0xa000_0000, 0x9000_0000, 1 << 30).unwrap();
        g.map(&ram).unwrap();
        assert_eq!(g.walk(0xa000_0000), Some(0x9000_0000));
        assert_eq!(g.walk(0xdfff_ffff), Some(0xcfff_ffff));
        assert_eq!(g.walk(0xe000_0000), None);
        assert_eq!(g.walk(0x9fff_ffff), None);
        // Remapping clears the old window.
        let small = GuestRam::new(0x8000_0000, 0x9000_0000, 2 << 20).unwrap();
        g.map(&small).unwrap();
        assert_eq!(g.walk(0xa000_0000), None);
        assert_eq!(g.walk(0x8000_0000), Some(0x9000_0000));
    }

    #[test]
    fn refuses_windows_it_cannot_map() {
        let mut g = Box::new(GStage::new());
        let big = GuestRam::new(0x8000_0000, 0x8000_0000, 3 << 30).unwrap();
        assert_eq!(g.map(&big), Err(MapError::TooLarge));
        let high = GuestRam::new((1 << 41) - (2 << 20), 0, 4 << 20).unwrap();
        assert_eq!(g.map(&high), Err(MapError::BeyondSv39x4));
    }
}
