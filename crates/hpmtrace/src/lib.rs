//! hpmtrace: the trace performance library.
//!
//! Performance counters written into a trace as ITC data-acquisition
//! messages, in the format of the SiFive Trace Performance Library
//! ([`format`](mod@format)), framed as Nexus messages ([`wire`] is their
//! layout, [`rtd`] writes them, `nexus` parses them) and decoded back
//! (`decode`; both with `std`). The Linux collector's hooks
//! only store raw samples; [`stage`] encodes them later into the same bytes.
//! Overhead against uftrace: `BENCH.md`.
//!
//! The core (format, encoder, sinks, Nexus writer, staged-sample replay,
//! bare-metal counter source) is `no_std`; the `std` feature (default) adds the Linux counter
//! source and collectors, the safe session API, the C API and the decoder.
//!
//! ## Layering
//!
//! Bottom-up: the trace format and the Nexus message layout
//! ([`format`](mod@format), [`wire`]), where counter readings come
//! from ([`counters`]), where bytes go ([`sink`]), the writers ([`encoder`],
//! [`rtd`]) and the staged-sample replay over them ([`stage`]); the
//! parser and decoder (`nexus`, `decode`); the C APIs' shared layout
//! ([`cabi`]); then the Linux side (`linux`, `collect`, `session`,
//! `capi`) and the bare-metal one (`bare`). `dump` writes trace buffers
//! as console text, `test_rng` gives the tests their random numbers.
//!
//! | module | uses |
//! |---|---|
//! | `format` | |
//! | `wire` | |
//! | `dump` | |
//! | `test_rng` | |
//! | `counters` | `format` |
//! | `sink` | `format` |
//! | `encoder` | `counters`, `format`, `sink` |
//! | `rtd` | `format`, `sink`, `test_rng`, `wire` |
//! | `stage` | `counters`, `encoder`, `format`, `rtd`, `sink`, `test_rng` |
//! | `nexus` | `wire` |
//! | `decode` | `format`, `nexus` |
//! | `cabi` | `format` |
//! | `linux` | `counters`, `format` |
//! | `collect` | `counters`, `format`, `linux`, `nexus`, `rtd`, `sink`, `stage` |
//! | `session` | `collect`, `format`, `rtd` |
//! | `capi` | `cabi`, `collect`, `counters`, `format`, `nexus` |
//! | `bare` | `cabi`, `counters`, `dump`, `format`, `rtd`, `sink`, `stage` |
#![cfg_attr(not(feature = "std"), no_std)]

#[cfg(all(feature = "bare-capi", target_os = "none", target_arch = "riscv64"))]
pub mod bare;
pub mod cabi;
#[cfg(all(feature = "std", target_os = "linux"))]
pub mod capi;
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
#[cfg(feature = "std")]
pub mod nexus;
pub mod rtd;
#[cfg(all(feature = "std", target_os = "linux"))]
pub mod session;
pub mod sink;
pub mod stage;
#[cfg(all(test, feature = "std"))]
mod test_rng;
pub mod wire;
