//! Links the bare-metal binaries with their linker scripts
//! (`rvpmu_rt::link`; only for a `none` target, on the host both are
//! stubs): the hypervisor where QEMU puts `-kernel` (host-physical
//! 0x80200000; its `.bss` holds the G-stage tables, 16 KiB aligned),
//! vs-check at the guest-physical address the hypervisor enters its guests
//! at (also 0x80200000).
use rvpmu_rt::link::{link, Image};

fn main() {
    link(
        &[
            Image {
                bin: "rvpmu-hv",
                origin: 0x8020_0000,
                bss_align: 16384,
                extra: "",
            },
            Image {
                bin: "vs-check",
                origin: 0x8020_0000,
                bss_align: 4096,
                extra: "",
            },
        ],
        &[],
    );
}
