//! Where ITC writes go: the [`Sink`] trait and its byte-level helpers.
//!
//! * [`ItcStimulus`]: the trace encoder's ITC stimulus registers (bare
//!   metal, MMIO); the hardware frames and timestamps the messages.
//! * [`crate::nexus::write::NexusWriter`]: a software trace encoder that frames each
//!   write as a Nexus Data Acquisition message into a [`ByteSink`].
//! * [`StopBuffer`]: a fixed-size byte buffer that stops on wrap, the
//!   software counterpart of the trace encoder's SRAM/SBA buffer: the
//!   [`ByteSink`] the bare-metal cores ([`MemBuffer`]) and the Linux
//!   collectors (`VecBuffer`, std only) give to their `NexusWriter`s.

use crate::format::{ItcWrite, RecordValues, WriteSize, ITC_STIMULUS_OFFSET, MAX_RECORD_WRITES};

/// The sink stopped accepting data (buffer full, stop-on-wrap); the write
/// was dropped and so will every later one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped;

/// Destination of ITC writes.
pub trait Sink {
    /// Append one write. `ts` is the trace timestamp of the record the
    /// write belongs to; sinks backed by hardware ignore it (the trace
    /// encoder stamps messages itself).
    fn put(&mut self, w: ItcWrite, ts: u64) -> Result<(), Stopped>;

    /// End of a header or record: sinks that stage writes pass them on now
    /// (all or nothing, so a full buffer never holds half a record).
    #[inline]
    fn flush(&mut self) -> Result<(), Stopped> {
        Ok(())
    }

    /// A whole record: `writes` in order, then [`Sink::flush`]. The same
    /// as putting them one by one; sinks may do it faster.
    #[inline]
    fn put_record(&mut self, writes: &[ItcWrite], ts: u64) -> Result<(), Stopped> {
        for w in writes {
            self.put(*w, ts)?;
        }
        self.flush()
    }

    /// A whole record given as values: its writes
    /// ([`RecordValues::to_writes`]) as [`Sink::put_record`] takes them.
    /// Sinks that frame writes may reuse what they framed for equal values.
    #[inline]
    fn put_values(&mut self, rec: &RecordValues<'_>, ts: u64) -> Result<(), Stopped> {
        put_values_as_writes(self, rec, ts)
    }
}

/// [`Sink::put_values`] as writes: the record's
/// ([`RecordValues::to_writes`]) through [`Sink::put_record`]. The
/// default, and what a sink that frames values itself falls back on.
#[inline]
pub fn put_values_as_writes<S: Sink + ?Sized>(
    sink: &mut S,
    rec: &RecordValues<'_>,
    ts: u64,
) -> Result<(), Stopped> {
    let mut writes = [ItcWrite::w8(0); MAX_RECORD_WRITES];
    let k = rec.to_writes(&mut writes);
    sink.put_record(&writes[..k], ts)
}

