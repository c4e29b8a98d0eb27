//! Decoder fidelity: trace bytes built here by hand from the format rules
//! (the SiFive library README), independently of the crate's
//! encoder, decoded and checked field by field.

use hpmtrace::decode::{
    decode_stream, DecodeConfig, DecodeErrorKind, HeaderInfo, Output, Record, Resume, Stats,
};
use hpmtrace::format::{CountType, Event, RecordType};
use hpmtrace::nexus::read::{Ict, Message, MessageReader, NexusErrorKind, TimestampTracker};
use hpmtrace::nexus::NexusConfig;

// ---------------------------------------------------------------- bytes

/// Hand-derived: a Data Acquisition message, IDTAG 0x18 (32-bit write on
/// channel 6), DQDATA 0x70657266 (the header marker), TIMESTAMP 5.
/// TCODE 7 -> 000111 | MSEO 00 = 0x1c; IDTAG 011000 | 01 = 0x61; DQDATA
/// in 6-bit groups LSB first: 100110 011000 010111 011001 110000 000001,
/// the last with MSEO 01; TIMESTAMP 000101 | 11 = 0x17.
const DA_MARKER: [u8; 9] = [0x1c, 0x61, 0x98, 0x24, 0x5c, 0x64, 0xc0, 0x05, 0x17];

/// Hand-derived: ICT with sync (TCODE 35 = 100011 -> 0x8c), CKSRC 0 and
/// CKDF 0 fill the next slice (0x00), CKDATA0 = 0 (0x01, end of field),
/// TIMESTAMP 0x123456789 in groups 001001 011110 010110 010001 100011
/// 000100, the last with MSEO 11.
const ICT_TS: [u8; 9] = [0x8c, 0x00, 0x01, 0x24, 0x78, 0x58, 0x44, 0x8c, 0x13];

#[test]
fn hand_derived_data_acquisition_message() {
    let msgs: Vec<_> = MessageReader::new(&DA_MARKER[..], NexusConfig::default()).collect();
    assert_eq!(msgs.len(), 1);
    let m = msgs[0].as_ref().unwrap();
    assert_eq!(m.offset, 0);
    assert_eq!(m.len, 9);
    match m.message {
        Message::DataAcquisition(d) => {
            assert_eq!(d.src, 0);
            assert_eq!(d.idtag, 0x18);
            assert_eq!(d.data, 0x7065_7266);
            assert_eq!(d.timestamp, Some(5));
        }
        other => panic!("not a DA message: {other:?}"),
    }
}

#[test]
fn hand_derived_ict_message_carries_the_full_timestamp() {
    let mut bytes = ICT_TS.to_vec();
    bytes.extend_from_slice(&DA_MARKER);
    let msgs: Vec<_> = MessageReader::new(&bytes[..], NexusConfig::default())
        .map(|m| m.unwrap())
        .collect();
    assert_eq!(
        msgs[0].message,
        Message::Ict(Ict {
            sync: true,
            src: 0,
            cksrc: 0,
            ckdf: 0,
            ckdata0: 0,
            ckdata1: None,
            timestamp: Some(0x1_2345_6789),
        })
    );
    assert_eq!(msgs[1].offset, 9);
    let mut t = TimestampTracker::new(40);
    assert_eq!(t.on_message(&msgs[0].message), Some(0x1_2345_6789));
    // The DA timestamp 5 is XORed with the previous one.
    assert_eq!(t.on_message(&msgs[1].message), Some(0x1_2345_6789 ^ 5));
}

#[test]
fn idle_bytes_between_messages_are_skipped() {
    let mut bytes = vec![0xff, 0xff];
    bytes.extend_from_slice(&DA_MARKER);
    bytes.push(0xff);
    let msgs: Vec<_> = MessageReader::new(&bytes[..], NexusConfig::default()).collect();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].as_ref().unwrap().offset, 2);
}

// ------------------------------------------- a test-local trace builder

/// Packs Nexus fields into bytes from the framing rules (second,
/// independent implementation of the writer side).
struct Packer {
    slices: Vec<u8>,
    mseo: Vec<u8>,
    bit: usize,
}

