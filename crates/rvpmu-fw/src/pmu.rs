//! Glue to the `rvpmu` engine: per-hart PMU and STA state (firmware events
//! are recorded with `HartPmu::record` on the `&mut` the trap passes
//! down), and the board facts the engine needs (counters present,
//! ISA features, the event map from the device tree).
#![cfg(target_os = "none")]

use crate::platform::{Features, Platform};
use rvpmu::dt::{EventMap, PlatformQuirk, PmuProps};
use rvpmu::hart::IsaFeatures;
use rvpmu::hw::csr::CsrHpm;
use rvpmu::mem::PhysMemory;
use rvpmu::sta::StealTime;
use rvpmu::{Pmu, PmuConfig};

/// The engine as this firmware instantiates it.
pub type HartPmu = Pmu<'static, CsrHpm>;

/// One hart's PMU and steal-time state, and the supervisor's memory both
/// extensions (and DBCN) are handed on each call (`repr(C)`, `pmu` first:
/// see `machine::HartLocal`).
#[repr(C)]
pub struct HartPerf {
    pub pmu: HartPmu,
    pub sta: StealTime,
    pub mem: PhysMemory,
}

/// Counters this hart implements (bit per CSR offset; bit 1, `time`, never).
///
/// Absent `mhpmcounterN` CSRs trap, so they are not probed by access:
/// mcounteren and mcountinhibit are WARL with read-only-zero bits for
/// absent counters (QEMU masks both with the CPU's PMU mask), so writing
/// all ones and reading both back names the present ones. Must run before
/// mcounteren gets its final value.
pub fn present_counters() -> u32 {
    use rvpmu_rt::csr;
    csr::MCOUNTEREN.write(0xffff_ffff);
    let en = csr::MCOUNTEREN.read() as u32;
    // Inhibit everything only for the instant of the probe.
    let old_inhibit = csr::MCOUNTINHIBIT.read();
    csr::MCOUNTINHIBIT.write(0xffff_ffff);
    let inh = csr::MCOUNTINHIBIT.read() as u32;
    csr::MCOUNTINHIBIT.write(old_inhibit);
    (en & inh & !0b111) | 0b101
}

fn isa(f: Features) -> IsaFeatures {
    IsaFeatures::none()
        .with_sscofpmf(f.has(Features::SSCOFPMF))
        .with_smcntrpmf(f.has(Features::SMCNTRPMF))
        .with_h(f.has(Features::H))
}

/// Fill the shared event map from the DT's `riscv,pmu` node (boot hart),
/// then apply the machine's quirks (`quirk`, found by the root node's
/// `compatible`): they add what the DT does not say, e.g. that QEMU counts
/// an event on one HPM counter only. A missing node leaves only
/// cycles/instructions countable; a node the engine rejects does the same,
/// with a warning.
pub fn load_event_map(
    map: &mut EventMap,
    node: Option<PmuProps>,
    present: u32,
    quirk: Option<&PlatformQuirk>,
    out: &crate::console::Out,
) {
    if let Some(props) = node {
        if map.load_props(props, Some(present)).is_err() {
            out.str(
                "rvpmu-fw: warning: riscv,pmu node rejected (check it with `cargo xtask dt-check`); ",
            );
            out.str("only cycles and instructions are countable\n");
        }
    }
    if quirk.is_some_and(|q| q.one_counter_per_event) {
        map.set_one_counter_per_event(true);
    }
}

/// Per-hart engine state, counters put in their boot state.
pub fn new_hart(
    f: Features,
    present: u32,
    map: &'static EventMap,
    platform: &Platform,
) -> HartPerf {
    // Every standard firmware event the ISA has (no hypervisor fences
    // without H).
    let cfg = PmuConfig::new(map, isa(f))
        .with_snapshot(platform.pmu_snapshot)
        // Makes Linux's snapshot restart (counter_idx_base 4096) valid;
        // see README "Linux's snapshot restart bug (6.12 and 7.2)".
        .with_alias_window(platform.pmu_alias_window);
    // SAFETY: M-mode; `present` names only implemented counters.
    let hw = unsafe { CsrHpm::new(present) };
    HartPerf {
        pmu: Pmu::new(cfg, hw),
        sta: StealTime::new(),
        mem: platform.ram,
    }
}
