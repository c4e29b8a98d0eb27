//! Property tests for the `riscv,pmu` parser: hostile bytes never panic,
//! accepted maps keep the parser's invariants, and the indexed raw lookup
//! agrees with a plain scan of the rows.

use proptest::prelude::*;
use rvpmu::dt::{standard_events, EventMap, RawRow};

/// Cells biased towards the values the rules care about.
pub fn cell() -> impl Strategy<Value = u32> {
    prop_oneof![
        0u32..12,
        0x10000u32..0x10040,
        Just(0x20000u32),
        Just(0x30000u32),
        Just(0xf0000u32),
        Just(0x100003u32),
        Just(0xffff_ffffu32),
        Just(0xffff_fff0u32),
        (3u32..32).prop_map(|b| 1 << b),
        any::<u32>(),
    ]
}

/// Counter bitmaps, mostly valid ones.
pub fn bitmap() -> impl Strategy<Value = u32> {
    prop_oneof![
        30 => (1u32..1 << 16).prop_map(|b| b << 3),
        1 => Just(0x7fff9u32),
        1 => Just(0x7fffcu32),
        1 => Just(0u32),
        1 => Just(0b10u32),
        1 => any::<u32>(),
    ]
}

/// Rows of `riscv,event-to-mhpmcounters`: mostly short ranges of
/// general/cache events, sometimes anything.
pub fn range_rows() -> impl Strategy<Value = Option<Vec<u32>>> {
    let first = prop_oneof![6 => 3u32..12, 6 => 0x10000u32..0x10040, 1 => cell()];
    let len = prop_oneof![12 => 0u32..6, 1 => any::<u32>()];
    let row = (first, len, bitmap()).prop_map(|(f, n, c)| [f, f.wrapping_add(n), c]);
    proptest::option::weighted(
        0.8,
        proptest::collection::vec(row, 0..6).prop_map(|v| v.concat()),
    )
}

/// Rows of `riscv,event-to-mhpmevent`: mostly defined events.
pub fn selector_rows() -> impl Strategy<Value = Option<Vec<u32>>> {
    let event = prop_oneof![6 => 3u32..12, 6 => 0x10000u32..0x10010, 1 => cell()];
    let hi = prop_oneof![4 => Just(0u32), 1 => any::<u32>()];
    let row = (event, hi, any::<u32>()).prop_map(|(e, h, l)| [e, h, l]);
    proptest::option::weighted(
        0.5,
        proptest::collection::vec(row, 0..4).prop_map(|v| v.concat()),
    )
}

/// Rows of `riscv,raw-event-to-mhpmcounters`, the match value usually
/// inside the mask.
pub fn raw_rows() -> impl Strategy<Value = Option<Vec<u32>>> {
    let mask = prop_oneof![
        Just(u64::MAX),
        Just(!0xfu64),
        Just(0xffff_ffff_fc00_00ffu64),
        any::<u64>()
    ];
    let row = (any::<u64>(), mask, proptest::bool::weighted(0.9), bitmap()).prop_map(
        |(v, m, inside, c)| {
            let select = if inside { v & m } else { v };
            [
                (select >> 32) as u32,
                select as u32,
                (m >> 32) as u32,
                m as u32,
                c,
            ]
        },
    );
    proptest::option::weighted(
        0.8,
        proptest::collection::vec(row, 0..8).prop_map(|v| v.concat()),
    )
}

pub fn to_bytes(cells: &[u32]) -> Vec<u8> {
    cells.iter().flat_map(|c| c.to_be_bytes()).collect()
}

