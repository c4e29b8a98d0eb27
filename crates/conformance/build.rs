//! Links the bare-metal kernel with its linker script (`rvpmu_rt::link`):
//! loaded at 0x80200000, where QEMU puts `-kernel` after a small firmware.
//! The host stub links normally.
use rvpmu_rt::link::{link, Image};

fn main() {
    link(
        &[Image {
            bin: "conformance",
            origin: 0x8020_0000,
            bss_align: 4096,
            extra: "",
        }],
        &[],
    );
}