impl Packer {
    fn new() -> Self {
        Packer {
            slices: vec![],
            mseo: vec![],
            bit: 0,
        }
    }
    fn grow(&mut self, n: usize) {
        while self.slices.len() < n {
            self.slices.push(0);
            self.mseo.push(0);
        }
    }
    fn fixed(&mut self, width: usize, v: u64) {
        for k in 0..width {
            let at = self.bit + k;
            self.grow(at / 6 + 1);
            self.slices[at / 6] |= (((v >> k) & 1) as u8) << (at % 6);
        }
        self.bit += width;
    }
    fn var(&mut self, v: u64, last: bool) {
        let start = self.bit;
        let mut k = 0;
        // All significant bits, at least up to the end of the first slice.
        while (v >> k) != 0 || start + k < (start / 6 + 1) * 6 {
            let at = start + k;
            self.grow(at / 6 + 1);
            self.slices[at / 6] |= (((v >> k) & 1) as u8) << (at % 6);
            k += 1;
            if k >= 64 {
                break;
            }
        }
        let end_slice = (start + k - 1) / 6;
        self.grow(end_slice + 1);
        self.mseo[end_slice] = if last { 3 } else { 1 };
        self.bit = (end_slice + 1) * 6;
    }
    fn bytes(self) -> Vec<u8> {
        self.slices
            .iter()
            .zip(&self.mseo)
            .map(|(s, m)| (s << 2) | m)
            .collect()
    }
}

/// Builds a trace as ITC writes on channel `chan` from one or more cores.
struct Trace {
    out: Vec<u8>,
    src_bits: usize,
    chan: u32,
    last_ts: Vec<Option<u64>>,
}

impl Trace {
    fn new(src_bits: usize) -> Self {
        Trace {
            out: vec![],
            src_bits,
            chan: 6,
            last_ts: vec![None; 4],
        }
    }
    fn ict_ts(&mut self, src: u16, ts: u64) {
        let mut p = Packer::new();
        p.fixed(6, 35);
        p.fixed(self.src_bits, src as u64);
        p.fixed(4, 0);
        p.fixed(2, 0);
        p.var(0, false);
        p.var(ts, true);
        self.out.extend(p.bytes());
        self.last_ts[src as usize] = Some(ts);
    }
    fn write(&mut self, src: u16, size_off: u32, v: u32, ts: Option<u64>) {
        let mut p = Packer::new();
        p.fixed(6, 7);
        p.fixed(self.src_bits, src as u64);
        p.var((self.chan * 4 + size_off) as u64, false);
        p.var(v as u64, ts.is_none());
        if let Some(t) = ts {
            let prev = self.last_ts[src as usize].expect("ICT first");
            p.var(prev ^ t, true);
            self.last_ts[src as usize] = Some(t);
        }
        self.out.extend(p.bytes());
    }
    fn w32(&mut self, src: u16, v: u32) {
        self.write(src, 0, v, None)
    }
    fn w16(&mut self, src: u16, v: u16) {
        self.write(src, 2, v as u32, None)
    }
    fn w8(&mut self, src: u16, v: u8) {
        self.write(src, 3, v as u32, None)
    }
    fn w8_at(&mut self, src: u16, v: u8, ts: u64) {
        self.write(src, 3, v as u32, Some(ts))
    }
    /// Header per the README table; counters: (index, type, code or
    /// event_data, counter_info).
    fn header(&mut self, src: u16, count_type: u8, ctrs: &[(u32, u32, u64, u32)]) {
        self.w32(src, 0x7065_7266);
        self.w8(src, count_type);
        let mask = ctrs.iter().fold(0u32, |m, c| m | 1 << c.0);
        self.w32(src, mask);
        for &(_, ty, code, info) in ctrs {
            self.w32(src, ty);
            if ty == 2 {
                self.w32(src, code as u32);
                self.w32(src, (code >> 32) as u32);
            } else {
                self.w32(src, code as u32);
            }
            self.w32(src, info);
        }
    }
    fn addr(&mut self, src: u16, a: u64) {
        if a >> 32 == 0 {
            self.w32(src, a as u32);
        } else {
            self.w32(src, a as u32 | 1);
            self.w32(src, (a >> 32) as u32);
        }
    }
    fn count(&mut self, src: u16, v: u64) {
        self.w32(src, v as u32);
        if v >> 32 != 0 {
            self.w16(src, (v >> 32) as u16);
        }
    }
}

