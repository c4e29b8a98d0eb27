//! Test doubles for the two seams: a simulated hart ([`SimHart`]) and a
//! byte-buffer supervisor memory ([`BufMemory`]). Host only (`sim` feature).

extern crate std;
use crate::counter::HW_SLOTS;
use crate::hw::{bits, Hpm};
use crate::mem::{MemFault, Ranges, SupervisorMemory};
use std::cell::Cell;
use std::vec;
use std::vec::Vec;

/// Privilege mode an event stream happens in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// U-mode.
    U,
    /// S/HS-mode.
    S,
    /// M-mode.
    M,
    /// VS-mode.
    VS,
    /// VU-mode.
    VU,
}

impl Mode {
    fn inhibit_bit(self) -> u64 {
        match self {
            Mode::U => bits::UINH,
            Mode::S => bits::SINH,
            Mode::M => bits::MINH,
            Mode::VS => bits::VSINH,
            Mode::VU => bits::VUINH,
        }
    }
}

/// Selector the fixed `mcycle` counts (QEMU's encoding: event_idx of
/// CPU_CYCLES); HPM counters programmed with it count cycles too.
pub const SIM_CYCLES: u64 = 1;
/// Selector `minstret` counts.
pub const SIM_INSTRET: u64 = 2;

/// A simulated hart: counters with configurable presence and width,
/// mcountinhibit, selectors, Sscofpmf OF bits and the LCOFI pending bit.
#[derive(Clone, Debug)]
pub struct SimHart {
    present: u32,
    width: [u8; HW_SLOTS],
    counters: [u64; HW_SLOTS],
    events: [u64; HW_SLOTS],
    fixed_cfg: [u64; 3],
    inhibit: u32,
    sscofpmf: bool,
    smcntrpmf: bool,
    /// Local counter-overflow interrupt pending (mip.LCOFIP).
    pub lcofip: bool,
    /// Accesses to counters that do not exist (an engine bug if non-zero).
    pub absent_accesses: u32,
    /// Every CSR write in order, for tests about ordering.
    pub log: Vec<HwWrite>,
    /// Whether writes are appended to `log` (off for benchmarks).
    pub logging: bool,
    /// QEMU's event map (see [`SimHart::qemu_event_map`]): `(event id,
    /// counter)` pairs, `None` when the hart counts an event on any number
    /// of counters.
    event_map: Option<Vec<(u64, usize)>>,
}

/// The mhpmevent bits QEMU keys its event map on (`MHPMEVENT_IDX_MASK`).
pub const QEMU_EVENT_ID_MASK: u64 = 0xF_FFFF;

/// One CSR write seen by the simulated hart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HwWrite {
    /// mcycle / minstret / mhpmcounterN := value.
    Counter(usize, u64),
    /// mhpmeventN := value.
    Event(usize, u64),
    /// mcountinhibit := value.
    Inhibit(u32),
    /// mcyclecfg / minstretcfg := value.
    FixedCfg(usize, u64),
}

impl SimHart {
    /// A hart with the given counters (bit per CSR offset) all `width` bits.
    pub fn new(present: u32, width: u8, sscofpmf: bool, smcntrpmf: bool) -> SimHart {
        let mut w = [0u8; HW_SLOTS];
        for (i, slot) in w.iter_mut().enumerate() {
            if present & (1 << i) != 0 {
                *slot = if i == 0 || i == 2 { 64 } else { width };
            }
        }
        SimHart {
            present: present & !0b10,
            width: w,
            counters: [0; HW_SLOTS],
            events: [0; HW_SLOTS],
            fixed_cfg: [0; 3],
            inhibit: 0,
            sscofpmf,
            smcntrpmf,
            lcofip: false,
            absent_accesses: 0,
            log: Vec::new(),
            logging: true,
            event_map: None,
        }
    }

    /// Count as QEMU 10 does (target/riscv/pmu.c, `riscv_pmu_update_event_map`): an HPM
    /// counter counts an event only if QEMU's map sends the event id
    /// (mhpmevent bits 0..19) to it. Writing an id no counter holds maps it
    /// to the written counter; writing an id another counter holds changes
    /// nothing (that counter never counts); writing an id of 0 unmaps every
    /// id of the written counter.
    pub fn qemu_event_map(mut self) -> SimHart {
        self.event_map = Some(Vec::new());
        self
    }

