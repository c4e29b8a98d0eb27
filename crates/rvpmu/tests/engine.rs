//! Behaviour of the nine PMU functions on a simulated QEMU-virt hart,
//! through the raw register boundary (`rvpmu::ecall::pmu`). Expected
//! values come from the SBI PMU chapter, QEMU virt's counters and
//! `riscv,pmu` node, and the calls Linux's `drivers/perf/riscv_pmu_sbi.c`
//! makes.

use rvpmu::dt::{EventMap, RangeRow, RawRow, SelectorRow};
use rvpmu::event::FwEvent;
use rvpmu::hart::IsaFeatures;
use rvpmu::hw::bits;
use rvpmu::sim::{HwWrite, Mode, SimHart};
use rvpmu::Error;

mod common;
use common::{
    call, config, engine, qemu, qemu_map, sscofpmf, AUTO_START, CFG, CLEAR_VALUE, CYCLES,
    EVENT_INFO, FW_READ, FW_READ_HI, INFO, INIT_SNAPSHOT, INSTRUCTIONS, MINH, NUM, P, RESET,
    SET_INIT_VALUE, SINH, SKIP_MATCH, SNAPSHOT, START, STOP, TAKE_SNAPSHOT, UINH, VSINH, VUINH,
};

const DTLB_READ_MISS: u64 = 0x10019;
const FW_SET_TIMER: u64 = 0xF0005;
const FW_IPI_SENT: u64 = 0xF0006;

const SHMEM: u64 = 0x8008_0000; // supervisor-owned, page aligned
const FW_MEM: u64 = 0x8000_0000; // the firmware's own memory

// ---------------------------------------------------------------- FID 0/1

#[test]
fn num_counters_is_hw_slots_plus_16_firmware() {
    let mut p = qemu();
    // 19 hardware slots (0..=18, 1 is a hole) + 16 firmware counters.
    assert_eq!(call(&mut p, NUM, &[]), Ok(35));
}

#[test]
fn get_info_reports_csr_width_and_type() {
    let mut p = qemu();
    assert_eq!(call(&mut p, INFO, &[0]), Ok(0xC00 | 63 << 12));
    assert_eq!(call(&mut p, INFO, &[2]), Ok(0xC02 | 63 << 12));
    assert_eq!(call(&mut p, INFO, &[18]), Ok(0xC12 | 63 << 12));
    assert_eq!(
        call(&mut p, INFO, &[1]),
        Err(Error::InvalidParam),
        "time is never a counter"
    );
    assert_eq!(
        call(&mut p, INFO, &[19]).map(|v| v >> 63),
        Ok(1),
        "firmware type bit"
    );
    assert_eq!(call(&mut p, INFO, &[35]), Err(Error::InvalidParam));
    assert_eq!(call(&mut p, INFO, &[u64::MAX]), Err(Error::InvalidParam));
}

#[test]
fn widths_are_probed_not_assumed() {
    let mut hw = SimHart::qemu_virt();
    hw.set_width(5, 40);
    let mut p = engine(config(qemu_map(), sscofpmf(), false), hw);
    assert_eq!(call(&mut p, INFO, &[5]), Ok(0xC05 | 39 << 12));
    assert_eq!(call(&mut p, INFO, &[4]), Ok(0xC04 | 63 << 12));
}

// ---------------------------------------------------------------- FID 2

#[test]
fn config_matching_picks_a_free_capable_counter_and_programs_it() {
    let mut p = qemu();
    let idx = call(&mut p, CFG, &[0, 0x7fffd, 0, DTLB_READ_MISS, 0]).unwrap();
    assert_eq!(idx, 3, "lowest HPM counter the DT allows");
    // QEMU needs the zero-extended event_idx; Sscofpmf: MINH forced.
    assert_eq!(p.hw().event_reg(3), DTLB_READ_MISS | bits::MINH);
    let idx2 = call(&mut p, CFG, &[0, 0x7fffd, 0, DTLB_READ_MISS, 0]).unwrap();
    assert_eq!(idx2, 4, "a mapped counter is not free");
}

#[test]
fn config_matching_rejects_reserved_flags_and_bad_sets() {
    let mut p = qemu();
    for (base, mask, flags) in [
        (0, 0x7fffd, 1 << 8),
        (0, 0x7fffd, 1 << 63),
        (0, 0, 0),
        (0, 0b10, 0),
        (30, 0b1000_0000, 0),
    ] {
        assert_eq!(
            call(&mut p, CFG, &[base, mask, flags, CYCLES, 0]),
            Err(Error::InvalidParam),
            "base {base}, mask {mask:#x}, flags {flags:#x}"
        );
    }
}

#[test]
fn config_matching_malformed_event_is_invalid_param_uncountable_is_not_supported() {
    let mut p = qemu();
    let all = 0x7_ffff_fffd;
    for (event, data, want) in [
        (0, 0, Error::InvalidParam),
        (11, 0, Error::InvalidParam),
        (0x50000, 0, Error::InvalidParam),
        (0x20000, 1 << 48, Error::InvalidParam),
        (0xF0016, 0, Error::InvalidParam), // firmware code 22 is reserved
        // Well formed, but QEMU's DT has no counter for them.
        (0x3, 0, Error::NotSupported),
        (0x20000, 0x12, Error::NotSupported),
        (0xF0100, 0, Error::NotSupported),
        (0xFFFFF, 7, Error::NotSupported),
    ] {
        assert_eq!(
            call(&mut p, CFG, &[0, all, 0, event, data]),
            Err(want),
            "event {event:#x}, data {data:#x}"
        );
    }
}

