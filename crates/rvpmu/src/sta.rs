//! Steal-time accounting (SBI STA, EID 0x535441): registration of the
//! per-hart 64-byte record and the writer side of its sequence protocol.
//!
//! Record layout (spec, "STA Shared Memory Structure"), little-endian:
//! `u32 sequence @0, u32 flags @4, u64 steal @8, u8 preempted @16, pad to 64`.
//!
//! The writer keeps its own sequence and steal total instead of reading
//! them back, so a supervisor scribbling on the record can only confuse
//! itself, never the accounting.

use crate::mem::{aligned_shmem_address, SupervisorMemory};
use crate::Error;
use core::sync::atomic::Ordering;
use sync::fence;

/// The protocol's fences, in one place so the loom model
/// (`tests/sta_loom.rs`, built with `--cfg loom`) can see them: loom only
/// tracks its own `fence`, and `core`'s would be invisible to it.
mod sync {
    #[cfg(not(loom))]
    pub(super) use core::sync::atomic::fence;
    #[cfg(loom)]
    pub(super) use loom::sync::atomic::fence;
}

/// Size and alignment of the record.
pub const STA_SIZE: u64 = 64;
/// Offset of `sequence`.
pub const SEQUENCE_OFFSET: u64 = 0;
/// Offset of `flags`.
pub const FLAGS_OFFSET: u64 = 4;
/// Offset of `steal`.
pub const STEAL_OFFSET: u64 = 8;
/// Offset of `preempted`.
pub const PREEMPTED_OFFSET: u64 = 16;

/// What `sbi_steal_time_set_shmem` asks for, parsed from its registers:
/// `None` stops reporting, `Some` is a 64-byte aligned physical address
/// (whether the supervisor owns it is [`StealTime::set_shmem`]'s question).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaArea(u64);

impl StaArea {
    /// Parse `shmem_phys_lo` / `shmem_phys_hi`: the all-ones pair is
    /// `None`; an address above 64 bits is INVALID_ADDRESS, one not
    /// 64-byte aligned INVALID_PARAM.
    pub fn parse(lo: u64, hi: u64) -> Result<Option<StaArea>, Error> {
        Ok(aligned_shmem_address(lo, hi, STA_SIZE)?.map(StaArea))
    }

    /// The physical address.
    pub fn addr(self) -> u64 {
        self.0
    }
}

/// One (virtual) hart's steal-time state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StealTime {
    area: Option<u64>,
    sequence: u32,
    steal_ns: u64,
    preempted: bool,
}

impl StealTime {
    /// Nothing registered.
    pub const fn new() -> StealTime {
        StealTime {
            area: None,
            sequence: 0,
            steal_ns: 0,
            preempted: false,
        }
    }

    /// The registered record's address.
    pub fn area(&self) -> Option<u64> {
        self.area
    }

    /// Total steal reported so far, in nanoseconds.
    pub fn steal_ns(&self) -> u64 {
        self.steal_ns
    }

    /// `sbi_steal_time_set_shmem` (FID 0; [`crate::ecall::sta`] parses the
    /// registers). Registration zeroes the 64 bytes before returning; `None`
    /// stops reporting; a new address moves the record (the old one is no
    /// longer written).
    pub fn set_shmem<M: SupervisorMemory + ?Sized>(
        &mut self,
        mem: &mut M,
        area: Option<StaArea>,
    ) -> Result<(), Error> {
        let Some(StaArea(addr)) = area else {
            self.area = None;
            return Ok(());
        };
        if !mem.owns(addr, STA_SIZE) {
            return Err(Error::InvalidAddress);
        }
        mem.zero(addr, STA_SIZE).map_err(|_| Error::Failed)?;
        self.area = Some(addr);
        self.sequence = 0;
        self.steal_ns = 0;
        self.preempted = false;
        Ok(())
    }

    /// Add `steal_ns` of stolen time and publish it with the sequence
    /// protocol: odd sequence, steal, preempted, even sequence. `preempted`
    /// says whether the hart is still withheld after this update; write
    /// `false` before the hart runs again.
    pub fn account<M: SupervisorMemory + ?Sized>(
        &mut self,
        mem: &mut M,
        steal_ns: u64,
        preempted: bool,
    ) {
        self.steal_ns = self.steal_ns.wrapping_add(steal_ns);
        self.preempted = preempted;
        let Some(a) = self.area else { return };
        // A failed write means the area stopped being the supervisor's
        // (it cannot, once checked); drop the registration rather than
        // write anywhere else.
        if self.publish(mem, a).is_err() {
            self.area = None;
        }
    }

