//! The reader of the Nexus format ([`super`] describes it): messages
//! framed and parsed out of a byte stream ([`MessageReader`]), and their
//! timestamps turned into times ([`TimestampTracker`]).
//!
//! Only the two message kinds the performance trace needs are typed:
//! Data Acquisition and In-Circuit Trace. Every other TCODE is framed and
//! reported as [`Message::Other`], so instruction trace mixed into the
//! same buffer is skipped, not treated as corruption.

use super::{
    NexusConfig, MAX_SOURCES, MSEO_END_MESSAGE, MSEO_NORMAL, MSEO_RESERVED, TCODE_DATA_ACQUISITION,
    TCODE_ICT, TCODE_ICT_SYNC,
};
use core::fmt;
use std::io::{self, Read};

/// Longest message accepted, in bytes. The longest legal message here is an
/// ICT with two 64-bit data fields and a timestamp (about 40 bytes); a
/// longer run without an end-of-message byte is corruption.
pub const MAX_MESSAGE_BYTES: usize = 64;

/// A Data Acquisition message: one ITC stimulus register write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataAcquisition {
    /// Nexus source (core / trace encoder behind a funnel).
    pub src: u16,
    /// Byte offset of the stimulus write (channel*4 + 0, 2 or 3 by size).
    pub idtag: u32,
    /// The written data, not shifted.
    pub data: u32,
    /// TIMESTAMP field as sent (XORed with the previous one), if present.
    pub timestamp: Option<u64>,
}

/// An In-Circuit Trace message (TCODE 34 or 35).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ict {
    /// True for TCODE 35 (with sync: full timestamp).
    pub sync: bool,
    /// Nexus source.
    pub src: u16,
    /// Event source (0 = control).
    pub cksrc: u8,
    /// Data format: 0 one data field, 1 two.
    pub ckdf: u8,
    /// CKDATA0.
    pub ckdata0: u64,
    /// CKDATA1, present only when `ckdf == 1`.
    pub ckdata1: Option<u64>,
    /// TIMESTAMP field as sent, if present.
    pub timestamp: Option<u64>,
}

/// One framed Nexus message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    /// TCODE 7.
    DataAcquisition(DataAcquisition),
    /// TCODE 34 / 35.
    Ict(Ict),
    /// Any other TCODE: framed correctly, contents not interpreted.
    Other {
        /// The message's TCODE.
        tcode: u8,
        /// Its SRC field.
        src: u16,
    },
}

impl Message {
    /// The Nexus source of the message.
    pub fn src(&self) -> u16 {
        match self {
            Message::DataAcquisition(m) => m.src,
            Message::Ict(m) => m.src,
            Message::Other { src, .. } => *src,
        }
    }
}

/// What went wrong in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NexusErrorKind {
    /// A byte with the reserved MSEO value 0b10.
    ReservedMseo,
    /// A message continued past [`MAX_MESSAGE_BYTES`].
    MessageTooLong,
    /// The input ended inside a message.
    Truncated,
    /// A variable field had more than 64 significant bits.
    FieldOverflow(&'static str),
    /// The message ended before this field.
    MissingField(&'static str),
    /// The message has more fields than its TCODE allows.
    ExtraFields,
    /// A field value out of its range (e.g. IDTAG above 32 bits).
    BadField(&'static str),
    /// The underlying reader failed.
    Io(String),
}

/// A framing error with the byte offset of the message it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NexusError {
    /// Offset in the input of the first byte of the bad message.
    pub offset: u64,
    /// What was wrong.
    pub kind: NexusErrorKind,
}

impl fmt::Display for NexusErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ReservedMseo => write!(f, "reserved MSEO value 0b10 (corrupted byte)"),
            Self::MessageTooLong => write!(
                f,
                "no end-of-message byte within {MAX_MESSAGE_BYTES} bytes (corrupted data)"
            ),
            Self::Truncated => write!(f, "trace ends inside a message (truncated file)"),
            Self::FieldOverflow(n) => write!(f, "field {n} is longer than 64 bits"),
            Self::MissingField(n) => write!(f, "message ends before field {n}"),
            Self::ExtraFields => write!(f, "message has more fields than its TCODE allows"),
            Self::BadField(n) => write!(f, "field {n} is out of range"),
            Self::Io(e) => write!(f, "read error: {e}"),
        }
    }
}

