//! vs-check: a VS-mode guest that checks what rvpmu-hv answers and
//! forwards: BASE (version, ids, truthful probes), unknown extensions and
//! functions, DBCN (a write forwarded to the host console, buffers outside
//! guest RAM refused), TIME (a vstimecmp interrupt), SRST (forwarded: the
//! host firmware's own answer), and exceptions reflected into the guest
//! (an illegal instruction the firmware redirects, a virtual-instruction
//! trap turned into an illegal instruction). Prints one line per failed
//! check and a summary, then ends as `/chosen/bootargs` asks:
//! `vs-check.end=shutdown` (default) an SRST shutdown ("system failure"
//! if a check failed), `vs-check.end=fault` a load from guest-physical
//! 0x10000000 (QEMU's UART, not mapped for the guest), which the
//! hypervisor must report and stop. Run by `cargo xtask hv`. Runtime:
//! `srt` (entry, stack, trap vector, console), calls through
//! `rvpmu::supervisor`. Bare-metal; an empty stub on the host.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("this is a bare-metal guest; run it with `cargo xtask hv`");
}

#[cfg(target_os = "none")]
mod guest {
    use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use rvpmu::supervisor::sbi;
    use sbi_spec::binary::{RET_ERR_INVALID_PARAM, RET_ERR_NOT_SUPPORTED, RET_SUCCESS};
    use sbi_spec::{base::EID_BASE, dbcn::EID_DBCN, srst::EID_SRST, time::EID_TIME};
    use srt::{console, println, runtime};

    static TIMER_IRQS: AtomicUsize = AtomicUsize::new(0);
    static SOFT_IRQS: AtomicUsize = AtomicUsize::new(0);
    static EXCEPTIONS: AtomicUsize = AtomicUsize::new(0);
    static LAST_CAUSE: AtomicUsize = AtomicUsize::new(0);
    static LAST_TVAL: AtomicUsize = AtomicUsize::new(0);
    static FAILED: AtomicUsize = AtomicUsize::new(0);
    static CHECKS: AtomicUsize = AtomicUsize::new(0);

    /// Timer interrupts are counted (and the timer pushed out); exceptions
    /// are recorded and stepped over.
    #[no_mangle]
    extern "C" fn trap_handler() {
        let (cause, epc, tval): (usize, usize, usize);
        // SAFETY: reads the trap CSRs of the trap being handled; no memory.
        unsafe {
            core::arch::asm!("csrr {0}, scause", "csrr {1}, sepc", "csrr {2}, stval",
                out(reg) cause, out(reg) epc, out(reg) tval);
        }
        if (cause as isize) < 0 {
            match cause & 0xff {
                1 => {
                    // SAFETY: clears sip.SSIP (hvip.VSSIP underneath), a
                    // pending bit; no memory.
                    unsafe { core::arch::asm!("csrc sip, {0}", in(reg) 2usize) };
                    SOFT_IRQS.fetch_add(1, SeqCst);
                }
                5 => {
                    sbi().set_timer(u64::MAX);
                    TIMER_IRQS.fetch_add(1, SeqCst);
                }
                _ => {}
            }
            return;
        }
        EXCEPTIONS.fetch_add(1, SeqCst);
        LAST_CAUSE.store(cause, SeqCst);
        LAST_TVAL.store(tval, SeqCst);
        // SAFETY: the only exceptions this guest takes are the illegal
        // instructions it provokes in its own .text (guest RAM, mapped,
        // satp = 0, 2-byte aligned); the low halfword gives the length.
        let insn = unsafe { core::ptr::read_volatile(epc as *const u16) };
        let len = if insn & 3 == 3 { 4 } else { 2 };
        // SAFETY: resumes after the provoking instruction, whose asm!
        // block declares only a register output.
        unsafe { core::arch::asm!("csrw sepc, {0}", in(reg) epc + len) };
    }

    #[panic_handler]
    fn panic(info: &core::panic::PanicInfo) -> ! {
        println!("vs-check: FAIL panic: {info}");
        runtime::shutdown_failure()
    }

    #[no_mangle]
    extern "C" fn secondary_main(_hartid: usize, _opaque: usize) -> ! {
        runtime::park()
    }

    fn check(name: &str, ok: bool, got: core::fmt::Arguments<'_>) {
        CHECKS.fetch_add(1, SeqCst);
        if !ok {
            FAILED.fetch_add(1, SeqCst);
            println!("vs-check: FAIL {name}: got {got}");
        }
    }

    fn ret(name: &str, r: rvpmu::ecall::SbiRet, error: usize, value: Option<usize>) {
        let ok = r.error == error && value.is_none_or(|v| r.value == v);
        check(
            name,
            ok,
            format_args!("({}, {:#x})", r.error as isize, r.value),
        );
    }

