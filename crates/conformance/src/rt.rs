//! Entry points, stacks, the trap handler and the panic handler.
//!
//! The boot hart enters `_start` in S-mode with a0 = hartid, a1 = DTB.
//! Other harts are started through SBI HSM at `_secondary` with
//! a1 = their stack slot. The very first thing `_start` does after setting
//! stvec is read `instret`: under QEMU icount that is the number of
//! instructions the firmware ran from reset to S-mode entry.

use crate::sbi;
use core::arch::global_asm;
use core::sync::atomic::{AtomicBool, Ordering};

/// Harts the kernel can run on (stack slots and per-hart buffers).
pub const MAX_HARTS: usize = 4;
const STACK_SHIFT: usize = 16;
const STACK_SIZE: usize = 1 << STACK_SHIFT;

#[repr(C, align(16))]
struct Stacks([u8; STACK_SIZE * (MAX_HARTS + 1)]);

#[no_mangle]
static mut STACKS: Stacks = Stacks([0; STACK_SIZE * (MAX_HARTS + 1)]);

global_asm!(
    r#"
    .section .text.entry
    .globl _start
_start:
    la t0, trap_entry
    csrw stvec, t0
    csrr s2, instret
    /* slot 0 stack */
    la sp, STACKS
    li t0, {stack}
    add sp, sp, t0
    /* zero .bss (holds the stacks too: ours is in use only from here on,
       and zeroing it under our feet is harmless as nothing is on it yet) */
    la t0, __bss_start
    la t1, __bss_end
1:  bgeu t0, t1, 2f
    sd zero, 0(t0)
    addi t0, t0, 8
    j 1b
2:  mv a2, s2
    call kmain
3:  j 3b

    .text
    .globl _secondary
    .align 2
_secondary:
    la t0, trap_entry
    csrw stvec, t0
    /* sp = STACKS + (slot + 1) * STACK_SIZE, slot in a1 */
    la sp, STACKS
    addi t1, a1, 1
    slli t1, t1, {shift}
    add sp, sp, t1
    call secondary_main
4:  j 4b

    /* Traps: save the caller-saved state on the trap stack (the last slot)
       and let Rust decide; it either resumes (probing an optional CSR) or
       reports the trap and powers off. */
    .align 2
trap_entry:
    csrw sscratch, sp
    la sp, STACKS + {trap_stack_top}
    addi sp, sp, -256
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
    csrr sp, sscratch
    sret
"#,
    stack = const STACK_SIZE,
    shift = const STACK_SHIFT,
    trap_stack_top = const STACK_SIZE * (MAX_HARTS + 1),
);

extern "C" {
    fn _secondary();
}

/// Physical address of the secondary-hart entry, for HSM hart_start.
pub fn secondary_entry() -> usize {
    _secondary as *const () as usize
}

/// Set while a check deliberately executes an instruction that may trap.
static PROBING: AtomicBool = AtomicBool::new(false);
static TRAPPED: AtomicBool = AtomicBool::new(false);

/// Runs `f` and reports whether an illegal-instruction trap happened
/// inside it (the faulting instruction is skipped).
pub fn catch_illegal<T>(f: impl FnOnce() -> T) -> (T, bool) {
    TRAPPED.store(false, Ordering::SeqCst);
    PROBING.store(true, Ordering::SeqCst);
    let v = f();
    PROBING.store(false, Ordering::SeqCst);
    (v, TRAPPED.load(Ordering::SeqCst))
}

#[no_mangle]
extern "C" fn trap_handler() {
    let (scause, sepc, stval): (usize, usize, usize);
    // SAFETY: reads trap CSRs.
    unsafe {
        core::arch::asm!("csrr {0}, scause", "csrr {1}, sepc", "csrr {2}, stval",
            out(reg) scause, out(reg) sepc, out(reg) stval);
    }
    if scause == 2 && PROBING.load(Ordering::SeqCst) {
        TRAPPED.store(true, Ordering::SeqCst);
        // SAFETY: skip the 4-byte CSR instruction that trapped.
        unsafe { core::arch::asm!("csrw sepc, {0}", in(reg) sepc + 4) };
        return;
    }
    crate::println!(
        "FATAL unexpected trap in the conformance kernel: scause={scause:#x} sepc={sepc:#x} stval={stval:#x}"
    );
    sbi::shutdown();
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    crate::println!("FATAL panic in the conformance kernel: {info}");
    sbi::shutdown();
}
