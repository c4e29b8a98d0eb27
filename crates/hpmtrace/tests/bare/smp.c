/* Four harts trace fib at once, each with its own SRC (core index = tp =
 * hartid) and buffer: hart h computes fib(FIB_BASE + h). */
#include "rt.h"
#include "sifive_bare_perf.h"

#define HARTS 4
#define FIB_BASE 10

perfEvent perfCntrList[] = {
    { .type = perfEventHWGeneral, .code = HW_CPU_CYCLES },
    { .type = perfEventHWGeneral, .code = HW_TIMESTAMP },
    { .type = perfEventHWGeneral, .code = HW_INSTRUCTIONS },
};

static volatile int ready, go, done;
static unsigned long result[HARTS];

unsigned long fib(unsigned long f)
{
    if (f == 0)
        return 0;
    if (f == 1)
        return 1;
    return fib(f - 2) + fib(f - 1);
}

__attribute__((no_instrument_function)) static void work(unsigned long hart)
{
    perfEvent list[3];
    for (int i = 0; i < 3; i++)
        list[i] = perfCntrList[i];
    if (perfFuncEntryExitInit(list, 3, 6, perfCount_Delta, 1024 * 1024))
        printf("smp: hart %lu: init failed\n", hart);
    __atomic_fetch_add(&ready, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&go, __ATOMIC_SEQ_CST))
        ;
    result[hart] = fib(FIB_BASE + hart);
    __atomic_fetch_add(&done, 1, __ATOMIC_SEQ_CST);
}

__attribute__((no_instrument_function)) int main(void)
{
    if (perfInit(HARTS, 0))
        return 1;
    for (unsigned long h = 1; h < HARTS; h++)
        if (rt_start_hart(h, work)) {
            printf("smp: cannot start hart %lu\n", h);
            return 1;
        }
    __atomic_fetch_add(&ready, 0, __ATOMIC_SEQ_CST);
    perfEvent list[3];
    for (int i = 0; i < 3; i++)
        list[i] = perfCntrList[i];
    if (perfFuncEntryExitInit(list, 3, 6, perfCount_Delta, 1024 * 1024))
        return 1;
    while (__atomic_load_n(&ready, __ATOMIC_SEQ_CST) != HARTS - 1)
        ;
    perfTraceOn();
    __atomic_store_n(&go, 1, __ATOMIC_SEQ_CST);
    result[0] = fib(FIB_BASE);
    while (__atomic_load_n(&done, __ATOMIC_SEQ_CST) != HARTS - 1)
        ;
    perfTraceOff();
    for (unsigned long h = 0; h < HARTS; h++)
        printf("smp: hart %lu fib(%lu) = %lu\n", h, FIB_BASE + h, result[h]);
    perfWriteTrace("smp.rtd");
    return 0;
}