/// config_matching of `event` with `flags` on the HPM counters, which must
/// succeed: the counter.
fn matching(p: &mut P, flags: u64, event: u64) -> usize {
    call(p, CFG, &[0, 0x7fff8, flags, event, 0]).unwrap() as usize
}

#[test]
fn filter_flags_map_to_mhpmevent_bits() {
    let mut p = qemu();
    let idx = matching(&mut p, UINH | VSINH | VUINH, DTLB_READ_MISS);
    assert_eq!(
        p.hw().event_reg(idx),
        DTLB_READ_MISS | bits::MINH | bits::UINH | bits::VSINH | bits::VUINH
    );
    let idx = matching(&mut p, SINH | MINH, DTLB_READ_MISS);
    assert_eq!(
        p.hw().event_reg(idx),
        DTLB_READ_MISS | bits::MINH | bits::SINH
    );
}

#[test]
fn filtered_counts_separate_modes() {
    let mut p = qemu();
    let u = matching(&mut p, SINH | AUTO_START | CLEAR_VALUE, CYCLES);
    let k = matching(&mut p, UINH | AUTO_START | CLEAR_VALUE, CYCLES);
    let all = matching(&mut p, AUTO_START | CLEAR_VALUE, CYCLES);
    p.hw_mut().tick(Mode::U, 1, 1000);
    p.hw_mut().tick(Mode::S, 1, 300);
    p.hw_mut().tick(Mode::M, 1, 50);
    assert_eq!(p.hw().counter(u), 1000);
    assert_eq!(p.hw().counter(k), 300);
    assert_eq!(
        p.hw().counter(all),
        1300,
        "M-mode is never counted on filterable counters"
    );
}

#[test]
fn smcntrpmf_filters_the_fixed_counters() {
    let isa = IsaFeatures::none().with_sscofpmf(true).with_smcntrpmf(true);
    let hw = SimHart::new(0x7fffd, 64, true, true);
    let mut p = engine(config(qemu_map(), isa, false), hw);
    call(&mut p, STOP, &[0, 0b101, RESET]).unwrap();
    let idx = call(&mut p, CFG, &[0, 0b1, SINH, CYCLES, 0]).unwrap();
    assert_eq!(idx, 0, "the fixed counter can filter with Smcntrpmf");
    assert_eq!(p.hw().fixed_cfg(0), bits::SINH | bits::MINH);
}

#[test]
fn skip_match_uses_first_counter_of_the_set_and_requires_configuration() {
    let mut p = qemu();
    // Unconfigured HPM counter: SKIP_MATCH has nothing to reuse.
    assert_eq!(
        call(&mut p, CFG, &[4, 0b110, SKIP_MATCH, DTLB_READ_MISS, 0]),
        Err(Error::InvalidParam)
    );
    let idx = call(&mut p, CFG, &[0, 1 << 5, 0, DTLB_READ_MISS, 0]).unwrap();
    assert_eq!(idx, 5);
    // base 3, mask 0b100 -> first counter is 5, not 3.
    assert_eq!(
        call(&mut p, CFG, &[3, 0b100, SKIP_MATCH, DTLB_READ_MISS, 0]),
        Ok(5)
    );
    // Legacy mode: SKIP_MATCH on the fixed counters always works.
    assert_eq!(call(&mut p, CFG, &[0, 1, SKIP_MATCH, CYCLES, 0]), Ok(0));
    assert_eq!(
        call(&mut p, CFG, &[2, 1, SKIP_MATCH, INSTRUCTIONS, 0]),
        Ok(2)
    );
}

#[test]
fn clear_value_and_auto_start() {
    let mut p = qemu();
    p.hw_mut().tick(Mode::S, 1, 0); // nothing yet
    let idx = call(&mut p, CFG, &[0, 0x7fff8, AUTO_START, DTLB_READ_MISS, 0]).unwrap() as usize;
    p.hw_mut().tick(Mode::S, DTLB_READ_MISS, 10);
    assert_eq!(p.hw().counter(idx), 10, "AUTO_START started it");
    call(&mut p, STOP, &[idx as u64, 1, 0]).unwrap();
    // SKIP_MATCH + CLEAR_VALUE zeroes it; AUTO_START has no effect on the value.
    call(
        &mut p,
        CFG,
        &[
            idx as u64,
            1,
            SKIP_MATCH | CLEAR_VALUE | AUTO_START,
            DTLB_READ_MISS,
            0,
        ],
    )
    .unwrap();
    assert_eq!(p.hw().counter(idx), 0);
    p.hw_mut().tick(Mode::S, DTLB_READ_MISS, 3);
    assert_eq!(p.hw().counter(idx), 3);
}

