//! rustsbi-fw: an M-mode firmware for QEMU `virt` written as a RustSBI
//! user writes one: crates.io `rustsbi` with `#[derive(RustSBI)]`, its own
//! console (the 16550 UART: DBCN and the legacy putchar), timer (Sstc's
//! stimecmp where the hart has it, else the ACLINT/CLINT mtimecmp), IPI
//! and remote fences (the ACLINT/CLINT MSWI), HSM and reset (the
//! `sifive,test` finisher), and the PMU and STA of `rvpmu` through its
//! RustSBI adapter (`rvpmu::rustsbi`).
//!
//! Boot: every hart enters `_start` with a0 = hartid, a1 = DTB. The first
//! one clears `.bss` and reads the device tree (the checked open of
//! `rvpmu-dtb`, the `riscv,pmu` event map of `rvpmu::dt`); each hart then
//! opens PMP to S-mode, delegates S-mode's traps and interrupts, enables
//! its counters to S-mode, builds its PMU engine and puts it in the
//! adapter's slot. The boot hart enters S-mode at 0x80200000 (a0 = hartid,
//! a1 = DTB); the others wait for HSM hart_start. The firmware hides its
//! own 2 MiB from the supervisor by moving the start of the device tree's
//! memory node past it.
//!
//! Bare-metal crate: xtask builds it for riscv64gc-unknown-none-elf
//! (`cargo xtask run --bios rustsbi`, `cargo xtask conformance --bios
//! rustsbi-fw`); on the host it is an empty stub. docs/rustsbi.md says how
//! it embeds rvpmu and what proves it.
//!
//! ## Layering
//!
//! | module | uses |
//! |---|---|
//! | `firmware` | |
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("this is a bare-metal program; `cargo xtask run --bios rustsbi` builds and boots it");
}

mod firmware;
