#![doc = include_str!("../README.md")]
//!
//! ## Layering
//!
//! | module | uses |
//! |---|---|
//! | `event` | |
//! | `counter_info` | |
//! | `client` | |
//!
//! [`Error`] of the crate root is shared by all of them.
#![cfg_attr(not(test), no_std)]
#![deny(missing_docs)]

pub mod client;
pub mod counter_info;
pub mod event;

pub use counter_info::CounterInfo;
pub use sbi_spec::binary::SbiRet;

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
#[non_exhaustive]
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
