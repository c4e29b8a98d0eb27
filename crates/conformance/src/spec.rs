//! The suite's own copy of the SBI PMU chapter's event tables (SBI 3.0,
//! chapter "Performance Monitoring Unit Extension", EID 0x504D55): each
//! number from `sbi-spec`'s constants, each name as the spec's table
//! spells it (without the `SBI_PMU_HW_` / `SBI_PMU_FW_` prefix). The
//! checks judge with these tables alone, never with those of the
//! implementation they judge, so a wrong constant in an implementation is
//! caught, not agreed with. The tables list their rows in the spec's
//! order, and the build checks that each row's code is its position in
//! the spec's table (`ROWS_IN_ORDER` below), so a name can't sit beside
//! another row's number.

use sbi_spec::pmu::{cache_event as c, event_type as t, firmware_event as f, hardware_event as h};

/// Table 1 "PMU Event Index": `event_idx[19:16]` is the type,
/// `event_idx[15:0]` the code.
pub const fn event_idx(ty: usize, code: usize) -> usize {
    ty << 16 | code
}

/// Table 1's event types.
pub const TYPE_GENERAL: usize = t::HARDWARE_GENERAL;
pub const TYPE_CACHE: usize = t::HARDWARE_CACHE;
pub const TYPE_RAW: usize = t::HARDWARE_RAW;
pub const TYPE_RAW_V2: usize = t::HARDWARE_RAW_V2;
pub const TYPE_FIRMWARE: usize = t::FIRMWARE;

/// Table 2 "PMU Hardware Events": the general events after
/// `SBI_PMU_HW_NO_EVENT` (code 0, "Unused event because event_idx cannot
/// be zero", checked apart).
pub const GENERAL: [(usize, &str); 10] = [
    (h::CPU_CYCLES, "CPU_CYCLES"),
    (h::INSTRUCTIONS, "INSTRUCTIONS"),
    (h::CACHE_REFERENCES, "CACHE_REFERENCES"),
    (h::CACHE_MISSES, "CACHE_MISSES"),
    (h::BRANCH_INSTRUCTIONS, "BRANCH_INSTRUCTIONS"),
    (h::BRANCH_MISSES, "BRANCH_MISSES"),
    (h::BUS_CYCLES, "BUS_CYCLES"),
    (h::STALLED_CYCLES_FRONTEND, "STALLED_CYCLES_FRONTEND"),
    (h::STALLED_CYCLES_BACKEND, "STALLED_CYCLES_BACKEND"),
    (h::REF_CPU_CYCLES, "REF_CPU_CYCLES"),
];

/// Table 3 "PMU Cache Event ID" (`event_idx.code[15:3]`).
pub const CACHE: [(usize, &str); 7] = [
    (c::L1D, "L1D"),
    (c::L1I, "L1I"),
    (c::LL, "LL"),
    (c::DTLB, "DTLB"),
    (c::ITLB, "ITLB"),
    (c::BPU, "BPU"),
    (c::NODE, "NODE"),
];

/// Table 6 "PMU Firmware Events": the standard events, codes 0 to 21
/// (22 - 255 are reserved, 256 - 65534 implementation specific, 65535
/// `SBI_PMU_FW_PLATFORM`).
pub const FIRMWARE: [(usize, &str); 22] = [
    (f::MISALIGNED_LOAD, "MISALIGNED_LOAD"),
    (f::MISALIGNED_STORE, "MISALIGNED_STORE"),
    (f::ACCESS_LOAD, "ACCESS_LOAD"),
    (f::ACCESS_STORE, "ACCESS_STORE"),
    (f::ILLEGAL_INSN, "ILLEGAL_INSN"),
    (f::SET_TIMER, "SET_TIMER"),
    (f::IPI_SENT, "IPI_SENT"),
    (f::IPI_RECEIVED, "IPI_RECEIVED"),
    (f::FENCE_I_SENT, "FENCE_I_SENT"),
    (f::FENCE_I_RECEIVED, "FENCE_I_RECEIVED"),
    (f::SFENCE_VMA_SENT, "SFENCE_VMA_SENT"),
    (f::SFENCE_VMA_RECEIVED, "SFENCE_VMA_RECEIVED"),
    (f::SFENCE_VMA_ASID_SENT, "SFENCE_VMA_ASID_SENT"),
    (f::SFENCE_VMA_ASID_RECEIVED, "SFENCE_VMA_ASID_RECEIVED"),
    (f::HFENCE_GVMA_SENT, "HFENCE_GVMA_SENT"),
    (f::HFENCE_GVMA_RECEIVED, "HFENCE_GVMA_RECEIVED"),
    (f::HFENCE_GVMA_VMID_SENT, "HFENCE_GVMA_VMID_SENT"),
    (f::HFENCE_GVMA_VMID_RECEIVED, "HFENCE_GVMA_VMID_RECEIVED"),
    (f::HFENCE_VVMA_SENT, "HFENCE_VVMA_SENT"),
    (f::HFENCE_VVMA_RECEIVED, "HFENCE_VVMA_RECEIVED"),
    (f::HFENCE_VVMA_ASID_SENT, "HFENCE_VVMA_ASID_SENT"),
    (f::HFENCE_VVMA_ASID_RECEIVED, "HFENCE_VVMA_ASID_RECEIVED"),
];

/// Table 6 `SBI_PMU_FW_PLATFORM`.
pub const FW_PLATFORM: usize = f::PLATFORM;
/// Table 6 `SBI_PMU_FW_SET_TIMER`.
pub const FW_SET_TIMER: usize = f::SET_TIMER;
/// Table 2 `SBI_PMU_HW_CPU_CYCLES` and `SBI_PMU_HW_INSTRUCTIONS`.
pub const HW_CPU_CYCLES: usize = h::CPU_CYCLES;
pub const HW_INSTRUCTIONS: usize = h::INSTRUCTIONS;

/// Each table's codes are the spec's consecutive ones, in order: Table 2
/// from 1, Tables 3 and 6 from 0.
const ROWS_IN_ORDER: () = {
    let mut i = 0;
    while i < GENERAL.len() {
        assert!(GENERAL[i].0 == i + 1);
        i += 1;
    }
    let mut i = 0;
    while i < CACHE.len() {
        assert!(CACHE[i].0 == i);
        i += 1;
    }
    let mut i = 0;
    while i < FIRMWARE.len() {
        assert!(FIRMWARE[i].0 == i);
        i += 1;
    }
};
#[allow(clippy::let_unit_value)]
const _: () = ROWS_IN_ORDER;