/// cycles: general event 1, CSR 0xc00, 64 bits; instret: general 2, 0xc02.
const CYCLES: (u32, u32, u64, u32) = (0, 0, 1, 0xc00 | (63 << 12));
const INSTRET: (u32, u32, u64, u32) = (2, 0, 2, 0xc02 | (63 << 12));
/// A raw event on hpmcounter3, 40 bits wide.
const RAW3: (u32, u32, u64, u32) = (3, 2, 0x1_0000_0042, 0xc03 | (39 << 12));

#[derive(Default)]
struct Got {
    headers: Vec<HeaderInfo>,
    records: Vec<Record>,
    errors: Vec<hpmtrace::decode::DecodeError>,
    stats: Stats,
}

/// One source, a full timestamp of 1, then a Raw header with one counter
/// (cycles).
fn raw_cycles_trace() -> Trace {
    let mut t = Trace::new(0);
    t.ict_ts(0, 1);
    t.header(0, 0, &[CYCLES]);
    t
}

fn decode(bytes: &[u8], src_bits: u8) -> Got {
    let cfg = DecodeConfig {
        channel: 6,
        nexus: NexusConfig {
            src_bits,
            timestamp_bits: 40,
        },
    };
    let mut g = Got::default();
    let stats = decode_stream(
        bytes,
        cfg,
        &mut |o| match o {
            Output::Header(h) => g.headers.push(*h),
            Output::Record(r) => g.records.push(r.clone()),
            Output::Error(e) => g.errors.push(e),
        },
        &mut |_| {},
    );
    g.stats = stats;
    g
}

fn vals(r: &Record) -> Vec<(u8, u64)> {
    r.counters.iter().map(|c| (c.index, c.reading)).collect()
}

// ------------------------------------------------------------- decoding

#[test]
fn raw_manual_records_with_timestamps_and_a_48_bit_counter() {
    let mut t = Trace::new(0);
    t.ict_ts(0, 1000);
    t.header(0, 0, &[CYCLES, INSTRET, RAW3]);
    t.w8_at(0, 2, 1010);
    t.addr(0, 0x8000_1234);
    t.count(0, 100);
    t.count(0, 0xabcd_0000_0007); // 16-bit high part
    t.count(0, 5);
    t.w8_at(0, 2, 1020);
    t.addr(0, 0x3f_8000_2000); // needs a high word
    t.count(0, 250);
    t.count(0, 0xabcd_0000_0010);
    t.count(0, 0xff_ffff_fff0); // last counter of the trace: kept
    let g = decode(&t.out, 0);
    assert!(g.errors.is_empty(), "{:?}", g.errors);
    assert_eq!(g.headers.len(), 1);
    let h = &g.headers[0].header;
    assert_eq!(h.count_type, CountType::Raw);
    assert_eq!(h.mask(), 0b1101);
    assert_eq!(
        h.counters[3].unwrap().event,
        Event::Raw {
            event_data: 0x1_0000_0042
        }
    );
    assert_eq!(h.counters[3].unwrap().info.width, 40);
    assert_eq!(g.records.len(), 2);
    let r0 = &g.records[0];
    assert_eq!(r0.kind, RecordType::Manual);
    assert_eq!(r0.addr, 0x8000_1234);
    assert_eq!(r0.timestamp, Some(1010));
    assert_eq!(vals(r0), vec![(0, 100), (2, 0xabcd_0000_0007), (3, 5)]);
    assert_eq!(
        r0.counters[0].delta, None,
        "first Raw reading has no predecessor"
    );
    let r1 = &g.records[1];
    assert_eq!(r1.addr, 0x3f_8000_2000);
    assert_eq!(r1.timestamp, Some(1020));
    assert_eq!(
        vals(r1),
        vec![(0, 250), (2, 0xabcd_0000_0010), (3, 0xff_ffff_fff0)]
    );
    assert_eq!(r1.counters[0].delta, Some(150));
    assert_eq!(r1.counters[1].delta, Some(9));
    assert_eq!(g.stats.records, 2);
}

