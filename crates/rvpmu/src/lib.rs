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
//!
//! ## Layering
//!
//! Bottom-up: the seams and value types first ([`hw`], [`mem`],
//! [`counter`], [`event`], [`text`]), the device tree ([`dtb`] checks the
//! blob, [`dt`] reads the binding), the shared-memory areas ([`snapshot`],
//! [`sta`]), the per-hart engine ([`hart`]), the SBI call edge ([`ecall`])
//! and the supervisor's side of it ([`supervisor`]); `sim` implements the
//! seams for tests. The SBI [`Error`] codes of the crate root are shared
//! by all of them.
//!
//! | module | uses |
//! |---|---|
//! | `hw` | |
//! | `mem` | |
//! | `counter` | |
//! | `event` | |
//! | `text` | |
//! | `dtb` | |
//! | `dt` | `event`, `text` |
//! | `snapshot` | `event`, `mem` |
//! | `sta` | `mem` |
//! | `hart` | `counter`, `dt`, `event`, `hw`, `mem`, `snapshot` |
//! | `ecall` | `counter`, `event`, `hart`, `hw`, `mem`, `snapshot`, `sta` |
//! | `supervisor` | `ecall` |
//! | `sim` | `counter`, `hw`, `mem` |
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]

pub mod counter;
pub mod dt;
pub mod dtb;
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
pub mod text;

pub use hart::{Pmu, PmuConfig};

/// SBI error codes the PMU and STA functions return (spec, "Standard SBI
/// Errors"). Only the codes these extensions use are listed; the values are
/// `sbi-spec`'s ([`sbi_spec::binary`] `RET_ERR_*`), and
/// [`sbi_spec::binary::Error`] converts both ways.
///
/// A thin wrapper instead of `sbi_spec::binary::Error` itself. That enum
/// has a `Custom(usize)` variant, so it is two words instead of one byte,
/// and it cannot say that these extensions answer only these nine codes.
/// With `sbi_spec::binary::Error` in its place the firmware's hot calls
/// take more instructions and its image grows (docs/engine.md, "sbi-spec",
/// has the figures).
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
        self.ret_code() as isize
    }

    /// `sbiret.error` as the register holds it (`sbi-spec`'s constants).
    pub const fn ret_code(self) -> usize {
        use sbi_spec::binary as b;
        match self {
            Error::Failed => b::RET_ERR_FAILED,
            Error::NotSupported => b::RET_ERR_NOT_SUPPORTED,
            Error::InvalidParam => b::RET_ERR_INVALID_PARAM,
            Error::Denied => b::RET_ERR_DENIED,
            Error::InvalidAddress => b::RET_ERR_INVALID_ADDRESS,
            Error::AlreadyAvailable => b::RET_ERR_ALREADY_AVAILABLE,
            Error::AlreadyStarted => b::RET_ERR_ALREADY_STARTED,
            Error::AlreadyStopped => b::RET_ERR_ALREADY_STOPPED,
            Error::NoShmem => b::RET_ERR_NO_SHMEM,
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
        use sbi_spec::binary as b;
        Some(match code as usize {
            b::RET_ERR_FAILED => Error::Failed,
            b::RET_ERR_NOT_SUPPORTED => Error::NotSupported,
            b::RET_ERR_INVALID_PARAM => Error::InvalidParam,
            b::RET_ERR_DENIED => Error::Denied,
            b::RET_ERR_INVALID_ADDRESS => Error::InvalidAddress,
            b::RET_ERR_ALREADY_AVAILABLE => Error::AlreadyAvailable,
            b::RET_ERR_ALREADY_STARTED => Error::AlreadyStarted,
            b::RET_ERR_ALREADY_STOPPED => Error::AlreadyStopped,
            b::RET_ERR_NO_SHMEM => Error::NoShmem,
            _ => return None,
        })
    }
}

impl From<Error> for sbi_spec::binary::Error {
    fn from(e: Error) -> Self {
        use sbi_spec::binary::Error as E;
        match e {
            Error::Failed => E::Failed,
            Error::NotSupported => E::NotSupported,
            Error::InvalidParam => E::InvalidParam,
            Error::Denied => E::Denied,
            Error::InvalidAddress => E::InvalidAddress,
            Error::AlreadyAvailable => E::AlreadyAvailable,
            Error::AlreadyStarted => E::AlreadyStarted,
            Error::AlreadyStopped => E::AlreadyStopped,
            Error::NoShmem => E::NoShmem,
        }
    }
}

impl TryFrom<sbi_spec::binary::Error> for Error {
    /// An error these extensions never return, unchanged.
    type Error = sbi_spec::binary::Error;
    fn try_from(e: sbi_spec::binary::Error) -> Result<Error, sbi_spec::binary::Error> {
        use sbi_spec::binary::Error as E;
        Ok(match e {
            E::Failed => Error::Failed,
            E::NotSupported => Error::NotSupported,
            E::InvalidParam => Error::InvalidParam,
            E::Denied => Error::Denied,
            E::InvalidAddress => Error::InvalidAddress,
            E::AlreadyAvailable => Error::AlreadyAvailable,
            E::AlreadyStarted => Error::AlreadyStarted,
            E::AlreadyStopped => Error::AlreadyStopped,
            E::NoShmem => Error::NoShmem,
            other => return Err(other),
        })
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "SBI_ERR_{} ({})", self.name(), self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::Error;
    use sbi_spec::binary::{Error as SpecError, SbiRet};

    const ALL: [Error; 9] = [
        Error::Failed,
        Error::NotSupported,
        Error::InvalidParam,
        Error::Denied,
        Error::InvalidAddress,
        Error::AlreadyAvailable,
        Error::AlreadyStarted,
        Error::AlreadyStopped,
        Error::NoShmem,
    ];

    #[test]
    fn codes_are_sbi_spec_s_and_convert_both_ways() {
        for (k, e) in ALL.into_iter().enumerate() {
            assert_eq!(e.code(), -(k as isize) - 1, "{e}");
            assert_eq!(Error::from_code(e.code()), Some(e));
            let spec = SpecError::from(e);
            assert_eq!(SbiRet::<usize>::from(spec).error, e.ret_code());
            assert_eq!(Error::try_from(spec), Ok(e));
        }
        assert_eq!(Error::from_code(0), None);
        assert_eq!(Error::from_code(-10), None);
        assert_eq!(Error::try_from(SpecError::Timeout), Err(SpecError::Timeout));
    }
}