    fn publish<M: SupervisorMemory + ?Sized>(
        &mut self,
        mem: &mut M,
        a: u64,
    ) -> Result<(), crate::mem::MemFault> {
        // `sequence` is even between updates; odd while one is in flight.
        self.sequence = self.sequence.wrapping_add(1);
        mem.write_u32(a + SEQUENCE_OFFSET, self.sequence)?;
        fence(Ordering::SeqCst);
        mem.write_u64(a + STEAL_OFFSET, self.steal_ns)?;
        mem.write(a + PREEMPTED_OFFSET, &[self.preempted as u8])?;
        fence(Ordering::SeqCst);
        self.sequence = self.sequence.wrapping_add(1);
        mem.write_u32(a + SEQUENCE_OFFSET, self.sequence)
    }
}

/// Read a steal value with the reader side of the protocol: retry while
/// the sequence is odd or changed across the read. `read_seq` and
/// `read_steal` load the record's fields (volatile, from the caller's
/// mapping). Gives up after `max_tries` and returns `None`.
pub fn read_steal(
    mut read_seq: impl FnMut() -> u32,
    mut read_steal: impl FnMut() -> u64,
    max_tries: usize,
) -> Option<u64> {
    for _ in 0..max_tries {
        let s0 = read_seq();
        fence(Ordering::Acquire);
        let v = read_steal();
        fence(Ordering::Acquire);
        let s1 = read_seq();
        if s0 & 1 == 0 && s0 == s1 {
            return Some(v);
        }
        core::hint::spin_loop();
    }
    None
}

/// Steal-time accounting for a hypervisor (or any SBI implementation that
/// multiplexes harts): one [`StealTime`] per virtual hart, driven by the
/// scheduler's notion of "runnable but not running".
///
/// ```
/// use rvpmu::sta::StealAccounting;
/// use rvpmu::sim::BufMemory;
///
/// // Two vCPUs; the guest registers its record through the STA ecall,
/// // which the hypervisor forwards to `ecall::sta` with that vCPU's state.
/// let mut mem = BufMemory::virt();
/// let mut steal = StealAccounting::<2>::new();
/// let r = rvpmu::ecall::sta(steal.vhart(0).unwrap(), &mut mem, 0, [0x8008_0000, 0, 0, 0, 0, 0]);
/// assert_eq!(r.error, 0);
///
/// // vCPU 0 became runnable at t=1000 ns but the host ran something else
/// // until t=4000 ns: mark it preempted, then account the wait when it
/// // is about to run again.
/// steal.preempt(0, &mut mem);
/// steal.account(0, &mut mem, 4000 - 1000, false);
/// assert_eq!(mem.peek_u64(0x8008_0000 + 8), 3000);
/// assert_eq!(mem.peek(0x8008_0000 + 16, 1), &[0]);
/// ```
#[derive(Clone, Debug)]
pub struct StealAccounting<const N: usize> {
    harts: [StealTime; N],
}

impl<const N: usize> Default for StealAccounting<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> StealAccounting<N> {
    /// No vhart registered.
    pub const fn new() -> Self {
        StealAccounting {
            harts: [StealTime::new(); N],
        }
    }

    /// One vhart's state (for its STA `set_shmem` call).
    pub fn vhart(&mut self, vhart: usize) -> Option<&mut StealTime> {
        self.harts.get_mut(vhart)
    }

    /// The vhart is being withheld: publish `preempted = 1` now, steal later.
    pub fn preempt<M: SupervisorMemory + ?Sized>(&mut self, vhart: usize, mem: &mut M) {
        if let Some(h) = self.harts.get_mut(vhart) {
            h.account(mem, 0, true);
        }
    }

    /// Add `steal_ns` to the vhart's steal; `preempted` as in
    /// [`StealTime::account`] (`false` right before the vhart runs again).
    pub fn account<M: SupervisorMemory + ?Sized>(
        &mut self,
        vhart: usize,
        mem: &mut M,
        steal_ns: u64,
        preempted: bool,
    ) {
        if let Some(h) = self.harts.get_mut(vhart) {
            h.account(mem, steal_ns, preempted);
        }
    }
}
