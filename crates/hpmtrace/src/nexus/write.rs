//! The writer of the Nexus format ([`super`] describes it): ITC writes
//! framed as Data Acquisition messages, the bytes a SiFive trace sink
//! holds and a `.rtd` file contains.
//!
//! Per source (one per traced thread or core): the ICT-with-sync control
//! message with the full timestamp, then one Data Acquisition message per
//! ITC write (SRC if configured, IDTAG, DQDATA, the TIMESTAMP field XORed
//! with the previous message's), and the sync message again after every
//! [`SYNC_PERIOD`] of them. It runs on the hot path of both collectors and
//! in `no_std` builds, so it allocates nothing; the tests check its bytes
//! against the plain reference encoder of `tests/common`.

use super::{TimestampChain, ICT_CKSRC_CONTROL, MSEO_END_FIELD, MSEO_END_MESSAGE};
pub use super::{DEFAULT_TIMESTAMP_BITS, SYNC_PERIOD, TCODE_DATA_ACQUISITION, TCODE_ICT_SYNC};
use crate::format::{
    count_words, encode_address, width_mask, IdTag, ItcWrite, RecordValues, WriteSize,
    MAX_HEADER_WRITES,
};
use crate::sink::{put_values_as_writes, ByteSink, Sink, Stopped};

/// How the stream is framed (the decoder must be told the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriterConfig {
    /// ITC channel the writes are on (IDTAG = channel*4 + size offset).
    pub channel: u8,
    /// Width of the SRC field; 0 for a single source.
    pub src_bits: u8,
    /// Width of the timestamp counter; timestamps are taken modulo 2^bits.
    pub timestamp_bits: u8,
}

impl Default for WriterConfig {
    fn default() -> Self {
        WriterConfig {
            channel: crate::format::DEFAULT_CHANNEL,
            src_bits: 0,
            timestamp_bits: DEFAULT_TIMESTAMP_BITS,
        }
    }
}

impl WriterConfig {
    /// SRC bits needed to tell `sources` sources apart (0 for one).
    pub const fn src_bits_for(sources: u32) -> u8 {
        if sources <= 1 {
            0
        } else {
            (32 - (sources - 1).leading_zeros()) as u8
        }
    }
}

/// Longest message in bytes: SRC (16) + IDTAG (32) + DQDATA (32) +
/// TIMESTAMP (64) bits plus 6 of TCODE, each variable field possibly
/// starting mid-slice: under 30 slices.
const MAX_MESSAGE: usize = 32;

/// Room to frame the longest header or record apart
/// ([`NexusWriter::stage`]): a message per write, a sync message, and 16
/// bytes for the last 16-byte store.
const STAGE: usize = (MAX_HEADER_WRITES + 1) * MAX_MESSAGE + 16;

/// Append one variable-length field to `buf` at `*at`: 6 bits per byte,
/// LSB first, at least `min_slices` bytes, the last one closed with `mseo`.
///
/// The fixed fields before a message's first variable field (TCODE, SRC,
/// CKSRC/CKDF) are passed in the low bits of `v` with `min_slices` =
/// fixed bits / 6 + 1: the variable field then starts right after them,
/// mid-slice if they do not fill whole slices, and still gets at least its
/// own bits - exactly the Nexus packing.
#[inline(always)]
fn push_field(buf: &mut [u8], at: &mut usize, mut v: u64, min_slices: usize, mseo: u8) {
    let mut i = 0;
    loop {
        let mut b = ((v & 0x3f) as u8) << 2;
        v >>= 6;
        i += 1;
        let last = v == 0 && i >= min_slices;
        if last {
            b |= mseo;
        }
        buf[*at] = b;
        *at += 1;
        if last {
            return;
        }
    }
}

/// Entries of [`Framer::recent`] (a power of two): the smallest size as
/// fast as any larger one on the benchmark's traces, 16 KiB per writer;
/// 2 KiB without `std`, where writers may be built on small stacks.
#[cfg(feature = "std")]
const RECENT: usize = 512;
#[cfg(not(feature = "std"))]
const RECENT: usize = 64;

