//! Memory layout constants shared by the linker script (`build.rs`), the
//! entry code and the Rust side.
#![cfg(target_os = "none")]

// The build script sizes the linker script's stacks section from the
// same file.
include!("stacks.rs");

/// Where QEMU's `-kernel` lands when the fw_dynamic info is absent.
pub const DEFAULT_NEXT_ADDR: usize = 0x8020_0000;

extern "C" {
    static __image_start: u8;
    static __end: u8;
    static __bss_start: u8;
    static __bss_end: u8;
}

/// `[start, end)` of everything the firmware owns in RAM (code, data, stacks).
pub fn firmware_span() -> (usize, usize) {
    (
        core::ptr::addr_of!(__image_start) as usize,
        core::ptr::addr_of!(__end) as usize,
    )
}

/// The power-of-two, naturally aligned region protected by PMP and reserved
/// in the device tree: the smallest NAPOT region covering the firmware.
pub fn protected_region() -> (u64, u64) {
    let (start, end) = firmware_span();
    let size = (end - start).next_power_of_two().max(4096) as u64;
    (start as u64 & !(size - 1), size)
}

/// Zero `.bss`. Called once by the boot hart before anything in `.bss` is used.
///
/// # Safety
/// No other hart may be using `.bss` yet.
pub unsafe fn zero_bss() {
    let start = core::ptr::addr_of!(__bss_start) as *mut u8;
    let end = core::ptr::addr_of!(__bss_end) as *mut u8;
    let mut p = start;
    while p < end {
        core::ptr::write_volatile(p as *mut u64, 0);
        p = p.add(8);
    }
}