    /// Whether HPM counter `i` counts the event `selector` under QEMU's map
    /// (always true without [`SimHart::qemu_event_map`]).
    fn mapped_to(&self, selector: u64, i: usize) -> bool {
        match &self.event_map {
            None => true,
            Some(m) => m.contains(&(selector & QEMU_EVENT_ID_MASK, i)),
        }
    }

    /// QEMU virt's hart: cycle, instret, 16 64-bit HPM counters, Sscofpmf.
    pub fn qemu_virt() -> SimHart {
        SimHart::new(0x7fffd, 64, true, false)
    }

    fn note(&mut self, w: HwWrite) {
        if self.logging {
            self.log.push(w);
        }
    }

    /// Set one counter's width (for wrap tests).
    pub fn set_width(&mut self, i: usize, bits: u8) {
        self.width[i] = bits;
    }

    fn check(&self, i: usize) -> bool {
        i < HW_SLOTS && self.present & (1 << i) != 0
    }

    fn mask(&self, i: usize) -> u64 {
        match self.width[i] {
            64 => u64::MAX,
            w => (1u64 << w) - 1,
        }
    }

    /// Let `count` occurrences of the event `selector` happen in `mode`.
    /// Every running counter programmed for it advances; an HPM counter
    /// that wraps sets OF (Sscofpmf) and, if OF was clear, raises LCOFIP.
    pub fn tick(&mut self, mode: Mode, selector: u64, count: u64) {
        for i in 0..HW_SLOTS {
            if !self.check(i) || self.inhibit & (1 << i) != 0 {
                continue;
            }
            let (sel, filt) = match i {
                0 => (
                    SIM_CYCLES,
                    if self.smcntrpmf { self.fixed_cfg[0] } else { 0 },
                ),
                2 => (
                    SIM_INSTRET,
                    if self.smcntrpmf { self.fixed_cfg[2] } else { 0 },
                ),
                _ => (
                    self.events[i] & !(bits::ALL_INH | bits::OF),
                    if self.sscofpmf { self.events[i] } else { 0 },
                ),
            };
            if sel == 0 || sel != selector || filt & mode.inhibit_bit() != 0 {
                continue;
            }
            if i >= 3 && !self.mapped_to(sel, i) {
                continue;
            }
            let m = self.mask(i);
            let old = self.counters[i];
            let sum = old as u128 + count as u128;
            let wrapped = sum > m as u128;
            self.counters[i] = (sum & m as u128) as u64;
            if wrapped && self.sscofpmf && i >= 3 {
                if self.events[i] & bits::OF == 0 {
                    self.lcofip = true;
                }
                self.events[i] |= bits::OF;
            }
        }
    }

    /// Current mhpmevent value (including OF) of counter `i`.
    pub fn event_reg(&self, i: usize) -> u64 {
        self.events[i]
    }

    /// Current mcyclecfg / minstretcfg.
    pub fn fixed_cfg(&self, i: usize) -> u64 {
        self.fixed_cfg[i]
    }

    /// Raw counter value (as S-mode would read it through the CSR).
    pub fn counter(&self, i: usize) -> u64 {
        self.counters[i]
    }
}

