//! A software trace encoder: ITC writes framed as Nexus messages, the bytes
//! a SiFive trace sink holds and a `.rtd` file contains.
//!
//! Per source (one per traced thread or core), the stream is:
//! 1. an In-Circuit Trace message with sync (TCODE 35) with CKSRC 0
//!    (control), CKDF 0, CKDATA0 0 and the full timestamp: without this
//!    message a decoder cannot turn the compressed timestamps into times;
//! 2. one Data Acquisition message (TCODE 7) per ITC write: SRC (if
//!    configured), IDTAG (variable), DQDATA (variable), TIMESTAMP
//!    (variable, XORed with the previous timestamp of the same source).
//!
//! Framing: each byte is MDO\[7:2\] | MSEO\[1:0\]; fields are packed LSB
//! first into the 6-bit slices, fixed fields may end mid-slice, a variable
//! field ends at a slice boundary with MSEO 01, the message's last field
//! with MSEO 11. This is the same wire format as [`crate::nexus`] writes and
//! parses; it is re-implemented here without allocation because it runs on
//! the hot path (every function entry and exit) and in `no_std` builds, and
//! the tests check both produce identical bytes.

use crate::format::{width_mask, ItcWrite};
use crate::sink::{ByteSink, Sink, Stopped};

/// TCODE of a Data Acquisition message.
pub const TCODE_DATA_ACQUISITION: u8 = 7;
/// TCODE of an In-Circuit Trace message with sync (full timestamp).
pub const TCODE_ICT_SYNC: u8 = 35;
/// Default timestamp width of SiFive trace encoders.
pub const DEFAULT_TIMESTAMP_BITS: u8 = 40;

const MSEO_END_FIELD: u8 = 0b01;
const MSEO_END_MESSAGE: u8 = 0b11;

/// How the stream is framed (the decoder must be told the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtdConfig {
    /// ITC channel the writes are on (IDTAG = channel*4 + size offset).
    pub channel: u8,
    /// Width of the SRC field; 0 for a single source.
    pub src_bits: u8,
    /// Width of the timestamp counter; timestamps are taken modulo 2^bits.
    pub timestamp_bits: u8,
}

impl Default for RtdConfig {
    fn default() -> Self {
        RtdConfig {
            channel: crate::format::DEFAULT_CHANNEL,
            src_bits: 0,
            timestamp_bits: DEFAULT_TIMESTAMP_BITS,
        }
    }
}

impl RtdConfig {
    /// SRC bits needed to tell `sources` sources apart (0 for one).
    pub const fn src_bits_for(sources: u32) -> u8 {
        if sources <= 1 {
            0
        } else {
            (32 - (sources - 1).leading_zeros()) as u8
        }
    }
}

/// One message under construction, on the stack. The longest message is a
/// DA with SRC (16) + IDTAG (32) + DQDATA (32) + TIMESTAMP (64) bits plus
/// 6 of TCODE: under 30 slices.
struct Packer {
    buf: [u8; 40],
    bit: usize,
}

impl Packer {
    #[inline]
    fn new() -> Self {
        Packer { buf: [0; 40], bit: 0 }
    }

    #[inline]
    fn fixed(&mut self, width: u8, value: u64) {
        let mut v = value & width_mask(width);
        let mut left = width as usize;
        while left > 0 {
            let slot = self.bit / 6;
            let off = self.bit % 6;
            let take = (6 - off).min(left);
            self.buf[slot] |= (((v & ((1 << take) - 1)) as u8) << off) << 2;
            v >>= take;
            left -= take;
            self.bit += take;
        }
    }

    /// A variable field holding `value` (minimal length), closed with `mseo`.
    #[inline]
    fn var(&mut self, value: u64, mseo: u8) {
        let mut slot = self.bit / 6;
        let off = self.bit % 6;
        self.buf[slot] |= ((value << (2 + off)) & 0xfc) as u8;
        let mut rest = if off == 0 { value >> 6 } else { value >> (6 - off) };
        while rest != 0 {
            slot += 1;
            self.buf[slot] |= ((rest & 0x3f) as u8) << 2;
            rest >>= 6;
        }
        self.buf[slot] |= mseo;
        self.bit = (slot + 1) * 6;
    }

    #[inline]
    fn bytes(&self) -> &[u8] {
        &self.buf[..self.bit / 6]
    }
}

