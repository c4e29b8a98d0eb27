//! The `event_idx` / `event_data` codec: every event type of the SBI PMU
//! extension as a typed value, validated once at the SBI boundary.
//!
//! Layout (spec, "event_idx"): `event_idx[19:16] = type`, `event_idx[15:0] = code`.
//! Cache events split the code further: `code[15:3] = cache_id`,
//! `code[2:1] = op_id`, `code[0] = result_id`. This module is the only one
//! that knows it.
//!
//! The numbers the spec assigns (event types, general event codes, cache
//! ids, operations and results, firmware event codes) come from `sbi-spec`
//! ([`sbi_spec::pmu`]); what it does not define is written here: the
//! codec itself, the raw `event_data` widths, the implementation-specific
//! firmware range, and the spec's names as strings.

use crate::Error;
use sbi_spec::pmu::{
    cache_event, cache_operation, cache_result, event_type, firmware_event as fw,
    hardware_event as hw,
};

/// Bits of `event_idx` that carry information; the rest must be zero.
pub const EVENT_IDX_MASK: u64 = 0xF_FFFF;
/// `event_data` bits a raw (type 2) event may use.
pub const RAW_V1_DATA_MASK: u64 = (1 << 48) - 1;
/// `event_data` bits a raw v2 (type 3) event may use.
pub const RAW_V2_DATA_MASK: u64 = (1 << 56) - 1;

/// Event type numbers (`event_idx[19:16]`), from `sbi-spec`.
#[allow(missing_docs)] // the spec's type names
pub mod kind {
    use super::event_type;
    pub const GENERAL: u8 = event_type::HARDWARE_GENERAL as u8;
    pub const CACHE: u8 = event_type::HARDWARE_CACHE as u8;
    pub const RAW: u8 = event_type::HARDWARE_RAW as u8;
    pub const RAW_V2: u8 = event_type::HARDWARE_RAW_V2 as u8;
    pub const FIRMWARE: u8 = event_type::FIRMWARE as u8;
}

/// The `event_idx` of type `ty` and code `code`.
pub const fn event_idx(ty: u8, code: u16) -> u32 {
    (ty as u32) << 16 | code as u32
}

/// The type field of an `event_idx` (`event_idx[19:16]`, when bits 20 and
/// up are clear).
pub const fn type_of(event_idx: u32) -> u32 {
    event_idx >> 16
}

/// The code field of an `event_idx` (`event_idx[15:0]`).
pub const fn code_of(event_idx: u32) -> u16 {
    event_idx as u16
}

/// Whether an event-info entry's `event_data` means anything for its
/// `event_idx`: raw, raw v2 and the platform firmware event; every other
/// type's is not looked at ([`Event::decode_info`]).
#[inline]
pub const fn info_uses_data(event_idx: u32) -> bool {
    let ty = type_of(event_idx);
    ty == kind::RAW as u32
        || ty == kind::RAW_V2 as u32
        || (ty == kind::FIRMWARE as u32 && code_of(event_idx) == FW_PLATFORM_CODE)
}

/// Whether an `event_idx` sets bits the spec reserves (20 and up).
pub const fn reserved_bits(event_idx: u64) -> bool {
    event_idx & !EVENT_IDX_MASK != 0
}

/// Hardware general events (type 0), codes 1..=10.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
#[allow(missing_docs)] // variants are the spec's SBI_PMU_HW_* names
#[non_exhaustive]
pub enum General {
    CpuCycles = hw::CPU_CYCLES as u8,
    Instructions = hw::INSTRUCTIONS as u8,
    CacheReferences = hw::CACHE_REFERENCES as u8,
    CacheMisses = hw::CACHE_MISSES as u8,
    BranchInstructions = hw::BRANCH_INSTRUCTIONS as u8,
    BranchMisses = hw::BRANCH_MISSES as u8,
    BusCycles = hw::BUS_CYCLES as u8,
    StalledCyclesFrontend = hw::STALLED_CYCLES_FRONTEND as u8,
    StalledCyclesBackend = hw::STALLED_CYCLES_BACKEND as u8,
    RefCpuCycles = hw::REF_CPU_CYCLES as u8,
}

impl General {
    /// All general events, in code order.
    pub const ALL: [General; 10] = [
        General::CpuCycles,
        General::Instructions,
        General::CacheReferences,
        General::CacheMisses,
        General::BranchInstructions,
        General::BranchMisses,
        General::BusCycles,
        General::StalledCyclesFrontend,
        General::StalledCyclesBackend,
        General::RefCpuCycles,
    ];

