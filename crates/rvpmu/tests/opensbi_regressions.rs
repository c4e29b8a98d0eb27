//! One named test per item of OpenSBI's PMU bug history (fixes in its
//! `lib/sbi/sbi_pmu.c` and `lib/utils/fdt/fdt_pmu.c`) and per deviation of
//! OpenSBI 1.5.1 from the spec, so none can appear here.

use rvpmu::event::FwEvent;
use rvpmu::hart::IsaFeatures;
use rvpmu::sim::{HwWrite, Mode, SimHart};
use rvpmu::Error;

mod common;
use common::{
    call, config, engine, qemu, qemu_map, AUTO_START, CFG, FW_READ, FW_READ_HI, P, RESET,
    SET_INIT_VALUE, SINH, SKIP_MATCH, START, STOP,
};

fn pmu_with(hw: SimHart, isa: IsaFeatures) -> P {
    engine(config(qemu_map(), isa, false), hw)
}

/// 2026 security fix: SKIP_MATCH with counter_idx_base + highest mask bit
/// overflowing indexed past the counter array.
#[test]
fn base_plus_mask_overflow_is_rejected_without_access() {
    let mut p = qemu();
    for base in [u64::MAX, u64::MAX - 1, u64::MAX - 62, 1 << 63] {
        assert_eq!(
            call(&mut p, CFG, &[base, 1 << 63, SKIP_MATCH, 1, 0]),
            Err(Error::InvalidParam)
        );
        assert_eq!(
            call(&mut p, START, &[base, 1 << 63, 0, 0]),
            Err(Error::InvalidParam)
        );
        assert_eq!(
            call(&mut p, STOP, &[base, 1 << 63, 0]),
            Err(Error::InvalidParam)
        );
    }
    assert_eq!(p.hw().absent_accesses, 0);
}

/// An empty mask names no counter: INVALID_PARAM, not success.
#[test]
fn mask_zero_is_invalid() {
    let mut p = qemu();
    assert_eq!(
        call(&mut p, CFG, &[0, 0, 0, 1, 0]),
        Err(Error::InvalidParam)
    );
    assert_eq!(call(&mut p, START, &[0, 0, 0, 0]), Err(Error::InvalidParam));
    assert_eq!(call(&mut p, STOP, &[0, 0, 0]), Err(Error::InvalidParam));
}

/// Negative indices (as signed longs) are huge unsigned ones: invalid.
#[test]
fn negative_indices_are_invalid() {
    let mut p = qemu();
    let minus_one = -1i64 as u64;
    assert_eq!(call(&mut p, 1, &[minus_one]), Err(Error::InvalidParam));
    assert_eq!(
        call(&mut p, FW_READ, &[minus_one]),
        Err(Error::InvalidParam)
    );
    assert_eq!(
        call(&mut p, START, &[minus_one, 1, 0, 0]),
        Err(Error::InvalidParam)
    );
    assert_eq!(
        call(&mut p, CFG, &[-3i64 as u64, 0b1000, 0, 1, 0]),
        Err(Error::InvalidParam)
    );
}

/// With Sscofpmf but no Smcntrpmf the fixed counters cannot filter: a
/// filtered cycles request must not fall back to mcycle.
#[test]
fn no_unfiltered_fallback_to_fixed_counters() {
    let mut p = qemu();
    call(&mut p, STOP, &[0, 0b101, 0]).unwrap(); // fixed counters free
    let idx = call(&mut p, CFG, &[0, 0x7fffd, SINH, 1, 0]).unwrap();
    assert_ne!(idx, 0);
    assert_eq!(
        call(&mut p, CFG, &[0, 0b1, SINH, 1, 0]),
        Err(Error::NotSupported)
    );
    assert_eq!(
        call(&mut p, CFG, &[2, 0b1, SINH, 2, 0]),
        Err(Error::NotSupported)
    );
    // Unfiltered, the fixed counter is fine.
    assert_eq!(call(&mut p, CFG, &[0, 0b1, 0, 1, 0]), Ok(0));
}

/// Firmware counters must track started/stopped like hardware ones.
#[test]
fn firmware_counters_report_already_started_and_stopped() {
    let mut p = qemu();
    let idx = call(&mut p, CFG, &[19, 1, 0, 0xF0005, 0]).unwrap();
    assert_eq!(call(&mut p, STOP, &[idx, 1, 0]), Err(Error::AlreadyStopped));
    assert_eq!(call(&mut p, START, &[idx, 1, 0, 0]), Ok(0));
    assert_eq!(
        call(&mut p, START, &[idx, 1, 0, 0]),
        Err(Error::AlreadyStarted)
    );
    assert_eq!(call(&mut p, STOP, &[idx, 1, 0]), Ok(0));
    assert_eq!(call(&mut p, STOP, &[idx, 1, 0]), Err(Error::AlreadyStopped));
}

