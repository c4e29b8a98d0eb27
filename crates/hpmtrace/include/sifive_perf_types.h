/* hpmtrace: types and constants shared by sifive_linux_perf.h and
 * sifive_bare_perf.h (SBI PMU event encoding, SiFive names). */
#ifndef SIFIVE_PERF_TYPES_H_
#define SIFIVE_PERF_TYPES_H_

#include <stdint.h>

/* SBI hardware general event codes (type 0). */
#define HW_NO_EVENT                 0
#define HW_CPU_CYCLES               1
#define HW_INSTRUCTIONS             2
#define HW_CACHE_REFERENCES         3
#define HW_CACHE_MISSES             4
#define HW_BRANCH_INSTRUCTIONS      5
#define HW_BRANCH_MISSES            6
#define HW_BUS_CYCLES               7
#define HW_STALLED_CYCLES_FRONTEND  8
#define HW_STALLED_CYCLES_BACKEND   9
#define HW_REF_CPU_CYCLES           10
#define HW_REF_CPU_CYLES            HW_REF_CPU_CYCLES /* SiFive spelling */
/* The trace timestamp, recorded in counter slot 1. */
#define HW_TIMESTAMP                0x80

/* Linux software events (hpmtrace extension, perfEventLinuxSW). */
#define SW_CPU_CLOCK        0
#define SW_TASK_CLOCK       1
#define SW_PAGE_FAULTS      2
#define SW_CONTEXT_SWITCHES 3
#define SW_CPU_MIGRATIONS   4
#define SW_CGROUP_SWITCHES  11

#define PERF_MAX_CORES   8
#define PERF_MAX_CNTRS   32
#define PERF_MARKER_VAL  (('p' << 24) | ('e' << 16) | ('r' << 8) | ('f' << 0))

enum {
    perfEventHWGeneral = 0,
    perfEventHWCache = 1,
    perfEventHWRaw = 2,
    perfEventLinuxSW = 16,
};

typedef enum {
    perfRecord_FuncEnter = 0,
    perfRecord_FuncExit = 1,
    perfRecord_Manual = 2,
    perfRecord_ISR = 3,
} perfRecordType_t;

typedef enum {
    perfCount_Raw = 0,
    perfCount_Delta = 1,
    perfCount_DeltaXOR = 2,
} perfCountType_t;

/* ctrIdx and ctrInfo are outputs: the init call fills in the counter slot
 * and the SBI counter_info (CSR number bits 0-11, msb index bits 12-17). */
typedef struct {
    unsigned int ctrIdx;
    int type;
    union {
        int code;
        struct {
            int cache_id;
            int op_id;
            int result_id;
        };
    };
    unsigned long event_data;
    unsigned long ctrInfo;
} perfEvent;

#endif