impl fmt::Display for NexusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let offset = self.offset;
        write!(f, "byte offset {offset} (0x{offset:x}): {}", self.kind)
    }
}

impl std::error::Error for NexusError {}

/// Reads fields out of one framed message (slice bytes with MSEO bits).
struct FieldReader<'a> {
    bytes: &'a [u8],
    bit: usize,
    ended: bool,
}

impl<'a> FieldReader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        FieldReader {
            bytes,
            bit: 0,
            ended: false,
        }
    }

    fn fixed(&mut self, width: u8, name: &'static str) -> Result<u64, NexusErrorKind> {
        let mut value = 0u64;
        let mut done = 0usize;
        let width = width as usize;
        // Slice by slice: the bits of this field in each 6-bit slice.
        while done < width {
            let at = self.bit + done;
            let (slice, pos) = (at / 6, at % 6);
            let byte = *self
                .bytes
                .get(slice)
                .ok_or(NexusErrorKind::MissingField(name))?;
            let take = (6 - pos).min(width - done);
            let bits = ((byte >> (2 + pos)) as u64) & ((1u64 << take) - 1);
            value |= bits << done;
            done += take;
        }
        self.bit += width;
        // A fixed field that ends exactly on a slice closing the message
        // means no further fields follow.
        if width > 0 && self.bit.is_multiple_of(6) {
            let last = self.bytes[self.bit / 6 - 1];
            if last & 3 == MSEO_END_MESSAGE {
                self.ended = true;
            }
        }
        Ok(value)
    }

    fn var(&mut self, name: &'static str) -> Result<u64, NexusErrorKind> {
        if self.ended {
            return Err(NexusErrorKind::MissingField(name));
        }
        let mut i = self.bit / 6;
        // Bits of the first slice taken by earlier fields.
        let mut used = self.bit % 6;
        let (mut value, mut width) = (0u64, 0u32);
        loop {
            let byte = *self
                .bytes
                .get(i)
                .ok_or(NexusErrorKind::MissingField(name))?;
            let bits = u64::from(byte >> 2 >> used);
            if bits != 0 {
                if bits.leading_zeros() < width {
                    return Err(NexusErrorKind::FieldOverflow(name));
                }
                value |= bits << width;
            }
            width += 6 - used as u32;
            used = 0;
            i += 1;
            if byte & 3 != MSEO_NORMAL {
                self.ended = byte & 3 == MSEO_END_MESSAGE;
                self.bit = i * 6;
                return Ok(value);
            }
        }
    }

    fn optional_var(&mut self, name: &'static str) -> Result<Option<u64>, NexusErrorKind> {
        if self.ended {
            Ok(None)
        } else {
            self.var(name).map(Some)
        }
    }

    fn finish(&self) -> Result<(), NexusErrorKind> {
        if self.ended {
            Ok(())
        } else {
            Err(NexusErrorKind::ExtraFields)
        }
    }
}

/// Parses one framed message (from its first byte to its end-of-message
/// byte inclusive).
pub fn parse_message(bytes: &[u8], cfg: &NexusConfig) -> Result<Message, NexusErrorKind> {
    let mut r = FieldReader::new(bytes);
    let tcode = r.fixed(6, "TCODE")? as u8;
    let src = if cfg.src_bits > 0 {
        r.fixed(cfg.src_bits.min(8), "SRC")? as u16
    } else {
        0
    };
    match tcode {
        TCODE_DATA_ACQUISITION => {
            let idtag = r.var("IDTAG")?;
            let data = r.var("DQDATA")?;
            let timestamp = r.optional_var("TIMESTAMP")?;
            r.finish()?;
            Ok(Message::DataAcquisition(DataAcquisition {
                src,
                idtag: u32::try_from(idtag).map_err(|_| NexusErrorKind::BadField("IDTAG"))?,
                data: u32::try_from(data).map_err(|_| NexusErrorKind::BadField("DQDATA"))?,
                timestamp,
            }))
        }
        TCODE_ICT | TCODE_ICT_SYNC => {
            let cksrc = r.fixed(4, "CKSRC")? as u8;
            let ckdf = r.fixed(2, "CKDF")? as u8;
            let ckdata0 = r.var("CKDATA0")?;
            let ckdata1 = if ckdf == 1 {
                Some(r.var("CKDATA1")?)
            } else {
                None
            };
            let timestamp = r.optional_var("TIMESTAMP")?;
            r.finish()?;
            Ok(Message::Ict(Ict {
                sync: tcode == TCODE_ICT_SYNC,
                src,
                cksrc,
                ckdf,
                ckdata0,
                ckdata1,
                timestamp,
            }))
        }
        _ => Ok(Message::Other { tcode, src }),
    }
}