/// HPM counters need not be contiguous; holes are invalid indices and the
/// counters above a hole work.
#[test]
fn non_contiguous_hpm_counters() {
    // cycle, instret, 3, 5, 9
    let hw = SimHart::new(0b10_0010_1101, 64, true, false);
    let mut p = pmu_with(hw, IsaFeatures::none().with_sscofpmf(true));
    assert_eq!(p.num_counters(), 10 + 16);
    assert_eq!(call(&mut p, 1, &[4]), Err(Error::InvalidParam));
    assert_eq!(call(&mut p, 1, &[9]), Ok(0xC09 | 63 << 12));
    assert_eq!(
        call(&mut p, CFG, &[3, 0b111, 0, 0x10019, 0]),
        Err(Error::InvalidParam),
        "set with a hole"
    );
    assert_eq!(call(&mut p, CFG, &[5, 0b1_0001, 0, 0x10019, 0]), Ok(5));
    assert_eq!(call(&mut p, CFG, &[5, 0b1_0001, 0, 0x10019, 0]), Ok(9));
    assert_eq!(
        call(&mut p, 1, &[10]).map(|v| v >> 63),
        Ok(1),
        "firmware counters follow the last HPM"
    );
    assert_eq!(p.hw().absent_accesses, 0);
}

/// SKIP_MATCH selects the first counter *of the set* (lowest mask bit).
#[test]
fn skip_match_is_first_counter_of_set() {
    let mut p = qemu();
    call(&mut p, CFG, &[6, 1, 0, 0x10019, 0]).unwrap();
    assert_eq!(
        call(&mut p, CFG, &[4, 0b1100, SKIP_MATCH, 0x10019, 0]),
        Ok(6)
    );
}

/// The event type is event_idx[19:16]; bits above 19 are not part of it.
#[test]
fn event_type_is_bits_19_to_16() {
    let mut p = qemu();
    let fw = 0x7_ffff_fffd;
    assert!(call(&mut p, CFG, &[0, fw, 0, 0xF0005, 0]).is_ok());
    assert_eq!(
        call(&mut p, CFG, &[0, fw, 0, 0x1F0005, 0]),
        Err(Error::InvalidParam)
    );
    assert_eq!(
        call(&mut p, CFG, &[0, fw, 0, 0x110019, 0]),
        Err(Error::InvalidParam)
    );
}

/// Bit loops are bounded by XLEN: a mask with bit 63 must terminate and
/// be checked like any other.
#[test]
fn bit_loops_bounded_by_xlen() {
    let mut p = qemu();
    assert_eq!(
        call(&mut p, STOP, &[0, u64::MAX, 0]),
        Err(Error::InvalidParam)
    );
    assert_eq!(
        call(&mut p, START, &[0, 1 << 63, 0, 0]),
        Err(Error::InvalidParam)
    );
}

/// The new value must be in the counter before its overflow interrupt is
/// re-armed (OF cleared) and before it counts.
#[test]
fn counter_written_before_interrupt_enabled() {
    let mut p = qemu();
    let idx = call(&mut p, CFG, &[3, 1, 0, 0x10019, 0]).unwrap() as usize;
    p.hw_mut().log.clear();
    call(&mut p, START, &[idx as u64, 1, SET_INIT_VALUE, 42]).unwrap();
    let log = &p.hw().log;
    let w = log
        .iter()
        .position(|e| *e == HwWrite::Counter(idx, 42))
        .expect("value written");
    let of = log
        .iter()
        .position(|e| matches!(e, HwWrite::Event(i, v) if *i == idx && v >> 63 == 0))
        .expect("OF cleared");
    let run = log
        .iter()
        .position(|e| matches!(e, HwWrite::Inhibit(v) if v & (1 << idx) == 0))
        .expect("uninhibited");
    assert!(w < of && of < run, "order was {log:?}");
}

