//! Power-off and reset through the platform's poweroff/reboot device
//! (QEMU virt: the sifive,test device at 0x100000), and the reports of
//! fatal conditions and panics that end in a failing power-off.
#![cfg(target_os = "none")]

use crate::console::{Out, DEFAULT_UART};
use crate::machine::platform_if_ready;
use crate::platform::DEFAULT_SIFIVE_TEST;
use rvpmu_rt::csr;
use rvpmu_rt::exit::{self, finisher_fail, FINISHER_PASS, FINISHER_RESET};

fn write(addr: usize, value: u32) {
    // SAFETY: the device register the DT names (or QEMU virt's default).
    unsafe { core::ptr::write_volatile(addr as *mut u32, value) };
}

fn park() -> ! {
    loop {
        // SAFETY: stalling only.
        unsafe { core::arch::asm!("wfi") };
    }
}

/// Power off. Returns only if the platform has no way to do it. The device
/// acts asynchronously (QEMU handles the request in its main loop), so the
/// hart parks after the write rather than returning to the caller.
pub fn shutdown() {
    let target = match platform_if_ready() {
        Some(p) => p
            .power
            .poweroff
            .or(p.power.sifive_test.map(|t| (t, FINISHER_PASS))),
        None => Some((DEFAULT_SIFIVE_TEST, FINISHER_PASS)),
    };
    if let Some((addr, value)) = target {
        write(addr, value);
        park();
    }
}

/// Power off reporting failure (`code` 1..0xffff), e.g. after a panic; QEMU 10
/// exits with status `code` (a process exit status keeps its low 8 bits, so
/// a code must not be a multiple of 256). Falls back to a plain power-off.
pub fn fail(code: u16) -> ! {
    let test = platform_if_ready().map_or(Some(DEFAULT_SIFIVE_TEST), |p| p.power.sifive_test);
    if let Some(t) = test {
        write(t, finisher_fail(code));
        park();
    }
    shutdown();
    park()
}

/// Reset the machine (cold and warm reboot are the same on QEMU virt).
/// Returns only if the platform has no way to do it.
pub fn reboot() {
    let Some(p) = platform_if_ready() else { return };
    let target = p
        .power
        .reboot
        .or(p.power.sifive_test.map(|t| (t, FINISHER_RESET)));
    if let Some((addr, value)) = target {
        crate::machine::rearm_boot();
        write(addr, value);
        park();
    }
}

/// Report a firmware-fatal condition (CSRs, hart, the interrupted pc)
/// and power off with status `exit::FATAL`.
pub fn fatal(what: &str, context_pc: usize) -> ! {
    report(what, context_pc);
    fail(exit::FATAL)
}

fn report(what: &str, context_pc: usize) {
    let uart = platform_if_ready().map_or(DEFAULT_UART, |p| p.uart);
    let o = Out(uart);
    o.str("\nrvpmu-fw: FATAL: ")
        .str(what)
        .str(" on hart ")
        .dec(csr::MHARTID.read());
    o.str("\n  mcause=")
        .hex(csr::MCAUSE.read())
        .str(" mepc=")
        .hex(csr::MEPC.read());
    o.str(" mtval=")
        .hex(csr::MTVAL.read())
        .str(" interrupted pc=")
        .hex(context_pc)
        .str("\n");
}

/// Report a panic with its location and message, then power off.
pub fn panic_report(info: &core::panic::PanicInfo) -> ! {
    let uart = platform_if_ready().map_or(DEFAULT_UART, |p| p.uart);
    let o = Out(uart);
    o.str("\nrvpmu-fw: PANIC on hart ").dec(csr::MHARTID.read());
    if let Some(l) = info.location() {
        o.str(" at ").str(l.file()).str(":").dec(l.line() as usize);
    }
    if let Some(m) = info.message().as_str() {
        o.str(": ").str(m);
    }
    o.str("\n  mcause=")
        .hex(csr::MCAUSE.read())
        .str(" mepc=")
        .hex(csr::MEPC.read());
    o.str(" mtval=").hex(csr::MTVAL.read()).str("\n");
    fail(exit::PANIC)
}