    /// The event for a code, if the code names one.
    #[inline]
    pub fn from_code(code: u16) -> Option<General> {
        General::ALL.get((code as usize).wrapping_sub(1)).copied()
    }

    /// Spec name without the `SBI_PMU_HW_` prefix.
    pub fn name(self) -> &'static str {
        [
            "CPU_CYCLES",
            "INSTRUCTIONS",
            "CACHE_REFERENCES",
            "CACHE_MISSES",
            "BRANCH_INSTRUCTIONS",
            "BRANCH_MISSES",
            "BUS_CYCLES",
            "STALLED_CYCLES_FRONTEND",
            "STALLED_CYCLES_BACKEND",
            "REF_CPU_CYCLES",
        ][self as usize - 1]
    }
}

/// Cache ids (`code[15:3]`), 0..=6: the names of `sbi-spec`'s
/// `cache_event` numbers, by number.
pub const CACHE_IDS: [&str; cache_event::NODE + 1] =
    ["L1D", "L1I", "LL", "DTLB", "ITLB", "BPU", "NODE"];
/// Cache operation ids (`code[2:1]`), 0..=2 (`sbi-spec`'s `cache_operation`).
pub const CACHE_OPS: [&str; cache_operation::PREFETCH + 1] = ["READ", "WRITE", "PREFETCH"];
/// Cache result ids (`code[0]`, `sbi-spec`'s `cache_result`).
pub const CACHE_RESULTS: [&str; cache_result::MISS + 1] = ["ACCESS", "MISS"];

/// A hardware cache event (type 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cache {
    /// 0..=6, see [`CACHE_IDS`].
    pub id: u8,
    /// 0..=2, see [`CACHE_OPS`].
    pub op: u8,
    /// 0 access, 1 miss.
    pub result: u8,
}

impl Cache {
    /// Number of distinct well-formed cache codes (id * 8 + op * 2 + result
    /// stays below this); used to size lookup tables.
    pub const CODE_SPACE: usize = CACHE_IDS.len() * 8;

    /// Decode a type-1 code, rejecting ids and ops the spec does not define.
    pub fn from_code(code: u16) -> Option<Cache> {
        let id = code >> 3;
        let op = (code >> 1) & 3;
        let result = code & 1;
        if (id as usize) < CACHE_IDS.len() && (op as usize) < CACHE_OPS.len() {
            Some(Cache {
                id: id as u8,
                op: op as u8,
                result: result as u8,
            })
        } else {
            None
        }
    }

    /// The 16-bit code.
    pub fn code(self) -> u16 {
        (self.id as u16) << 3 | (self.op as u16) << 1 | self.result as u16
    }
}

/// The 22 standard firmware events (type 15, codes 0..=21; the codes are
/// `sbi-spec`'s `firmware_event` constants).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
#[allow(missing_docs)] // variants are the spec's SBI_PMU_FW_* names
#[non_exhaustive]
pub enum FwEvent {
    MisalignedLoad = fw::MISALIGNED_LOAD as u8,
    MisalignedStore = fw::MISALIGNED_STORE as u8,
    AccessLoad = fw::ACCESS_LOAD as u8,
    AccessStore = fw::ACCESS_STORE as u8,
    IllegalInsn = fw::ILLEGAL_INSN as u8,
    SetTimer = fw::SET_TIMER as u8,
    IpiSent = fw::IPI_SENT as u8,
    IpiReceived = fw::IPI_RECEIVED as u8,
    FenceISent = fw::FENCE_I_SENT as u8,
    FenceIReceived = fw::FENCE_I_RECEIVED as u8,
    SfenceVmaSent = fw::SFENCE_VMA_SENT as u8,
    SfenceVmaReceived = fw::SFENCE_VMA_RECEIVED as u8,
    SfenceVmaAsidSent = fw::SFENCE_VMA_ASID_SENT as u8,
    SfenceVmaAsidReceived = fw::SFENCE_VMA_ASID_RECEIVED as u8,
    HfenceGvmaSent = fw::HFENCE_GVMA_SENT as u8,
    HfenceGvmaReceived = fw::HFENCE_GVMA_RECEIVED as u8,
    HfenceGvmaVmidSent = fw::HFENCE_GVMA_VMID_SENT as u8,
    HfenceGvmaVmidReceived = fw::HFENCE_GVMA_VMID_RECEIVED as u8,
    HfenceVvmaSent = fw::HFENCE_VVMA_SENT as u8,
    HfenceVvmaReceived = fw::HFENCE_VVMA_RECEIVED as u8,
    HfenceVvmaAsidSent = fw::HFENCE_VVMA_ASID_SENT as u8,
    HfenceVvmaAsidReceived = fw::HFENCE_VVMA_ASID_RECEIVED as u8,
}

