//! The Linux collector's trace clock.

use crate::counters::Clock;

/// The trace clock of the Linux collector, standing in for the trace
/// encoder's timestamp counter: the `time` CSR on RISC-V (what SiFive
/// encoders count), the TSC on x86-64 (invariant TSC; cheaper than
/// `clock_gettime` in a VM), `CLOCK_MONOTONIC` ns elsewhere.
pub struct TraceClock;

impl Clock for TraceClock {
    #[inline(always)]
    fn now(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: rdtsc has no side effects.
            unsafe { core::arch::x86_64::_rdtsc() }
        }
        #[cfg(target_arch = "riscv64")]
        {
            let v: u64;
            // SAFETY: reading `time` has no side effects (Linux lets user
            // space read it).
            unsafe { core::arch::asm!("rdtime {0}", out(reg) v) };
            v
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "riscv64")))]
        {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: valid out pointer.
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        }
    }
}
