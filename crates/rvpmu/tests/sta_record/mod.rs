//! The STA record as a test's `SupervisorMemory`: the writes the library
//! makes to the 64-byte record (the u32 sequence at 0, the u64 steal at 8,
//! the u8 preempted at 16, and `set_shmem`'s zeroing of the whole record)
//! go to a test's own atomics through [`Fields`]. Shared by the real-thread
//! race (`sta_race.rs`) and the loom model (`sta_loom.rs`), which keep the
//! record in different atomics.

use rvpmu::mem::{MemFault, SupervisorMemory};

/// Guest-physical address of the record.
pub const BASE: u64 = 0x1000;

/// Where a test keeps the record's fields (stores are `Relaxed`: the
/// protocol's ordering must come from its own fences).
pub trait Fields {
    fn store_sequence(&self, v: u32);
    fn store_steal(&self, v: u64);
    fn store_preempted(&self, v: u8);
}

/// `SupervisorMemory` over the record at [`BASE`], for the writer; reads
/// fault (the writer never reads the record).
pub struct Shared<F: Fields>(pub F);

impl<F: Fields> SupervisorMemory for Shared<F> {
    fn owns(&self, addr: u64, len: u64) -> bool {
        addr == BASE && len == 64
    }
    fn read(&self, addr: u64, _buf: &mut [u8]) -> Result<(), MemFault> {
        Err(MemFault { addr })
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemFault> {
        let f = &self.0;
        match (addr - BASE, data.len()) {
            (0, 4) => f.store_sequence(u32::from_le_bytes(data.try_into().unwrap())),
            (8, 8) => f.store_steal(u64::from_le_bytes(data.try_into().unwrap())),
            (16, 1) => f.store_preempted(data[0]),
            // set_shmem's zeroing of the whole record.
            (0, 64) if data.iter().all(|b| *b == 0) => {
                f.store_sequence(0);
                f.store_steal(0);
                f.store_preempted(0);
            }
            _ => return Err(MemFault { addr }),
        }
        Ok(())
    }
}
