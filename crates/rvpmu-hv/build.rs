//! Links the hypervisor with its linker script (`rvpmu_rt::link`; only for
//! a `none` target, on the host it is a stub): where QEMU puts `-kernel`
//! (host-physical 0x80200000; its `.bss` holds the G-stage tables, 16 KiB
//! aligned).
use rvpmu_rt::link::{link, Image};

fn main() {
    link(
        &[Image {
            bin: "rvpmu-hv",
            origin: 0x8020_0000,
            bss_align: 16384,
            extra: "",
        }],
        &[],
    );
}
