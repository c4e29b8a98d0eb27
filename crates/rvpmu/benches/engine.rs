//! Criterion benchmarks of the PMU engine's hot calls on the simulated
//! hart, through the raw register boundary (`rvpmu::ecall::pmu`):
//! config_matching against tiny and 256-row event maps (ranges, selectors,
//! raw rows with one or many distinct masks), start/stop pairs, fw_read
//! and firmware event recording.
//!
//! Run: `cargo bench -p rvpmu --bench engine` (add `-- --quick` for a
//! short run). Numbers are host numbers (x86_64), not M-mode RISC-V ones;
//! what matters is how they change with the table size.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rvpmu::dt::{EventMap, RangeRow, RawRow, SelectorRow};
use rvpmu::ecall;
use rvpmu::event::FwEvent;
use rvpmu::hart::{FwEventSet, IsaFeatures};
use rvpmu::sim::{BufMemory, SimHart};
use rvpmu::{Pmu, PmuConfig};

const CFG: usize = 2;
const START: usize = 3;
const STOP: usize = 4;
const FW_READ: usize = 5;
const HPM: u32 = 0x7fff8; // hpmcounter3..18
const FW0: u64 = 19; // first firmware counter on a QEMU-like hart
const ALL: u64 = ((1u64 << 35) - 1) & !0b10; // Linux's cmask

/// cycles, instructions and every cache event on the 16 HPM counters.
fn tiny() -> EventMap {
    let rows = [
        RangeRow {
            first: 1,
            last: 1,
            counters: HPM | 1,
        },
        RangeRow {
            first: 2,
            last: 2,
            counters: HPM | 4,
        },
        RangeRow {
            first: 3,
            last: 10,
            counters: HPM,
        },
        RangeRow {
            first: 0x10000,
            last: 0x1ffff,
            counters: HPM,
        },
    ];
    let raw = [RawRow {
        select: 0,
        mask: 0,
        counters: HPM,
    }];
    EventMap::from_rows(&[], &rows, &raw, None).unwrap()
}

/// 256 rows in each property: 256 disjoint ranges (general events one per
/// row, then 4-code cache ranges), 256 selector rows, and 256 raw rows with
/// `masks` distinct masks.
fn big(masks: usize) -> EventMap {
    let mut ranges: Vec<RangeRow> = (1..=10)
        .map(|e| RangeRow {
            first: e,
            last: e,
            counters: HPM,
        })
        .collect();
    ranges[0].counters |= 1;
    ranges[1].counters |= 4;
    let mut k = 0;
    while ranges.len() < 256 {
        ranges.push(RangeRow {
            first: 0x10000 + 4 * k,
            last: 0x10000 + 4 * k + 3,
            counters: HPM,
        });
        k += 1;
    }
    let selectors: Vec<SelectorRow> = (0..256u32)
        .map(|k| SelectorRow {
            event_idx: 0x10000 + k,
            selector: 0x1000 + k as u64,
        })
        .collect();
    let raw: Vec<RawRow> = (0..256u64)
        .map(|k| {
            let mask = 0xffff_0000 | (k % masks as u64);
            RawRow {
                select: (k << 16) & mask,
                mask,
                counters: HPM,
            }
        })
        .collect();
    EventMap::from_rows(&selectors, &ranges, &raw, None).unwrap()
}

/// A hart's engine and the supervisor memory handed to it on each call.
type Hart<'m> = (Pmu<'m, SimHart>, BufMemory);

fn pmu(map: &EventMap) -> Hart<'_> {
    let mut fw_events = FwEventSet::all_standard();
    fw_events.implementation[0] = 256;
    let cfg = PmuConfig::new(map, IsaFeatures::none().with_sscofpmf(true))
        .with_fw_events(fw_events)
        .with_snapshot(true)
        .with_alias_window(false);
    let mut hw = SimHart::qemu_virt();
    hw.logging = false; // an unbounded log would inflate every CSR write
    (Pmu::new(cfg, hw), BufMemory::virt())
}