impl Hpm for SimHart {
    fn present(&self) -> u32 {
        self.present
    }
    fn read_counter(&self, i: usize) -> u64 {
        if !self.check(i) {
            return 0;
        }
        self.counters[i]
    }
    fn write_counter(&mut self, i: usize, v: u64) {
        self.note(HwWrite::Counter(i, v));
        if !self.check(i) {
            self.absent_accesses += 1;
            return;
        }
        self.counters[i] = v & self.mask(i);
    }
    fn read_event(&self, i: usize) -> u64 {
        if self.check(i) && i >= 3 {
            self.events[i]
        } else {
            0
        }
    }
    fn write_event(&mut self, i: usize, v: u64) {
        self.note(HwWrite::Event(i, v));
        if !self.check(i) || i < 3 {
            self.absent_accesses += 1;
            return;
        }
        self.events[i] = if self.sscofpmf {
            v
        } else {
            v & !(bits::ALL_INH | bits::OF)
        };
        if let Some(m) = &mut self.event_map {
            let id = v & QEMU_EVENT_ID_MASK;
            if id == 0 {
                m.retain(|&(_, c)| c != i);
            } else if !m.iter().any(|&(e, _)| e == id) {
                m.push((id, i));
            }
        }
    }
    fn read_inhibit(&self) -> u32 {
        self.inhibit
    }
    fn write_inhibit(&mut self, v: u32) {
        self.note(HwWrite::Inhibit(v));
        // Bit 1 (time) is read-only zero; absent counters' bits are WARL 0.
        self.inhibit = v & self.present;
    }
    fn write_fixed_cfg(&mut self, i: usize, v: u64) {
        self.note(HwWrite::FixedCfg(i, v));
        if self.smcntrpmf && (i == 0 || i == 2) {
            self.fixed_cfg[i] = v & bits::ALL_INH;
        } else {
            self.absent_accesses += 1;
        }
    }
}

/// Supervisor memory as a byte buffer at a physical base, with the part
/// the supervisor owns given as [`Ranges`]. Every access outside the
/// owned ranges is refused and counted; every write is logged.
#[derive(Debug)]
pub struct BufMemory {
    base: u64,
    bytes: Vec<u8>,
    ranges: Ranges,
    /// Refused accesses (an engine bug if non-zero: it must check first).
    pub faults: Cell<u32>,
    /// Every write: (address, length).
    pub writes: Vec<(u64, usize)>,
}

impl BufMemory {
    /// `size` bytes at `base`; the supervisor owns `[owned_base, owned_base + owned_size)`.
    pub fn new(base: u64, size: usize, owned_base: u64, owned_size: u64) -> BufMemory {
        let mut ranges = Ranges::new();
        ranges.add_ram(owned_base, owned_size);
        BufMemory {
            base,
            bytes: vec![0; size],
            ranges,
            faults: Cell::new(0),
            writes: Vec::new(),
        }
    }

    /// QEMU-virt-like: 1 MiB at 0x8000_0000 whose first 256 KiB are the
    /// firmware's.
    pub fn virt() -> BufMemory {
        BufMemory::new(0x8000_0000, 1 << 20, 0x8004_0000, (1 << 20) - 0x4_0000)
    }

    fn slice(&self, addr: u64, len: usize) -> Option<core::ops::Range<usize>> {
        if !self.ranges.owns(addr, len as u64) {
            return None;
        }
        let off = addr.checked_sub(self.base)? as usize;
        let end = off.checked_add(len)?;
        (end <= self.bytes.len()).then_some(off..end)
    }

    /// Supervisor-side view: read bytes directly (no ownership check).
    pub fn peek(&self, addr: u64, len: usize) -> &[u8] {
        let off = (addr - self.base) as usize;
        &self.bytes[off..off + len]
    }

    /// Supervisor-side store (no ownership check, not logged).
    pub fn poke(&mut self, addr: u64, data: &[u8]) {
        let off = (addr - self.base) as usize;
        self.bytes[off..off + data.len()].copy_from_slice(data);
    }

    /// Supervisor-side u64 load.
    pub fn peek_u64(&self, addr: u64) -> u64 {
        u64::from_le_bytes(self.peek(addr, 8).try_into().unwrap())
    }
}

impl SupervisorMemory for BufMemory {
    fn owns(&self, addr: u64, len: u64) -> bool {
        self.ranges.owns(addr, len)
    }
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        match self.slice(addr, buf.len()) {
            Some(r) => {
                buf.copy_from_slice(&self.bytes[r]);
                Ok(())
            }
            None => {
                self.faults.set(self.faults.get() + 1);
                Err(MemFault { addr })
            }
        }
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemFault> {
        match self.slice(addr, data.len()) {
            Some(r) => {
                self.bytes[r].copy_from_slice(data);
                self.writes.push((addr, data.len()));
                Ok(())
            }
            None => {
                self.faults.set(self.faults.get() + 1);
                Err(MemFault { addr })
            }
        }
    }
}
