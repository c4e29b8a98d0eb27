//! `rvpmu,one-counter-per-event`: on hardware that counts an event on one
//! HPM counter only (QEMU: docs/anomalies.md, 1), config_matching never hands out
//! a second HPM counter with the selector of one already configured, since
//! that counter would read 0 while the kernel shows it 100% running.
//!
//! The simulated hart here counts as QEMU does (`SimHart::qemu_event_map`),
//! so the tests also show what each answer means for the counts. Flags are
//! Linux's: `cycles:u` = exclude_kernel + exclude_guest = SINH|VSINH|VUINH,
//! `cycles:k` = UINH|VSINH|VUINH.

use rvpmu::dt::{EventMap, RangeRow, RawRow};
use rvpmu::hart::IsaFeatures;
use rvpmu::hw::bits;
use rvpmu::sim::{Mode, SimHart};
use rvpmu::Error;

mod common;
use common::{
    call, config, engine, qemu_map, AUTO_START, CFG, CLEAR_VALUE, CYCLES, EVENT_INFO, INSTRUCTIONS,
    P, RESET, SET_INIT_VALUE, SKIP_MATCH, START, STOP,
};

const GUEST: u64 = 1 << 3 | 1 << 4; // VUINH | VSINH
const USER: u64 = 1 << 6 | GUEST; // :u, SINH
const KERNEL: u64 = 1 << 5 | GUEST; // :k, UINH

const QEMU_EVENTS: [u64; 5] = [CYCLES, INSTRUCTIONS, 0x10019, 0x1001b, 0x10021];
/// Linux's cmask on QEMU virt: counters 0 and 2..34 (16 firmware counters).
const CMASK: u64 = ((1 << 35) - 1) & !0b10;
/// QEMU virt's HPM counters 3..18.
const HPM: u64 = 0x7fff8;

/// A QEMU virt hart (Sscofpmf, H, optionally Smcntrpmf) whose event map
/// has the property `on`, counting like QEMU; Linux has stopped and reset
/// every counter at CPU start, as it does.
fn hart_with(map: &EventMap, on: bool, smcntrpmf: bool) -> P {
    let mut map = map.clone();
    map.set_one_counter_per_event(on);
    let map: &'static EventMap = Box::leak(Box::new(map));
    let isa = IsaFeatures::none()
        .with_sscofpmf(true)
        .with_smcntrpmf(smcntrpmf)
        .with_h(true);
    let hw = SimHart::new(0x7fffd, 64, true, smcntrpmf).qemu_event_map();
    let mut p = engine(config(map, isa, false), hw);
    assert_eq!(
        call(&mut p, STOP, &[0, CMASK, RESET]),
        Err(Error::AlreadyStopped)
    );
    p
}

fn hart(on: bool) -> P {
    hart_with(qemu_map(), on, false)
}

/// Linux's config_matching: a counter for `event` (no event data) from
/// its cmask, with `flags`.
fn matching(p: &mut P, flags: u64, event: u64) -> Result<u64, Error> {
    call(p, CFG, &[0, CMASK, flags, event, 0])
}

/// The selector part of counter `i`'s mhpmevent.
fn selector(p: &P, i: usize) -> u64 {
    p.hw().event_reg(i) & !(bits::OF | bits::ALL_INH)
}

/// 100 cycles in U-mode, then 50 in S-mode.
fn user_then_kernel(p: &mut P) {
    p.hw_mut().tick(Mode::U, CYCLES, 100);
    p.hw_mut().tick(Mode::S, CYCLES, 50);
}

/// Start counter `i` from 0.
fn start(p: &mut P, i: u64) {
    assert_eq!(call(p, START, &[i, 1, SET_INIT_VALUE, 0]), Ok(0));
}

#[test]
fn without_the_property_the_second_counter_reads_zero() {
    // The anomaly users see: both succeed, both run, the second counts nothing.
    let mut p = hart(false);
    assert_eq!(matching(&mut p, USER, CYCLES), Ok(3));
    assert_eq!(matching(&mut p, KERNEL, CYCLES), Ok(4));
    start(&mut p, 3);
    start(&mut p, 4);
    user_then_kernel(&mut p);
    assert_eq!(p.hw().counter(3), 100);
    assert_eq!(p.hw().counter(4), 0, "QEMU ignored the second mapping");
    assert_eq!(p.started_mask() & 0b11000, 0b11000);
}

