/* Manual records: the trace timestamp as the only counter, raw counts,
 * two perfWriteCntrs() calls. The buffer's header bytes are checked
 * against bytes derived by hand (xtask/src/suite/trace/baremetal.rs). */
#include "rt.h"
#include "sifive_bare_perf.h"

perfEvent perfCntrList[] = {
    { .type = perfEventHWGeneral, .code = HW_TIMESTAMP },
};

int main(void)
{
    if (perfInit(1, 0) || perfManualInit(perfCntrList, 1, 6, perfCount_Raw, 4096))
        return 1;
    perfTraceOn();
    perfWriteCntrs();
    perfWriteCntrs();
    perfTraceOff();
    printf("manual: ctrIdx %u ctrInfo %lx\n", perfCntrList[0].ctrIdx, perfCntrList[0].ctrInfo);
    perfWriteTrace("manual.rtd");
    return 0;
}