    fn raw(eid: usize, fid: usize) -> rvpmu::ecall::SbiRet {
        let (error, value) = rvpmu::supervisor::ecall(eid, fid, [0; 6]);
        rvpmu::ecall::SbiRet {
            error: error as usize,
            value,
        }
    }

    fn time() -> u64 {
        let t: u64;
        // SAFETY: reads the time CSR (hcounteren.TM lets VS-mode read it).
        unsafe { core::arch::asm!("csrr {0}, time", out(reg) t) };
        t
    }

    /// Guest RAM [start, end) and the bootargs, from the guest's DT.
    fn read_dt(dtb: usize) -> ((usize, usize), &'static str) {
        // SAFETY: a1 points at the DT the hypervisor wrote into guest RAM,
        // which nothing writes while the guest runs.
        let Ok(fdt) = (unsafe { fdt::Fdt::from_ptr(dtb as *const u8) }) else {
            println!("vs-check: FAIL no valid device tree at a1 = {dtb:#x}");
            runtime::shutdown_failure()
        };
        let ram = fdt
            .memory()
            .regions()
            .next()
            .map(|r| {
                let b = r.starting_address as usize;
                (b, b + r.size.unwrap_or(0))
            })
            .unwrap_or((0, 0));
        (ram, fdt.chosen().bootargs().unwrap_or(""))
    }

