//! How the programs end a QEMU run, in one place: the `sifive,test`
//! finisher values the M-mode firmware writes, and the exit statuses QEMU
//! turns them into. The S-mode programs end through SBI SRST, which the
//! firmware maps onto these (reason "system failure" to
//! [`SYSTEM_FAILURE`], any other shutdown to a pass).
//!
//! | status | meaning |
//! |---|---|
//! | 0 | power-off: SRST shutdown without a failure reason, legacy shutdown |
//! | [`FATAL`] (1) | an unexpected trap in M-mode or a fatal condition in the firmware (QEMU also exits 1 on its own errors) |
//! | [`PANIC`] (2) | a panic in the firmware |
//! | [`BOOT_FAILED`] (3) | the firmware's boot failed (unusable device tree) |
//! | [`SYSTEM_FAILURE`] (83) | SRST shutdown with reason "system failure": a payload's failure |
//!
//! 83 (0x53, ASCII 'S') cannot be taken for success: not 0 or 1 (QEMU's
//! FINISHER_PASS and its own error status; runners built on
//! isa-debug-exit take 1 or 33 for success), not 77 (automake and meson
//! "skipped"), not 124 and above (timeout(1), the shell, signals), and
//! none of the firmware's own codes.

/// QEMU virt's `sifive,test` device, when no device tree names one.
pub const QEMU_VIRT_TEST_DEVICE: usize = 0x10_0000;

/// Finisher value: power off, QEMU exits 0.
pub const FINISHER_PASS: u32 = 0x5555;
/// Finisher value: power off with a failure code in bits 16..32.
pub const FINISHER_FAIL: u32 = 0x3333;
/// Finisher value: reset the machine.
pub const FINISHER_RESET: u32 = 0x7777;

/// A fatal trap or condition in the firmware.
pub const FATAL: u16 = 1;
/// A panic in the firmware.
pub const PANIC: u16 = 2;
/// The firmware's boot failed.
pub const BOOT_FAILED: u16 = 3;
/// SRST shutdown with reason "system failure".
pub const SYSTEM_FAILURE: u16 = 83;

/// The finisher value that makes QEMU exit with status `code` (1..=0xffff;
/// a process exit status keeps the low 8 bits, so a code must not be a
/// multiple of 256).
pub const fn finisher_fail(code: u16) -> u32 {
    FINISHER_FAIL | (code as u32) << 16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_codes_reach_the_exit_status() {
        // QEMU's sifive_test: FAIL in the low 16 bits, the status above.
        assert_eq!(finisher_fail(FATAL), 0x1_3333);
        assert_eq!(finisher_fail(SYSTEM_FAILURE), 0x53_3333);
        for code in [FATAL, PANIC, BOOT_FAILED, SYSTEM_FAILURE] {
            assert_eq!(finisher_fail(code) & 0xffff, FINISHER_FAIL);
            assert_eq!((finisher_fail(code) >> 16) as u16, code);
            // A process keeps the low 8 bits: each stays itself and not 0.
            assert_eq!(code & 0xff, code);
            assert_ne!(code, 0);
        }
        // The payload's failure is none of the firmware's own codes.
        assert!(![FATAL, PANIC, BOOT_FAILED].contains(&SYSTEM_FAILURE));
    }
}
