//! Check results and their one-line reports, in one of two formats chosen
//! on the kernel command line (`rvpmu.format=`), and the run's totals.
//!
//! `text` (the default; parsed by `cargo xtask conformance`): `..> ID`
//! before a check runs (so a hang can be attributed), then
//! `[PASS] ID - WHAT | expected: E | actual: A` (or `[FAIL]`, or `[N/A ]`
//! for a check whose optional feature is absent; it is counted on its own,
//! neither passed nor failed, and the line says why the spec makes it
//! optional), and at the end `RESULT N passed, M failed, K n/a`.
//!
//! `json`: one JSON object a line instead of each of those lines,
//! `{"start":ID}`, `{"check":ID,"hart":H,"status":"pass"|"fail"|"n/a",
//! "what":W,"expected":E,"actual":A}` and
//! `{"result":{"passed":N,"failed":M,"n/a":K}}` (JSON lines, for other
//! projects' CI: every line of the kernel's that starts with `{` is one).
//!
//! ID is the check's name, prefixed with `hN.` on the harts the boot hart
//! starts (N: the hart id). The totals are kept here, over every hart, and
//! counted as each verdict line is printed: the RESULT line is the sum of
//! the lines, whatever the firmware did.

use crate::console::Field;
use crate::sbi::{err, Ret};
use crate::text;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

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

/// How verdict lines are printed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

static JSON: AtomicBool = AtomicBool::new(false);
static PASSED: AtomicU32 = AtomicU32::new(0);
static FAILED: AtomicU32 = AtomicU32::new(0);
static NA: AtomicU32 = AtomicU32::new(0);

/// Chooses the format (the boot hart, before any check).
pub fn set_format(f: Format) {
    JSON.store(f == Format::Json, Ordering::Release);
}

fn format() -> Format {
    if JSON.load(Ordering::Acquire) {
        Format::Json
    } else {
        Format::Text
    }
}

/// A string as a JSON string literal (RFC 8259: quote, backslash and the
/// control characters escaped).
struct Json<'a>(&'a str);

impl core::fmt::Display for Json<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_char('"')?;
        for c in self.0.chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
                c => f.write_char(c)?,
            }
        }
        f.write_char('"')
    }
}

/// Announces check `id` (with its hart prefix) before it runs.
pub fn start(id: &str) {
    match format() {
        Format::Text => crate::println!("..> {id}"),
        Format::Json => crate::println!("{{\"start\":{}}}", Json(id)),
    }
}

/// Prints one verdict line for check `prefix``id` on hart `hart` and
/// counts it in the run's totals.
pub fn emit(prefix: &str, id: &str, hart: usize, what: &str, v: &Verdict) {
    let (counter, tag, word) = match v.status {
        Status::Pass => (&PASSED, "[PASS]", "pass"),
        Status::Fail => (&FAILED, "[FAIL]", "fail"),
        Status::Na => (&NA, "[N/A ]", "n/a"),
    };
    counter.fetch_add(1, Ordering::AcqRel);
    let (e, a) = (v.expected.as_str(), v.actual.as_str());
    match format() {
        Format::Text => {
            crate::println!("{tag} {prefix}{id} - {what} | expected: {e} | actual: {a}")
        }
        Format::Json => {
            let mut full = Field::new();
            let _ = write!(full, "{prefix}{id}");
            crate::println!(
                "{{\"check\":{},\"hart\":{hart},\"status\":\"{word}\",\"what\":{},\"expected\":{},\"actual\":{}}}",
                Json(full.as_str()),
                Json(what),
                Json(e),
                Json(a)
            )
        }
    }
}

/// The run's totals so far: (passed, failed, N/A) over every hart.
pub fn totals() -> (u32, u32, u32) {
    (
        PASSED.load(Ordering::Acquire),
        FAILED.load(Ordering::Acquire),
        NA.load(Ordering::Acquire),
    )
}

/// Prints the summary line: the totals of every verdict line printed.
pub fn result() {
    let (p, f, n) = totals();
    match format() {
        Format::Text => crate::println!("RESULT {p} passed, {f} failed, {n} n/a"),
        Format::Json => {
            crate::println!("{{\"result\":{{\"passed\":{p},\"failed\":{f},\"n/a\":{n}}}}}")
        }
    }
}

/// Announces the check whose verdict is how the machine ends (QEMU's exit
/// status): text `PENDING ID - WHAT | expected: E`, JSON
/// `{"pending":ID,"what":W,"expected":E}`. Not counted in the totals.
pub fn pending(id: &str, what: &str, expected: &str) {
    match format() {
        Format::Text => crate::println!("PENDING {id} - {what} | expected: {expected}"),
        Format::Json => crate::println!(
            "{{\"pending\":{},\"what\":{},\"expected\":{}}}",
            Json(id),
            Json(what),
            Json(expected)
        ),
    }
}

/// Which checks run, from the kernel command line: `rvpmu.only=` (areas:
/// a check runs when its name is one of them or starts with one and a
/// dot) and `rvpmu.skip=` (names: a bare name is skipped on every hart,
/// a `hN.` name on hart N only). A skipped check is reported failed, "not
/// run"; a check outside `only` is neither run nor reported.
#[derive(Clone, Copy)]
pub struct Selection<'a> {
    pub only: &'a str,
    pub skip: &'a str,
}

impl Selection<'_> {
    fn listed(list: &str) -> impl Iterator<Item = &str> {
        list.split(',').filter(|s| !s.is_empty())
    }

    /// Whether check `id` is skipped on the hart whose prefix is `prefix`.
    pub fn skipped(&self, prefix: &str, id: &str) -> bool {
        Self::listed(self.skip).any(|s| s == id || s.strip_prefix(prefix) == Some(id))
    }

    /// Whether check `id` is in the selected areas.
    pub fn selected(&self, id: &str) -> bool {
        let mut areas = Self::listed(self.only).peekable();
        areas.peek().is_none()
            || areas.any(|a| {
                let a = a.trim_end_matches('.');
                id == a || id.strip_prefix(a).is_some_and(|r| r.starts_with('.'))
            })
    }
}

/// One hart's suite: its prefix and the selection.
pub struct Suite<'a> {
    pub prefix: &'a str,
    pub hart: usize,
    pub sel: Selection<'a>,
}

impl<'a> Suite<'a> {
    pub fn new(prefix: &'a str, hart: usize, sel: Selection<'a>) -> Self {
        Self { prefix, hart, sel }
    }

    /// Runs one check and prints its line. `what` names what is checked and
    /// the spec sentence or table row it comes from.
    pub fn check(&mut self, id: &str, what: &str, f: impl FnOnce() -> Verdict) {
        if !self.sel.selected(id) {
            return;
        }
        let mut full = Field::new();
        let _ = write!(full, "{}{id}", self.prefix);
        start(full.as_str());
        let v = if self.sel.skipped(self.prefix, id) {
            not_run()
        } else {
            f()
        };
        emit(self.prefix, id, self.hart, what, &v);
    }
}

/// The verdict of a skipped check.
pub fn not_run() -> Verdict {
    Verdict::new(
        false,
        text!("the check completes"),
        text!("not run: skipped (rvpmu.skip), it hung or crashed the firmware in an earlier run"),
    )
}