/// Number of standard firmware events.
pub const FW_EVENT_COUNT: usize = fw::HFENCE_VVMA_ASID_RECEIVED + 1;

/// The standard firmware events in code order (entry `n` has code `n`),
/// each with the spec's name without the `SBI_PMU_FW_` prefix: the one
/// table of them in this workspace that code should use.
pub const FW_EVENTS: [(FwEvent, &str); FW_EVENT_COUNT] = [
    (FwEvent::MisalignedLoad, "MISALIGNED_LOAD"),
    (FwEvent::MisalignedStore, "MISALIGNED_STORE"),
    (FwEvent::AccessLoad, "ACCESS_LOAD"),
    (FwEvent::AccessStore, "ACCESS_STORE"),
    (FwEvent::IllegalInsn, "ILLEGAL_INSN"),
    (FwEvent::SetTimer, "SET_TIMER"),
    (FwEvent::IpiSent, "IPI_SENT"),
    (FwEvent::IpiReceived, "IPI_RECEIVED"),
    (FwEvent::FenceISent, "FENCE_I_SENT"),
    (FwEvent::FenceIReceived, "FENCE_I_RECEIVED"),
    (FwEvent::SfenceVmaSent, "SFENCE_VMA_SENT"),
    (FwEvent::SfenceVmaReceived, "SFENCE_VMA_RECEIVED"),
    (FwEvent::SfenceVmaAsidSent, "SFENCE_VMA_ASID_SENT"),
    (FwEvent::SfenceVmaAsidReceived, "SFENCE_VMA_ASID_RECEIVED"),
    (FwEvent::HfenceGvmaSent, "HFENCE_GVMA_SENT"),
    (FwEvent::HfenceGvmaReceived, "HFENCE_GVMA_RECEIVED"),
    (FwEvent::HfenceGvmaVmidSent, "HFENCE_GVMA_VMID_SENT"),
    (FwEvent::HfenceGvmaVmidReceived, "HFENCE_GVMA_VMID_RECEIVED"),
    (FwEvent::HfenceVvmaSent, "HFENCE_VVMA_SENT"),
    (FwEvent::HfenceVvmaReceived, "HFENCE_VVMA_RECEIVED"),
    (FwEvent::HfenceVvmaAsidSent, "HFENCE_VVMA_ASID_SENT"),
    (FwEvent::HfenceVvmaAsidReceived, "HFENCE_VVMA_ASID_RECEIVED"),
];

// The table is in code order (what `from_code` and `name` rely on).
const _: () = {
    let mut i = 0;
    while i < FW_EVENT_COUNT {
        assert!(FW_EVENTS[i].0 as usize == i);
        i += 1;
    }
};

impl FwEvent {
    /// The event for a standard code 0..=21.
    #[inline]
    pub fn from_code(code: u16) -> Option<FwEvent> {
        Self::from_u64(code as u64)
    }

    /// The standard firmware event an `event_idx` names (type 15, code
    /// 0..=21), if it names one: one xor and one compare.
    #[inline(always)]
    pub fn from_event_idx(event_idx: u64) -> Option<FwEvent> {
        Self::from_u64(event_idx ^ event_idx_of(kind::FIRMWARE, 0))
    }

    #[inline(always)]
    fn from_u64(code: u64) -> Option<FwEvent> {
        if code < FW_EVENT_COUNT as u64 {
            // SAFETY: FwEvent is repr(u8) with contiguous discriminants 0..=21.
            Some(unsafe { core::mem::transmute::<u8, FwEvent>(code as u8) })
        } else {
            None
        }
    }

    /// The event's code (`event_idx[15:0]`).
    pub const fn code(self) -> u16 {
        self as u16
    }

    /// The event's `event_idx` (type 15).
    pub const fn event_idx(self) -> u32 {
        event_idx(kind::FIRMWARE, self as u16)
    }

    /// Spec name without the `SBI_PMU_FW_` prefix.
    pub fn name(self) -> &'static str {
        FW_EVENTS[self as usize].1
    }

    /// Iterate over all 22 standard firmware events.
    pub fn all() -> impl Iterator<Item = FwEvent> {
        FW_EVENTS.iter().map(|e| e.0)
    }
}

