/* hpmtrace: trace-encoder register maps the SiFive examples name.
 *
 * The Linux library encodes the trace in software and never touches
 * trace-encoder registers, so these structures stay incomplete: programs
 * may define `tmm` and `fmm` pointer tables as the SiFive examples do,
 * and the library ignores them. */
#ifndef SIFIVE_LINUX_TRACE_H_
#define SIFIVE_LINUX_TRACE_H_

struct TraceRegMemMap;
struct TfTraceRegMemMap;

#endif
