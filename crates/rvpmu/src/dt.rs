//! The `riscv,pmu` device-tree binding -> [`EventMap`].
//!
//! Three optional properties (OpenSBI's `docs/pmu_support.md`):
//! - `riscv,event-to-mhpmevent`: rows `<event_idx sel_hi sel_lo>`, the
//!   mhpmevent selector for a general/cache event;
//! - `riscv,event-to-mhpmcounters`: rows `<first_idx last_idx counter_bitmap>`,
//!   which counters can count a range of general/cache events;
//! - `riscv,raw-event-to-mhpmcounters`: rows `<match_hi match_lo mask_hi mask_lo
//!   counter_bitmap>`, raw events `e` with `e & mask == match`.
//!
//! Cells are big-endian `u32`. Counter bitmaps are over CSR offsets: bit 0
//! `cycle`, bit 1 `time` (never a counter), bit 2 `instret`, bit N
//! `mhpmcounterN`.
//!
//! One more property is this project's own (not in the binding):
//! - `rvpmu,one-counter-per-event` (boolean, no value): the hardware counts
//!   an event on at most one HPM counter at a time, so a second HPM counter
//!   programmed with the selector of one already configured would read 0.
//!   The engine then never hands out such a counter (see
//!   [`EventMap::one_counter_per_event`]). QEMU behaves this way but its
//!   generated tree does not say so; [`PLATFORM_QUIRKS`] turns the property
//!   on for it by the root node's `compatible`.
//!
//! # Validation
//!
//! The parser refuses, with a [`DtError`] naming the property, the row
//! (0-based, with its cells as written) and the reason:
//! cell counts that do not form whole rows, more than [`MAX_ROWS`] rows,
//! `first > last`, overlapping ranges, event indices that are not general or
//! cache events (raw, firmware, reserved types, bits above 19), empty
//! bitmaps, bit 1 (`time`), counter 0 for anything but `CPU_CYCLES` and
//! counter 2 for anything but `INSTRUCTIONS` (OpenSBI only refuses rows
//! *starting* above event 2 on counters 0-2; this parser also refuses e.g.
//! cycles on `instret`), counters the hart does not have (when told which it
//! has), selectors for events no range maps, duplicate selector rows,
//! selector 0 (mhpmevent 0 means "no event"), selectors without the
//! counter property, raw match values with bits outside their mask, and
//! duplicate raw rows.
//!
//! Rows that are well formed but can never take effect are accepted and
//! reported by [`EventMap::warnings`]: selectors for event codes SBI 3.0
//! does not define (the binding documentation's example 1 has one, `0xB`, and the official
//! examples must parse), ranges with no defined event, raw rows whose match
//! value needs bits above 55 (example 1 again), selectors that set the
//! Sscofpmf bits 58..63.
//!
//! # Lookup cost
//!
//! General and cache events are direct-indexed tables filled at parse time:
//! O(1). Raw rows are grouped by distinct mask and sorted by match value
//! within a group; a raw lookup does one binary search per distinct mask,
//! O(G log(n/G)) for n rows with G distinct masks. Real tables use one to
//! three masks (the binding documentation's examples: 1 for the Andes table of 50 rows, 3 for the
//! HiFive one), so the cost hardly depends on the table size.
//! [`EventMap::raw_counters_scan`] is the O(n) reference the tests compare
//! against and benchmarks can measure.

use core::fmt;

use crate::event::{
    event_idx as make_event_idx, kind, reserved_bits, type_of, Cache, Event, General,
    RAW_V2_DATA_MASK,
};

/// Rows accepted per property. A node with more rows is refused with
/// [`Reason::TooManyRows`] (OpenSBI caps its whole event table at 256 too).
pub const MAX_ROWS: usize = 256;

/// mhpmevent bits 58..63 (VUINH, VSINH, UINH, SINH, MINH, OF) that Sscofpmf
/// gives a meaning; a DT selector should leave them clear.
pub const SSCOFPMF_BITS: u64 = 0x3f << 58;

const GENERAL_SLOTS: usize = General::ALL.len() + 1;
const CYCLE_BIT: u32 = 1 << 0;
const TIME_BIT: u32 = 1 << 1;
const INSTRET_BIT: u32 = 1 << 2;
/// First event_idx that is not a general or cache event (raw, type 2).
const FIRST_RAW_IDX: u32 = make_event_idx(kind::RAW, 0);
const CYCLES_IDX: u32 = General::CpuCycles as u32;
const INSTRUCTIONS_IDX: u32 = General::Instructions as u32;

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

impl SelectorRow {
    fn cells(&self) -> [u32; 5] {
        [
            self.event_idx,
            (self.selector >> 32) as u32,
            self.selector as u32,
            0,
            0,
        ]
    }
}

impl RangeRow {
    fn cells(&self) -> [u32; 5] {
        [self.first, self.last, self.counters, 0, 0]
    }
}

impl RawRow {
    fn cells(&self) -> [u32; 5] {
        [
            (self.select >> 32) as u32,
            self.select as u32,
            (self.mask >> 32) as u32,
            self.mask as u32,
            self.counters,
        ]
    }
}

