//! The performance trace byte format, in one place.
//!
//! A performance trace is a sequence of ITC ("instrumentation trace
//! component") writes on one channel. Each write is 8, 16 or 32 bits wide;
//! the trace encoder turns it into a Nexus Data Acquisition message whose
//! IDTAG is the byte offset of the write inside the stimulus register bank
//! (see [`IdTag`]) and whose DQDATA is the written value, not shifted.
//!
//! On that stream of writes the SiFive Trace Performance Library defines:
//!
//! * a **header**, written at every trace-on ([`Header`]):
//!   `0x70657266` (32), count type (8), counter mask (32), then for every
//!   set mask bit, least significant first: SBI event type (32); for types
//!   0 and 1 the event code (32), for type 2 the event data low and high
//!   halves (32 + 32); then the low 32 bits of `counter_info` (32);
//! * **records** ([`RecordType`]): a record type (8), one or two addresses
//!   ([`encode_address`]), then one value per selected counter, least
//!   significant mask bit first ([`encode_count`]).
//!
//! Counter values are Raw, Delta or DeltaXOR ([`CountType`], which also
//! defines the state each starts from); [`delta`] and [`xor_step`] turn a
//! counter reading into the recorded value.
//!
//! Everything here is `no_std`, allocation-free and panic-free on any input,
//! so the bare-metal encoder and the host decoder share it unchanged.

/// First word of every header: `('p'<<24)|('e'<<16)|('r'<<8)|'f'`.
pub const HEADER_MARKER: u32 = 0x7065_7266;

/// Number of ITC channels (stimulus registers) a trace encoder has.
pub const ITC_CHANNELS: u8 = 32;

/// The channel SiFive's tools use for performance data by default.
pub const DEFAULT_CHANNEL: u8 = 6;

/// Number of counter slots a header can describe (bits of the mask).
pub const MAX_COUNTERS: usize = 32;

/// Counter slot that carries `HW_TIMESTAMP` (the `time` CSR slot): its
/// value is the trace timestamp, not a CSR read.
pub const TIMESTAMP_COUNTER_INDEX: u8 = 1;

/// Widest value a record can carry for one counter: 32 bits plus a 16-bit
/// high part. Wider counters keep their own width in the header and are
/// recorded modulo 2^48 (see [`CounterInfo::recorded_width`]).
pub const MAX_RECORDED_BITS: u8 = 48;

/// Width of one ITC write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteSize {
    /// A 32-bit store to the stimulus register (offset +0).
    Bits32 = 0,
    /// A 16-bit store to the upper half (offset +2).
    Bits16 = 1,
    /// An 8-bit store to the top byte (offset +3).
    Bits8 = 2,
}

impl WriteSize {
    /// Byte offset of this store inside the 4-byte stimulus register.
    pub const fn offset(self) -> u32 {
        match self {
            WriteSize::Bits32 => 0,
            WriteSize::Bits16 => 2,
            WriteSize::Bits8 => 3,
        }
    }

    /// Largest value a write of this size carries.
    pub const fn max_value(self) -> u32 {
        match self {
            WriteSize::Bits32 => u32::MAX,
            WriteSize::Bits16 => 0xffff,
            WriteSize::Bits8 => 0xff,
        }
    }
}

/// The IDTAG of a Data Acquisition message: the byte offset of the ITC
/// write relative to stimulus register 0, i.e. `channel*4` for a 32-bit
/// write, `channel*4 + 2` for 16 bits, `channel*4 + 3` for 8 bits
/// (0x18 / 0x1a / 0x1b on channel 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IdTag(pub u32);

impl IdTag {
    /// The tag of a `size` write on `channel` (channel taken modulo 32).
    pub const fn new(channel: u8, size: WriteSize) -> IdTag {
        IdTag(((channel % ITC_CHANNELS) as u32) * 4 + size.offset())
    }

    /// The channel this tag belongs to, `None` if past channel 31.
    pub const fn channel(self) -> Option<u8> {
        if self.0 >= ITC_CHANNELS as u32 * 4 {
            None
        } else {
            Some((self.0 / 4) as u8)
        }
    }

