//! The bare-metal collector behind the bare-metal C API
//! (`crate::c_api::bare`, `include/sifive_bare_perf.h`) for riscv64
//! programs with no allocator and no libc: feature `bare-capi` (S-mode on
//! an SBI implementation) or `bare-machine` (M-mode) on
//! riscv64gc-unknown-none-elf, where the crate's staticlib is the
//! bare-metal `libhpmtrace.a`. docs/hpmtrace-bare.md describes what it
//! does and why.
//!
//! Each core records into its own buffer and staging area, both from a
//! static pool (`pool`, `cores`), with one counter per event (`pmu`) and,
//! for `perfTimerISRInit`, a sampling timer (`timer`); `platform` is what
//! differs between S-mode (SBI) and M-mode (counter CSRs, the CLINT), and
//! `console` prints warnings and trace dumps.
//!
//! The contract with the program (also in the header): every hart that
//! calls into the library holds its core index (< `num_cores`, distinct
//! per hart; the hartid on QEMU virt) in `tp`, and runs with `satp` = Bare
//! (buffer addresses are physical for SBI). Per-core state is only touched
//! by its own hart; the `cores` module keeps a timer interrupt from
//! re-entering it.
pub(crate) mod console;
pub(crate) mod cores;
pub(crate) mod platform;
pub(crate) mod pmu;
pub(crate) mod pool;
pub(crate) mod timer;

/// A bug in the library: say where on the console and end the system
/// (SRST "system failure" in S-mode; M-mode waits forever), so a run never
/// goes on with a broken trace.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    console::warn(format_args!("panic: {info}"));
    <platform::This as platform::Platform>::fail()
}
