//! Streaming decoder: Nexus messages -> ITC writes -> headers and records.
//!
//! Feed it messages in trace order ([`Decoder::on_message`]), tell it about
//! framing errors ([`Decoder::on_gap`]), and call [`Decoder::finish`] at the
//! end. It calls a sink with [`Output`] items; nothing is buffered beyond
//! the record being assembled, so memory is constant in the trace size.
//!
//! Compared with SiFive's decoder it
//! * keeps the last counter of a trace (a counter's value is only known to
//!   be complete when the next write shows no 16-bit high part follows; at
//!   the end of the trace it is complete by definition),
//! * recognises a header re-sent mid-trace (trace off/on) after any record,
//! * keeps one state per Nexus source (core), so interleaved cores decode,
//! * never stops at an error: it reports it with the byte offset and resumes
//!   at the next record (Raw, Delta: records are self-contained) or the next
//!   header (DeltaXOR: the XOR chain is broken until the next header).
//!
//! Values: [`CounterValue::recorded`] is what the trace carries;
//! [`CounterValue::reading`] the counter reading it stands for where that
//! is known (Raw, DeltaXOR; for Delta the sum of deltas since trace-on);
//! [`CounterValue::delta`] the increase since the previous record of the
//! same source (known for Delta always, otherwise from the second record
//! after a header on).
#![cfg(feature = "std")]

use crate::format::{
    apply_delta, decode_address, decode_count, delta, xor_step, CountType, CounterDesc,
    CounterInfo, Event, EventType, Header, IdTag, ItcWrite, RecordType, WriteSize, HEADER_MARKER,
    MAX_COUNTERS,
};
use crate::nexus::read::{Located, Message, MessageReader, NexusError, TimestampTracker};
use crate::nexus::write::WriterConfig;
use crate::nexus::NexusConfig;
use std::fmt;
use std::io::Read;

/// Decoder settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeConfig {
    /// ITC channel carrying the performance data (default 6).
    pub channel: u8,
    /// Nexus framing settings.
    pub nexus: NexusConfig,
}

impl Default for DecodeConfig {
    fn default() -> Self {
        DecodeConfig {
            channel: crate::format::DEFAULT_CHANNEL,
            nexus: NexusConfig::default(),
        }
    }
}

impl From<WriterConfig> for DecodeConfig {
    /// The settings that decode what a writer of `w` wrote.
    fn from(w: WriterConfig) -> Self {
        DecodeConfig {
            channel: w.channel,
            nexus: NexusConfig {
                src_bits: w.src_bits,
                timestamp_bits: w.timestamp_bits,
            },
        }
    }
}

/// One counter value of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterValue {
    /// HPM counter index (mask bit).
    pub index: u8,
    /// The value as recorded (Raw reading, Delta, or XOR difference).
    pub recorded: u64,
    /// The reading it stands for (Delta: running sum since trace-on).
    pub reading: u64,
    /// Increase since the previous record of this source, if known.
    pub delta: Option<u64>,
}

/// A decoded trace record.
#[derive(Debug, PartialEq, Eq)]
pub struct Record {
    /// Nexus source (core).
    pub src: u16,
    /// Byte offset of the message carrying the record type.
    pub offset: u64,
    /// Trace time of that message (`None` before any full timestamp).
    pub timestamp: Option<u64>,
    /// Record kind.
    pub kind: RecordType,
    /// First address: the function (enter/exit) or the PC (manual, ISR).
    pub addr: u64,
    /// Second address of enter/exit records: call site / returned-to.
    pub addr2: Option<u64>,
    /// Counter values, in mask order.
    pub counters: Vec<CounterValue>,
    /// Count type of the header this record belongs to.
    pub count_type: CountType,
}

impl Clone for Record {
    fn clone(&self) -> Self {
        let counters = self.counters.clone();
        Record { counters, ..*self }
    }

