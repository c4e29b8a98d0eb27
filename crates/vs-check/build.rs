//! Links the guest with its linker script (`rvpmu_rt::link`): at the
//! guest-physical address rvpmu-hv enters its guests at (0x80200000). The
//! host stub links normally.
use rvpmu_rt::link::{link, Image};

fn main() {
    link(
        &[Image {
            bin: "vs-check",
            origin: 0x8020_0000,
            bss_align: 4096,
            extra: "",
        }],
        &[],
    );
}
