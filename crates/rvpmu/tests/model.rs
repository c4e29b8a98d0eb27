//! Model-based property tests of the SBI PMU engine and the STA writer.
//!
//! Random call sequences (all nine PMU functions with biased arguments,
//! interleaved with firmware event records, simulated hardware events and
//! supervisor stores) run against `rvpmu::Pmu<SimHart, BufMemory>` through
//! the raw register boundary `rvpmu::ecall::pmu`, and against the
//! reference model in `model/spec.rs` (written from the spec). After every
//! step: the error code is one the model allows, the state agrees (started
//! counters, hardware and firmware counter values, snapshot contents,
//! event-info outputs), no access went outside the supervisor's memory or
//! to an absent counter, and every memory write lies inside the registered
//! snapshot area or the event-info array of that very call.

#[path = "model/spec.rs"]
mod spec;
#[path = "model/sta.rs"]
mod sta;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use rvpmu::dt::{EventMap, RangeRow, RawRow, SelectorRow};
use rvpmu::event::FwEvent;
use rvpmu::hart::{FwEventSet, IsaFeatures, MAX_EXTRA_FW_EVENTS};
use rvpmu::hw::bits;
use rvpmu::sim::{BufMemory, Mode, SimHart};
use rvpmu::{ecall, Pmu, PmuConfig};
use spec::{owned, Hart, MEvent, Obs, Platform, BUF_BASE, RAM_HI, RAM_LO};
use std::cell::RefCell;

// ---------------------------------------------------------------- inputs

/// Event ranges of the generated `event-to-mhpmcounters` rows (disjoint).
const PARTS: [(u32, u32); 10] = [
    (1, 1),
    (2, 2),
    (3, 4),
    (5, 6),
    (7, 10),
    (0x10000, 0x10005),
    (0x10008, 0x1000d),
    (0x10010, 0x10015),
    (0x10018, 0x1001d),
    (0x10020, 0x10035),
];
const SEL_POOL: [u64; 6] = [0x101, 0x202, 0x303, 1, 0x1_0000_0001, 0xff_ffff_ffff_ffff];
const RAW_POOL: [u64; 9] = [
    0x11,
    0x22,
    0x1234,
    0xab_cd00,
    0x1_0011,
    0xffff_ffff_ffff,
    0xff_ffff_ffff_ffff,
    1 << 48,
    0,
];
const RAW_MASKS: [u64; 5] = [0xff, 0xffff, 0xff00, 0xffff_ffff_ffff, 0];
const IMPL_POOL: [u16; 4] = [256, 257, 1000, 65534];
const PLAT_POOL: [u64; 4] = [0, 1, 0xdead, u64::MAX];

/// The members of `pool` whose flag in `pick` is set.
fn picked<T: Copy>(pool: &[T], pick: &[bool]) -> Vec<T> {
    pool.iter()
        .zip(pick)
        .filter(|x| *x.1)
        .map(|x| *x.0)
        .collect()
}

/// QEMU virt: its counters and `riscv,pmu` node plus a raw row
/// for any event data; the property off, a hart that counts by the spec.
fn qemu_virt() -> Platform {
    Platform {
        present: 0x7fffd,
        width: 64,
        sscofpmf: true,
        smcntrpmf: false,
        h: false,
        snapshot: true,
        alias: true,
        fw_std: (1 << 22) - 1,
        fw_impl: vec![],
        fw_platform: vec![],
        ranges: vec![
            (1, 1, 0x7fff9),
            (2, 2, 0x7fffc),
            (0x10019, 0x10019, 0x7fff8),
            (0x1001b, 0x1001b, 0x7fff8),
            (0x10021, 0x10021, 0x7fff8),
        ],
        selectors: vec![],
        raw: vec![(0, 0, 0x7fff8)],
        one_per_event: false,
        qemu_event_map: false,
    }
}

fn platform() -> impl Strategy<Value = Platform> {
    let holes: u32 = 0b101 | 1 << 3 | 1 << 4 | 1 << 6 | 1 << 9 | 1 << 10 | 1 << 17;
    // (present, width, sscofpmf, smcntrpmf, h)
    let shape = prop_oneof![
        3 => Just((0x7fffdu32, 64u8, true, false, false)), // QEMU virt
        2 => Just((0x7fffd, 64, false, false, false)),     // no Sscofpmf
        2 => Just((holes, 64, true, false, false)),        // holes
        2 => Just((0x7fffd, 40, true, false, false)),      // narrow counters
        2 => Just((0xffff_fffd, 48, true, true, true)),    // Smcntrpmf + H, 29 HPMs
        1 => Just((0b101, 64, false, true, false)),        // fixed counters only
        2 => (any::<u32>(), prop::sample::select(vec![32u8, 40, 48, 64]), any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(p, w, a, b, c)| (p | 0b101, w, a, b, c)),
    ];
    let fw_std = prop_oneof![
        Just((1u32 << 22) - 1),
        Just((1 << 14) - 1),
        any::<u32>().prop_map(|x| x & 0x3f_ffff)
    ];
    let ranges = prop::collection::vec(
        (
            any::<bool>(),
            any::<u32>(),
            any::<bool>(),
            any::<bool>(),
            0usize..SEL_POOL.len(),
        ),
        10,
    );
    let raw = prop::collection::vec((0..RAW_MASKS.len(), 0..RAW_POOL.len(), any::<u32>()), 0..6);
    (
        shape,
        prop::bool::weighted(0.8),
        prop::bool::weighted(0.3),
        fw_std,
        prop::collection::vec(any::<bool>(), 4),
        prop::collection::vec(any::<bool>(), 4),
        ranges,
        raw,
    )
        .prop_map(
            |(
                (present, width, sscofpmf, smcntrpmf, h),
                snapshot,
                alias,
                fw_std,
                imp,
                plat,
                rs,
                raw,
            )| {
                let mut p = Platform {
                    present,
                    width,
                    sscofpmf,
                    smcntrpmf,
                    h,
                    snapshot,
                    alias,
                    fw_std,
                    fw_impl: picked(&IMPL_POOL, &imp),
                    fw_platform: picked(&PLAT_POOL, &plat),
                    ranges: vec![],
                    selectors: vec![],
                    raw: vec![],
                    one_per_event: false,
                    qemu_event_map: false,
                };
                for (k, (include, ctrs, fixed, with_sel, sel)) in rs.into_iter().enumerate() {
                    if !include {
                        continue;
                    }
                    let (first, last) = PARTS[k];
                    let mut c = ctrs & !0b111;
                    if fixed && k == 0 {
                        c |= 1;
                    }
                    if fixed && k == 1 {
                        c |= 4;
                    }
                    if c == 0 {
                        c = 1 << 3;
                    }
                    p.ranges.push((first, last, c));
                    if with_sel {
                        p.selectors.push((first, SEL_POOL[sel]));
                    }
                }
                for (m, s, ctrs) in raw {
                    let mask = RAW_MASKS[m];
                    let select = RAW_POOL[s] & mask;
                    if p.raw.iter().any(|r| r.0 == select && r.1 == mask) {
                        continue;
                    }
                    let c = ctrs & !0b111;
                    p.raw.push((select, mask, if c == 0 { 1 << 4 } else { c }));
                }
                p
            },
        )
}

