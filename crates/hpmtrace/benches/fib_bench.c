/* Overhead benchmark program: times fib(n) with clock_gettime around the
 * call only, so tracer start-up and write-out are not counted.
 * Built three ways by examples/overhead.rs: plain, with hpmtrace
 * (-DUSE_HPMTRACE, ncnt counters), and for uftrace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef USE_HPMTRACE
#include "sifive_linux_perf.h"
#endif

unsigned long fib(unsigned long f)
{
  if (f < 2) {
    return f;
  }
  return fib(f - 2) + fib(f - 1);
}

static double __attribute__((no_instrument_function)) now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int __attribute__((no_instrument_function)) main(int argc, char **argv)
{
  unsigned long n = argc > 1 ? strtoul(argv[1], 0, 0) : 24;
#ifdef USE_HPMTRACE
  /* argv[2] picks the counters: "1" timestamp only; "2" / "6" timestamp +
   * 1 / 5 software events read with the read() system call; "2u" / "6u"
   * timestamp + 1 / 5 software events read from their perf pages without
   * a system call (context-switches and cgroup-switches, the software
   * events whose page value is exact while the thread runs; 6u lists
   * them more than once, each slot is its own perf event). */
  const char *set = argc > 2 ? argv[2] : "2";
  perfEvent syscall_read[6] = {
    { .type = perfEventHWGeneral, .code = HW_TIMESTAMP },
    { .type = perfEventLinuxSW, .code = SW_TASK_CLOCK },
    { .type = perfEventLinuxSW, .code = SW_PAGE_FAULTS },
    { .type = perfEventLinuxSW, .code = SW_CONTEXT_SWITCHES },
    { .type = perfEventLinuxSW, .code = SW_CPU_MIGRATIONS },
    { .type = perfEventLinuxSW, .code = SW_CPU_CLOCK },
  };
  perfEvent page_read[6] = {
    { .type = perfEventHWGeneral, .code = HW_TIMESTAMP },
    { .type = perfEventLinuxSW, .code = SW_CONTEXT_SWITCHES },
    { .type = perfEventLinuxSW, .code = SW_CGROUP_SWITCHES },
    { .type = perfEventLinuxSW, .code = SW_CONTEXT_SWITCHES },
    { .type = perfEventLinuxSW, .code = SW_CGROUP_SWITCHES },
    { .type = perfEventLinuxSW, .code = SW_CONTEXT_SWITCHES },
  };
  int ncnt = atoi(set);
  perfEvent *ev = strchr(set, 'u') ? page_read : syscall_read;
  if (ncnt < 1 || ncnt > 6)
    return 2;
  /* A trace buffer that holds the whole trace (at most 118 bytes per
   * enter+exit pair with six counters) and not much more: the library
   * prefaults it, and a far larger one only adds page work around the
   * timed region. fib(n) makes 2 fib(n+1) - 1 calls. */
  unsigned long a = 0, b = 1;
  for (unsigned long i = 0; i < n + 1; i++) {
    unsigned long c = a + b;
    a = b;
    b = c;
  }
  unsigned long calls = 2 * a - 1;
  unsigned long buffer = calls * 160 + (1u << 20);
  if (buffer > 0xffffffffu)
    buffer = 0xffffffffu;
  if (perfInit(1, 0) || perfFuncEntryExitInit(ev, ncnt, 6, perfCount_Delta, buffer) || perfTraceOn())
    return 1;
#endif
  double t0 = now_ns();
  unsigned long r = fib(n);
  double t1 = now_ns();
#ifdef USE_HPMTRACE
  perfTraceOff();
  if (argc > 3)
    perfWriteTrace(argv[3]);
#endif
  printf("%lu %.0f\n", r, t1 - t0);
  return 0;
}