#[test]
fn cycles_prefer_hpm_counters_with_sscofpmf_for_overflow_interrupts() {
    let mut p = qemu();
    call(&mut p, STOP, &[0, 0b101, RESET]).unwrap(); // as Linux does at CPU start
    assert_eq!(call(&mut p, CFG, &[0, 0x7fffd, 0, CYCLES, 0]), Ok(3));
    assert_eq!(call(&mut p, CFG, &[0, 0x7fffd, 0, INSTRUCTIONS, 0]), Ok(4));
    // Only when no HPM counter is free does an unfiltered request get mcycle.
    for _ in 5..=18 {
        call(&mut p, CFG, &[0, 0x7fff8, 0, DTLB_READ_MISS, 0]).unwrap();
    }
    assert_eq!(call(&mut p, CFG, &[0, 0x7fffd, 0, CYCLES, 0]), Ok(0));
    assert_eq!(
        call(&mut p, CFG, &[0, 0x7fffd, SINH, INSTRUCTIONS, 0]),
        Err(Error::NotSupported)
    );

    // Without Sscofpmf there are no interrupts to want: lowest index wins.
    let hw = SimHart::new(0x7fffd, 64, false, false);
    let mut q = engine(config(qemu_map(), IsaFeatures::default(), false), hw);
    call(&mut q, STOP, &[0, 0b101, RESET]).unwrap();
    assert_eq!(call(&mut q, CFG, &[0, 0x7fffd, 0, CYCLES, 0]), Ok(0));
}

// ---------------------------------------------------------------- FID 3/4

#[test]
fn start_stop_flags_and_already_states() {
    let mut p = qemu();
    let idx = call(&mut p, CFG, &[0, 0x7fff8, 0, DTLB_READ_MISS, 0]).unwrap();
    assert_eq!(
        call(&mut p, START, &[idx, 1, 1 << 2, 0]),
        Err(Error::InvalidParam),
        "reserved start flag"
    );
    assert_eq!(
        call(&mut p, START, &[idx, 1, SET_INIT_VALUE | INIT_SNAPSHOT, 0]),
        Err(Error::InvalidParam),
        "mutually exclusive"
    );
    assert_eq!(
        call(&mut p, START, &[idx, 1, INIT_SNAPSHOT, 0]),
        Err(Error::NoShmem)
    );
    assert_eq!(call(&mut p, START, &[idx, 1, SET_INIT_VALUE, 1234]), Ok(0));
    assert_eq!(p.hw().counter(idx as usize), 1234);
    assert_eq!(
        call(&mut p, START, &[idx, 1, 0, 0]),
        Err(Error::AlreadyStarted)
    );
    assert_eq!(
        call(&mut p, STOP, &[idx, 1, 1 << 2]),
        Err(Error::InvalidParam),
        "reserved stop flag"
    );
    assert_eq!(
        call(&mut p, STOP, &[idx, 1, TAKE_SNAPSHOT]),
        Err(Error::NoShmem)
    );
    assert_eq!(call(&mut p, STOP, &[idx, 1, 0]), Ok(0));
    assert_eq!(call(&mut p, STOP, &[idx, 1, 0]), Err(Error::AlreadyStopped));
    // Stopped counters do not count.
    p.hw_mut().tick(Mode::S, DTLB_READ_MISS, 5);
    assert_eq!(p.hw().counter(idx as usize), 1234);
}

#[test]
fn start_of_unconfigured_counter_is_invalid() {
    let mut p = qemu();
    assert_eq!(call(&mut p, START, &[7, 1, 0, 0]), Err(Error::InvalidParam));
}

#[test]
fn start_without_init_flag_keeps_the_value() {
    let mut p = qemu();
    let idx = call(&mut p, CFG, &[0, 0x7fff8, AUTO_START, DTLB_READ_MISS, 0]).unwrap();
    p.hw_mut().tick(Mode::U, DTLB_READ_MISS, 7);
    call(&mut p, STOP, &[idx, 1, 0]).unwrap();
    call(&mut p, START, &[idx, 1, 0, 999]).unwrap();
    p.hw_mut().tick(Mode::U, DTLB_READ_MISS, 1);
    assert_eq!(p.hw().counter(idx as usize), 8);
}

#[test]
fn a_set_acts_on_every_member_and_reports_already_started() {
    let mut p = qemu();
    let a = call(&mut p, CFG, &[0, 0x7fff8, AUTO_START, DTLB_READ_MISS, 0]).unwrap();
    let b = call(&mut p, CFG, &[0, 0x7fff8, 0, 0x1001b, 0]).unwrap();
    assert_eq!((a, b), (3, 4));
    assert_eq!(
        call(&mut p, START, &[3, 0b11, 0, 0]),
        Err(Error::AlreadyStarted)
    );
    assert_eq!(
        p.started_mask() & 0b11000,
        0b11000,
        "counter 4 was started anyway"
    );
    assert_eq!(call(&mut p, STOP, &[3, 0b11, RESET]), Ok(0));
    assert_eq!(p.allocated_mask() & 0b11000, 0);
}

// ---------------------------------------------------------------- firmware counters

#[test]
fn firmware_counters_count_exactly_while_started() {
    let mut p = qemu();
    let idx = call(&mut p, CFG, &[0, 0x7_ffff_fffd, 0, FW_SET_TIMER, 0]).unwrap();
    assert_eq!(idx, 19, "first firmware counter");
    p.record(FwEvent::SetTimer); // not started: not counted
    call(&mut p, START, &[idx, 1, SET_INIT_VALUE, 0]).unwrap();
    for _ in 0..5 {
        p.record(FwEvent::SetTimer);
    }
    p.record(FwEvent::IpiSent); // another event
    assert_eq!(call(&mut p, FW_READ, &[idx]), Ok(5));
    assert_eq!(call(&mut p, FW_READ_HI, &[idx]), Ok(0));
    call(&mut p, STOP, &[idx, 1, 0]).unwrap();
    p.record(FwEvent::SetTimer);
    assert_eq!(call(&mut p, FW_READ, &[idx]), Ok(5));
    assert_eq!(
        call(&mut p, FW_READ, &[3]),
        Err(Error::InvalidParam),
        "hardware counter"
    );
    assert_eq!(call(&mut p, FW_READ_HI, &[0]), Err(Error::InvalidParam));
    assert_eq!(call(&mut p, FW_READ, &[1]), Err(Error::InvalidParam));
    assert_eq!(call(&mut p, FW_READ, &[35]), Err(Error::InvalidParam));
}