/// The three properties of the binding, and this project's boolean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Property {
    /// `riscv,event-to-mhpmevent`
    EventToMhpmevent,
    /// `riscv,event-to-mhpmcounters`
    EventToMhpmcounters,
    /// `riscv,raw-event-to-mhpmcounters`
    RawEventToMhpmcounters,
    /// `rvpmu,one-counter-per-event` (boolean, see the module documentation)
    OneCounterPerEvent,
}

impl Property {
    /// The property name as written in a DT.
    pub const fn name(self) -> &'static str {
        match self {
            Property::EventToMhpmevent => "riscv,event-to-mhpmevent",
            Property::EventToMhpmcounters => "riscv,event-to-mhpmcounters",
            Property::RawEventToMhpmcounters => "riscv,raw-event-to-mhpmcounters",
            Property::OneCounterPerEvent => "rvpmu,one-counter-per-event",
        }
    }

    /// Cells per row: 3, 3 and 5; 0 for the boolean, which has no rows.
    pub const fn cells_per_row(self) -> usize {
        match self {
            Property::EventToMhpmevent | Property::EventToMhpmcounters => 3,
            Property::RawEventToMhpmcounters => 5,
            Property::OneCounterPerEvent => 0,
        }
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a problem is: a property, and usually one of its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// The property.
    pub property: Property,
    /// 0-based row index, if the problem is in one row.
    pub row: Option<usize>,
    cells: [u32; 5],
}

impl Place {
    /// The whole property.
    pub const fn property(property: Property) -> Place {
        Place {
            property,
            row: None,
            cells: [0; 5],
        }
    }

    /// Row `index` of `property`, whose cells are `cells` (the first
    /// [`Property::cells_per_row`] entries count).
    pub const fn row(property: Property, index: usize, cells: [u32; 5]) -> Place {
        Place {
            property,
            row: Some(index),
            cells,
        }
    }

    /// The row's cells as written (empty for a whole-property place).
    pub fn cells(&self) -> &[u32] {
        match self.row {
            Some(_) => &self.cells[..self.property.cells_per_row()],
            None => &[],
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.property.name())?;
        if let Some(i) = self.row {
            write!(f, " row {i} (<")?;
            for (k, c) in self.cells().iter().enumerate() {
                if k > 0 {
                    f.write_str(" ")?;
                }
                write!(f, "{c:#x}")?;
            }
            f.write_str(">)")?;
        }
        Ok(())
    }
}

/// Why a node was refused. See the module documentation for the rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// The property length is not a multiple of 4 bytes.
    PartialCell {
        /// Property length in bytes.
        bytes: usize,
    },
    /// The cell count is not a multiple of the row width (3 or 5).
    RaggedRows {
        /// Number of cells in the property.
        cells: usize,
        /// Cells per row of the property (3 or 5).
        per_row: usize,
    },
    /// More rows than [`MAX_ROWS`].
    TooManyRows {
        /// Number of rows in the property.
        rows: usize,
    },
    /// `riscv,event-to-mhpmevent` without `riscv,event-to-mhpmcounters`.
    CounterMapMissing,
    /// An event_idx that is not a general or cache event.
    NotHardwareEvent {
        /// The offending event_idx.
        event_idx: u32,
    },
    /// A range whose first event comes after its last.
    ReversedRange {
        /// First event_idx of the row.
        first: u32,
        /// Last event_idx of the row.
        last: u32,
    },
    /// A range sharing events with an earlier row.
    RangeOverlaps {
        /// The earlier row (0-based).
        row: usize,
    },
    /// Counter bitmap 0.
    EmptyBitmap,
    /// Bit 1 (the `time` CSR) in a counter bitmap.
    TimeCounter,
    /// Counter 0 (`cycle`) or 2 (`instret`) for an event it cannot count.
    FixedCounter {
        /// 0 or 2.
        counter: u8,
        /// An event of the row the counter cannot count (0x20000 for raw rows).
        event_idx: u32,
    },
    /// Counters the hart does not implement.
    AbsentCounters {
        /// The absent counters (bitmap over CSR offsets).
        absent: u32,
    },
    /// Selector 0, which mhpmevent reads as "no event".
    ZeroSelector,
    /// A second selector row for the same event.
    DuplicateEvent {
        /// The earlier row (0-based).
        row: usize,
    },
    /// A selector for an event no `riscv,event-to-mhpmcounters` row covers.
    Unmapped {
        /// The event.
        event_idx: u32,
    },
    /// A raw match value with bits outside the mask: it can never match.
    MatchOutsideMask {
        /// The bits set in the match value but clear in the mask.
        stray: u64,
    },
    /// A raw row with the same match value and mask as an earlier row.
    DuplicateRaw {
        /// The earlier row (0-based).
        row: usize,
    },
    /// A boolean property with a value (a DT boolean is present and empty).
    NotBoolean {
        /// Property length in bytes.
        bytes: usize,
    },
}

/// Displays an event_idx as `NAME (0xidx)` when it is a standard event.
struct EventIdx(u32);

