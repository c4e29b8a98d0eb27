#![doc = include_str!("../README.md")]
//!
//! ## Shape
//!
//! Data flows one way: raw registers are decoded once at the edge
//! ([`ecall`]) into typed values ([`event::Event`], [`counter::CounterSet`],
//! flags), the per-hart engine ([`Pmu`]) applies the spec's semantics and
//! talks to two small seams: [`hw::Hpm`] (the hart's counters, owned by
//! the engine) and [`mem::SupervisorMemory`] (the supervisor's memory,
//! handed to each call).
//!
//! ## Layering
//!
//! Bottom-up: the seams and value types first ([`hw`], [`mem`],
//! [`counter`]), the device tree ([`dt`] reads the binding), the
//! shared-memory areas ([`snapshot`], [`sta`]), the per-hart engine
//! ([`hart`]) and the SBI call edge ([`ecall`]); `sim` implements the
//! seams for tests. The wire format both sides of a call share (the SBI
//! [`Error`] codes, the [`event`] codec, [`CounterInfo`]) comes from the
//! `rvpmu-sbi` crate and is re-exported here; that crate's S-mode client
//! is for supervisors, and the engine does not use it.
//!
//! | module | uses |
//! |---|---|
//! | `hw` | |
//! | `mem` | |
//! | `counter` | |
//! | `dt` | |
//! | `snapshot` | `mem` |
//! | `sta` | `mem` |
//! | `hart` | `counter`, `dt`, `hw`, `mem`, `snapshot` |
//! | `ecall` | `counter`, `hart`, `hw`, `mem`, `snapshot`, `sta` |
//! | `sim` | `counter`, `hw`, `mem` |
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]

pub mod counter;
pub mod dt;
pub mod ecall;
pub mod hart;
pub mod hw;
pub mod mem;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
pub mod snapshot;
pub mod sta;

pub use hart::{Pmu, PmuConfig};
pub use rvpmu_sbi::{event, CounterInfo, Error};
