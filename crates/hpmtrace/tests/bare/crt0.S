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
    sd ra, 0(sp)
    sd t0, 8(sp)
    sd t1, 16(sp)
    sd t2, 24(sp)
    sd a0, 32(sp)
    sd a1, 40(sp)
    sd a2, 48(sp)
    sd a3, 56(sp)
    sd a4, 64(sp)
    sd a5, 72(sp)
    sd a6, 80(sp)
    sd a7, 88(sp)
    sd t3, 96(sp)
    sd t4, 104(sp)
    sd t5, 112(sp)
    sd t6, 120(sp)
    csrr a0, XCAUSE
    csrr a1, XEPC
    call rt_trap
    ld ra, 0(sp)
    ld t0, 8(sp)
    ld t1, 16(sp)
    ld t2, 24(sp)
    ld a0, 32(sp)
    ld a1, 40(sp)
    ld a2, 48(sp)
    ld a3, 56(sp)
    ld a4, 64(sp)
    ld a5, 72(sp)
    ld a6, 80(sp)
    ld a7, 88(sp)
    ld t3, 96(sp)
    ld t4, 104(sp)
    ld t5, 112(sp)
    ld t6, 120(sp)
    addi sp, sp, 128
    XRET

    .bss
    .balign 16
    .globl rt_stacks
rt_stacks:
    .space (MAX_HARTS << STACK_SHIFT)
