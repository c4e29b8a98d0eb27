//! The tests' reference encoder of the Nexus format (as
//! `hpmtrace::nexus` describes it), written apart from the library's
//! writer and as plainly as possible: fields packed bit by bit, one
//! message at a time. Tests compare the library's writer with it and
//! build the reader's inputs with it.

use hpmtrace::nexus::read::{DataAcquisition, Ict, Message};
use hpmtrace::nexus::{
    NexusConfig, ICT_CKSRC_CONTROL, MAX_SOURCES, MSEO_END_FIELD, MSEO_END_MESSAGE, SYNC_PERIOD,
    TCODE_DATA_ACQUISITION, TCODE_ICT, TCODE_ICT_SYNC,
};

/// Longest message this encoder makes room for.
const MAX_MESSAGE_BYTES: usize = 64;

/// The bytes of one encoded message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoded {
    bytes: [u8; MAX_MESSAGE_BYTES],
    len: usize,
}

impl Encoded {
    /// The message bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Packs fields into slices; the writing half of the framing.
struct FieldWriter {
    out: Encoded,
    bit: usize,
}

impl FieldWriter {
    fn new() -> Self {
        FieldWriter {
            out: Encoded {
                bytes: [0; MAX_MESSAGE_BYTES],
                len: 0,
            },
            bit: 0,
        }
    }

    fn ensure(&mut self, slices: usize) {
        // Our messages are at most ~40 bytes; the array has room for 64.
        self.out.len = self.out.len.max(slices);
    }

    fn fixed(&mut self, width: u8, value: u64) {
        for k in 0..width as usize {
            let at = self.bit + k;
            self.ensure(at / 6 + 1);
            if (value >> k) & 1 != 0 {
                self.out.bytes[at / 6] |= 1 << (2 + at % 6);
            }
        }
        self.bit += width as usize;
    }

    fn var(&mut self, value: u64, last: bool) {
        let mut i = self.bit / 6;
        let b = self.bit % 6;
        self.ensure(i + 1);
        self.out.bytes[i] |= ((value << (2 + b)) & 0xfc) as u8;
        let mut rest = value >> (6 - b);
        while rest != 0 {
            i += 1;
            self.ensure(i + 1);
            self.out.bytes[i] |= ((rest & 0x3f) << 2) as u8;
            rest >>= 6;
        }
        self.out.bytes[i] |= if last {
            MSEO_END_MESSAGE
        } else {
            MSEO_END_FIELD
        };
        self.bit = (i + 1) * 6;
    }
}

/// Encodes one message (minimal-length variable fields).
///
/// `SRC` is truncated to `cfg.src_bits`; an ICT's CKDATA1 is written iff
/// present. [`Message::Other`] has no contents to encode and yields just
/// its TCODE and SRC closed as a message.
pub fn encode_message(m: &Message, cfg: &NexusConfig) -> Encoded {
    let mut w = FieldWriter::new();
    let src_bits = cfg.src_bits.min(8);
    let (tcode, src) = match m {
        Message::DataAcquisition(d) => (TCODE_DATA_ACQUISITION, d.src),
        Message::Ict(i) => (if i.sync { TCODE_ICT_SYNC } else { TCODE_ICT }, i.src),
        Message::Other { tcode, src } => (*tcode & 0x3f, *src),
    };
    w.fixed(6, tcode as u64);
    w.fixed(src_bits, src as u64);
    match m {
        Message::DataAcquisition(d) => {
            w.var(d.idtag as u64, false);
            w.var(d.data as u64, d.timestamp.is_none());
            if let Some(t) = d.timestamp {
                w.var(t, true);
            }
        }
        Message::Ict(i) => {
            w.fixed(4, i.cksrc as u64);
            w.fixed(2, i.ckdf as u64);
            w.var(i.ckdata0, i.ckdata1.is_none() && i.timestamp.is_none());
            if let Some(d1) = i.ckdata1 {
                w.var(d1, i.timestamp.is_none());
            }
            if let Some(t) = i.timestamp {
                w.var(t, true);
            }
        }
        Message::Other { .. } => {
            let last = w.out.len.max(1) - 1;
            w.ensure(last + 1);
            w.out.bytes[last] |= MSEO_END_MESSAGE;
        }
    }
    w.out
}

/// Writes ITC stimulus writes as a Nexus byte stream, the way a SiFive trace
/// encoder with timestamps on does (`hpmtrace::nexus` describes it): an
/// ICT-with-sync control message with the full timestamp first (per
/// source) and again after every `SYNC_PERIOD` messages, then Data
/// Acquisition messages whose timestamps are XORed with the previous one.
/// Each message is framed on its own by [`encode_message`], field by field.
#[derive(Debug, Clone)]
pub struct MessageWriter {
    cfg: NexusConfig,
    /// Per source: the previous message's timestamp and the messages left
    /// before the next sync (0: sync first).
    chains: Vec<(u64, u32)>,
}

impl MessageWriter {
    /// A writer for the given configuration.
    pub fn new(cfg: NexusConfig) -> Self {
        MessageWriter {
            cfg,
            chains: vec![(0, 0); MAX_SOURCES],
        }
    }

    fn mask(&self) -> u64 {
        (1u64 << self.cfg.timestamp_bits.clamp(1, 63)) - 1
    }

    /// Emits an ICT-with-sync control message carrying `time` in full.
    pub fn sync_timestamp(&mut self, src: u16, time: u64, out: &mut impl FnMut(&[u8])) {
        let msg = Message::Ict(Ict {
            sync: true,
            src,
            cksrc: ICT_CKSRC_CONTROL,
            ckdf: 0,
            ckdata0: 0,
            ckdata1: None,
            timestamp: Some(time & self.mask()),
        });
        out(encode_message(&msg, &self.cfg).as_slice());
        self.chains[src as usize % MAX_SOURCES] = (time & self.mask(), SYNC_PERIOD);
    }

    /// Emits the Data Acquisition message of one stimulus write. With a
    /// `time`, a full timestamp is sent first if this source has none yet.
    pub fn data_acquisition(
        &mut self,
        src: u16,
        idtag: u32,
        data: u32,
        time: Option<u64>,
        out: &mut impl FnMut(&[u8]),
    ) {
        let slot = src as usize % MAX_SOURCES;
        let timestamp = time.map(|t| {
            if self.chains[slot].1 == 0 {
                self.sync_timestamp(src, t, out);
            }
            let t = t & self.mask();
            let (last, left) = &mut self.chains[slot];
            let field = *last ^ t;
            (*last, *left) = (t, *left - 1);
            field
        });
        let msg = Message::DataAcquisition(DataAcquisition {
            src,
            idtag,
            data,
            timestamp,
        });
        out(encode_message(&msg, &self.cfg).as_slice());
    }
}