    /// The write size this tag encodes; `None` for offset 1 (not a store
    /// the library ever makes).
    pub const fn size(self) -> Option<WriteSize> {
        match self.0 & 3 {
            0 => Some(WriteSize::Bits32),
            2 => Some(WriteSize::Bits16),
            3 => Some(WriteSize::Bits8),
            _ => None,
        }
    }
}

/// One ITC write: a size and a value that fits that size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ItcWrite {
    /// Stored value (only the low `size` bits are meaningful).
    pub value: u32,
    /// Width of the store.
    pub size: WriteSize,
}

impl ItcWrite {
    /// A 32-bit write.
    pub const fn w32(value: u32) -> ItcWrite {
        let size = WriteSize::Bits32;
        ItcWrite { value, size }
    }
    /// A 16-bit write.
    pub const fn w16(value: u16) -> ItcWrite {
        let (value, size) = (value as u32, WriteSize::Bits16);
        ItcWrite { value, size }
    }
    /// An 8-bit write.
    pub const fn w8(value: u8) -> ItcWrite {
        let (value, size) = (value as u32, WriteSize::Bits8);
        ItcWrite { value, size }
    }
    /// The IDTAG this write produces on `channel`.
    pub const fn idtag(self, channel: u8) -> IdTag {
        IdTag::new(channel, self.size)
    }
    /// Rebuild a write from a decoded message; `None` if the tag has an
    /// impossible size or the data does not fit it.
    pub const fn from_message(tag: IdTag, data: u32) -> Option<ItcWrite> {
        match tag.size() {
            Some(size) if data <= size.max_value() => Some(ItcWrite { size, value: data }),
            _ => None,
        }
    }
}

/// How counter values are recorded (8-bit header field).
///
/// State rules (per trace source, reset by every header):
/// * `Raw`: the counter reading itself (modulo 2^recorded width); addresses
///   are written in full.
/// * `Delta`: `new - old`, plus 2^width when the counter wrapped, where
///   `old` is the reading at trace-on (the header) and then at the previous
///   record ([`delta`]); addresses are written in full.
/// * `DeltaXOR`, as SiFive's decoder reads it: every address is XORed with
///   the previous address of the same source (the chain runs through both
///   addresses of enter/exit records, starting from 0 at the header); every
///   counter value is XORed with that counter's previous reading, starting
///   from 0 at the header ([`xor_step`]), so the first record after a
///   header carries the plain readings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CountType {
    /// Plain readings.
    Raw = 0,
    /// Additive difference to the previous reading.
    Delta = 1,
    /// XOR difference to the previous reading/address.
    DeltaXor = 2,
}

impl CountType {
    /// Parse the header byte.
    pub const fn from_u8(v: u8) -> Option<CountType> {
        match v {
            0 => Some(CountType::Raw),
            1 => Some(CountType::Delta),
            2 => Some(CountType::DeltaXor),
            _ => None,
        }
    }
    /// The header byte.
    pub const fn as_u8(self) -> u8 {
        self as u8
    }
}

/// Kind of a trace record (first, 8-bit write of a record).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RecordType {
    /// Function entry: addresses = (entered function, calling function).
    FuncEnter = 0,
    /// Function exit: addresses = (exiting function, function returned to).
    FuncExit = 1,
    /// `perfWriteCntrs()`: address = where it was called from.
    Manual = 2,
    /// Timer sample: address = the interrupted PC.
    Isr = 3,
}

impl RecordType {
    /// Parse the record type byte.
    pub const fn from_u8(v: u8) -> Option<RecordType> {
        match v {
            0 => Some(RecordType::FuncEnter),
            1 => Some(RecordType::FuncExit),
            2 => Some(RecordType::Manual),
            3 => Some(RecordType::Isr),
            _ => None,
        }
    }
    /// The record type byte.
    pub const fn as_u8(self) -> u8 {
        self as u8
    }
    /// How many addresses follow the type: 2 for enter/exit, else 1.
    pub const fn address_count(self) -> usize {
        match self {
            RecordType::FuncEnter | RecordType::FuncExit => 2,
            RecordType::Manual | RecordType::Isr => 1,
        }
    }
}

