//! Saving and restoring the guest's counters when the hypervisor takes
//! the hart from it and gives it back, with the host
//! firmware's own snapshot: `HostHpm::switch_out` (stop with
//! TAKE_SNAPSHOT) and `HostHpm::switch_in` (start with INIT_SNAPSHOT)
//! through [`HostPage`], the hypervisor's snapshot page registered with
//! the host firmware.
//!
//! With several guests the scheduler (`guests.rs`) uses the same page and
//! the same two calls at every switch, and [`Costs`] for its cost. With
//! one guest and the host command line's `rvpmu-hv.switch=1ms` (QEMU
//! `-append`) the hypervisor
//! takes the hart every millisecond of host time with its own timer
//! (Sstc's stimecmp, HS timer interrupt), where a scheduler would switch,
//! saves and restores the guest's counters as a switch away and back
//! would, and measures it: instret (every mode: the hypervisor and the
//! host firmware) around the pair, per number of running counters,
//! printed when the guest shuts down.
#![cfg(target_os = "none")]

use crate::console::hvprintln;
use crate::counters::GuestPmu;
use core::cell::UnsafeCell;
use rvpmu::mem::{MemFault, SupervisorMemory};
use rvpmu_rt::csr::{self, IRQ_LCOF, IRQ_S_TIMER};
use rvpmu_sbi::client::sbi;

const PAGE_SIZE: usize = 4096;

#[repr(C, align(4096))]
struct Page(UnsafeCell<[u8; PAGE_SIZE]>);

// SAFETY: one hart runs the hypervisor; the page is reached only through
// the one `HostPage` (raw copies, no reference kept) and by the host
// firmware during the hypervisor's own SBI calls.
unsafe impl Sync for Page {}

static PAGE: Page = Page(UnsafeCell::new([0; PAGE_SIZE]));

/// The hypervisor's snapshot page (host-physical = its address: satp is
/// 0), as `SupervisorMemory` for the snapshot layout's accessors.
pub struct HostPage(());

impl HostPage {
    /// The page, registered with the host firmware as its snapshot area.
    /// `None` when the host refuses (no snapshot: no switch).
    ///
    /// # Safety
    ///
    /// Called once: the returned value is the page's only handle.
    pub unsafe fn register() -> Option<HostPage> {
        let r = sbi().pmu_snapshot_set_shmem(Some(Self::addr()));
        (r.error == 0).then_some(HostPage(()))
    }

    /// Its address.
    pub fn addr() -> u64 {
        PAGE.0.get() as u64
    }

    fn offset(addr: u64, len: usize) -> Result<usize, MemFault> {
        let off = addr.wrapping_sub(Self::addr());
        if len <= PAGE_SIZE && off <= (PAGE_SIZE - len) as u64 {
            Ok(off as usize)
        } else {
            Err(MemFault { addr })
        }
    }
}

impl SupervisorMemory for HostPage {
    fn owns(&self, addr: u64, len: u64) -> bool {
        usize::try_from(len).is_ok_and(|l| Self::offset(addr, l).is_ok())
    }
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        let off = Self::offset(addr, buf.len())?;
        // SAFETY: [off, off + len) is inside the page (offset); the page
        // is not referenced elsewhere and `buf` is another object.
        unsafe {
            core::ptr::copy_nonoverlapping(
                (PAGE.0.get() as *const u8).add(off),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemFault> {
        let off = Self::offset(addr, data.len())?;
        // SAFETY: as in `read`; `&mut self` is the page's one handle.
        unsafe {
            core::ptr::copy_nonoverlapping(
                data.as_ptr(),
                (PAGE.0.get() as *mut u8).add(off),
                data.len(),
            )
        };
        Ok(())
    }
}

/// Per number of running counters (0..=32): switches, and their cost's
/// sum, minimum and maximum in instructions.
#[derive(Clone, Copy)]
struct Cost {
    n: u64,
    sum: u64,
    min: u64,
    max: u64,
}

/// Switch costs in instructions, per number of running counters.
pub struct Costs([Cost; 33]);

impl Costs {
    /// None yet.
    pub const fn new() -> Costs {
        Costs(
            [Cost {
                n: 0,
                sum: 0,
                min: u64::MAX,
                max: 0,
            }; 33],
        )
    }

    /// One switch with `running` counters (the stopped set) that cost
    /// `cost` instructions.
    pub fn add(&mut self, running: u32, cost: u64) {
        let c = &mut self.0[(running.count_ones() as usize).min(32)];
        c.n += 1;
        c.sum += cost;
        c.min = c.min.min(cost);
        c.max = c.max.max(cost);
    }

    /// One line per number of running counters seen: "`what` with k
    /// counter(s) running: ...".
    pub fn report(&self, what: &str) {
        for (k, c) in self.0.iter().enumerate().filter(|(_, c)| c.n > 0) {
            hvprintln!(
                "{what} with {k} counter(s) running: {} times, {}..{} instructions (mean {})",
                c.n,
                c.min,
                c.max,
                c.sum / c.n
            );
        }
    }
}

/// The switch path and its measurements.
pub struct Switch {
    page: HostPage,
    /// The quantum in timebase ticks.
    quantum: u64,
    cost: Costs,
}

impl Switch {
    /// With the registered page and a 1 ms quantum (`timebase` Hz); arms
    /// the hypervisor's timer and enables its interrupt (taken while the
    /// guest runs; HS-mode itself keeps sstatus.SIE clear).
    pub fn new(page: HostPage, timebase: u64) -> Switch {
        let s = Switch {
            page,
            quantum: (timebase / 1000).max(1),
            cost: Costs::new(),
        };
        s.arm();
        csr::SIE.set(1 << IRQ_S_TIMER);
        s
    }

    /// The next quantum's end (stimecmp = time + quantum).
    pub fn arm(&self) {
        let now = csr::TIME.read() as u64;
        csr::STIMECMP.write(now.wrapping_add(self.quantum) as usize);
    }

    /// Save the guest's counters and restore them, as a switch away and
    /// back would; an overflow found in the saved state is injected.
    pub fn round_trip(&mut self, pmu: &mut GuestPmu) {
        let area = HostPage::addr();
        let t0 = csr::INSTRET.read() as u64;
        let (stopped, new) = pmu.hw_mut().switch_out(&self.page, area);
        pmu.hw_mut().switch_in(&mut self.page, area);
        let cost = (csr::INSTRET.read() as u64).wrapping_sub(t0);
        if new != 0 {
            csr::HVIP.set(1 << IRQ_LCOF);
        }
        self.cost.add(stopped, cost);
    }

    /// One line per number of running counters seen.
    pub fn report(&self) {
        self.cost.report("switch save+restore");
    }
}
