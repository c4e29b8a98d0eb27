//! The S-mode test kernel runtime shared by the two test kernels, the SBI
//! conformance kernel (`crates/conformance`) and the firmware's non-PMU
//! checks (`crates/rvpmu-fw/src/bin/sbi-check.rs`): entry points and SMP
//! bring-up
//! (`runtime`), the trap vector (`runtime`; each kernel supplies
//! `trap_handler`) and the console (`console`, `println!`, `text!`). SBI
//! calls go through the one client, `rvpmu::supervisor`. On the host this
//! library is empty.
#![cfg_attr(target_os = "none", no_std)]

#[cfg(target_os = "none")]
pub mod console;
#[cfg(target_os = "none")]
pub mod runtime;