impl fmt::Display for EventIdx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == FIRST_RAW_IDX {
            return f.write_str("raw events");
        }
        match Event::decode(self.0 as u64, 0) {
            Ok(ev) => write!(f, "{ev} ({:#x})", self.0),
            Err(_) => write!(f, "{:#x}", self.0),
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Reason::PartialCell { bytes } => {
                write!(f, "{bytes} bytes are not a whole number of 32-bit cells")
            }
            Reason::RaggedRows { cells, per_row } => {
                write!(
                    f,
                    "{cells} cells are not a whole number of {per_row}-cell rows"
                )
            }
            Reason::TooManyRows { rows } => {
                write!(
                    f,
                    "{rows} rows, more than the {MAX_ROWS} this parser accepts"
                )
            }
            Reason::CounterMapMissing => f.write_str(
                "present without riscv,event-to-mhpmcounters, which the binding then requires",
            ),
            Reason::NotHardwareEvent { event_idx } => {
                let ty = type_of(event_idx);
                if reserved_bits(event_idx as u64) {
                    write!(
                        f,
                        "{event_idx:#x} is not an event_idx (bits 20..31 must be 0)"
                    )
                } else if ty == kind::RAW as u32 || ty == kind::RAW_V2 as u32 {
                    write!(
                        f,
                        "{event_idx:#x} is a raw event (type {ty}); raw events belong in \
                         riscv,raw-event-to-mhpmcounters"
                    )
                } else if ty == kind::FIRMWARE as u32 {
                    write!(
                        f,
                        "{event_idx:#x} is a firmware event (type 15), counted by the SBI \
                         implementation, not by a hardware counter"
                    )
                } else if ty > kind::CACHE as u32 {
                    write!(f, "{event_idx:#x} has the reserved event type {ty}")
                } else {
                    write!(
                        f,
                        "{event_idx:#x} is not an event (general codes start at 1)"
                    )
                }
            }
            Reason::ReversedRange { first, last } => {
                write!(f, "first event {first:#x} is after last event {last:#x}")
            }
            Reason::RangeOverlaps { row } => write!(f, "range overlaps row {row}"),
            Reason::EmptyBitmap => f.write_str("counter bitmap is empty"),
            Reason::TimeCounter => {
                f.write_str("counter bitmap has bit 1, the time CSR, which counts no event")
            }
            Reason::FixedCounter { counter, event_idx } => {
                let (csr, only) = if counter == 0 {
                    ("cycle", "CPU_CYCLES")
                } else {
                    ("instret", "INSTRUCTIONS")
                };
                write!(
                    f,
                    "counter {counter} ({csr}) counts only {only}, but the row maps {} to it",
                    EventIdx(event_idx)
                )
            }
            Reason::AbsentCounters { absent } => write!(
                f,
                "counters {} do not exist on this hart",
                CounterList(absent)
            ),
            Reason::ZeroSelector => f.write_str("selector 0 means \"no event\" in mhpmevent"),
            Reason::DuplicateEvent { row } => {
                write!(f, "the event already has a selector in row {row}")
            }
            Reason::Unmapped { event_idx } => write!(
                f,
                "no riscv,event-to-mhpmcounters row covers {}, so no counter can use this selector",
                EventIdx(event_idx)
            ),
            Reason::MatchOutsideMask { stray } => write!(
                f,
                "match value has bits {stray:#x} outside the mask, so no event can match"
            ),
            Reason::DuplicateRaw { row } => {
                write!(f, "same match value and mask as row {row}")
            }
            Reason::NotBoolean { bytes } => write!(
                f,
                "a boolean property is empty (present means true), but this one has \
                 {bytes} bytes; write it without a value"
            ),
        }
    }
}

/// A refused `riscv,pmu` node: where and why.
///
/// Displays as e.g. `riscv,event-to-mhpmcounters row 2 (<0x10000 0x10033
/// 0xff000>): range overlaps row 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DtError {
    /// Property and row.
    pub place: Place,
    /// What is wrong.
    pub reason: Reason,
}

impl fmt::Display for DtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.reason)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for DtError {}

/// Why an accepted row can never take effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WarningKind {
    /// A selector for a general/cache code SBI 3.0 does not define.
    UndefinedEvent {
        /// The event_idx.
        event_idx: u32,
    },
    /// A range that contains no event SBI 3.0 defines.
    EmptyRange,
    /// A raw match value with bits above 55: no raw event_data has them.
    RawUnreachable,
    /// A selector with bits 58..63, which Sscofpmf uses for OF and the
    /// mode inhibits.
    SelectorFilterBits,
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WarningKind::UndefinedEvent { event_idx } => write!(
                f,
                "{event_idx:#x} is not an event SBI 3.0 defines; the row is never used"
            ),
            WarningKind::EmptyRange => {
                f.write_str("the range contains no event SBI 3.0 defines; the row is never used")
            }
            WarningKind::RawUnreachable => f.write_str(
                "match value needs bits above 55, beyond any raw event_data (48 bits for \
                 type 2, 56 for type 3); the row never matches",
            ),
            WarningKind::SelectorFilterBits => f.write_str(
                "selector sets mhpmevent bits 58..63, which Sscofpmf uses for OF and the \
                 mode inhibits",
            ),
        }
    }
}