/// RESET releases the mapping even when the stop itself reports
/// ALREADY_STOPPED (Linux's event probing depends on it).
#[test]
fn reset_releases_even_when_already_stopped() {
    let mut p = qemu();
    let fw_and_hw = 0x7_ffff_fffd;
    let idx = call(&mut p, CFG, &[0, 0x7fff8, 0, 0x10019, 0]).unwrap();
    assert_eq!(
        call(&mut p, STOP, &[idx, 1, RESET]),
        Err(Error::AlreadyStopped)
    );
    assert_eq!(
        call(&mut p, CFG, &[0, 0x7fff8, 0, 0x10019, 0]),
        Ok(idx),
        "released, so free again"
    );
    let f = call(&mut p, CFG, &[0, fw_and_hw, 0, 0xF0006, 0]).unwrap();
    assert_eq!(
        call(&mut p, STOP, &[f, 1, RESET]),
        Err(Error::AlreadyStopped)
    );
    assert_eq!(
        call(&mut p, START, &[f, 1, 0, 0]),
        Err(Error::InvalidParam),
        "no mapping left"
    );
}

/// Counters 0 and 2 stay configured for cycles/instructions forever: RESET
/// stops them but SKIP_MATCH still works afterwards.
#[test]
fn fixed_counters_never_released() {
    let mut p = qemu();
    assert_eq!(call(&mut p, STOP, &[0, 0b101, RESET]), Ok(0));
    assert_eq!(
        call(&mut p, CFG, &[0, 1, SKIP_MATCH | AUTO_START, 1, 0]),
        Ok(0)
    );
    assert_eq!(call(&mut p, CFG, &[2, 1, SKIP_MATCH, 2, 0]), Ok(2));
    assert_eq!(call(&mut p, START, &[2, 1, 0, 0]), Ok(0));
}

/// OpenSBI 1.5.1 accepts reserved flag bits.
#[test]
fn reserved_flag_bits_rejected_everywhere() {
    let mut p = qemu();
    for bit in [8u64, 9, 31, 32, 63] {
        assert_eq!(
            call(&mut p, CFG, &[0, 0x7fff8, 1 << bit, 0x10019, 0]),
            Err(Error::InvalidParam)
        );
    }
    for bit in [2u64, 3, 63] {
        assert_eq!(
            call(&mut p, START, &[0, 1, 1 << bit, 0]),
            Err(Error::InvalidParam)
        );
        assert_eq!(
            call(&mut p, STOP, &[0, 1, 1 << bit]),
            Err(Error::InvalidParam)
        );
    }
}

/// OpenSBI 1.5.1 truncates counter indices to 32 bits.
#[test]
fn counter_indices_not_truncated_to_32_bits() {
    let mut p = qemu();
    let alias_of_zero = 1u64 << 32;
    assert_eq!(call(&mut p, 1, &[alias_of_zero]), Err(Error::InvalidParam));
    assert_eq!(
        call(&mut p, START, &[alias_of_zero, 1, 0, 0]),
        Err(Error::InvalidParam)
    );
    assert_eq!(
        call(&mut p, FW_READ, &[alias_of_zero + 19]),
        Err(Error::InvalidParam)
    );
}

/// OpenSBI 1.5.1's fw_read_hi succeeds for any index.
#[test]
fn fw_read_hi_validates_the_index() {
    let mut p = qemu();
    assert_eq!(call(&mut p, FW_READ_HI, &[3]), Err(Error::InvalidParam));
    assert_eq!(call(&mut p, FW_READ_HI, &[1000]), Err(Error::InvalidParam));
    assert_eq!(call(&mut p, FW_READ_HI, &[19]), Ok(0));
}

/// In OpenSBI a config_matching on the firmware counters could fault in
/// M-mode; here every firmware counter can be taken and released.
#[test]
fn config_matching_on_all_firmware_counters_is_safe() {
    let mut p = qemu();
    let fw = 0xffffu64;
    for _ in 0..16 {
        assert!(call(&mut p, CFG, &[19, fw, AUTO_START, 0xF0004, 0]).is_ok());
    }
    assert_eq!(
        call(&mut p, CFG, &[19, fw, 0, 0xF0004, 0]),
        Err(Error::NotSupported),
        "all taken"
    );
    p.record(FwEvent::IllegalInsn);
    for i in 19..35 {
        assert_eq!(call(&mut p, FW_READ, &[i]), Ok(1));
    }
    assert_eq!(call(&mut p, STOP, &[19, fw, RESET]), Ok(0));
    assert!(call(&mut p, CFG, &[19, fw, 0, 0xF0004, 0]).is_ok());
    p.hw_mut().tick(Mode::S, 1, 1);
    assert_eq!(p.mem().faults.get(), 0);
}
