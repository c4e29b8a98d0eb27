//! Where counter readings come from: the [`CounterSource`] trait, the trace
//! clock ([`Clock`]) and the bare-metal CSR source.
//!
//! Counter slots follow the SiFive library: `HW_CPU_CYCLES` is counter 0,
//! `HW_TIMESTAMP` counter 1 (the trace timestamp, supplied by the
//! collector from its [`Clock`], never by a source), `HW_INSTRUCTIONS`
//! counter 2, every other event the next free slot from 3 in list order
//! ([`assign_slots`]).

use crate::format::{
    hw, CounterDesc, CounterInfo, Event, Header, MAX_COUNTERS, TIMESTAMP_COUNTER_INDEX,
};

/// Reads the counters of a header.
pub trait CounterSource {
    /// Fill `out[i]` with the reading of the i-th counter of the header
    /// (record order). The timestamp slot, if any, is left untouched: the
    /// collector fills it from the trace clock.
    fn read(&mut self, out: &mut [u64]);
}

/// The trace timestamp.
pub trait Clock {
    /// Current time in clock ticks.
    fn now(&self) -> u64;
}

/// Why a counter list was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotError {
    /// More events than the 32 counter slots (3 fixed + 29 programmable).
    TooManyEvents,
    /// The same fixed-function event (cycles, timestamp, instructions)
    /// listed twice.
    DuplicateFixed(u16),
}

/// Counter slot of each event: cycles -> 0, timestamp -> 1, instructions
/// -> 2, others -> 3, 4, ... in list order. Returns one slot per event.
pub fn assign_slots(events: &[Event]) -> Result<[u8; MAX_COUNTERS], SlotError> {
    let mut slots = [0u8; MAX_COUNTERS];
    if events.len() > MAX_COUNTERS {
        return Err(SlotError::TooManyEvents);
    }
    let mut used = 0u32;
    let mut next = 3u8;
    for (i, e) in events.iter().enumerate() {
        let fixed = match e {
            Event::General {
                code: hw::CPU_CYCLES,
            } => Some(0),
            Event::General {
                code: hw::TIMESTAMP,
            } => Some(TIMESTAMP_COUNTER_INDEX),
            Event::General {
                code: hw::INSTRUCTIONS,
            } => Some(2),
            _ => None,
        };
        let s = match fixed {
            Some(s) => {
                if used & (1 << s) != 0 {
                    if let Event::General { code } = e {
                        return Err(SlotError::DuplicateFixed(*code));
                    }
                }
                s
            }
            None => {
                if next as usize >= MAX_COUNTERS {
                    return Err(SlotError::TooManyEvents);
                }
                next += 1;
                next - 1
            }
        };
        used |= 1 << s;
        slots[i] = s;
    }
    Ok(slots)
}

/// Build a header from events with their slots and counter infos.
pub fn build_header(
    count_type: crate::format::CountType,
    events: &[(u8, Event, CounterInfo)],
) -> Header {
    let mut h = Header::new(count_type);
    for &(slot, event, info) in events {
        if (slot as usize) < MAX_COUNTERS {
            h.counters[slot as usize] = Some(CounterDesc { event, info });
        }
    }
    h
}

/// Position of the timestamp counter in record order, if the header has
/// one.
pub fn timestamp_position(h: &Header) -> Option<usize> {
    h.iter()
        .position(|(i, c)| i == TIMESTAMP_COUNTER_INDEX && c.event.is_timestamp())
}

/// Bare-metal source: reads, for each counter of a header, the
/// unprivileged counter CSR its counter info names (`cycle`, `instret`,
/// `hpmcounter3..31`, 0xC00..=0xC1F) on the current hart. Programming the
/// event selectors (M-mode) or asking SBI to do it is the caller's job;
/// this only reads.
#[cfg(target_arch = "riscv64")]
#[derive(Clone, Copy, Debug)]
pub struct CsrCounters {
    /// Counter CSR index (0..=31) per record position; [`NOT_READ`] for
    /// the timestamp and counters without a counter CSR.
    csrs: [u8; MAX_COUNTERS],
    n: usize,
}

/// A record position [`CsrCounters`] leaves alone.
#[cfg(target_arch = "riscv64")]
const NOT_READ: u8 = 0xff;

#[cfg(target_arch = "riscv64")]
impl CsrCounters {
    /// Read the counters of `h` in record order, each from the CSR its
    /// counter info names; the timestamp (and anything not in
    /// 0xC00..=0xC1F) is skipped.
    pub fn new(h: &Header) -> Self {
        let mut s = CsrCounters {
            csrs: [NOT_READ; MAX_COUNTERS],
            n: 0,
        };
        for (_, c) in h.iter() {
            s.csrs[s.n] = match c.info.csr {
                csr @ 0xc00..=0xc1f if !c.event.is_timestamp() => (csr - 0xc00) as u8,
                _ => NOT_READ,
            };
            s.n += 1;
        }
        s
    }

    /// Number of counters per record (the header's).
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the header has no counter.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// Read the unprivileged counter CSR 0xC00 + `slot` (`cycle`, `time`,
/// `instret`, `hpmcounter3..31`); 0 for slots past 31.
#[cfg(target_arch = "riscv64")]
#[inline(always)]
pub fn read_user_counter(slot: u8) -> u64 {
    macro_rules! csr_read {
        ($($n:literal),*) => {
            match slot {
                $($n => {
                    let v: u64;
                    // SAFETY: reading a counter CSR has no side effects; it
                    // traps only if the counter is not enabled for this mode.
                    unsafe { core::arch::asm!("csrr {0}, {1}", out(reg) v, const 0xc00 + $n) };
                    v
                })*
                _ => 0,
            }
        };
    }
    csr_read!(
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
        25, 26, 27, 28, 29, 30, 31
    )
}

#[cfg(target_arch = "riscv64")]
impl CounterSource for CsrCounters {
    #[inline]
    fn read(&mut self, out: &mut [u64]) {
        for (i, o) in out.iter_mut().enumerate().take(self.n) {
            let c = self.csrs[i];
            if c != NOT_READ {
                *o = read_user_counter(c);
            }
        }
    }
}

/// The `time` CSR as trace clock (bare metal, riscv64).
#[cfg(target_arch = "riscv64")]
pub struct TimeCsr;

#[cfg(target_arch = "riscv64")]
impl Clock for TimeCsr {
    #[inline]
    fn now(&self) -> u64 {
        let v: u64;
        // SAFETY: reading `time` has no side effects.
        unsafe { core::arch::asm!("csrr {0}, time", out(reg) v) };
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_slots_and_list_order() {
        let ev = [
            Event::Raw { event_data: 5 },
            Event::General {
                code: hw::INSTRUCTIONS,
            },
            Event::General {
                code: hw::CPU_CYCLES,
            },
            Event::General {
                code: hw::BRANCH_MISSES,
            },
            Event::General {
                code: hw::TIMESTAMP,
            },
        ];
        let s = assign_slots(&ev).unwrap();
        assert_eq!(&s[..5], &[3, 2, 0, 4, 1]);
        assert_eq!(
            assign_slots(&[Event::General { code: 1 }, Event::General { code: 1 }]),
            Err(SlotError::DuplicateFixed(1))
        );
        let many = [Event::Raw { event_data: 0 }; 30];
        assert_eq!(assign_slots(&many), Err(SlotError::TooManyEvents));
    }
}