/// Copy `bytes` into `buf` at `at`, without a bounds check: the framing
/// of a record checks its room once ([`Framer::record_values`]), so no
/// store of the record pays a bounds check of its own.
///
/// # Safety
///
/// `at + N <= buf.len()`.
#[inline(always)]
unsafe fn put<const N: usize>(buf: &mut [u8], at: usize, bytes: &[u8; N]) {
    debug_assert!(at + N <= buf.len());
    // SAFETY: the caller's promise; `bytes` is not in `buf` (a `&mut`).
    unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.as_mut_ptr().add(at), N) };
}

/// Entries of [`Framer::pairs`] (a power of two): the address pairs of
/// the functions entered and left most recently. 64 bytes each: 16 KiB
/// per writer with `std`, 1 KiB without.
#[cfg(feature = "std")]
const PAIRS: usize = 256;
#[cfg(not(feature = "std"))]
const PAIRS: usize = 16;

/// Room framing from values needs past a record's messages: its stores
/// are whole 16-byte blocks, 48 for an address pair ([`Framer::pair`]).
const MARGIN: usize = 48;

/// The messages of an enter/exit record's two address values (2 to 4
/// writes, at most 44 bytes), for [`Framer::pairs`].
#[derive(Clone, Copy)]
struct FramedPair {
    /// The address values (as recorded).
    key: [u64; 2],
    /// The messages, their length in the last byte.
    bytes: [u8; 48],
}

/// A framed Data Acquisition message with an empty TIMESTAMP field.
#[derive(Clone, Copy)]
struct Framed {
    /// Size index and value of the write; `u64::MAX` for none.
    key: u64,
    /// The message from the first byte, its length in the last, as
    /// little-endian words.
    bytes: [u64; 2],
}

/// How one writer frames its messages, with the timestamp chain they
/// follow.
struct Framer {
    chain: TimestampChain,
    /// The sync message's fixed fields and CKDATA0 (TCODE, SRC, CKSRC,
    /// CKDF, CKDATA0 = 0), framed once (at most 4 bytes, stored
    /// little-endian), and their length.
    sync_head: u64,
    sync_head_len: usize,
    /// The messages' first field (TCODE, SRC, IDTAG) for each write size
    /// ([`size_index`]): constant per writer, packed once (at most 4
    /// bytes, stored little-endian).
    first: [u64; 3],
    first_len: [u8; 3],
    /// Messages framed recently, by write (direct-mapped). Within a record
    /// every message after the first has an empty TIMESTAMP field, so
    /// such a message depends on its write alone, and most writes repeat:
    /// the addresses of the functions being traced, counters that did not
    /// move. A repeated one costs a lookup and a copy instead of framing.
    recent: [Framed; RECENT],
    /// The first message of a record of each type (by its byte), without
    /// its TIMESTAMP field's byte.
    heads: [Framed; 4],
    /// Address pairs framed recently, by values (direct-mapped): a
    /// program enters and leaves its hot functions from a few call sites,
    /// so one lookup and a 48-byte copy stand for 2 to 4 messages.
    pairs: [FramedPair; PAIRS],
    /// The message of a 32-bit write of 0 (at most 6 bytes, stored
    /// little-endian) and its length: a record tail of counters that did
    /// not move (Delta's zeros, the usual case for events rarer than
    /// calls) is this message once per counter.
    zero: u64,
    zero_len: usize,
}

impl Framed {
    /// Length of the message.
    #[inline(always)]
    fn len(&self) -> usize {
        (self.bytes[1] >> 56) as usize
    }
}

impl Framer {
    /// Frame the ICT control message with the full timestamp `ts` (masked)
    /// into `buf` at `at` and restart the timestamp chain there; returns
    /// the end. `buf` needs [`MAX_MESSAGE`] bytes from `at`.
    fn sync(&mut self, buf: &mut [u8], at: usize, ts: u64) -> usize {
        buf[at..at + 8].copy_from_slice(&self.sync_head.to_le_bytes());
        let mut at = at + self.sync_head_len;
        push_field(buf, &mut at, ts, 1, MSEO_END_MESSAGE);
        self.chain.synced(ts);
        at
    }