fn call((p, mem): &mut Hart<'_>, fid: usize, a: [u64; 6]) -> usize {
    let r = ecall::pmu(p, mem, fid, a.map(|x| x as usize));
    black_box(r.value)
}

fn config_matching(c: &mut Criterion) {
    let maps = [
        ("tiny", tiny()),
        ("256rows_1mask", big(1)),
        ("256rows_256masks", big(256)),
    ];
    // (name, event_idx, event_data) - all countable by every map.
    let events = [
        ("general", 0x4u64, 0u64),
        ("cache", 0x10019, 0),
        ("raw", 0x20000, 0x00ab_0000),
        ("firmware", 0xF0006, 0),
    ];
    let mut g = c.benchmark_group("config_matching+stop_reset");
    for (mname, map) in &maps {
        for (ename, e, d) in events {
            let mut p = pmu(map);
            g.bench_function(format!("{ename}/{mname}"), |b| {
                b.iter(|| {
                    let idx = call(&mut p, CFG, [0, ALL, 0x18, e, d, 0]) as u64;
                    call(&mut p, STOP, [idx, 1, 1, 0, 0, 0]);
                })
            });
        }
    }
    g.finish();

    let mut g = c.benchmark_group("raw_lookup");
    for (mname, map) in &maps {
        g.bench_function(format!("indexed/{mname}"), |b| {
            b.iter(|| map.raw_counters(black_box(0x00ab_0000)))
        });
        g.bench_function(format!("scan/{mname}"), |b| {
            b.iter(|| map.raw_counters_scan(black_box(0x00ab_0000)))
        });
    }
    g.finish();
}

fn start_stop(c: &mut Criterion) {
    let map = tiny();
    let mut g = c.benchmark_group("start+stop");
    for (name, e) in [("hpm", 0x4u64), ("firmware", 0xF0006)] {
        let mut p = pmu(&map);
        let idx = call(&mut p, CFG, [0, ALL, 0, e, 0, 0]) as u64;
        g.bench_function(name, |b| {
            b.iter(|| {
                call(&mut p, START, [idx, 1, 1, 0, 0, 0]);
                call(&mut p, STOP, [idx, 1, 0, 0, 0, 0]);
            })
        });
    }
    let mut p = pmu(&map);
    call(&mut p, 7, [0x8004_0000, 0, 0, 0, 0, 0]);
    let idx = call(&mut p, CFG, [0, ALL, 0, 0x4, 0, 0]) as u64;
    g.bench_function("hpm_with_snapshot", |b| {
        b.iter(|| {
            call(&mut p, START, [idx, 1, 2, 0, 0, 0]);
            call(&mut p, STOP, [idx, 1, 2, 0, 0, 0]);
        })
    });
    g.finish();
}

fn fw_read_and_record(c: &mut Criterion) {
    let map = tiny();
    let mut p = pmu(&map);
    c.bench_function("fw_read", |b| {
        b.iter(|| call(&mut p, FW_READ, [FW0, 0, 0, 0, 0, 0]))
    });

    let mut g = c.benchmark_group("record");
    for listeners in [0u64, 1, 16] {
        let mut p = pmu(&map);
        for _ in 0..listeners {
            call(&mut p, CFG, [FW0, 0xffff, 4, 0xF0006, 0, 0]);
        }
        g.bench_function(format!("{listeners}_counters"), |b| {
            b.iter(|| p.0.record(black_box(FwEvent::IpiSent)))
        });
    }
    let mut p = pmu(&map);
    call(&mut p, CFG, [FW0, 1, 4, 0xF0100, 0, 0]);
    g.bench_function("impl_event_1_counter", |b| {
        b.iter(|| p.0.record_impl(black_box(256)))
    });
    g.finish();
}

criterion_group!(benches, config_matching, start_stop, fw_read_and_record);
criterion_main!(benches);
