//! The count of checks a test kernel has made and of those that failed,
//! shared by its harts (plain atomics: these are test programs), from
//! which it reports its verdict.

use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// Checks made and checks failed.
pub struct Tally {
    checks: AtomicUsize,
    failed: AtomicUsize,
}

impl Tally {
    /// No checks yet.
    pub const fn new() -> Self {
        Tally {
            checks: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
        }
    }

    /// Counts one check that passed when `ok`; returns `ok`, so that the
    /// caller reports a failure in its own words.
    pub fn record(&self, ok: bool) -> bool {
        self.checks.fetch_add(1, SeqCst);
        if !ok {
            self.failed.fetch_add(1, SeqCst);
        }
        ok
    }

    /// (checks made, checks failed).
    pub fn counts(&self) -> (usize, usize) {
        (self.checks.load(SeqCst), self.failed.load(SeqCst))
    }
}

impl Default for Tally {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_checks_and_failures() {
        let t = Tally::new();
        assert_eq!(t.counts(), (0, 0));
        assert!(t.record(true));
        assert!(!t.record(false));
        assert!(t.record(true));
        assert_eq!(t.counts(), (3, 1));
    }
}
