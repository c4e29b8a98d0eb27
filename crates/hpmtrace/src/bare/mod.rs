//! The bare-metal C API (`include/sifive_bare_perf.h`), for riscv64
//! programs running in S-mode on an SBI implementation, with no allocator
//! and no libc: feature `bare-capi` on riscv64gc-unknown-none-elf, where
//! the crate's staticlib is the bare-metal `libhpmtrace.a`.
//!
//! What the seed's bare-metal library does with a trace encoder, this does
//! in software on the `no_std` core of `hpmtrace`:
//! - **Sink.** Each core records into its own buffer of `SBABufferSize`
//!   bytes (0: an equal share of the pool), carved from a static pool of
//!   `PERF_MEM_POOL_SIZE` bytes as the seed's library does (256 KiB;
//!   `HPMTRACE_POOL_BYTES` at build time sets another size, as the
//!   seed's define does), holding the
//!   Nexus messages a trace encoder would write to its SBA sink (the
//!   `.rtd` bytes), stop-on-full. Each core writes its own SRC.
//! - **Counters.** `perfXxxInit` asks the SBI PMU (`rvpmu::supervisor`)
//!   for a counter per event (config_matching, all modes counted), learns its CSR from
//!   counter_get_info and reads that CSR per record. An event the platform
//!   cannot count is left out of the header with a console warning naming
//!   it: every trace keeps to the seed's event types.
//! - **Timer.** `perfTimerISRInit` arms the SBI TIME timer every
//!   `interval` µs (timebase from `perfSetDeviceTree` or
//!   `perfSetTimebaseFrequency`); the program's trap handler calls
//!   `perfTimerISR(sepc)` on a supervisor timer interrupt.
//! - **Output.** A debugger can read the buffers (`perfTraceBuffer`);
//!   without one, `perfWriteTrace` prints them on the SBI console as
//!   framed hex (`hpmtrace::dump`), which `hpmtrace import` turns back
//!   into a `.rtd` file.
//!
//! The contract with the program (also in the header): every hart that
//! calls into the library holds its core index (< `num_cores`, distinct
//! per hart; the hartid on QEMU virt) in `tp`, the usual bare-metal
//! runtime convention, and runs with `satp` = Bare (buffer addresses are
//! physical for SBI). Per-core state is only touched by its own hart;
//! the `cores` module keeps a timer interrupt from re-entering it.
mod capi;
mod console;
mod cores;
mod platform;
mod pmu;
mod pool;
mod timer;

/// A bug in the library: say where on the console and end the system
/// (SRST "system failure" in S-mode; M-mode waits forever), so a run never
/// goes on with a broken trace.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    console::warn(format_args!("panic: {info}"));
    <platform::This as platform::Platform>::fail()
}
