//! Shared-memory layouts of the PMU extension: the counter snapshot page
//! (FID 7) and event-info entries (FID 8). Each layout lives here only.

use crate::mem::{aligned_shmem_address, shmem_address, MemFault, SupervisorMemory};
use crate::Error;

/// Size and alignment of the snapshot area (`sbi-spec`'s
/// `pmu::shmem_size::SIZE`).
pub const SNAPSHOT_SIZE: u64 = sbi_spec::pmu::shmem_size::SIZE as u64;

/// What `sbi_pmu_snapshot_set_shmem` asks for, parsed from its registers:
/// `None` disables the area, `Some` is a page-aligned physical address
/// (whether the supervisor owns it is the engine's question).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotArea(u64);

impl SnapshotArea {
    /// Parse `shmem_phys_lo` / `shmem_phys_hi`: the all-ones pair is
    /// `None`; an address above 64 bits is INVALID_ADDRESS, one not
    /// 4096-aligned INVALID_PARAM.
    #[inline(always)]
    pub fn parse(lo: u64, hi: u64) -> Result<Option<SnapshotArea>, Error> {
        Ok(aligned_shmem_address(lo, hi, SNAPSHOT_SIZE)?.map(SnapshotArea))
    }

    /// The physical address.
    pub fn addr(self) -> u64 {
        self.0
    }
}
/// Offset of `counter_overflow_bitmap`.
pub const OVERFLOW_OFFSET: u64 = 0x0;
/// Offset of `counter_values[0]`.
pub const VALUES_OFFSET: u64 = 0x8;
/// Entries in `counter_values`.
pub const VALUES: usize = 64;

/// Read `counter_values[j]` (j is relative to the call's counter_idx_base).
pub fn read_value<M: SupervisorMemory + ?Sized>(
    m: &M,
    area: u64,
    j: usize,
) -> Result<u64, MemFault> {
    debug_assert!(j < VALUES);
    m.read_u64(area + VALUES_OFFSET + 8 * (j as u64 % VALUES as u64))
}

/// Write `counter_values[j]`.
pub fn write_value<M: SupervisorMemory + ?Sized>(
    m: &mut M,
    area: u64,
    j: usize,
    v: u64,
) -> Result<(), MemFault> {
    debug_assert!(j < VALUES);
    m.write_u64(area + VALUES_OFFSET + 8 * (j as u64 % VALUES as u64), v)
}

/// Read `counter_overflow_bitmap`.
pub fn read_overflow<M: SupervisorMemory + ?Sized>(m: &M, area: u64) -> Result<u64, MemFault> {
    m.read_u64(area + OVERFLOW_OFFSET)
}

/// Write `counter_overflow_bitmap`.
pub fn write_overflow<M: SupervisorMemory + ?Sized>(
    m: &mut M,
    area: u64,
    v: u64,
) -> Result<(), MemFault> {
    m.write_u64(area + OVERFLOW_OFFSET, v)
}

/// Event-info entries (FID 8): `{u32 event_idx; u32 output; u64 event_data}`.
pub mod event_info {
    use super::*;

    /// Bytes per entry.
    pub const ENTRY_SIZE: u64 = 16;
    /// Required alignment of the entry array.
    pub const ALIGN: u64 = 16;
    /// Bit 0 of `output`: the event is supported.
    pub const SUPPORTED: u32 = 1;

