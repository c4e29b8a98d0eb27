//! Check results and their one-line reports.
//!
//! Line format (parsed by `cargo xtask conformance`):
//! `..> ID` before a check runs (so a hang can be attributed), then
//! `[PASS] ID - WHAT | expected: E | actual: A` (or `[FAIL]`, or `[N/A ]`
//! for a check whose optional feature is absent; it is counted on its own,
//! neither passed nor failed, and the line says why the spec makes it
//! optional), and at the end `RESULT N passed, M failed, K n/a`.

use crate::console::Field;
use crate::sbi::{err, Ret};
use crate::text;
use core::fmt::Write;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pass,
    Fail,
    /// Optional feature absent: counted apart (not as passed).
    Na,
}

/// The outcome of one check.
pub struct Verdict {
    pub status: Status,
    pub expected: Field,
    pub actual: Field,
}

impl Verdict {
    pub fn new(ok: bool, expected: Field, actual: Field) -> Self {
        let status = if ok { Status::Pass } else { Status::Fail };
        Self {
            status,
            expected,
            actual,
        }
    }
    /// The check does not apply because the spec lets the feature be absent.
    pub fn na(why: &str) -> Self {
        Self {
            status: Status::Na,
            expected: text!("n/a"),
            actual: text!("n/a: optional feature absent ({why})"),
        }
    }
}

/// "A or B or C".
pub fn names(allowed: &[isize]) -> Field {
    let mut t = Field::new();
    for (i, e) in allowed.iter().enumerate() {
        if i > 0 {
            let _ = t.write_str(" or ");
        }
        let _ = t.write_str(err::name(*e));
    }
    t
}

/// Passes when the call answered one of `allowed`.
pub fn errs(r: Ret, allowed: &[isize]) -> Verdict {
    Verdict::new(allowed.contains(&r.error), names(allowed), text!("{r}"))
}

/// Counters of one suite run (one hart).
pub struct Suite<'a> {
    pub prefix: &'a str,
    pub skip: &'a str,
    pub passed: u32,
    pub failed: u32,
    pub na: u32,
}

impl<'a> Suite<'a> {
    pub fn new(prefix: &'a str, skip: &'a str) -> Self {
        Self {
            prefix,
            skip,
            passed: 0,
            failed: 0,
            na: 0,
        }
    }

    fn skipped(&self, id: &str) -> bool {
        self.skip.split(',').any(|s| {
            s.len() == self.prefix.len() + id.len() && s.starts_with(self.prefix) && s.ends_with(id)
        })
    }

    /// Runs one check and prints its line. `what` names what is checked and
    /// the spec sentence or table row it comes from.
    pub fn check(&mut self, id: &str, what: &str, f: impl FnOnce() -> Verdict) {
        crate::println!("..> {}{}", self.prefix, id);
        let v = if self.skipped(id) {
            Verdict::new(
                false,
                text!("the check completes"),
                text!("not run: it hung or crashed the firmware in an earlier run"),
            )
        } else {
            f()
        };
        let tag = match v.status {
            Status::Pass => {
                self.passed += 1;
                "[PASS]"
            }
            Status::Fail => {
                self.failed += 1;
                "[FAIL]"
            }
            Status::Na => {
                self.na += 1;
                "[N/A ]"
            }
        };
        crate::println!(
            "{tag} {}{id} - {what} | expected: {} | actual: {}",
            self.prefix,
            v.expected.as_str(),
            v.actual.as_str()
        );
    }
}