#[test]
fn two_firmware_counters_on_the_same_event_both_count() {
    let mut p = qemu();
    let fw_mask = 0xffff << 19;
    let a = call(&mut p, CFG, &[0, fw_mask, AUTO_START, FW_IPI_SENT, 0]).unwrap();
    let b = call(&mut p, CFG, &[0, fw_mask, AUTO_START, FW_IPI_SENT, 0]).unwrap();
    assert_ne!(a, b);
    p.record(FwEvent::IpiSent);
    assert_eq!(call(&mut p, FW_READ, &[a]), Ok(1));
    assert_eq!(call(&mut p, FW_READ, &[b]), Ok(1));
    call(&mut p, STOP, &[a, 1, RESET]).unwrap();
    p.record(FwEvent::IpiSent);
    assert_eq!(call(&mut p, FW_READ, &[b]), Ok(2));
}

#[test]
fn platform_and_implementation_events_count_when_declared() {
    let mut cfg = config(qemu_map(), sscofpmf(), false);
    cfg.fw_events.implementation[0] = 300;
    cfg.fw_events.platform[0] = Some(0xabc);
    let hw = SimHart::qemu_virt();
    let mut p = engine(cfg, hw);
    let fw_mask = 0xffff << 19;
    let i = call(&mut p, CFG, &[0, fw_mask, AUTO_START, 0xF0000 | 300, 0]).unwrap();
    let q = call(&mut p, CFG, &[0, fw_mask, AUTO_START, 0xFFFFF, 0xabc]).unwrap();
    assert_eq!(
        call(&mut p, CFG, &[0, fw_mask, 0, 0xFFFFF, 0xabd]),
        Err(Error::NotSupported)
    );
    p.record_impl(300);
    p.record_platform(0xabc);
    p.record_platform(0xabc);
    p.record_platform(0xabd);
    assert_eq!(call(&mut p, FW_READ, &[i]), Ok(1));
    assert_eq!(call(&mut p, FW_READ, &[q]), Ok(2));
}

// ---------------------------------------------------------------- snapshot

#[test]
fn snapshot_registration_rules() {
    let mut p = qemu();
    for (args, want, what) in [
        ([SHMEM, 0, 1], Error::InvalidParam, "flags"),
        ([SHMEM + 8, 0, 0], Error::InvalidParam, "alignment"),
        ([FW_MEM, 0, 0], Error::InvalidAddress, "firmware memory"),
        ([0x1000, 0, 0], Error::InvalidAddress, "not RAM"),
        ([SHMEM, 1, 0], Error::InvalidAddress, "above 2^64"),
    ] {
        assert_eq!(call(&mut p, SNAPSHOT, &args), Err(want), "{what}");
    }
    p.mem_mut().poke(SHMEM + 100, &[0xAA; 8]);
    assert_eq!(call(&mut p, SNAPSHOT, &[SHMEM, 0, 0]), Ok(0));
    assert_eq!(
        p.mem().peek(SHMEM, 4096),
        &[0u8; 4096][..],
        "zeroed on registration"
    );
    assert_eq!(
        call(&mut p, SNAPSHOT, &[u64::MAX, u64::MAX, 0]),
        Ok(0),
        "all-ones disables"
    );
    assert_eq!(p.snapshot_area(), None);
    assert_eq!(p.mem().faults.get(), 0);
}

#[test]
fn snapshot_not_offered_answers_not_supported() {
    let mut cfg = config(qemu_map(), sscofpmf(), false);
    cfg.snapshot = false;
    let hw = SimHart::qemu_virt();
    let mut p = engine(cfg, hw);
    assert_eq!(
        call(&mut p, SNAPSHOT, &[SHMEM, 0, 0]),
        Err(Error::NotSupported)
    );
    // Whatever the arguments: the function is not there to check them.
    for a in [
        [SHMEM, 0, 1],
        [SHMEM + 8, 0, 0],
        [SHMEM, 1, 0],
        [u64::MAX, u64::MAX, 0],
    ] {
        assert_eq!(
            call(&mut p, SNAPSHOT, &a),
            Err(Error::NotSupported),
            "{a:x?}"
        );
    }
}