    #[no_mangle]
    extern "C" fn kmain(hartid: usize, dtb: usize, _instret: u64) -> ! {
        console::init();
        let (ram, bootargs) = read_dt(dtb);
        println!(
            "vs-check: hart {hartid}, guest RAM {:#x}..{:#x}, bootargs \"{bootargs}\"",
            ram.0, ram.1
        );

        // BASE.
        ret(
            "spec version 3.0",
            sbi().base_spec_version(),
            RET_SUCCESS,
            Some(3 << 24),
        );
        ret(
            "impl id rvhv",
            sbi().base_impl_id(),
            RET_SUCCESS,
            Some(0x7276_6876),
        );
        for (eid, want) in [
            (EID_BASE, 1),
            (EID_TIME, 1),
            (EID_DBCN, 1),
            (EID_SRST, 1),
            (sbi_spec::pmu::EID_PMU, 0),
            (sbi_spec::sta::EID_STA, 0),
            (sbi_spec::hsm::EID_HSM, 1),
            (sbi_spec::spi::EID_SPI, 1),
            (sbi_spec::rfnc::EID_RFNC, 1),
            (0x1234_5678, 0),
        ] {
            let r = sbi().base_probe_extension(eid);
            ret("probe_extension", r, RET_SUCCESS, Some(want));
        }
        let r = raw(0x1234_5678, 0);
        ret("unknown extension", r, RET_ERR_NOT_SUPPORTED, None);
        let r = raw(EID_BASE, 99);
        ret("unknown BASE function", r, RET_ERR_NOT_SUPPORTED, None);

        // DBCN: a forwarded write (the line must reach the console), then
        // buffers outside guest RAM.
        let line = b"vs-check: dbcn write forwarded\n";
        let r = sbi().console_write(line.len(), line.as_ptr() as usize, 0);
        ret("dbcn write", r, RET_SUCCESS, Some(line.len()));
        for (len, lo, hi) in [
            (1, 0x1000_0000, 0),
            (16, ram.1 - 8, 0),
            (2, ram.0 - 1, 0),
            (1, ram.0, 1),
            (usize::MAX, ram.0, 0),
        ] {
            let r = sbi().console_write(len, lo, hi);
            ret(
                "dbcn write outside guest RAM",
                r,
                RET_ERR_INVALID_PARAM,
                Some(0),
            );
        }
        for &b in b"vs-check: dbcn byte forwarded\n" {
            ret(
                "dbcn write_byte",
                sbi().console_write_byte(b),
                RET_SUCCESS,
                None,
            );
        }

        // TIME: one interrupt from vstimecmp, not before its deadline.
        let deadline = time() + 10_000;
        ret("set_timer", sbi().set_timer(deadline), RET_SUCCESS, None);
        // SAFETY: enables the supervisor timer interrupt, which the trap
        // handler serves (it pushes the timer out).
        unsafe {
            core::arch::asm!("csrs sie, {0}", "csrsi sstatus, 2", in(reg) 1usize << 5);
        }
        while TIMER_IRQS.load(SeqCst) == 0 && time() < deadline + 1_000_000 {
            // SAFETY: stalls until an interrupt.
            unsafe { core::arch::asm!("wfi") };
        }
        let at = time();
        // SAFETY: interrupts off again.
        unsafe { core::arch::asm!("csrci sstatus, 2") };
        check(
            "timer interrupt after its deadline",
            TIMER_IRQS.load(SeqCst) == 1 && at >= deadline,
            format_args!(
                "{} interrupts, time {at} deadline {deadline}",
                TIMER_IRQS.load(SeqCst)
            ),
        );

        // HSM, IPI, RFENCE for the one vCPU.
        let started = sbi_spec::hsm::hart_state::STARTED;
        ret(
            "hart 0 started",
            sbi().hart_get_status(0),
            RET_SUCCESS,
            Some(started),
        );
        ret(
            "no hart 1",
            sbi().hart_get_status(1),
            RET_ERR_INVALID_PARAM,
            None,
        );
        let r = sbi().hart_start(0, 0x8020_0000, 0);
        ret(
            "hart 0 already started",
            r,
            sbi_spec::binary::RET_ERR_ALREADY_AVAILABLE,
            None,
        );
        // SAFETY: enables the software interrupt, which the handler serves.
        unsafe { core::arch::asm!("csrs sie, {0}", "csrsi sstatus, 2", in(reg) 2usize) };
        ret("ipi to hart 0", sbi().send_ipi(1, 0), RET_SUCCESS, None);
        // SAFETY: interrupts off again.
        unsafe { core::arch::asm!("csrci sstatus, 2") };
        check(
            "ipi delivered once",
            SOFT_IRQS.load(SeqCst) == 1,
            format_args!("{} interrupts", SOFT_IRQS.load(SeqCst)),
        );
        ret(
            "ipi to hart 1",
            sbi().send_ipi(2, 0),
            RET_ERR_INVALID_PARAM,
            None,
        );
        let rf = |fid| sbi().remote_fence(fid, 1, 0, 0, usize::MAX, 0);
        ret("remote fence.i", rf(0), RET_SUCCESS, None);
        ret("remote sfence.vma", rf(1), RET_SUCCESS, None);
        ret("remote hfence.gvma", rf(4), RET_ERR_NOT_SUPPORTED, None);

        // Exceptions: the counters read directly, without a trap.
        let before = EXCEPTIONS.load(SeqCst);
        let (c, i): (usize, usize);
        // SAFETY: reads counters (hcounteren lets them through).
        unsafe { core::arch::asm!("csrr {0}, cycle", "csrr {1}, instret", out(reg) c, out(reg) i) };
        check(
            "cycle, time, instret readable",
            EXCEPTIONS.load(SeqCst) == before && c != 0 && i != 0,
            format_args!("{} traps", EXCEPTIONS.load(SeqCst) - before),
        );
        // A write to a read-only CSR: illegal everywhere, redirected by the
        // firmware to the hypervisor, reflected to us.
        // SAFETY: traps; the handler steps over it.
        unsafe { core::arch::asm!("csrw cycle, zero") };
        check(
            "illegal instruction reflected",
            EXCEPTIONS.load(SeqCst) == before + 1 && LAST_CAUSE.load(SeqCst) == 2,
            format_args!("cause {}", LAST_CAUSE.load(SeqCst)),
        );
        // hstatus from VS-mode: a virtual-instruction trap, which the
        // guest must see as an illegal instruction with the instruction
        // bits in stval (csrr a0, hstatus = 0x60002573).
        let v: usize;
        // SAFETY: traps; the handler steps over it; a0 keeps its value.
        unsafe { core::arch::asm!("li a0, 0", ".word 0x60002573", out("a0") v) };
        check(
            "virtual instruction seen as illegal instruction",
            EXCEPTIONS.load(SeqCst) == before + 2
                && LAST_CAUSE.load(SeqCst) == 2
                && LAST_TVAL.load(SeqCst) == 0x6000_2573
                && v == 0,
            format_args!(
                "cause {} tval {:#x}",
                LAST_CAUSE.load(SeqCst),
                LAST_TVAL.load(SeqCst)
            ),
        );

        // SRST with a reserved reset type: the host firmware's answer.
        let r = sbi().system_reset(0x1000_0000, 0);
        ret(
            "srst reserved type forwarded",
            r,
            RET_ERR_INVALID_PARAM,
            None,
        );

        let (n, failed) = (CHECKS.load(SeqCst), FAILED.load(SeqCst));
        if failed == 0 {
            println!("vs-check: all {n} checks passed");
        } else {
            println!("vs-check: {failed} of {n} checks failed");
        }
        if bootargs.split(' ').any(|a| a == "vs-check.end=fault") {
            println!("vs-check: loading from guest-physical 0x10000000");
            // SAFETY: not mapped for the guest: the hypervisor stops us.
            let v = unsafe { core::ptr::read_volatile(0x1000_0000 as *const u8) };
            println!("vs-check: FAIL the load returned {v}");
            runtime::shutdown_failure()
        }
        if failed == 0 {
            runtime::shutdown()
        } else {
            runtime::shutdown_failure()
        }
    }
}