/// `event_idx(ty, code)` as a register value.
const fn event_idx_of(ty: u8, code: u16) -> u64 {
    event_idx(ty, code) as u64
}

/// Firmware event code of `SBI_PMU_FW_PLATFORM` (`sbi-spec`).
pub const FW_PLATFORM_CODE: u16 = fw::PLATFORM as u16;
/// First implementation-specific firmware event code (the spec's table;
/// `sbi-spec` 0.0.9 does not name it).
pub const FW_IMPL_FIRST: u16 = 256;

/// Any well-formed SBI PMU event: `event_idx` plus the `event_data` it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Event {
    /// Type 0.
    General(General),
    /// Type 1.
    Cache(Cache),
    /// Type 2 (deprecated): 48 bits of mhpmevent.
    Raw(u64),
    /// Type 3: 56 bits of mhpmevent.
    RawV2(u64),
    /// Type 15, codes 0..=21.
    Firmware(FwEvent),
    /// Type 15, codes 256..=65534: implementation-specific firmware events.
    FirmwareImpl(u16),
    /// Type 15, code 65535: platform firmware event named by `event_data`.
    FirmwarePlatform(u64),
}

impl Event {
    /// Decode `event_idx` and `event_data` as passed in registers.
    ///
    /// Malformed encodings (reserved bits, unknown types, out-of-range codes,
    /// non-zero reserved `event_data`) give [`Error::InvalidParam`]. Whether
    /// the platform can count the event is a separate question (the engine
    /// answers [`Error::NotSupported`] for that).
    pub fn decode(event_idx: u64, event_data: u64) -> Result<Event, Error> {
        Self::decode_inline(event_idx, event_data)
    }

    /// Check `event_idx` and `event_data` as [`Self::decode`] does, without
    /// building the event (for calls that only need it to be well formed,
    /// e.g. config_matching with SKIP_MATCH). Inline, so that a caller's
    /// registers need not survive a call.
    #[inline(always)]
    pub fn check(event_idx: u64, event_data: u64) -> Result<(), Error> {
        // General events (type 0, so no bit above 15) first, without the
        // decoder's jump table: the counters re-configured in place are
        // Linux's cycles and instructions far more than any other.
        if event_idx >> 16 == kind::GENERAL as u64 {
            return match General::from_code(event_idx as u16) {
                Some(_) if event_data == 0 => Ok(()),
                _ => Err(Error::InvalidParam),
            };
        }
        Self::decode_inline(event_idx, event_data).map(drop)
    }

    /// Decode an event-info entry (`sbi_pmu_event_get_info`): its
    /// `event_data` is only read for the event types that use it
    /// ([`info_uses_data`]) and is taken as 0 for the others, whatever the
    /// supervisor left there.
    #[inline]
    pub fn decode_info(event_idx: u32, event_data: u64) -> Result<Event, Error> {
        let data = if info_uses_data(event_idx) {
            event_data
        } else {
            0
        };
        Self::decode(event_idx as u64, data)
    }

    #[inline(always)]
    fn decode_inline(event_idx: u64, event_data: u64) -> Result<Event, Error> {
        if reserved_bits(event_idx) {
            return Err(Error::InvalidParam);
        }
        let ty = type_of(event_idx as u32) as u8;
        let code = code_of(event_idx as u32);
        let no_data = |e: Event| {
            if event_data == 0 {
                Ok(e)
            } else {
                Err(Error::InvalidParam)
            }
        };
        match ty {
            kind::GENERAL => no_data(Event::General(
                General::from_code(code).ok_or(Error::InvalidParam)?,
            )),
            kind::CACHE => no_data(Event::Cache(
                Cache::from_code(code).ok_or(Error::InvalidParam)?,
            )),
            kind::RAW if code == 0 && event_data & !RAW_V1_DATA_MASK == 0 => {
                Ok(Event::Raw(event_data))
            }
            kind::RAW_V2 if code == 0 && event_data & !RAW_V2_DATA_MASK == 0 => {
                Ok(Event::RawV2(event_data))
            }
            kind::FIRMWARE => match code {
                FW_PLATFORM_CODE => Ok(Event::FirmwarePlatform(event_data)),
                c if c >= FW_IMPL_FIRST => no_data(Event::FirmwareImpl(c)),
                c => no_data(Event::Firmware(
                    FwEvent::from_code(c).ok_or(Error::InvalidParam)?,
                )),
            },
            _ => Err(Error::InvalidParam),
        }
    }