#[test]
fn take_snapshot_writes_base_relative_values_and_overflow_bits() {
    let mut hw = SimHart::qemu_virt();
    hw.set_width(4, 8); // an 8-bit counter overflows quickly
    let mut p = engine(config(qemu_map(), sscofpmf(), false), hw);
    call(&mut p, SNAPSHOT, &[SHMEM, 0, 0]).unwrap();
    let a = call(
        &mut p,
        CFG,
        &[3, 0b1, AUTO_START | CLEAR_VALUE, DTLB_READ_MISS, 0],
    )
    .unwrap();
    let b = call(
        &mut p,
        CFG,
        &[4, 0b1, AUTO_START | CLEAR_VALUE, DTLB_READ_MISS, 0],
    )
    .unwrap();
    assert_eq!((a, b), (3, 4));
    p.hw_mut().tick(Mode::S, DTLB_READ_MISS, 300);
    assert!(p.hw().lcofip, "the 8-bit counter overflowed");
    // Pre-existing garbage at another index must survive.
    p.mem_mut().poke(SHMEM + 8 + 8 * 10, &77u64.to_le_bytes());
    assert_eq!(call(&mut p, STOP, &[3, 0b11, TAKE_SNAPSHOT]), Ok(0));
    assert_eq!(p.mem().peek_u64(SHMEM + 8), 300, "values[0] = counter 3");
    assert_eq!(
        p.mem().peek_u64(SHMEM + 16),
        300 - 256,
        "values[1] = counter 4 (wrapped)"
    );
    assert_eq!(
        p.mem().peek_u64(SHMEM),
        0b10,
        "overflow bit 1 = counter 4, base-relative"
    );
    assert_eq!(
        p.mem().peek_u64(SHMEM + 8 + 8 * 10),
        77,
        "other values untouched"
    );
    // Start clears OF; a single-counter stop at base 4 then reports bit 0
    // (counter 4, relative to base 4) clear and leaves bit 1 alone.
    call(&mut p, START, &[4, 1, 0, 0]).unwrap();
    call(&mut p, STOP, &[4, 1, TAKE_SNAPSHOT]).unwrap();
    assert_eq!(p.mem().peek_u64(SHMEM), 0b10);
    assert_eq!(p.mem().peek_u64(SHMEM + 8), 300 - 256);
}

#[test]
fn init_snapshot_restores_values_and_clears_overflow() {
    let mut p = qemu();
    call(&mut p, SNAPSHOT, &[SHMEM, 0, 0]).unwrap();
    call(&mut p, CFG, &[5, 0b1, 0, DTLB_READ_MISS, 0]).unwrap();
    call(&mut p, CFG, &[6, 0b1, 0, 0x1001b, 0]).unwrap();
    p.mem_mut().poke(SHMEM + 8, &1000u64.to_le_bytes());
    p.mem_mut().poke(SHMEM + 16, &2000u64.to_le_bytes());
    assert_eq!(call(&mut p, START, &[5, 0b11, INIT_SNAPSHOT, 0]), Ok(0));
    assert_eq!(p.hw().counter(5), 1000);
    assert_eq!(p.hw().counter(6), 2000);
    assert_eq!(p.hw().event_reg(5) & bits::OF, 0);
}

/// Linux 6.12 (`pmu_sbi_start_ovf_ctrs_snapshot`) restarts overflowed counters with
/// counter_idx_base = 64 * 64 = 4096. With the alias window that call names
/// the same counters, so sampling keeps going and strict set validation stays.
#[test]
fn linux_6_12_snapshot_restart_works_through_the_alias_window() {
    let hw = SimHart::qemu_virt();
    let mut p = engine(config(qemu_map(), sscofpmf(), true), hw);
    assert_eq!(call(&mut p, NUM, &[]), Ok(4096 + 35));
    call(&mut p, SNAPSHOT, &[SHMEM, 0, 0]).unwrap();
    let idx = call(&mut p, CFG, &[0, 0x7fffd, SINH, CYCLES, 0]).unwrap();
    assert_eq!(idx, 3);
    call(&mut p, START, &[idx, 1, SET_INIT_VALUE, u64::MAX - 99]).unwrap();
    p.hw_mut().tick(Mode::U, 1, 150);
    assert!(p.hw().lcofip);
    // Overflow handler: stop all used counters with a snapshot...
    call(&mut p, STOP, &[0, 1 << idx, TAKE_SNAPSHOT]).unwrap();
    assert_eq!(p.mem().peek_u64(SHMEM), 1 << idx);
    // ...kernel writes the new start value and restarts at base 4096.
    p.mem_mut()
        .poke(SHMEM + 8 + 8 * idx, &(u64::MAX - 999).to_le_bytes());
    assert_eq!(
        call(&mut p, START, &[4096, 1 << idx, INIT_SNAPSHOT, 0]),
        Ok(0)
    );
    assert_eq!(p.hw().counter(idx as usize), u64::MAX - 999);
    assert_eq!(
        p.hw().event_reg(idx as usize) & bits::OF,
        0,
        "OF cleared on start"
    );
    // Without the window the same call is an invalid set.
    let mut strict = qemu();
    assert_eq!(
        call(&mut strict, START, &[4096, 1 << 3, 0, 0]),
        Err(Error::InvalidParam)
    );
}

// ---------------------------------------------------------------- event_get_info

fn put_entry(p: &mut P, base: u64, k: u64, event_idx: u32, data: u64) {
    let a = base + 16 * k;
    p.mem_mut().poke(a, &event_idx.to_le_bytes());
    p.mem_mut().poke(a + 4, &0xdeadbeefu32.to_le_bytes());
    p.mem_mut().poke(a + 8, &data.to_le_bytes());
}

fn output(p: &P, base: u64, k: u64) -> u32 {
    u32::from_le_bytes(p.mem().peek(base + 16 * k + 4, 4).try_into().unwrap())
}

