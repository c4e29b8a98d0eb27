//! Narrow parameters: the SBI functions whose parameters are narrower than
//! XLEN. The binary encoding chapter: "Every SBI function should prefer
//! `unsigned long` as the data type. [...] In case the data is defined as
//! 32bit wide, higher privilege software must ensure that it only uses 32
//! bit data." So a firmware looks only at the low bits of such a register:
//! upper bits set with valid low bits get the answer the low bits alone get,
//! and upper bits set with invalid low bits get the error the low bits alone
//! get. A caller following the RISC-V psABI passes a `uint32_t` such as
//! 0x80000000 sign-extended (0xffffffff_80000000), so this is not academic.
//!
//! | extension | function | parameter | width |
//! |---|---|---|---|
//! | HSM | hart_suspend | suspend_type | 32 |
//! | SRST | system_reset | reset_type, reset_reason | 32, 32 |
//! | DBCN | console_write_byte | byte | 8 |
//! | legacy | console_putchar | ch (`int`) | 32 (the character is its low 8 bits) |
//!
//! Every other parameter of BASE, TIME, IPI, RFENCE, HSM, PMU, STA and
//! DBCN is `unsigned long` or `uint64_t`. The shutdown with upper bits set
//! in both SRST parameters is the suite's last check (`main.rs`,
//! `srst.upper32.shutdown`): it can only pass by powering the machine off.

use crate::report::{errs, Suite, Verdict};
use crate::rt::{suspend_non_retentive, with_ssip_pending, NonRetentive};
use crate::sbi::{self, err::*, srst, Ret};
use crate::text;

/// What the upper 32 bits of a 32-bit parameter's register hold here: all
/// ones, as sign extension gives for values >= 0x80000000.
pub const HI32: usize = 0xffff_ffff << 32;
/// Upper bits above a `uint8_t`.
const HI8: usize = !0xff;

const RETENTIVE: usize = 0x0000_0000;
const NON_RETENTIVE: usize = 0x8000_0000;
const RESERVED_RET: usize = 0x0000_0001;
const RESERVED_NON_RET: usize = 0x8000_0001;
const PLATFORM_RET: usize = 0x1000_0000;
/// SRST reset type 3 and reason 2: "Reserved for future use".
const RESERVED_TYPE: usize = 3;
const RESERVED_REASON: usize = 2;

pub fn run(s: &mut Suite<'_>) {
    hsm(s);
    srst(s);
    console(s);
}

fn describe(n: NonRetentive, opaque: usize) -> crate::console::Field {
    match n {
        NonRetentive::Answered(r) => text!("{r}"),
        NonRetentive::Resumed { a0, a1 } if a1 == opaque => {
            text!("resumed at resume_addr, a0={a0:#x}, a1=opaque")
        }
        NonRetentive::Resumed { a0, a1 } => {
            text!("resumed at resume_addr, a0={a0:#x}, a1={a1:#x} (opaque was {opaque:#x})")
        }
    }
}

/// `hart_suspend(ty)`, then `hart_suspend(HI32 | ty)`, each through the
/// non-retentive helper with SSIP pending.
fn suspend_both(ty: usize) -> ((NonRetentive, usize), (NonRetentive, usize)) {
    with_ssip_pending(|| (suspend_non_retentive(ty), suspend_non_retentive(HI32 | ty)))
}

/// The same outcome up to the opaque value (each call passes its own).
fn same(a: (NonRetentive, usize), b: (NonRetentive, usize)) -> bool {
    match (a.0, b.0) {
        (NonRetentive::Resumed { a0: x, a1: ox }, NonRetentive::Resumed { a0: y, a1: oy }) => {
            x == y && (ox == a.1) == (oy == b.1)
        }
        (x, y) => x == y,
    }
}

fn hsm(s: &mut Suite<'_>) {
    let present = sbi::probe_extension(sbi::eid::HSM);
    let absent = !(present.ok() && present.value != 0);
    let na =
        || Verdict::na("HSM extension absent (probe_extension 0); SBI extensions are optional");
    s.check("hsm.suspend.upper32.retentive", "hart_suspend: \"The suspend_type parameter is 32 bits wide\" and the firmware \"only uses 32 bit data\": type 0xffffffff_00000000 (default retentive in the low bits) answers as 0x00000000 does (SUCCESS after the wake-up, or NOT_SUPPORTED), a wake-up pending", || {
        if absent {
            return na();
        }
        let (plain, upper) = with_ssip_pending(|| {
            (sbi::hart_suspend(RETENTIVE), sbi::hart_suspend(HI32 | RETENTIVE))
        });
        let allowed = plain.ok() || plain.error == NOT_SUPPORTED;
        Verdict::new(
            allowed && upper == plain,
            text!("as suspend_type 0x0: {plain}"),
            text!("{upper}"),
        )
    });
    s.check("hsm.suspend.upper32.non_retentive", "hart_suspend type 0xffffffff_80000000 (default non-retentive in the low 32 bits) does what 0x80000000 does: the hart resumes at resume_addr with a0 = hartid, a1 = opaque (Table \"HSM Hart Resume Register State\"), or both answer NOT_SUPPORTED", || {
        if absent {
            return na();
        }
        let (plain, upper) = suspend_both(NON_RETENTIVE);
        let allowed = match plain.0 {
            NonRetentive::Resumed { a1, .. } => a1 == plain.1,
            NonRetentive::Answered(r) => r.error == NOT_SUPPORTED,
        };
        like_low_bits(NON_RETENTIVE, allowed, plain, upper)
    });
    s.check("hsm.suspend.upper32.reserved", "hart_suspend type 0xffffffff_00000001: the low 32 bits are \"Reserved for future use\", so INVALID_PARAM (\"suspend_type is reserved\"), as for 0x00000001", || {
        if absent {
            return na();
        }
        let (plain, upper) = suspend_both(RESERVED_RET);
        answered(plain, upper, INVALID_PARAM)
    });
    s.check("hsm.suspend.upper32.reserved_non_retentive", "hart_suspend type 0xffffffff_80000001: the low 32 bits are \"Reserved for future use\" (0x80000001 - 0x8FFFFFFF), so INVALID_PARAM, as for 0x80000001", || {
        if absent {
            return na();
        }
        let (plain, upper) = suspend_both(RESERVED_NON_RET);
        answered(plain, upper, INVALID_PARAM)
    });
    s.check("hsm.suspend.upper32.platform", "hart_suspend type 0xffffffff_10000000 answers as 0x10000000 (\"Platform specific retentive suspend\"): INVALID_PARAM when unimplemented, else SUCCESS after the wake-up or NOT_SUPPORTED", || {
        if absent {
            return na();
        }
        let (plain, upper) = suspend_both(PLATFORM_RET);
        let allowed = matches!(plain.0, NonRetentive::Answered(r)
            if r.ok() || r.error == INVALID_PARAM || r.error == NOT_SUPPORTED);
        like_low_bits(PLATFORM_RET, allowed, plain, upper)
    });
}

