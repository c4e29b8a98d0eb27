//! The record encoder: turns counter readings and addresses into the ITC
//! writes of [`crate::format`], keeping the Delta/DeltaXOR state of one
//! trace source.

use crate::format::{
    width_mask, CountType, Header, ItcWrite, RecordType, RecordValues, MAX_COUNTERS,
    MAX_HEADER_WRITES, MAX_RECORDED_BITS,
};
use crate::sink::{Sink, Stopped};

/// Counters of one trace source, in record order, with the state the
/// count type needs. `no_std`, fixed size, no allocation.
#[derive(Clone, Debug)]
pub struct Encoder {
    header: Header,
    n: usize,
    /// The counters in record order (the first `n`).
    ctr: [CounterState; MAX_COUNTERS],
    last_addr: u64,
    stats: EncoderStats,
    /// Counters from this position on (record order) follow the
    /// timestamp: a record's tail ([`RecordValues::new`]).
    tail_from: usize,
    /// The counter values of the record being encoded (kept here so that
    /// a record does not clear a fresh array).
    counts: [u64; MAX_COUNTERS],
}

/// The shape of an [`Encoder`]'s records: `n` counters, the tail from
/// position `tail_from` on ([`RecordValues::new`]), the header's count
/// type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    pub(crate) n: usize,
    pub(crate) tail_from: usize,
    pub(crate) count_type: CountType,
}

/// One counter of an [`Encoder`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CounterState {
    /// The bits above the recorded width `w` (<= 48): `!(2^w - 1)`.
    hi: u64,
    /// For a hardware counter wider than what is recorded, the bits of a
    /// change the format cannot carry (`!(2^48 - 1)`, equal to `hi`); 0
    /// otherwise.
    over: u64,
    /// Previous full reading (seeded at trace-on): Delta's base, and what
    /// a change is checked against.
    prev: u64,
    /// DeltaXOR's previous reading (0 at trace-on).
    xor_prev: u64,
}

/// What the encoder could not express.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EncoderStats {
    /// Records written (complete or not).
    pub records: u64,
    /// Counter values whose change since the previous record (or since
    /// trace-on) reached 2^48 on a counter wider than 48 bits: the trace
    /// records the change modulo 2^48, so a decoder under-counts by a
    /// multiple of 2^48 there. Zero means nothing was lost.
    pub wide_overflows: u64,
    /// Records the sink refused (stop-on-wrap).
    pub stopped_records: u64,
}

impl Encoder {
    /// An encoder for the counters and count type of `header`.
    pub fn new(header: Header) -> Self {
        let mut e = Encoder {
            header,
            n: 0,
            ctr: [CounterState::default(); MAX_COUNTERS],
            last_addr: 0,
            stats: EncoderStats::default(),
            tail_from: crate::counters::timestamp_position(&header).map_or(0, |p| p + 1),
            counts: [0; MAX_COUNTERS],
        };
        for ((_, c), s) in header.iter().zip(e.ctr.iter_mut()) {
            s.hi = !width_mask(c.info.recorded_width());
            if c.info.width > MAX_RECORDED_BITS {
                s.over = !width_mask(MAX_RECORDED_BITS);
            }
            e.n += 1;
        }
        e
    }

    /// The header this encoder writes at trace-on.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Number of counters per record (readings passed must have this many).
    pub fn counters(&self) -> usize {
        self.n
    }

    /// Counters of what could not be recorded.
    pub fn stats(&self) -> EncoderStats {
        self.stats
    }

    /// Write the header and reset the per-trace state. `readings` are the
    /// counters at trace-on (record order), seeding Delta; `ts` stamps the
    /// header messages.
    pub fn trace_on<S: Sink>(
        &mut self,
        sink: &mut S,
        readings: &[u64],
        ts: u64,
    ) -> Result<(), Stopped> {
        let mut writes = [ItcWrite::w8(0); MAX_HEADER_WRITES];
        let k = self.header.to_writes(&mut writes);
        let res = sink.put_writes(&writes[..k], ts);
        self.last_addr = 0;
        for (i, c) in self.ctr[..self.n].iter_mut().enumerate() {
            let r = readings.get(i).copied().unwrap_or(0);
            c.prev = r;
            c.xor_prev = 0;
        }
        res
    }

    /// The value an address is recorded as (DeltaXOR: the change from the
    /// previous one).
    #[inline(always)]
    fn address_value(&mut self, addr: u64, count_type: CountType) -> u64 {
        let v = match count_type {
            CountType::DeltaXor => addr ^ self.last_addr,
            CountType::Raw | CountType::Delta => addr,
        };
        self.last_addr = addr;
        v
    }

    /// Write one record. `addrs` holds one address for manual/ISR records
    /// and two (function, other side) for enter/exit; `readings` holds the
    /// counter readings in record order (missing ones count as 0).
    #[inline]
    pub fn record<S: Sink>(
        &mut self,
        sink: &mut S,
        kind: RecordType,
        addrs: [u64; 2],
        readings: &[u64],
        ts: u64,
    ) -> Result<(), Stopped> {
        self.record_shaped(sink, kind, addrs, readings, ts, self.shape())
    }