    /// Frame the messages of a header or record at `ts` (masked) into
    /// `buf` from 0, with a sync message where the chain needs one (as
    /// [`Framer::record_values_near_sync`] places it); returns the end.
    /// `buf` needs [`MAX_MESSAGE`] bytes per write and one more, plus 16.
    fn record(&mut self, buf: &mut [u8], writes: &[ItcWrite], ts: u64) -> usize {
        let left = self.chain.left();
        let start = if left == 0 { self.sync(buf, 0, ts) } else { 0 };
        let field = self.chain.field(ts);
        let end = self.messages(buf, start, writes, field);
        let k = writes.len();
        if left == 0 || k <= left {
            self.chain.advance(k);
            end
        } else {
            self.sync_inside(buf, end, left, k, ts)
        }
    }

    /// Frame `writes` into `buf` from `at`, the first message with the
    /// TIMESTAMP field `field`, the others with an empty one; returns the
    /// end. `buf` needs [`MAX_MESSAGE`] bytes per write plus 16 from `at`.
    /// Headers, and records that do not fit the fast path's room, come
    /// here: rare, so every store is checked.
    fn messages(
        &mut self,
        buf: &mut [u8],
        mut at: usize,
        writes: &[ItcWrite],
        field: u64,
    ) -> usize {
        for (i, w) in writes.iter().enumerate() {
            let e = self.untimed(*w);
            buf[at..at + 8].copy_from_slice(&e.bytes[0].to_le_bytes());
            buf[at + 8..at + 16].copy_from_slice(&e.bytes[1].to_le_bytes());
            at += e.len();
            if i == 0 {
                // The untimed message ends in its empty TIMESTAMP field's
                // byte: the record's field replaces it.
                at -= 1;
                push_field(buf, &mut at, field, 1, MSEO_END_MESSAGE);
            }
        }
        at
    }

    /// The message of `w` with an empty TIMESTAMP field, from
    /// [`Framer::recent`], or framed and kept there.
    #[inline(always)]
    fn untimed(&mut self, w: ItcWrite) -> Framed {
        let i = size_index(w.size);
        let key = (i as u64) << 32 | w.value as u64;
        let slot =
            (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - RECENT.trailing_zeros())) as usize;
        let e = self.recent[slot];
        if e.key == key {
            return e;
        }
        self.recent[slot] = self.frame_untimed(i, w.value);
        self.recent[slot]
    }

    /// The message of a write of size index `i` with `value` and an
    /// empty TIMESTAMP field: at most 4 + 6 + 1 bytes.
    #[inline(never)]
    fn frame_untimed(&self, i: usize, value: u32) -> Framed {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.first[i].to_le_bytes());
        let mut at = self.first_len[i] as usize;
        push_field(&mut b, &mut at, value as u64, 1, MSEO_END_FIELD);
        b[at] = MSEO_END_MESSAGE;
        b[15] = at as u8 + 1;
        Framed {
            key: (i as u64) << 32 | value as u64,
            bytes: [
                u64::from_le_bytes(b[..8].try_into().unwrap_or_default()),
                u64::from_le_bytes(b[8..].try_into().unwrap_or_default()),
            ],
        }
    }
}

/// Framing from values ([`Framer::record_values`]). The helpers store
/// whole 16-byte (48, 128) blocks without bounds checks; each says how
/// much room it needs from `at`. Messages are at most 11 bytes
/// ([`Framer::frame_untimed`]).
impl Framer {
    /// Copy the message `e` (16 bytes, of which its length counts) to
    /// `buf` at `at`; returns the end.
    ///
    /// # Safety
    ///
    /// `at + 16 <= buf.len()`.
    #[inline(always)]
    unsafe fn put_framed(buf: &mut [u8], at: usize, e: Framed) -> usize {
        let bytes = (e.bytes[0] as u128 | (e.bytes[1] as u128) << 64).to_le_bytes();
        // SAFETY: the caller's promise.
        unsafe { put(buf, at, &bytes) };
        at + e.len()
    }