    /// The 20-bit `event_idx`.
    pub fn idx(&self) -> u32 {
        let (ty, code) = match *self {
            Event::General(g) => (kind::GENERAL, g as u16),
            Event::Cache(c) => (kind::CACHE, c.code()),
            Event::Raw(_) => (kind::RAW, 0),
            Event::RawV2(_) => (kind::RAW_V2, 0),
            Event::Firmware(f) => (kind::FIRMWARE, f as u16),
            Event::FirmwareImpl(c) => (kind::FIRMWARE, c),
            Event::FirmwarePlatform(_) => (kind::FIRMWARE, FW_PLATFORM_CODE),
        };
        event_idx(ty, code)
    }

    /// The `event_data` this event carries (zero where the spec reserves it).
    pub fn data(&self) -> u64 {
        match *self {
            Event::Raw(d) | Event::RawV2(d) | Event::FirmwarePlatform(d) => d,
            _ => 0,
        }
    }

    /// Counted by a hardware counter (types 0-3) rather than by firmware.
    pub fn is_hardware(&self) -> bool {
        !matches!(
            self,
            Event::Firmware(_) | Event::FirmwareImpl(_) | Event::FirmwarePlatform(_)
        )
    }
}

impl core::fmt::Display for Event {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Event::General(g) => write!(f, "{}", g.name()),
            Event::Cache(c) => write!(
                f,
                "{}_{}_{}",
                CACHE_IDS[c.id as usize],
                CACHE_OPS[c.op as usize],
                CACHE_RESULTS[c.result as usize]
            ),
            Event::Raw(d) => write!(f, "RAW({d:#x})"),
            Event::RawV2(d) => write!(f, "RAW_V2({d:#x})"),
            Event::Firmware(e) => write!(f, "FW_{}", e.name()),
            Event::FirmwareImpl(c) => write!(f, "FW_IMPL({c})"),
            Event::FirmwarePlatform(d) => write!(f, "FW_PLATFORM({d:#x})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn general_codes_1_to_10_only() {
        assert_eq!(Event::decode(0, 0), Err(Error::InvalidParam));
        for code in 1..=10u64 {
            let e = Event::decode(code, 0).unwrap();
            assert_eq!(e.idx() as u64, code);
        }
        assert_eq!(Event::decode(11, 0), Err(Error::InvalidParam));
        assert_eq!(Event::decode(1, 1), Err(Error::InvalidParam));
    }

    #[test]
    fn cache_ranges() {
        // L1D read access
        assert!(Event::decode(0x10000, 0).is_ok());
        // NODE (6) prefetch (2) miss: code = 6<<3 | 2<<1 | 1 = 0x35
        assert!(Event::decode(0x10035, 0).is_ok());
        // op 3 is not defined
        assert_eq!(Event::decode(0x10006, 0), Err(Error::InvalidParam));
        // cache id 7 is not defined
        assert_eq!(Event::decode(0x10038, 0), Err(Error::InvalidParam));
        assert_eq!(Event::decode(0x10001, 5), Err(Error::InvalidParam));
    }

    #[test]
    fn raw_types() {
        assert_eq!(
            Event::decode(0x20000, 0xffff_ffff_ffff),
            Ok(Event::Raw(0xffff_ffff_ffff))
        );
        assert_eq!(Event::decode(0x20000, 1 << 48), Err(Error::InvalidParam));
        assert_eq!(Event::decode(0x20001, 1), Err(Error::InvalidParam));
        assert_eq!(
            Event::decode(0x30000, (1 << 56) - 1),
            Ok(Event::RawV2((1 << 56) - 1))
        );
        assert_eq!(Event::decode(0x30000, 1 << 56), Err(Error::InvalidParam));
        assert_eq!(Event::decode(0x30002, 0), Err(Error::InvalidParam));
    }

    #[test]
    fn firmware_codes() {
        for c in 0..=21u64 {
            assert!(matches!(
                Event::decode(0xF0000 | c, 0),
                Ok(Event::Firmware(_))
            ));
        }
        for c in [22u64, 100, 255] {
            assert_eq!(Event::decode(0xF0000 | c, 0), Err(Error::InvalidParam));
        }
        assert_eq!(Event::decode(0xF0100, 0), Ok(Event::FirmwareImpl(256)));
        assert_eq!(Event::decode(0xFFFFE, 0), Ok(Event::FirmwareImpl(65534)));
        assert_eq!(Event::decode(0xFFFFF, 42), Ok(Event::FirmwarePlatform(42)));
        assert_eq!(Event::decode(0xF0005, 1), Err(Error::InvalidParam));
    }

