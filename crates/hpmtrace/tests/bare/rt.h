/* The runtime of the bare-metal test programs: what a board support
 * package gives a C program (console, harts, time, exit), on SBI. */
#ifndef RT_H_
#define RT_H_

#include <stdint.h>

#define RT_MAX_HARTS 8

/* The DTB the firmware passed. */
void *rt_dtb(void);
/* This hart's id (tp). */
unsigned long rt_hartid(void);
/* Start hart `hartid` running fn(hartid); 0 on success (SBI error else). */
long rt_start_hart(unsigned long hartid, void (*fn)(unsigned long));
/* The `time` CSR. */
uint64_t rt_time(void);
/* Called by the trap vector with scause and sepc. */
void rt_trap(unsigned long cause, unsigned long epc);
/* printf for %s %c %d %u %ld %lu %x %lx %p %%. */
int printf(const char *fmt, ...);
/* SRST shutdown: no reason for 0, system failure otherwise. */
void rt_exit(int code) __attribute__((noreturn));

#endif
