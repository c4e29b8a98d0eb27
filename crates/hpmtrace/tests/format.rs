//! The format's rules one by one (ITC tags, the count words, Delta's
//! wrap, the counter info word, cache event codes) and the counter slots
//! of an event list, against values worked out by hand. The address words:
//! `golden.rs` and `decode_format.rs`.

use hpmtrace::counters::{assign_slots, SlotError};
use hpmtrace::format::{
    apply_delta, decode_count, delta, encode_count, hw, CountWords, CounterInfo, Event, EventType,
    IdTag, TooWide,
};

/// The tags of each size on channel 6: `golden.rs`.
#[test]
fn idtag_channel_and_size() {
    assert_eq!(IdTag(0x1b).channel(), Some(6));
    assert_eq!(IdTag(0x19).size(), None);
    assert_eq!(IdTag(0x80).channel(), None);
}

#[test]
fn count_rule() {
    assert_eq!(encode_count(5), Ok(CountWords { low: 5, high: None }));
    assert_eq!(
        encode_count(0xabcd_0000_0001),
        Ok(CountWords {
            low: 1,
            high: Some(0xabcd)
        })
    );
    assert_eq!(encode_count(1 << 48), Err(TooWide(1 << 48)));
    assert_eq!(decode_count(1, Some(0xabcd)), 0xabcd_0000_0001);
}

#[test]
fn delta_wraps_once() {
    assert_eq!(delta(3, 0xffff_fffe, 32), 5);
    assert_eq!(apply_delta(0xffff_fffe, 5, 32), 3);
    assert_eq!(delta(10, 4, 48), 6);
}

#[test]
fn counter_info_fields() {
    let i = CounterInfo {
        csr: 0xc00,
        width: 64,
    };
    assert_eq!(i.to_u32(), 0xc00 | (63 << 12));
    assert_eq!(CounterInfo::from_u32(0xc00 | (63 << 12)), i);
    assert_eq!(i.recorded_width(), 48);
    // Widths clamped to 1..=64; bits above 17 ignored.
    let w = |width| CounterInfo { csr: 0xc03, width }.to_u32();
    assert_eq!((w(0), w(1), w(200)), (0xc03, 0xc03, 0xc03 | 63 << 12));
    assert_eq!(
        CounterInfo::from_u32(u32::MAX),
        CounterInfo {
            csr: 0xfff,
            width: 64
        }
    );
    // The header word is the low half of what the SBI PMU answers.
    for sbi in [
        rvpmu_sbi::CounterInfo::Hardware {
            csr: 0xc03,
            width: 40,
        },
        rvpmu_sbi::CounterInfo::Firmware { width: 64 },
    ] {
        let word = sbi.encode();
        let hdr = CounterInfo::from_u32(word as u32);
        assert_eq!(hdr.to_u32() as u64, word & 0xffff_ffff);
        assert_eq!(hdr.width, 1 + (word >> 12 & 0x3f) as u8);
    }
}

#[test]
fn cache_code_is_sbi_encoding() {
    let e = Event::Cache {
        cache_id: 0,
        op_id: 1,
        result_id: 1,
    };
    assert_eq!(e.code(), Some(3));
    assert_eq!(Event::from_code(EventType::HwCache, 3), Some(e));
}

#[test]
fn fixed_slots_and_list_order() {
    let ev = [
        Event::Raw { event_data: 5 },
        Event::General {
            code: hw::INSTRUCTIONS,
        },
        Event::General {
            code: hw::CPU_CYCLES,
        },
        Event::General {
            code: hw::BRANCH_MISSES,
        },
        Event::General {
            code: hw::TIMESTAMP,
        },
    ];
    let s = assign_slots(&ev).unwrap();
    assert_eq!(&s[..5], &[3, 2, 0, 4, 1]);
    assert_eq!(
        assign_slots(&[Event::General { code: 1 }, Event::General { code: 1 }]),
        Err(SlotError::DuplicateFixed(1))
    );
    let many = [Event::Raw { event_data: 0 }; 30];
    assert_eq!(assign_slots(&many), Err(SlotError::TooManyEvents));
}