/// [`platform`] with `rvpmu,one-counter-per-event` on or off. (A separate
/// strategy: `generator_covers_the_spec` keeps drawing exactly what it drew
/// before the property existed.)
fn platform_any() -> impl Strategy<Value = Platform> {
    (platform(), any::<bool>()).prop_map(|(mut p, one_per_event)| {
        p.one_per_event = one_per_event;
        p
    })
}

/// QEMU virt's node plus a raw row, with the property on, on a
/// hart that counts as QEMU does (one counter per event id).
fn qemu_platform() -> impl Strategy<Value = Platform> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(smcntrpmf, h, alias)| Platform {
        smcntrpmf,
        h,
        alias,
        one_per_event: true,
        qemu_event_map: true,
        ..qemu_virt()
    })
}

/// Events for [`qemu_platform`]: its five, raw ones whose data is below
/// 2^20 and non-zero (QEMU keys on bits 0..19 and reads 0 as "unmap"), one
/// of them cycles' selector, and now and then a firmware event.
fn qemu_event() -> impl Strategy<Value = (u64, u64)> {
    prop_oneof![
        8 => prop::sample::select(vec![1u64, 2, 0x10019, 0x1001b, 0x10021]).prop_map(|e| (e, 0)),
        3 => prop::sample::select(vec![1u64, 0x11, 0x1234, 0x10019, 0xf_ffff])
            .prop_map(|d| (0x20000, d)),
        1 => Just((0xF0006u64, 0)),
    ]
}

/// Linux-like calls on [`qemu_platform`]: config_matching over every
/// counter with perf's filter flags, SKIP_MATCH re-configuration of a
/// counter, start/stop with and without RESET, events happening.
fn qemu_op() -> impl Strategy<Value = Op> {
    // 0, :u, :k, exclude_guest, each sometimes with CLEAR_VALUE/AUTO_START.
    let flags = (
        prop::sample::select(vec![0u64, 0x58, 0x38, 0x18, 0x40, 0x20]),
        prop::sample::select(vec![0u64, 2, 4, 6]),
    )
        .prop_map(|(f, g)| f | g);
    let tick_sel = prop::sample::select(vec![1u64, 2, 0x10019, 0x1001b, 0x10021, 0x11, 0x1234]);
    prop_oneof![
        8 => (flags.clone(), qemu_event(), prop::bool::weighted(0.2))
            .prop_map(|(f, e, w)| Op::CfgAll(f, e, w)),
        2 => (0u64..35, prop::sample::select(vec![1u64, 3, 5, 7]), qemu_event())
            .prop_map(|(c, f, (e, d))| Op::Call(2, [c, 1, f, e, d, 0])),
        4 => (any::<usize>(), prop::sample::select(vec![0u64, 1]), value(), any::<bool>())
            .prop_map(|(k, f, v, w)| Op::StartOne(k, f, v, w)),
        4 => (any::<usize>(), prop::sample::select(vec![0u64, 1]), any::<bool>())
            .prop_map(|(k, f, w)| Op::StopOne(k, f, w)),
        1 => Just(Op::StartAll(1, 0)),
        1 => prop::sample::select(vec![0u64, 1]).prop_map(Op::StopAll),
        4 => (any::<usize>(), mode(), prop_oneof![Just(1u64), Just(1000)])
            .prop_map(|(k, m, c)| Op::TickStarted(k, m, c)),
        3 => (mode(), tick_sel, 1u64..100).prop_map(|(m, s, c)| Op::Tick(m, s, c)),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    /// One SBI PMU call: FID and a0..a5.
    Call(usize, [u64; 6]),
    /// event_get_info with entries the supervisor writes first.
    EventInfo {
        lo: u64,
        hi: u64,
        num: u64,
        flags: u64,
        entries: Vec<(u32, u32, u64)>,
    },
    /// Supervisor store into `counter_values[j]` of the snapshot area.
    Poke(usize, u64),
    /// Supervisor store into the overflow bitmap.
    PokeOverflow(u64),
    Record(u8, u8),
    RecordImpl(u16),
    RecordPlatform(u64),
    Tick(Mode, u64, u64),
    /// config_matching over every valid counter (Linux's cmask), in the
    /// alias window when asked and present.
    CfgAll(u64, (u64, u64), bool),
    /// start / stop of the k-th configured counter alone.
    StartOne(usize, u64, u64, bool),
    StopOne(usize, u64, bool),
    /// start / stop of every configured counter at once.
    StartAll(u64, u64),
    StopAll(u64),
    /// fw_read of the k-th firmware counter.
    FwReadOne(usize),
    /// Hardware events for what the k-th started hardware counter counts.
    TickStarted(usize, Mode, u64),
    /// Records of what the k-th started firmware counter counts.
    RecordStarted(usize, u8),
    /// snapshot_set_shmem of the k-th page of supervisor RAM.
    Register(u64),
    /// stop with TAKE_SNAPSHOT of all started counters from the k-th on.
    SnapshotStop(usize, u64),
}

fn idx() -> impl Strategy<Value = u64> {
    prop_oneof![6 => 0u64..52, 2 => 4096u64..4148, 1 => Just(u64::MAX), 1 => any::<u64>()]
}

fn counter_set() -> impl Strategy<Value = (u64, u64)> {
    prop_oneof![
        8 => (0u64..52, Just(1u64)),
        4 => (0u64..52, 1u64..0x1_0000),
        2 => (4096u64..4148, 1u64..0x100),
        1 => (0u64..4, any::<u64>()),
        1 => (any::<u64>(), any::<u64>()),
        1 => (u64::MAX - 70..=u64::MAX, prop_oneof![1u64..8, Just(1 << 63)]),
        1 => (0u64..52, Just(0u64)),
        2 => (Just(3u64), Just(0xffff_ffffu64)),
    ]
}

fn event() -> impl Strategy<Value = (u64, u64)> {
    let small_data = prop_oneof![9 => Just(0u64), 1 => any::<u64>()];
    prop_oneof![
        4 => (0u64..=11, small_data.clone()),
        4 => (0u64..0x40, small_data.clone()).prop_map(|(c, d)| (0x10000 | c, d)),
        2 => (prop_oneof![9 => Just(0u64), 1 => 1u64..4], prop::sample::select(RAW_POOL.to_vec())).prop_map(|(c, d)| (0x20000 | c, d)),
        2 => (prop_oneof![9 => Just(0u64), 1 => 1u64..4], prop::sample::select(RAW_POOL.to_vec())).prop_map(|(c, d)| (0x30000 | c, d)),
        1 => (Just(0x20000u64), any::<u64>()),
        4 => (0u64..26, small_data.clone()).prop_map(|(c, d)| (0xF0000 | c, d)),
        1 => (prop::sample::select(IMPL_POOL.to_vec()), small_data).prop_map(|(c, d)| (0xF0000 | c as u64, d)),
        1 => prop::sample::select(PLAT_POOL.to_vec()).prop_map(|d| (0xFFFFF, d)),
        1 => (0u64..16, 0u64..0x40, any::<u64>()).prop_map(|(t, c, d)| (t << 16 | c, d)),
        1 => (any::<u64>(), any::<u64>()),
    ]
}

fn cfg_flags() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0u64..256,
        2 => Just(0u64),
        2 => Just(4u64),
        1 => Just(6u64),
        1 => Just(0x18u64),
        1 => Just(5u64),
        1 => Just(0x64u64),
        1 => (8u64..64).prop_map(|b| 1 << b),
    ]
}

