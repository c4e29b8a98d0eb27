//! The conformance kernel's part of the runtime (entry, stacks and trap
//! vector are the shared `rvpmu_rt::runtime`): its trap handler (probing
//! optional CSRs, otherwise fatal), the panic handler, and the
//! non-retentive hart_suspend trampoline.

use crate::sbi;
use core::arch::global_asm;
use core::sync::atomic::{AtomicBool, Ordering};

/// Harts the conformance kernel runs its suite on (stack slots are the
/// runtime's; these are the per-hart buffer slots).
pub const MAX_HARTS: usize = 4;

global_asm!(
    r#"
    /* rvpmu_suspend_nonret(kind, ctx): HSM hart_suspend(kind,
       resume_addr = rvpmu_resume_nonret, opaque = ctx) after saving what a
       non-retentive suspend may lose (ra, sp, gp, tp, s0-s11, stvec, sie,
       sstatus) in *ctx. If the firmware answers, the ecall returns its
       sbiret (every register but a0/a1 preserved). If the hart resumes at
       rvpmu_resume_nonret (a0 = hartid, a1 = opaque), the state comes back
       from *ctx, a0/a1 as seen there are stored in it, and the function
       returns (RESUMED, 0). */
    .text
    .globl rvpmu_suspend_nonret
    .align 2
rvpmu_suspend_nonret:
    sd ra, 0(a1)
    sd sp, 8(a1)
    sd gp, 16(a1)
    sd tp, 24(a1)
    sd s0, 32(a1)
    sd s1, 40(a1)
    sd s2, 48(a1)
    sd s3, 56(a1)
    sd s4, 64(a1)
    sd s5, 72(a1)
    sd s6, 80(a1)
    sd s7, 88(a1)
    sd s8, 96(a1)
    sd s9, 104(a1)
    sd s10, 112(a1)
    sd s11, 120(a1)
    csrr t0, stvec
    sd t0, 128(a1)
    csrr t0, sie
    sd t0, 136(a1)
    csrr t0, sstatus
    sd t0, 144(a1)
    mv a2, a1
    la a1, rvpmu_resume_nonret
    li a6, 3
    li a7, {eid_hsm}
    ecall
    ret

    .align 2
rvpmu_resume_nonret:
    la t0, trap_entry
    csrw stvec, t0
    sd a0, 152(a1)
    sd a1, 160(a1)
    ld t0, 136(a1)
    csrw sie, t0
    ld t0, 144(a1)
    csrw sstatus, t0
    ld t0, 128(a1)
    csrw stvec, t0
    ld ra, 0(a1)
    ld sp, 8(a1)
    ld gp, 16(a1)
    ld tp, 24(a1)
    ld s0, 32(a1)
    ld s1, 40(a1)
    ld s2, 48(a1)
    ld s3, 56(a1)
    ld s4, 64(a1)
    ld s5, 72(a1)
    ld s6, 80(a1)
    ld s7, 88(a1)
    ld s8, 96(a1)
    ld s9, 104(a1)
    ld s10, 112(a1)
    ld s11, 120(a1)
    li a0, {resumed}
    li a1, 0
    ret
"#,
    eid_hsm = const sbi::eid::HSM,
    resumed = const RESUMED,
);

extern "C" {
    fn rvpmu_suspend_nonret(kind: usize, ctx: *mut SuspendCtx) -> RawRet;
}

/// `rvpmu_suspend_nonret`'s a0 when the hart came back through the resume
/// address (no SBI error code is positive).
const RESUMED: isize = 1;

/// What `rvpmu_suspend_nonret` keeps across the suspend (offsets used by
/// the assembly above).
#[repr(C)]
struct SuspendCtx {
    /// ra, sp, gp, tp, s0-s11.
    regs: [usize; 16],
    stvec: usize,
    sie: usize,
    sstatus: usize,
    /// a0 and a1 at the resume address.
    resumed_a0: usize,
    resumed_a1: usize,
}

#[repr(C)]
struct RawRet {
    error: isize,
    value: usize,
}

/// How a non-retentive hart_suspend ended.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum NonRetentive {
    /// The firmware answered (the call returned): an error, or a success
    /// the spec does not allow for a non-retentive suspend.
    Answered(sbi::Ret),
    /// The hart resumed at resume_addr with these a0 (hartid) and a1.
    Resumed { a0: usize, a1: usize },
}

/// HSM hart_suspend with `kind`, a resume address in this kernel and a
/// context pointer as opaque. A wake-up source must already be pending
/// (e.g. `with_ssip_pending`). `opaque` is what the firmware was given as
/// opaque, to compare with `NonRetentive::Resumed::a1`.
pub fn suspend_non_retentive(kind: usize) -> (NonRetentive, usize) {
    let mut ctx = SuspendCtx {
        regs: [0; 16],
        stvec: 0,
        sie: 0,
        sstatus: 0,
        resumed_a0: 0,
        resumed_a1: 0,
    };
    let p = &mut ctx as *mut SuspendCtx;
    // SAFETY: the assembly saves and restores every register the C ABI
    // needs preserved (and the S-mode CSRs a non-retentive suspend may
    // lose); ctx lives on this stack frame, which stays in place.
    let r = unsafe { rvpmu_suspend_nonret(kind, p) };
    // SAFETY: written through `p` by the assembly; read after it returned.
    let ctx = unsafe { core::ptr::read_volatile(p) };
    let how = if r.error == RESUMED {
        NonRetentive::Resumed {
            a0: ctx.resumed_a0,
            a1: ctx.resumed_a1,
        }
    } else {
        NonRetentive::Answered(sbi::Ret {
            error: r.error,
            value: r.value,
        })
    };
    (how, p as usize)
}

/// Runs `f` with a supervisor software interrupt pending and enabled in
/// sie (sstatus.SIE stays 0, so it is never taken): a suspended hart has
/// its wake-up already, and a suspend returns (or resumes) at once.
pub fn with_ssip_pending<T>(f: impl FnOnce() -> T) -> T {
    const SSIP: usize = 1 << 1;
    // SAFETY: sip.SSIP and sie.SSIE are S-mode writable (SSIP delegated);
    // with sstatus.SIE clear the interrupt is never taken.
    unsafe { core::arch::asm!("csrs sip, {0}", "csrs sie, {0}", in(reg) SSIP) };
    let v = f();
    // SAFETY: as above.
    unsafe { core::arch::asm!("csrc sie, {0}", "csrc sip, {0}", in(reg) SSIP) };
    v
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

/// The runtime's trap vector calls this.
#[no_mangle]
extern "C" fn trap_handler(scause: usize, sepc: usize, stval: usize) {
    if scause == 2 && PROBING.load(Ordering::SeqCst) {
        TRAPPED.store(true, Ordering::SeqCst);
        // SAFETY: skip the 4-byte CSR instruction that trapped.
        unsafe { core::arch::asm!("csrw sepc, {0}", in(reg) sepc + 4) };
        return;
    }
    crate::println!(
        "FATAL unexpected trap in the conformance kernel: scause={scause:#x} sepc={sepc:#x} stval={stval:#x}"
    );
    sbi::shutdown_failure();
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    crate::println!("FATAL panic in the conformance kernel: {info}");
    sbi::shutdown_failure();
}