/// Streams messages out of a byte source, in constant memory.
/// Framing errors are reported once per bad stretch (with the byte offset)
/// and reading resumes at the byte after the next end-of-message byte, the
/// only resynchronisation point Nexus framing offers.
pub struct MessageReader<R> {
    src: R,
    cfg: NexusConfig,
    /// Input bytes `buf[pos..len]` not consumed yet; refilled so that a
    /// whole message is in it and parsed in place.
    buf: Box<[u8]>,
    pos: usize,
    len: usize,
    /// Offset of `buf[0]` in the input.
    base: u64,
    /// The input ended (or failed).
    eof: bool,
    /// The read error that ended the input, reported where the bytes
    /// before it run out.
    failed: Option<NexusError>,
}

/// A message with the offset of its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Located {
    /// Byte offset of the message in the input.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u32,
    /// The message.
    pub message: Message,
}

const READ_CHUNK: usize = 64 << 10;

impl<R: Read> MessageReader<R> {
    /// A reader over `src` with the given configuration.
    pub fn new(src: R, cfg: NexusConfig) -> Self {
        MessageReader {
            src,
            cfg,
            buf: vec![0u8; READ_CHUNK].into_boxed_slice(),
            pos: 0,
            len: 0,
            base: 0,
            eof: false,
            failed: None,
        }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Reads until `need` bytes are buffered from `pos` on (at most
    /// [`MAX_MESSAGE_BYTES`]) or the input ends.
    fn fill(&mut self, need: usize) {
        while self.len - self.pos < need && !self.eof {
            self.base += self.pos as u64;
            self.buf.copy_within(self.pos..self.len, 0);
            self.len -= self.pos;
            self.pos = 0;
            match self.src.read(&mut self.buf[self.len..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.eof = true;
                    self.failed = Some(NexusError {
                        offset: self.base + self.len as u64,
                        kind: NexusErrorKind::Io(e.to_string()),
                    });
                }
            }
        }
    }

    /// Consumes the bytes before the first whose MSEO `is` accepts; false
    /// when the input ends first.
    fn find(&mut self, is: impl Fn(u8) -> bool) -> bool {
        loop {
            if let Some(i) = self.buf[self.pos..self.len].iter().position(|&b| is(b & 3)) {
                self.pos += i;
                return true;
            }
            self.pos = self.len;
            if self.eof {
                return false;
            }
            self.fill(1);
        }
    }

    /// The input ran out: the read error that ended it if any, else `err`.
    fn ran_out(&mut self, err: Option<NexusError>) -> Option<Result<Located, NexusError>> {
        self.pos = self.len;
        self.failed.take().or(err).map(Err)
    }

    /// The next message, `None` at the end of the input.
    pub fn next_message(&mut self) -> Option<Result<Located, NexusError>> {
        // Skip idle bytes (end-of-message bytes between messages).
        if !self.find(|mseo| mseo != MSEO_END_MESSAGE) {
            return self.ran_out(None);
        }
        self.fill(MAX_MESSAGE_BYTES);
        let offset = self.offset();
        let window = &self.buf[self.pos..self.len.min(self.pos + MAX_MESSAGE_BYTES)];
        let end = window
            .iter()
            .position(|&b| matches!(b & 3, MSEO_RESERVED | MSEO_END_MESSAGE));
        let kind = match end {
            Some(end) if window[end] & 3 == MSEO_END_MESSAGE => {
                let bytes = &window[..=end];
                self.pos += end + 1;
                return Some(
                    parse_message(bytes, &self.cfg)
                        .map(|message| Located {
                            offset,
                            len: bytes.len() as u32,
                            message,
                        })
                        .map_err(|kind| NexusError { offset, kind }),
                );
            }
            Some(end) => {
                self.pos += end + 1;
                NexusErrorKind::ReservedMseo
            }
            None if window.len() == MAX_MESSAGE_BYTES => {
                self.pos += MAX_MESSAGE_BYTES;
                NexusErrorKind::MessageTooLong
            }
            None => {
                let kind = NexusErrorKind::Truncated;
                return self.ran_out(Some(NexusError { offset, kind }));
            }
        };
        // Resynchronise after the next end-of-message byte.
        if self.find(|mseo| mseo == MSEO_END_MESSAGE) {
            self.pos += 1;
        }
        Some(Err(NexusError { offset, kind }))
    }
}

impl<R: Read> Iterator for MessageReader<R> {
    type Item = Result<Located, NexusError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_message()
    }
}

/// Turns TIMESTAMP fields into absolute times, per source.
///
/// A Data Acquisition or ICT message's TIMESTAMP is XORed with the previous
/// message's time and taken as a step forward (a wrap of the counter when
/// the XOR gives a smaller value); a step of half the counter's range or
/// more cannot happen in a clean trace and breaks the chain. A full timestamp (sync message) is taken
/// as the nearest time to the previous one, up to half the counter's range
/// either way: a source's time is right again at every full timestamp even
/// after a corrupted TIMESTAMP field sent it far off, and a clean trace
/// only has to have less than 2^(bits-1) ticks between two messages of a
/// source. After a lost message ([`Self::forget`]) the XOR chain is broken
/// and times are unknown until the next full timestamp.
#[derive(Debug, Clone)]
pub struct TimestampTracker {
    bits: u8,
    /// Per source: last absolute time, and whether the XOR chain from it
    /// is intact. `None` until a full timestamp.
    last: [Option<(u64, bool)>; MAX_SOURCES],
}

impl TimestampTracker {
    /// A tracker for a `bits`-wide timestamp counter.
    pub fn new(bits: u8) -> Self {
        TimestampTracker {
            bits: bits.clamp(1, 63),
            last: [None; MAX_SOURCES],
        }
    }

