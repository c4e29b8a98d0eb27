//! The logical counter space: which indices name which counters, the
//! `counter_info` encoding, and counter sets (`counter_idx_base` +
//! `counter_idx_mask`).
//!
//! Logical index = CSR offset for hardware counters (0 `cycle`, 1 `time`
//! which is never a counter, 2 `instret`, 3..=31 `hpmcounterN` where present;
//! holes allowed), followed by the firmware counters. Every index is
//! checked against the layout before anything is touched, so a hostile
//! base/mask pair can never reach an out-of-bounds access.

use crate::{CounterInfo, Error};

/// Upper bound on canonical logical counters (Linux caps at 64 as well).
pub const MAX_COUNTERS: usize = 64;
/// Hardware counter slots (CSR offsets 0..=31).
pub const HW_SLOTS: usize = 32;
/// Firmware counters per hart.
pub const NUM_FW: usize = 16;
/// The firmware counters as a bitmap relative to the first one.
const FW_COUNTERS: u64 = (1 << NUM_FW) - 1;
/// Start of the alias window (see [`CounterLayout::alias_window`]).
pub const ALIAS_BASE: u64 = 4096;
/// CSR number of `cycle`; hardware counter `i` is CSR `CSR_CYCLE + i`.
pub const CSR_CYCLE: u16 = 0xC00;

/// Logical counter 0: `cycle`.
pub const CYCLE: usize = 0;
/// Logical index 1: `time`, never a counter.
pub const TIME: usize = 1;
/// Logical counter 2: `instret`.
pub const INSTRET: usize = 2;

/// What a canonical logical index names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// Hardware counter at this CSR offset (0, 2, 3..=31).
    Hw(u8),
    /// Firmware counter number 0..NUM_FW.
    Fw(u8),
}

/// A validated set of counters. `mask` bit `j` names canonical counter
/// `cbase + j`; `base` is the caller's `counter_idx_base` (needed for
/// base-relative snapshot offsets, which equal `j`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterSet {
    base: u64,
    cbase: usize,
    mask: u64,
}

impl CounterSet {
    /// Members as a bitmap over canonical indices.
    pub fn members(&self) -> u64 {
        self.mask << self.cbase
    }

    /// The caller's mask (relative bits).
    pub fn relative_mask(&self) -> u64 {
        self.mask
    }

    /// Canonical index of the first member (what SKIP_MATCH selects).
    pub fn first(&self) -> usize {
        self.cbase + self.mask.trailing_zeros() as usize
    }

    /// The caller's index for member `c` (same window as the caller's base).
    pub fn caller_index(&self, c: usize) -> u64 {
        self.base + (c - self.cbase) as u64
    }

    /// Iterate over `(relative bit j, canonical index)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let cbase = self.cbase;
        BitIter(self.mask).map(move |j| (j, cbase + j))
    }
}

/// Iterator over the set bits of a word, lowest first; bounded by 64 steps.
#[derive(Clone, Copy)]
pub struct BitIter(pub u64);

impl Iterator for BitIter {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(i)
    }
}

/// The logical counter space of one hart, fixed at init from probing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterLayout {
    /// Bit `i`: hardware counter at CSR offset `i` exists (bit 1 never).
    hw_present: u32,
    /// Implemented bits of each hardware counter.
    hw_width: [u8; HW_SLOTS],
    /// First firmware counter index (one past the highest hardware counter).
    fw_base: u8,
    /// Whether indices `ALIAS_BASE + i` also name counter `i`.
    alias: bool,
    /// [`Self::valid`] and [`Self::fw_mask`], computed once: every counter
    /// set and index of every call is checked against them.
    valid: u64,
    fw_mask: u64,
}

impl CounterLayout {
    /// Build a layout from probed hardware counters. `hw_width[i]` is 0 for
    /// an absent counter; index 1 (`time`) is never a counter whatever the
    /// probe says.
    pub fn new(hw_width: [u8; HW_SLOTS], alias_window: bool) -> CounterLayout {
        let mut w = hw_width;
        w[TIME] = 0;
        let mut present = 0u32;
        for (i, &bits) in w.iter().enumerate() {
            if bits > 0 {
                present |= 1 << i;
            }
        }
        let fw_base = if present == 0 {
            0
        } else {
            32 - present.leading_zeros() as u8
        };
        CounterLayout {
            hw_present: present,
            hw_width: w,
            fw_base,
            alias: alias_window,
            valid: (present as u64) | FW_COUNTERS << fw_base,
            fw_mask: FW_COUNTERS << fw_base,
        }
    }

