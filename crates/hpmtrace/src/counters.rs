//! Counter slots and where readings come from: the trace clock
//! ([`Clock`]) and, on riscv64, the counter CSRs
//! (`read_user_counters`).
//!
//! Counter slots follow the SiFive library: `HW_CPU_CYCLES` is counter 0,
//! `HW_TIMESTAMP` counter 1 (the trace timestamp, supplied by the
//! collector from its [`Clock`], never by a source), `HW_INSTRUCTIONS`
//! counter 2, every other event the next free slot from 3 in list order
//! ([`assign_slots`]).

use crate::format::{
    hw, CountType, CounterDesc, CounterInfo, Event, Header, MAX_COUNTERS, TIMESTAMP_COUNTER_INDEX,
};

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
    if events.len() > MAX_COUNTERS {
        return Err(SlotError::TooManyEvents);
    }
    let mut slots = [0u8; MAX_COUNTERS];
    let mut used = 0u32;
    let mut next = 3u8;
    for (slot, e) in slots.iter_mut().zip(events) {
        let s = match *e {
            Event::General {
                code: code @ (hw::CPU_CYCLES | hw::TIMESTAMP | hw::INSTRUCTIONS),
            } => {
                let s = match code {
                    hw::CPU_CYCLES => 0,
                    hw::TIMESTAMP => TIMESTAMP_COUNTER_INDEX,
                    _ => 2,
                };
                if used & 1 << s != 0 {
                    return Err(SlotError::DuplicateFixed(code));
                }
                s
            }
            _ if next as usize >= MAX_COUNTERS => return Err(SlotError::TooManyEvents),
            _ => {
                next += 1;
                next - 1
            }
        };
        used |= 1 << s;
        *slot = s;
    }
    Ok(slots)
}

/// Build a header from events with their slots and counter infos.
pub fn build_header(count_type: CountType, events: &[(u8, Event, CounterInfo)]) -> Header {
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

/// Read the unprivileged counter named by `index[k]` into `out[k]`, for
/// every `k` both have: index 0 reads 0, index `c + 1` (at most 32) the
/// counter CSR 0xC00 + `c` (`cycle`, `time`, `instret`,
/// `hpmcounter3..31`): the numbering of the perf mmap page's `index`
/// field. An index above 32 reads 0.
///
/// One block of assembly reads them all, with the same instructions for
/// every counter (a jump into a table of equal entries), so two counters
/// read by one call are a fixed number of instructions apart, whatever
/// the compiler makes of the code around the call. Under QEMU's icount,
/// where the cycle and instruction counters both count instructions,
/// they then move by the same amount from one call to the next (the
/// icount checks of `cargo xtask test` rely on it).
///
/// Reading a counter traps if the mode below does not enable it
/// (`scounteren`, `mcounteren`): callers pass only counters the platform
/// or the kernel made readable.
#[cfg(target_arch = "riscv64")]
#[inline(always)]
pub fn read_user_counters(index: &[u32], out: &mut [u64]) {
    let n = index.len().min(out.len());
    if n == 0 {
        return;
    }
    // SAFETY: reads `n` words of `index` and writes `n` of `out`, both
    // inside the slices; reading a counter CSR has no side effects (the
    // caller passes only readable counters); the jump lands on an entry
    // of the table, as the index is cut to 0..=32 first. Entries are 8
    // bytes (no compressed instructions in the table).
    unsafe {
        core::arch::asm!(
            "lla {tab}, 5f",
            "2:",
            "lwu {t}, 0({idx})",
            "sltiu {ok}, {t}, 33",
            "neg {ok}, {ok}",
            "and {t}, {t}, {ok}",
            "slli {t}, {t}, 3",
            "add {t}, {t}, {tab}",
            "jr {t}",
            "3:",
            "sd {v}, 0({out})",
            "addi {idx}, {idx}, 4",
            "addi {out}, {out}, 8",
            "addi {n}, {n}, -1",
            "bnez {n}, 2b",
            "j 6f",
            ".option push",
            ".option norvc",
            "5:",
            "li {v}, 0",
            "j 3b",
            ".irp c,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31",
            "csrr {v}, 0xc00 + \\c",
            "j 3b",
            ".endr",
            ".option pop",
            "6:",
            idx = inout(reg) index.as_ptr() => _,
            out = inout(reg) out.as_mut_ptr() => _,
            n = inout(reg) n => _,
            tab = out(reg) _,
            t = out(reg) _,
            ok = out(reg) _,
            v = out(reg) _,
            options(nostack),
        );
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