/// SBI "hardware general" event codes (SBI PMU, event type 0) as the
/// library names them, plus SiFive's `HW_TIMESTAMP`.
pub mod hw {
    /// No event.
    pub const NO_EVENT: u16 = 0;
    /// CPU cycles.
    pub const CPU_CYCLES: u16 = 1;
    /// Retired instructions.
    pub const INSTRUCTIONS: u16 = 2;
    /// Cache references.
    pub const CACHE_REFERENCES: u16 = 3;
    /// Cache misses.
    pub const CACHE_MISSES: u16 = 4;
    /// Branch instructions.
    pub const BRANCH_INSTRUCTIONS: u16 = 5;
    /// Branch misses.
    pub const BRANCH_MISSES: u16 = 6;
    /// Bus cycles.
    pub const BUS_CYCLES: u16 = 7;
    /// Front-end stall cycles.
    pub const STALLED_CYCLES_FRONTEND: u16 = 8;
    /// Back-end stall cycles.
    pub const STALLED_CYCLES_BACKEND: u16 = 9;
    /// Reference cycles.
    pub const REF_CPU_CYCLES: u16 = 10;
    /// SiFive extension: the trace timestamp, recorded in counter slot 1.
    pub const TIMESTAMP: u16 = 0x80;
}

/// SBI event type of a counter (32-bit header field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum EventType {
    /// SBI type 0: hardware general event.
    HwGeneral = 0,
    /// SBI type 1: hardware cache event.
    HwCache = 1,
    /// SBI type 2: raw event (`event_data` is the selector value).
    HwRaw = 2,
    /// hpmtrace extension (not an SBI type): a Linux software perf event
    /// (`PERF_COUNT_SW_*` in the code word), written when a host without a
    /// hardware PMU counts a software event in place of a hardware one.
    /// Laid out like types 0/1 (type, code, counter_info).
    LinuxSoftware = 16,
}

impl EventType {
    /// Parse the header word.
    pub const fn from_u32(v: u32) -> Option<EventType> {
        match v {
            0 => Some(EventType::HwGeneral),
            1 => Some(EventType::HwCache),
            2 => Some(EventType::HwRaw),
            16 => Some(EventType::LinuxSoftware),
            _ => None,
        }
    }
}

/// What a counter counts, in the SBI encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// Type 0 with its code (see [`hw`]).
    General {
        /// SBI hardware general event code.
        code: u16,
    },
    /// Type 1. The header carries the SBI event code
    /// `cache_id << 3 | op_id << 1 | result_id` ([`Event::code`]).
    Cache {
        /// SBI cache id (13 bits).
        cache_id: u16,
        /// 0 read, 1 write, 2 prefetch.
        op_id: u8,
        /// 0 access, 1 miss.
        result_id: u8,
    },
    /// Type 2 with the value for the event selector register.
    Raw {
        /// Event selector value (written as two 32-bit halves).
        event_data: u64,
    },
    /// Extension type 16: Linux software event `PERF_COUNT_SW_*` `code`.
    LinuxSoftware {
        /// `PERF_COUNT_SW_*` value (0 cpu-clock, 1 task-clock, 2
        /// page-faults, 3 context-switches, 4 cpu-migrations, ...).
        code: u16,
    },
}

impl Event {
    /// The SBI event type.
    pub const fn event_type(self) -> EventType {
        match self {
            Event::General { .. } => EventType::HwGeneral,
            Event::Cache { .. } => EventType::HwCache,
            Event::Raw { .. } => EventType::HwRaw,
            Event::LinuxSoftware { .. } => EventType::LinuxSoftware,
        }
    }

    /// The 32-bit code word the header carries for types 0, 1 and 16
    /// (`None` for raw events, which carry `event_data` instead).
    pub const fn code(self) -> Option<u32> {
        match self {
            Event::General { code } => Some(code as u32),
            Event::Cache {
                cache_id,
                op_id,
                result_id,
            } => Some(
                ((cache_id as u32 & 0x1fff) << 3)
                    | ((op_id as u32 & 3) << 1)
                    | (result_id as u32 & 1),
            ),
            Event::LinuxSoftware { code } => Some(code as u32),
            Event::Raw { .. } => None,
        }
    }