#[test]
fn delta_xor_enter_exit_follows_sifives_decoder() {
    // Function 0x1000 called from 0x2000, then returns to it.
    let (f, caller) = (0x1000u64, 0x2000u64);
    let mut t = Trace::new(0);
    t.ict_ts(0, 50);
    t.header(0, 2, &[CYCLES]);
    // Enter: addresses chained by XOR from 0; counter XOR from 0.
    t.w8_at(0, 0, 60);
    t.addr(0, f);
    t.addr(0, f ^ caller);
    t.count(0, 1000);
    // Exit: chain continues from the caller address.
    t.w8_at(0, 1, 70);
    t.addr(0, caller ^ f);
    t.addr(0, f ^ caller);
    t.count(0, 1000 ^ 1700);
    let g = decode(&t.out, 0);
    assert!(g.errors.is_empty(), "{:?}", g.errors);
    assert_eq!(g.records.len(), 2);
    assert_eq!(g.records[0].kind, RecordType::FuncEnter);
    assert_eq!((g.records[0].addr, g.records[0].addr2), (f, Some(caller)));
    assert_eq!(g.records[1].kind, RecordType::FuncExit);
    assert_eq!((g.records[1].addr, g.records[1].addr2), (f, Some(caller)));
    assert_eq!(g.records[0].counters[0].reading, 1000);
    assert_eq!(g.records[1].counters[0].reading, 1700);
    assert_eq!(g.records[1].counters[0].delta, Some(700));
    assert_eq!(g.records[1].counters[0].recorded, 1000 ^ 1700);
}

#[test]
fn delta_counts_accumulate_and_wrap_at_the_declared_width() {
    let mut t = Trace::new(0);
    t.ict_ts(0, 1);
    // A 32-bit counter.
    t.header(0, 1, &[(4, 0, 4, 0xc04 | (31 << 12))]);
    for d in [10u64, 20, 0xffff_fff0] {
        t.w8_at(0, 3, 2);
        t.addr(0, 0x400);
        t.count(0, d);
    }
    let g = decode(&t.out, 0);
    assert!(g.errors.is_empty(), "{:?}", g.errors);
    let r: Vec<_> = g.records.iter().map(|r| r.counters[0]).collect();
    assert_eq!(r.len(), 3);
    assert_eq!((r[0].reading, r[0].delta), (10, Some(10)));
    assert_eq!((r[1].reading, r[1].delta), (30, Some(20)));
    // 30 + 0xfffffff0 wraps the 32-bit counter.
    assert_eq!((r[2].reading, r[2].delta), (14, Some(0xffff_fff0)));
    assert_eq!(g.records[0].kind, RecordType::Isr);
}

#[test]
fn header_resent_mid_trace_and_all_three_count_types_in_one_file() {
    let mut t = raw_cycles_trace();
    t.w8_at(0, 2, 2);
    t.addr(0, 0x100);
    t.count(0, 7);
    // Trace off/on: new header with other counters and count type.
    t.header(0, 1, &[CYCLES, INSTRET]);
    t.w8_at(0, 2, 3);
    t.addr(0, 0x200);
    t.count(0, 5);
    t.count(0, 6);
    t.header(0, 2, &[INSTRET]);
    t.w8_at(0, 2, 4);
    t.addr(0, 0x300); // XOR with 0: plain
    t.count(0, 9);
    t.w8_at(0, 2, 5);
    t.addr(0, 0x300 ^ 0x340);
    t.count(0, 9 ^ 12);
    let g = decode(&t.out, 0);
    assert!(g.errors.is_empty(), "{:?}", g.errors);
    let types: Vec<_> = g.headers.iter().map(|h| h.header.count_type).collect();
    assert_eq!(
        types,
        vec![CountType::Raw, CountType::Delta, CountType::DeltaXor]
    );
    let got: Vec<_> = g
        .records
        .iter()
        .map(|r| (r.addr, vals(r), r.count_type))
        .collect();
    assert_eq!(
        got,
        vec![
            (0x100, vec![(0, 7)], CountType::Raw),
            (0x200, vec![(0, 5), (2, 6)], CountType::Delta),
            (0x300, vec![(2, 9)], CountType::DeltaXor),
            (0x340, vec![(2, 12)], CountType::DeltaXor),
        ]
    );
}

