//! rvpmu-fw: an M-mode firmware for QEMU `virt` that boots Linux in S-mode
//! and implements SBI 3.0 (BASE, TIME, IPI, RFENCE, HSM, SRST, DBCN, the
//! legacy calls; PMU and STA through the `rvpmu` engine).
//!
//! Bare-metal crate: built for riscv64gc-unknown-none-elf by
//! `cargo xtask firmware`; on the host it is an empty stub.
//!
//! # Exit status under QEMU
//!
//! The firmware powers off through the `sifive,test` finisher (QEMU virt's
//! test device at 0x100000): FINISHER_PASS, or FINISHER_FAIL with a code
//! that QEMU turns into its exit status. A runner reads:
//!
//! | status | meaning |
//! |---|---|
//! | 0 | SBI SRST shutdown with reason "no reason" (or any other accepted reason), legacy shutdown |
//! | 83 (0x53, `power::EXIT_SYSTEM_FAILURE`) | SBI SRST shutdown with reason "system failure" (0x00000001) |
//! | 1 | an unexpected trap in M-mode or a fatal condition in the firmware (QEMU also exits 1 on its own errors, e.g. bad options: read the log) |
//! | 2 | a panic in the firmware |
//! | 3 | the boot failed (unusable device tree) |
//!
//! 83 was chosen so that a payload's failure cannot be taken for success:
//! not 0 or 1 (runners built on `isa-debug-exit` treat 1 or 33 as
//! success), not 77 (skipped, for automake and meson), not 124 and above
//! (timeout(1), the shell, signals), not one of the firmware's own codes.
//! The reset type and reason are 32-bit SBI parameters: only the low 32
//! bits of a0/a1 count.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
mod boot;
#[cfg(target_os = "none")]
mod console;
#[cfg(target_os = "none")]
mod csr;
#[cfg(target_os = "none")]
mod dtpatch;
#[cfg(target_os = "none")]
mod emulate;
#[cfg(target_os = "none")]
mod entry;
#[cfg(target_os = "none")]
mod layout;
#[cfg(target_os = "none")]
mod machine;
#[cfg(target_os = "none")]
mod platform;
#[cfg(target_os = "none")]
mod pmu;
#[cfg(target_os = "none")]
mod power;
#[cfg(target_os = "none")]
mod sbi;
#[cfg(target_os = "none")]
mod steal;
#[cfg(target_os = "none")]
mod timer;
#[cfg(target_os = "none")]
mod trap;

#[cfg(target_os = "none")]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    trap::panic_report(info)
}

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("this is a bare-metal program; build it with `cargo xtask firmware`");
}