    /// Reuses `self`'s counter vector: consumers that keep records in
    /// recycled slots allocate nothing per record.
    fn clone_from(&mut self, source: &Self) {
        let mut counters = core::mem::take(&mut self.counters);
        counters.clone_from(&source.counters);
        *self = Record {
            counters,
            ..*source
        };
    }
}

impl Record {
    /// The value of counter `index`, if recorded.
    pub fn counter(&self, index: u8) -> Option<&CounterValue> {
        self.counters.iter().find(|c| c.index == index)
    }
}

/// A decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderInfo {
    /// Nexus source (core).
    pub src: u16,
    /// Byte offset of the marker message.
    pub offset: u64,
    /// Trace time of the marker message.
    pub timestamp: Option<u64>,
    /// The header.
    pub header: Header,
}

/// Why decoding was interrupted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// Nexus framing was broken (message lost).
    Framing(crate::nexus::read::NexusErrorKind),
    /// A message on the channel is not a valid ITC write.
    BadWrite {
        /// The message's IDTAG.
        idtag: u32,
        /// Its data.
        data: u32,
    },
    /// A write of the wrong size or value where the format expects another.
    Unexpected {
        /// What the format expected there.
        expected: &'static str,
        /// Size of the write that came.
        size: WriteSize,
        /// Its value.
        value: u32,
    },
    /// The trace ended inside a header or record.
    Truncated(&'static str),
}

/// An error with its position; decoding goes on after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset of the offending message.
    pub offset: u64,
    /// Source the error concerns (`None` for framing errors).
    pub src: Option<u16>,
    /// What went wrong.
    pub kind: DecodeErrorKind,
    /// Where decoding of this source resumes.
    pub resume: Resume,
}

/// Where decoding resumes after an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// At the next record type byte.
    NextRecord,
    /// At the next header marker.
    NextHeader,
    /// Nothing to resume (end of trace, or other sources unaffected).
    Nothing,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte offset {} (0x{:x}): ", self.offset, self.offset)?;
        if let Some(src) = self.src {
            write!(f, "core {src}: ")?;
        }
        match &self.kind {
            DecodeErrorKind::Framing(k) => write!(f, "{k}")?,
            DecodeErrorKind::BadWrite { idtag, data } => write!(
                f,
                "not a valid ITC write (IDTAG 0x{idtag:x}, data 0x{data:x})"
            )?,
            DecodeErrorKind::Unexpected {
                expected,
                size,
                value,
            } => write!(
                f,
                "expected {expected}, got {}-bit write 0x{value:x}",
                size.max_value().count_ones()
            )?,
            DecodeErrorKind::Truncated(what) => write!(f, "trace ends inside {what}")?,
        }
        match self.resume {
            Resume::NextRecord => write!(f, "; resuming at the next record"),
            Resume::NextHeader => write!(f, "; resuming at the next header"),
            Resume::Nothing => Ok(()),
        }
    }
}

impl std::error::Error for DecodeError {}

/// What the decoder produces.
#[derive(Debug)]
pub enum Output<'a> {
    /// A header (trace-on).
    Header(&'a HeaderInfo),
    /// A complete record.
    Record(&'a Record),
    /// A recoverable error.
    Error(DecodeError),
}

/// Counts of what was seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Nexus messages framed.
    pub messages: u64,
    /// Data Acquisition messages on the performance channel.
    pub channel_writes: u64,
    /// Data Acquisition messages on other channels (ignored).
    pub other_channel_writes: u64,
    /// Messages of other kinds (ICT, instruction trace: ignored).
    pub other_messages: u64,
    /// Headers decoded.
    pub headers: u64,
    /// Records decoded.
    pub records: u64,
    /// Errors reported.
    pub errors: u64,
    /// Channel writes skipped while waiting for a header or record.
    pub skipped_writes: u64,
}

