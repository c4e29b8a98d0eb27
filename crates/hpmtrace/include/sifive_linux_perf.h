/* hpmtrace: drop-in C API of the SiFive Trace Performance Library (Linux).
 *
 * Link with libhpmtrace.a (and -lpthread -ldl -lm on older glibc):
 *   cc -finstrument-functions -c fib.c
 *   cc -o fib fib.o -L<dir>/lib -lhpmtrace -lpthread -ldl
 *
 * Differences from a hardware trace encoder, by design:
 *  - the trace is encoded in software into a per-thread buffer of
 *    SBABufferSize bytes (0 selects 1 MiB), stopping when full;
 *  - num_cores in perfInit() is the most threads traced at once: each
 *    thread is its own Nexus source (SRC field of ceil(log2(num_cores))
 *    bits); num_funnels is accepted and ignored;
 *  - perfTimerISRInit() samples the calling thread with a SIGPROF timer;
 *  - the first init call starts a thread in the process, "hpmtrace-enc"
 *    (all signals blocked), that encodes full staging chunks while the
 *    program runs; perfTraceOff() and perfWriteTrace() wait for it.
 *    HPMTRACE_ENCODER_THREAD=0 starts none: samples are encoded at
 *    perfTraceOff() and perfWriteTrace(), and by the recording thread
 *    when its staging buffer (HPMTRACE_STAGE_BYTES) is full;
 *  - the first init call also registers pthread_atfork() handlers that
 *    keep fork() from happening while a library lock is held (a child
 *    would inherit it locked); a child has no encoder thread;
 *  - an event the machine cannot count is left out of the trace (a
 *    warning on stderr names it, its ctrInfo is 0, init succeeds);
 *    HPMTRACE_SW_FALLBACK=1 counts a Linux software event in its place
 *    instead (header type 16, which only hpmtrace's decoder reads).
 */
#ifndef SIFIVE_LINUX_PERF_H_
#define SIFIVE_LINUX_PERF_H_

#include "sifive_perf_types.h"

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

void __cyg_profile_func_enter(void *this_fn, void *call_site) __attribute__((no_instrument_function));
void __cyg_profile_func_exit(void *this_fn, void *call_site) __attribute__((no_instrument_function));

#ifdef __cplusplus
}
#endif

#endif
