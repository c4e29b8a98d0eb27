//! The `event_idx` / `event_data` codec: every event type of the SBI PMU
//! extension as a typed value, validated once at the SBI boundary.
//!
//! Layout (spec, "event_idx"): `event_idx[19:16] = type`, `event_idx[15:0] = code`.
//! Cache events split the code further: `code[15:3] = cache_id`,
//! `code[2:1] = op_id`, `code[0] = result_id`.

use crate::Error;

/// Bits of `event_idx` that carry information; the rest must be zero.
pub const EVENT_IDX_MASK: u64 = 0xF_FFFF;
/// `event_data` bits a raw (type 2) event may use.
pub const RAW_V1_DATA_MASK: u64 = (1 << 48) - 1;
/// `event_data` bits a raw v2 (type 3) event may use.
pub const RAW_V2_DATA_MASK: u64 = (1 << 56) - 1;

/// Event type numbers (`event_idx[19:16]`).
#[allow(missing_docs)] // the spec's type names
pub mod kind {
    pub const GENERAL: u8 = 0;
    pub const CACHE: u8 = 1;
    pub const RAW: u8 = 2;
    pub const RAW_V2: u8 = 3;
    pub const FIRMWARE: u8 = 15;
}

/// Hardware general events (type 0), codes 1..=10.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
#[allow(missing_docs)] // variants are the spec's SBI_PMU_HW_* names
pub enum General {
    CpuCycles = 1,
    Instructions = 2,
    CacheReferences = 3,
    CacheMisses = 4,
    BranchInstructions = 5,
    BranchMisses = 6,
    BusCycles = 7,
    StalledCyclesFrontend = 8,
    StalledCyclesBackend = 9,
    RefCpuCycles = 10,
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

/// Cache ids (`code[15:3]`), 0..=6.
pub const CACHE_IDS: [&str; 7] = ["L1D", "L1I", "LL", "DTLB", "ITLB", "BPU", "NODE"];
/// Cache operation ids (`code[2:1]`), 0..=2.
pub const CACHE_OPS: [&str; 3] = ["READ", "WRITE", "PREFETCH"];
/// Cache result ids (`code[0]`).
pub const CACHE_RESULTS: [&str; 2] = ["ACCESS", "MISS"];

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

/// The 22 standard firmware events (type 15, codes 0..=21).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
#[allow(missing_docs)] // variants are the spec's SBI_PMU_FW_* names
pub enum FwEvent {
    MisalignedLoad = 0,
    MisalignedStore = 1,
    AccessLoad = 2,
    AccessStore = 3,
    IllegalInsn = 4,
    SetTimer = 5,
    IpiSent = 6,
    IpiReceived = 7,
    FenceISent = 8,
    FenceIReceived = 9,
    SfenceVmaSent = 10,
    SfenceVmaReceived = 11,
    SfenceVmaAsidSent = 12,
    SfenceVmaAsidReceived = 13,
    HfenceGvmaSent = 14,
    HfenceGvmaReceived = 15,
    HfenceGvmaVmidSent = 16,
    HfenceGvmaVmidReceived = 17,
    HfenceVvmaSent = 18,
    HfenceVvmaReceived = 19,
    HfenceVvmaAsidSent = 20,
    HfenceVvmaAsidReceived = 21,
}

/// Number of standard firmware events.
pub const FW_EVENT_COUNT: usize = 22;

const FW_NAMES: [&str; FW_EVENT_COUNT] = [
    "MISALIGNED_LOAD",
    "MISALIGNED_STORE",
    "ACCESS_LOAD",
    "ACCESS_STORE",
    "ILLEGAL_INSN",
    "SET_TIMER",
    "IPI_SENT",
    "IPI_RECEIVED",
    "FENCE_I_SENT",
    "FENCE_I_RECEIVED",
    "SFENCE_VMA_SENT",
    "SFENCE_VMA_RECEIVED",
    "SFENCE_VMA_ASID_SENT",
    "SFENCE_VMA_ASID_RECEIVED",
    "HFENCE_GVMA_SENT",
    "HFENCE_GVMA_RECEIVED",
    "HFENCE_GVMA_VMID_SENT",
    "HFENCE_GVMA_VMID_RECEIVED",
    "HFENCE_VVMA_SENT",
    "HFENCE_VVMA_RECEIVED",
    "HFENCE_VVMA_ASID_SENT",
    "HFENCE_VVMA_ASID_RECEIVED",
];

impl FwEvent {
    /// The event for a standard code 0..=21.
    pub fn from_code(code: u16) -> Option<FwEvent> {
        if (code as usize) < FW_EVENT_COUNT {
            // SAFETY: FwEvent is repr(u8) with contiguous discriminants 0..=21.
            Some(unsafe { core::mem::transmute::<u8, FwEvent>(code as u8) })
        } else {
            None
        }
    }

    /// Spec name without the `SBI_PMU_FW_` prefix.
    pub fn name(self) -> &'static str {
        FW_NAMES[self as usize]
    }

    /// Iterate over all 22 standard firmware events.
    pub fn all() -> impl Iterator<Item = FwEvent> {
        (0..FW_EVENT_COUNT as u16).filter_map(FwEvent::from_code)
    }
}

/// Firmware event code of `SBI_PMU_FW_PLATFORM`.
pub const FW_PLATFORM_CODE: u16 = 0xFFFF;
/// First implementation-specific firmware event code.
pub const FW_IMPL_FIRST: u16 = 256;

/// Any well-formed SBI PMU event: `event_idx` plus the `event_data` it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
        if event_idx & !EVENT_IDX_MASK != 0 {
            return Err(Error::InvalidParam);
        }
        let ty = (event_idx >> 16) as u8;
        let code = event_idx as u16;
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
        (ty as u32) << 16 | code as u32
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
    fn reserved_types_and_bits() {
        for ty in [4u64, 7, 14] {
            assert_eq!(Event::decode(ty << 16 | 1, 0), Err(Error::InvalidParam));
        }
        assert_eq!(Event::decode(1 << 20 | 1, 0), Err(Error::InvalidParam));
        assert_eq!(Event::decode(1 << 63 | 1, 0), Err(Error::InvalidParam));
    }
}
