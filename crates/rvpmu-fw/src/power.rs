//! Power-off and reset through the platform's poweroff/reboot device
//! (QEMU virt: the sifive,test device at 0x100000), and the reports of
//! fatal conditions and panics that end in a failing power-off.

use crate::console::{Out, DEFAULT_UART};
use crate::csr::{csr_read, hartid};
use crate::machine::platform_if_ready;
use crate::platform::DEFAULT_SIFIVE_TEST;

const TEST_PASS: u32 = 0x5555;
const TEST_FAIL: u32 = 0x3333;
const TEST_RESET: u32 = 0x7777;

/// The failure code for an SBI SRST shutdown with reason "system failure"
/// (0x53, ASCII 'S'): QEMU virt exits with status 83. Not 0 or 1 (QEMU's
/// FINISHER_PASS and its own error status; runners built on isa-debug-exit
/// take 1 or 33 for success), not 77 (automake/meson "skipped"), not 124+
/// (timeout(1), the shell, signals), and none of the firmware's own codes
/// (1 fatal trap, 2 panic, 3 boot failure). See the crate documentation.
pub const EXIT_SYSTEM_FAILURE: u16 = 83;

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
            .or(p.power.sifive_test.map(|t| (t, TEST_PASS))),
        None => Some((DEFAULT_SIFIVE_TEST, TEST_PASS)),
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
        write(t, TEST_FAIL | (code as u32) << 16);
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
        .or(p.power.sifive_test.map(|t| (t, TEST_RESET)));
    if let Some((addr, value)) = target {
        crate::machine::rearm_boot();
        write(addr, value);
        park();
    }
}

/// Report a firmware-fatal condition (CSRs, hart, the interrupted pc)
/// and power off with status 1.
pub fn fatal(what: &str, context_pc: usize) -> ! {
    report(what, context_pc);
    fail(1)
}

fn report(what: &str, context_pc: usize) {
    let uart = platform_if_ready().map_or(DEFAULT_UART, |p| p.uart);
    let o = Out(uart);
    o.str("\nrvpmu-fw: FATAL: ")
        .str(what)
        .str(" on hart ")
        .dec(hartid());
    o.str("\n  mcause=")
        .hex(csr_read!(mcause))
        .str(" mepc=")
        .hex(csr_read!(mepc));
    o.str(" mtval=")
        .hex(csr_read!(mtval))
        .str(" interrupted pc=")
        .hex(context_pc)
        .str("\n");
}

/// Report a panic with its location and message, then power off.
pub fn panic_report(info: &core::panic::PanicInfo) -> ! {
    let uart = platform_if_ready().map_or(DEFAULT_UART, |p| p.uart);
    let o = Out(uart);
    o.str("\nrvpmu-fw: PANIC on hart ").dec(hartid());
    if let Some(l) = info.location() {
        o.str(" at ").str(l.file()).str(":").dec(l.line() as usize);
    }
    if let Some(m) = info.message().as_str() {
        o.str(": ").str(m);
    }
    o.str("\n  mcause=")
        .hex(csr_read!(mcause))
        .str(" mepc=")
        .hex(csr_read!(mepc));
    o.str(" mtval=").hex(csr_read!(mtval)).str("\n");
    fail(2)
}
