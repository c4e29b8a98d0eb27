/* The runtime of the bare-metal test programs (not instrumented): S-mode
 * on SBI, or M-mode (-DMMODE) on QEMU virt's own devices (16550 UART,
 * SiFive test finisher). */
#include <stdarg.h>
#include "rt.h"
#include "sifive_bare_perf.h"

#define EID_TIME 0x54494D45
#define EID_HSM  0x48534D
#define EID_SRST 0x53525354
#define EID_DBCN 0x4442434E

struct sbiret { long error; long value; };

static struct sbiret sbi(long eid, long fid, long a0, long a1, long a2)
{
    register long r0 asm("a0") = a0;
    register long r1 asm("a1") = a1;
    register long r2 asm("a2") = a2;
    register long r6 asm("a6") = fid;
    register long r7 asm("a7") = eid;
    asm volatile("ecall" : "+r"(r0), "+r"(r1) : "r"(r2), "r"(r6), "r"(r7) : "memory");
    return (struct sbiret){ r0, r1 };
}

static void *dtb;

void *rt_dtb(void) { return dtb; }

unsigned long rt_hartid(void)
{
    unsigned long tp;
    asm volatile("mv %0, tp" : "=r"(tp));
    return tp;
}

uint64_t rt_time(void)
{
    uint64_t t;
    asm volatile("rdtime %0" : "=r"(t));
    return t;
}

#ifdef MMODE
/* QEMU virt: ns16550a at 0x10000000, sifive,test finisher at 0x100000. */
#define UART ((volatile unsigned char *)0x10000000)
#define FINISHER ((volatile unsigned int *)0x100000)

void rt_exit(int code)
{
    *FINISHER = code ? (1u << 16) | 0x3333 : 0x5555;
    for (;;)
        asm volatile("wfi");
}

static void put(const char *s, unsigned long n)
{
    for (; n; n--, s++) {
        while (!(UART[5] & 0x20))
            ;
        UART[0] = *s;
    }
}

/* The console hpmtrace's M-mode library writes through. */
void hpmtrace_console_write(const char *s, unsigned long n) { put(s, n); }
#else
void rt_exit(int code)
{
    sbi(EID_SRST, 0, 0, code ? 1 : 0, 0);
    for (;;)
        asm volatile("wfi");
}

static void put(const char *s, unsigned long n)
{
    while (n) {
        struct sbiret r = sbi(EID_DBCN, 0, n, (long)s, 0);
        if (r.error || r.value <= 0)
            return;
        s += r.value;
        n -= r.value;
    }
}
#endif

/* One line per printf call at most: formatted into a buffer first so
 * harts printing at once do not interleave within a call. */
struct out { char buf[256]; unsigned long len; };

static void out_c(struct out *o, char c)
{
    if (o->len == sizeof o->buf) {
        put(o->buf, o->len);
        o->len = 0;
    }
    o->buf[o->len++] = c;
}

static void out_num(struct out *o, unsigned long v, unsigned base, int neg)
{
    char tmp[24];
    int i = 0;
    if (neg)
        out_c(o, '-');
    do {
        tmp[i++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    while (i)
        out_c(o, tmp[--i]);
}

int printf(const char *fmt, ...)
{
    struct out o = { .len = 0 };
    va_list ap;
    va_start(ap, fmt);
    for (; *fmt; fmt++) {
        if (*fmt != '%') {
            out_c(&o, *fmt);
            continue;
        }
        int lng = 0;
        fmt++;
        while (*fmt == 'l') {
            lng = 1;
            fmt++;
        }
        switch (*fmt) {
        case 'd': {
            long v = lng ? va_arg(ap, long) : va_arg(ap, int);
            out_num(&o, v < 0 ? -(unsigned long)v : (unsigned long)v, 10, v < 0);
            break;
        }
        case 'u':
            out_num(&o, lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned), 10, 0);
            break;
        case 'x':
            out_num(&o, lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned), 16, 0);
            break;
        case 'p':
            out_c(&o, '0');
            out_c(&o, 'x');
            out_num(&o, (unsigned long)va_arg(ap, void *), 16, 0);
            break;
        case 's': {
            const char *s = va_arg(ap, const char *);
            while (*s)
                out_c(&o, *s++);
            break;
        }
        case 'c':
            out_c(&o, (char)va_arg(ap, int));
            break;
        case '%':
            out_c(&o, '%');
            break;
        default:
            out_c(&o, '?');
            break;
        }
    }
    va_end(ap);
    put(o.buf, o.len);
    return (int)o.len;
}

#ifdef MMODE
#define TIMER_INTERRUPT ((1UL << 63) | 7)
#else
#define TIMER_INTERRUPT ((1UL << 63) | 5)
#endif

void rt_trap(unsigned long cause, unsigned long epc)
{
    if (cause == TIMER_INTERRUPT) {
        if (perfTimerISR((void *)epc))
            return;
        /* Not the library's timer: nothing else arms one. */
#ifdef MMODE
        asm volatile("csrc mie, %0" : : "r"(1UL << 7));
#else
        sbi(EID_TIME, 0, -1, 0, 0);
#endif
        return;
    }
    printf("rt: unexpected trap scause=%lx sepc=%lx\n", cause, epc);
    rt_exit(1);
}

long rt_start_hart(unsigned long hartid, void (*fn)(unsigned long))
{
#ifdef MMODE
    (void)hartid;
    (void)fn;
    return -1; /* no HSM without a firmware */
#else
    extern char rt_secondary_entry[];
    return sbi(EID_HSM, 0, hartid, (long)rt_secondary_entry, (long)fn).error;
#endif
}

void rt_secondary(unsigned long hartid, void (*fn)(unsigned long))
{
    fn(hartid);
    sbi(EID_HSM, 1, 0, 0, 0); /* hart_stop */
}

int main(void);

void rt_main(unsigned long hartid, void *fdt)
{
    (void)hartid;
    dtb = fdt;
    rt_exit(main());
}