/// Where a source's parser is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for a header marker.
    Sync,
    /// Waiting for the next record type (skipping after an error).
    SyncRecord,
    HeaderCountType,
    HeaderMask,
    /// Counter definition words of slot `slot`: word `word` (0 = type).
    HeaderDef {
        slot: u8,
        word: u8,
    },
    /// Between records.
    RecordStart,
    /// Address `n` (0 or 1) of the record; `low` set when a high word is due.
    Address {
        n: u8,
        low: Option<u32>,
    },
    /// Counter values; `next` = position in the mask order of the value
    /// being assembled, `low` its low word once seen.
    Counts {
        next: u8,
        low: Option<u32>,
    },
}

/// One source's decoding state.
#[derive(Debug, Clone)]
struct SourceState {
    state: State,
    /// Header being assembled / in force.
    header: Option<HeaderInfo>,
    building: HeaderInfo,
    mask: u32,
    def_type: EventType,
    def_words: [u32; 3],
    /// Counter slots of the header in mask order.
    order: [u8; MAX_COUNTERS],
    widths: [u8; MAX_COUNTERS],
    n_counters: u8,
    /// DeltaXOR address chain.
    last_addr: u64,
    /// Previous reading per slot (by mask position), if known.
    prev: [Option<u64>; MAX_COUNTERS],
    record: Record,
}

impl SourceState {
    fn new(src: u16) -> Self {
        SourceState {
            state: State::Sync,
            header: None,
            building: HeaderInfo {
                src,
                offset: 0,
                timestamp: None,
                header: Header::new(CountType::Raw),
            },
            mask: 0,
            def_type: EventType::HwGeneral,
            def_words: [0; 3],
            order: [0; MAX_COUNTERS],
            widths: [0; MAX_COUNTERS],
            n_counters: 0,
            last_addr: 0,
            prev: [None; MAX_COUNTERS],
            record: Record {
                src,
                offset: 0,
                timestamp: None,
                kind: RecordType::Manual,
                addr: 0,
                addr2: None,
                counters: Vec::with_capacity(MAX_COUNTERS),
                count_type: CountType::Raw,
            },
        }
    }

    fn count_type(&self) -> CountType {
        self.header
            .as_ref()
            .map_or(CountType::Raw, |h| h.header.count_type)
    }

    /// Leaves the header or record an error interrupted; returns where
    /// decoding of this source resumes.
    fn recover(&mut self) -> Resume {
        let (state, resume) = match self.header {
            Some(h) if self.state != State::Sync && h.header.count_type != CountType::DeltaXor => {
                (State::SyncRecord, Resume::NextRecord)
            }
            _ => (State::Sync, Resume::NextHeader),
        };
        self.state = state;
        resume
    }
}

