//! hpmtrace: the trace performance library.
//!
//! Performance counters written into a trace as ITC data-acquisition
//! messages, in the format of the SiFive Trace Performance Library
//! ([`format`](mod@format)), framed as Nexus messages ([`nexus`]: the
//! format, its writer and its reader) and decoded back (`decode`, with
//! `std`). The Linux collector's hooks only store raw samples; [`stage`]
//! encodes them later into the same bytes. Overhead against uftrace:
//! `BENCH.md`.
//!
//! The core (format, encoder, sinks, Nexus writer, staged-sample replay,
//! bare-metal collector) is `no_std`; the `std` feature (default) adds the
//! Linux counter source and collector, the safe session API, the Nexus
//! reader and the decoder. [`c_api`] is SiFive's C API over either
//! collector.
//!
//! ## Layering
//!
//! Bottom-up: the trace format ([`format`](mod@format)), where counter
//! readings come from ([`counters`]), where bytes go ([`sink`]), the Nexus
//! format with its writer and reader ([`nexus`]), the record encoder
//! ([`encoder`]) and the staged-sample replay over it ([`stage`]); the
//! decoder (`decode`); the Linux side (`linux`, `collect`, `session`) and
//! the bare-metal one (`bare`); the C API over both ([`c_api`]). `dump`
//! writes trace buffers as console text.
//!
//! | module | uses |
//! |---|---|
//! | `format` | |
//! | `dump` | |
//! | `counters` | `format` |
//! | `sink` | `format` |
//! | `nexus` | `format`, `sink` |
//! | `encoder` | `counters`, `format`, `sink` |
//! | `stage` | `encoder`, `format`, `sink` |
//! | `decode` | `format`, `nexus` |
//! | `linux` | `counters`, `format` |
//! | `collect` | `counters`, `format`, `linux`, `nexus`, `sink`, `stage` |
//! | `session` | `collect`, `format`, `nexus` |
//! | `bare` | `counters`, `format`, `nexus`, `sink`, `stage` |
//! | `c_api` | `bare`, `collect`, `counters`, `dump`, `format`, `nexus`, `stage` |
#![cfg_attr(not(feature = "std"), no_std)]

#[cfg(all(feature = "bare-capi", target_os = "none", target_arch = "riscv64"))]
pub mod bare;
pub mod c_api;
#[cfg(all(feature = "std", target_os = "linux"))]
pub mod collect;
pub mod counters;
#[cfg(feature = "std")]
pub mod decode;
pub mod dump;
pub mod encoder;
pub mod format;
#[cfg(all(feature = "std", target_os = "linux"))]
pub mod linux;
pub mod nexus;
#[cfg(all(feature = "std", target_os = "linux"))]
pub mod session;
pub mod sink;
pub mod stage;