#[test]
fn event_get_info_marks_every_countable_event() {
    let mut p = qemu();
    let events: [(u32, u64, u32); 9] = [
        (0x1, 0, 1),       // cycles
        (0x2, 0, 1),       // instructions
        (0x3, 0, 0),       // cache references: no counter on QEMU
        (0x10019, 0, 1),   // DTLB read miss
        (0x10021, 0, 1),   // ITLB read miss
        (0xF0005, 0, 1),   // firmware SET_TIMER
        (0xF0015, 0, 1),   // firmware HFENCE_VVMA_ASID_RECEIVED
        (0x20000, 0x5, 0), // raw: no raw rows
        (0xB, 0, 0),       // general code 11: not an event
    ];
    for (k, (e, d, _)) in events.iter().enumerate() {
        put_entry(&mut p, SHMEM, k as u64, *e, *d);
    }
    assert_eq!(
        call(&mut p, EVENT_INFO, &[SHMEM, 0, events.len() as u64, 0]),
        Ok(0)
    );
    for (k, (e, _, want)) in events.iter().enumerate() {
        assert_eq!(output(&p, SHMEM, k as u64), *want, "event {e:#x}");
    }
    assert_eq!(p.mem().faults.get(), 0);
}

#[test]
fn event_get_info_answers_every_general_and_cache_code_as_countable_says() {
    // Every code of both types (well-formed or not), with event_data these
    // types do not use, on three platforms: QEMU's map and counters, no
    // map rows, and QEMU's map on a hart with the fixed counters only.
    static EMPTY: EventMap = EventMap::empty();
    let platforms: [(P, u32); 3] = [
        (qemu(), 5), // cycles, instructions, three TLB events
        (
            engine(config(&EMPTY, sscofpmf(), false), SimHart::qemu_virt()),
            2, // cycles and instructions on their fixed counters
        ),
        (
            engine(
                config(qemu_map(), sscofpmf(), false),
                SimHart::new(0b101, 64, true, false),
            ),
            2, // the TLB events' counters are absent
        ),
    ];
    const N: u32 = 256;
    for (mut p, want_supported) in platforms {
        let mut supported = 0;
        for ty in [0u32, 1] {
            for first in (0..1 << 16).step_by(N as usize) {
                let idx = |k: u32| ty << 16 | (first + k);
                for k in 0..N {
                    put_entry(&mut p, SHMEM, k as u64, idx(k), 0x5);
                }
                assert_eq!(call(&mut p, EVENT_INFO, &[SHMEM, 0, N as u64, 0]), Ok(0));
                for k in 0..N {
                    let countable = rvpmu::event::Event::decode_info(idx(k), 0x5)
                        .is_ok_and(|e| p.countable(&e));
                    let out = output(&p, SHMEM, k as u64);
                    assert_eq!(out, countable as u32, "event {:#x}", idx(k));
                    supported += out;
                }
            }
        }
        assert_eq!(supported, want_supported);
    }
}

#[test]
fn event_get_info_errors() {
    let mut p = qemu();
    put_entry(&mut p, SHMEM, 0, 0x1, 0);
    assert_eq!(
        call(&mut p, EVENT_INFO, &[SHMEM, 0, 1, 1]),
        Err(Error::InvalidParam),
        "flags"
    );
    assert_eq!(
        call(&mut p, EVENT_INFO, &[SHMEM + 8, 0, 1, 0]),
        Err(Error::InvalidParam),
        "alignment"
    );
    assert_eq!(
        call(&mut p, EVENT_INFO, &[SHMEM, 0, 0, 0]),
        Ok(0),
        "num 0: nothing to do"
    );
    assert_eq!(
        call(&mut p, EVENT_INFO, &[FW_MEM, 0, 0, 0]),
        Ok(0),
        "num 0 touches no memory"
    );
    assert_eq!(
        call(&mut p, EVENT_INFO, &[SHMEM, 0, u64::MAX / 8, 0]),
        Err(Error::InvalidAddress),
        "size overflow: not one of Table 19's INVALID_PARAM conditions"
    );
    assert_eq!(
        call(&mut p, EVENT_INFO, &[SHMEM, 0, 1 << 40, 0]),
        Err(Error::InvalidAddress),
        "too big"
    );
    assert_eq!(
        call(&mut p, EVENT_INFO, &[FW_MEM, 0, 1, 0]),
        Err(Error::InvalidAddress)
    );
    assert_eq!(
        call(&mut p, EVENT_INFO, &[SHMEM, 1, 1, 0]),
        Err(Error::InvalidAddress)
    );
    // A reserved bit in any entry fails the call before anything is written.
    put_entry(&mut p, SHMEM, 1, 0x1 | 1 << 20, 0);
    assert_eq!(
        call(&mut p, EVENT_INFO, &[SHMEM, 0, 2, 0]),
        Err(Error::InvalidParam)
    );
    assert_eq!(output(&p, SHMEM, 0), 0xdeadbeef, "nothing written");
}

// ---------------------------------------------------------------- unknown FID

#[test]
fn unknown_function_is_not_supported() {
    let mut p = qemu();
    assert_eq!(call(&mut p, 9, &[]), Err(Error::NotSupported));
    assert_eq!(call(&mut p, usize::MAX, &[]), Err(Error::NotSupported));
}

// ---------------------------------------------------------------- register widths

