//! Reset entry and the trap vector.
//!
//! While the guest runs, sscratch holds the vCPU's address; while the
//! hypervisor runs, it holds 0. The vector swaps sp with sscratch: a
//! nonzero result is a trap from the guest (save its registers into the
//! vCPU, call `trap::hv_trap` on the hypervisor's stack, restore and
//! `sret` into the guest); zero is a trap taken in the hypervisor itself,
//! a bug, reported by `trap::hv_self_trap`, which never returns. The
//! hypervisor's stack starts empty at every trap: nothing of the
//! hypervisor's lives across a guest run except in statics.
#![cfg(target_os = "none")]

use crate::vcpu::{GuestRegs, Vcpu, PC_OFFSET};

const STACK_SIZE: usize = 64 << 10;

#[repr(C, align(16))]
struct Stack([u8; STACK_SIZE]);

/// The hypervisor's one stack (in .bss, zeroed by `_start` before use).
#[no_mangle]
static mut HV_STACK: Stack = Stack([0; STACK_SIZE]);

core::arch::global_asm!(
    r#"
    .section .text.entry
    .globl _start
_start:
    la sp, HV_STACK
    li t0, {stack_size}
    add sp, sp, t0
    csrw sscratch, zero
    csrw sie, zero
    la t0, hv_trap_vector
    csrw stvec, t0
    /* zero .bss (the stack too: nothing is on it yet); a0/a1 kept */
    la t0, __bss_start
    la t1, __bss_end
1:  bgeu t0, t1, 2f
    sd zero, 0(t0)
    addi t0, t0, 8
    j 1b
2:  call hv_main
3:  wfi
    j 3b

    .text
    .balign 4
hv_trap_vector:
    csrrw sp, sscratch, sp
    beqz sp, 5f
    sd x1, 1*8(sp)
    sd x3, 3*8(sp)
    sd x4, 4*8(sp)
    sd x5, 5*8(sp)
    sd x6, 6*8(sp)
    sd x7, 7*8(sp)
    sd x8, 8*8(sp)
    sd x9, 9*8(sp)
    sd x10, 10*8(sp)
    sd x11, 11*8(sp)
    sd x12, 12*8(sp)
    sd x13, 13*8(sp)
    sd x14, 14*8(sp)
    sd x15, 15*8(sp)
    sd x16, 16*8(sp)
    sd x17, 17*8(sp)
    sd x18, 18*8(sp)
    sd x19, 19*8(sp)
    sd x20, 20*8(sp)
    sd x21, 21*8(sp)
    sd x22, 22*8(sp)
    sd x23, 23*8(sp)
    sd x24, 24*8(sp)
    sd x25, 25*8(sp)
    sd x26, 26*8(sp)
    sd x27, 27*8(sp)
    sd x28, 28*8(sp)
    sd x29, 29*8(sp)
    sd x30, 30*8(sp)
    sd x31, 31*8(sp)
    csrr t0, sscratch
    sd t0, 2*8(sp)
    csrw sscratch, zero
    csrr t0, sepc
    sd t0, {pc}(sp)
    mv a0, sp
    la sp, HV_STACK
    li t0, {stack_size}
    add sp, sp, t0
    call hv_trap
    j hv_resume_guest
5:  csrrw sp, sscratch, sp
    call hv_self_trap
6:  j 6b

    /* a0 = the vCPU: load its registers and enter it */
    .globl hv_resume_guest
    .balign 4
hv_resume_guest:
    ld t0, {pc}(a0)
    csrw sepc, t0
    csrw sscratch, a0
    ld x1, 1*8(a0)
    ld x2, 2*8(a0)
    ld x3, 3*8(a0)
    ld x4, 4*8(a0)
    ld x5, 5*8(a0)
    ld x6, 6*8(a0)
    ld x7, 7*8(a0)
    ld x8, 8*8(a0)
    ld x9, 9*8(a0)
    ld x11, 11*8(a0)
    ld x12, 12*8(a0)
    ld x13, 13*8(a0)
    ld x14, 14*8(a0)
    ld x15, 15*8(a0)
    ld x16, 16*8(a0)
    ld x17, 17*8(a0)
    ld x18, 18*8(a0)
    ld x19, 19*8(a0)
    ld x20, 20*8(a0)
    ld x21, 21*8(a0)
    ld x22, 22*8(a0)
    ld x23, 23*8(a0)
    ld x24, 24*8(a0)
    ld x25, 25*8(a0)
    ld x26, 26*8(a0)
    ld x27, 27*8(a0)
    ld x28, 28*8(a0)
    ld x29, 29*8(a0)
    ld x30, 30*8(a0)
    ld x31, 31*8(a0)
    ld x10, 10*8(a0)
    sret
"#,
    stack_size = const STACK_SIZE,
    pc = const PC_OFFSET,
);

extern "C" {
    /// Takes the vCPU (its registers come first).
    fn hv_resume_guest(v: *mut GuestRegs) -> !;
}

/// Enter the guest for the first time (hstatus, sstatus and the H CSRs
/// already set up for VS-mode).
///
/// # Safety
///
/// `v` comes from `vcpu::install` and the CSRs make `sret` enter VS-mode
/// with the G-stage table in place.
pub unsafe fn run_guest(v: *mut Vcpu) -> ! {
    // SAFETY: the caller's contract; from here on the vCPU is reached
    // only through sscratch and the trap vector.
    unsafe { hv_resume_guest(v.cast()) }
}
