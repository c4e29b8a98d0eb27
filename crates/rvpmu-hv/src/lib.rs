//! # rvpmu-hv: a minimal HS-mode hypervisor on rvpmu-fw
//!
//! The hypervisor (`src/main.rs`, riscv64gc-unknown-none-elf only) runs one
//! VS-mode guest on one hart. Everything it decides from hostile or
//! external input lives in this library, which also builds on the host so
//! that it is tested there:
//!
//! | module | what |
//! |---|---|
//! | [`ram`] | the guest's RAM window: guest-physical to host-physical, bounds-checked; [`ram::GuestMemory`] implements `rvpmu`'s `SupervisorMemory` over it |
//! | [`gstage`] | the Sv39x4 G-stage page table that maps the window and nothing else |
//! | [`bundle`] | the guest bundle (kernel, initrd, command line, RAM size) xtask writes and the hypervisor reads |
//! | [`layout`] | where the window goes in host RAM and where kernel, initrd and DTB go in guest RAM |
//! | [`sbi`] | the guest's SBI calls (ecall from VS): answered, forwarded to the host firmware, or refused |
//!
//! Design, memory layout and trap flow: `docs/hypervisor.md`.
#![cfg_attr(not(test), no_std)]
#![deny(missing_docs)]

pub mod bundle;
pub mod gstage;
pub mod layout;
pub mod ram;
pub mod sbi;
