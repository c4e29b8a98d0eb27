/* hpmtrace: C API of the SiFive Trace Performance Library, bare metal.
 *
 * SiFive's bare-metal calls, implemented by libhpmtrace.a built for
 * riscv64gc-unknown-none-elf (`cargo xtask cabi DIR --bare-metal`), for
 * programs running in S-mode on an SBI implementation (SBI PMU for the
 * counters, SBI TIME for the sampling timer, SBI DBCN for messages); or,
 * built with --machine-mode, for M-mode programs (counter CSRs and the
 * CLINT's mtimecmp programmed directly; cycles, instructions and raw
 * events only; messages through hpmtrace_console_write, which the program
 * defines).
 * No allocator, no libc: trace buffers come from a static pool of
 * PERF_MEM_POOL_SIZE bytes, one per core (SBABufferSize bytes each; 0 =
 * an equal share of the pool), stop-on-full.
 *
 * Contract with the program:
 *  - every hart that calls into the library holds its core index
 *    (0 .. num_cores-1, distinct per hart; on QEMU virt the hartid) in
 *    the `tp` register, set by the runtime at entry;
 *  - satp = Bare (buffer addresses are passed to SBI as physical);
 *  - the library itself is not built with -finstrument-functions (it is
 *    Rust), the program's runtime (entry, trap handler) should not be.
 *
 * Differences from Freedom Metal's library, all additions:
 *  - perfTimerISRInit needs the timebase: call perfSetDeviceTree(dtb) (the
 *    DT the firmware passed in a1; its NOP tokens are removed in place) or
 *    perfSetTimebaseFrequency(hz) first,
 *    and install a trap vector that calls perfTimerISR(sepc) on a
 *    supervisor timer interrupt (scause = 0x8000000000000005; in M-mode
 *    perfTimerISR(mepc) on mcause = 0x8000000000000007);
 *  - perfWriteTrace(name) prints each core's buffer on the console as a
 *    framed hex dump; `hpmtrace import console.log -o trace.rtd` makes the
 *    .rtd file of it (a debugger can read the buffers instead);
 *  - an event the platform cannot count is left out of the trace header
 *    with a console message naming it (its ctrIdx becomes 0xffffffff), so
 *    the trace keeps to event types 0, 1 and 2. */
#ifndef SIFIVE_BARE_PERF_H_
#define SIFIVE_BARE_PERF_H_

#include "sifive_perf_types.h"

#define PERF_MEM_POOL_SIZE (256*1024)

#ifdef __cplusplus
extern "C" {
#endif

int perfInit(int num_cores, int num_funnels);
int perfManualInit(perfEvent *perfCntrList, int numCntrs, int itcChannel, perfCountType_t cntType, uint32_t SBABufferSize);
int perfTimerISRInit(perfEvent *perfCntrList, int numCntrs, int itcChannel, perfCountType_t cntType, uint32_t SBABufferSize, int interval);
int perfFuncEntryExitInit(perfEvent *perfCntrList, int numCntrs, int itcChannel, perfCountType_t cntType, uint32_t SBABufferSize);
int perfWriteCntrs(void);
int perfTraceOn(void);
int perfTraceOff(void);
int perfWriteTrace(char *file);

/* Bare-metal additions (see above). */
int perfTimerISR(void *pc);
/* M-mode builds only: the program's console. */
void hpmtrace_console_write(const char *s, unsigned long n);
int perfSetTimebaseFrequency(uint64_t hz);
int perfSetDeviceTree(void *dtb);

void __cyg_profile_func_enter(void *this_fn, void *call_site) __attribute__((no_instrument_function));
void __cyg_profile_func_exit(void *this_fn, void *call_site) __attribute__((no_instrument_function));

#ifdef __cplusplus
}
#endif

#endif
