//! rvpmu-fw: an M-mode firmware for QEMU `virt` that boots Linux in S-mode
//! and implements SBI 3.0 (BASE, TIME, IPI, RFENCE, HSM, SRST, DBCN, the
//! legacy calls; PMU and STA through the `rvpmu` engine).
//!
//! Bare-metal crate: built for riscv64gc-unknown-none-elf by
//! `cargo xtask firmware`; on the host it is an empty stub (each module
//! file opens with `#![cfg(target_os = "none")]`).
//!
//! # Modules
//!
//! | module | what |
//! |---|---|
//! | `console` | the UART |
//! | `layout` | memory layout |
//! | `dtpatch` | the DTB's /reserved-memory |
//! | `platform` | fw_dynamic info, the device tree's description of the machine |
//! | `pmu` | the `rvpmu` engine per hart (`HartPerf`), the event map from the DT |
//! | `machine` | shared state: boot hand-off, platform (through `Ready`), event map, hart table (HSM states, IPI and fence messages, storage of each hart's `HartLocal`), `sleep_until` |
//! | `power` | power-off, reset, fatal and panic reports (the finisher codes are `rvpmu_rt::exit`'s) |
//! | `frame` | the trap frame and the hart's root (`this_hart`), redirect to S-mode, guarded accesses, entering S-mode |
//! | `steal` | the noisy neighbour |
//! | `timer` | mtimecmp: supervisor timer, neighbour deadline |
//! | `hsm` | the calling hart's stop and suspend waits |
//! | `emulate` | misaligned load/store emulation |
//! | `sbi` | SBI call dispatch, from the one extension table that also answers probe_extension |
//! | `trap` | trap dispatch |
//! | `boot` | cold boot and per-hart setup |
//! | `entry` | reset and trap-vector assembly, naming `boot`, `trap` and `sbi`'s entry points |
//!
//! CSRs are `rvpmu_rt::csr`'s, by name.
//!
//! ## Layering
//!
//! | module | uses |
//! |---|---|
//! | `console` | |
//! | `layout` | |
//! | `dtpatch` | `console` |
//! | `platform` | `console`, `layout` |
//! | `pmu` | `console`, `platform` |
//! | `machine` | `console`, `layout`, `platform`, `pmu` |
//! | `power` | `console`, `platform`, `machine` |
//! | `frame` | `platform`, `machine`, `power` |
//! | `steal` | `platform`, `pmu`, `machine`, `frame` |
//! | `timer` | `platform`, `machine`, `frame`, `steal` |
//! | `hsm` | `machine`, `frame`, `timer` |
//! | `emulate` | `pmu`, `machine`, `frame` |
//! | `sbi` | `layout`, `platform`, `pmu`, `machine`, `power`, `frame`, `timer`, `hsm` |
//! | `trap` | `machine`, `power`, `frame`, `timer`, `emulate`, `sbi` |
//! | `boot` | `console`, `layout`, `dtpatch`, `platform`, `pmu`, `machine`, `power`, `frame`, `timer`, `hsm` |
//! | `entry` | `layout`, `frame`, `sbi`, `trap`, `boot` |
//!
//! # Per-hart state
//!
//! A hart's private state (`machine::HartLocal`: its PMU engine and STA
//! record, its timer deadlines) has one root: the pointer beside its trap
//! frame (`frame::HartRoot`), set once at the hart's setup. Each trap
//! borrows it once, `&mut`, through the one `unsafe fn` that may
//! (`frame::this_hart`, whose contract is one live borrow per hart: M-mode
//! runs with interrupts off, so traps do not nest), and passes it down;
//! no safe function hands out a `&mut` to it. Where the firmware runs
//! other work while it holds part of the state, the borrow is split: the
//! M timer keeps the deadlines and lends `perf` to the noisy neighbour
//! (`steal::run`), which keeps the STA record and lends the PMU to the
//! wait that serves other harts' messages (`machine::sleep_until`,
//! `machine::process_messages`) so that their firmware events are
//! recorded. Other harts are reached only through `machine`'s atomics
//! (IPIs, remote fences, HSM).
//!
//! The platform description is written once at boot and read through
//! `machine::Ready`, a zero-sized proof that it was published: boot gets
//! it from `machine::publish` (boot hart) or `machine::wait_for_platform`
//! (the others), each hart's state keeps it (`HartLocal::ready`), and the
//! traps pass it down with the state. No safe function returns the
//! platform without one.
//!
//! The trap entry's own words (`recover`, `scratch`) are in the hart's
//! root beside the frame, not in it: a guarded access (`frame::load_u8`
//! and the like, firmware reading S-mode memory as S-mode would) may fault
//! while its handler holds `&mut TrapFrame`, and the fault path writes
//! them. The guarded accesses take the frame (only full-path handlers have
//! one) but neither read nor write it.
//!
//! # Exit status under QEMU
//!
//! The firmware powers off through the `sifive,test` finisher (QEMU virt's
//! test device): FINISHER_PASS, or FINISHER_FAIL with a code that QEMU
//! turns into its exit status: an SRST shutdown with reason "system
//! failure" (0x00000001) exits `rvpmu_rt::exit::SYSTEM_FAILURE` (83), any
//! other accepted shutdown and the legacy shutdown exit 0, and the
//! firmware's own failures have codes of their own. The values, the
//! table a runner reads and why 83 are in `rvpmu_rt::exit`. The reset
//! type and reason are 32-bit SBI parameters: only the low 32 bits of
//! a0/a1 count.
#![cfg_attr(target_os = "none", no_std, no_main)]

mod boot;
mod console;
mod dtpatch;
mod emulate;
mod entry;
mod frame;
mod hsm;
mod layout;
mod machine;
mod platform;
mod pmu;
mod power;
mod sbi;
mod steal;
mod timer;
mod trap;

#[cfg(target_os = "none")]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    power::panic_report(info)
}

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("this is a bare-metal program; build it with `cargo xtask firmware`");
}
