// Minimal reproducer of QEMU 10.0.2's stale overflow timer (docs/anomalies.md):
// perf_event_open(cycles or instructions) on this process, fixed period
// (0 = a counting event), PERF_SAMPLE_IP|TIME|READ, enable, run a user loop
// of exactly 2*N instructions, disable, print every sample whose counter
// value did not advance by exactly one period, the context switches, and a
// SUMMARY line (count, samples, expected = count / period).
// usage: rvpmu-overflow-repro PERIOD N [u|all] [cycles|instr] [quiet|rt]
// Sampling after a counting event on the same counter loses the periods up
// to the task's next context switch (0 samples if there is none). `rt` runs
// under SCHED_FIFO (with /proc/sys/kernel/sched_rt_runtime_us = -1 nothing
// preempts it): then the loss lasts until QEMU's stale delay (the virtual
// time at which the counting event started) has passed, so a loop shorter
// than that gets exactly 0 samples.
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static long peo(struct perf_event_attr *a) {
    return syscall(SYS_perf_event_open, a, 0, -1, -1, 0);
}

static void loop(uint64_t n) {
    if (!n) return;
    __asm__ volatile("1: addi %0, %0, -1\n bnez %0, 1b\n" : "+r"(n) : : "memory");
}

int main(int argc, char **argv) {
    uint64_t period = argc > 1 ? strtoull(argv[1], 0, 0) : 100000;
    uint64_t n = argc > 2 ? strtoull(argv[2], 0, 0) : 6000000;
    const char *mode = argc > 3 ? argv[3] : "u";
    const char *ev = argc > 4 ? argv[4] : "cycles";
    int quiet = argc > 5;
    if (argc > 5 && !strcmp(argv[5], "rt")) {
        struct sched_param sp = { .sched_priority = 50 };
        if (sched_setscheduler(0, SCHED_FIFO, &sp)) { perror("sched_setscheduler"); return 1; }
    }
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = strcmp(ev, "instr") ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_HW_INSTRUCTIONS;
    a.sample_period = period;
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TIME | PERF_SAMPLE_READ;
    a.read_format = 0;
    a.disabled = 1;
    a.exclude_kernel = strcmp(mode, "all") != 0;
    a.exclude_hv = strcmp(mode, "all") != 0;
    a.wakeup_events = 1 << 30;
    a.context_switch = getenv("NOSW") ? 0 : 1;
    a.sample_id_all = 1;
    long fd = peo(&a);
    if (fd < 0) { perror("perf_event_open"); return 1; }
    size_t pg = 4096, np = 256;
    void *m = mmap(0, pg * (np + 1), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) { perror("mmap"); return 1; }
    struct perf_event_mmap_page *h = m;
    ioctl(fd, PERF_EVENT_IOC_RESET, 0);
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    loop(n);
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    uint64_t count = 0;
    if (read(fd, &count, 8) != 8) perror("read");
    uint64_t head = h->data_head;
    __sync_synchronize();
    char *d = (char *)m + pg;
    uint64_t off = 0, ns = 0, other = 0, lost = 0, prev_v = 0, prev_t = 0;
    uint64_t first_t = 0, last_t = 0, maxgap = 0;
    while (off < head) {
        struct perf_event_header *e = (void *)(d + (off % (pg * np)));
        if (e->type == PERF_RECORD_SAMPLE) {
            uint64_t *p = (uint64_t *)(e + 1);
            uint64_t ip = p[0], t = p[1], v = p[2];  // IP, TIME, READ(value)
            if (!ns) first_t = t;
            if (!quiet || v - prev_v != period || ns == 0)
                printf("S %lu ip=%lx t=%lu dt=%lu v=%lu dv=%lu\n", ns, ip, t,
                       ns ? t - prev_t : 0, v, v - prev_v);
            prev_v = v; prev_t = t; last_t = t; ns++;
        } else if (e->type == PERF_RECORD_SWITCH) {
            uint64_t t = *(uint64_t *)(e + 1);
            printf("SW %s t=%lu (after sample %lu, +%lu)\n", (e->misc & PERF_RECORD_MISC_SWITCH_OUT) ? "out" : "in ", t, ns, ns ? t - prev_t : 0);
        } else if (e->type == PERF_RECORD_LOST) {
            lost++;
        } else other++;
        off += e->size;
    }
    printf("SUMMARY period=%lu n=%lu mode=%s ev=%s count=%lu samples=%lu expected=%lu other=%lu lost=%lu span=%lu\n",
           period, n, mode, ev, count, ns, period ? count / period : 0, other, lost, last_t - first_t);
    return 0;
}