#[test]
fn cores_are_separated_by_the_nexus_source_field() {
    let mut t = Trace::new(2);
    t.ict_ts(0, 100);
    t.ict_ts(3, 900);
    t.header(0, 0, &[CYCLES]);
    t.header(3, 2, &[INSTRET]);
    // Interleave writes of the two cores message by message.
    t.w8_at(0, 2, 110);
    t.w8_at(3, 2, 910);
    t.addr(3, 0x3000);
    t.addr(0, 0x1000);
    t.count(0, 11);
    t.count(3, 33);
    t.w8(0, 2);
    t.addr(0, 0x1004);
    t.count(0, 12);
    let g = decode(&t.out, 2);
    assert!(g.errors.is_empty(), "{:?}", g.errors);
    let mut got: Vec<_> = g
        .records
        .iter()
        .map(|r| (r.src, r.addr, vals(r), r.timestamp))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            (0, 0x1000, vec![(0, 11)], Some(110)),
            (0, 0x1004, vec![(0, 12)], Some(110)),
            (3, 0x3000, vec![(2, 33)], Some(910)),
        ]
    );
}

#[test]
fn other_itc_channels_are_ignored() {
    let mut t = raw_cycles_trace();
    t.w8(0, 2);
    // A printf on channel 0 lands in the middle of the record.
    t.chan = 0;
    t.w32(0, 0x6c6c_6568);
    t.w8(0, 2);
    t.chan = 6;
    t.addr(0, 0x100);
    t.count(0, 3);
    let g = decode(&t.out, 0);
    assert!(g.errors.is_empty(), "{:?}", g.errors);
    assert_eq!(g.records.len(), 1);
    assert_eq!(vals(&g.records[0]), vec![(0, 3)]);
    assert_eq!(g.stats.other_channel_writes, 2);
}

#[test]
fn no_header_means_no_records_and_no_error() {
    let mut t = Trace::new(0);
    t.ict_ts(0, 1);
    t.w8(0, 2);
    t.addr(0, 0x100);
    t.count(0, 3);
    let g = decode(&t.out, 0);
    assert!(g.records.is_empty());
    assert!(g.headers.is_empty());
    assert!(g.errors.is_empty());
    assert_eq!(g.stats.skipped_writes, 3);
}

#[test]
fn timestamps_before_the_first_full_one_are_unknown() {
    let mut t = Trace::new(0);
    t.header(0, 0, &[]);
    t.w8(0, 2);
    t.addr(0, 0x10);
    t.ict_ts(0, 500);
    t.w8_at(0, 2, 510);
    t.addr(0, 0x20);
    let g = decode(&t.out, 0);
    assert_eq!(g.records.len(), 2);
    assert_eq!(g.records[0].timestamp, None);
    assert_eq!(g.records[1].timestamp, Some(510));
    assert!(g.records[1].counters.is_empty());
}

fn manual_trace(count_type: u8, n: u64) -> (Trace, Vec<usize>) {
    let mut t = Trace::new(0);
    t.ict_ts(0, 1);
    t.header(0, count_type, &[CYCLES, INSTRET]);
    let mut starts = vec![];
    let (mut pa, mut p0, mut p1) = (0u64, 0u64, 0u64);
    for i in 0..n {
        starts.push(t.out.len());
        let (a, c0, c1) = (0x8000_0000 + 4 * i, 1000 * (i + 1), (1 << 33) + 3 * i);
        t.w8_at(0, 2, 10 + i);
        match count_type {
            2 => {
                t.addr(0, a ^ pa);
                t.count(0, c0 ^ p0);
                t.count(0, c1 ^ p1);
            }
            _ => {
                t.addr(0, a);
                t.count(0, c0);
                t.count(0, c1);
            }
        }
        (pa, p0, p1) = (a, c0, c1);
    }
    (t, starts)
}

