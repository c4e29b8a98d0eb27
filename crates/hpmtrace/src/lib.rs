//! hpmtrace: the trace performance library.
//!
//! Performance counters written into a trace as ITC data-acquisition
//! messages, in the format of the SiFive Trace Performance Library
//! ([`format`]), framed as Nexus messages ([`nexus`]) and decoded back
//! ([`decode`]).
//!
//! The core (format, encoder, sinks, bare-metal counter source) is
//! `no_std`; the `std` feature (default) adds the Linux collectors, the
//! `.rtd` file output and the C API.
#![cfg_attr(not(feature = "std"), no_std)]

pub mod decode;
pub mod format;
pub mod nexus;