    /// Feeds a message's timestamp; returns the message's absolute time
    /// (the last known one if it has no TIMESTAMP field), or `None` while
    /// the source has no trustworthy time (no full timestamp yet, or none
    /// since a lost message).
    pub fn update(&mut self, src: u16, field: Option<u64>, full: bool) -> Option<u64> {
        let mask = (1u64 << self.bits) - 1;
        let slot = &mut self.last[src as usize % MAX_SOURCES];
        let Some(field) = field else {
            return slot.filter(|s| s.1).map(|s| s.0);
        };
        let field = field & mask;
        let now = if full {
            match *slot {
                None => field,
                Some((last, _)) => {
                    let ahead = field.wrapping_sub(last) & mask;
                    if ahead <= mask >> 1 {
                        last + ahead
                    } else {
                        // Behind by 2^bits - ahead (never before time 0).
                        last.checked_sub(mask - ahead + 1).unwrap_or(last + ahead)
                    }
                }
            }
        } else {
            let (last, true) = (*slot)? else {
                return None;
            };
            let low = (last & mask) ^ field;
            let ahead = low.wrapping_sub(last) & mask;
            if ahead > mask >> 1 {
                // Half the counter's range or more since the previous
                // message: no clean trace does that (see above), a flipped
                // TIMESTAMP bit does. Unknown until the next full timestamp.
                *slot = Some((last, false));
                return None;
            }
            last + ahead
        };
        *slot = Some((now, true));
        Some(now)
    }

    /// A message was lost: its timestamp may have been a link of any
    /// source's XOR chain, so every source's time is unknown until its next
    /// full timestamp (better no time than a wrong one).
    pub fn forget(&mut self) {
        for s in self.last.iter_mut().flatten() {
            s.1 = false;
        }
    }

    /// Feeds any message; returns its absolute time (see [`Self::update`]).
    pub fn on_message(&mut self, m: &Message) -> Option<u64> {
        match m {
            Message::DataAcquisition(d) => self.update(d.src, d.timestamp, false),
            Message::Ict(i) => self.update(i.src, i.timestamp, i.sync),
            Message::Other { src, .. } => self.update(*src, None, false),
        }
    }
}