#[test]
fn truncated_at_every_byte_never_panics_and_keeps_complete_records() {
    let (t, starts) = manual_trace(0, 6);
    for cut in 0..=t.out.len() {
        let g = decode(&t.out[..cut], 0);
        // Records whose bytes are all present are decoded (the last one
        // completes at the end of the input).
        let complete = starts.iter().skip(1).filter(|&&s| s <= cut).count();
        assert!(
            g.records.len() >= complete,
            "cut {cut}: {} < {complete}",
            g.records.len()
        );
        assert!(g.records.len() <= complete + 1);
        for (i, r) in g.records.iter().enumerate() {
            assert_eq!(r.addr, 0x8000_0000 + 4 * i as u64);
        }
        for e in &g.errors {
            assert!(e.offset <= cut as u64, "cut {cut}: offset {}", e.offset);
        }
    }
}

#[test]
fn corrupted_byte_is_reported_at_its_offset_and_raw_resumes_at_the_next_record() {
    let (mut t, starts) = manual_trace(0, 5);
    // Make a byte inside record 2 carry the reserved MSEO value.
    let at = starts[2] + 4;
    t.out[at] = (t.out[at] & !3) | 2;
    let g = decode(&t.out, 0);
    assert!(!g.errors.is_empty());
    let e = &g.errors[0];
    assert!(matches!(
        e.kind,
        DecodeErrorKind::Framing(NexusErrorKind::ReservedMseo)
    ));
    // The error names the message that holds the bad byte.
    assert!(
        e.offset as usize <= at && at < e.offset as usize + 12,
        "{e}"
    );
    assert!(e.to_string().contains(&format!("byte offset {}", e.offset)));
    let addrs: Vec<_> = g.records.iter().map(|r| r.addr & 0xff).collect();
    assert_eq!(addrs, vec![0, 4, 12, 16], "record 2 lost, 3 and 4 decoded");
}

#[test]
fn corrupted_delta_xor_resumes_at_the_next_header() {
    let (mut t, starts) = manual_trace(2, 4);
    let at = starts[1] + 3;
    t.out[at] = (t.out[at] & !3) | 2;
    // Trace on again: a new header, one record.
    t.header(0, 2, &[CYCLES]);
    t.w8(0, 2);
    t.addr(0, 0x9000);
    t.count(0, 77);
    let g = decode(&t.out, 0);
    assert!(g.errors.iter().any(|e| e.resume == Resume::NextHeader));
    let got: Vec<_> = g.records.iter().map(|r| (r.addr, vals(r))).collect();
    assert_eq!(
        got,
        vec![
            (0x8000_0000, vec![(0, 1000), (2, 1 << 33)]),
            (0x9000, vec![(0, 77)]),
        ]
    );
}

#[test]
fn a_wrong_write_size_is_an_error_with_offset_and_resync() {
    let mut t = raw_cycles_trace();
    t.w8(0, 2);
    let bad = t.out.len();
    t.w16(0, 5); // an address must be 32-bit
    t.w8(0, 2);
    t.addr(0, 0x40);
    t.count(0, 1);
    let g = decode(&t.out, 0);
    assert_eq!(g.errors.len(), 1);
    assert_eq!(g.errors[0].offset, bad as u64);
    assert!(
        g.errors[0]
            .to_string()
            .contains("expected a 32-bit address word"),
        "{}",
        g.errors[0]
    );
    assert_eq!(g.records.len(), 1);
    assert_eq!(g.records[0].addr, 0x40);
}

#[test]
fn random_garbage_never_panics() {
    // xorshift, deterministic.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for len in [0usize, 1, 7, 100, 5000] {
        for _ in 0..20 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            for sb in [0, 3] {
                let g = decode(&bytes, sb);
                for e in &g.errors {
                    assert!(e.offset <= len as u64);
                }
            }
        }
    }
}
