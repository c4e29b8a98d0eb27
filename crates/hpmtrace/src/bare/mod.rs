//! The bare-metal collector behind the bare-metal C API
//! (`crate::c_api::bare`, `include/sifive_bare_perf.h`) for riscv64
//! programs with no allocator and no libc: feature `bare-capi` (S-mode on
//! an SBI implementation) or `bare-machine` (M-mode) on
//! riscv64gc-unknown-none-elf, where the crate's staticlib is the
//! bare-metal `libhpmtrace.a`. docs/hpmtrace-bare.md has the decisions.
//!
//! What SiFive's bare-metal library does with a trace encoder, this does
//! in software on the `no_std` core of `hpmtrace`:
//! - **Sink** (`pool`, `cores`). Each core records into its own buffer of
//!   `SBABufferSize` bytes (0: an equal share), with a staging area beside
//!   it, both carved from a static pool of `PERF_MEM_POOL_SIZE` bytes as
//!   SiFive's library does (256 KiB; `HPMTRACE_POOL_BYTES` at build time
//!   sets another size, as SiFive's define does). A record stores its
//!   raw sample in the staging area; the encoder turns staged samples into
//!   the Nexus messages a trace encoder would write (the `.rtd` bytes),
//!   stop-on-full, when the area fills, at perfTraceOff and at
//!   perfWriteTrace. Each core writes its own SRC.
//! - **Counters** (`pmu`, `platform`). One counter per event: from the SBI
//!   PMU in S-mode (config_matching, the CSR from counter_get_info), from
//!   the counter CSRs in M-mode (cycles, instructions, raw events). An
//!   event that gets none is left out of the header with a console line
//!   naming it: every trace keeps to SiFive's event types.
//! - **Timer** (`timer`, `platform`). `perfTimerISRInit` arms the SBI TIME
//!   timer (S-mode) or the CLINT's mtimecmp (M-mode) every `interval` µs
//!   on a grid; the program's trap handler calls `perfTimerISR(epc)`.
//! - **Output** (`crate::c_api::bare`). A debugger can read the buffers in memory;
//!   without one, `perfWriteTrace` prints them on the console as framed
//!   hex (`hpmtrace::dump`), which `hpmtrace import` turns back into a
//!   `.rtd` file.
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
