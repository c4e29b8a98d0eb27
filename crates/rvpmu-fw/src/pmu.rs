//! Glue to the SBI PMU engine. Until the `rvpmu` engine is wired in, PMU and
//! STA probe as absent and firmware events are dropped here; every event
//! source already calls `record` at the point the event happens.

use crate::platform::Features;

/// Per-hart PMU state (the engine's `Pmu` once wired in).
pub struct HartPmu {}

impl HartPmu {
    pub fn new(_hartid: usize, _features: Features) -> Self {
        Self {}
    }
}

/// Count one firmware event (an `sbi_spec::pmu::firmware_event` code) on
/// the calling hart.
#[inline]
pub fn record(code: usize) {
    let _ = code;
}

/// Whether the PMU extension is offered (probe answer).
pub fn pmu_available() -> bool {
    false
}

/// Whether the STA extension is offered (probe answer).
pub fn sta_available() -> bool {
    false
}
