//! What differs between the two privilege modes the library runs in: in
//! S-mode (default) every counter, the timer and the console are asked of
//! the SBI firmware; in M-mode (feature `bare-machine`) the library
//! programs the counter CSRs and the CLINT's `mtimecmp` itself and writes
//! through a console function the program provides. Everything above this
//! seam (header, staging, encoding, dumps) is the same.

use crate::format::{CounterInfo, Event};

/// Why an event gets no counter.
#[derive(Clone, Copy, Debug)]
pub enum Refusal {
    /// The SBI call answered this error.
    #[cfg_attr(feature = "bare-machine", allow(dead_code))] // S-mode only
    Sbi(isize),
    /// Not countable in this mode (the reason).
    Unsupported(&'static str),
}

/// One privilege mode's access to counters, timer and console.
pub trait Platform {
    /// Counters that exist (bit i: counter i).
    fn counters() -> u64;
    /// Configure one of the `free` counters for `e`, cleared and running:
    /// its index and counter info (a CSR in 0xC00..=0xC1F).
    fn configure(e: Event, free: u64) -> Result<(usize, CounterInfo), Refusal>;
    /// Stop the counters in `mask` (a previous init's).
    fn release(mask: u64);
    /// Raise this hart's timer interrupt at `deadline` (`time` ticks).
    fn set_timer(deadline: u64);
    /// Enable this hart's timer interrupt.
    fn enable_timer_interrupt();
    /// Write `bytes` to the console.
    fn console_write(bytes: &[u8]);
    /// End after a library bug, as visibly as the mode allows.
    fn fail() -> !;
}

#[cfg(feature = "bare-machine")]
pub use machine::{Machine as This, CLINT};
#[cfg(not(feature = "bare-machine"))]
pub use sbi::Sbi as This;

#[cfg(not(feature = "bare-machine"))]
mod sbi {
    use super::{Platform, Refusal};
    use crate::format::{CounterInfo, Event, EventType};
    use rvpmu_sbi::client::{sbi, CounterCfgFlags, CounterStopFlags};
    use rvpmu_sbi::CounterInfo as SbiInfo;
    use sbi_spec::legacy::LEGACY_CONSOLE_PUTCHAR;

    /// S-mode on an SBI firmware (rvpmu_sbi::client).
    pub struct Sbi;

    impl Platform for Sbi {
        fn counters() -> u64 {
            let mut s = sbi();
            // An index with no counter_info (often `time`) in the mask
            // makes config_matching refuse the whole call.
            (0..s.pmu_num_counters().min(64))
                .filter(|&i| s.pmu_counter_get_info(i).error == 0)
                .fold(0u64, |m, i| m | 1 << i)
        }

        fn configure(e: Event, free: u64) -> Result<(usize, CounterInfo), Refusal> {
            // SBI event_idx (type << 16 | code); raw events carry their
            // selector in event_data.
            let (idx, data) = match e {
                Event::Raw { event_data } => ((EventType::HwRaw as usize) << 16, event_data),
                Event::LinuxSoftware { .. } => {
                    return Err(Refusal::Unsupported("a Linux software event"))
                }
                _ => {
                    let code = e.code().ok_or(Refusal::Unsupported("no event code"))?;
                    ((e.event_type() as usize) << 16 | code as usize, 0)
                }
            };
            // No mode filter: `cycle` and `instret` cannot be filtered on
            // every platform (QEMU refuses M-inhibit on them), and hooks
            // make no SBI call.
            let flags = CounterCfgFlags::CLEAR_VALUE | CounterCfgFlags::AUTO_START;
            let mut s = sbi();
            let r = s.pmu_counter_config_matching(0, free as usize, flags, idx, data);
            if r.error != 0 {
                return Err(Refusal::Sbi(r.error as isize));
            }
            let ctr = r.value;
            match SbiInfo::decode(s.pmu_counter_get_info(ctr).value as u64) {
                SbiInfo::Hardware { csr, width } if (0xc00..=0xc1f).contains(&csr) => {
                    Ok((ctr, CounterInfo { csr, width }))
                }
                _ => {
                    let _ = s.pmu_counter_stop(ctr, 1, CounterStopFlags::RESET);
                    Err(Refusal::Unsupported("its SBI counter has no counter CSR"))
                }
            }
        }

        fn release(mask: u64) {
            if mask != 0 {
                let _ = sbi().pmu_counter_stop(0, mask as usize, CounterStopFlags::RESET);
            }
        }

        fn set_timer(deadline: u64) {
            let _ = sbi().set_timer(deadline);
        }

        fn enable_timer_interrupt() {
            // SAFETY: sets sie.STIE and sstatus.SIE; the program's trap
            // vector is installed (perfTimerISRInit's precondition).
            unsafe {
                core::arch::asm!("csrs sie, {0}", "csrs sstatus, {1}", in(reg) 1usize << 5, in(reg) 1usize << 1);
            }
        }

        fn console_write(bytes: &[u8]) {
            // The buffer's address is physical: the contract's satp = Bare.
            let mut rest = bytes;
            while !rest.is_empty() {
                let r = sbi().console_write(rest.len(), rest.as_ptr() as usize, 0);
                if r.error != 0 || r.value == 0 {
                    for &b in rest {
                        sbi().legacy(LEGACY_CONSOLE_PUTCHAR, [b as usize, 0, 0, 0]);
                    }
                    return;
                }
                rest = &rest[r.value.min(rest.len())..];
            }
        }

