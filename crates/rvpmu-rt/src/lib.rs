//! Support shared by the bare-metal programs: the M-mode firmware
//! (rvpmu-fw), the HS-mode hypervisor (rvpmu-hv) and the S-mode test
//! kernels (the conformance kernel, rvpmu-fw's sbi-check, rvpmu-hv's
//! vs-check).
//!
//! - [`csr`]: every CSR the programs use, by name, with its accessors,
//!   the bits they use, the hfence encodings, and why the accesses are
//!   sound at each privilege;
//! - [`exit`]: the `sifive,test` finisher values and QEMU exit statuses;
//! - [`base`]: the SBI BASE answers of the programs that serve SBI, and
//!   their answers' two shapes (`ok`, `err`);
//! - [`tally`]: the test kernels' count of checks made and failed;
//! - [`text`](mod@text): a fixed-capacity string for formatting without an allocator;
//! - `link` (host only): the linker scripts, for the build scripts;
//! - `runtime`, `console` (riscv64gc-unknown-none-elf only): the S-mode
//!   test kernels' entry, stacks, SMP bring-up, trap vector, power-off
//!   and console (`println!`, `text!`). SBI calls go through the one
//!   client, `rvpmu_sbi::client`, never the engine.
//!
//! `no_std` and without an allocator on the bare-metal target; on the
//! host it builds with std and its tests run there.
//!
//! ## Layering
//!
//! | module | uses |
//! |---|---|
//! | `csr` | |
//! | `exit` | |
//! | `base` | |
//! | `tally` | |
//! | `link` | |
//! | `text` | |
//! | `console` | `text` |
//! | `runtime` | |
#![cfg_attr(target_os = "none", no_std)]
#![deny(missing_docs)]

pub mod base;
#[cfg(target_os = "none")]
pub mod console;
pub mod csr;
pub mod exit;
#[cfg(not(target_os = "none"))]
pub mod link;
#[cfg(target_os = "none")]
pub mod runtime;
pub mod tally;
pub mod text;
