//! # rvpmu: the SBI PMU (SBI 3.0) and STA engine
//!
//! A `no_std`, allocation-free implementation of the RISC-V SBI Performance
//! Monitoring Unit extension (EID 0x504D55, all nine functions) and the
//! Steal-time Accounting extension (EID 0x535441), configured from the
//! `riscv,pmu` device-tree binding.
//!
//! Data flows one way: raw registers are decoded once at the edge
//! ([`ecall`]) into typed values ([`event::Event`], [`counter::CounterSet`],
//! flags), the per-hart engine ([`Pmu`]) applies the spec's semantics and
//! talks to two small seams: [`hw::Hpm`] (the hart's counter CSRs) and
//! [`mem::SupervisorMemory`] (the supervisor's physical memory). Firmware
//! implements them with CSRs and physical accesses; tests use the `sim` module (feature `sim`).
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]

pub mod counter;
pub mod dt;
pub mod ecall;
pub mod event;
pub mod hart;
pub mod hw;
pub mod mem;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
pub mod snapshot;
pub mod sta;
pub mod supervisor;

pub use hart::{Pmu, PmuConfig};

/// SBI error codes the PMU and STA functions return (spec, "Standard SBI
/// Errors"). Only the codes these extensions use are listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// SBI_ERR_FAILED (-1)
    Failed,
    /// SBI_ERR_NOT_SUPPORTED (-2)
    NotSupported,
    /// SBI_ERR_INVALID_PARAM (-3)
    InvalidParam,
    /// SBI_ERR_DENIED (-4)
    Denied,
    /// SBI_ERR_INVALID_ADDRESS (-5)
    InvalidAddress,
    /// SBI_ERR_ALREADY_AVAILABLE (-6)
    AlreadyAvailable,
    /// SBI_ERR_ALREADY_STARTED (-7)
    AlreadyStarted,
    /// SBI_ERR_ALREADY_STOPPED (-8)
    AlreadyStopped,
    /// SBI_ERR_NO_SHMEM (-9)
    NoShmem,
}

impl Error {
    /// The value placed in `sbiret.error`.
    pub const fn code(self) -> isize {
        match self {
            Error::Failed => -1,
            Error::NotSupported => -2,
            Error::InvalidParam => -3,
            Error::Denied => -4,
            Error::InvalidAddress => -5,
            Error::AlreadyAvailable => -6,
            Error::AlreadyStarted => -7,
            Error::AlreadyStopped => -8,
            Error::NoShmem => -9,
        }
    }

    /// The spec's name for the code.
    pub const fn name(self) -> &'static str {
        match self {
            Error::Failed => "FAILED",
            Error::NotSupported => "NOT_SUPPORTED",
            Error::InvalidParam => "INVALID_PARAM",
            Error::Denied => "DENIED",
            Error::InvalidAddress => "INVALID_ADDRESS",
            Error::AlreadyAvailable => "ALREADY_AVAILABLE",
            Error::AlreadyStarted => "ALREADY_STARTED",
            Error::AlreadyStopped => "ALREADY_STOPPED",
            Error::NoShmem => "NO_SHMEM",
        }
    }

    /// Decode an `sbiret.error` value (supervisor side).
    pub const fn from_code(code: isize) -> Option<Error> {
        Some(match code {
            -1 => Error::Failed,
            -2 => Error::NotSupported,
            -3 => Error::InvalidParam,
            -4 => Error::Denied,
            -5 => Error::InvalidAddress,
            -6 => Error::AlreadyAvailable,
            -7 => Error::AlreadyStarted,
            -8 => Error::AlreadyStopped,
            -9 => Error::NoShmem,
            _ => return None,
        })
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "SBI_ERR_{} ({})", self.name(), self.code())
    }
}
