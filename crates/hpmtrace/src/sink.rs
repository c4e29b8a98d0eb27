//! Where ITC writes go: the [`Sink`] trait and its byte-level helpers.
//!
//! * [`crate::nexus::write::NexusWriter`]: a software trace encoder that frames each
//!   write as a Nexus Data Acquisition message into a [`ByteSink`].
//! * [`StopBuffer`]: a fixed-size byte buffer that stops on wrap, the
//!   software counterpart of the trace encoder's SRAM/SBA buffer: the
//!   [`ByteSink`] the bare-metal cores ([`MemBuffer`]) and the Linux
//!   collectors (`VecBuffer`, std only) give to their `NexusWriter`s.

use crate::format::{ItcWrite, RecordValues, MAX_RECORD_WRITES};

/// The sink stopped accepting data (buffer full, stop-on-wrap); the write
/// was dropped and so will every later one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped;

/// Destination of ITC writes, a header or record at a time.
pub trait Sink {
    /// The writes of one header or record, in order, at the trace
    /// timestamp `ts`: all of them, or none (`Stopped`), so that a full
    /// buffer never holds half a record.
    fn put_writes(&mut self, writes: &[ItcWrite], ts: u64) -> Result<(), Stopped>;

    /// A record given as values: its writes ([`RecordValues::to_writes`])
    /// as [`Sink::put_writes`] takes them. Sinks that frame writes may
    /// reuse what they framed for equal values.
    #[inline]
    fn put_values(&mut self, rec: &RecordValues<'_>, ts: u64) -> Result<(), Stopped> {
        put_values_as_writes(self, rec, ts)
    }
}

/// [`Sink::put_values`] as writes: the record's
/// ([`RecordValues::to_writes`]) through [`Sink::put_writes`]. The
/// default, and what a sink that frames values itself falls back on.
#[inline]
pub fn put_values_as_writes<S: Sink + ?Sized>(
    sink: &mut S,
    rec: &RecordValues<'_>,
    ts: u64,
) -> Result<(), Stopped> {
    let mut writes = [ItcWrite::w8(0); MAX_RECORD_WRITES];
    let k = rec.to_writes(&mut writes);
    sink.put_writes(&writes[..k], ts)
}

impl<S: Sink + ?Sized> Sink for &mut S {
    #[inline]
    fn put_writes(&mut self, writes: &[ItcWrite], ts: u64) -> Result<(), Stopped> {
        (**self).put_writes(writes, ts)
    }
    #[inline]
    fn put_values(&mut self, rec: &RecordValues<'_>, ts: u64) -> Result<(), Stopped> {
        (**self).put_values(rec, ts)
    }
}

/// Destination of encoded trace bytes. `put_bytes` is all or nothing, so a
/// buffer never ends in the middle of a Nexus message.
pub trait ByteSink {
    /// Append `bytes` entirely, or nothing and return `Stopped`.
    fn put_bytes(&mut self, bytes: &[u8]) -> Result<(), Stopped>;

    /// Room to encode up to `n` bytes in place: at least `n` bytes just
    /// past the data, or `None` when the sink cannot offer them (then
    /// [`ByteSink::put_bytes`] decides). What is written there is appended
    /// by [`ByteSink::commit`].
    #[inline]
    fn spare(&mut self, _n: usize) -> Option<&mut [u8]> {
        None
    }

    /// Append the first `n` bytes of the slice [`ByteSink::spare`] gave
    /// (`n` at most what was asked for there).
    #[inline]
    fn commit(&mut self, _n: usize) {}
}

/// A fixed-capacity byte buffer that stops on wrap: once a message does not
/// fit, it and everything after it are dropped (counted in
/// [`StopBuffer::dropped`]), like a trace buffer with the stop-on-wrap bit.
/// `B` holds the bytes: borrowed ([`MemBuffer`], the bare-metal trace
/// buffer) or owned (`VecBuffer`, std only).
///
/// It offers the room past its data for framing in place
/// ([`ByteSink::spare`]): the bytes past [`StopBuffer::data`] are then
/// scratch, not zeros. Without it every record would go through the
/// writer's staging copy, write by write (the bare-metal cost this
/// avoids: docs/hpmtrace-bare.md).
pub struct StopBuffer<B> {
    buf: B,
    len: usize,
    dropped: u64,
}

/// A [`StopBuffer`] in memory the caller lends (`no_std`).
pub type MemBuffer<'a> = StopBuffer<&'a mut [u8]>;

/// A [`StopBuffer`] on the heap (std only), zeroed up front so that the
/// hot path never allocates.
#[cfg(feature = "std")]
pub type VecBuffer = StopBuffer<Box<[u8]>>;

#[cfg(feature = "std")]
impl StopBuffer<Box<[u8]>> {
    /// A buffer that accepts at most `capacity` bytes, zeroed (which the
    /// OS may map lazily).
    pub fn with_capacity(capacity: usize) -> Self {
        Self::new(vec![0u8; capacity].into_boxed_slice())
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> StopBuffer<B> {
    /// Use `buf` as the trace buffer.
    pub fn new(buf: B) -> Self {
        StopBuffer {
            buf,
            len: 0,
            dropped: 0,
        }
    }

    /// Valid trace bytes recorded so far.
    pub fn data(&self) -> &[u8] {
        &self.buf.as_ref()[..self.len]
    }
    /// Messages dropped because the buffer was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
    /// Empty the buffer (and accept messages again after a stop).
    pub fn clear(&mut self) {
        self.len = 0;
        self.dropped = 0;
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> ByteSink for StopBuffer<B> {
    #[inline]
    fn put_bytes(&mut self, bytes: &[u8]) -> Result<(), Stopped> {
        // Once stopped, stay stopped even if a smaller message would fit:
        // a trace with a hole in the middle would decode wrongly.
        let end = self.len + bytes.len();
        let buf = self.buf.as_mut();
        if self.dropped != 0 || end > buf.len() {
            self.dropped += 1;
            return Err(Stopped);
        }
        buf[self.len..end].copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }

    #[inline]
    fn spare(&mut self, n: usize) -> Option<&mut [u8]> {
        // The slice's own bounds check is the only one.
        let rest = self.buf.as_mut().get_mut(self.len..)?;
        if self.dropped != 0 || rest.len() < n {
            return None;
        }
        Some(rest)
    }

    #[inline]
    fn commit(&mut self, n: usize) {
        self.len += n;
    }
}

/// A sink that keeps the writes themselves (tests, and the in-process
/// round trip without Nexus framing).
#[cfg(feature = "std")]
#[derive(Default)]
pub struct WriteLog {
    /// Writes with their timestamps, in order.
    pub writes: Vec<(ItcWrite, u64)>,
}

#[cfg(feature = "std")]
impl Sink for WriteLog {
    fn put_writes(&mut self, writes: &[ItcWrite], ts: u64) -> Result<(), Stopped> {
        self.writes.extend(writes.iter().map(|&w| (w, ts)));
        Ok(())
    }
}