    /// Frame the writes of an address value at `at`, counting them in
    /// `k`; returns the end.
    ///
    /// # Safety
    ///
    /// `at + 11 + 16 <= buf.len()` (two messages).
    #[inline(always)]
    unsafe fn address(&mut self, buf: &mut [u8], mut at: usize, v: u64, k: &mut usize) -> usize {
        let w = encode_address(v);
        // SAFETY: room for the first message, and for a second after it.
        unsafe {
            at = Self::put_framed(buf, at, self.untimed(ItcWrite::w32(w.low)));
            *k += 1;
            if let Some(h) = w.high {
                at = Self::put_framed(buf, at, self.untimed(ItcWrite::w32(h)));
                *k += 1;
            }
        }
        at
    }

    /// Frame the writes of a counter value (below 2^48) at `at`, counting
    /// them in `k`; returns the end.
    ///
    /// # Safety
    ///
    /// `at + 11 + 16 <= buf.len()` (two messages).
    #[inline(always)]
    unsafe fn count(&mut self, buf: &mut [u8], mut at: usize, v: u64, k: &mut usize) -> usize {
        // SAFETY: room for the first message, and for a second after it.
        unsafe {
            let w = count_words(v);
            at = Self::put_framed(buf, at, self.untimed(ItcWrite::w32(w.low)));
            *k += 1;
            if let Some(h) = w.high {
                at = Self::put_framed(buf, at, self.untimed(ItcWrite::w16(h)));
                *k += 1;
            }
        }
        at
    }

    /// The messages of two address values, framed.
    #[inline(never)]
    fn frame_pair(&mut self, key: [u64; 2]) -> FramedPair {
        let mut b = [0u8; 64];
        let mut k = 0;
        // SAFETY: at most 4 messages of 11 bytes, the last store starting
        // at 33 at most: 49 <= 64.
        let at = unsafe {
            let at = self.address(&mut b, 0, key[0], &mut k);
            self.address(&mut b, at, key[1], &mut k)
        };
        let mut bytes = [0u8; 48];
        bytes.copy_from_slice(&b[..48]);
        bytes[46] = k as u8;
        bytes[47] = at as u8;
        FramedPair { key, bytes }
    }