    /// Rebuild a type 0/1/16 event from its header words.
    pub const fn from_code(ty: EventType, code: u32) -> Option<Event> {
        match ty {
            EventType::HwGeneral if code <= 0xffff => Some(Event::General { code: code as u16 }),
            EventType::HwCache if code <= 0xffff => Some(Event::Cache {
                cache_id: (code >> 3) as u16,
                op_id: ((code >> 1) & 3) as u8,
                result_id: (code & 1) as u8,
            }),
            EventType::LinuxSoftware if code <= 0xffff => {
                Some(Event::LinuxSoftware { code: code as u16 })
            }
            _ => None,
        }
    }

    /// True for the SiFive trace-timestamp pseudo event.
    pub const fn is_timestamp(self) -> bool {
        matches!(
            self,
            Event::General {
                code: hw::TIMESTAMP
            }
        )
    }
}

/// The low 32 bits of SBI `counter_info` (`sbi_pmu_counter_get_info`):
/// CSR number in bits 0-11, index of the most significant bit (width - 1)
/// in bits 12-17. This is SBI's layout, not one that only looks like it:
/// SiFive's library writes the word `counter_info` of its counters, and
/// the codec is `rvpmu-sbi`'s ([`rvpmu_sbi::CounterInfo`]), for a
/// hardware counter. The type bit (XLEN-1) is not in the header: on RV64
/// it is above the 32 bits, on RV32 it is bit 31, which (like bits 18-30)
/// is ignored here. The timestamp counter, software events and stand-ins
/// have CSR 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CounterInfo {
    /// CSR number (12 bits), 0 when not CSR mapped.
    pub csr: u16,
    /// Counter width in bits, 1..=64.
    pub width: u8,
}

impl CounterInfo {
    /// Encode as the header word (SBI's encoding of a hardware counter,
    /// low 32 bits). Width is clamped to 1..=64.
    pub fn to_u32(self) -> u32 {
        rvpmu_sbi::CounterInfo::Hardware {
            csr: self.csr,
            width: self.width.clamp(1, 64),
        }
        .encode() as u32
    }

    /// Decode the header word (bits above 17 are ignored).
    pub fn from_u32(v: u32) -> CounterInfo {
        match rvpmu_sbi::CounterInfo::decode(v as u64) {
            rvpmu_sbi::CounterInfo::Hardware { csr, width } => CounterInfo { csr, width },
            // The type bit (63) is never within the low 32 bits.
            rvpmu_sbi::CounterInfo::Firmware { width } => CounterInfo { csr: 0, width },
        }
    }

    /// The width values are recorded with: the counter width, at most 48.
    /// The header keeps the counter's own width; encoder and decoder both
    /// derive this from it, so their delta/wrap arithmetic uses the same
    /// modulus. (Delta counts lose nothing unless one interval exceeds
    /// 2^48; the encoder counts those in `wide_overflows`.)
    pub const fn recorded_width(self) -> u8 {
        if self.width > MAX_RECORDED_BITS {
            MAX_RECORDED_BITS
        } else if self.width == 0 {
            1
        } else {
            self.width
        }
    }
}

/// One counter slot of a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CounterDesc {
    /// What it counts.
    pub event: Event,
    /// CSR and width.
    pub info: CounterInfo,
}

/// A header: count type plus one optional description per counter slot.
/// The mask is derived from which slots are present.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// How record values are encoded.
    pub count_type: CountType,
    /// Slot `i` describes HPM counter `i`.
    pub counters: [Option<CounterDesc>; MAX_COUNTERS],
}

impl Header {
    /// A header with no counters.
    pub const fn new(count_type: CountType) -> Header {
        Header {
            count_type,
            counters: [None; MAX_COUNTERS],
        }
    }

    /// The 32-bit counter mask.
    pub fn mask(&self) -> u32 {
        self.iter().fold(0, |m, (i, _)| m | 1 << i)
    }