/// An accepted row that can never take effect (see [`EventMap::warnings`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DtWarning {
    /// Property and row.
    pub place: Place,
    /// What is odd about it.
    pub kind: WarningKind,
}

impl fmt::Display for DtWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.kind)
    }
}

/// A counter bitmap shown as a list of CSR offsets: `0,3-18`, `3,4`, `none`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterList(pub u32);

impl fmt::Display for CounterList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = self.0;
        if bits == 0 {
            return f.write_str("none");
        }
        let mut i = 0u32;
        let mut sep = "";
        while i < 32 {
            if bits & (1 << i) == 0 {
                i += 1;
                continue;
            }
            let start = i;
            while i < 32 && bits & (1 << i) != 0 {
                i += 1;
            }
            let end = i - 1;
            match end - start {
                0 => write!(f, "{sep}{start}")?,
                1 => write!(f, "{sep}{start},{end}")?,
                _ => write!(f, "{sep}{start}-{end}")?,
            }
            sep = ",";
        }
        Ok(())
    }
}

/// Raw rows sharing one mask: `raw_sorted[start..end]`, sorted by match value.
#[derive(Clone, Copy, Debug, Default)]
struct MaskGroup {
    mask: u64,
    start: u16,
    end: u16,
}

/// The `riscv,pmu` properties of one node, as raw bytes (`None` = absent).
#[derive(Clone, Copy, Debug, Default)]
pub struct PmuProps<'a> {
    /// `riscv,event-to-mhpmevent`
    pub event_to_mhpmevent: Option<&'a [u8]>,
    /// `riscv,event-to-mhpmcounters`
    pub event_to_mhpmcounters: Option<&'a [u8]>,
    /// `riscv,raw-event-to-mhpmcounters`
    pub raw_event_to_mhpmcounters: Option<&'a [u8]>,
    /// `rvpmu,one-counter-per-event` (valid only when empty)
    pub one_counter_per_event: Option<&'a [u8]>,
}

impl<'a> PmuProps<'a> {
    /// The properties of the first node compatible with `riscv,pmu`, or
    /// `None` when there is no such node.
    pub fn find(fdt: &fdt::Fdt<'a>) -> Option<PmuProps<'a>> {
        let node = fdt.find_compatible(&["riscv,pmu"])?;
        let prop = |p: Property| node.property(p.name()).map(|p| p.value);
        Some(PmuProps {
            event_to_mhpmevent: prop(Property::EventToMhpmevent),
            event_to_mhpmcounters: prop(Property::EventToMhpmcounters),
            raw_event_to_mhpmcounters: prop(Property::RawEventToMhpmcounters),
            one_counter_per_event: prop(Property::OneCounterPerEvent),
        })
    }
}

/// What a platform's PMU does that its device tree does not say, keyed by
/// the root node's `compatible`. An entry only ever adds a restriction
/// (ORed with the DT's own properties).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlatformQuirk {
    /// One of the root node's `compatible` strings.
    pub root_compatible: &'static str,
    /// Turn `rvpmu,one-counter-per-event` on.
    pub one_counter_per_event: bool,
    /// Why, for logs and `cargo xtask dt-check`.
    pub why: &'static str,
}

/// The platform quirk table.
///
/// QEMU virt (root `compatible = "riscv-virtio"`, a string no real board
/// uses) counts each event id on one counter only: `target/riscv/pmu.c`
/// `riscv_pmu_update_event_map` keeps one counter per event id and ignores
/// an mhpmevent write of an id another counter already holds, so that
/// counter never counts. Its generated tree has no
/// `rvpmu,one-counter-per-event`. The key is the machine, not
/// mvendorid/marchid: the behaviour is QEMU's whatever CPU model it
/// emulates (vendor models report their vendor's ids), and an M-mode
/// firmware on `virt` always runs under QEMU's own emulation (KVM guests
/// get their SBI from the host, not from firmware like this one).
pub const PLATFORM_QUIRKS: &[PlatformQuirk] = &[PlatformQuirk {
    root_compatible: "riscv-virtio",
    one_counter_per_event: true,
    why: "QEMU counts an event id on one HPM counter only (target/riscv/pmu.c \
          riscv_pmu_update_event_map ignores a second counter's mhpmevent write)",
}];

/// The [`PLATFORM_QUIRKS`] entry for a root node whose `compatible`
/// property is `compatible` (raw bytes: NUL-terminated strings), if any.
pub fn platform_quirk(compatible: &[u8]) -> Option<&'static PlatformQuirk> {
    compatible
        .split(|&b| b == 0)
        .filter(|c| !c.is_empty())
        .find_map(|c| {
            PLATFORM_QUIRKS
                .iter()
                .find(|q| q.root_compatible.as_bytes() == c)
        })
}