/// What one write did to a source's state machine.
enum Step {
    /// Consumed.
    Done,
    /// Ignored while resynchronising.
    Skipped,
    /// Consumed, the header is complete.
    HeaderDone,
    /// The record is complete; `again`: the write was not part of it
    /// (it starts something new), feed it again.
    RecordDone { again: bool },
    /// Not acceptable here.
    Error(&'static str),
}

/// Counts and reports an error.
fn report(
    stats: &mut Stats,
    offset: u64,
    src: Option<u16>,
    kind: DecodeErrorKind,
    resume: Resume,
    sink: &mut impl FnMut(Output<'_>),
) {
    stats.errors += 1;
    sink(Output::Error(DecodeError {
        offset,
        src,
        kind,
        resume,
    }));
}

/// The streaming decoder.
pub struct Decoder {
    cfg: DecodeConfig,
    times: TimestampTracker,
    sources: Vec<Option<Box<SourceState>>>,
    stats: Stats,
}

impl Decoder {
    /// A decoder with the given settings.
    pub fn new(cfg: DecodeConfig) -> Self {
        Decoder {
            cfg,
            times: TimestampTracker::new(cfg.nexus.timestamp_bits),
            sources: Vec::new(),
            stats: Stats::default(),
        }
    }

    /// What was seen so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// A message was lost (framing error at `offset`): every source that is
    /// inside a header or record, or whose DeltaXOR chain depends on every
    /// record, resynchronises, and times are unknown until each source's
    /// next full timestamp.
    pub fn on_gap(&mut self, err: NexusError, sink: &mut impl FnMut(Output<'_>)) {
        self.times.forget();
        let mut resume = Resume::Nothing;
        for s in self.sources.iter_mut().flatten() {
            let xor = s.count_type() == CountType::DeltaXor;
            match s.state {
                State::Sync | State::SyncRecord => {}
                State::RecordStart if !xor => {}
                _ => resume = s.recover(),
            }
        }
        let kind = DecodeErrorKind::Framing(err.kind);
        report(&mut self.stats, err.offset, None, kind, resume, sink);
    }

    /// Feeds one message.
    pub fn on_message(&mut self, m: &Located, sink: &mut impl FnMut(Output<'_>)) {
        self.stats.messages += 1;
        let time = self.times.on_message(&m.message);
        let Message::DataAcquisition(da) = m.message else {
            self.stats.other_messages += 1;
            return;
        };
        let tag = IdTag(da.idtag);
        if tag.channel() != Some(self.cfg.channel) {
            self.stats.other_channel_writes += 1;
            return;
        }
        self.stats.channel_writes += 1;
        let src = da.src;
        let i = src as usize;
        if self.sources.len() <= i {
            self.sources.resize_with(i + 1, || None);
        }
        let s = self.sources[i].get_or_insert_with(|| Box::new(SourceState::new(src)));
        let stats = &mut self.stats;
        let Some(w) = ItcWrite::from_message(tag, da.data) else {
            let resume = s.recover();
            let kind = DecodeErrorKind::BadWrite {
                idtag: da.idtag,
                data: da.data,
            };
            return report(stats, m.offset, Some(src), kind, resume, sink);
        };
        // Ends: the write that completes a record is fed once more, and
        // after an error the source waits for a header or record start,
        // which takes the write or skips it.
        loop {
            match step(s, m.offset, time, w) {
                Step::Done => {}
                Step::Skipped => stats.skipped_writes += 1,
                Step::HeaderDone => {
                    stats.headers += 1;
                    sink(Output::Header(s.header.as_ref().expect("header just set")));
                }
                Step::RecordDone { again } => {
                    stats.records += 1;
                    sink(Output::Record(&s.record));
                    if again {
                        continue;
                    }
                }
                Step::Error(expected) => {
                    let resume = s.recover();
                    let kind = DecodeErrorKind::Unexpected {
                        expected,
                        size: w.size,
                        value: w.value,
                    };
                    report(stats, m.offset, Some(src), kind, resume, sink);
                    continue;
                }
            }
            return;
        }
    }

    /// Ends the trace: completes a record whose last counter was pending and
    /// reports anything left unfinished.
    pub fn finish(&mut self, end_offset: u64, sink: &mut impl FnMut(Output<'_>)) {
        for s in self.sources.iter_mut().flatten() {
            let what = match s.state {
                State::Sync | State::SyncRecord | State::RecordStart => None,
                State::Counts {
                    next,
                    low: Some(low),
                } if next + 1 == s.n_counters => {
                    push_count(s, next, decode_count(low, None));
                    s.state = State::RecordStart;
                    self.stats.records += 1;
                    sink(Output::Record(&s.record));
                    None
                }
                State::HeaderCountType | State::HeaderMask | State::HeaderDef { .. } => {
                    Some("a header")
                }
                State::Address { .. } | State::Counts { .. } => Some("a record"),
            };
            if let Some(what) = what {
                s.state = State::Sync;
                let (kind, src) = (DecodeErrorKind::Truncated(what), s.record.src);
                report(
                    &mut self.stats,
                    end_offset,
                    Some(src),
                    kind,
                    Resume::Nothing,
                    sink,
                );
            }
        }
    }
}

/// Stores counter value `pos` (mask order) of the current record.
fn push_count(s: &mut SourceState, pos: u8, recorded: u64) {
    let p = pos as usize;
    let (width, prev) = (s.widths[p], s.prev[p]);
    // Delta readings are sums from 0 at trace-on; Raw and DeltaXOR readings
    // have no known predecessor until the first record after the header.
    let (reading, d) = match s.count_type() {
        CountType::Raw => (recorded, prev.map(|old| delta(recorded, old, width))),
        CountType::Delta => {
            let sum = apply_delta(prev.unwrap_or(0), recorded, width);
            (sum, Some(recorded))
        }
        CountType::DeltaXor => {
            let r = xor_step(prev.unwrap_or(0), recorded);
            (r, prev.map(|old| delta(r, old, width)))
        }
    };
    s.prev[p] = Some(reading);
    s.record.counters.push(CounterValue {
        index: s.order[p],
        recorded,
        reading,
        delta: d,
    });
}

fn start_header(s: &mut SourceState, offset: u64, time: Option<u64>) {
    s.building.offset = offset;
    s.building.timestamp = time;
    s.state = State::HeaderCountType;
}

fn finish_header(s: &mut SourceState) {
    let h = s.building;
    s.n_counters = 0;
    for (i, c) in h.header.iter() {
        let n = s.n_counters as usize;
        s.order[n] = i;
        s.widths[n] = c.info.recorded_width();
        s.n_counters += 1;
    }
    s.last_addr = 0;
    s.prev = [None; MAX_COUNTERS];
    s.header = Some(h);
    s.state = State::RecordStart;
}

/// Expects the definition of the first counter in the mask from slot
/// `from` on, or ends the header.
fn next_definition(s: &mut SourceState, from: u32) -> Step {
    match (from..32).find(|i| s.mask & (1 << i) != 0) {
        Some(slot) => {
            s.state = State::HeaderDef {
                slot: slot as u8,
                word: 0,
            };
            Step::Done
        }
        None => {
            finish_header(s);
            Step::HeaderDone
        }
    }
}

/// Advances one source's state machine by one write.
fn step(s: &mut SourceState, offset: u64, time: Option<u64>, w: ItcWrite) -> Step {
    use WriteSize::*;
    let is_marker = w.size == Bits32 && w.value == HEADER_MARKER;
    match s.state {
        State::Sync => {
            if is_marker {
                start_header(s, offset, time);
                Step::Done
            } else {
                Step::Skipped
            }
        }
        State::SyncRecord => {
            if is_marker {
                start_header(s, offset, time);
                Step::Done
            } else if w.size == Bits8 && RecordType::from_u8(w.value as u8).is_some() {
                s.state = State::RecordStart;
                step(s, offset, time, w)
            } else {
                Step::Skipped
            }
        }
        State::HeaderCountType => match (w.size, CountType::from_u8(w.value as u8)) {
            (Bits8, Some(ct)) => {
                s.building.header = Header::new(ct);
                s.state = State::HeaderMask;
                Step::Done
            }
            _ => Step::Error("an 8-bit count type (0-2) after the header marker"),
        },
        State::HeaderMask => {
            if w.size != Bits32 {
                return Step::Error("the 32-bit counter mask");
            }
            s.mask = w.value;
            next_definition(s, 0)
        }
        State::HeaderDef { slot, word } => {
            if w.size != Bits32 {
                return Step::Error("a 32-bit counter definition word");
            }
            if word == 0 {
                let Some(ty) = EventType::from_u32(w.value) else {
                    return Step::Error("a counter event type (0-2 or 16)");
                };
                s.def_type = ty;
            } else {
                s.def_words[word as usize - 1] = w.value;
            }
            // After the type: code, info (types 0, 1, 16) or data low,
            // data high, info (type 2).
            let last = if s.def_type == EventType::HwRaw { 3 } else { 2 };
            if word < last {
                s.state = State::HeaderDef {
                    slot,
                    word: word + 1,
                };
                return Step::Done;
            }
            let [low, high, _] = s.def_words;
            let event = match s.def_type {
                EventType::HwRaw => Event::Raw {
                    event_data: (high as u64) << 32 | low as u64,
                },
                ty => match Event::from_code(ty, low) {
                    Some(e) => e,
                    None => return Step::Error("an event code of at most 16 bits"),
                },
            };
            let info = CounterInfo::from_u32(w.value);
            s.building.header.counters[slot as usize] = Some(CounterDesc { event, info });
            next_definition(s, slot as u32 + 1)
        }
        State::RecordStart => {
            if is_marker {
                start_header(s, offset, time);
                return Step::Done;
            }
            match (w.size, RecordType::from_u8(w.value as u8)) {
                (Bits8, Some(kind)) => {
                    let ct = s.count_type();
                    let r = &mut s.record;
                    r.offset = offset;
                    r.timestamp = time;
                    r.kind = kind;
                    r.addr = 0;
                    r.addr2 = None;
                    r.counters.clear();
                    r.count_type = ct;
                    s.state = State::Address { n: 0, low: None };
                    Step::Done
                }
                _ => Step::Error("an 8-bit record type (0-3) or a header"),
            }
        }
        State::Address { n, low } => {
            if w.size != Bits32 {
                return Step::Error("a 32-bit address word");
            }
            let value = match low {
                None if w.value & 1 != 0 => {
                    s.state = State::Address {
                        n,
                        low: Some(w.value),
                    };
                    return Step::Done;
                }
                None => decode_address(w.value, None),
                Some(l) => decode_address(l, Some(w.value)),
            };
            let addr = if s.count_type() == CountType::DeltaXor {
                s.last_addr ^ value
            } else {
                value
            };
            s.last_addr = addr;
            if n == 0 {
                s.record.addr = addr;
            } else {
                s.record.addr2 = Some(addr);
            }
            if (n as usize) + 1 < s.record.kind.address_count() {
                s.state = State::Address {
                    n: n + 1,
                    low: None,
                };
                Step::Done
            } else if s.n_counters == 0 {
                s.state = State::RecordStart;
                Step::RecordDone { again: false }
            } else {
                s.state = State::Counts { next: 0, low: None };
                Step::Done
            }
        }
        State::Counts { next, low } => {
            // A 32-bit write after a low word is the next value's low word.
            let (low, high, next_low) = match (w.size, low) {
                (Bits32, None) => {
                    s.state = State::Counts {
                        next,
                        low: Some(w.value),
                    };
                    return Step::Done;
                }
                (Bits32, Some(l)) => (l, None, Some(w.value)),
                (Bits16, Some(l)) => (l, Some(w.value as u16), None),
                (Bits16, None) => return Step::Error("a 32-bit counter value"),
                (Bits8, Some(l)) if next + 1 == s.n_counters => (l, None, None),
                (Bits8, _) => return Step::Error("more counter values (record cut short)"),
            };
            push_count(s, next, decode_count(low, high));
            if next + 1 < s.n_counters {
                s.state = State::Counts {
                    next: next + 1,
                    low: next_low,
                };
                Step::Done
            } else {
                s.state = State::RecordStart;
                Step::RecordDone {
                    again: high.is_none(),
                }
            }
        }
    }
}

/// Decodes a whole byte stream, calling `sink` for every output item;
/// `progress` is called with the byte offset every few thousand messages.
pub fn decode_stream<R: Read>(
    input: R,
    cfg: DecodeConfig,
    sink: &mut impl FnMut(Output<'_>),
    progress: &mut impl FnMut(u64),
) -> Stats {
    let mut reader = MessageReader::new(input, cfg.nexus);
    let mut dec = Decoder::new(cfg);
    let mut n = 0u32;
    while let Some(item) = reader.next_message() {
        match item {
            Ok(m) => dec.on_message(&m, sink),
            Err(e) => dec.on_gap(e, sink),
        }
        n = n.wrapping_add(1);
        if n.is_multiple_of(8192) {
            progress(reader.offset());
        }
    }
    progress(reader.offset());
    dec.finish(reader.offset(), sink);
    *dec.stats()
}
