/* Entry, stacks and trap vector of the bare-metal test programs: S-mode
 * on an SBI firmware, or M-mode on the bare machine (-DMMODE, as -bios).
 * The boot hart enters _start with a0 = hartid, a1 = DTB; in S-mode other
 * harts enter rt_secondary_entry through SBI HSM with a1 = the function
 * to run (in M-mode they all start at _start: harts other than 0 wait).
 * Every hart keeps its hartid in tp, the core index hpmtrace's
 * bare-metal library reads. */
#define STACK_SHIFT 16
#define MAX_HARTS 8

#ifdef MMODE
#define XTVEC mtvec
#define XCAUSE mcause
#define XEPC mepc
#define XRET mret
#else
#define XTVEC stvec
#define XCAUSE scause
#define XEPC sepc
#define XRET sret
#endif

/* tp = hartid (a0), the trap vector, sp = top of this hart's stack. */
.macro hart_setup
    mv tp, a0
    la t0, rt_trap_entry
    csrw XTVEC, t0
    la sp, rt_stacks
    addi t1, a0, 1
    slli t1, t1, STACK_SHIFT
    add sp, sp, t1
.endm

    .section .text.entry
    .globl _start
_start:
#ifdef MMODE
    bnez a0, 3f
#endif
    hart_setup
    la t0, __bss_start
    la t1, __bss_end
1:  bgeu t0, t1, 2f
    sd zero, 0(t0)
    addi t0, t0, 8
    j 1b
2:  call rt_main
3:  wfi
    j 3b

    .text
    .globl rt_secondary_entry
    .align 2
rt_secondary_entry:
    hart_setup
    call rt_secondary
4:  wfi
    j 4b

/* Save the caller-saved registers on the interrupted stack (no red zone
 * on RISC-V), call rt_trap(cause, epc), restore, return. */
    .align 2
rt_trap_entry:
    addi sp, sp, -128
    .set off, 0
    .irp r, ra, t0, t1, t2, a0, a1, a2, a3, a4, a5, a6, a7, t3, t4, t5, t6
    sd \r, off(sp)
    .set off, off + 8
    .endr
    csrr a0, XCAUSE
    csrr a1, XEPC
    call rt_trap
    .set off, 0
    .irp r, ra, t0, t1, t2, a0, a1, a2, a3, a4, a5, a6, a7, t3, t4, t5, t6
    ld \r, off(sp)
    .set off, off + 8
    .endr
    addi sp, sp, 128
    XRET

    .bss
    .balign 16
    .globl rt_stacks
rt_stacks:
    .space (MAX_HARTS << STACK_SHIFT)