/// [`platform_quirk`] for the root node of `fdt`.
pub fn platform_quirk_of(fdt: &fdt::Fdt<'_>) -> Option<&'static PlatformQuirk> {
    let root = fdt.find_node("/")?;
    platform_quirk(root.property("compatible")?.value)
}

/// Split a property into rows of `N` big-endian cells, refusing partial
/// cells, partial rows and more than [`MAX_ROWS`] rows.
fn rows<const N: usize>(
    property: Property,
    bytes: &[u8],
) -> Result<impl Iterator<Item = [u32; N]> + '_, DtError> {
    let err = |reason| DtError {
        place: Place::property(property),
        reason,
    };
    if !bytes.len().is_multiple_of(4) {
        return Err(err(Reason::PartialCell { bytes: bytes.len() }));
    }
    let cells = bytes.len() / 4;
    if !cells.is_multiple_of(N) {
        return Err(err(Reason::RaggedRows { cells, per_row: N }));
    }
    if cells / N > MAX_ROWS {
        return Err(err(Reason::TooManyRows { rows: cells / N }));
    }
    Ok(bytes.chunks_exact(4 * N).map(|row| {
        let mut out = [0u32; N];
        for (o, c) in out.iter_mut().zip(row.chunks_exact(4)) {
            *o = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        out
    }))
}

/// Classify an event_idx for `riscv,event-to-mhpmevent`: `Ok(Some(ev))` for
/// a defined general/cache event, `Ok(None)` for an undefined code of type
/// 0/1 (accepted, warned about), `Err` for anything else.
fn selector_event(event_idx: u32) -> Result<Option<Event>, Reason> {
    let bad = Reason::NotHardwareEvent { event_idx };
    if reserved_bits(event_idx as u64) || event_idx == 0 || event_idx >= FIRST_RAW_IDX {
        return Err(bad);
    }
    match Event::decode(event_idx as u64, 0) {
        Ok(ev @ (Event::General(_) | Event::Cache(_))) => Ok(Some(ev)),
        Ok(_) => Err(bad),
        Err(_) => Ok(None),
    }
}

/// Whether `[first, last]` contains a general or cache event SBI 3.0 defines.
fn range_has_events(first: u32, last: u32) -> bool {
    let general = General::ALL
        .iter()
        .any(|&g| (first..=last).contains(&(g as u32)));
    general
        || (0..Cache::CODE_SPACE as u16)
            .filter_map(Cache::from_code)
            .any(|c| (first..=last).contains(&Event::Cache(c).idx()))
}

/// Check a counter bitmap for a row covering event_idx `first..=last`:
/// non-empty, no `time`, `cycle`/`instret` only for a row of exactly
/// their event, only present counters.
fn check_bitmap(counters: u32, events: (u32, u32), present: Option<u32>) -> Result<(), Reason> {
    if counters == 0 {
        return Err(Reason::EmptyBitmap);
    }
    if counters & TIME_BIT != 0 {
        return Err(Reason::TimeCounter);
    }
    let (first, last) = events;
    // The first event of the row other than `allowed`.
    let other = |allowed: u32| if first != allowed { first } else { allowed + 1 };
    if counters & CYCLE_BIT != 0 && !(first == CYCLES_IDX && last == CYCLES_IDX) {
        return Err(Reason::FixedCounter {
            counter: 0,
            event_idx: other(CYCLES_IDX),
        });
    }
    if counters & INSTRET_BIT != 0 && !(first == INSTRUCTIONS_IDX && last == INSTRUCTIONS_IDX) {
        return Err(Reason::FixedCounter {
            counter: 2,
            event_idx: other(INSTRUCTIONS_IDX),
        });
    }
    if let Some(present) = present {
        // cycle and instret are mandatory (Zicntr).
        let absent = counters & !(present | CYCLE_BIT | INSTRET_BIT);
        if absent != 0 {
            return Err(Reason::AbsentCounters { absent });
        }
    }
    Ok(())
}

/// The platform's event-to-counter knowledge, from the DT or built by code.
///
/// Always valid: the only ways to fill one ([`EventMap::from_props`],
/// [`EventMap::from_fdt`], [`EventMap::from_rows`]) check every rule of the
/// module documentation.
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
    /// The raw rows sorted by (mask, select), see [`MaskGroup`].
    raw_sorted: [RawRow; MAX_ROWS],
    groups: [MaskGroup; MAX_ROWS],
    n_groups: usize,
    /// See [`EventMap::one_counter_per_event`].
    one_counter_per_event: bool,
}

impl Default for EventMap {
    fn default() -> Self {
        EventMap::empty()
    }
}

