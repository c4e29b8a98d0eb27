//! Fuzz the SBI PMU engine at its raw register boundary.
//!
//! The input picks a platform shape (counters present, width, Sscofpmf,
//! Smcntrpmf, H, snapshot, alias window, firmware events, one of a few
//! event maps), then a sequence of raw calls `(fid, a0..a5)` interleaved with
//! firmware event records, simulated hardware events and supervisor stores.
//! After every step: no panic, no memory access outside the supervisor's RAM
//! (`BufMemory::faults`), no access to an absent counter, every write inside
//! the snapshot area (stop with TAKE_SNAPSHOT, set_shmem) or the event-info
//! output words of that very call, and every started counter configured.
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run ecall` from the repository root.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use rvpmu::dt::{EventMap, RangeRow, RawRow, SelectorRow};
use rvpmu::ecall;
use rvpmu::event::FwEvent;
use rvpmu::hart::{FwEventSet, IsaFeatures};
use rvpmu::sim::{BufMemory, Mode, SimHart};
use rvpmu::{Pmu, PmuConfig};

const BUF_BASE: u64 = 0x8000_0000;
const RAM_LO: u64 = 0x8004_0000;
const RAM_HI: u64 = 0x8010_0000;

fn map(kind: u8) -> EventMap {
    let r = |first, last, counters| RangeRow { first, last, counters };
    let ranges: Vec<RangeRow> = match kind % 3 {
        0 => vec![],
        1 => vec![
            r(1, 1, 0x7fff9),
            r(2, 2, 0x7fffc),
            r(3, 10, 0x7fff8),
            r(0x10000, 0x1001f, 0x7fff8),
            r(0x10020, 0x10035, 0xfff0_0000),
        ],
        _ => vec![r(5, 6, 0x18), r(0x10019, 0x10019, 0x20), r(0x1001b, 0x1001b, 0x20)],
    };
    let selectors: Vec<SelectorRow> = match kind % 3 {
        1 => vec![
            SelectorRow {
                event_idx: 3,
                selector: 0x303,
            },
            SelectorRow {
                event_idx: 0x10001,
                selector: 1,
            },
        ],
        2 => vec![SelectorRow {
            event_idx: 5,
            selector: 0x4000,
        }],
        _ => vec![],
    };
    let raw: Vec<RawRow> = if kind & 4 != 0 {
        vec![
            RawRow {
                select: 0,
                mask: 0,
                counters: 0x78,
            },
            RawRow {
                select: 0x11,
                mask: 0xff,
                counters: 0x80,
            },
            RawRow {
                select: 0x1200,
                mask: 0xff00,
                counters: 0x100,
            },
        ]
    } else {
        vec![]
    };
    EventMap::from_rows(&selectors, &ranges, &raw, None).expect("fixed maps are valid")
}

/// A biased 64-bit argument: small indices, alias-window indices,
/// supervisor / firmware addresses, or anything.
fn arg(u: &mut Unstructured) -> Result<u64> {
    Ok(match u.arbitrary::<u8>()? % 8 {
        0 | 1 => u.arbitrary::<u8>()? as u64 % 64,
        2 => 4096 + u.arbitrary::<u8>()? as u64 % 64,
        3 => RAM_LO + (u.arbitrary::<u16>()? as u64 % 192) * 4096,
        4 => RAM_LO + (u.arbitrary::<u16>()? as u64) * 16,
        5 => BUF_BASE + (u.arbitrary::<u16>()? as u64) * 16,
        6 => [0, 1, u64::MAX, 1 << 63, 0xffff_ffff][u.arbitrary::<u8>()? as usize % 5],
        _ => u.arbitrary::<u64>()?,
    })
}

fn mode(b: u8) -> Mode {
    [Mode::U, Mode::S, Mode::M, Mode::VS, Mode::VU][b as usize % 5]
}

fn check_writes(mem: &BufMemory, from: usize, fid: usize, a: &[u64; 6], err: usize, area: Option<u64>) {
    for &(x, n) in &mem.writes[from..] {
        let n = n as u64;
        let inside = |b: u64, len: u64| x >= b && x.checked_add(n).is_some_and(|e| e <= b.saturating_add(len));
        let ok = match fid {
            7 => err == 0 && inside(a[0], 4096),
            4 => a[2] & 2 != 0 && area.is_some_and(|b| inside(b, 4096)),
            8 => {
                a[2].checked_mul(16).is_some_and(|s| inside(a[0], s))
                    && (x - a[0]) % 16 >= 4
                    && (x - a[0]) % 16 + n <= 8
            }
            _ => false,
        };
        assert!(
            ok,
            "FID {fid} {a:x?} -> {err:#x}: write {x:#x}+{n} outside what it may touch"
        );
    }
}

fn run(u: &mut Unstructured) -> Result<()> {
    let present = u.arbitrary::<u32>()? | 0b101;
    let width = [64u8, 40, 48, 32][u.arbitrary::<u8>()? as usize % 4];
    let f = u.arbitrary::<u8>()?;
    let map = map(u.arbitrary::<u8>()?);
    let mut fw = FwEventSet::all_standard();
    fw.standard = u.arbitrary::<u32>()? & 0x3f_ffff;
    fw.implementation[0] = 256;
    fw.platform[0] = Some(0xdead);
    let cfg = PmuConfig::new(&map, IsaFeatures::none().with_sscofpmf(f & 1 != 0).with_smcntrpmf(f & 2 != 0).with_h(f & 4 != 0)).with_fw_events(fw).with_snapshot(f & 8 == 0).with_alias_window(f & 16 != 0);
    let hart = SimHart::new(present, width, f & 1 != 0, f & 2 != 0);
    let mut pmu = Pmu::new(cfg, hart);
    let mut mem = BufMemory::virt();

    while !u.is_empty() {
        let op = u.arbitrary::<u8>()?;
        match op % 16 {
            0..=9 => {
                let fid = match op >> 4 {
                    15 => u.arbitrary::<u8>()? as usize, // any FID
                    k => [2, 2, 3, 3, 4, 4, 0, 1, 5, 6, 7, 8, 2, 3, 4][k as usize],
                };
                let mut a = [0u64; 6];
                for x in a.iter_mut() {
                    *x = arg(u)?;
                }
                let area = pmu.snapshot_area();
                let n = mem.writes.len();
                let r = ecall::pmu(&mut pmu, &mut mem, fid, a.map(|x| x as usize));
                check_writes(&mem, n, fid, &a, r.error, area);
            }
            10 => {
                let e = FwEvent::from_code(u.arbitrary::<u8>()? as u16 % 22).unwrap();
                for _ in 0..(op >> 4) + 1 {
                    pmu.record(e);
                }
            }
            11 => pmu.record_impl([256, 257][op as usize >> 7]),
            12 => pmu.record_platform([0xdead, 0][op as usize >> 7]),
            13 | 14 => {
                let sel = [1u64, 2, 3, 0x303, 1, 0x10001, 0x4000, 0x11, 0x1234][u.arbitrary::<u8>()? as usize % 9];
                let count = [1u64, 1000, (1 << 40) - 1, u64::MAX][op as usize >> 6];
                pmu.hw_mut().tick(mode(op >> 4), sel, count);
            }
            _ => {
                // A supervisor store: event-info entries or snapshot values.
                let at = arg(u)?;
                let v = u.arbitrary::<u64>()?;
                if at >= BUF_BASE && at.checked_add(8).is_some_and(|e| e <= RAM_HI) {
                    mem.poke(at, &v.to_le_bytes());
                }
            }
        }
        assert_eq!(mem.faults.get(), 0, "access outside the supervisor's memory");
        assert_eq!(pmu.hw().absent_accesses, 0, "access to an absent counter");
        let configured = pmu.allocated_mask() | 0b101;
        assert_eq!(
            pmu.started_mask() & !configured,
            0,
            "a started counter is not configured"
        );
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