impl<S: Sink + ?Sized> Sink for &mut S {
    #[inline]
    fn put(&mut self, w: ItcWrite, ts: u64) -> Result<(), Stopped> {
        (**self).put(w, ts)
    }
    #[inline]
    fn flush(&mut self) -> Result<(), Stopped> {
        (**self).flush()
    }
    #[inline]
    fn put_record(&mut self, writes: &[ItcWrite], ts: u64) -> Result<(), Stopped> {
        (**self).put_record(writes, ts)
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

impl<'a> StopBuffer<&'a mut [u8]> {
    /// Use `buf` as the trace buffer.
    pub fn new(buf: &'a mut [u8]) -> Self {
        StopBuffer {
            buf,
            len: 0,
            dropped: 0,
        }
    }
}

#[cfg(feature = "std")]
impl StopBuffer<Box<[u8]>> {
    /// A buffer that accepts at most `capacity` bytes. The memory is
    /// zeroed, which the OS may map lazily (see [`VecBuffer::prefaulted`]).
    pub fn with_capacity(capacity: usize) -> Self {
        StopBuffer {
            buf: vec![0u8; capacity].into_boxed_slice(),
            len: 0,
            dropped: 0,
        }
    }

    /// Like [`VecBuffer::with_capacity`], with every page of the buffer
    /// written once, so appending never takes a page fault.
    pub fn prefaulted(capacity: usize) -> Self {
        let mut b = Self::with_capacity(capacity);
        for page in b.buf.chunks_mut(4096) {
            // Volatile so that the store of a value already there is not
            // optimised away.
            let p: *mut u8 = &mut page[0];
            // SAFETY: `p` points into our own buffer.
            unsafe { std::ptr::write_volatile(p, 0) };
        }
        b
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> StopBuffer<B> {
    /// Valid trace bytes recorded so far.
    pub fn data(&self) -> &[u8] {
        &self.buf.as_ref()[..self.len]
    }
    /// Messages dropped because the buffer was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
    /// True once the buffer has refused a message.
    pub fn stopped(&self) -> bool {
        self.dropped != 0
    }
    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.buf.as_ref().len()
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

/// The ITC stimulus register of one channel of one trace encoder.
///
/// Writes poll the register first: a read returning 0 means the ITC FIFO is
/// full, so the write waits until it drains (as SiFive's library does).
/// Sub-word writes go to byte offset +2 (16 bits) or +3 (8 bits), which is
/// what gives the message its IDTAG (see [`crate::format::IdTag`]).
pub struct ItcStimulus {
    reg: *mut u32,
}

impl ItcStimulus {
    /// The stimulus register of `channel` of the trace encoder at
    /// `te_base`.
    ///
    /// # Safety
    /// `te_base` must be the mapped base of a trace encoder whose ITC
    /// stimulus registers may be read and written by this code, and
    /// `channel` must be below 32.
    pub unsafe fn new(te_base: usize, channel: u8) -> Self {
        ItcStimulus {
            reg: (te_base + ITC_STIMULUS_OFFSET + 4 * channel as usize) as *mut u32,
        }
    }
}

impl Sink for ItcStimulus {
    #[inline]
    fn put(&mut self, w: ItcWrite, _ts: u64) -> Result<(), Stopped> {
        // SAFETY: `new`'s contract makes `reg` a valid MMIO register; the
        // sub-word addresses are inside it.
        unsafe {
            while core::ptr::read_volatile(self.reg) == 0 {
                core::hint::spin_loop();
            }
            match w.size {
                WriteSize::Bits32 => core::ptr::write_volatile(self.reg, w.value),
                WriteSize::Bits16 => {
                    core::ptr::write_volatile((self.reg as *mut u16).add(1), w.value as u16)
                }
                WriteSize::Bits8 => {
                    core::ptr::write_volatile((self.reg as *mut u8).add(3), w.value as u8)
                }
            }
        }
        Ok(())
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
    fn put(&mut self, w: ItcWrite, ts: u64) -> Result<(), Stopped> {
        self.writes.push((w, ts));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_buffer_stops_on_wrap_and_stays_stopped() {
        let mut raw = [0u8; 5];
        let mut b = MemBuffer::new(&mut raw);
        assert_eq!(b.put_bytes(&[1, 2, 3]), Ok(()));
        assert_eq!(b.put_bytes(&[4, 5, 6]), Err(Stopped));
        // would fit, but the buffer has stopped
        assert_eq!(b.put_bytes(&[7]), Err(Stopped));
        assert_eq!(b.data(), &[1, 2, 3]);
        assert_eq!(b.dropped(), 2);
    }

    #[test]
    fn itc_stimulus_writes_sub_words_at_their_offsets() {
        // A fake register bank in memory whose "FIFO" always has room
        // (non-zero reads).
        let mut bank = [1u32; 64];
        let base = bank.as_mut_ptr() as usize - ITC_STIMULUS_OFFSET;
        // SAFETY: the stimulus registers of channel 6 land inside `bank`,
        // which outlives `s`.
        let mut s = unsafe { ItcStimulus::new(base, 6) };
        s.put(ItcWrite::w8(0xab), 0).unwrap();
        assert_eq!(bank[6].to_le_bytes(), [1, 0, 0, 0xab]);
        s.put(ItcWrite::w16(0x1234), 0).unwrap();
        assert_eq!(bank[6].to_le_bytes(), [1, 0, 0x34, 0x12]);
        s.put(ItcWrite::w32(0xdead_beef), 0).unwrap();
        assert_eq!(bank[6], 0xdead_beef);
        assert_eq!(bank[5], 1);
        assert_eq!(bank[7], 1);
    }
}
