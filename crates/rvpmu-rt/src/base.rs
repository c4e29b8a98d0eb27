//! The SBI BASE extension as the firmware and the hypervisor answer it.
//! Each program declares the extensions it serves once, as the
//! [`Base::probe`] of the type that also dispatches its calls, so that
//! `probe_extension` is true exactly for what is served; the constant
//! answers are here, and the two shapes of every answer the programs
//! give, [`ok`] and [`err`].

use sbi_spec::base;
use sbi_spec::binary::{SbiRet, RET_ERR_NOT_SUPPORTED, RET_SUCCESS};

/// The SBI specification version the programs implement: 3.0, as BASE's
/// get_spec_version encodes it (major << 24 | minor).
pub const SPEC_VERSION: usize = 3 << 24;

/// BASE's get_impl_version of an implementation whose version is
/// `major.minor.patch` (decimal strings, as cargo's `CARGO_PKG_VERSION_*`):
/// major << 16 | minor << 8 | patch. Shared by the firmware and the
/// hypervisor, which answer BASE themselves.
pub const fn impl_version(major: &str, minor: &str, patch: &str) -> usize {
    const fn num(s: &str) -> usize {
        let b = s.as_bytes();
        let mut i = 0;
        let mut v = 0;
        while i < b.len() {
            v = v * 10 + (b[i] - b'0') as usize;
            i += 1;
        }
        v
    }
    num(major) << 16 | num(minor) << 8 | num(patch)
}

/// Implementation IDs. The SBI registry assigns 0..=11 (BBL, OpenSBI, ...,
/// bhyve); the programs use ASCII tags far outside that range, each its
/// own, so that a caller can tell which one answers.
pub mod impl_id {
    /// rvpmu-fw: "rvpm".
    pub const FIRMWARE: usize = 0x7276_706d;
    /// rvpmu-hv: "rvhv".
    pub const HYPERVISOR: usize = 0x7276_6876;
}

/// Implementation version: the project's version (every program has the
/// workspace's), major << 16 | minor << 8 | patch.
pub const IMPL_VERSION: usize = impl_version(
    env!("CARGO_PKG_VERSION_MAJOR"),
    env!("CARGO_PKG_VERSION_MINOR"),
    env!("CARGO_PKG_VERSION_PATCH"),
);

/// One of the machine ids BASE reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MachineId {
    /// mvendorid.
    Vendor,
    /// marchid.
    Arch,
    /// mimpid.
    Impl,
}

/// What a program answers BASE with.
pub trait Base {
    /// get_sbi_impl_id.
    const IMPL_ID: usize;
    /// Whether the extension `eid` is served (probe_extension); the
    /// program's one extension table.
    fn probe(&self, eid: usize) -> bool;
    /// get_mvendorid, get_marchid, get_mimpid.
    fn machine_id(&self, id: MachineId) -> usize;
}

/// A successful answer: no error, `value` in a1.
#[inline]
pub const fn ok(value: usize) -> SbiRet {
    SbiRet {
        error: RET_SUCCESS,
        value,
    }
}

/// A failed answer: the SBI error code `error` in a0, a1 zero.
#[inline]
pub const fn err(error: usize) -> SbiRet {
    SbiRet { error, value: 0 }
}

/// The BASE call `fid` with argument `a0`.
#[inline(always)]
pub fn call<B: Base>(b: &B, fid: usize, a0: usize) -> SbiRet {
    match fid {
        base::GET_SBI_SPEC_VERSION => ok(SPEC_VERSION),
        base::GET_SBI_IMPL_ID => ok(B::IMPL_ID),
        base::GET_SBI_IMPL_VERSION => ok(IMPL_VERSION),
        base::PROBE_EXTENSION => ok(b.probe(a0) as usize),
        base::GET_MVENDORID => ok(b.machine_id(MachineId::Vendor)),
        base::GET_MARCHID => ok(b.machine_id(MachineId::Arch)),
        base::GET_MIMPID => ok(b.machine_id(MachineId::Impl)),
        _ => err(RET_ERR_NOT_SUPPORTED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program serving BASE and TIME, with fixed machine ids.
    struct Two;

    impl Base for Two {
        const IMPL_ID: usize = impl_id::HYPERVISOR;
        fn probe(&self, eid: usize) -> bool {
            matches!(eid, base::EID_BASE | sbi_spec::time::EID_TIME)
        }
        fn machine_id(&self, id: MachineId) -> usize {
            match id {
                MachineId::Vendor => 0x489,
                MachineId::Arch => 7,
                MachineId::Impl => 9,
            }
        }
    }

    #[test]
    fn impl_version_packs_decimal_parts() {
        assert_eq!(impl_version("0", "1", "0"), 0x100);
        assert_eq!(impl_version("12", "34", "5"), 12 << 16 | 34 << 8 | 5);
        assert_eq!(SPEC_VERSION, 0x0300_0000);
    }

    #[test]
    fn answers_spec_implementation_and_machine() {
        let v = |fid| {
            let r = call(&Two, fid, 0);
            assert_eq!(r.error, 0, "fid {fid}");
            r.value
        };
        assert_eq!(v(base::GET_SBI_SPEC_VERSION), 3 << 24);
        assert_eq!(v(base::GET_SBI_IMPL_ID), 0x7276_6876);
        assert_eq!(v(base::GET_SBI_IMPL_VERSION), 0x100);
        assert_eq!(v(base::GET_MVENDORID), 0x489);
        assert_eq!(v(base::GET_MARCHID), 7);
        assert_eq!(v(base::GET_MIMPID), 9);
        // The ASCII tags, each its own.
        assert_eq!(&(impl_id::FIRMWARE as u32).to_be_bytes(), b"rvpm");
        assert_eq!(&(impl_id::HYPERVISOR as u32).to_be_bytes(), b"rvhv");
    }

    #[test]
    fn probes_the_programs_table_and_refuses_other_functions() {
        let probe = |eid| call(&Two, base::PROBE_EXTENSION, eid);
        assert_eq!(probe(0x10), SbiRet::success(1));
        assert_eq!(probe(0x5449_4d45), SbiRet::success(1));
        // Served extensions only: PMU is not in this table.
        assert_eq!(probe(0x504d55), SbiRet::success(0));
        assert_eq!(probe(0), SbiRet::success(0));
        for fid in [7, 8, 0x100, usize::MAX] {
            assert_eq!(call(&Two, fid, 0x10).error, RET_ERR_NOT_SUPPORTED, "{fid}");
        }
    }
}
