//! Links the payload with its linker script (`rvpmu_rt::link`): loaded at
//! 0x80200000, where QEMU puts `-kernel` after the firmware. The host stub
//! links normally.
use rvpmu_rt::link::{link, Image};

fn main() {
    link(
        &[Image {
            bin: "sbi-check",
            origin: 0x8020_0000,
            bss_align: 16,
            extra: "",
        }],
        &[],
    );
}
