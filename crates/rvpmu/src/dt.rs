//! The `riscv,pmu` device-tree binding -> [`EventMap`].
//!
//! Three optional properties (seed 001):
//! - `riscv,event-to-mhpmevent`: rows `<event_idx sel_hi sel_lo>`, the
//!   mhpmevent selector for a general/cache event;
//! - `riscv,event-to-mhpmcounters`: rows `<first_idx last_idx counter_bitmap>`,
//!   which counters can count a range of general/cache events;
//! - `riscv,raw-event-to-mhpmcounters`: rows `<match_hi match_lo mask_hi mask_lo
//!   counter_bitmap>`, raw events `e` with `e & mask == match`.
//!
//! Lookups for general and cache events are precomputed into direct tables
//! at parse time, so matching costs the same whatever the table size.

use crate::event::{Cache, Event, General};

/// Rows accepted per property. A node with more rows is refused with
/// [`DtError`] naming the property (OpenSBI uses the same cap).
pub const MAX_ROWS: usize = 256;

const GENERAL_SLOTS: usize = General::ALL.len() + 1;

/// One `riscv,raw-event-to-mhpmcounters` row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawRow {
    /// Value the invariant bits must have.
    pub select: u64,
    /// Invariant bits.
    pub mask: u64,
    /// Counters (bitmap over CSR offsets) that can count these events.
    pub counters: u32,
}

/// One `riscv,event-to-mhpmcounters` row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RangeRow {
    /// First event_idx of the range.
    pub first: u32,
    /// Last event_idx of the range (inclusive).
    pub last: u32,
    /// Counters (bitmap over CSR offsets).
    pub counters: u32,
}

/// One `riscv,event-to-mhpmevent` row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SelectorRow {
    /// The event.
    pub event_idx: u32,
    /// Value for mhpmevent.
    pub selector: u64,
}

/// The platform's event-to-counter knowledge, from the DT or built by code.
#[derive(Clone, Debug)]
pub struct EventMap {
    general_ctrs: [u32; GENERAL_SLOTS],
    general_sel: [Option<u64>; GENERAL_SLOTS],
    cache_ctrs: [u32; Cache::CODE_SPACE],
    cache_sel: [Option<u64>; Cache::CODE_SPACE],
    selectors: [SelectorRow; MAX_ROWS],
    n_selectors: usize,
    ranges: [RangeRow; MAX_ROWS],
    n_ranges: usize,
    raw: [RawRow; MAX_ROWS],
    n_raw: usize,
}

impl Default for EventMap {
    fn default() -> Self {
        EventMap::empty()
    }
}

impl EventMap {
    /// No rows: only cycles/instructions on the fixed counters are countable.
    pub const fn empty() -> EventMap {
        EventMap {
            general_ctrs: [0; GENERAL_SLOTS],
            general_sel: [None; GENERAL_SLOTS],
            cache_ctrs: [0; Cache::CODE_SPACE],
            cache_sel: [None; Cache::CODE_SPACE],
            selectors: [SelectorRow {
                event_idx: 0,
                selector: 0,
            }; MAX_ROWS],
            n_selectors: 0,
            ranges: [RangeRow {
                first: 0,
                last: 0,
                counters: 0,
            }; MAX_ROWS],
            n_ranges: 0,
            raw: [RawRow {
                select: 0,
                mask: 0,
                counters: 0,
            }; MAX_ROWS],
            n_raw: 0,
        }
    }

    /// Add a `riscv,event-to-mhpmevent` row (no validation here).
    pub fn push_selector(&mut self, row: SelectorRow) -> bool {
        if self.n_selectors == MAX_ROWS {
            return false;
        }
        self.selectors[self.n_selectors] = row;
        self.n_selectors += 1;
        match Event::decode(row.event_idx as u64, 0) {
            Ok(Event::General(g)) => self.general_sel[g as usize] = Some(row.selector),
            Ok(Event::Cache(c)) => self.cache_sel[c.code() as usize] = Some(row.selector),
            _ => {}
        }
        true
    }

    /// Add a `riscv,event-to-mhpmcounters` row (no validation here).
    pub fn push_range(&mut self, row: RangeRow) -> bool {
        if self.n_ranges == MAX_ROWS {
            return false;
        }
        self.ranges[self.n_ranges] = row;
        self.n_ranges += 1;
        for g in General::ALL {
            let idx = g as u32;
            if (row.first..=row.last).contains(&idx) {
                self.general_ctrs[g as usize] |= row.counters;
            }
        }
        for code in 0..Cache::CODE_SPACE as u16 {
            if let Some(c) = Cache::from_code(code) {
                let idx = Event::Cache(c).idx();
                if (row.first..=row.last).contains(&idx) {
                    self.cache_ctrs[code as usize] |= row.counters;
                }
            }
        }
        true
    }

    /// Add a `riscv,raw-event-to-mhpmcounters` row (no validation here).
    pub fn push_raw(&mut self, row: RawRow) -> bool {
        if self.n_raw == MAX_ROWS {
            return false;
        }
        self.raw[self.n_raw] = row;
        self.n_raw += 1;
        true
    }

    /// Counters (bitmap over CSR offsets) the DT says can count `ev`.
    /// Firmware events give 0. The fixed counters for cycles/instructions
    /// are the engine's business, not the DT's.
    pub fn counters(&self, ev: &Event) -> u32 {
        match *ev {
            Event::General(g) => self.general_ctrs[g as usize],
            Event::Cache(c) => self.cache_ctrs[c.code() as usize],
            Event::Raw(d) | Event::RawV2(d) => self.raw[..self.n_raw]
                .iter()
                .filter(|r| d & r.mask == r.select)
                .fold(0, |acc, r| acc | r.counters),
            _ => 0,
        }
    }

    /// mhpmevent selector for `ev` (without the Sscofpmf filter/OF bits):
    /// the DT row when there is one, else the zero-extended event_idx
    /// (general/cache), or the raw event_data.
    pub fn selector(&self, ev: &Event) -> u64 {
        match *ev {
            Event::General(g) => self.general_sel[g as usize].unwrap_or(ev.idx() as u64),
            Event::Cache(c) => self.cache_sel[c.code() as usize].unwrap_or(ev.idx() as u64),
            Event::Raw(d) | Event::RawV2(d) => d,
            _ => 0,
        }
    }

    /// The `riscv,event-to-mhpmevent` rows, in DT order.
    pub fn selector_rows(&self) -> &[SelectorRow] {
        &self.selectors[..self.n_selectors]
    }

    /// The `riscv,event-to-mhpmcounters` rows, in DT order.
    pub fn range_rows(&self) -> &[RangeRow] {
        &self.ranges[..self.n_ranges]
    }

    /// The `riscv,raw-event-to-mhpmcounters` rows, in DT order.
    pub fn raw_rows(&self) -> &[RawRow] {
        &self.raw[..self.n_raw]
    }
}