fn small_flags() -> impl Strategy<Value = u64> {
    prop_oneof![10 => 0u64..4, 1 => any::<u64>(), 1 => (2u64..64).prop_map(|b| 1 << b)]
}

fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        any::<u64>(),
        Just((1 << 40) - 3),
        Just(u64::MAX - 2),
        Just((1 << 32) - 1)
    ]
}

fn addr() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => (0u64..192).prop_map(|k| RAM_LO + k * 4096),
        2 => (0u64..64).prop_map(|k| BUF_BASE + k * 4096),
        1 => Just(RAM_HI - 4096),
        1 => Just(RAM_HI),
        2 => RAM_LO - 0x100..RAM_HI,
        3 => (0u64..0xc0000).prop_map(|o| (RAM_LO + o) & !15),
        1 => (0u64..0x400).prop_map(|o| RAM_LO - 0x200 + o * 16),
        1 => any::<u64>(),
        1 => Just(u64::MAX),
        1 => Just(0u64),
    ]
}

fn hi() -> impl Strategy<Value = u64> {
    prop_oneof![12 => Just(0u64), 1 => Just(u64::MAX), 1 => any::<u64>()]
}

fn mode() -> impl Strategy<Value = Mode> {
    prop::sample::select(vec![Mode::U, Mode::S, Mode::M, Mode::VS, Mode::VU])
}

fn op() -> impl Strategy<Value = Op> {
    let tick_sel = prop_oneof![
        4 => prop::sample::select(vec![1u64, 2, 3, 5, 7, 0x10000, 0x10008, 0x10018, 0x10020]),
        2 => prop::sample::select(SEL_POOL.to_vec()),
        2 => prop::sample::select(RAW_POOL.to_vec()),
        1 => any::<u64>(),
    ];
    let count = prop_oneof![
        Just(1u64),
        Just(3),
        Just(1000),
        Just(1 << 32),
        Just((1 << 40) - 1),
        Just(u64::MAX)
    ];
    let entry = (event(), any::<u32>(), prop::bool::weighted(0.05), 20u32..32)
        .prop_map(|((i, d), out, bad, b)| ((i as u32) | if bad { 1 << b } else { 0 }, out, d));
    let num = prop_oneof![8 => 1u64..64, 1 => Just(0u64), 1 => Just(u64::MAX), 1 => Just(1 << 60), 1 => 64u64..300];
    let arg = prop_oneof![idx(), addr(), any::<u64>(), Just(0u64)];
    prop_oneof![
        1 => Just(Op::Call(0, [0; 6])),
        2 => idx().prop_map(|i| Op::Call(1, [i, 0, 0, 0, 0, 0])),
        10 => (counter_set(), cfg_flags(), event())
            .prop_map(|((b, m), f, (e, d))| Op::Call(2, [b, m, f, e, d, 0])),
        6 => (counter_set(), small_flags(), value()).prop_map(|((b, m), f, v)| Op::Call(3, [b, m, f, v, 0, 0])),
        6 => (counter_set(), small_flags()).prop_map(|((b, m), f)| Op::Call(4, [b, m, f, 0, 0, 0])),
        3 => idx().prop_map(|i| Op::Call(5, [i, 0, 0, 0, 0, 0])),
        1 => idx().prop_map(|i| Op::Call(6, [i, 0, 0, 0, 0, 0])),
        3 => (addr(), hi(), prop_oneof![10 => Just(0u64), 1 => any::<u64>()])
            .prop_map(|(lo, hi, f)| Op::Call(7, [lo, hi, f, 0, 0, 0])),
        1 => Just(Op::Call(7, [u64::MAX, u64::MAX, 0, 0, 0, 0])),
        3 => (addr(), hi(), num, prop_oneof![10 => Just(0u64), 1 => any::<u64>()], prop::collection::vec(entry, 0..64))
            .prop_map(|(lo, hi, num, flags, entries)| Op::EventInfo { lo, hi, num, flags, entries }),
        2 => (0usize..64, value()).prop_map(|(j, v)| Op::Poke(j, v)),
        1 => any::<u64>().prop_map(Op::PokeOverflow),
        6 => (0u8..22, 1u8..4).prop_map(|(c, n)| Op::Record(c, n)),
        1 => prop::sample::select(IMPL_POOL.to_vec()).prop_map(Op::RecordImpl),
        1 => prop::sample::select(PLAT_POOL.to_vec()).prop_map(Op::RecordPlatform),
        6 => (mode(), tick_sel, count).prop_map(|(m, s, c)| Op::Tick(m, s, c)),
        1 => (0usize..12, prop::array::uniform6(arg)).prop_map(|(f, a)| Op::Call(f, a)),
        8 => (cfg_flags(), event(), prop::bool::weighted(0.2)).prop_map(|(f, e, w)| Op::CfgAll(f, e, w)),
        6 => (any::<usize>(), small_flags(), value(), prop::bool::weighted(0.2)).prop_map(|(k, f, v, w)| Op::StartOne(k, f, v, w)),
        5 => (any::<usize>(), small_flags(), prop::bool::weighted(0.2)).prop_map(|(k, f, w)| Op::StopOne(k, f, w)),
        1 => (small_flags(), value()).prop_map(|(f, v)| Op::StartAll(f, v)),
        1 => small_flags().prop_map(Op::StopAll),
        3 => (0usize..16).prop_map(Op::FwReadOne),
        4 => (any::<usize>(), mode(), prop_oneof![Just(1u64), Just(1000), Just((1 << 40) - 1), Just(u64::MAX), Just(1 << 63)])
            .prop_map(|(k, m, c)| Op::TickStarted(k, m, c)),
        2 => (0u64..192).prop_map(Op::Register),
        4 => (any::<usize>(), 1u8..4).prop_map(|(k, n)| Op::RecordStarted(k, n)),
        3 => (any::<usize>(), prop_oneof![Just(2u64), Just(3)]).prop_map(|(k, f)| Op::SnapshotStop(k, f)),
    ]
}

