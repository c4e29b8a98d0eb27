//! The Nexus reader against the tests' reference encoder: fields across
//! slices, SRC sharing a slice with the next field, the same messages
//! and errors on clean and damaged streams whatever the reads' sizes; a
//! field too long for 64 bits; the timestamp chain.

use hpmtrace::nexus::read::{
    DataAcquisition, Located, Message, MessageReader, NexusError, NexusErrorKind, TimestampTracker,
    MAX_MESSAGE_BYTES,
};
use hpmtrace::nexus::NexusConfig;
use std::io::{self, Read};

mod common;
use common::reference_encoder::encode_message;

fn one(bytes: &[u8], cfg: NexusConfig) -> Vec<Result<Located, NexusError>> {
    MessageReader::new(bytes, cfg).collect()
}

#[test]
fn var_field_spans_slices_and_ends_at_boundary() {
    // TCODE 7, IDTAG 0x18 (one slice), DQDATA 0x70657266 (6 slices).
    let m = Message::DataAcquisition(DataAcquisition {
        src: 0,
        idtag: 0x18,
        data: 0x7065_7266,
        timestamp: None,
    });
    let out = encode_message(&m, &NexusConfig::default())
        .as_slice()
        .to_vec();
    assert_eq!(out.len(), 1 + 1 + 6);
    assert_eq!(out[0], 7 << 2);
    assert_eq!(out[1], (0x18 << 2) | 1);
    assert_eq!(out.last().unwrap() & 3, 3);
    let got = one(&out, NexusConfig::default());
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].as_ref().unwrap().message, m);
}

#[test]
fn src_field_shares_a_slice_with_the_next_var_field() {
    let cfg = NexusConfig {
        src_bits: 2,
        timestamp_bits: 40,
    };
    let m = Message::DataAcquisition(DataAcquisition {
        src: 3,
        idtag: 0x1b,
        data: 2,
        timestamp: Some(0x12345),
    });
    let out = encode_message(&m, &cfg).as_slice().to_vec();
    // slice 1: SRC=3 in bits 0-1, IDTAG low 4 bits (0xb) in bits 2-5.
    assert_eq!(out[1] >> 2, 3 | (0xb << 2));
    assert_eq!(out[1] & 3, 0, "IDTAG continues in the next slice");
    let got = one(&out, cfg);
    assert_eq!(got[0].as_ref().unwrap().message, m);
}

/// Hands out its bytes `chunk` at a time, so messages straddle the
/// reader's refills in every way.
struct Chunked<'a> {
    bytes: &'a [u8],
    chunk: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.chunk.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

#[test]
fn chunked_and_whole_reads_agree_on_clean_and_corrupt_streams() {
    let cfg = NexusConfig {
        src_bits: 1,
        timestamp_bits: 40,
    };
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..40 {
        let mut bytes = Vec::new();
        let mut sent = Vec::new();
        for _ in 0..300 {
            let r = next();
            let m = Message::DataAcquisition(DataAcquisition {
                src: (r & 1) as u16,
                idtag: (r >> 1) as u32 & 0x3f,
                data: (r >> 8) as u32 >> (r % 32),
                timestamp: (r & 6 != 0).then_some(r >> 40),
            });
            bytes.extend_from_slice(encode_message(&m, &cfg).as_slice());
            sent.push(m);
            if r % 7 == 0 {
                bytes.push(0x03); // idle byte
            }
        }
        // From round 10 on: flipped bits (reserved MSEO, lost ends).
        for _ in 0..(round / 10) * 20 {
            let r = next() as usize;
            let at = r % bytes.len();
            bytes[at] ^= 1 << ((r >> 32) % 8);
        }
        if round % 3 == 0 {
            // A run with no end-of-message byte: too long for a message.
            let at = next() as usize % bytes.len();
            bytes.splice(at..at, std::iter::repeat_n(0x04, MAX_MESSAGE_BYTES + 3));
        }
        if round % 4 == 1 {
            bytes.truncate(bytes.len() - 2); // ends inside a message
        }
        let whole = one(&bytes, cfg);
        assert!(whole.iter().filter(|m| m.is_ok()).count() > 100);
        if round < 10 && round % 3 != 0 && round % 4 != 1 {
            // Undamaged: exactly the messages written, whatever the reads.
            let got: Vec<Message> = whole.iter().map(|m| m.as_ref().unwrap().message).collect();
            assert_eq!(got, sent, "round {round}");
        }
        for chunk in [1, 2, 5, 64, 4096] {
            let got: Vec<_> = MessageReader::new(
                Chunked {
                    bytes: &bytes,
                    chunk,
                },
                cfg,
            )
            .collect();
            assert_eq!(got, whole, "round {round}, {chunk}-byte reads");
        }
    }
}

#[test]
fn oversized_field_is_an_error_not_a_panic() {
    let mut bytes = vec![7 << 2];
    bytes.extend(std::iter::repeat_n(0xfc, 12));
    bytes.push(0xfd);
    bytes.push(0x07);
    let got = one(&bytes, NexusConfig::default());
    assert!(matches!(
        got[0].as_ref().unwrap_err().kind,
        NexusErrorKind::FieldOverflow("IDTAG")
    ));
}

#[test]
fn timestamps_xor_and_wrap() {
    let mut t = TimestampTracker::new(8);
    assert_eq!(t.update(0, Some(5), false), None, "no full timestamp yet");
    assert_eq!(t.update(0, Some(0xf0), true), Some(0xf0));
    assert_eq!(t.update(0, Some(0xf0 ^ 0xf4), false), Some(0xf4));
    // 0xf4 -> 0x104 wraps the 8-bit counter: low bits 0x04.
    assert_eq!(t.update(0, Some(0xf4 ^ 0x04), false), Some(0x104));
    assert_eq!(t.update(0, None, false), Some(0x104));
    assert_eq!(t.update(1, Some(1), false), None, "per source");
}

#[test]
fn timestamps_broken_chain_and_nearest_sync() {
    let mut t = TimestampTracker::new(8);
    assert_eq!(t.update(0, Some(0x10), true), Some(0x10));
    // 0x10 -> 0x90 is half the range: no clean step, the chain breaks.
    assert_eq!(t.update(0, Some(0x10 ^ 0x90), false), None);
    assert_eq!(t.update(0, Some(1), false), None, "until a sync");
    assert_eq!(t.update(0, None, false), None);
    // A sync 0x85 ahead (or 0x7b behind, before time 0): ahead.
    assert_eq!(t.update(0, Some(0x95), true), Some(0x95));
    assert_eq!(t.update(0, Some(0x95 ^ 0x05), false), Some(0x105));
    // A sync 0x15 behind the last time: taken as behind.
    assert_eq!(t.update(0, Some(0xf0), true), Some(0xf0));
    // A lost message: no time until the next sync, which is believed.
    t.forget();
    assert_eq!(t.update(0, Some(0xf0 ^ 0xf1), false), None);
    assert_eq!(t.update(0, None, false), None);
    assert_eq!(t.update(0, Some(0xf2), true), Some(0xf2));
    assert_eq!(t.update(0, Some(0xf2 ^ 0xf3), false), Some(0xf3));
}
