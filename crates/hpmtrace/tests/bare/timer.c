/* Timer-ISR sampling on bare metal: the library's SBI timer interrupts a
 * known loop every INTERVAL_US; the trace must hold run time / interval
 * samples (+-1), each at a PC inside spin(). */
#include "rt.h"
#include "sifive_bare_perf.h"

#define INTERVAL_US 100

perfEvent perfCntrList[] = {
    { .type = perfEventHWGeneral, .code = HW_CPU_CYCLES },
    { .type = perfEventHWGeneral, .code = HW_TIMESTAMP },
    { .type = perfEventHWGeneral, .code = HW_INSTRUCTIONS },
};

volatile unsigned long sink;

__attribute__((noinline)) void spin(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        sink += i;
}

int main(void)
{
    if (perfInit(1, 0) || perfSetDeviceTree(rt_dtb()))
        return 1;
    if (perfTimerISRInit(perfCntrList, 3, 6, perfCount_Delta, 32 * 1024, INTERVAL_US))
        return 1;
    perfTraceOn();
    uint64_t t0 = rt_time();
    spin(4000000);
    uint64_t t1 = rt_time();
    perfTraceOff();
    printf("timer: spin ran %lu ticks, interval %d us\n", (unsigned long)(t1 - t0), INTERVAL_US);
    perfWriteTrace("timer.rtd");
    return 0;
}