    #[test]
    fn check_agrees_with_decode() {
        let data = [
            0u64,
            1,
            0xab_0000,
            1 << 47,
            1 << 48,
            1 << 55,
            1 << 56,
            u64::MAX,
        ];
        let extra = [1u64 << 20, 1 << 31, 1 << 32, 1 << 63];
        for idx in (0..=EVENT_IDX_MASK).chain(extra.iter().flat_map(|b| [b | 1, b | 0xF0005])) {
            for d in data {
                assert_eq!(
                    Event::check(idx, d),
                    Event::decode(idx, d).map(drop),
                    "{idx:#x} {d:#x}"
                );
            }
        }
    }

    #[test]
    fn standard_firmware_events_from_event_idx() {
        for idx in (0..=EVENT_IDX_MASK).chain([1 << 32 | 0xF0005, 1 << 63 | 0xF0000]) {
            let want = match Event::decode(idx, 0) {
                Ok(Event::Firmware(e)) => Some(e),
                _ => None,
            };
            assert_eq!(FwEvent::from_event_idx(idx), want, "{idx:#x}");
        }
        for (code, &(e, name)) in FW_EVENTS.iter().enumerate() {
            assert_eq!(e.code() as usize, code);
            assert_eq!(e.event_idx(), 0xF0000 | code as u32);
            assert_eq!(e.name(), name);
            assert_eq!(FwEvent::from_code(code as u16), Some(e));
        }
        assert_eq!(FwEvent::all().count(), 22);
        assert_eq!(FwEvent::from_code(22), None);
    }

    #[test]
    fn numbers_are_sbi_spec_s() {
        use sbi_spec::pmu::{event_type, firmware_event, hardware_event};
        assert_eq!(General::CpuCycles as usize, hardware_event::CPU_CYCLES);
        assert_eq!(
            General::RefCpuCycles as usize,
            hardware_event::REF_CPU_CYCLES
        );
        assert_eq!(FwEvent::SetTimer as usize, firmware_event::SET_TIMER);
        assert_eq!(FW_EVENT_COUNT, 22);
        assert_eq!(FW_PLATFORM_CODE, 0xFFFF);
        assert_eq!(event_idx(kind::FIRMWARE, 5), 0xF0005);
        assert_eq!(kind::RAW_V2 as usize, event_type::HARDWARE_RAW_V2);
        assert_eq!(
            (CACHE_IDS.len(), CACHE_OPS.len(), CACHE_RESULTS.len()),
            (7, 3, 2)
        );
    }

    #[test]
    fn event_info_entries_read_event_data_only_where_it_is_used() {
        // Garbage in event_data is ignored for general, cache and standard
        // or implementation-specific firmware events ...
        assert_eq!(
            Event::decode_info(0x1, 7),
            Ok(Event::General(General::CpuCycles))
        );
        assert!(matches!(
            Event::decode_info(0x10019, 7),
            Ok(Event::Cache(_))
        ));
        assert_eq!(
            Event::decode_info(0xF0005, 7),
            Ok(Event::Firmware(FwEvent::SetTimer))
        );
        assert_eq!(Event::decode_info(0xF0100, 7), Ok(Event::FirmwareImpl(256)));
        // ... and used for raw events and the platform firmware event.
        assert_eq!(Event::decode_info(0x20000, 7), Ok(Event::Raw(7)));
        assert_eq!(
            Event::decode_info(0x30000, 1 << 55),
            Ok(Event::RawV2(1 << 55))
        );
        assert_eq!(
            Event::decode_info(0x20000, 1 << 48),
            Err(Error::InvalidParam)
        );
        assert_eq!(
            Event::decode_info(0xFFFFF, 7),
            Ok(Event::FirmwarePlatform(7))
        );
        assert_eq!(Event::decode_info(0x100001, 0), Err(Error::InvalidParam));
    }

    #[test]
    fn reserved_types_and_bits() {
        for ty in [4u64, 7, 14] {
            assert_eq!(Event::decode(ty << 16 | 1, 0), Err(Error::InvalidParam));
        }
        assert_eq!(Event::decode(1 << 20 | 1, 0), Err(Error::InvalidParam));
        assert_eq!(Event::decode(1 << 63 | 1, 0), Err(Error::InvalidParam));
    }
}