#[test]
fn cycles_u_then_cycles_k_second_is_not_supported() {
    // Sscofpmf without Smcntrpmf: a filtered cycles request may only use
    // HPM counters (mcycle cannot filter), and every free one would share
    // the selector of counter 3, so none is a candidate.
    let mut p = hart(true);
    assert_eq!(matching(&mut p, USER, CYCLES), Ok(3));
    assert_eq!(
        matching(&mut p, KERNEL, CYCLES),
        Err(Error::NotSupported),
        "Linux's cmask, counter 0 included"
    );
    assert_eq!(
        call(&mut p, CFG, &[0, HPM, KERNEL, CYCLES, 0]),
        Err(Error::NotSupported),
        "only HPM counters offered"
    );
    // The same filter again is the same selector too.
    assert_eq!(matching(&mut p, USER, CYCLES), Err(Error::NotSupported));
    // Nothing was programmed by the refusals, and the first counter counts.
    assert_eq!(p.allocated_mask(), 1 << 3);
    assert_eq!(p.hw().event_reg(4), 0);
    start(&mut p, 3);
    user_then_kernel(&mut p);
    assert_eq!(p.hw().counter(3), 100);
}

#[test]
fn unfiltered_second_cycles_gets_the_fixed_counter() {
    // mcycle counts on its own (QEMU's map is for HPM counters), so an
    // unfiltered cycles request still finds a counter that counts.
    let mut p = hart(true);
    assert_eq!(matching(&mut p, USER, CYCLES), Ok(3));
    assert_eq!(matching(&mut p, 0, CYCLES), Ok(0));
    start(&mut p, 3);
    start(&mut p, 0);
    user_then_kernel(&mut p);
    assert_eq!(p.hw().counter(3), 100);
    assert_eq!(p.hw().counter(0), 150);
    // Instructions likewise go to minstret once an HPM counter holds them.
    assert_eq!(matching(&mut p, 0, INSTRUCTIONS), Ok(4));
    assert_eq!(matching(&mut p, 0, INSTRUCTIONS), Ok(2));
}

#[test]
fn with_smcntrpmf_cycles_k_gets_the_filtered_fixed_counter() {
    let mut p = hart_with(qemu_map(), true, true);
    assert_eq!(matching(&mut p, USER, CYCLES), Ok(3));
    assert_eq!(matching(&mut p, KERNEL, CYCLES), Ok(0));
    assert_ne!(p.hw().fixed_cfg(0) & bits::UINH, 0);
    start(&mut p, 3);
    start(&mut p, 0);
    user_then_kernel(&mut p);
    assert_eq!(p.hw().counter(3), 100, "cycles:u");
    assert_eq!(p.hw().counter(0), 50, "cycles:k");
    // A third cycles request has nowhere to go.
    assert_eq!(matching(&mut p, KERNEL, CYCLES), Err(Error::NotSupported));
}

#[test]
fn stop_with_reset_frees_the_selector() {
    let mut p = hart(true);
    assert_eq!(matching(&mut p, USER, CYCLES), Ok(3));
    start(&mut p, 3);
    // A plain stop keeps the mapping, and with it the selector.
    assert_eq!(call(&mut p, STOP, &[3, 1, 0]), Ok(0));
    assert_eq!(matching(&mut p, KERNEL, CYCLES), Err(Error::NotSupported));
    // RESET releases it (as Linux's riscv_pmu_del does)...
    assert_eq!(
        call(&mut p, STOP, &[3, 1, RESET]),
        Err(Error::AlreadyStopped)
    );
    assert_eq!(p.hw().event_reg(3), 0, "QEMU unmaps on a zero write");
    // ... and the other filter now gets a counter that counts.
    assert_eq!(matching(&mut p, KERNEL, CYCLES), Ok(3));
    start(&mut p, 3);
    user_then_kernel(&mut p);
    assert_eq!(p.hw().counter(3), 50);
}

#[test]
fn without_the_property_both_succeed_as_before() {
    let mut p = hart(false);
    assert_eq!(matching(&mut p, USER, CYCLES), Ok(3));
    assert_eq!(matching(&mut p, KERNEL, CYCLES), Ok(4));
    assert_eq!(matching(&mut p, 0, CYCLES), Ok(5));
    assert_eq!(selector(&p, 4), CYCLES);
}

#[test]
fn different_events_never_conflict() {
    let mut p = hart(true);
    for (k, &e) in QEMU_EVENTS.iter().enumerate() {
        assert_eq!(matching(&mut p, USER, e), Ok(3 + k as u64), "{e:#x}");
    }
    for k in 0..QEMU_EVENTS.len() as u64 {
        start(&mut p, 3 + k);
    }
    for (k, &e) in QEMU_EVENTS.iter().enumerate() {
        p.hw_mut().tick(Mode::U, e, 10 + k as u64);
    }
    for k in 0..QEMU_EVENTS.len() {
        assert_eq!(p.hw().counter(3 + k), 10 + k as u64, "every counter counts");
    }
    // Each of them once more: refused, only their own selector is taken.
    for &e in &QEMU_EVENTS[2..] {
        assert_eq!(matching(&mut p, KERNEL, e), Err(Error::NotSupported));
    }
}