    /// Present counters in record order (least significant mask bit first).
    pub fn iter(&self) -> impl Iterator<Item = (u8, CounterDesc)> + '_ {
        self.counters
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.map(|c| (i as u8, c)))
    }

    /// The header's ITC writes into `out`, in order; returns how many.
    pub fn to_writes(&self, out: &mut [ItcWrite; MAX_HEADER_WRITES]) -> usize {
        let mut k = 0;
        let mut push = |w: ItcWrite| {
            out[k] = w;
            k += 1;
        };
        push(ItcWrite::w32(HEADER_MARKER));
        push(ItcWrite::w8(self.count_type.as_u8()));
        push(ItcWrite::w32(self.mask()));
        for (_, c) in self.iter() {
            push(ItcWrite::w32(c.event.event_type() as u32));
            match c.event {
                Event::Raw { event_data } => {
                    push(ItcWrite::w32(event_data as u32));
                    push(ItcWrite::w32((event_data >> 32) as u32));
                }
                other => push(ItcWrite::w32(other.code().unwrap_or(0))),
            }
            push(ItcWrite::w32(c.info.to_u32()));
        }
        k
    }
}

/// An address as recorded: the low word (bit 0 set when a high word
/// follows) and the optional high word. Addresses are even, so bit 0 of
/// the value itself is free; it is cleared again on decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AddressWords {
    /// Low 32 bits, bit 0 = "high word follows".
    pub low: u32,
    /// Upper 32 bits, present iff they are non-zero.
    pub high: Option<u32>,
}

/// Split a (plain or XORed) address into its one or two 32-bit writes.
/// Bit 0 of `addr` is not recorded (program addresses are even).
pub const fn encode_address(addr: u64) -> AddressWords {
    let high = (addr >> 32) as u32;
    if high == 0 {
        AddressWords {
            low: addr as u32 & !1,
            high: None,
        }
    } else {
        AddressWords {
            low: addr as u32 | 1,
            high: Some(high),
        }
    }
}

/// Join address words back (clears the continuation bit).
pub const fn decode_address(low: u32, high: Option<u32>) -> u64 {
    let h = match high {
        Some(h) => h as u64,
        None => 0,
    };
    (h << 32) | (low & !1) as u64
}

/// A counter value as recorded: low 32 bits and, when bits 32..47 are not
/// all zero, a 16-bit write with them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CountWords {
    /// Bits 0..31.
    pub low: u32,
    /// Bits 32..47, present iff non-zero.
    pub high: Option<u16>,
}

/// The value does not fit the 48 bits a record can carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TooWide(pub u64);

/// Split a recorded counter value into its writes; values of 2^48 and more
/// cannot be expressed (an encoder reduces them modulo the recorded width
/// first, see [`CounterInfo::recorded_width`]).
pub const fn encode_count(v: u64) -> Result<CountWords, TooWide> {
    if v >> MAX_RECORDED_BITS != 0 {
        return Err(TooWide(v));
    }
    Ok(count_words(v))
}

/// The writes of a counter value's low 48 bits ([`encode_count`] for a
/// value known to be below 2^48: the encoders' masked values).
#[inline(always)]
pub const fn count_words(v: u64) -> CountWords {
    let high = (v >> 32) as u16;
    CountWords {
        low: v as u32,
        high: if high == 0 { None } else { Some(high) },
    }
}

/// Most ITC writes in one record: type, two 64-bit addresses, and 32 + 16
/// bits for each counter.
pub const MAX_RECORD_WRITES: usize = 1 + 4 + 2 * MAX_COUNTERS;

/// Most ITC writes in one header: marker, count type, mask, and type,
/// two event words and counter info for each counter.
pub const MAX_HEADER_WRITES: usize = 3 + 4 * MAX_COUNTERS;

/// One record as values, before they are split into ITC writes: what an
/// encoder hands its sink ([`crate::sink::Sink::put_values`]), so that a
/// sink that frames the writes itself can recognise parts it framed
/// before (a pair of addresses, counters that did not move) without the
/// writes being made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordValues<'a> {
    kind: RecordType,
    addrs: [u64; 2],
    /// The counter values up to the timestamp's (included).
    head: &'a [u64],
    /// The counter values after it.
    tail: &'a [u64],
    /// The encoder knows the tail is all zeros
    /// ([`RecordValues::with_zero_tail`]).
    tail_zero: bool,
}

/// The tail of a record whose counters did not move (Delta).
static ZEROS: [u64; MAX_COUNTERS] = [0; MAX_COUNTERS];