    /// Frame the messages of an enter/exit record's addresses at `at`,
    /// counting them in `k`; returns the end.
    ///
    /// # Safety
    ///
    /// `at + 48 <= buf.len()`.
    #[inline(always)]
    unsafe fn pair(&mut self, buf: &mut [u8], at: usize, key: [u64; 2], k: &mut usize) -> usize {
        let h = (key[0] ^ key[1].rotate_left(23)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let slot = (h >> (64 - PAIRS.trailing_zeros())) as usize;
        // Two compares, not one of 16 bytes: `key` was just stored as two
        // words, and a 16-byte load of them would wait for the stores.
        let have = self.pairs[slot].key;
        if (have[0] ^ key[0]) | (have[1] ^ key[1]) != 0 {
            self.pairs[slot] = self.frame_pair(key);
        }
        let e = &self.pairs[slot];
        // SAFETY: the caller's promise.
        unsafe { put(buf, at, &e.bytes) };
        *k += e.bytes[46] as usize;
        at + e.bytes[47] as usize
    }

    /// Frame the messages of a record tail (counter values) at `at`,
    /// counting them in `k`; returns the end. A tail known to be zeros
    /// ([`RecordValues::tail_is_zero`]) is the zero message once per
    /// counter, stored 8 bytes at a time.
    ///
    /// # Safety
    ///
    /// `buf` has room from `at` for 11 bytes per write of the tail and 16
    /// more.
    #[inline(always)]
    unsafe fn tail(
        &mut self,
        buf: &mut [u8],
        mut at: usize,
        values: &[u64],
        zero: bool,
        k: &mut usize,
    ) -> usize {
        if zero {
            for _ in values {
                // SAFETY: the caller's promise (a zero message is at most
                // 6 bytes).
                unsafe { put(buf, at, &self.zero.to_le_bytes()) };
                at += self.zero_len;
            }
            *k += values.len();
            return at;
        }
        for &v in values {
            // SAFETY: the caller's promise: 11 bytes a write so far, and
            // this value's (at most two) after them.
            at = unsafe { self.count(buf, at, v, k) };
        }
        at
    }

    /// Frame a record given as values at `ts` (masked) into `buf` from 0,
    /// where the chain needs no sync message (more than
    /// [`RecordValues::max_writes`] messages left); returns the end.
    /// `buf` needs [`MAX_MESSAGE`] bytes per write (at most) and
    /// [`MARGIN`] more.
    #[inline(always)]
    fn record_values(&mut self, buf: &mut [u8], rec: &RecordValues<'_>, ts: u64) -> usize {
        assert!(buf.len() >= rec.max_writes() * MAX_MESSAGE + MARGIN);
        // SAFETY: the room asserted above.
        let (end, k) = unsafe { self.frame_values(buf, 0, rec, ts) };
        self.chain.advance(k);
        end
    }

    /// [`Framer::record_values`] for a record that may reach the next
    /// sync message: with the sync message where the chain needs one, as
    /// [`Framer::record`] frames its writes. `buf` needs [`MAX_MESSAGE`]
    /// bytes per write (at most) and one more, and [`MARGIN`] more.
    #[inline(always)]
    fn record_values_near_sync(
        &mut self,
        buf: &mut [u8],
        rec: &RecordValues<'_>,
        ts: u64,
    ) -> usize {
        // A sync message before the record or within it takes at most
        // MAX_MESSAGE bytes.
        assert!(buf.len() >= (rec.max_writes() + 1) * MAX_MESSAGE + MARGIN);
        let left = self.chain.left();
        let start = if left == 0 { self.sync(buf, 0, ts) } else { 0 };
        // SAFETY: the room asserted above: MAX_MESSAGE bytes before
        // `start` at most.
        let (end, k) = unsafe { self.frame_values(buf, start, rec, ts) };
        if left == 0 || k <= left {
            self.chain.advance(k);
            end
        } else {
            self.sync_inside(buf, end, left, k, ts)
        }
    }

    /// Frame the messages of a record given as values at `ts` (masked)
    /// into `buf` from `start`; returns the end and the number of
    /// messages. The chain has compressed `ts` and counted none of them.
    ///
    /// # Safety
    ///
    /// `buf` has [`MAX_MESSAGE`] bytes per write of the record (at most)
    /// and [`MARGIN`] more from `start`.
    #[inline(always)]
    unsafe fn frame_values(
        &mut self,
        buf: &mut [u8],
        start: usize,
        rec: &RecordValues<'_>,
        ts: u64,
    ) -> (usize, usize) {
        // The room every write below relies on (`put`): before the i-th
        // message after the head, `at` is at most start + 16 + 11 i (the
        // head and its TIMESTAMP field take at most 16 bytes, any other
        // message 11), and a write reaches at most 16 bytes past it, 48
        // for an address pair (2 messages): MARGIN.
        let field = self.chain.field(ts);
        // The head message (the type) with the record's TIMESTAMP field,
        // as in `messages`.
        let e = self.heads[rec.kind().as_u8() as usize & 3];
        // SAFETY: the room the caller promised (so below).
        let mut at = unsafe { Self::put_framed(buf, start, e) } - 1;
        push_field(buf, &mut at, field, 1, MSEO_END_MESSAGE);
        let mut k = 1;
        // SAFETY: see above.
        unsafe {
            at = match *rec.addrs() {
                [a0, a1] => self.pair(buf, at, [a0, a1], &mut k),
                _ => self.address(buf, at, rec.addrs()[0], &mut k),
            };
            for &v in rec.head_counts() {
                at = self.count(buf, at, v, &mut k);
            }
            at = self.tail(buf, at, rec.tail_counts(), rec.tail_is_zero(), &mut k);
        }
        (at, k)
    }

    /// Move in the sync message the chain needs after the first `left`
    /// of the `k` messages of the record at `ts` that ends at `end` in
    /// `buf`; returns the new end. The messages after the sync are framed
    /// as they are: their TIMESTAMP fields are empty, as the record's
    /// first message alone carries a change, and the sync's full
    /// timestamp is the record's. `buf` needs [`MAX_MESSAGE`] bytes past
    /// `end`.
    #[cold]
    #[inline(never)]
    fn sync_inside(&mut self, buf: &mut [u8], end: usize, left: usize, k: usize, ts: u64) -> usize {
        let cut = after_messages(&buf[..end], left);
        // The record's first `left` messages took the chain to 0; the
        // sync restarts its count.
        let mut sync = [0u8; MAX_MESSAGE];
        let n = self.sync(&mut sync, 0, ts);
        buf.copy_within(cut..end, cut + n);
        buf[cut..cut + n].copy_from_slice(&sync[..n]);
        self.chain.compress(ts);
        self.chain.advance(k - left - 1);
        end + n
    }
}

/// The offset right after the `n`-th message (from 1) framed in `bytes`,
/// or its length if it holds fewer: a message's last byte, and no other,
/// has MSEO 11.
fn after_messages(bytes: &[u8], n: usize) -> usize {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, &b)| b & MSEO_END_MESSAGE == MSEO_END_MESSAGE)
        .nth(n.wrapping_sub(1))
        .map_or(bytes.len(), |(i, _)| i + 1)
}