#[test]
fn raw_events_with_the_same_data_conflict() {
    // QEMU virt's rows plus a raw row any data matches.
    let map = EventMap::from_rows(
        &[],
        &[
            RangeRow {
                first: 1,
                last: 1,
                counters: 0x7fff9,
            },
            RangeRow {
                first: 2,
                last: 2,
                counters: 0x7fffc,
            },
        ],
        &[RawRow {
            select: 0,
            mask: 0,
            counters: HPM as u32,
        }],
        None,
    )
    .unwrap();
    let mut p = hart_with(&map, true, false);
    const RAW: u64 = 0x20000;
    const RAW_V2: u64 = 0x30000;
    assert_eq!(call(&mut p, CFG, &[0, CMASK, 0, RAW, 0x1234]), Ok(3));
    assert_eq!(
        call(&mut p, CFG, &[0, CMASK, 0, RAW, 0x1234]),
        Err(Error::NotSupported)
    );
    // The selector is what the hardware sees, whatever the event type.
    assert_eq!(
        call(&mut p, CFG, &[0, CMASK, 0, RAW_V2, 0x1234]),
        Err(Error::NotSupported)
    );
    assert_eq!(call(&mut p, CFG, &[0, CMASK, 0, RAW, 0x1235]), Ok(4));
    // Raw data 1 is CPU_CYCLES' selector on this map (its event_idx).
    assert_eq!(matching(&mut p, USER, CYCLES), Ok(5));
    assert_eq!(
        call(&mut p, CFG, &[0, CMASK, USER, RAW, 0x1]),
        Err(Error::NotSupported)
    );
    assert_eq!(selector(&p, 3), 0x1234);
    assert_eq!(selector(&p, 4), 0x1235);
}

#[test]
fn skip_match_reconfigures_a_held_counter_in_place() {
    // The caller names a counter it already holds: nothing is reprogrammed,
    // so no selector can be duplicated, and the call keeps working.
    let mut p = hart(true);
    assert_eq!(matching(&mut p, USER | AUTO_START, CYCLES), Ok(3));
    p.hw_mut().tick(Mode::U, CYCLES, 100);
    assert_eq!(call(&mut p, STOP, &[3, 1, 0]), Ok(0));
    assert_eq!(
        call(&mut p, CFG, &[3, 1, SKIP_MATCH | CLEAR_VALUE, CYCLES, 0]),
        Ok(3)
    );
    assert_eq!(p.hw().counter(3), 0);
    // Also while it runs (AUTO_START is then a no-op).
    start(&mut p, 3);
    assert_eq!(
        call(
            &mut p,
            CFG,
            &[3, 1, SKIP_MATCH | CLEAR_VALUE | AUTO_START, CYCLES, 0]
        ),
        Ok(3)
    );
    p.hw_mut().tick(Mode::U, CYCLES, 7);
    assert_eq!(p.hw().counter(3), 7);
    assert_eq!(selector(&p, 3), CYCLES);
    // SKIP_MATCH still needs a configured counter.
    assert_eq!(
        call(&mut p, CFG, &[4, 1, SKIP_MATCH, CYCLES, 0]),
        Err(Error::InvalidParam)
    );
}

#[test]
fn linux_boot_probe_still_finds_every_event() {
    // Linux 6.12 at boot: CFG_MATCH(cmask) then STOP(RESET) per event.
    // Nothing else holds a counter, so the answers are those without the
    // property, and no counter is left configured.
    let probe = |p: &mut P| -> Vec<bool> {
        let mut supported = Vec::new();
        for e in (1..=10).chain((0..0x36).map(|c| 0x10000 | c)) {
            match call(p, CFG, &[0, CMASK, 0, e, 0]) {
                Ok(idx) => {
                    assert_eq!(call(p, STOP, &[idx, 1, RESET]), Err(Error::AlreadyStopped));
                    supported.push(true);
                }
                Err(Error::NotSupported) => supported.push(false),
                Err(Error::InvalidParam) => {} // not an event of SBI 3.0
                Err(e) => panic!("{e}"),
            }
        }
        supported
    };
    let mut on = hart(true);
    let mut off = hart(false);
    let want = probe(&mut off);
    assert_eq!(want.iter().filter(|&&s| s).count(), QEMU_EVENTS.len());
    assert_eq!(probe(&mut on), want);
    assert_eq!(probe(&mut on), want, "and again: every selector was freed");
    assert_eq!(on.allocated_mask(), 0);
}

#[test]
fn event_get_info_reports_capability_not_availability() {
    // A held selector does not make the event unsupported (event_get_info
    // says what the platform can count; config_matching says what is free).
    let mut p = hart(true);
    assert_eq!(matching(&mut p, USER, CYCLES), Ok(3));
    let area = 0x8008_0000;
    p.mem_mut().poke(area, &(CYCLES as u32).to_le_bytes());
    assert_eq!(call(&mut p, EVENT_INFO, &[area, 0, 1, 0]), Ok(0));
    assert_eq!(p.mem().peek(area + 4, 4), [1, 0, 0, 0]);
}