impl<'a> RecordValues<'a> {
    /// A record of `kind` with the address values `addrs` as recorded
    /// (DeltaXOR already applied; the second only for two-address kinds)
    /// and the counter values `counts` as recorded (record order, each
    /// below 2^48: bits above are not recorded). The counters from
    /// `tail_from` on are the record's tail: the ones after the
    /// timestamp, which often repeat from one record to the next.
    /// Counters past [`MAX_COUNTERS`] are ignored.
    #[inline(always)]
    pub fn new(kind: RecordType, addrs: [u64; 2], counts: &'a [u64], tail_from: usize) -> Self {
        let counts = &counts[..counts.len().min(MAX_COUNTERS)];
        let (head, tail) = counts.split_at(tail_from.min(counts.len()));
        RecordValues {
            kind,
            addrs,
            head,
            tail,
            tail_zero: false,
        }
    }

    /// The same record with a tail of as many zeros (Delta's record of
    /// counters that did not move, whose values the encoder need not
    /// compute): a sink can tell that tail from one it framed before by
    /// one flag rather than value by value ([`RecordValues::tail_is_zero`]).
    #[inline(always)]
    pub fn with_zero_tail(mut self) -> Self {
        self.tail = &ZEROS[..self.tail.len()];
        self.tail_zero = true;
        self
    }

    /// Whether the tail is known to be all zeros (made by
    /// [`RecordValues::with_zero_tail`]; false says nothing).
    #[inline(always)]
    pub fn tail_is_zero(&self) -> bool {
        self.tail_zero
    }

    /// The record type.
    #[inline(always)]
    pub fn kind(&self) -> RecordType {
        self.kind
    }

    /// The address values as recorded: one, or two for enter/exit.
    #[inline(always)]
    pub fn addrs(&self) -> &[u64] {
        &self.addrs[..self.kind.address_count()]
    }

    /// The counter values before the tail (the timestamp and what comes
    /// before it).
    #[inline(always)]
    pub fn head_counts(&self) -> &'a [u64] {
        self.head
    }

    /// The counter values of the tail.
    #[inline(always)]
    pub fn tail_counts(&self) -> &'a [u64] {
        self.tail
    }

    /// A bound on the ITC writes the record makes: two per address and
    /// counter, and the type, counting two addresses whatever the kind
    /// (a bound the encoder's record loops know without looking at the
    /// kind: fewer instructions per record).
    #[inline(always)]
    pub fn max_writes(&self) -> usize {
        1 + 2 * (2 + self.head.len() + self.tail.len())
    }

    /// The record's ITC writes into `out`; returns how many.
    pub fn to_writes(&self, out: &mut [ItcWrite; MAX_RECORD_WRITES]) -> usize {
        let mut k = 0;
        let mut push = |w: ItcWrite| {
            out[k] = w;
            k += 1;
        };
        push(ItcWrite::w8(self.kind.as_u8()));
        for &a in self.addrs() {
            let w = encode_address(a);
            push(ItcWrite::w32(w.low));
            if let Some(h) = w.high {
                push(ItcWrite::w32(h));
            }
        }
        for &v in self.head.iter().chain(self.tail) {
            let w = count_words(v);
            push(ItcWrite::w32(w.low));
            if let Some(h) = w.high {
                push(ItcWrite::w16(h));
            }
        }
        k
    }
}

/// Join a counter value from its writes.
pub const fn decode_count(low: u32, high: Option<u16>) -> u64 {
    let h = match high {
        Some(h) => h as u64,
        None => 0,
    };
    (h << 32) | low as u64
}

/// `2^width - 1` (all ones for width >= 64).
pub const fn width_mask(width: u8) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// The Delta rule: `new - old`, plus 2^width if the counter wrapped once,
/// both readings taken modulo 2^width.
pub const fn delta(new: u64, old: u64, width: u8) -> u64 {
    new.wrapping_sub(old) & width_mask(width)
}

/// Undo [`delta`] on the decoder side: the reading after `prev` when the
/// recorded delta is `d`.
pub const fn apply_delta(prev: u64, d: u64, width: u8) -> u64 {
    prev.wrapping_add(d) & width_mask(width)
}

/// The DeltaXOR rule, symmetric for both sides: the encoder turns the new
/// reading into the recorded value with `xor_step(prev, new)`, the decoder
/// turns the recorded value back with `xor_step(prev, recorded)`.
pub const fn xor_step(prev: u64, v: u64) -> u64 {
    prev ^ v
}