/// Spec, "Binary Encoding": FIDs are signed 32-bit integers, and "in case
/// the data is defined as 32bit wide, higher privilege software must ensure
/// that it only uses 32 bit data": the upper half of a6 is not looked at.
#[test]
fn the_fid_is_the_low_32_bits_of_a6() {
    let mut p = qemu();
    assert_eq!(call(&mut p, 1 << 32 | NUM, &[]), Ok(35));
    assert_eq!(
        call(&mut p, 0xdead_beef << 32 | INFO, &[0]),
        Ok(0xC00 | 63 << 12)
    );
    assert_eq!(
        call(&mut p, 0xffff_ffff << 32 | CFG, &[0, 0x7fff8, 0, CYCLES, 0]),
        Ok(3)
    );
    assert_eq!(
        call(&mut p, 1 << 63 | STOP, &[3, 1, RESET]),
        Err(Error::AlreadyStopped)
    );
    // Low halves that name no PMU function.
    for fid in [
        0xffff_ffff,
        0x8000_0000,
        1 << 32 | 9,
        0x1_0000_0000 | 0x1_0000,
    ] {
        assert_eq!(
            call(&mut p, fid, &[]),
            Err(Error::NotSupported),
            "FID {fid:#x}"
        );
    }
}

/// Every PMU parameter is `unsigned long` or `uint64_t`, full width on
/// RV64: bits above 31 are never dropped. `event_idx` is XLEN wide with
/// bits 0..=19 defined, so bit 32 is a reserved bit like bit 20, on each
/// of config_matching's paths.
#[test]
fn pmu_parameters_are_full_width() {
    let mut p = qemu();
    for (what, a) in [
        ("general event", [0, 0x7fff8, 0, 1 << 32 | CYCLES, 0]),
        ("firmware event", [19, 0xffff, 0, 1 << 32 | FW_SET_TIMER, 0]),
        ("SKIP_MATCH", [0, 1, SKIP_MATCH, 1 << 32 | CYCLES, 0]),
        ("event_idx bit 63", [0, 1, SKIP_MATCH, 1 << 63 | CYCLES, 0]),
        ("config_flags bit 32", [0, 0x7fff8, 1 << 32, CYCLES, 0]),
        (
            "SKIP_MATCH, config_flags bit 32",
            [0, 1, 1 << 32 | SKIP_MATCH, CYCLES, 0],
        ),
        (
            "firmware, config_flags bit 32",
            [19, 0xffff, 1 << 32, FW_SET_TIMER, 0],
        ),
        ("counter_idx_base bit 32", [1 << 32, 0x7fff8, 0, CYCLES, 0]),
        ("counter_idx_mask bit 40 only", [0, 1 << 40, 0, CYCLES, 0]),
        (
            "event_data bit 32, general event",
            [0, 0x7fff8, 0, CYCLES, 1 << 32],
        ),
    ] {
        assert_eq!(call(&mut p, CFG, &a), Err(Error::InvalidParam), "{what}");
    }
    assert_eq!(p.allocated_mask(), 0, "nothing configured");
    // Mask bit 32 names counter 32, firmware counter 13 here.
    assert_eq!(
        call(&mut p, CFG, &[0, 1 << 32, 0, CYCLES, 0]),
        Err(Error::NotSupported)
    );
    assert_eq!(call(&mut p, CFG, &[0, 1 << 32, 0, FW_SET_TIMER, 0]), Ok(32));
    assert_eq!(
        call(&mut p, STOP, &[32, 1, RESET]),
        Err(Error::AlreadyStopped)
    );
    // initial_value and firmware counter values are 64 bits.
    let c = call(&mut p, CFG, &[0, 0x7fff8, 0, CYCLES, 0]).unwrap();
    call(&mut p, START, &[c, 1, SET_INIT_VALUE, 0xabcd << 32 | 7]).unwrap();
    assert_eq!(p.hw().counter(c as usize), 0xabcd << 32 | 7);
    // start / stop flags with bit 32 set.
    assert_eq!(
        call(&mut p, STOP, &[c, 1, 1 << 32]),
        Err(Error::InvalidParam)
    );
    assert_eq!(
        call(&mut p, START, &[c, 1, 1 << 32 | SET_INIT_VALUE, 0]),
        Err(Error::InvalidParam)
    );
}

// ---------------------------------------------------------------- SKIP_MATCH, in place

#[test]
fn skip_match_validates_like_any_config_matching() {
    let mut p = qemu();
    assert_eq!(call(&mut p, CFG, &[0, 1 << 5, 0, DTLB_READ_MISS, 0]), Ok(5));
    let before = p.hw().event_reg(5);
    for (what, a) in [
        (
            "reserved flag",
            [5, 1, SKIP_MATCH | 1 << 8, DTLB_READ_MISS, 0],
        ),
        ("event_idx 0", [5, 1, SKIP_MATCH, 0, 0]),
        ("general code 11", [5, 1, SKIP_MATCH, 11, 0]),
        (
            "event_data on a general event",
            [5, 1, SKIP_MATCH, CYCLES, 1],
        ),
        ("cache op 3", [5, 1, SKIP_MATCH, 0x10006, 0]),
        ("type 4", [5, 1, SKIP_MATCH, 0x40000, 0]),
        ("raw event with a code", [5, 1, SKIP_MATCH, 0x20001, 0]),
        ("firmware code 22", [5, 1, SKIP_MATCH, 0xF0016, 0]),
        (
            "event_data on a firmware event",
            [5, 1, SKIP_MATCH, FW_SET_TIMER, 1],
        ),
        ("empty set", [5, 0, SKIP_MATCH, DTLB_READ_MISS, 0]),
        ("time", [1, 1, SKIP_MATCH, CYCLES, 0]),
        ("past the end", [35, 1, SKIP_MATCH, CYCLES, 0]),
        (
            "unconfigured first member",
            [4, 0b11, SKIP_MATCH, DTLB_READ_MISS, 0],
        ),
    ] {
        assert_eq!(call(&mut p, CFG, &a), Err(Error::InvalidParam), "{what}");
    }
    // Any well-formed event re-configures in place: the programming stays,
    // filter flags included.
    for ev in [CYCLES, FW_SET_TIMER, 0x20000, 0xFFFFF] {
        assert_eq!(
            call(&mut p, CFG, &[5, 1, SKIP_MATCH | SINH, ev, 0]),
            Ok(5),
            "event {ev:#x}"
        );
    }
    assert_eq!(p.hw().event_reg(5), before, "programming kept");
    assert_eq!(p.allocated_mask(), 1 << 5);
    assert_eq!(
        p.started_mask() & 1 << 5,
        0,
        "not started without AUTO_START"
    );
}

