/* The bare-metal library's cost per instrumented call (enter + exit hook
 * pair), in instructions under QEMU icount: an empty function called
 * PAIRS times with tracing on, with tracing off, and an uninstrumented
 * twin, for 1, 2 and 6 recorded counters. SHORT pairs fit the staging
 * area (the hooks alone); LONG pairs make it fill and encode in the run
 * (hooks plus encoding, amortized). */
#include "rt.h"
#include "sifive_bare_perf.h"

#define SHORT 200
#define LONG 20000

/* QEMU virt's cache events (its riscv,pmu event map): dTLB read miss,
 * dTLB write miss, iTLB read miss. */
static perfEvent one[] = {
    { .type = perfEventHWGeneral, .code = HW_INSTRUCTIONS },
};
static perfEvent two[] = {
    { .type = perfEventHWGeneral, .code = HW_CPU_CYCLES },
    { .type = perfEventHWGeneral, .code = HW_INSTRUCTIONS },
};
static perfEvent six[] = {
    { .type = perfEventHWGeneral, .code = HW_CPU_CYCLES },
    { .type = perfEventHWGeneral, .code = HW_TIMESTAMP },
    { .type = perfEventHWGeneral, .code = HW_INSTRUCTIONS },
    { .type = perfEventHWCache, .cache_id = 3, .op_id = 0, .result_id = 1 },
    { .type = perfEventHWCache, .cache_id = 3, .op_id = 1, .result_id = 1 },
    { .type = perfEventHWCache, .cache_id = 4, .op_id = 0, .result_id = 1 },
};

__attribute__((noinline)) void leaf(void) { asm volatile(""); }
__attribute__((noinline, no_instrument_function)) void plain_leaf(void) { asm volatile(""); }

static inline uint64_t instret(void)
{
    uint64_t v;
    asm volatile("csrr %0, instret" : "=r"(v));
    return v;
}

__attribute__((no_instrument_function)) static uint64_t calls(void (*f)(void), int n)
{
    uint64_t t0 = instret();
    for (int i = 0; i < n; i++)
        f();
    return instret() - t0;
}

__attribute__((no_instrument_function)) static int run(perfEvent *list, int n, int pairs)
{
    if (perfFuncEntryExitInit(list, n, 6, perfCount_Delta, 2 * 1024 * 1024))
        return 1;
    uint64_t plain = calls(plain_leaf, pairs);
    uint64_t off = calls(leaf, pairs);
    perfTraceOn();
    uint64_t on = calls(leaf, pairs);
    perfTraceOff();
    int recorded = 0;
    for (int i = 0; i < n; i++)
        recorded += list[i].ctrIdx != 0xffffffffu;
    printf("hookcost: counters=%d pairs=%d plain=%lu off=%lu on=%lu\n", recorded, pairs,
           (unsigned long)plain, (unsigned long)off, (unsigned long)on);
    return 0;
}

__attribute__((no_instrument_function)) int main(void)
{
    if (perfInit(1, 0))
        return 1;
    int pairs[2] = { SHORT, LONG };
    for (int p = 0; p < 2; p++)
        if (run(one, 1, pairs[p]) || run(two, 2, pairs[p]) || run(six, 6, pairs[p]))
            return 1;
    return 0;
}
