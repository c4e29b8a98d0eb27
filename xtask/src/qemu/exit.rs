//! QEMU's exit statuses under rvpmu-fw: the sifive,test finisher codes
//! the bare-metal programs write, defined once in `rvpmu_rt::exit`.

use rvpmu_rt::exit as code;

/// Power-off (FINISHER_PASS): SRST shutdown without a failure reason,
/// legacy shutdown.
pub const POWER_OFF: i32 = 0;
/// A fatal trap in the firmware; also what QEMU itself exits with on
/// its own errors.
pub const FATAL: i32 = code::FATAL as i32;
/// A panic in the firmware.
pub const PANIC: i32 = code::PANIC as i32;
/// The boot failed (unusable device tree).
pub const BOOT_FAILED: i32 = code::BOOT_FAILED as i32;
/// SRST shutdown with reason "system failure" (the payload's failure).
pub const SYSTEM_FAILURE: i32 = code::SYSTEM_FAILURE as i32;

/// What a QEMU exit status means on rvpmu-fw (`None`: QEMU was killed).
pub fn describe(code: Option<i32>) -> String {
    match code {
        None => "QEMU did not exit (killed at the timeout)".into(),
        Some(POWER_OFF) => "QEMU exit status 0 (power-off)".into(),
        Some(SYSTEM_FAILURE) => {
            format!("QEMU exit status {SYSTEM_FAILURE} (SRST shutdown with reason system failure)")
        }
        Some(FATAL) => {
            format!("QEMU exit status {FATAL} (a fatal trap in the firmware, or QEMU's own error)")
        }
        Some(PANIC) => format!("QEMU exit status {PANIC} (a panic in the firmware)"),
        Some(BOOT_FAILED) => {
            format!("QEMU exit status {BOOT_FAILED} (the firmware's boot failed)")
        }
        Some(c) => format!("QEMU exit status {c}"),
    }
}