impl EventMap {
    /// No rows: only cycles/instructions on the fixed counters are countable.
    pub const fn empty() -> EventMap {
        const RAW0: RawRow = RawRow {
            select: 0,
            mask: 0,
            counters: 0,
        };
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
            raw: [RAW0; MAX_ROWS],
            n_raw: 0,
            raw_sorted: [RAW0; MAX_ROWS],
            groups: [MaskGroup {
                mask: 0,
                start: 0,
                end: 0,
            }; MAX_ROWS],
            n_groups: 0,
            one_counter_per_event: false,
        }
    }

    /// The map of the first node compatible with `riscv,pmu` (all four
    /// properties), with the [`PLATFORM_QUIRKS`] of the root node applied;
    /// `Ok(None)` when there is no such node. Counters are not checked
    /// against the hart (use [`PmuProps::find`] and
    /// [`EventMap::load_props`] with `present_counters` for that). `fdt`
    /// comes from `rvpmu_dtb::open`, which checks the blob and removes
    /// its NOP tokens first.
    pub fn from_fdt(fdt: &fdt::Fdt<'_>) -> Result<Option<EventMap>, DtError> {
        let Some(props) = PmuProps::find(fdt) else {
            return Ok(None);
        };
        let mut map = EventMap::empty();
        map.load_props(props, None)?;
        if platform_quirk_of(fdt).is_some_and(|q| q.one_counter_per_event) {
            map.set_one_counter_per_event(true);
        }
        Ok(Some(map))
    }

    /// Parse and validate the raw bytes of the three properties of the
    /// binding (`None` = absent; `rvpmu,one-counter-per-event` is taken as
    /// absent, see [`EventMap::load_props`] for all four).
    /// `present_counters` is the bitmap (over CSR offsets) of the
    /// counters the hart implements, if known; bits 0 and 2 are taken as
    /// present whatever it says.
    pub fn from_props(
        event_to_mhpmevent: Option<&[u8]>,
        event_to_mhpmcounters: Option<&[u8]>,
        raw: Option<&[u8]>,
        present_counters: Option<u32>,
    ) -> Result<EventMap, DtError> {
        let mut map = EventMap::empty();
        map.load_props(
            PmuProps {
                event_to_mhpmevent,
                event_to_mhpmcounters,
                raw_event_to_mhpmcounters: raw,
                one_counter_per_event: None,
            },
            present_counters,
        )?;
        Ok(map)
    }

    /// [`EventMap::from_props`] into an existing map (e.g. a `static`, so
    /// firmware needs no stack for the ~25 KiB table). On error the map is
    /// left empty.
    pub fn load_props(
        &mut self,
        props: PmuProps<'_>,
        present_counters: Option<u32>,
    ) -> Result<(), DtError> {
        self.clear();
        let result = self.load_props_inner(props, present_counters);
        if result.is_err() {
            self.clear();
        }
        result
    }

    fn load_props_inner(
        &mut self,
        props: PmuProps<'_>,
        present: Option<u32>,
    ) -> Result<(), DtError> {
        // A boolean: present and empty means true (DT convention).
        self.one_counter_per_event = match props.one_counter_per_event {
            None => false,
            Some([]) => true,
            Some(v) => {
                return Err(DtError {
                    place: Place::property(Property::OneCounterPerEvent),
                    reason: Reason::NotBoolean { bytes: v.len() },
                })
            }
        };
        if props.event_to_mhpmevent.is_some() && props.event_to_mhpmcounters.is_none() {
            return Err(DtError {
                place: Place::property(Property::EventToMhpmevent),
                reason: Reason::CounterMapMissing,
            });
        }
        // Shape errors of all three properties come before row errors.
        let sel = rows::<3>(
            Property::EventToMhpmevent,
            props.event_to_mhpmevent.unwrap_or(&[]),
        )?;
        let rng = rows::<3>(
            Property::EventToMhpmcounters,
            props.event_to_mhpmcounters.unwrap_or(&[]),
        )?;
        let raw = rows::<5>(
            Property::RawEventToMhpmcounters,
            props.raw_event_to_mhpmcounters.unwrap_or(&[]),
        )?;
        for [first, last, counters] in rng {
            self.ranges[self.n_ranges] = RangeRow {
                first,
                last,
                counters,
            };
            self.n_ranges += 1;
        }
        for [event_idx, hi, lo] in sel {
            self.selectors[self.n_selectors] = SelectorRow {
                event_idx,
                selector: (hi as u64) << 32 | lo as u64,
            };
            self.n_selectors += 1;
        }
        for [sh, sl, mh, ml, counters] in raw {
            self.raw[self.n_raw] = RawRow {
                select: (sh as u64) << 32 | sl as u64,
                mask: (mh as u64) << 32 | ml as u64,
                counters,
            };
            self.n_raw += 1;
        }
        self.validate_and_index(present)
    }

    /// Build a map from typed rows (platform code without a DT, tests),
    /// with exactly the checks of [`EventMap::from_props`]. Errors name the
    /// rows by their index in the slices.
    pub fn from_rows(
        selectors: &[SelectorRow],
        ranges: &[RangeRow],
        raw: &[RawRow],
        present_counters: Option<u32>,
    ) -> Result<EventMap, DtError> {
        let too_many = |property, rows: usize| DtError {
            place: Place::property(property),
            reason: Reason::TooManyRows { rows },
        };
        if selectors.len() > MAX_ROWS {
            return Err(too_many(Property::EventToMhpmevent, selectors.len()));
        }
        if ranges.len() > MAX_ROWS {
            return Err(too_many(Property::EventToMhpmcounters, ranges.len()));
        }
        if raw.len() > MAX_ROWS {
            return Err(too_many(Property::RawEventToMhpmcounters, raw.len()));
        }
        let mut map = EventMap::empty();
        map.selectors[..selectors.len()].copy_from_slice(selectors);
        map.n_selectors = selectors.len();
        map.ranges[..ranges.len()].copy_from_slice(ranges);
        map.n_ranges = ranges.len();
        map.raw[..raw.len()].copy_from_slice(raw);
        map.n_raw = raw.len();
        map.validate_and_index(present_counters)?;
        Ok(map)
    }

    fn clear(&mut self) {
        self.general_ctrs = [0; GENERAL_SLOTS];
        self.general_sel = [None; GENERAL_SLOTS];
        self.cache_ctrs = [0; Cache::CODE_SPACE];
        self.cache_sel = [None; Cache::CODE_SPACE];
        self.n_selectors = 0;
        self.n_ranges = 0;
        self.n_raw = 0;
        self.n_groups = 0;
        self.one_counter_per_event = false;
    }

    /// Check the rows already stored (ranges first: selectors refer to
    /// them) and fill the lookup tables.
    fn validate_and_index(&mut self, present: Option<u32>) -> Result<(), DtError> {
        for i in 0..self.n_ranges {
            let row = self.ranges[i];
            let err = |reason| DtError {
                place: Place::row(Property::EventToMhpmcounters, i, row.cells()),
                reason,
            };
            if row.first > row.last {
                return Err(err(Reason::ReversedRange {
                    first: row.first,
                    last: row.last,
                }));
            }
            for idx in [row.first, row.last] {
                if idx >= FIRST_RAW_IDX {
                    return Err(err(Reason::NotHardwareEvent { event_idx: idx }));
                }
            }
            check_bitmap(row.counters, (row.first, row.last), present).map_err(err)?;
            if let Some(j) = self.ranges[..i]
                .iter()
                .position(|r| r.first <= row.last && row.first <= r.last)
            {
                return Err(err(Reason::RangeOverlaps { row: j }));
            }
            self.index_range(row);
        }

        for i in 0..self.n_selectors {
            let row = self.selectors[i];
            let err = |reason| DtError {
                place: Place::row(Property::EventToMhpmevent, i, row.cells()),
                reason,
            };
            let ev = selector_event(row.event_idx).map_err(err)?;
            if let Some(j) = self.selectors[..i]
                .iter()
                .position(|r| r.event_idx == row.event_idx)
            {
                return Err(err(Reason::DuplicateEvent { row: j }));
            }
            if row.selector == 0 {
                return Err(err(Reason::ZeroSelector));
            }
            match ev {
                Some(Event::General(g)) if self.general_ctrs[g as usize] != 0 => {
                    self.general_sel[g as usize] = Some(row.selector)
                }
                Some(Event::Cache(c)) if self.cache_ctrs[c.code() as usize] != 0 => {
                    self.cache_sel[c.code() as usize] = Some(row.selector)
                }
                Some(_) => {
                    return Err(err(Reason::Unmapped {
                        event_idx: row.event_idx,
                    }))
                }
                // An undefined code: kept as written, never looked up.
                None => {}
            }
        }

        for i in 0..self.n_raw {
            let row = self.raw[i];
            let err = |reason| DtError {
                place: Place::row(Property::RawEventToMhpmcounters, i, row.cells()),
                reason,
            };
            check_bitmap(row.counters, (FIRST_RAW_IDX, FIRST_RAW_IDX), present).map_err(err)?;
            let stray = row.select & !row.mask;
            if stray != 0 {
                return Err(err(Reason::MatchOutsideMask { stray }));
            }
            if let Some(j) = self.raw[..i]
                .iter()
                .position(|r| r.select == row.select && r.mask == row.mask)
            {
                return Err(err(Reason::DuplicateRaw { row: j }));
            }
        }
        self.index_raw();
        Ok(())
    }

    /// Fold a validated range row into the direct tables.
    fn index_range(&mut self, row: RangeRow) {
        let covers = |idx: u32| (row.first..=row.last).contains(&idx);
        for g in General::ALL {
            if covers(g as u32) {
                self.general_ctrs[g as usize] |= row.counters;
            }
        }
        for code in 0..Cache::CODE_SPACE as u16 {
            if let Some(c) = Cache::from_code(code) {
                if covers(Event::Cache(c).idx()) {
                    self.cache_ctrs[code as usize] |= row.counters;
                }
            }
        }
    }

    /// Sort the raw rows by (mask, select) and record one group per mask.
    fn index_raw(&mut self) {
        let n = self.n_raw;
        self.raw_sorted[..n].copy_from_slice(&self.raw[..n]);
        self.raw_sorted[..n].sort_unstable_by_key(|r| (r.mask, r.select));
        self.n_groups = 0;
        let mut start = 0;
        while start < n {
            let mask = self.raw_sorted[start].mask;
            let mut end = start + 1;
            while end < n && self.raw_sorted[end].mask == mask {
                end += 1;
            }
            self.groups[self.n_groups] = MaskGroup {
                mask,
                start: start as u16,
                end: end as u16,
            };
            self.n_groups += 1;
            start = end;
        }
    }

    /// Whether the hardware counts an event on at most one HPM counter at a
    /// time (`rvpmu,one-counter-per-event`, or a [`PlatformQuirk`]). The
    /// engine then refuses, in config_matching, an HPM counter whose
    /// selector another configured HPM counter already holds.
    pub fn one_counter_per_event(&self) -> bool {
        self.one_counter_per_event
    }

    /// Set [`EventMap::one_counter_per_event`]: for platform code that knows
    /// what its tree does not say ([`PLATFORM_QUIRKS`]), and maps built
    /// with [`EventMap::from_rows`].
    pub fn set_one_counter_per_event(&mut self, on: bool) {
        self.one_counter_per_event = on;
    }

    /// Counters (bitmap over CSR offsets) the DT says can count `ev`.
    /// Firmware events give 0. The fixed counters for cycles/instructions
    /// are the engine's business, not the DT's.
    pub fn counters(&self, ev: &Event) -> u32 {
        match *ev {
            Event::General(g) => self.general_ctrs[g as usize],
            Event::Cache(c) => self.cache_ctrs[c.code() as usize],
            Event::Raw(d) | Event::RawV2(d) => self.raw_counters(d),
            _ => 0,
        }
    }

    /// Counters for raw event data `data`: the union over every raw row
    /// with `data & mask == select`. One binary search per distinct mask.
    pub fn raw_counters(&self, data: u64) -> u32 {
        // Many distinct masks make one search per group dearer than a
        // straight pass over the sorted rows (~3 row compares per probe).
        if self.n_groups * 3 > self.n_raw {
            return self.raw_sorted[..self.n_raw]
                .iter()
                .filter(|r| data & r.mask == r.select)
                .fold(0, |acc, r| acc | r.counters);
        }
        let mut acc = 0;
        for g in &self.groups[..self.n_groups] {
            let key = data & g.mask;
            let rows = &self.raw_sorted[g.start as usize..g.end as usize];
            if let Ok(k) = rows.binary_search_by_key(&key, |r| r.select) {
                acc |= rows[k].counters;
            }
        }
        acc
    }

    /// [`EventMap::raw_counters`] by scanning every row: the O(n) reference
    /// for tests and benchmarks.
    pub fn raw_counters_scan(&self, data: u64) -> u32 {
        self.raw_rows()
            .iter()
            .filter(|r| data & r.mask == r.select)
            .fold(0, |acc, r| acc | r.counters)
    }

    /// Number of distinct raw masks, the G of the raw lookup's O(G log(n/G)).
    pub fn raw_mask_groups(&self) -> usize {
        self.n_groups
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

    /// Whether `ev`'s selector comes from a `riscv,event-to-mhpmevent` row.
    pub fn has_dt_selector(&self, ev: &Event) -> bool {
        match *ev {
            Event::General(g) => self.general_sel[g as usize].is_some(),
            Event::Cache(c) => self.cache_sel[c.code() as usize].is_some(),
            _ => false,
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

    /// Union of every counter bitmap in the map.
    pub fn all_counters(&self) -> u32 {
        let r = self.range_rows().iter().fold(0, |a, r| a | r.counters);
        self.raw_rows().iter().fold(r, |a, r| a | r.counters)
    }

    /// Accepted rows that can never take effect, in property then row order.
    pub fn warnings(&self) -> impl Iterator<Item = DtWarning> + '_ {
        let sel = self.selector_rows().iter().enumerate().flat_map(|(i, r)| {
            let place = Place::row(Property::EventToMhpmevent, i, r.cells());
            let undefined = matches!(selector_event(r.event_idx), Ok(None)).then_some(
                WarningKind::UndefinedEvent {
                    event_idx: r.event_idx,
                },
            );
            let bits = (r.selector & SSCOFPMF_BITS != 0).then_some(WarningKind::SelectorFilterBits);
            [undefined, bits]
                .into_iter()
                .flatten()
                .map(move |kind| DtWarning { place, kind })
        });
        let rng = self.range_rows().iter().enumerate().filter_map(|(i, r)| {
            (!range_has_events(r.first, r.last)).then_some(DtWarning {
                place: Place::row(Property::EventToMhpmcounters, i, r.cells()),
                kind: WarningKind::EmptyRange,
            })
        });
        let raw = self.raw_rows().iter().enumerate().filter_map(|(i, r)| {
            (r.select & !RAW_V2_DATA_MASK != 0).then_some(DtWarning {
                place: Place::row(Property::RawEventToMhpmcounters, i, r.cells()),
                kind: WarningKind::RawUnreachable,
            })
        });
        sel.chain(rng).chain(raw)
    }
}

/// Every standard general and cache event, in event_idx order.
pub fn standard_events() -> impl Iterator<Item = Event> {
    let general = General::ALL.into_iter().map(Event::General);
    let cache = (0..Cache::CODE_SPACE as u16)
        .filter_map(Cache::from_code)
        .map(Event::Cache);
    general.chain(cache)
}