/// Frames ITC writes of one source as Nexus messages into a [`ByteSink`].
pub struct RtdWriter<B> {
    cfg: RtdConfig,
    src: u16,
    last_ts: Option<u64>,
    out: B,
}

impl<B: ByteSink> RtdWriter<B> {
    /// A writer for source `src` (must fit `cfg.src_bits`; it is masked).
    pub fn new(cfg: RtdConfig, src: u16, out: B) -> Self {
        RtdWriter { cfg, src, last_ts: None, out }
    }

    /// The byte sink.
    pub fn inner(&self) -> &B {
        &self.out
    }

    /// Take the byte sink back.
    pub fn into_inner(self) -> B {
        self.out
    }

    /// The framing configuration.
    pub fn config(&self) -> RtdConfig {
        self.cfg
    }

    fn start(&self, tcode: u8) -> Packer {
        let mut p = Packer::new();
        p.fixed(6, tcode as u64);
        p.fixed(self.cfg.src_bits, self.src as u64);
        p
    }

    /// Emit the ICT control message with the full timestamp `ts`; later
    /// messages compress their timestamps against it.
    pub fn sync(&mut self, ts: u64) -> Result<(), Stopped> {
        let ts = ts & width_mask(self.cfg.timestamp_bits);
        let mut p = self.start(TCODE_ICT_SYNC);
        p.fixed(4, 0); // CKSRC: control
        p.fixed(2, 0); // CKDF: one data field
        p.var(0, MSEO_END_FIELD); // CKDATA0
        p.var(ts, MSEO_END_MESSAGE);
        self.out.put_bytes(p.bytes())?;
        self.last_ts = Some(ts);
        Ok(())
    }
}

impl<B: ByteSink> Sink for RtdWriter<B> {
    #[inline]
    fn put(&mut self, w: ItcWrite, ts: u64) -> Result<(), Stopped> {
        let ts = ts & width_mask(self.cfg.timestamp_bits);
        let prev = match self.last_ts {
            Some(p) => p,
            None => {
                self.sync(ts)?;
                ts
            }
        };
        let mut p = self.start(TCODE_DATA_ACQUISITION);
        p.var(w.idtag(self.cfg.channel).0 as u64, MSEO_END_FIELD);
        p.var(w.value as u64, MSEO_END_FIELD);
        p.var(prev ^ ts, MSEO_END_MESSAGE);
        self.out.put_bytes(p.bytes())?;
        self.last_ts = Some(ts);
        Ok(())
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use crate::sink::VecBuffer;

    #[test]
    fn da_message_bytes_by_hand() {
        // Channel 6, 8-bit write of 2, first timestamp 0x41, src_bits 0.
        let mut w = RtdWriter::new(RtdConfig::default(), 0, VecBuffer::with_capacity(64));
        w.put(ItcWrite::w8(2), 0x41).unwrap();
        w.put(ItcWrite::w8(1), 0x43).unwrap();
        let expect: &[u8] = &[
            // ICT sync: TCODE 35 = 0b100011
            35 << 2,
            // CKSRC(4)=0, CKDF(2)=0 fill the next slice
            0,
            // CKDATA0 = 0, end of field
            0b01,
            // TIMESTAMP 0x41 = 0b1_000001: slices 0x01, 0x01, end of message
            (0x01 << 2),
            (0x01 << 2) | 0b11,
            // DA: TCODE 7
            7 << 2,
            // IDTAG 0x1b = 0b011011: one slice, end of field
            (0x1b << 2) | 0b01,
            // DQDATA 2
            (2 << 2) | 0b01,
            // TIMESTAMP 0x41 ^ 0x41 = 0
            0b11,
            // second DA: data 1, timestamp 0x41 ^ 0x43 = 2
            7 << 2,
            (0x1b << 2) | 0b01,
            (1 << 2) | 0b01,
            (2 << 2) | 0b11,
        ];
        assert_eq!(w.inner().data(), expect);
    }

    #[test]
    fn src_bits_for_sources() {
        assert_eq!(RtdConfig::src_bits_for(1), 0);
        assert_eq!(RtdConfig::src_bits_for(2), 1);
        assert_eq!(RtdConfig::src_bits_for(3), 2);
        assert_eq!(RtdConfig::src_bits_for(4), 2);
        assert_eq!(RtdConfig::src_bits_for(5), 3);
    }
}