#[test]
fn skip_match_on_a_firmware_counter() {
    let mut p = qemu();
    let f = call(&mut p, CFG, &[19, 0xffff, AUTO_START, FW_IPI_SENT, 0]).unwrap();
    p.record(FwEvent::IpiSent);
    call(&mut p, STOP, &[f, 1, 0]).unwrap();
    assert_eq!(call(&mut p, FW_READ, &[f]), Ok(1));
    assert_eq!(
        call(
            &mut p,
            CFG,
            &[f, 1, SKIP_MATCH | CLEAR_VALUE | AUTO_START, FW_IPI_SENT, 0]
        ),
        Ok(f)
    );
    assert_eq!(call(&mut p, FW_READ, &[f]), Ok(0), "CLEAR_VALUE");
    p.record(FwEvent::IpiSent);
    p.record(FwEvent::IpiSent);
    assert_eq!(call(&mut p, FW_READ, &[f]), Ok(2), "AUTO_START, same event");
    // Started already: SKIP_MATCH still answers it (the spec selects it
    // unconditionally) and AUTO_START leaves it running.
    assert_eq!(
        call(
            &mut p,
            CFG,
            &[f, 1, SKIP_MATCH | AUTO_START, FW_IPI_SENT, 0]
        ),
        Ok(f)
    );
    assert_eq!(p.started_mask() & 1 << f, 1 << f);
}

// ---------------------------------------------------------------- DT-driven selectors and raw events

#[test]
fn dt_selectors_and_raw_rows_program_mhpmevent() {
    let m = EventMap::from_rows(
        &[SelectorRow {
            event_idx: 0x3,
            selector: 0x1801,
        }],
        &[RangeRow {
            first: 0x3,
            last: 0x6,
            counters: 0x18,
        }],
        &[RawRow {
            select: 0x0,
            mask: 0xffff_ffff_fc00_00ff,
            counters: 0x18,
        }],
        None,
    )
    .expect("valid rows");
    let map: &'static EventMap = Box::leak(Box::new(m));
    let hw = SimHart::new(0x1d, 64, true, false); // cycle, instret, 3, 4
    let mut p = engine(config(map, sscofpmf(), false), hw);
    let i = call(&mut p, CFG, &[0, 0x1d, 0, 0x3, 0]).unwrap() as usize;
    assert_eq!(p.hw().event_reg(i), 0x1801 | bits::MINH);
    let j = call(&mut p, CFG, &[0, 0x1d, 0, 0x20000, 0x4200]).unwrap() as usize;
    assert_eq!(p.hw().event_reg(j), 0x4200 | bits::MINH);
    assert_eq!(
        call(&mut p, CFG, &[0, 0x1d, 0, 0x20000, 0x4201]),
        Err(Error::NotSupported)
    );
    // Events other than cycles/instructions never land on counters 0-2.
    assert_eq!(
        call(&mut p, CFG, &[0, 0x1d, 0, 0x4, 0]),
        Err(Error::NotSupported),
        "all busy"
    );
}

#[test]
fn init_state_inhibits_hpm_counters_and_runs_fixed_ones() {
    let p = qemu();
    let last_inhibit = p.hw().log.iter().rev().find_map(|w| match w {
        HwWrite::Inhibit(v) => Some(*v),
        _ => None,
    });
    assert_eq!(last_inhibit.map(|v| v & 0x7fffd), Some(0x7fff8));
    assert_eq!(p.started_mask(), 0b101);
    assert_eq!(p.hw().absent_accesses, 0);
}

#[test]
fn overflow_bitmap_is_zero_without_sscofpmf() {
    let hw = SimHart::new(0x7fffd, 64, false, false);
    let mut p = engine(config(qemu_map(), IsaFeatures::default(), false), hw);
    call(&mut p, SNAPSHOT, &[SHMEM, 0, 0]).unwrap();
    let idx = call(&mut p, CFG, &[0, 0x7fff8, AUTO_START, DTLB_READ_MISS, 0]).unwrap();
    p.mem_mut().poke(SHMEM, &u64::MAX.to_le_bytes()); // supervisor junk
    call(&mut p, STOP, &[idx, 1, TAKE_SNAPSHOT]).unwrap();
    assert_eq!(
        p.mem().peek_u64(SHMEM),
        0,
        "Table 16: must be zero without Sscofpmf"
    );
}