    /// The alias window: when enabled, `num_counters` reports
    /// `ALIAS_BASE + n` and indices `ALIAS_BASE..ALIAS_BASE + n` name the
    /// same counters as `0..n`; indices between are holes. It exists so that
    /// Linux 6.12's snapshot restart call (counter_idx_base 4096, a kernel
    /// bug) names valid counters; see the README.
    pub fn alias_window(&self) -> bool {
        self.alias
    }

    /// Canonical counters (hardware slots up to the last present one, plus
    /// firmware counters).
    pub fn canonical_count(&self) -> usize {
        self.fw_base as usize + NUM_FW
    }

    /// `sbi_pmu_num_counters`.
    pub fn num_counters(&self) -> usize {
        if self.alias {
            ALIAS_BASE as usize + self.canonical_count()
        } else {
            self.canonical_count()
        }
    }

    /// Bitmap of valid canonical indices.
    pub fn valid(&self) -> u64 {
        self.valid
    }

    /// Hardware counters present (bitmap over CSR offsets).
    pub fn hw_present(&self) -> u32 {
        self.hw_present
    }

    /// Bitmap of firmware counters over canonical indices.
    pub fn fw_mask(&self) -> u64 {
        self.fw_mask
    }

    /// First firmware counter's canonical index.
    pub fn fw_base(&self) -> usize {
        self.fw_base as usize
    }

    /// Width of a hardware counter in bits (0 if absent).
    pub fn hw_width(&self, csr_offset: usize) -> u8 {
        self.hw_width.get(csr_offset).copied().unwrap_or(0)
    }

    /// Map a caller's index to its canonical index, if it is in range.
    #[inline]
    fn canonical(&self, idx: u64) -> Option<usize> {
        let n = self.canonical_count() as u64;
        if idx < n {
            Some(idx as usize)
        } else if self.alias && idx >= ALIAS_BASE && idx - ALIAS_BASE < n {
            Some((idx - ALIAS_BASE) as usize)
        } else {
            None
        }
    }

    /// What a canonical index names.
    pub fn kind(&self, c: usize) -> Counter {
        if c < self.fw_base as usize {
            Counter::Hw(c as u8)
        } else {
            Counter::Fw((c - self.fw_base as usize) as u8)
        }
    }

    /// Resolve a caller's counter index to a counter, or INVALID_PARAM.
    pub fn resolve(&self, idx: u64) -> Result<(usize, Counter), Error> {
        let c = self.canonical(idx).ok_or(Error::InvalidParam)?;
        if self.valid() & (1 << c) == 0 {
            return Err(Error::InvalidParam);
        }
        Ok((c, self.kind(c)))
    }

    /// `counter_info` for a caller's index.
    pub fn info(&self, idx: u64) -> Result<CounterInfo, Error> {
        Ok(self.counter_info(self.resolve(idx)?.1))
    }

    /// `counter_info` of a counter of this layout.
    #[inline]
    pub fn counter_info(&self, c: Counter) -> CounterInfo {
        match c {
            Counter::Hw(i) => CounterInfo::Hardware {
                csr: CSR_CYCLE + i as u16,
                width: self.hw_width[i as usize % HW_SLOTS],
            },
            Counter::Fw(_) => CounterInfo::Firmware { width: 64 },
        }
    }

    /// Validate `counter_idx_base` + `counter_idx_mask`: a non-empty mask
    /// whose every member is a valid counter, with no arithmetic overflow.
    #[inline]
    pub fn set(&self, base: u64, mask: u64) -> Result<CounterSet, Error> {
        let cbase = self.canonical(base).ok_or(Error::InvalidParam)?;
        // The whole set must fall inside the window `base` is in
        // (canonical or alias): every member below `canonical_count`.
        // `room` is at least 1 and below 64 (MAX_CANONICAL), and the
        // windows are far apart, so `base + top` neither overflows nor
        // reaches the other window.
        let room = self.canonical_count() - cbase;
        if mask == 0 || mask >> room != 0 {
            return Err(Error::InvalidParam);
        }
        let set = CounterSet { base, cbase, mask };
        if set.members() & !self.valid() != 0 {
            return Err(Error::InvalidParam);
        }
        Ok(set)
    }
}