// --------------------------------------------------------------- harness

/// What a run reached, to show the generator exercises the interesting paths.
#[derive(Clone, Debug, Default)]
struct Coverage {
    /// Per FID: calls answered SUCCESS.
    ok: [u32; 12],
    /// Per FID: calls answered with an error.
    err: [u32; 12],
    hw_counted: u32,
    fw_counted: u32,
    overflow_bits: u32,
    hpm_overflows: u32,
    snapshot_values: u32,
    init_snapshot: u32,
    supported_entries: u32,
    alias_calls: u32,
    wraps: u32,
    /// config_matching refused only for `one_per_event`.
    one_per_event_refusals: u32,
}

impl Coverage {
    fn add(&mut self, c: &Coverage) {
        for f in 0..12 {
            self.ok[f] += c.ok[f];
            self.err[f] += c.err[f];
        }
        self.hw_counted += c.hw_counted;
        self.fw_counted += c.fw_counted;
        self.overflow_bits += c.overflow_bits;
        self.hpm_overflows += c.hpm_overflows;
        self.snapshot_values += c.snapshot_values;
        self.init_snapshot += c.init_snapshot;
        self.supported_entries += c.supported_entries;
        self.alias_calls += c.alias_calls;
        self.wraps += c.wraps;
        self.one_per_event_refusals += c.one_per_event_refusals;
    }
}

struct Run<'m> {
    pmu: Pmu<'m, SimHart>,
    mem: BufMemory,
    model: Hart,
    cov: Coverage,
}

fn build_map(p: &Platform) -> EventMap {
    let sel: Vec<SelectorRow> = p
        .selectors
        .iter()
        .map(|&(event_idx, selector)| SelectorRow {
            event_idx,
            selector,
        })
        .collect();
    let rng: Vec<RangeRow> = p
        .ranges
        .iter()
        .map(|&(first, last, counters)| RangeRow {
            first,
            last,
            counters,
        })
        .collect();
    let raw: Vec<RawRow> = p
        .raw
        .iter()
        .map(|&(select, mask, counters)| RawRow {
            select,
            mask,
            counters,
        })
        .collect();
    let mut map = EventMap::from_rows(&sel, &rng, &raw, None)
        .unwrap_or_else(|e| panic!("generated DT rows refused: {e:?}\n{p:#?}"));
    map.set_one_counter_per_event(p.one_per_event);
    map
}

fn engine<'m>(p: &Platform, map: &'m EventMap) -> Pmu<'m, SimHart> {
    let mut fw = FwEventSet::all_standard();
    fw.standard = p.fw_std;
    fw.implementation = [0; MAX_EXTRA_FW_EVENTS];
    fw.platform = [None; MAX_EXTRA_FW_EVENTS];
    for (k, &c) in p.fw_impl.iter().enumerate() {
        fw.implementation[k] = c;
    }
    for (k, &d) in p.fw_platform.iter().enumerate() {
        fw.platform[k] = Some(d);
    }
    let cfg = PmuConfig::new(
        map,
        IsaFeatures::none()
            .with_sscofpmf(p.sscofpmf)
            .with_smcntrpmf(p.smcntrpmf)
            .with_h(p.h),
    )
    .with_fw_events(fw)
    .with_snapshot(p.snapshot)
    .with_alias_window(p.alias);
    let mut hart = SimHart::new(p.hw(), p.width, p.sscofpmf, p.smcntrpmf);
    if p.qemu_event_map {
        hart = hart.qemu_event_map();
    }
    Pmu::new(cfg, hart)
}

fn in_buffer(addr: u64, len: u64) -> bool {
    addr >= BUF_BASE && addr.checked_add(len).is_some_and(|e| e <= RAM_HI)
}

