//! Shared-memory layouts of the PMU extension: the counter snapshot page
//! (FID 7) and event-info entries (FID 8). Each layout lives here only.

use crate::mem::{MemFault, SupervisorMemory};

/// Size and alignment of the snapshot area.
pub const SNAPSHOT_SIZE: u64 = 4096;
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

    /// The caller-provided fields of one entry.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Entry {
        /// Word 0.
        pub event_idx: u32,
        /// Words 2-3.
        pub event_data: u64,
    }

    /// Read entry `k`.
    pub fn read<M: SupervisorMemory + ?Sized>(m: &M, base: u64, k: u64) -> Result<Entry, MemFault> {
        let a = base + k * ENTRY_SIZE;
        Ok(Entry {
            event_idx: m.read_u32(a)?,
            event_data: m.read_u64(a + 8)?,
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