/// Most canonical indices a layout can have; below 64 so that a counter
/// set is one shift of the caller's mask.
const MAX_CANONICAL: usize = HW_SLOTS + NUM_FW;
const _: () = assert!(MAX_CANONICAL < 64 && MAX_CANONICAL <= MAX_COUNTERS);

#[cfg(test)]
mod tests {
    use super::*;

    /// 64-bit counters at the CSR offsets set in `present`.
    fn layout(present: u32, alias: bool) -> CounterLayout {
        let mut w = [0u8; HW_SLOTS];
        for (i, w) in w.iter_mut().enumerate() {
            if present >> i & 1 != 0 {
                *w = 64;
            }
        }
        CounterLayout::new(w, alias)
    }

    /// cycle, instret and hpmcounter3..18.
    fn qemu_like() -> CounterLayout {
        layout(0x7fffd, false)
    }

    #[test]
    fn layout_matches_opensbi_numbering() {
        let l = qemu_like();
        assert_eq!(l.fw_base(), 19);
        assert_eq!(l.num_counters(), 35);
        assert_eq!(l.resolve(1), Err(Error::InvalidParam));
        assert_eq!(l.resolve(0), Ok((0, Counter::Hw(0))));
        assert_eq!(l.resolve(19), Ok((19, Counter::Fw(0))));
        assert_eq!(l.resolve(34), Ok((34, Counter::Fw(15))));
        assert_eq!(l.resolve(35), Err(Error::InvalidParam));
        assert_eq!(l.resolve(u64::MAX), Err(Error::InvalidParam));
    }

    #[test]
    fn counter_info_encoding() {
        let l = qemu_like();
        assert_eq!(l.info(0).unwrap().encode(), 0xC00 | 63 << 12);
        assert_eq!(l.info(4).unwrap().encode(), 0xC04 | 63 << 12);
        assert_eq!(l.info(20).unwrap().encode(), 1 << 63 | 63 << 12);
        let narrow = {
            let mut w = [0u8; HW_SLOTS];
            w[0] = 64;
            w[3] = 40;
            CounterLayout::new(w, false)
        };
        assert_eq!(narrow.info(3).unwrap().encode(), 0xC03 | 39 << 12);
        assert_eq!(
            CounterInfo::decode(0xC03 | 39 << 12),
            CounterInfo::Hardware {
                csr: 0xC03,
                width: 40
            }
        );
    }

    #[test]
    fn sets_reject_bad_shapes() {
        let l = qemu_like();
        assert_eq!(l.set(0, 0), Err(Error::InvalidParam));
        assert_eq!(l.set(0, 0b10), Err(Error::InvalidParam)); // time
        assert_eq!(l.set(34, 0b10), Err(Error::InvalidParam)); // past the end
        assert_eq!(l.set(u64::MAX, 1 << 63), Err(Error::InvalidParam)); // overflow
        assert_eq!(l.set(u64::MAX - 3, 0b1000), Err(Error::InvalidParam));
        assert_eq!(l.set(4096, 1), Err(Error::InvalidParam)); // no alias window
        let s = l.set(3, 0b101).unwrap();
        assert_eq!(s.members(), 0b101000);
        assert_eq!(s.first(), 3);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(0, 3), (2, 5)]);
    }

    #[test]
    fn holes_are_invalid() {
        let l = layout(0b10_1101, false); // 4 missing
        assert_eq!(l.fw_base(), 6);
        assert_eq!(l.resolve(4), Err(Error::InvalidParam));
        assert_eq!(l.set(3, 0b111), Err(Error::InvalidParam));
        assert!(l.set(3, 0b101).is_ok());
    }

    #[test]
    fn alias_window() {
        let l = layout(0b1101, true);
        let n = l.canonical_count();
        assert_eq!(l.num_counters(), 4096 + n);
        assert_eq!(l.resolve(4096 + 3), Ok((3, Counter::Hw(3))));
        assert_eq!(l.resolve(4095), Err(Error::InvalidParam));
        assert_eq!(l.resolve(n as u64), Err(Error::InvalidParam));
        let s = l.set(4096, 0b1101).unwrap();
        assert_eq!(s.members(), 0b1101);
        // A set may not straddle the gap between the windows.
        assert_eq!(l.set(4095, 0b11), Err(Error::InvalidParam));
        assert_eq!(l.set(n as u64 - 1, 0b11), Err(Error::InvalidParam));
    }
}