    /// The entry array of one `sbi_pmu_event_get_info` call, parsed from
    /// its registers: 16-byte aligned, at least one entry, and a size that
    /// fits in 64 bits (whether the supervisor owns it is the engine's
    /// question).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Entries {
        addr: u64,
        num: u64,
    }

    impl Entries {
        /// Parse `shmem_phys_lo`, `shmem_phys_hi` and `num_entries`, in the
        /// order the answers must come: a misaligned array is
        /// INVALID_PARAM; no entries is `None` (nothing to do, memory not
        /// looked at); an address above 64 bits, the all-ones pair or a
        /// size that overflows is INVALID_ADDRESS (Table 19 reserves
        /// INVALID_PARAM for flags, alignment and reserved entry bits).
        pub fn parse(lo: u64, hi: u64, num: u64) -> Result<Option<Entries>, Error> {
            if !lo.is_multiple_of(ALIGN) {
                return Err(Error::InvalidParam);
            }
            if num == 0 {
                return Ok(None);
            }
            let Some(addr) = shmem_address(lo, hi)? else {
                return Err(Error::InvalidAddress);
            };
            num.checked_mul(ENTRY_SIZE).ok_or(Error::InvalidAddress)?;
            Ok(Some(Entries { addr, num }))
        }

        /// Physical address of entry 0.
        pub fn addr(&self) -> u64 {
            self.addr
        }
        /// Number of entries (at least 1).
        pub fn num(&self) -> u64 {
            self.num
        }
        /// Bytes the array covers (cannot overflow).
        pub fn size(&self) -> u64 {
            self.num * ENTRY_SIZE
        }
    }

    /// The caller-provided fields of one entry.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Entry {
        /// Word 0.
        pub event_idx: u32,
        /// Words 2-3 ([`read`] leaves them 0, unread, for the event types
        /// that do not use them).
        pub event_data: u64,
    }

    impl Entry {
        /// The event the entry names ([`crate::event::Event::decode_info`]).
        #[inline]
        pub fn event(&self) -> Result<crate::event::Event, Error> {
            crate::event::Event::decode_info(self.event_idx, self.event_data)
        }
    }

    /// Read the `event_idx` word of entry `k`.
    #[inline]
    pub fn read_idx<M: SupervisorMemory + ?Sized>(
        m: &M,
        base: u64,
        k: u64,
    ) -> Result<u32, MemFault> {
        m.read_u32(base + k * ENTRY_SIZE)
    }

    /// Read entry `k`: `event_data` only when its event type uses it
    /// ([`crate::event::info_uses_data`]), else 0.
    #[inline]
    pub fn read<M: SupervisorMemory + ?Sized>(m: &M, base: u64, k: u64) -> Result<Entry, MemFault> {
        let event_idx = read_idx(m, base, k)?;
        let event_data = if crate::event::info_uses_data(event_idx) {
            m.read_u64(base + k * ENTRY_SIZE + 8)?
        } else {
            0
        };
        Ok(Entry {
            event_idx,
            event_data,
        })
    }

    /// Write the `output` word of entry `k`.
    pub fn write_output<M: SupervisorMemory + ?Sized>(
        m: &mut M,
        base: u64,
        k: u64,
        v: u32,
    ) -> Result<(), MemFault> {
        m.write_u32(base + k * ENTRY_SIZE + 4, v)
    }
}

#[cfg(test)]
mod tests {
    use super::event_info::Entries;
    use super::*;

    #[test]
    fn snapshot_area_parse() {
        assert_eq!(SnapshotArea::parse(u64::MAX, u64::MAX), Ok(None));
        assert_eq!(
            SnapshotArea::parse(0x8008_0000, 0).map(|a| a.map(SnapshotArea::addr)),
            Ok(Some(0x8008_0000))
        );
        assert_eq!(
            SnapshotArea::parse(0x8008_0008, 0),
            Err(Error::InvalidParam)
        );
        assert_eq!(
            SnapshotArea::parse(0x8008_0000, 1),
            Err(Error::InvalidAddress)
        );
        assert_eq!(SnapshotArea::parse(u64::MAX, 0), Err(Error::InvalidParam));
    }

    #[test]
    fn event_info_entries_parse_in_table_19_order() {
        assert_eq!(
            Entries::parse(0x8008_0008, 1, 0),
            Err(Error::InvalidParam),
            "alignment first"
        );
        assert_eq!(
            Entries::parse(0x8008_0000, 1, 0),
            Ok(None),
            "no entries: nothing to look at"
        );
        assert_eq!(
            Entries::parse(0x8008_0000, 1, 1),
            Err(Error::InvalidAddress)
        );
        assert_eq!(Entries::parse(!15, u64::MAX, 1), Err(Error::InvalidAddress));
        assert_eq!(
            Entries::parse(0x8008_0000, 0, 1 << 60),
            Err(Error::InvalidAddress),
            "size overflows"
        );
        let e = Entries::parse(0x8008_0000, 0, 3).unwrap().unwrap();
        assert_eq!((e.addr(), e.num(), e.size()), (0x8008_0000, 3, 48));
    }
}
