//! Reset entry and the trap vector: the assembly that enters the Rust code
//! (`boot::fw_main`, `trap::trap_handler`, `sbi::pmu_fast`, `sbi::base_ext`,
//! `sbi::other_ext`). The top of
//! the module graph: nothing imports it. The routines the handlers call in
//! assembly (guarded accesses, entering S-mode) are in `frame.rs`.
#![cfg(target_os = "none")]

use crate::frame::{HartRoot, TrapFrame};
use crate::layout::{MAX_HARTS, STACK_SIZE};
use core::mem::{offset_of, size_of};

// Reset: every hart arrives here with a0 = hartid, a1 = DTB, a2 = fw_dynamic
// info. Each hart takes the top of its own stack for its root (`HartRoot`:
// the trap frame, then the pointer to the hart's state; mscratch points at
// it, zeroed here) and runs on the stack below it.
core::arch::global_asm!(
    ".section .text.entry, \"ax\"",
    ".globl _start",
    "_start:",
    "   csrw mie, zero",
    "   li t0, {max_harts}",
    "   bgeu a0, t0, 2f",
    "   la t0, _stacks_end",
    "   li t1, {stack_size}",
    "   mul t1, t1, a0",
    "   sub t0, t0, t1",
    "   addi t0, t0, -{frame_size}",
    "   csrw mscratch, t0",
    "   mv sp, t0",
    // The root is stack memory nobody zeroes: clear it so its words (the
    // trap entry reads `recover` on an M-mode trap) start at 0.
    "   addi t2, t0, {frame_size}",
    "1: sd zero, 0(t0)",
    "   addi t0, t0, 8",
    "   bltu t0, t2, 1b",
    "   la t1, {trap_entry}",
    "   csrw mtvec, t1",
    "   call {fw_main}",
    "2: wfi",
    "   j 2b",
    max_harts = const MAX_HARTS,
    stack_size = const STACK_SIZE,
    frame_size = const size_of::<HartRoot>(),
    trap_entry = sym trap_entry,
    fw_main = sym crate::boot::fw_main,
);

extern "C" {
    fn trap_entry();
}

/// `OP xN, N*8(sp)` for each register number N, in order: register N's
/// slot in the trap frame is `regs[N]` (sp points at the frame).
macro_rules! frame_slots {
    ($op:literal, $($n:literal),+) => {
        concat!($("   ", $op, " x", $n, ", ", $n, "*8(sp)\n"),+)
    };
}

