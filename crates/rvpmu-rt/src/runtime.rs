//! Entry points, stacks, the trap vector and power-off of the S-mode test
//! kernels.
//!
//! The boot hart enters `_start` in S-mode with a0 = hartid, a1 = DTB;
//! other harts are started through SBI HSM at [`secondary_entry`] with
//! a1 = an opaque word of the kernel's. Every hart runs with tp = its
//! hartid ([`hartid`]) on its own stack, chosen by hartid (below
//! [`MAX_HARTS`]). The very first thing `_start` does after setting stvec
//! is read `instret`: under QEMU icount that is the number of instructions
//! the firmware ran from reset to S-mode entry (plus the two before it).
//! Where that read traps (a hypervisor may keep `instret` from its guest:
//! KVM answers it with an illegal-instruction trap until the guest has a
//! counter counting instructions), the stvec of the moment skips it and
//! `boot_instret` is 0.
//!
//! A kernel expands [`entry!`](crate::entry) once (the entry code, the
//! trap vector and the stacks: a macro, so that the firmware and the
//! hypervisor, which use this crate for its other parts, link none of
//! it) and defines, unmangled:
//! - `extern "C" fn kmain(hartid: usize, dtb: usize, boot_instret: u64) -> !`
//!   (the boot hart, after .bss is zeroed),
//! - `extern "C" fn secondary_main(hartid: usize, opaque: usize) -> !`
//!   (a hart started or resumed at [`secondary_entry`]),
//! - `extern "C" fn trap_handler(scause: usize, sepc: usize, stval: usize)`:
//!   called by the trap vector with the trap CSRs and the caller-saved
//!   registers saved on the interrupted stack (RISC-V has no red zone), so
//!   the interrupted code resumes with all its registers when it returns
//!   (it may step sepc).

use rvpmu_sbi::client::sbi;
use sbi_spec::legacy::LEGACY_SHUTDOWN;
use sbi_spec::srst::{RESET_REASON_NO_REASON, RESET_REASON_SYSTEM_FAILURE, RESET_TYPE_SHUTDOWN};

/// Harts the runtime has stacks for (hartids 0 .. MAX_HARTS - 1).
pub const MAX_HARTS: usize = 8;

/// log2 of each hart's stack size.
#[doc(hidden)]
pub const STACK_SHIFT: usize = 16;
const STACK_SIZE: usize = 1 << STACK_SHIFT;

/// The stacks, one per hart (`entry!`'s `RT_STACKS`).
#[doc(hidden)]
#[repr(C, align(16))]
pub struct Stacks(pub [u8; STACK_SIZE * MAX_HARTS]);

/// The S-mode entry points `_start` and `rt_secondary`, the trap vector
/// `trap_entry` and the stacks: expanded once, in the kernel's crate.
#[macro_export]
macro_rules! entry {
    () => {
        #[no_mangle]
        static mut RT_STACKS: $crate::runtime::Stacks =
            $crate::runtime::Stacks([0; core::mem::size_of::<$crate::runtime::Stacks>()]);

        core::arch::global_asm!(
            r#"
            .section .text.entry
            .globl _start
        _start:
            la t0, 5f
            csrw stvec, t0
            csrr s2, instret
            la t0, trap_entry
            csrw stvec, t0
            mv tp, a0
            /* sp = RT_STACKS + (hartid + 1) * STACK_SIZE */
            la sp, RT_STACKS
            addi t1, a0, 1
            slli t1, t1, {shift}
            add sp, sp, t1
            /* zero .bss (holds the stacks too: ours is in use only from here on,
               and zeroing it under our feet is harmless as nothing is on it yet),
               when the linker script names it (__bss_start/__bss_end, weak: a
               script without them keeps .bss loadable, zeroed by the loader) */
            ld t0, rt_bss
            ld t1, rt_bss + 8
        1:  bgeu t0, t1, 2f
            sd zero, 0(t0)
            addi t0, t0, 8
            j 1b
        2:  mv a2, s2
            call kmain
        3:  j 3b

            /* The instret read trapped: boot_instret 0, resume after it. */
            .align 2
        5:  li s2, 0
            csrr t0, sepc
            addi t0, t0, 4
            csrw sepc, t0
            sret

            .section .rodata
            .balign 8
            .weak __bss_start
            .weak __bss_end
        rt_bss:
            .dword __bss_start
            .dword __bss_end

            .text
            .globl rt_secondary
            .align 2
        rt_secondary:
            la t0, trap_entry
            csrw stvec, t0
            mv tp, a0
            la sp, RT_STACKS
            addi t1, a0, 1
            slli t1, t1, {shift}
            add sp, sp, t1
            call secondary_main
        4:  j 4b

            /* Traps: the caller-saved registers on the interrupted stack, then
               the kernel's trap_handler(scause, sepc, stval) (extern "C": it keeps
               the callee-saved ones). */
            .globl trap_entry
            .align 2
        trap_entry:
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
            csrr a0, scause
            csrr a1, sepc
            csrr a2, stval
            call trap_handler
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
            sret
        "#,
            shift = const $crate::runtime::STACK_SHIFT,
        );
    };
}

extern "C" {
    fn rt_secondary();
}

/// Physical address of the secondary-hart entry, for HSM hart_start (and
/// a non-retentive hart_suspend's resume address).
pub fn secondary_entry() -> usize {
    rt_secondary as *const () as usize
}

/// This hart's id (tp, set by the entry code before any Rust code ran).
pub fn hartid() -> usize {
    let v: usize;
    // SAFETY: only copies tp into a register; no memory, no other state.
    unsafe { core::arch::asm!("mv {0}, tp", out(reg) v) };
    v
}

/// Power off: SRST shutdown, then the legacy call; never returns.
pub fn shutdown() -> ! {
    sbi().system_reset(
        RESET_TYPE_SHUTDOWN as usize,
        RESET_REASON_NO_REASON as usize,
    );
    sbi().legacy(LEGACY_SHUTDOWN, [0; 4]);
    park()
}

/// Power off reporting a failure: SRST shutdown with reason "system
/// failure", then a plain power-off if the firmware refused it (a test
/// kernel's verdict is in its output too).
pub fn shutdown_failure() -> ! {
    request_failure();
    shutdown()
}

/// SRST shutdown with reason "system failure"; if the firmware refuses,
/// this hart parks: never a power-off that could read as success (the
/// hypervisor, whose output is its guests').
pub fn halt_failure() -> ! {
    request_failure();
    park()
}

fn request_failure() {
    sbi().system_reset(
        RESET_TYPE_SHUTDOWN as usize,
        RESET_REASON_SYSTEM_FAILURE as usize,
    );
}

/// Stops this hart for good.
pub fn park() -> ! {
    loop {
        // SAFETY: wfi only stalls the hart until an interrupt is pending
        // (S-mode may run it unless mstatus.TW is set, when it traps as an
        // illegal instruction and the kernel's handler decides); no memory,
        // no register changes.
        unsafe { core::arch::asm!("wfi") };
    }
}
