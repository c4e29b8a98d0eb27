//! The record encoder: turns counter readings and addresses into the ITC
//! writes of [`crate::format`], keeping the Delta/DeltaXOR state of one
//! trace source.

use crate::format::{
    delta, encode_address, encode_count, width_mask, CountType, Header, ItcWrite, RecordType,
    MAX_COUNTERS, MAX_RECORDED_BITS,
};
use crate::sink::{Sink, Stopped};

/// Counters of one trace source, in record order, with the state the
/// count type needs. `no_std`, fixed size, no allocation.
#[derive(Clone, Debug)]
pub struct Encoder {
    header: Header,
    n: usize,
    /// Recorded width (<= 48) of the counter at each record position.
    width: [u8; MAX_COUNTERS],
    /// Whether the hardware counter is wider than what is recorded.
    wide: [bool; MAX_COUNTERS],
    /// Previous reading modulo the recorded width (Delta: seeded at
    /// trace-on; DeltaXOR: 0 at trace-on).
    prev: [u64; MAX_COUNTERS],
    /// Previous full reading, to detect intervals the format cannot carry.
    prev_full: [u64; MAX_COUNTERS],
    last_addr: u64,
    stats: EncoderStats,
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
            width: [0; MAX_COUNTERS],
            wide: [false; MAX_COUNTERS],
            prev: [0; MAX_COUNTERS],
            prev_full: [0; MAX_COUNTERS],
            last_addr: 0,
            stats: EncoderStats::default(),
        };
        for (_, c) in header.iter() {
            e.width[e.n] = c.info.recorded_width();
            e.wide[e.n] = c.info.width > MAX_RECORDED_BITS;
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
        let mut res = Ok(());
        self.header.encode(|w| {
            if res.is_ok() {
                res = sink.put(w, ts);
            }
        });
        if res.is_ok() {
            res = sink.flush();
        }
        self.last_addr = 0;
        for i in 0..self.n {
            let r = readings.get(i).copied().unwrap_or(0);
            self.prev_full[i] = r;
            self.prev[i] = match self.header.count_type {
                CountType::Delta => r & width_mask(self.width[i]),
                CountType::Raw | CountType::DeltaXor => 0,
            };
        }
        res
    }

    #[inline]
    fn put_address<S: Sink>(&mut self, sink: &mut S, addr: u64, ts: u64) -> Result<(), Stopped> {
        let v = match self.header.count_type {
            CountType::DeltaXor => addr ^ self.last_addr,
            CountType::Raw | CountType::Delta => addr,
        };
        self.last_addr = addr;
        let w = encode_address(v);
        sink.put(ItcWrite::w32(w.low), ts)?;
        if let Some(h) = w.high {
            sink.put(ItcWrite::w32(h), ts)?;
        }
        Ok(())
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
        self.stats.records += 1;
        let r = self
            .record_inner(sink, kind, addrs, readings, ts)
            .and_then(|_| sink.flush());
        if r.is_err() {
            self.stats.stopped_records += 1;
        }
        r
    }

    #[inline]
    fn record_inner<S: Sink>(
        &mut self,
        sink: &mut S,
        kind: RecordType,
        addrs: [u64; 2],
        readings: &[u64],
        ts: u64,
    ) -> Result<(), Stopped> {
        sink.put(ItcWrite::w8(kind.as_u8()), ts)?;
        self.put_address(sink, addrs[0], ts)?;
        if kind.address_count() == 2 {
            self.put_address(sink, addrs[1], ts)?;
        }
        for i in 0..self.n {
            let full = readings.get(i).copied().unwrap_or(0);
            if self.wide[i] {
                if full.wrapping_sub(self.prev_full[i]) >> MAX_RECORDED_BITS != 0 {
                    self.stats.wide_overflows += 1;
                }
                self.prev_full[i] = full;
            }
            let w = self.width[i];
            let now = full & width_mask(w);
            let v = match self.header.count_type {
                CountType::Raw => now,
                CountType::Delta => delta(now, self.prev[i], w),
                CountType::DeltaXor => now ^ self.prev[i],
            };
            self.prev[i] = now;
            // `v` < 2^w <= 2^48 by construction, so this cannot fail.
            let c = match encode_count(v) {
                Ok(c) => c,
                Err(_) => continue,
            };
            sink.put(ItcWrite::w32(c.low), ts)?;
            if let Some(h) = c.high {
                sink.put(ItcWrite::w16(h), ts)?;
            }
        }
        Ok(())
    }
}
