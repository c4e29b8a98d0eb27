//! rvpmu-fw: an M-mode firmware for QEMU `virt` that boots Linux in S-mode
//! and implements SBI 3.0 (BASE, TIME, IPI, RFENCE, HSM, SRST, DBCN, the
//! legacy calls; PMU and STA through the `rvpmu` engine).
//!
//! Bare-metal crate: built for riscv64gc-unknown-none-elf by
//! `cargo xtask firmware`; on the host it is an empty stub.
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
