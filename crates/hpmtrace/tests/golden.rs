//! Golden ITC write sequences for every count type and record type. The
//! expected writes are derived by hand from the header and record
//! tables (README of the SiFive Trace Performance Library), not produced
//! by the encoder.

use hpmtrace::encoder::Encoder;
use hpmtrace::format::{
    hw, CountType, CounterDesc, CounterInfo, Event, Header, ItcWrite, RecordType, WriteSize,
};
use hpmtrace::sink::WriteLog;

/// (bits, value) as the README's tables list them.
fn w(bits: u32, value: u32) -> (u32, u32) {
    (bits, value)
}

fn got(log: &WriteLog) -> Vec<(u32, u32)> {
    log.writes
        .iter()
        .map(|(x, _)| {
            let bits = match x.size {
                WriteSize::Bits32 => 32,
                WriteSize::Bits16 => 16,
                WriteSize::Bits8 => 8,
            };
            (bits, x.value)
        })
        .collect()
}

/// Counters: slot 0 cycles (CSR 0xC00, 64 bits), slot 1 timestamp (CSR 0,
/// 40 bits), slot 3 raw event 0x1_0000_0002 (CSR 0xC03, 48 bits).
fn header(ct: CountType) -> Header {
    let mut h = Header::new(ct);
    h.counters[0] = Some(CounterDesc {
        event: Event::General {
            code: hw::CPU_CYCLES,
        },
        info: CounterInfo {
            csr: 0xc00,
            width: 64,
        },
    });
    h.counters[1] = Some(CounterDesc {
        event: Event::General {
            code: hw::TIMESTAMP,
        },
        info: CounterInfo { csr: 0, width: 40 },
    });
    h.counters[3] = Some(CounterDesc {
        event: Event::Raw {
            event_data: 0x1_0000_0002,
        },
        info: CounterInfo {
            csr: 0xc03,
            width: 48,
        },
    });
    h
}

/// The header writes, from the README's "Tabular Representation of Header".
fn header_writes(ct: u32) -> Vec<(u32, u32)> {
    vec![
        w(32, 0x7065_7266), // marker
        w(8, ct),           // type of count data
        w(32, 0b1011),      // mask: counters 0, 1, 3
        // counter 0: type 0, code 1, counter_info = CSR 0xC00 | msb 63 << 12
        w(32, 0),
        w(32, 1),
        w(32, 0xc00 | (63 << 12)),
        // counter 1: type 0, code 0x80, counter_info = CSR 0 | msb 39 << 12
        w(32, 0),
        w(32, 0x80),
        w(32, 39 << 12),
        // counter 3: type 2, event_data low, high, counter_info
        w(32, 2),
        w(32, 2),
        w(32, 1),
        w(32, 0xc03 | (47 << 12)),
    ]
}

/// An encoder for `header(ct)` whose trace is on (counters read `at_on`
/// at time 0), and the log with the header's writes cleared.
fn traced(ct: CountType, at_on: &[u64; 3]) -> (Encoder, WriteLog) {
    let mut e = Encoder::new(header(ct));
    let mut log = WriteLog::default();
    e.trace_on(&mut log, at_on, 0).unwrap();
    log.writes.clear();
    (e, log)
}

#[test]
fn header_for_each_count_type() {
    for (ct, n) in [
        (CountType::Raw, 0),
        (CountType::Delta, 1),
        (CountType::DeltaXor, 2),
    ] {
        let mut e = Encoder::new(header(ct));
        let mut log = WriteLog::default();
        e.trace_on(&mut log, &[0, 0, 0], 0).unwrap();
        assert_eq!(got(&log), header_writes(n), "{ct:?}");
    }
}

#[test]
fn header_cache_and_software_events() {
    let mut h = Header::new(CountType::Raw);
    h.counters[4] = Some(CounterDesc {
        event: Event::Cache {
            cache_id: 2,
            op_id: 1,
            result_id: 1,
        },
        info: CounterInfo {
            csr: 0xc04,
            width: 40,
        },
    });
    h.counters[5] = Some(CounterDesc {
        event: Event::LinuxSoftware { code: 1 },
        info: CounterInfo { csr: 0, width: 64 },
    });
    let mut log = WriteLog::default();
    Encoder::new(h).trace_on(&mut log, &[0, 0], 0).unwrap();
    assert_eq!(
        got(&log),
        vec![
            w(32, 0x7065_7266),
            w(8, 0),
            w(32, 0b11_0000),
            // type 1, SBI code = cache_id<<3 | op_id<<1 | result_id = 16|2|1
            w(32, 1),
            w(32, 19),
            w(32, 0xc04 | (39 << 12)),
            // extension type 16, PERF_COUNT_SW_TASK_CLOCK
            w(32, 16),
            w(32, 1),
            w(32, 63 << 12),
        ]
    );
}

