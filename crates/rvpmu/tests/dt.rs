//! The `riscv,pmu` parser against real device trees: the three examples
//! of OpenSBI's `docs/pmu_support.md` (the binding's documentation) and QEMU virt's generated node (each a complete .dts in
//! tests/fixtures/dt, compiled with dtc), and one malformed .dts per rule.
//! Every expected value below was written by hand from that document and
//! from QEMU's generated tree, not produced by the parser.

use std::path::PathBuf;
use std::process::Command;

use rvpmu::dt::{
    platform_quirk, platform_quirk_of, CounterList, DtError, EventMap, Place, PmuProps, Property,
    RangeRow, RawRow, Reason, SelectorRow, WarningKind, MAX_ROWS, PLATFORM_QUIRKS,
};
use rvpmu::event::{Cache, Event, General};

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/dt")
}

/// Compile a fixture with dtc (package device-tree-compiler).
fn dtb(name: &str) -> Vec<u8> {
    let path = fixture_dir().join(name);
    let out = Command::new("dtc")
        .args(["-q", "-I", "dts", "-O", "dtb", "-o", "-"])
        .arg(&path)
        .output()
        .expect("dtc not found: install device-tree-compiler (cargo xtask setup)");
    assert!(
        out.status.success(),
        "dtc failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn parse(name: &str) -> Result<EventMap, DtError> {
    let blob = dtb(name);
    let fdt = fdt::Fdt::new(&blob).expect("dtc output is a valid FDT");
    EventMap::from_fdt(&fdt).map(|m| m.expect("fixture has a riscv,pmu node"))
}

fn general(g: General) -> Event {
    Event::General(g)
}

fn cache(idx: u32) -> Event {
    Event::decode(idx as u64, 0).expect("cache event")
}

fn warnings(map: &EventMap) -> Vec<String> {
    map.warnings().map(|w| w.to_string()).collect()
}

// ---------------------------------------------------------------- QEMU virt

#[test]
fn qemu_virt_node() {
    let map = parse("qemu-virt.dts").unwrap();
    // QEMU virt's generated node: cycles -> 0,3..18; instructions -> 2..18; three TLB events -> 3..18.
    assert_eq!(map.counters(&general(General::CpuCycles)), 0x7fff9);
    assert_eq!(map.counters(&general(General::Instructions)), 0x7fffc);
    for idx in [0x10019, 0x1001b, 0x10021] {
        assert_eq!(map.counters(&cache(idx)), 0x7fff8, "{idx:#x}");
        // No event-to-mhpmevent: the selector is the zero-extended event_idx.
        assert_eq!(map.selector(&cache(idx)), idx as u64);
    }
    assert_eq!(map.selector(&general(General::CpuCycles)), 1);
    // Everything else: no counter.
    assert_eq!(map.counters(&general(General::CacheMisses)), 0);
    assert_eq!(map.counters(&cache(0x10018)), 0); // DTLB_READ_ACCESS
    assert_eq!(map.counters(&Event::Raw(0x19)), 0);
    assert!(map.selector_rows().is_empty());
    assert!(map.raw_rows().is_empty());
    assert_eq!(map.range_rows().len(), 5);
    assert_eq!(
        map.range_rows()[3],
        RangeRow {
            first: 0x1001b,
            last: 0x1001b,
            counters: 0x7fff8
        }
    );
    assert_eq!(warnings(&map), Vec::<String>::new());
    assert_eq!(CounterList(0x7fff9).to_string(), "0,3-18");
    assert_eq!(CounterList(0x7fffc).to_string(), "2-18");
}

#[test]
fn qemu_virt_counters_checked_against_the_hart() {
    let blob = dtb("qemu-virt.dts");
    let fdt = fdt::Fdt::new(&blob).unwrap();
    let props = PmuProps::find(&fdt).unwrap();
    let with = |present| {
        EventMap::from_props(
            props.event_to_mhpmevent,
            props.event_to_mhpmcounters,
            props.raw_event_to_mhpmcounters,
            present,
        )
    };
    // QEMU's 16 HPM counters; cycle and instret are implied.
    assert!(with(Some(0x7fff8)).is_ok());
    assert!(with(Some(0x7fffd)).is_ok());
    // A hart with only mhpmcounter3..14.
    let err = with(Some(0x7ff8)).unwrap_err();
    assert_eq!(err.reason, Reason::AbsentCounters { absent: 0x78000 });
    assert_eq!(
        err.to_string(),
        "riscv,event-to-mhpmcounters row 0 (<0x1 0x1 0x7fff9>): counters 15-18 do not exist on this hart"
    );
}

// ------------------------------------- the binding documentation's examples

#[test]
fn pmu_support_example_1() {
    let map = parse("pmu-support-example1.dts").unwrap();
    assert_eq!(map.counters(&general(General::CpuCycles)), 0x1);
    assert_eq!(map.counters(&general(General::Instructions)), 0x4);
    // 0x3..=0xA -> 0xff8 (counters 3-11): CACHE_REFERENCES..REF_CPU_CYCLES.
    for g in &General::ALL[2..] {
        assert_eq!(map.counters(&general(*g)), 0xff8, "{g:?}");
    }
    // 0x10000..=0x10033 -> 0xff000 (12-19): L1D_READ_ACCESS .. NODE_WRITE_MISS.
    assert_eq!(map.counters(&cache(0x10000)), 0xff000);
    assert_eq!(map.counters(&cache(0x10021)), 0xff000);
    assert_eq!(map.counters(&cache(0x10033)), 0xff000);
    // NODE_PREFETCH_* (0x10034, 0x10035) are past the range.
    assert_eq!(map.counters(&cache(0x10034)), 0);
    assert_eq!(map.counters(&cache(0x10035)), 0);
    // The one selector row names 0xB, which SBI 3.0 does not define: it is
    // kept but changes no selector.
    assert_eq!(
        map.selector_rows(),
        &[SelectorRow {
            event_idx: 0xb,
            selector: 1
        }]
    );
    for g in General::ALL {
        assert_eq!(map.selector(&general(g)), g as u64);
    }
    // Raw rows: 0x2 -> 0xf8; 0..15 -> 0xff0; 0xffffffff_0000000f with bits 4..7 free -> 0xff0.
    assert_eq!(
        map.raw_rows(),
        &[
            RawRow {
                select: 0x2,
                mask: u64::MAX,
                counters: 0xf8
            },
            RawRow {
                select: 0,
                mask: 0xffff_ffff_ffff_fff0,
                counters: 0xff0
            },
            RawRow {
                select: 0xffff_ffff_0000_000f,
                mask: 0xffff_ffff_ffff_ff0f,
                counters: 0xff0
            },
        ]
    );
    // Event 2 matches rows 0 and 1: the union.
    assert_eq!(map.counters(&Event::Raw(2)), 0xff8);
    assert_eq!(map.counters(&Event::RawV2(2)), 0xff8);
    assert_eq!(map.counters(&Event::Raw(0xf)), 0xff0);
    assert_eq!(map.counters(&Event::Raw(0x10)), 0);
    assert_eq!(map.raw_counters(0xffff_ffff_0000_00af), 0xff0);
    assert_eq!(map.raw_counters(0xffff_ffff_0000_00ae), 0);
    assert_eq!(map.selector(&Event::Raw(0x1234)), 0x1234);
    assert_eq!(map.raw_mask_groups(), 3);
    assert_eq!(
        warnings(&map),
        [
            "riscv,event-to-mhpmevent row 0 (<0xb 0x0 0x1>): 0xb is not an event SBI 3.0 defines; the row is never used",
            "riscv,raw-event-to-mhpmcounters row 2 (<0xffffffff 0xf 0xffffffff 0xffffff0f 0xff0>): match value needs bits above 55, beyond any raw event_data (48 bits for type 2, 56 for type 3); the row never matches",
        ]
    );
}

#[test]
fn pmu_support_example_2() {
    let map = parse("pmu-support-example2.dts").unwrap();
    let sel = [
        (general(General::CacheReferences), 0x1801),
        (general(General::CacheMisses), 0x0302),
        (general(General::BranchInstructions), 0x4000),
        (general(General::BranchMisses), 0x6001),
        (cache(0x10001), 0x0202), // L1D_READ_MISS
        (cache(0x10002), 0x0402), // L1D_WRITE_ACCESS
        (cache(0x10009), 0x0102), // L1I_READ_MISS (the example's comment says ACCESS)
        (cache(0x10011), 0x2002), // LL_READ_MISS
        (cache(0x10019), 0x1002), // DTLB_READ_MISS
        (cache(0x10021), 0x0802), // ITLB_READ_MISS
    ];
    for (ev, s) in sel {
        assert_eq!(map.selector(&ev), s, "{ev}");
        assert_eq!(map.counters(&ev), 0x18, "{ev}");
        assert!(map.has_dt_selector(&ev));
    }
    assert_eq!(CounterList(0x18).to_string(), "3,4");
    // No row for cycles/instructions: the fixed counters are the engine's.
    assert_eq!(map.counters(&general(General::CpuCycles)), 0);
    assert_eq!(map.counters(&general(General::Instructions)), 0);
    assert_eq!(map.counters(&cache(0x10000)), 0); // L1D_READ_ACCESS
    assert_eq!(map.counters(&cache(0x10008)), 0); // L1I_READ_ACCESS
    assert_eq!(map.selector(&cache(0x10000)), 0x10000);
    // U74 raw events: class in bits 0..7, event mask above.
    assert_eq!(map.raw_mask_groups(), 3);
    assert_eq!(map.raw_counters(0x0000_0000), 0x18); // class 0, no bits
    assert_eq!(map.raw_counters(0x03ff_ff00), 0x18); // class 0, bits 8..25
    assert_eq!(map.raw_counters(0x0400_0000), 0); // class 0, bit 26
    assert_eq!(map.raw_counters(0x0004_4001), 0x18); // class 1, bits 14, 18
    assert_eq!(map.raw_counters(0x0008_0001), 0); // class 1, bit 19
    assert_eq!(map.raw_counters(0x1f02), 0x18); // class 2, bits 8..12
    assert_eq!(map.raw_counters(0x2002), 0); // class 2, bit 13
    assert_eq!(map.raw_counters(0x3), 0); // class 3
    assert_eq!(map.counters(&Event::Raw(0x4001)), 0x18);
    assert_eq!(warnings(&map), Vec::<String>::new());
}

#[test]
fn pmu_support_example_3() {
    let map = parse("pmu-support-example3.dts").unwrap();
    let sel = [
        (general(General::CpuCycles), 0x10),
        (general(General::Instructions), 0x20),
        (general(General::CacheReferences), 0x41),
        (general(General::CacheMisses), 0x51),
        (general(General::BranchInstructions), 0x80),
        (general(General::BranchMisses), 0x02),
        (cache(0x10000), 0x61),
        (cache(0x10001), 0x71),
        (cache(0x10002), 0x81),
        (cache(0x10003), 0x91),
        (cache(0x10008), 0x21),
        (cache(0x10009), 0x31),
    ];
    for (ev, s) in sel {
        assert_eq!(map.selector(&ev), s, "{ev}");
        assert_eq!(map.counters(&ev), 0x78, "{ev}");
    }
    assert_eq!(CounterList(0x78).to_string(), "3-6");
    assert_eq!(map.counters(&general(General::BusCycles)), 0);
    assert_eq!(map.counters(&cache(0x10004)), 0); // L1D_PREFETCH_ACCESS
                                                  // 25 + 24 + 3 raw rows, all exact ids: one mask group.
    assert_eq!(map.raw_rows().len(), 52);
    assert_eq!(map.raw_mask_groups(), 1);
    for id in [0x10, 0x190, 0x01, 0x171, 0x02, 0x22] {
        assert_eq!(map.raw_counters(id), 0x78, "{id:#x}");
    }
    for id in [0x0, 0x1a0, 0x181, 0x32, 0x110 | 1 << 32] {
        assert_eq!(map.raw_counters(id), 0, "{id:#x}");
    }
    assert_eq!(warnings(&map), Vec::<String>::new());
}

// -------------------------------------------------------- malformed nodes

/// (fixture, exact error)
const MALFORMED: &[(&str, &str)] = &[
    (
        "bad-ragged-counters.dts",
        "riscv,event-to-mhpmcounters: 4 cells are not a whole number of 3-cell rows",
    ),
    (
        "bad-ragged-raw.dts",
        "riscv,raw-event-to-mhpmcounters: 6 cells are not a whole number of 5-cell rows",
    ),
    (
        "bad-partial-cell.dts",
        "riscv,event-to-mhpmevent: 13 bytes are not a whole number of 32-bit cells",
    ),
    (
        "bad-overlap.dts",
        "riscv,event-to-mhpmcounters row 3 (<0x10000 0x10033 0xff000>): range overlaps row 2",
    ),
    (
        "bad-reversed.dts",
        "riscv,event-to-mhpmcounters row 1 (<0x10033 0x10000 0xff000>): first event 0x10033 is after last event 0x10000",
    ),
    (
        "bad-fixed-counter.dts",
        "riscv,event-to-mhpmcounters row 1 (<0x3 0x3 0x9>): counter 0 (cycle) counts only CPU_CYCLES, but the row maps CACHE_REFERENCES (0x3) to it",
    ),
    (
        "bad-fixed-range.dts",
        "riscv,event-to-mhpmcounters row 0 (<0x1 0x6 0x7d>): counter 0 (cycle) counts only CPU_CYCLES, but the row maps INSTRUCTIONS (0x2) to it",
    ),
    (
        "bad-instret-cycles.dts",
        "riscv,event-to-mhpmcounters row 0 (<0x1 0x1 0x5>): counter 2 (instret) counts only INSTRUCTIONS, but the row maps CPU_CYCLES (0x1) to it",
    ),
    (
        "bad-time-counter.dts",
        "riscv,event-to-mhpmcounters row 0 (<0x10019 0x10019 0x7fffa>): counter bitmap has bit 1, the time CSR, which counts no event",
    ),
    (
        "bad-empty-bitmap.dts",
        "riscv,event-to-mhpmcounters row 1 (<0x10000 0x10001 0x0>): counter bitmap is empty",
    ),
    (
        "bad-unmapped.dts",
        "riscv,event-to-mhpmevent row 1 (<0x4 0x0 0x302>): no riscv,event-to-mhpmcounters row covers CACHE_MISSES (0x4), so no counter can use this selector",
    ),
    (
        "bad-selectors-only.dts",
        "riscv,event-to-mhpmevent: present without riscv,event-to-mhpmcounters, which the binding then requires",
    ),
    (
        "bad-raw-in-selector.dts",
        "riscv,event-to-mhpmevent row 0 (<0x20000 0x0 0x10>): 0x20000 is a raw event (type 2); raw events belong in riscv,raw-event-to-mhpmcounters",
    ),
    (
        "bad-firmware-range.dts",
        "riscv,event-to-mhpmcounters row 0 (<0xf0000 0xf0005 0x78>): 0xf0000 is a firmware event (type 15), counted by the SBI implementation, not by a hardware counter",
    ),
    (
        "bad-reserved-bits.dts",
        "riscv,event-to-mhpmevent row 0 (<0x100003 0x0 0x41>): 0x100003 is not an event_idx (bits 20..31 must be 0)",
    ),
    (
        "bad-dup-selector.dts",
        "riscv,event-to-mhpmevent row 2 (<0x3 0x0 0x61>): the event already has a selector in row 0",
    ),
    (
        "bad-zero-selector.dts",
        "riscv,event-to-mhpmevent row 0 (<0x5 0x0 0x0>): selector 0 means \"no event\" in mhpmevent",
    ),
    (
        "bad-dup-raw.dts",
        "riscv,raw-event-to-mhpmcounters row 2 (<0x0 0x10 0xffffffff 0xffffffff 0x18>): same match value and mask as row 0",
    ),
    (
        "bad-raw-outside-mask.dts",
        "riscv,raw-event-to-mhpmcounters row 0 (<0x0 0x13 0xffffffff 0xfffffff0 0x78>): match value has bits 0x3 outside the mask, so no event can match",
    ),
    (
        "bad-raw-fixed.dts",
        "riscv,raw-event-to-mhpmcounters row 0 (<0x0 0x10 0xffffffff 0xffffffff 0x9>): counter 0 (cycle) counts only CPU_CYCLES, but the row maps raw events to it",
    ),
];

#[test]
fn malformed_nodes_give_exact_errors() {
    let mut failures = Vec::new();
    for (file, expected) in MALFORMED {
        match parse(file) {
            Ok(_) => failures.push(format!("{file}: accepted, expected `{expected}`")),
            Err(e) if e.to_string() != *expected => {
                failures.push(format!("{file}:\n   got `{e}`\n  want `{expected}`"))
            }
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_malformed_fixture_is_listed() {
    let mut on_disk: Vec<String> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("bad-"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = MALFORMED.iter().map(|(f, _)| f.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
fn malformed_errors_are_typed() {
    // A few of the above, by value rather than by text.
    let e = parse("bad-overlap.dts").unwrap_err();
    assert_eq!(e.reason, Reason::RangeOverlaps { row: 2 });
    assert_eq!(e.place.property, Property::EventToMhpmcounters);
    assert_eq!(e.place.row, Some(3));
    assert_eq!(e.place.cells(), &[0x10000, 0x10033, 0xff000]);
    let e = parse("bad-ragged-raw.dts").unwrap_err();
    assert_eq!(
        e,
        DtError {
            place: Place::property(Property::RawEventToMhpmcounters),
            reason: Reason::RaggedRows {
                cells: 6,
                per_row: 5
            }
        }
    );
    assert_eq!(e.place.cells(), &[] as &[u32]);
    assert_eq!(
        parse("bad-unmapped.dts").unwrap_err().reason,
        Reason::Unmapped { event_idx: 4 }
    );
    assert_eq!(
        parse("bad-fixed-counter.dts").unwrap_err().reason,
        Reason::FixedCounter {
            counter: 0,
            event_idx: 3
        }
    );
}

// ----------------------------------------------- inline bytes, typed rows

fn cells(c: &[u32]) -> Vec<u8> {
    c.iter().flat_map(|v| v.to_be_bytes()).collect()
}

#[test]
fn too_many_rows() {
    let rows: Vec<u32> = (0..MAX_ROWS as u32 + 1)
        .flat_map(|i| [0x10000 + i, 0x10000 + i, 0x8])
        .collect();
    let err = EventMap::from_props(None, Some(&cells(&rows)), None, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "riscv,event-to-mhpmcounters: 257 rows, more than the 256 this parser accepts"
    );
    // Exactly MAX_ROWS is fine.
    let ok = &cells(&rows)[..MAX_ROWS * 12];
    let map = EventMap::from_props(None, Some(ok), None, None).unwrap();
    assert_eq!(map.range_rows().len(), MAX_ROWS);
    // 0x10000..0x100ff covers every cache event.
    assert_eq!(
        map.counters(&Event::Cache(Cache {
            id: 6,
            op: 2,
            result: 1
        })),
        0x8
    );
}

#[test]
fn empty_and_absent_properties() {
    let map = EventMap::from_props(None, None, None, None).unwrap();
    assert_eq!(map.counters(&general(General::CpuCycles)), 0);
    assert!(rvpmu::dt::standard_events().all(|e| map.counters(&e) == 0));
    // An empty property is zero rows.
    let map = EventMap::from_props(None, Some(&[]), Some(&[]), None).unwrap();
    assert!(map.range_rows().is_empty());
    // Selectors with an empty counter property: the row is unmapped.
    let sel = cells(&[0x3, 0, 0x41]);
    let err = EventMap::from_props(Some(&sel), Some(&[]), None, None).unwrap_err();
    assert_eq!(err.reason, Reason::Unmapped { event_idx: 3 });
}

#[test]
fn range_edges() {
    // A range touching the previous one is not an overlap.
    let ok = cells(&[0x3, 0x6, 0x18, 0x7, 0xa, 0x60]);
    let map = EventMap::from_props(None, Some(&ok), None, None).unwrap();
    assert_eq!(map.counters(&general(General::BranchMisses)), 0x18);
    assert_eq!(map.counters(&general(General::BusCycles)), 0x60);
    // Sharing one event is.
    let bad = cells(&[0x3, 0x6, 0x18, 0x6, 0xa, 0x60]);
    let err = EventMap::from_props(None, Some(&bad), None, None).unwrap_err();
    assert_eq!(err.reason, Reason::RangeOverlaps { row: 0 });
    // A range ending on a raw event_idx.
    let bad = cells(&[0x10000, 0x20000, 0x18]);
    let err = EventMap::from_props(None, Some(&bad), None, None).unwrap_err();
    assert_eq!(err.reason, Reason::NotHardwareEvent { event_idx: 0x20000 });
    // A range of undefined codes is accepted with a warning.
    let odd = cells(&[0x10006, 0x10007, 0x18]);
    let map = EventMap::from_props(None, Some(&odd), None, None).unwrap();
    assert_eq!(
        map.warnings().map(|w| w.kind).collect::<Vec<_>>(),
        [WarningKind::EmptyRange]
    );
}

#[test]
fn selector_filter_bits_warn() {
    let sel = cells(&[0x3, 0x8000_0000, 0x41]);
    let rng = cells(&[0x3, 0x3, 0x8]);
    let map = EventMap::from_props(Some(&sel), Some(&rng), None, None).unwrap();
    assert_eq!(
        map.selector(&general(General::CacheReferences)),
        0x8000_0000_0000_0041
    );
    assert_eq!(
        map.warnings().map(|w| w.kind).collect::<Vec<_>>(),
        [WarningKind::SelectorFilterBits]
    );
}

#[test]
fn from_rows_checks_like_from_props() {
    let ranges = [RangeRow {
        first: 3,
        last: 6,
        counters: 0x18,
    }];
    let selectors = [SelectorRow {
        event_idx: 3,
        selector: 0x1801,
    }];
    let map = EventMap::from_rows(&selectors, &ranges, &[], Some(0x18)).unwrap();
    assert_eq!(map.selector(&general(General::CacheReferences)), 0x1801);
    let err = EventMap::from_rows(&selectors, &ranges, &[], Some(0x8)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "riscv,event-to-mhpmcounters row 0 (<0x3 0x6 0x18>): counters 4 do not exist on this hart"
    );
    let raw = [RawRow {
        select: 0x1_0000_0000,
        mask: u64::MAX,
        counters: 0x10,
    }; 2];
    let err = EventMap::from_rows(&[], &[], &raw, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "riscv,raw-event-to-mhpmcounters row 1 (<0x1 0x0 0xffffffff 0xffffffff 0x10>): same match value and mask as row 0"
    );
}

#[test]
fn load_props_leaves_an_empty_map_on_error() {
    let mut map = EventMap::from_props(None, Some(&cells(&[0x3, 0x6, 0x18])), None, None).unwrap();
    let bad = cells(&[0x3, 0x6, 0x18, 0x4, 0x4, 0x18]);
    let props = PmuProps {
        event_to_mhpmcounters: Some(&bad),
        ..PmuProps::default()
    };
    assert!(map.load_props(props, None).is_err());
    assert!(map.range_rows().is_empty());
    assert_eq!(map.counters(&general(General::CacheReferences)), 0);
}

#[test]
fn no_pmu_node_is_none() {
    let blob = dtb("../dt/qemu-virt.dts");
    let fdt = fdt::Fdt::new(&blob).unwrap();
    assert!(EventMap::from_fdt(&fdt).unwrap().is_some());
    // A tree without the node.
    let dir = std::env::temp_dir().join(format!("rvpmu-dt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dts = dir.join("nopmu.dts");
    std::fs::write(
        &dts,
        "/dts-v1/;\n/ { #address-cells = <2>; #size-cells = <2>; };\n",
    )
    .unwrap();
    let out = Command::new("dtc")
        .args(["-q", "-I", "dts", "-O", "dtb", "-o", "-"])
        .arg(&dts)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let fdt = fdt::Fdt::new(&out.stdout).unwrap();
    assert!(EventMap::from_fdt(&fdt).unwrap().is_none());
}

// ------------------------------------------- rvpmu,one-counter-per-event

/// Compile DT source text with dtc.
fn dtb_from_source(name: &str, src: &str) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("rvpmu-dt-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dts = dir.join(format!("{name}.dts"));
    std::fs::write(&dts, src).unwrap();
    let out = Command::new("dtc")
        .args(["-q", "-I", "dts", "-O", "dtb", "-o", "-"])
        .arg(&dts)
        .output()
        .expect("dtc not found: install device-tree-compiler (cargo xtask setup)");
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A board (not QEMU) whose pmu node has QEMU virt's counter rows and the
/// extra line `prop`.
fn board_with(prop: &str) -> String {
    format!(
        "/dts-v1/;\n/ {{ #address-cells = <2>; #size-cells = <2>; compatible = \"acme,board\";\n\
         pmu {{ compatible = \"riscv,pmu\";\n\
         riscv,event-to-mhpmcounters = <0x01 0x01 0x7fff9 0x02 0x02 0x7fffc>;\n{prop}\n}}; }};\n"
    )
}

fn parse_source(name: &str, src: &str) -> Result<EventMap, DtError> {
    let blob = dtb_from_source(name, src);
    let fdt = fdt::Fdt::new(&blob).unwrap();
    EventMap::from_fdt(&fdt).map(|m| m.expect("a riscv,pmu node"))
}

#[test]
fn one_counter_per_event_property_is_parsed() {
    let src = board_with("rvpmu,one-counter-per-event;");
    let blob = dtb_from_source("ocpe-on", &src);
    let fdt = fdt::Fdt::new(&blob).unwrap();
    let props = PmuProps::find(&fdt).unwrap();
    assert_eq!(props.one_counter_per_event, Some(&[][..]));
    // Through the firmware's path (load_props, counters checked) too.
    let mut map = EventMap::empty();
    map.load_props(props, Some(0x7fffd)).unwrap();
    assert!(map.one_counter_per_event());
    assert!(platform_quirk_of(&fdt).is_none(), "not QEMU: no quirk");
    assert!(parse_source("ocpe-on2", &src)
        .unwrap()
        .one_counter_per_event());
}

#[test]
fn one_counter_per_event_absent_is_off() {
    let map = parse_source("ocpe-off", &board_with("")).unwrap();
    assert!(!map.one_counter_per_event());
    for example in [
        "pmu-support-example1.dts",
        "pmu-support-example2.dts",
        "pmu-support-example3.dts",
    ] {
        assert!(
            !parse(example).unwrap().one_counter_per_event(),
            "{example}"
        );
    }
    // from_props (the three binding properties) never sets it.
    let map = EventMap::from_props(None, Some(&cells(&[0x3, 0x6, 0x18])), None, None).unwrap();
    assert!(!map.one_counter_per_event());
}

#[test]
fn one_counter_per_event_with_a_value_is_refused() {
    // A DT boolean has no value; `= <0>` does not mean "off".
    for (value, bytes) in [("<1>", 4), ("<0>", 4), ("\"yes\"", 4), ("<0 1>", 8)] {
        let src = board_with(&format!("rvpmu,one-counter-per-event = {value};"));
        let err = parse_source("ocpe-bad", &src).unwrap_err();
        assert_eq!(
            err,
            DtError {
                place: Place::property(Property::OneCounterPerEvent),
                reason: Reason::NotBoolean { bytes },
            },
            "{value}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "rvpmu,one-counter-per-event: a boolean property is empty (present means true), \
                 but this one has {bytes} bytes; write it without a value"
            )
        );
    }
    // And a map left behind by a refused node has the property off.
    let mut map = EventMap::empty();
    map.set_one_counter_per_event(true);
    let bad = [0u8, 0, 0, 1];
    let props = PmuProps {
        one_counter_per_event: Some(&bad),
        ..PmuProps::default()
    };
    assert!(map.load_props(props, None).is_err());
    assert!(!map.one_counter_per_event());
}

#[test]
fn qemu_virt_quirk_turns_it_on() {
    // QEMU's generated node does not carry the property...
    let blob = dtb("qemu-virt.dts");
    let fdt = fdt::Fdt::new(&blob).unwrap();
    assert_eq!(PmuProps::find(&fdt).unwrap().one_counter_per_event, None);
    // ... the quirk table does, by the root compatible "riscv-virtio".
    let q = platform_quirk_of(&fdt).expect("QEMU virt has a quirk entry");
    assert_eq!(q.root_compatible, "riscv-virtio");
    assert!(q.one_counter_per_event);
    assert!(parse("qemu-virt.dts").unwrap().one_counter_per_event());
}

#[test]
fn platform_quirks_match_whole_compatible_strings() {
    assert_eq!(PLATFORM_QUIRKS.len(), 1);
    assert!(platform_quirk(b"riscv-virtio\0").is_some());
    assert!(platform_quirk(b"acme,board\0riscv-virtio\0").is_some());
    assert!(platform_quirk(b"riscv-virtio").is_some(), "without its NUL");
    assert!(platform_quirk(b"riscv-virtio,qemu\0").is_none());
    assert!(platform_quirk(b"riscv-virti\0").is_none());
    assert!(platform_quirk(b"sifive,hifive-unmatched-a00\0").is_none());
    assert!(platform_quirk(b"").is_none());
    assert!(platform_quirk(b"\0\0").is_none());
}