        fn fail() -> ! {
            let _ = sbi().system_reset(
                sbi_spec::srst::RESET_TYPE_SHUTDOWN as usize,
                sbi_spec::srst::RESET_REASON_SYSTEM_FAILURE as usize,
            );
            loop {
                // SAFETY: wfi only waits for an interrupt.
                unsafe { core::arch::asm!("wfi") };
            }
        }
    }
}

#[cfg(feature = "bare-machine")]
mod machine {
    use super::{Platform, Refusal};
    use crate::format::{hw, CounterInfo, Event};
    use core::sync::atomic::{AtomicUsize, Ordering};

    /// M-mode on the bare machine.
    pub struct Machine;

    /// The CLINT's base (from the device tree), 0 when unknown.
    pub static CLINT: AtomicUsize = AtomicUsize::new(0);
    /// mtimecmp of hart h: CLINT + 0x4000 + 8 h (SiFive CLINT layout).
    const MTIMECMP: usize = 0x4000;

    extern "C" {
        /// The program's console (M-mode has no SBI to print through).
        fn hpmtrace_console_write(bytes: *const u8, len: usize);
    }

    /// Write CSR `base + idx` for idx 3..=31 (mhpmevent 0x320,
    /// mhpmcounter 0xb00): CSR numbers are immediates, hence one arm per
    /// index.
    macro_rules! write_indexed {
        ($base:literal, $idx:expr, $v:expr) => {
            write_indexed!(@arms $base, $idx, $v;
                3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
        };
        (@arms $base:literal, $idx:expr, $v:expr; $($i:literal)*) => {{
            let v: u64 = $v;
            match $idx {
                $(
                    // SAFETY: an M-mode write of an implemented counter or
                    // event selector (the index comes from the
                    // mcountinhibit probe).
                    $i => unsafe { core::arch::asm!("csrw {csr}, {v}", csr = const $base + $i, v = in(reg) v) },
                )*
                _ => {}
            }
        }};
    }

    impl Platform for Machine {
        fn counters() -> u64 {
            // mcountinhibit is WARL: bits of unimplemented counters read 0.
            let got: u64;
            // SAFETY: M-mode CSR accesses; the old inhibit mask is restored.
            unsafe {
                core::arch::asm!(
                    "csrrw {old}, mcountinhibit, {ones}",
                    "csrr {got}, mcountinhibit",
                    "csrw mcountinhibit, {old}",
                    old = out(reg) _, got = out(reg) got, ones = in(reg) u64::MAX,
                );
            }
            (got | 0b101) & !0b10
        }

        fn configure(e: Event, free: u64) -> Result<(usize, CounterInfo), Refusal> {
            let idx = match e {
                Event::General { code: hw::CPU_CYCLES } => 0,
                Event::General { code: hw::INSTRUCTIONS } => 2,
                Event::Raw { .. } => (3..32)
                    .find(|i| free & 1 << i != 0)
                    .ok_or(Refusal::Unsupported("no free hardware counter"))?,
                _ => {
                    return Err(Refusal::Unsupported(
                        "M-mode counts cycles, instructions and raw events only (SiFive's bare-metal rule)",
                    ))
                }
            };
            if free & 1 << idx == 0 {
                return Err(Refusal::Unsupported("its counter is taken"));
            }
            if let Event::Raw { event_data } = e {
                write_indexed!(0x320, idx, event_data);
                write_indexed!(0xb00, idx, 0);
            }
            // SAFETY: clearing this counter's inhibit bit starts it.
            unsafe { core::arch::asm!("csrc mcountinhibit, {0}", in(reg) 1u64 << idx) };
            Ok((
                idx,
                CounterInfo {
                    csr: 0xc00 + idx as u16,
                    width: 64,
                },
            ))
        }

        fn release(mask: u64) {
            // Programmable counters only: cycle and instret keep running.
            let hpm = mask & !0b111;
            // SAFETY: inhibiting counters this library configured.
            unsafe { core::arch::asm!("csrs mcountinhibit, {0}", in(reg) hpm) };
            for idx in (3..32).filter(|i| hpm & 1 << i != 0) {
                write_indexed!(0x320, idx, 0);
            }
        }

        fn set_timer(deadline: u64) {
            let base = CLINT.load(Ordering::Relaxed);
            if base == 0 {
                return;
            }
            let hart: usize;
            // SAFETY: reads mhartid.
            unsafe { core::arch::asm!("csrr {0}, mhartid", out(reg) hart) };
            let at = (base + MTIMECMP + 8 * hart) as *mut u64;
            // SAFETY: this hart's mtimecmp register of the CLINT the device
            // tree names (perfSetDeviceTree), an aligned MMIO word.
            unsafe { at.write_volatile(deadline) };
        }

        fn enable_timer_interrupt() {
            // SAFETY: sets mie.MTIE and mstatus.MIE; the program's trap
            // vector is installed (perfTimerISRInit's precondition).
            unsafe {
                core::arch::asm!("csrs mie, {0}", "csrs mstatus, {1}", in(reg) 1usize << 7, in(reg) 1usize << 3);
            }
        }

        fn console_write(bytes: &[u8]) {
            // SAFETY: the program provides this function (the header's
            // contract for M-mode builds); it only reads `len` bytes.
            unsafe { hpmtrace_console_write(bytes.as_ptr(), bytes.len()) }
        }

        fn fail() -> ! {
            loop {
                // SAFETY: wfi only waits for an interrupt.
                unsafe { core::arch::asm!("wfi") };
            }
        }
    }
}