#[test]
fn raw_records() {
    let (mut e, mut log) = traced(CountType::Raw, &[0, 0, 0]);
    // Function entry: a 32-bit address and one that needs two words.
    e.record(
        &mut log,
        RecordType::FuncEnter,
        [0x1_0074, 0x3f_0000_1002],
        &[0x1_0000_0000_0064, 0x5_0000_0007, 0xffff_ffff],
        0,
    )
    .unwrap();
    // Function exit, ISR and manual records with small values.
    e.record(
        &mut log,
        RecordType::FuncExit,
        [0x1_0074, 0x1_0100],
        &[0x65, 9, 1],
        0,
    )
    .unwrap();
    e.record(&mut log, RecordType::Isr, [0x1_0200, 0], &[0x66, 10, 2], 0)
        .unwrap();
    e.record(
        &mut log,
        RecordType::Manual,
        [0x1_0300, 0],
        &[0x67, 11, 3],
        0,
    )
    .unwrap();
    assert_eq!(
        got(&log),
        vec![
            w(8, 0),
            w(32, 0x1_0074),    // fits 32 bits: bit 0 clear
            w(32, 0x0000_1003), // low word with bit 0 set: high follows
            w(32, 0x3f),
            // cycles: recorded modulo 2^48 (64-bit counter): 0x64
            w(32, 0x64),
            // timestamp 0x5_0000_0007: low 32, then 16-bit bits 32..47
            w(32, 7),
            w(16, 5),
            w(32, 0xffff_ffff),
            w(8, 1),
            w(32, 0x1_0074),
            w(32, 0x1_0100),
            w(32, 0x65),
            w(32, 9),
            w(32, 1),
            w(8, 3),
            w(32, 0x1_0200), // one address for ISR
            w(32, 0x66),
            w(32, 10),
            w(32, 2),
            w(8, 2),
            w(32, 0x1_0300), // one address for manual
            w(32, 0x67),
            w(32, 11),
            w(32, 3),
        ]
    );
}

#[test]
fn delta_records_seeded_at_trace_on_with_wrap() {
    // The 48-bit raw counter is 0x10 below its wrap at trace-on.
    let (mut e, mut log) = traced(CountType::Delta, &[10, 100, 0xffff_ffff_fff0]);
    e.record(
        &mut log,
        RecordType::Manual,
        [0x2000, 0],
        &[25, 0x100, 0x10],
        0,
    )
    .unwrap();
    e.record(
        &mut log,
        RecordType::FuncExit,
        [0x2004, 0x3000],
        &[25, 0x1_0000_0100, 0x10],
        0,
    )
    .unwrap();
    assert_eq!(
        got(&log),
        vec![
            w(8, 2),
            w(32, 0x2000),
            w(32, 15),   // 25 - 10
            w(32, 0x9c), // 0x100 - 100
            w(32, 0x20), // 0x10 - 0xffff_ffff_fff0 + 2^48
            w(8, 1),
            w(32, 0x2004), // Delta keeps full addresses
            w(32, 0x3000),
            w(32, 0),
            w(32, 0), // 0x1_0000_0100 - 0x100 = 2^32: low word 0
            w(16, 1), // bits 32..47
            w(32, 0),
        ]
    );
}

#[test]
fn deltaxor_records_chain_addresses_and_counters_from_zero() {
    // Readings at trace-on do not matter for DeltaXOR: counters start at 0.
    let (mut e, mut log) = traced(CountType::DeltaXor, &[77, 88, 99]);
    e.record(
        &mut log,
        RecordType::Isr,
        [0x8000_0000_1000, 0],
        &[5, 0x40, 3],
        0,
    )
    .unwrap();
    e.record(
        &mut log,
        RecordType::FuncEnter,
        [0x8000_0000_1010, 0x8000_0000_2000],
        &[7, 0x41, 3],
        0,
    )
    .unwrap();
    assert_eq!(
        got(&log),
        vec![
            w(8, 3),
            // 0x8000_0000_1000 ^ 0: two words
            w(32, 0x1001),
            w(32, 0x8000),
            // first record: the plain readings (XOR with 0)
            w(32, 5),
            w(32, 0x40),
            w(32, 3),
            w(8, 0),
            // 0x8000_0000_1010 ^ 0x8000_0000_1000 = 0x10
            w(32, 0x10),
            // the chain runs through the second address too:
            // 0x8000_0000_2000 ^ 0x8000_0000_1010 = 0x3010
            w(32, 0x3010),
            w(32, 5 ^ 7),
            w(32, 0x40 ^ 0x41),
            w(32, 0),
        ]
    );
}

#[test]
fn wide_counter_interval_past_48_bits_is_reported() {
    let mut e = Encoder::new(header(CountType::Delta));
    let mut log = WriteLog::default();
    e.trace_on(&mut log, &[0, 0, 0], 0).unwrap();
    e.record(
        &mut log,
        RecordType::Manual,
        [0x100, 0],
        &[(1 << 48) + 5, 0, 0],
        0,
    )
    .unwrap();
    assert_eq!(e.stats().wide_overflows, 1);
    e.record(
        &mut log,
        RecordType::Manual,
        [0x100, 0],
        &[(1 << 48) + 9, 0, 0],
        0,
    )
    .unwrap();
    assert_eq!(e.stats().wide_overflows, 1, "a small interval is fine");
}

#[test]
fn itc_write_sizes_give_the_readme_idtags() {
    // "ID Tag | Size of data": 0x18 32 bits, 0x1a 16 bits, 0x1b 8 bits.
    assert_eq!(ItcWrite::w32(0).idtag(6).0, 0x18);
    assert_eq!(ItcWrite::w16(0).idtag(6).0, 0x1a);
    assert_eq!(ItcWrite::w8(0).idtag(6).0, 0x1b);
}