/// Frames ITC writes of one source as Nexus messages into a [`ByteSink`].
///
/// Messages reach the byte sink a whole header or record at a time, so a
/// stop-on-wrap buffer ends on a record boundary: [`Sink::put_writes`]
/// frames one straight into the sink's spare room when it has room
/// for the longest such, and otherwise frames it apart and hands it over
/// whole.
pub struct NexusWriter<B> {
    cfg: WriterConfig,
    /// `2^timestamp_bits - 1`: timestamps are taken modulo the counter's
    /// width.
    ts_mask: u64,
    framer: Framer,
    /// Where a header or record is framed when the byte sink has no room
    /// for the longest one.
    stage: [u8; STAGE],
    out: B,
}

/// Index of a write size in [`NexusWriter`]'s first-field table: its
/// discriminant (0, 1, 2).
#[inline(always)]
fn size_index(size: WriteSize) -> usize {
    size as usize
}

impl<B: ByteSink> NexusWriter<B> {
    /// A writer for source `src` (must fit `cfg.src_bits`; it is masked).
    pub fn new(cfg: WriterConfig, src: u16, out: B) -> Self {
        let mut first = [0u64; 3];
        let mut first_len = [0u8; 3];
        for size in [WriteSize::Bits32, WriteSize::Bits16, WriteSize::Bits8] {
            let sb = cfg.src_bits as u32;
            let tag = IdTag::new(cfg.channel, size).0 as u64;
            // TCODE(6) SRC(sb), then IDTAG continuing the same slices
            // (at most 64 bits: 11 slices).
            let v = TCODE_DATA_ACQUISITION as u64
                | (src as u64 & width_mask(sb as u8)) << 6
                | tag << (6 + sb);
            let mut bytes = [0u8; 16];
            let mut at = 0;
            let i = size_index(size);
            push_field(
                &mut bytes,
                &mut at,
                v,
                (6 + sb as usize) / 6 + 1,
                MSEO_END_FIELD,
            );
            // TCODE + SRC (<= 8 bits) + IDTAG (<= 7 bits): 4 slices at most.
            first[i] = u64::from_le_bytes(bytes[..8].try_into().unwrap_or([0; 8]));
            first_len[i] = at as u8;
        }
        // TCODE(6) SRC(sb) CKSRC(4)=control CKDF(2)=0, then CKDATA0 = 0.
        let sync_fixed = TCODE_ICT_SYNC as u64
            | (src as u64 & width_mask(cfg.src_bits)) << 6
            | (ICT_CKSRC_CONTROL as u64) << (6 + cfg.src_bits);
        let mut bytes = [0u8; 8];
        let mut sync_head_len = 0;
        push_field(
            &mut bytes,
            &mut sync_head_len,
            sync_fixed,
            (12 + cfg.src_bits as usize) / 6 + 1,
            MSEO_END_FIELD,
        );
        let sync_head = u64::from_le_bytes(bytes);
        let mut w = NexusWriter {
            cfg,
            ts_mask: width_mask(cfg.timestamp_bits),
            framer: Framer {
                chain: TimestampChain::default(),
                sync_head,
                sync_head_len,
                first,
                first_len,
                recent: [Framed {
                    key: u64::MAX,
                    bytes: [0; 2],
                }; RECENT],
                heads: [Framed {
                    key: 0,
                    bytes: [0; 2],
                }; 4],
                pairs: [FramedPair {
                    key: [0; 2],
                    bytes: [0; 48],
                }; PAIRS],
                zero: 0,
                zero_len: 0,
            },
            stage: [0; STAGE],
            out,
        };
        for t in 0..4 {
            w.framer.heads[t] = w
                .framer
                .frame_untimed(size_index(WriteSize::Bits8), t as u32);
        }
        let zero = w.framer.frame_untimed(size_index(WriteSize::Bits32), 0);
        (w.framer.zero, w.framer.zero_len) = (zero.bytes[0], zero.len());
        // Every entry starts as the pair (0, 0), framed: no entry is empty.
        let zero = w.framer.frame_pair([0; 2]);
        w.framer.pairs = [zero; PAIRS];
        w
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
    pub fn config(&self) -> WriterConfig {
        self.cfg
    }

    /// [`Sink::put_values`] for a record that may reach the next sync
    /// message or does not fit the spare room with the fast path's margin
    /// (out of line: with it inline, the other records cost more). The
    /// record by value: by reference, every record would be built on the
    /// stack before the branch, not only those that come here.
    #[inline(never)]
    fn put_values_near_sync(&mut self, rec: RecordValues<'_>, ts: u64) -> Result<(), Stopped> {
        let room = (rec.max_writes() + 1) * MAX_MESSAGE + MARGIN;
        if let Some(buf) = self.out.spare(room) {
            let end = self
                .framer
                .record_values_near_sync(buf, &rec, ts & self.ts_mask);
            self.out.commit(end);
            return Ok(());
        }
        put_values_as_writes(self, &rec, ts)
    }
}

impl<B: ByteSink> Sink for NexusWriter<B> {
    /// The messages of a header or record, a sync message among them
    /// where the chain needs one: framed straight into the byte sink when
    /// it has room for the longest such, else apart and handed over whole
    /// (when they fit). After the first message, whose TIMESTAMP field
    /// carries the change since the previous record, every message has
    /// the same timestamp and so an empty field (XOR 0), also after a
    /// sync message in the middle.
    fn put_writes(&mut self, writes: &[ItcWrite], ts: u64) -> Result<(), Stopped> {
        let ts = ts & self.ts_mask;
        // Headers and records are at most MAX_HEADER_WRITES writes; longer
        // lists are framed in pieces (the same bytes: all at `ts`).
        for part in writes.chunks(MAX_HEADER_WRITES) {
            // A message per write and maybe a sync message, and 16 bytes
            // more for the last 16-byte store.
            let bound = (part.len() + 1) * MAX_MESSAGE + 16;
            if let Some(buf) = self.out.spare(bound) {
                let n = self.framer.record(buf, part, ts);
                self.out.commit(n);
                continue;
            }
            let chain = self.framer.chain;
            let n = self.framer.record(&mut self.stage, part, ts);
            if let Err(e) = self.out.put_bytes(&self.stage[..n]) {
                // The bytes never reach the trace.
                self.framer.chain = chain;
                return Err(e);
            }
        }
        Ok(())
    }

    /// [`Sink::put_writes`] for a record given as values: framed straight
    /// into the byte sink (when it has room) with the address pair and
    /// the tail of counters copied whole when they were framed before.
    #[inline(always)]
    fn put_values(&mut self, rec: &RecordValues<'_>, ts: u64) -> Result<(), Stopped> {
        let n = rec.max_writes();
        if n < self.framer.chain.left() {
            if let Some(buf) = self.out.spare(n * MAX_MESSAGE + MARGIN) {
                let end = self.framer.record_values(buf, rec, ts & self.ts_mask);
                self.out.commit(end);
                return Ok(());
            }
        }
        self.put_values_near_sync(*rec, ts)
    }
}