/// The call with the upper bits set did what the plain call of `ty` did,
/// and that outcome is `allowed`.
fn like_low_bits(
    ty: usize,
    allowed: bool,
    plain: (NonRetentive, usize),
    upper: (NonRetentive, usize),
) -> Verdict {
    Verdict::new(
        allowed && same(plain, upper),
        text!(
            "as suspend_type {ty:#x}: {}",
            describe(plain.0, plain.1).as_str()
        ),
        describe(upper.0, upper.1),
    )
}

/// Both calls answered `want` (through the non-retentive helper, so a
/// firmware that wrongly suspends comes back either way).
fn answered(plain: (NonRetentive, usize), upper: (NonRetentive, usize), want: isize) -> Verdict {
    let is = |n: NonRetentive| matches!(n, NonRetentive::Answered(r) if r.error == want);
    let low = describe(plain.0, plain.1);
    Verdict::new(
        is(plain.0) && is(upper.0),
        text!("{} (the low 32 bits alone: {})", name(want), low.as_str()),
        describe(upper.0, upper.1),
    )
}

fn srst(s: &mut Suite<'_>) {
    let present = sbi::probe_extension(sbi::eid::SRST);
    let absent = !(present.ok() && present.value != 0);
    let na =
        || Verdict::na("SRST extension absent (probe_extension 0); SBI extensions are optional");
    s.check("srst.type.upper32.reserved", "system_reset: \"The reset_type parameter is 32 bits wide\": type 0xffffffff_00000003 has the reserved type 3 in its low 32 bits, so INVALID_PARAM (\"reset_type ... is reserved\"), reason 0", || {
        if absent {
            return na();
        }
        errs(sbi::system_reset(HI32 | RESERVED_TYPE, srst::REASON_NONE), &[INVALID_PARAM])
    });
    s.check("srst.reason.upper32.reserved", "system_reset: \"This parameter is 32 bits wide\": reason 0xffffffff_00000002 has the reserved reason 2 in its low 32 bits, so INVALID_PARAM (\"reset_reason is reserved\"), type shutdown", || {
        if absent {
            return na();
        }
        errs(sbi::system_reset(srst::SHUTDOWN, HI32 | RESERVED_REASON), &[INVALID_PARAM])
    });
}

/// Writes `text` one byte at a time through `put`, whose answers must all
/// equal `want`; the first differing answer is returned.
fn put_all<T: PartialEq + Copy>(text: &[u8], want: T, put: impl Fn(u8) -> T) -> Option<T> {
    text.iter().map(|&b| put(b)).find(|&r| r != want)
}

fn console(s: &mut Suite<'_>) {
    let present = sbi::probe_extension(sbi::eid::DBCN);
    let dbcn = present.ok() && present.value != 0;
    s.check("dbcn.write_byte.upper", "console_write_byte(uint8_t byte): only the low 8 bits count, so bytes with bits 8..63 set answer SUCCESS as the plain bytes do (\"dbcn upper bits\" shows on the console)", || {
        if !dbcn {
            return Verdict::na("DBCN extension absent (probe_extension 0); SBI extensions are optional");
        }
        let plain = sbi::dbcn_write_byte(b'\n' as usize);
        let bad = put_all(b"dbcn upper bits\n", plain, |b| {
            sbi::dbcn_write_byte(HI8 | b as usize)
        });
        let ok: Ret = bad.unwrap_or(plain);
        Verdict::new(plain.ok() && bad.is_none(), text!("SUCCESS (as the plain byte: {plain})"), text!("{ok}"))
    });
    let present = sbi::probe_extension(sbi::eid::LEGACY_PUTCHAR);
    let legacy = present.ok() && present.value != 0;
    s.check("legacy.putchar.upper", "legacy console_putchar(int ch): a 32-bit parameter, so ch with bits 32..63 set answers as the plain character does (0; \"legacy upper bits\" shows on the console)", || {
        if !legacy {
            return Verdict::na("legacy console_putchar absent (probe_extension(0x01) 0); the legacy extensions are optional");
        }
        let plain = sbi::legacy_putchar(b'\n' as usize);
        let bad = put_all(b"legacy upper bits\n", plain, |b| {
            sbi::legacy_putchar(HI32 | b as usize)
        });
        Verdict::new(
            plain == 0 && bad.is_none(),
            text!("0 (as the plain character: {plain})"),
            text!("{}", bad.unwrap_or(plain)),
        )
    });
}