pub fn opt_bytes(v: Option<Vec<u32>>) -> Option<Vec<u8>> {
    v.map(|c| to_bytes(&c))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Arbitrary bytes (any length) in every property: an answer, no panic.
    #[test]
    fn arbitrary_bytes_never_panic(
        sel in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..80)),
        rng in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..80)),
        raw in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..120)),
        present in proptest::option::of(any::<u32>()),
    ) {
        let r = EventMap::from_props(sel.as_deref(), rng.as_deref(), raw.as_deref(), present);
        match r {
            Ok(map) => { map.warnings().for_each(|w| { let _ = w.to_string(); }); }
            Err(e) => { prop_assert!(!e.to_string().is_empty()); }
        }
    }

    /// Cell arrays biased to the interesting values; accepted maps obey the
    /// rules the parser claims to enforce.
    #[test]
    fn random_cells_never_panic_and_accepted_maps_are_sane(
        sel in selector_rows(),
        rng in range_rows(),
        raw in raw_rows(),
        present in proptest::option::weighted(0.2, any::<u32>()),
        probes in proptest::collection::vec(any::<u64>(), 8),
    ) {
        let (sel, rng, raw) = (opt_bytes(sel), opt_bytes(rng), opt_bytes(raw));
        let r = EventMap::from_props(sel.as_deref(), rng.as_deref(), raw.as_deref(), present);
        let map = match r {
            Ok(m) => m,
            Err(e) => { prop_assert!(!e.to_string().is_empty()); return Ok(()); }
        };
        let allowed = present.map(|p| p | 0b101).unwrap_or(u32::MAX);
        for ev in standard_events() {
            let c = map.counters(&ev);
            prop_assert_eq!(c & 0b10, 0, "time bit for {}", ev);
            prop_assert_eq!(c & !allowed, 0, "absent counter for {}", ev);
            if c & 1 != 0 { prop_assert_eq!(ev.idx(), 1); }
            if c & 4 != 0 { prop_assert_eq!(ev.idx(), 2); }
            if map.has_dt_selector(&ev) { prop_assert!(c != 0, "selector without counters for {}", ev); }
        }
        for r in map.raw_rows() {
            prop_assert_eq!(r.select & !r.mask, 0);
            prop_assert!(r.counters != 0 && r.counters & 0b111 == 0);
        }
        for d in probes.iter().copied().chain(map.raw_rows().iter().map(|r| r.select)) {
            prop_assert_eq!(map.raw_counters(d), map.raw_counters_scan(d));
        }
    }

    /// Valid raw tables (few distinct masks, distinct rows): always accepted,
    /// and the per-mask binary search equals the linear scan on events that
    /// match rows and on random ones.
    #[test]
    fn raw_index_equals_scan(
        masks in proptest::collection::vec(any::<u64>(), 1..5),
        picks in proptest::collection::vec((any::<usize>(), any::<u64>(), 1u32..(1 << 29)), 1..120),
        probes in proptest::collection::vec(any::<u64>(), 16),
    ) {
        let mut rows: Vec<RawRow> = Vec::new();
        for (m, v, c) in picks {
            let mask = masks[m % masks.len()];
            let row = RawRow { select: v & mask, mask, counters: c << 3 };
            if !rows.iter().any(|r| r.select == row.select && r.mask == row.mask) {
                rows.push(row);
            }
        }
        let map = EventMap::from_rows(&[], &[], &rows, None).unwrap();
        prop_assert!(map.raw_mask_groups() <= masks.len());
        for r in &rows {
            // The row's own events, with the free bits set and clear.
            for d in [r.select, r.select | !r.mask] {
                let got = map.raw_counters(d);
                prop_assert_eq!(got, map.raw_counters_scan(d));
                prop_assert_eq!(got & r.counters, r.counters);
            }
        }
        for d in probes {
            prop_assert_eq!(map.raw_counters(d), map.raw_counters_scan(d));
        }
    }

    /// Disjoint ranges: every standard event gets exactly the bitmap of the
    /// row that contains it.
    #[test]
    fn ranges_fill_the_direct_tables(
        cuts in proptest::collection::btree_set(3u32..0x10040, 2..20),
        bitmaps in proptest::collection::vec(1u32..(1 << 29), 20),
    ) {
        let cuts: Vec<u32> = cuts.into_iter().collect();
        let mut cells = Vec::new();
        let mut expect: Vec<(u32, u32, u32)> = Vec::new();
        for (k, w) in cuts.windows(2).enumerate() {
            let (first, last, counters) = (w[0], w[1] - 1, bitmaps[k] << 3);
            cells.extend([first, last, counters]);
            expect.push((first, last, counters));
        }
        let map = EventMap::from_props(None, Some(&to_bytes(&cells)), None, None).unwrap();
        for ev in standard_events() {
            let idx = ev.idx();
            let want = expect.iter().find(|(f, l, _)| (*f..=*l).contains(&idx)).map_or(0, |e| e.2);
            prop_assert_eq!(map.counters(&ev), want, "{}", ev);
        }
    }
}