impl<'m> Run<'m> {
    fn new(p: &Platform, map: &'m EventMap) -> Run<'m> {
        Run {
            pmu: engine(p, map),
            mem: BufMemory::virt(),
            model: Hart::new(p.clone()),
            cov: Coverage::default(),
        }
    }

    fn step(&mut self, op: &Op) -> Result<(), String> {
        match *op {
            Op::Call(fid, a) => self.call(fid, a)?,
            Op::EventInfo {
                lo,
                hi,
                num,
                flags,
                ref entries,
            } => {
                for (k, &(idx, out, data)) in entries.iter().enumerate().take(num.min(64) as usize)
                {
                    let at = lo.wrapping_add(16 * k as u64);
                    if in_buffer(at, 16) {
                        let mem = &mut self.mem;
                        mem.poke(at, &idx.to_le_bytes());
                        mem.poke(at + 4, &out.to_le_bytes());
                        mem.poke(at + 8, &data.to_le_bytes());
                    }
                }
                self.call(8, [lo, hi, num, flags, 0, 0])?;
            }
            Op::CfgAll(f, (e, d), alias) => {
                let base = self.window(alias);
                let valid =
                    (0..self.model.p.n()).filter(|&c| self.model.p.resolve(c as u64).is_some());
                let mask = valid.fold(0u64, |m, c| m | 1 << c);
                self.call(2, [base, mask, f, e, d, 0])?;
            }
            Op::StartOne(k, f, v, alias) => {
                let c = self.kth_configured(k) + self.window(alias);
                self.call(3, [c, 1, f, v, 0, 0])?;
            }
            Op::StopOne(k, f, alias) => {
                let c = self.kth_configured(k) + self.window(alias);
                self.call(4, [c, 1, f, 0, 0, 0])?;
            }
            Op::RecordStarted(k, n) => {
                let m = &self.model;
                let fw: Vec<MEvent> = (m.p.fw_base()..m.p.n())
                    .filter(|&c| m.started & (1 << c) != 0)
                    .filter_map(|c| m.mapped[c])
                    .collect();
                if !fw.is_empty() {
                    let ev = fw[k % fw.len()];
                    for _ in 0..n {
                        match ev {
                            MEvent::Fw { code: 0xFFFF, data } => self.pmu.record_platform(data),
                            MEvent::Fw { code, .. } if code >= 256 => self.pmu.record_impl(code),
                            MEvent::Fw { code, .. } => {
                                self.pmu.record(FwEvent::from_code(code).unwrap())
                            }
                            MEvent::Hw { .. } => {
                                unreachable!("firmware counter mapped to a hardware event")
                            }
                        }
                        self.record(ev);
                    }
                }
            }
            Op::Register(k) => self.call(7, [RAM_LO + 4096 * k, 0, 0, 0, 0, 0])?,
            Op::SnapshotStop(k, f) => {
                let started: Vec<usize> = (0..64)
                    .filter(|&c| self.model.started & (1 << c) != 0)
                    .collect();
                if !started.is_empty() {
                    let base = started[k % started.len()];
                    let mask = (self.model.started >> base) & (u64::MAX >> (base % 64).min(63));
                    self.call(4, [base as u64, mask, f, 0, 0, 0])?;
                }
            }
            Op::FwReadOne(k) => {
                let c = (self.model.p.fw_base() + k) as u64;
                self.call(5, [c, 0, 0, 0, 0, 0])?;
            }
            Op::StartAll(f, v) => {
                let mask = (0..self.model.p.n())
                    .filter(|&c| self.model.configured(c))
                    .fold(0u64, |m, c| m | 1 << c);
                self.call(3, [0, mask, f, v, 0, 0])?;
            }
            Op::StopAll(f) => {
                let mask = (0..self.model.p.n())
                    .filter(|&c| self.model.configured(c))
                    .fold(0u64, |m, c| m | 1 << c);
                self.call(4, [0, mask, f, 0, 0, 0])?;
            }
            Op::Poke(j, v) => {
                if let Some(a) = self.model.shmem {
                    self.mem.poke(a + 8 + 8 * j as u64, &v.to_le_bytes());
                }
            }
            Op::PokeOverflow(v) => {
                // Without Sscofpmf the bitmap "must be zero": the supervisor
                // has no reason to store there and the model does not ask
                // the engine to clean it up.
                if let (Some(a), true) = (self.model.shmem, self.model.p.sscofpmf) {
                    self.mem.poke(a, &v.to_le_bytes());
                }
            }
            Op::Record(code, n) => {
                let ev = FwEvent::from_code(code as u16).unwrap();
                for _ in 0..n {
                    self.pmu.record(ev);
                    self.record(MEvent::Fw {
                        code: code as u16,
                        data: 0,
                    });
                }
            }
            Op::RecordImpl(code) => {
                self.pmu.record_impl(code);
                self.record(MEvent::Fw { code, data: 0 });
            }
            Op::RecordPlatform(d) => {
                self.pmu.record_platform(d);
                self.record(MEvent::Fw {
                    code: 0xFFFF,
                    data: d,
                });
            }
            Op::Tick(mode, sel, count) => self.tick(mode, sel, count),
            Op::TickStarted(k, mode, count) => {
                let m = &self.model;
                let hw: Vec<usize> = (0..m.p.fw_base())
                    .filter(|&c| m.started & (1 << c) != 0)
                    .collect();
                if !hw.is_empty() {
                    let sel = match hw[k % hw.len()] {
                        0 => 1,
                        2 => 2,
                        c => m.sel[c],
                    };
                    self.tick(mode, sel, count);
                }
            }
        }
        self.invariants().map_err(|e| format!("after {op:?}: {e}"))
    }

    /// Base of the index window to use: the alias window when asked for
    /// and the platform has one.
    fn window(&self, alias: bool) -> u64 {
        if alias && self.model.p.alias {
            4096
        } else {
            0
        }
    }

    fn tick(&mut self, mode: Mode, sel: u64, count: u64) {
        let before = self.model.value;
        self.pmu.hw_mut().tick(mode, sel, count);
        let ovf = self.model.ovf;
        self.cov.wraps += self.model.tick(mode, sel, count);
        self.cov.hpm_overflows += (0..32).filter(|&c| self.model.ovf[c] && !ovf[c]).count() as u32;
        if before != self.model.value {
            self.cov.hw_counted += 1;
        }
    }

    fn record(&mut self, ev: MEvent) {
        let before = self.model.value;
        self.model.record(ev);
        if before != self.model.value {
            self.cov.fw_counted += 1;
        }
    }

    fn kth_configured(&self, k: usize) -> u64 {
        let configured: Vec<usize> = (0..self.model.p.n())
            .filter(|&c| self.model.configured(c))
            .collect();
        configured[k % configured.len()] as u64
    }

    fn call(&mut self, fid: usize, a: [u64; 6]) -> Result<(), String> {
        let area = self.model.shmem;
        let area_before = area.map(|x| self.mem.peek(x, 4096).to_vec());
        let entries_before = if fid == 8 {
            a[2].checked_mul(16).filter(|&s| owned(a[0], s)).map(|_| {
                (0..a[2])
                    .map(|k| {
                        let b = self.mem.peek(a[0] + 16 * k, 16);
                        (
                            u32::from_le_bytes(b[0..4].try_into().unwrap()),
                            u32::from_le_bytes(b[4..8].try_into().unwrap()),
                            u64::from_le_bytes(b[8..16].try_into().unwrap()),
                        )
                    })
                    .collect::<Vec<_>>()
            })
        } else {
            None
        };
        let nwrites = self.mem.writes.len();
        let ret = ecall::pmu(&mut self.pmu, &mut self.mem, fid, a.map(|x| x as usize));
        let error = ret.error as isize;
        let area_after = area.map(|x| self.mem.peek(x, 4096).to_vec());
        let mem = &self.mem;
        let peek = |x: u64, n: usize| mem.peek(x, n).to_vec();
        let obs = Obs {
            error,
            value: ret.value as u64,
            engine_started: self.pmu.started_mask(),
            area_before: area_before.as_deref(),
            area_after: area_after.as_deref(),
            peek: &peek,
            entries_before: entries_before.clone(),
        };
        if fid < 12 {
            if error == 0 {
                self.cov.ok[fid] += 1;
            } else {
                self.cov.err[fid] += 1;
            }
        }
        let m = &mut self.model;
        let r = match fid {
            0 => m.num_counters(&obs),
            1 => m.get_info(a[0], &obs),
            2 => m.config_matching(a[0], a[1], a[2], a[3], a[4], &obs),
            3 => m.start(a[0], a[1], a[2], a[3], &obs),
            4 => m.stop(a[0], a[1], a[2], &obs),
            5 => m.fw_read(a[0], false, &obs),
            6 => m.fw_read(a[0], true, &obs),
            7 => m.set_shmem(a[0], a[1], a[2], &obs),
            8 => m.event_get_info(a[0], a[1], a[2], a[3], &obs),
            _ if error == spec::NS => Ok(()),
            _ => Err(format!(
                "unknown FID {fid}: expected NOT_SUPPORTED, got {error}"
            )),
        };
        r.map_err(|e| format!("FID {fid} {a:x?}: {e}"))?;

        if error == 0 && (2..=4).contains(&fid) && a[0] >= 4096 && a[0] < 4200 {
            self.cov.alias_calls += 1;
        }
        if fid == 3 && error == 0 && a[2] == 2 {
            self.cov.init_snapshot += 1;
        }
        if fid == 4 && a[2] & 2 != 0 && (error == 0 || error == spec::ASP) {
            self.cov.snapshot_values += 1;
            if let (Some(x), Some(set)) = (&area_after, self.model.p.set(a[0], a[1])) {
                let bits = u64::from_le_bytes(x[..8].try_into().unwrap());
                let members = set.iter().fold(0u64, |m, &(j, _)| m | 1 << j);
                if bits & members != 0 {
                    self.cov.overflow_bits += 1;
                }
            }
        }
        if fid == 8 && error == 0 {
            let mem = &self.mem;
            self.cov.supported_entries += (0..a[2].min(64))
                .filter(|k| mem.peek(a[0] + 16 * k + 4, 4) == [1, 0, 0, 0])
                .count() as u32;
        }

        // Memory: every write of this call inside what it may touch.
        let allowed = |w: &(u64, usize)| -> bool {
            let (x, n) = (w.0, w.1 as u64);
            let inside =
                |b: u64, len: u64| x >= b && x.checked_add(n).is_some_and(|e| e <= b + len);
            match fid {
                7 => error == 0 && inside(a[0], 4096),
                4 => a[2] & 2 != 0 && area.is_some_and(|b| inside(b, 4096)),
                8 => {
                    let size = a[2].checked_mul(16);
                    size.is_some_and(|s| inside(a[0], s))
                        && (x - a[0]) % 16 >= 4
                        && (x - a[0]) % 16 + n <= 8
                }
                _ => false,
            }
        };
        if let Some(w) = self.mem.writes[nwrites..].iter().find(|w| !allowed(w)) {
            return Err(format!(
                "FID {fid} {a:x?} -> {error}: write {w:x?} outside the areas it may touch"
            ));
        }
        Ok(())
    }

    fn invariants(&self) -> Result<(), String> {
        let (pmu, m) = (&self.pmu, &self.model);
        if self.mem.faults.get() != 0 {
            return Err(format!("{} refused memory accesses", self.mem.faults.get()));
        }
        if pmu.hw().absent_accesses != 0 {
            return Err(format!(
                "{} accesses to absent counters",
                pmu.hw().absent_accesses
            ));
        }
        if pmu.started_mask() != m.started {
            return Err(format!(
                "started counters {:#x}, model {:#x}",
                pmu.started_mask(),
                m.started
            ));
        }
        if let Some(c) = (0..64).find(|&c| m.started & (1 << c) != 0 && !m.configured(c)) {
            return Err(format!("counter {c} started but not configured"));
        }
        if pmu.started_mask() & !(pmu.allocated_mask() | 0b101) != 0 {
            return Err(format!(
                "engine: started {:#x} not within configured {:#x}",
                pmu.started_mask(),
                pmu.allocated_mask() | 0b101
            ));
        }
        for c in 0..m.p.fw_base() {
            if m.p.hw() & (1 << c) != 0 && pmu.hw().counter(c) != m.value[c] {
                return Err(format!(
                    "hardware counter {c} = {:#x}, model {:#x}",
                    pmu.hw().counter(c),
                    m.value[c]
                ));
            }
        }
        if m.p.one_per_event {
            // No two configured HPM counters hold the same selector (read
            // from the hart, not from the model).
            let hpm = pmu.allocated_mask() & m.p.hpm();
            let sel = |i: usize| pmu.hw().event_reg(i) & !(bits::OF | bits::ALL_INH);
            for i in (0..32).filter(|&i| hpm & (1 << i) != 0) {
                if let Some(j) = (i + 1..32).find(|&j| hpm & (1 << j) != 0 && sel(j) == sel(i)) {
                    return Err(format!(
                        "one counter per event: HPM counters {i} and {j} both hold selector {:#x}",
                        sel(i)
                    ));
                }
            }
        }
        let fw_read = |c: usize| {
            let (_, counter) = pmu.layout().resolve(c as u64)?;
            pmu.counter_fw_read(counter)
        };
        for c in m.p.fw_base()..m.p.n() {
            if fw_read(c) != Ok(m.value[c]) {
                return Err(format!(
                    "firmware counter {c} = {:?}, model {:#x}",
                    fw_read(c),
                    m.value[c]
                ));
            }
        }
        Ok(())
    }
}

fn run_ops(p: &Platform, ops: &[Op]) -> Result<Coverage, String> {
    let map = build_map(p);
    let mut run = Run::new(p, &map);
    run.invariants().map_err(|e| format!("at boot: {e}"))?;
    for (k, op) in ops.iter().enumerate() {
        run.step(op).map_err(|e| format!("step {k}: {e}"))?;
    }
    run.cov.one_per_event_refusals = run.model.one_per_event_refusals;
    Ok(run.cov)
}

fn cases(n: u32) -> Config {
    // PROPTEST_CASES overrides the count for long local runs.
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(n);
    Config {
        cases,
        max_shrink_iters: 4096,
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(cases(384))]

    /// Random call sequences on random platform shapes agree with the model.
    #[test]
    fn engine_agrees_with_model(p in platform_any(), ops in prop::collection::vec(op(), 1..120)) {
        if let Err(e) = run_ops(&p, &ops) {
            return Err(TestCaseError::fail(e));
        }
    }

    /// Calls made only of raw registers (any FID, any a0..a5): never a panic,
    /// and the model's answers still hold.
    #[test]
    fn raw_registers_agree_with_model(
        p in platform_any(),
        calls in prop::collection::vec((0usize..16, prop::array::uniform6(any::<u64>())), 1..60),
    ) {
        let ops: Vec<Op> = calls.into_iter().map(|(f, a)| Op::Call(f, a)).collect();
        if let Err(e) = run_ops(&p, &ops) {
            return Err(TestCaseError::fail(e));
        }
    }

    /// `rvpmu,one-counter-per-event` on a hart that counts as QEMU does:
    /// Linux-like call sequences agree with the model, so every counter
    /// config_matching hands out counts its event (none silently reads 0),
    /// and no two configured HPM counters ever hold one selector (checked
    /// after every step by `invariants`).
    #[test]
    fn one_counter_per_event_on_qemu_agrees_with_model(
        p in qemu_platform(),
        ops in prop::collection::vec(qemu_op(), 1..120),
    ) {
        if let Err(e) = run_ops(&p, &ops) {
            return Err(TestCaseError::fail(e));
        }
    }
}

/// The coverage of `cases` sequences of 1 to 119 `ops` on `platforms`,
/// drawn from a fixed seed (the same sequences every run); each must agree
/// with the model.
fn coverage(
    cases: u32,
    platforms: impl Strategy<Value = Platform>,
    ops: impl Strategy<Value = Op>,
) -> Coverage {
    let total = RefCell::new(Coverage::default());
    let fixed = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        fixed,
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    runner
        .run(
            &(platforms, prop::collection::vec(ops, 1..120)),
            |(p, ops)| {
                let c = run_ops(&p, &ops).map_err(TestCaseError::fail)?;
                total.borrow_mut().add(&c);
                Ok(())
            },
        )
        .unwrap();
    total.into_inner()
}

/// The QEMU-like sequences above reach the refusal and the release paths:
/// without this a generator that never configures one event twice would
/// pass.
#[test]
fn one_counter_per_event_generator_reaches_refusals() {
    let t = coverage(100, qemu_platform(), qemu_op());
    assert!(t.one_per_event_refusals >= 50, "{t:?}");
    assert!(t.ok[2] >= 500, "{t:?}");
    assert!(t.hw_counted >= 100, "{t:?}");
}

/// The negative check: the same QEMU-like hart without the property gives
/// `cycles:u` and `cycles:k` two counters, and the second reads 0 where the
/// model (the spec) expects the kernel-mode cycles.
#[test]
fn qemu_without_the_property_disagrees_with_model() {
    let mut runner = TestRunner::deterministic();
    let p = qemu_platform().new_tree(&mut runner).unwrap().current();
    let ops = [
        Op::Call(4, [0, ((1 << 35) - 1) & !2, 1, 0, 0, 0]),
        Op::CfgAll(0x58, (1, 0), false), // cycles:u -> hpmcounter3
        Op::CfgAll(0x38, (1, 0), false), // cycles:k
        Op::StartAll(1, 0),
        Op::Tick(Mode::S, 1, 100),
    ];
    assert!(run_ops(&p, &ops).is_ok());
    let off = Platform {
        one_per_event: false,
        ..p
    };
    let e = run_ops(&off, &ops).unwrap_err();
    assert!(e.contains("hardware counter 4 = 0x0, model 0x64"), "{e}");
}

/// The Linux 6.12 probe and counting flow (`drivers/perf/riscv_pmu_sbi.c`) on a QEMU-like hart,
/// checked by the model step by step.
#[test]
fn linux_flow_agrees_with_model() {
    let mut p = qemu_virt();
    p.ranges.truncate(4); // no ITLB row
    let cmask = ((1u64 << 35) - 1) & !2;
    let mut ops = vec![Op::Call(0, [0; 6])];
    for i in 0..40 {
        ops.push(Op::Call(1, [i, 0, 0, 0, 0, 0]));
    }
    ops.push(Op::Call(7, [RAM_LO, 0, 0, 0, 0, 0]));
    for e in (1..=10).chain((0..0x36).map(|c| 0x10000 | c)) {
        ops.push(Op::Call(2, [0, cmask, 0, e, 0, 0]));
        ops.push(Op::Call(4, [0, cmask, 1, 0, 0, 0]));
    }
    // perf stat -e cycles,instructions,dTLB-load-misses,ipi (exclude_guest)
    for (e, d) in [
        (1u64, 0u64),
        (2, 0),
        (0x10019, 0),
        (0xF0006, 0),
        (0x20000, 0x1234),
    ] {
        ops.push(Op::Call(2, [0, cmask, 0x18, e, d, 0]));
    }
    ops.push(Op::Call(3, [3, 0b111, 1, 0, 0, 0]));
    ops.push(Op::Call(3, [19, 1, 1, 0, 0, 0]));
    ops.push(Op::Tick(Mode::S, 1, 1000));
    ops.push(Op::Tick(Mode::U, 2, 500));
    ops.push(Op::Record(6, 3));
    ops.push(Op::Call(4, [3, 0b111, 2, 0, 0, 0]));
    ops.push(Op::Call(4, [19, 1, 0, 0, 0, 0]));
    ops.push(Op::Call(5, [19, 0, 0, 0, 0, 0]));
    // Linux 6.12's snapshot restart with counter_idx_base 4096.
    ops.push(Op::Call(3, [4096 + 3, 0b111, 2, 0, 0, 0]));
    let map = build_map(&p);
    let mut run = Run::new(&p, &map);
    for (k, op) in ops.iter().enumerate() {
        run.step(op).unwrap_or_else(|e| panic!("step {k}: {e}"));
    }
    // The kernel-visible outcome: cycles on hpmcounter3 (1000 S-mode
    // ticks), instructions on hpmcounter4 (500 U-mode ticks), both saved
    // in the snapshot and restored from it; 3 IPIs on firmware counter 19.
    assert_eq!(run.mem.peek_u64(RAM_LO + 8), 1000);
    assert_eq!(run.mem.peek_u64(RAM_LO + 16), 500);
    assert_eq!(run.pmu.hw().counter(3), 1000);
    assert_eq!(run.pmu.hw().counter(4), 500);
    assert_eq!(run.pmu.started_mask() & 0b111000, 0b111000);
    let (_, fw0) = run.pmu.layout().resolve(19).unwrap();
    assert_eq!(run.pmu.counter_fw_read(fw0), Ok(3));
}

/// An HPM counter that wraps while counting reports its overflow in the
/// snapshot bitmap at the caller-relative bit; a counter of the same stop
/// set that did not wrap does not (Sscofpmf); without Sscofpmf the bit
/// stays clear.
#[test]
fn overflow_reaches_the_snapshot_bitmap() {
    for sscofpmf in [true, false] {
        let p = Platform {
            present: 0x7fffd,
            width: 40,
            sscofpmf,
            smcntrpmf: false,
            h: false,
            snapshot: true,
            alias: false,
            fw_std: 0,
            fw_impl: vec![],
            fw_platform: vec![],
            ranges: vec![(3, 4, 0x7fff8)],
            selectors: vec![(3, 0x303)],
            raw: vec![(0x11, 0xff, 0x7fff8)],
            one_per_event: false,
            qemu_event_map: false,
        };
        let ops = [
            Op::Call(7, [RAM_LO + 0x2000, 0, 0, 0, 0, 0]),
            Op::Call(2, [3, 0xffff, 0, 3, 0, 0]), // CACHE_REFERENCES -> hpmcounter3
            Op::Call(2, [3, 0xffff, 0, 0x20000, 0x11, 0]), // raw 0x11 -> hpmcounter4
            Op::Call(3, [3, 1, 1, (1 << 40) - 10, 0, 0]),
            Op::Call(3, [4, 1, 1, 0, 0, 0]),
            Op::Tick(Mode::S, 0x303, 25),
            Op::Tick(Mode::S, 0x11, 25),
            Op::Call(4, [2, 0b111, 2, 0, 0, 0]),
        ];
        let map = build_map(&p);
        let mut run = Run::new(&p, &map);
        for (k, op) in ops.iter().enumerate() {
            run.step(op)
                .unwrap_or_else(|e| panic!("sscofpmf {sscofpmf}, step {k}: {e}"));
        }
        let area = RAM_LO + 0x2000;
        // Counters 2, 3, 4 at bits 0, 1, 2 (relative to base 2).
        let want = if sscofpmf { 0b010 } else { 0 };
        assert_eq!(run.mem.peek_u64(area), want, "sscofpmf {sscofpmf}");
        assert_eq!(run.mem.peek_u64(area + 16), 15);
        assert_eq!(run.mem.peek_u64(area + 24), 25);
    }
}

/// The generator reaches the interesting paths: without this a model that
/// only ever sees INVALID_PARAM would pass.
#[test]
fn generator_covers_the_spec() {
    let t = coverage(200, platform(), op());
    eprintln!("coverage over 200 sequences: {t:#?}");
    for f in 0..=8 {
        assert!(t.ok[f] >= 10, "FID {f} succeeded only {} times", t.ok[f]);
        if f != 0 {
            assert!(t.err[f] >= 10, "FID {f} failed only {} times", t.err[f]);
        }
    }
    assert!(t.err[9] + t.err[10] + t.err[11] > 0);
    assert!(t.hw_counted >= 20, "{t:?}");
    assert!(t.wraps >= 2, "{t:?}");
    assert!(t.fw_counted >= 10, "{t:?}");
    assert!(t.snapshot_values >= 10, "{t:?}");
    assert!(t.hpm_overflows >= 5, "{t:?}");
    assert!(t.init_snapshot >= 2, "{t:?}");
    assert!(t.supported_entries >= 20, "{t:?}");
    assert!(t.alias_calls >= 5, "{t:?}");
}

/// The model itself refuses wrong answers (it is not a yes-machine): each
/// case feeds it a plausible engine mistake.
#[test]
fn model_refuses_wrong_answers() {
    let p = Platform {
        width: 48,
        ranges: vec![(4, 4, 0x18)],
        raw: vec![],
        ..qemu_virt()
    };
    let peek = |_: u64, _: usize| vec![0u8; 16];
    let obs = |error: isize, value: u64, started: u64| Obs {
        error,
        value,
        engine_started: started,
        area_before: None,
        area_after: None,
        peek: &peek,
        entries_before: None,
    };
    let m = Hart::new(p.clone());
    // Boot: 35 counters plus the alias window; counter 1 is not one.
    assert!(m.num_counters(&obs(0, 35, 0)).is_err());
    assert!(m.num_counters(&obs(0, 4096 + 35, 0)).is_ok());
    assert!(m.get_info(1, &obs(0, 0xC01 | 63 << 12, 0)).is_err());
    assert!(m.get_info(4096 + 3, &obs(0, 0xC03 | 47 << 12, 0)).is_ok());
    assert!(
        m.get_info(3, &obs(0, 0xC03 | 63 << 12, 0)).is_err(),
        "width of a 48-bit counter"
    );
    // Starting an unconfigured HPM counter is INVALID_PARAM, not SUCCESS.
    assert!(m.clone().start(3, 1, 0, 0, &obs(0, 0, 0b1101)).is_err());
    assert!(m
        .clone()
        .start(3, 1, 0, 0, &obs(spec::IP, 0, 0b101))
        .is_ok());
    // cycle runs from boot: starting it again is ALREADY_STARTED.
    assert!(m.clone().start(0, 1, 0, 0, &obs(0, 0, 0b101)).is_err());
    // CACHE_MISSES (4) may only land on hpmcounter3/4, never on 5 or 0;
    // then hpmcounter4 is taken: the next one must be 3, then none. Each
    // step: the engine's answer (error, value) and whether the model
    // accepts it.
    let mut mm = m.clone();
    for (error, value, accepted) in [
        (0, 5, false),
        (0, 0, false),
        (0, 4096 + 4, true),
        (0, 4, false),
        (0, 3, true),
        (spec::NS, 0, true),
    ] {
        let r = mm.config_matching(0, 0x3d, 0, 4, 0, &obs(error, value, 0b101));
        assert_eq!(r.is_ok(), accepted, "answer ({error}, {value:#x})");
    }
    // Firmware counters count only while started.
    let mut mm = m.clone();
    assert!(mm
        .config_matching(19, 1, 4, 0xF0006, 0, &obs(0, 19, 0b101 | 1 << 19))
        .is_ok());
    mm.record(MEvent::Fw { code: 6, data: 0 });
    mm.record(MEvent::Fw { code: 7, data: 0 });
    assert!(mm.fw_read(19, false, &obs(0, 2, 0)).is_err());
    assert!(mm.fw_read(19, false, &obs(0, 1, 0)).is_ok());
    assert!(mm.fw_read(19, true, &obs(0, 1, 0)).is_err());
    assert!(mm.stop(19, 1, 0, &obs(0, 0, 0b101)).is_ok());
    mm.record(MEvent::Fw { code: 6, data: 0 });
    assert!(mm.fw_read(19, false, &obs(0, 1, 0)).is_ok());
    // No snapshot area: TAKE_SNAPSHOT is NO_SHMEM.
    assert!(mm.stop(0, 1, 2, &obs(0, 0, 0b100)).is_err());
    assert!(mm.stop(0, 1, 2, &obs(spec::NOSHM, 0, 0b101)).is_ok());
    // Snapshot areas: page aligned, supervisor RAM only.
    assert!(mm
        .clone()
        .set_shmem(RAM_LO + 8, 0, 0, &obs(0, 0, 0))
        .is_err());
    assert!(mm.clone().set_shmem(BUF_BASE, 0, 0, &obs(0, 0, 0)).is_err());
    assert!(mm
        .clone()
        .set_shmem(BUF_BASE, 0, 0, &obs(spec::IA, 0, 0))
        .is_ok());
}
