//! The sampling timer (SBI TIME set_timer in S-mode, the CLINT's mtimecmp
//! in M-mode) every `interval` µs, re-armed
//! from the previous deadline (not from "now"), so samples stay on a grid
//! of the interval and a run of T µs takes T / interval samples, +-1.

use super::cores::MAX_CORES;
use super::platform::{Platform, This};
use crate::counters::{Clock, TimeCsr};
use core::sync::atomic::{AtomicU64, Ordering};

/// Timebase of `time` in Hz (0: unknown).
pub static TIMEBASE_HZ: AtomicU64 = AtomicU64::new(0);
/// Per core: ticks between samples (0: no timer).
static INTERVAL: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
/// Per core: the deadline the timer is armed for.
static DEADLINE: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

/// Arm core `core`'s timer every `interval_us` µs and enable the timer
/// interrupt. Returns the interval in ticks, or `None` when the
/// timebase is unknown.
pub fn start(core: usize, interval_us: u64) -> Option<u64> {
    let hz = TIMEBASE_HZ.load(Ordering::Relaxed);
    if hz == 0 || core >= MAX_CORES {
        return None;
    }
    let ticks = (hz.checked_mul(interval_us)? / 1_000_000).max(1);
    let first = TimeCsr.now() + ticks;
    INTERVAL[core].store(ticks, Ordering::Relaxed);
    DEADLINE[core].store(first, Ordering::Relaxed);
    This::set_timer(first);
    This::enable_timer_interrupt();
    Some(ticks)
}

/// A timer interrupt on core `core`: re-arm for the next deadline after
/// now. `false` when this core has no sampling timer (not ours).
pub fn rearm(core: usize) -> bool {
    let interval = INTERVAL.get(core).map_or(0, |i| i.load(Ordering::Relaxed));
    if interval == 0 {
        return false;
    }
    let now = TimeCsr.now();
    let mut next = DEADLINE[core].load(Ordering::Relaxed) + interval;
    if next <= now {
        // Late (interrupts were off): stay on the grid, skip what passed.
        next += (now - next) / interval * interval + interval;
    }
    DEADLINE[core].store(next, Ordering::Relaxed);
    This::set_timer(next);
    true
}
