/* hpmtrace: C API of the SiFive Trace Performance Library, bare-metal
 * declarations. Same calls as sifive_linux_perf.h except perfWriteTrace
 * (the debugger reads the trace buffer on bare metal).
 *
 * NOTE: only the declarations are provided. The bare-metal build of
 * hpmtrace is the Rust `no_std` core (encoder, ITC stimulus sink, CSR
 * counter source, usable from Rust firmware); C entry points for bare
 * metal are not implemented yet. */
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

void __cyg_profile_func_enter(void *this_fn, void *call_site) __attribute__((no_instrument_function));
void __cyg_profile_func_exit(void *this_fn, void *call_site) __attribute__((no_instrument_function));

#ifdef __cplusplus
}
#endif

#endif