    /// The number of counters and where the tail starts.
    pub(crate) fn shape(&self) -> Shape {
        Shape {
            n: self.n,
            tail_from: self.tail_from,
            count_type: self.header.count_type,
        }
    }

    /// [`Encoder::record`] with this encoder's [`Shape`] passed in: a
    /// caller that passes constants gets the counter loops unrolled
    /// ([`crate::stage::Replay::replay`]).
    #[inline(always)]
    pub(crate) fn record_shaped<S: Sink>(
        &mut self,
        sink: &mut S,
        kind: RecordType,
        addrs: [u64; 2],
        readings: &[u64],
        ts: u64,
        shape: Shape,
    ) -> Result<(), Stopped> {
        debug_assert!(shape == self.shape());
        let n = shape.n;
        self.stats.records += 1;
        let a0 = self.address_value(addrs[0], shape.count_type);
        let a1 = if kind.address_count() == 2 {
            self.address_value(addrs[1], shape.count_type)
        } else {
            0
        };
        let zero_tail = match readings.get(..n) {
            Some(r) => self.record_counts(r, shape),
            None => {
                // Missing readings count as 0.
                let mut padded = [0u64; MAX_COUNTERS];
                padded[..readings.len()].copy_from_slice(readings);
                self.record_counts(&padded[..n], shape)
            }
        };
        let rec = RecordValues::new(kind, [a0, a1], &self.counts[..n], shape.tail_from);
        let rec = if zero_tail { rec.with_zero_tail() } else { rec };
        let r = sink.put_values(&rec, ts);
        if r.is_err() {
            self.stats.stopped_records += 1;
        }
        r
    }

    /// The recorded counter values of one record, into `self.counts`;
    /// returns true, with only the head's values there, when the tail
    /// (from `shape.tail_from` on) did not move and Delta records zeros
    /// there. `readings` has one reading per counter.
    #[inline(always)]
    fn record_counts(&mut self, readings: &[u64], shape: Shape) -> bool {
        // One loop per count type, so that the loop does not dispatch on
        // it per counter.
        match shape.count_type {
            CountType::Raw => self.push_counts(readings, false, |now, _, _| now),
            CountType::Delta => {
                let t = shape.tail_from;
                if self.unmoved_tail(readings, t) {
                    // Their state stays as it is, their values are 0
                    // (`RecordValues::with_zero_tail`): only the head moves.
                    self.push_counts(&readings[..t], true, |_, change, _| change);
                    return true;
                }
                self.push_counts(readings, true, |_, change, _| change)
            }
            CountType::DeltaXor => self.push_counts(readings, false, |now, _, xor_prev| {
                let v = now ^ *xor_prev;
                *xor_prev = now;
                v
            }),
        }
        false
    }

    /// Whether the readings from `tail_from` on equal the previous ones,
    /// so that Delta records zeros there: one compare per counter, for
    /// counters rarer than calls (the usual tail). False for an empty
    /// tail, and without `std`, where the record shape is no constant and
    /// the bare-metal lists record counters that move on every record.
    #[inline(always)]
    fn unmoved_tail(&self, readings: &[u64], tail_from: usize) -> bool {
        if !cfg!(feature = "std") {
            return false;
        }
        let Some(tail) = readings.get(tail_from..).filter(|t| !t.is_empty()) else {
            return false;
        };
        tail.iter()
            .zip(&self.ctr[tail_from..])
            .all(|(&now, c)| now == c.prev)
    }

    /// The counters' recorded values into `self.counts`, `value(now,
    /// change, xor_prev)` giving what is recorded (taken modulo the
    /// recorded width) from the reading, its change since the previous
    /// one and DeltaXOR's state (`value_is_change`: it always returns the
    /// change). `readings` has one reading per counter.
    #[inline(always)]
    fn push_counts(
        &mut self,
        readings: &[u64],
        value_is_change: bool,
        value: impl Fn(u64, u64, &mut u64) -> u64,
    ) {
        // Not `self.n`: the length of `readings` is what the compiler may
        // know ([`Encoder::record_shaped`]).
        let n = readings.len();
        let counters = self.ctr[..n].iter_mut().zip(&readings[..n]);
        for ((c, &now), out) in counters.zip(&mut self.counts[..n]) {
            // The change modulo 2^64 equals it modulo 2^w (Delta's value)
            // once masked.
            let change = now.wrapping_sub(c.prev);
            c.prev = now;
            let v = value(now, change, &mut c.xor_prev);
            *out = v;
            // One test for both rare cases (`over` lies inside `hi`): a
            // value to take modulo 2^w, below 2^w <= 2^48 by construction
            // (`format::encode_count`'s 32 bits and 16 more when not 0),
            // and a change the format cannot carry. Delta's value is the
            // change, so it tests that alone.
            let beyond = if value_is_change { v } else { v | change };
            if beyond & c.hi != 0 {
                if change & c.over != 0 {
                    self.stats.wide_overflows += 1;
                }
                *out = v & !c.hi;
            }
        }
    }
}
