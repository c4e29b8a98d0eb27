//! # rvpmu-hv: a minimal HS-mode hypervisor on rvpmu-fw
//!
//! The hypervisor (`src/main.rs`, riscv64gc-unknown-none-elf only) runs one
//! VS-mode guest on one hart, or several time-sliced on it
//! (`rvpmu-hv.guests=N`) with steal time reported through SBI STA. Everything it decides from hostile or
//! external input lives in this library, which also builds on the host so
//! that it is tested there:
//!
//! | module | what |
//! |---|---|
//! | [`options`] | the hypervisor's options in the host bootargs (guests, quantum, per-guest words) and each guest's command line |
//! | [`ram`] | the guest's RAM window: guest-physical to host-physical, bounds-checked; [`ram::GuestMemory`] implements `rvpmu`'s `SupervisorMemory` over it |
//! | [`gstage`] | the Sv39x4 G-stage page table that maps the window and nothing else |
//! | [`bundle`] | the guest bundle (kernel, initrd, command line, RAM size) xtask writes and the hypervisor reads |
//! | [`layout`] | where the window goes in host RAM and where kernel, initrd and DTB go in guest RAM |
//! | [`dtb`] | the guest device tree (RAM, one hart, /chosen), written without an allocator |
//! | [`sbi`] | the guest's SBI calls (ecall from VS): answered, forwarded to the host firmware, or refused |
//! | [`sched`] | time-slicing vCPUs on one hart: round-robin at a quantum, run/steal/idle accounting for STA |
//! | [`vpmu`] | the guest's PMU: the `rvpmu` engine over host counters programmed through the host firmware |
//!
//! Design, memory layout and trap flow: `docs/hypervisor.md`.
//!
//! ## Layering
//!
//! | module | uses |
//! |---|---|
//! | `ram` | |
//! | `layout` | `ram` |
//! | `gstage` | `ram` |
//! | `bundle` | |
//! | `options` | |
//! | `dtb` | `ram`, `layout` |
//! | `sbi` | `ram` |
//! | `sched` | |
//! | `vpmu` | |
#![cfg_attr(not(test), no_std)]
#![deny(missing_docs)]

pub mod bundle;
pub mod dtb;
pub mod gstage;
pub mod layout;
pub mod options;
pub mod ram;
pub mod sbi;
pub mod sched;
pub mod vpmu;

/// Whether a `riscv,isa` string (`rv64imafdch_zicsr_...`) names the
/// single-letter extension `letter` (lower case) in its base part.
pub fn isa_has_letter(isa: &str, letter: u8) -> bool {
    let base = isa.split('_').next().unwrap_or("");
    let prefix = base.get(..4).unwrap_or("");
    if !prefix.eq_ignore_ascii_case("rv64") && !prefix.eq_ignore_ascii_case("rv32") {
        return false;
    }
    let letters = &base[4..];
    letters.bytes().any(|b| b.to_ascii_lowercase() == letter)
}

#[cfg(test)]
mod tests {
    #[test]
    fn isa_letters_are_read_from_the_base_part_only() {
        let qemu = "rv64imafdch_zic64b_zicbom_sha_shcounterenw_sstc";
        assert!(super::isa_has_letter(qemu, b'h'));
        assert!(super::isa_has_letter(qemu, b'c'));
        assert!(!super::isa_has_letter("rv64imafdc_zicsr_sha_sstc", b'h'));
        assert!(!super::isa_has_letter("imafdch", b'h'));
        assert!(super::isa_has_letter("RV64IMAFDCH", b'h'));
    }
}