// The trap vector. From S/U (or VS/VU) the whole register file is saved in
// the hart's trap frame and `trap_handler` runs on the stack below it. A trap
// taken in M-mode is either an expected fault of a guarded access (the root's
// `recover` holds where to resume; a1 gets mcause) or a firmware bug.
// `recover` and `scratch` are the root's, outside the frame: a guarded
// access faults while its handler holds `&mut TrapFrame`.
//
// Fast path: an ecall from S-mode (mcause 9 is never raised by M-mode code)
// with a non-legacy EID, in three ways by EID: PMU (the calls perf makes
// while it samples), BASE, and the others. The functions called are
// extern "C", so the ABI preserves sp, gp, tp and s0-s11 for us: only the
// registers a call may clobber are saved (sp, ra, t0-t6, a2-a7; a0/a1
// carry the answer), in their frame slots (t0 stays in `scratch`), and
// mscratch points back at the frame as on the full path. A PMU call gets
// the hart's PMU state in a5 (no PMU function takes a5): `HartRoot::hart`
// points at the hart's `HartLocal`, whose `HartPerf` is at offset 0. Legacy
// calls need the full frame (a fault reading a hart mask is redirected to
// S-mode), as do all other traps. Guarded accesses (which take the frame,
// and whose faults reuse `scratch`) are never made on the fast path.
macro_rules! fast_save {
    () => {
        concat!(
            "   csrrw t0, mscratch, sp\n",
            "   sd t0, 2*8(sp)\n",
            frame_slots!("sd", 1, 6, 7, 12, 13, 14, 15, 16, 17, 28, 29, 30, 31),
        )
    };
}
macro_rules! fast_return {
    () => {
        concat!(
            "   csrr t0, mepc\n",
            "   addi t0, t0, 4\n",
            "   csrw mepc, t0\n",
            "   ld x1, 1*8(sp)\n",
            "   ld x5, {scratch}(sp)\n",
            frame_slots!("ld", 6, 7, 12, 13, 14, 15, 16, 17, 28, 29, 30, 31, 2),
            "   mret\n",
        )
    };
}
core::arch::global_asm!(
    ".section .text",
    ".balign 4",
    ".globl {trap_entry}",
    "{trap_entry}:",
    "   csrrw sp, mscratch, sp",
    "   sd t0, {scratch}(sp)",
    "   csrr t0, mcause",
    "   addi t0, t0, -{ecall_s}",
    "   bnez t0, 1f",
    "   li t0, {eid_pmu}",
    "   bne a7, t0, 7f",
    fast_save!(),
    "   ld a5, {hart}(sp)",
    "   call {pmu_fast}",
    fast_return!(),
    "7: li t0, {eid_base}",
    "   bne a7, t0, 8f",
    fast_save!(),
    "   call {base_fast}",
    fast_return!(),
    "8: li t0, {legacy_last}",
    "   bleu a7, t0, 1f",
    fast_save!(),
    "   call {other_fast}",
    fast_return!(),
    // Full path.
    "1: csrr t0, mstatus",
    "   srli t0, t0, 11",
    "   andi t0, t0, 3",
    "   addi t0, t0, -3",
    "   beqz t0, 3f",
    frame_slots!("sd", 1, 3, 4),
    "   ld t0, {scratch}(sp)",
    frame_slots!("sd", 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31),
    "   csrr t0, mscratch",
    "   sd t0, 2*8(sp)",
    "   csrw mscratch, sp",
    "   csrr t0, mepc",
    "   sd t0, {mepc}(sp)",
    "   csrr t0, mstatus",
    "   sd t0, {mstatus}(sp)",
    "   mv a0, sp",
    "   call {handler}",
    "   ld t0, {mepc}(sp)",
    "   csrw mepc, t0",
    "   ld t0, {mstatus}(sp)",
    "   csrw mstatus, t0",
    frame_slots!("ld", 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 2),
    "   mret",
    // Trap from M-mode.
    "3: ld t0, {recover}(sp)",
    "   beqz t0, 4f",
    "   csrw mepc, t0",
    "   sd zero, {recover}(sp)",
    "   csrr a1, mcause",
    "   ld t0, {scratch}(sp)",
    "   csrrw sp, mscratch, sp",
    "   mret",
    // Unexpected: report and power off. A fault while reporting ends in the
    // raw fallback below (QEMU virt's test device).
    "4: la t0, 5f",
    "   csrw mtvec, t0",
    "   mv a0, sp",
    "   call {fatal}",
    ".balign 4",
    "5: li t0, {test_device}",
    "   li t1, {fatal_finisher}",
    "   sw t1, 0(t0)",
    "6: wfi",
    "   j 6b",
    trap_entry = sym trap_entry,
    handler = sym crate::trap::trap_handler,
    pmu_fast = sym crate::sbi::pmu_fast,
    base_fast = sym crate::sbi::base_ext,
    other_fast = sym crate::sbi::other_ext,
    eid_pmu = const rvpmu::ecall::EID_PMU,
    eid_base = const sbi_spec::base::EID_BASE,
    hart = const crate::frame::HART_OFFSET,
    ecall_s = const rvpmu_rt::csr::CAUSE_SUPERVISOR_ECALL,
    legacy_last = const crate::sbi::LEGACY_LAST_EID,
    fatal = sym crate::trap::m_mode_trap,
    scratch = const offset_of!(HartRoot, scratch),
    mepc = const offset_of!(TrapFrame, mepc),
    mstatus = const offset_of!(TrapFrame, mstatus),
    recover = const offset_of!(HartRoot, recover),
    test_device = const rvpmu_rt::exit::QEMU_VIRT_TEST_DEVICE,
    fatal_finisher = const rvpmu_rt::exit::finisher_fail(rvpmu_rt::exit::FATAL),
);
