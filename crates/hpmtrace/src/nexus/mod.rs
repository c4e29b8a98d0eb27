//! The Nexus trace format as SiFive trace encoders write it: the one
//! description of the bytes, with the writer ([`write`](mod@write)) and the reader
//! (`read`, with `std`) over it.
//!
//! A trace (`.rtd` file) is the raw trace-sink bytes: a sequence of
//! messages, each byte carrying six data bits MDO\[7:2\] and two framing
//! bits MSEO\[1:0\] ([`MSEO_NORMAL`] more follows, [`MSEO_END_FIELD`] last
//! byte of a variable-length field, [`MSEO_END_MESSAGE`] last byte of the
//! message and idle bytes between messages, [`MSEO_RESERVED`] never sent).
//! Fields are packed LSB first into the 6-bit slices; fixed-width fields
//! may start anywhere in a slice, a variable-length field always ends at a
//! slice boundary, and a variable field holds its value in as few slices
//! as it needs (at least one).
//!
//! Every message starts with a 6-bit TCODE, then SRC (`src_bits` wide, 0
//! for a single source). The performance trace uses two kinds:
//!
//! * **Data Acquisition** ([`TCODE_DATA_ACQUISITION`]), one per ITC
//!   stimulus write: IDTAG (variable: the write's byte offset in the
//!   stimulus registers, `crate::format::IdTag`), DQDATA (variable: the
//!   written value, not shifted), TIMESTAMP (variable, optional).
//! * **In-Circuit Trace** ([`TCODE_ICT`], or [`TCODE_ICT_SYNC`] "with
//!   sync"): CKSRC (4 bits), CKDF (2 bits), CKDATA0 (variable), CKDATA1
//!   (variable) when CKDF = 1, TIMESTAMP (variable, optional).
//!
//! Any other TCODE may be mixed into the same buffer (instruction trace);
//! a reader frames and skips it.
//!
//! Timestamps: a message's TIMESTAMP field is XORed with the previous
//! timestamp of the same source, except in sync-type messages (ICT with
//! sync), which carry it in full. A SiFive encoder puts the first full
//! timestamp into the trace with an ICT-with-sync message of CKSRC
//! [`ICT_CKSRC_CONTROL`], CKDF 0, CKDATA0 0; hpmtrace's writer sends it
//! before a source's first Data Acquisition message and again after every
//! [`SYNC_PERIOD`] of them (`TimestampChain` is that rule), as hardware
//! encoders resend sync: a reader that lost a message gets correct times
//! back at the next one. The timestamp counter is
//! [`DEFAULT_TIMESTAMP_BITS`] wide unless configured otherwise
//! ([`NexusConfig`]); timestamps are taken modulo its width.
//!
//! `no_std` but for the reader: the writer runs on bare metal too.

#[cfg(feature = "std")]
pub mod read;
pub mod write;

/// How the trace was framed; not recorded in the trace itself, so writer
/// and reader must be told the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NexusConfig {
    /// Width of the SRC field (0 on a single-core system without a funnel),
    /// at most 8 (values above are treated as 8).
    pub src_bits: u8,
    /// Width of the timestamp counter (for wrap handling).
    pub timestamp_bits: u8,
}

impl Default for NexusConfig {
    fn default() -> Self {
        NexusConfig {
            src_bits: 0,
            timestamp_bits: DEFAULT_TIMESTAMP_BITS,
        }
    }
}

/// TCODE of a Data Acquisition message (ITC stimulus write).
pub const TCODE_DATA_ACQUISITION: u8 = 7;
/// TCODE of an In-Circuit Trace message (relative addresses/timestamps).
pub const TCODE_ICT: u8 = 34;
/// TCODE of an In-Circuit Trace message with sync (full timestamp).
pub const TCODE_ICT_SYNC: u8 = 35;
/// ICT CKSRC of a control message; with CKDF 0 SiFive encoders use it to
/// put the first full timestamp into the trace.
pub const ICT_CKSRC_CONTROL: u8 = 0;

/// Default width of the trace encoder's timestamp counter, in bits.
pub const DEFAULT_TIMESTAMP_BITS: u8 = 40;

/// Data Acquisition messages of a source between two full timestamps
/// (about 10 bytes of sync per 256 messages of 5-10 bytes: under 1 %).
pub const SYNC_PERIOD: u32 = 256;

/// Largest Nexus source number supported (SRC fields up to 8 bits).
pub const MAX_SOURCES: usize = 256;

/// MSEO of a byte that more of the field follows.
pub const MSEO_NORMAL: u8 = 0b00;
/// MSEO of the last byte of a variable-length field.
pub const MSEO_END_FIELD: u8 = 0b01;
/// The reserved MSEO value (a corrupted byte).
pub const MSEO_RESERVED: u8 = 0b10;
/// MSEO of the last byte of a message (also idle bytes between messages).
pub const MSEO_END_MESSAGE: u8 = 0b11;

/// One source's timestamp compression: each Data Acquisition message's
/// TIMESTAMP is XORed with the previous message's, and a sync message with
/// the full timestamp goes before the source's first message and again
/// after every [`SYNC_PERIOD`] messages: the writer's state ([`write`](mod@write);
/// the reading side is `read::TimestampTracker`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TimestampChain {
    /// Timestamp of the previous message.
    last: u64,
    /// Data Acquisition messages until the next sync; 0 also before the
    /// first one.
    left: u32,
}

impl TimestampChain {
    /// A sync message carried the full timestamp `ts`.
    #[inline(always)]
    pub(crate) fn synced(&mut self, ts: u64) {
        self.last = ts;
        self.left = SYNC_PERIOD;
    }

    /// Data Acquisition messages left before the next sync.
    #[inline(always)]
    pub(crate) fn left(&self) -> usize {
        self.left as usize
    }

    /// `n` more messages at the timestamp of the previous one (their
    /// fields are 0); only when at most [`Self::left`].
    #[inline(always)]
    pub(crate) fn advance(&mut self, n: usize) {
        debug_assert!(n <= self.left as usize, "sync first");
        self.left -= n as u32;
    }

    /// [`Self::compress`] without counting the message: the caller counts
    /// it with the record's others in one [`Self::advance`].
    #[inline(always)]
    pub(crate) fn field(&mut self, ts: u64) -> u64 {
        debug_assert!(self.left != 0, "sync first");
        let field = self.last ^ ts;
        self.last = ts;
        field
    }

    /// The TIMESTAMP field of a Data Acquisition message at `ts`; only
    /// while [`Self::left`] is not 0.
    #[inline(always)]
    pub(crate) fn compress(&mut self, ts: u64) -> u64 {
        let field = self.field(ts);
        self.left -= 1;
        field
    }
}
