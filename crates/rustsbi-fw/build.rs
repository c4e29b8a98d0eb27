//! Links the firmware with its linker script (`rvpmu_rt::link`; only for a
//! `none` target): at QEMU's `-bios` address, its per-hart stacks after
//! `.bss`.
use rvpmu_rt::link::{link, Image};

include!("src/stacks.rs");

fn main() {
    let stacks = format!(
        "    .stacks (NOLOAD) : ALIGN(4096) {{\n        . += {:#x};\n        _stacks_end = .;\n    }}\n",
        MAX_HARTS * STACK_SIZE
    );
    link(
        &[Image {
            bin: "rustsbi-fw",
            origin: 0x8000_0000,
            bss_align: 16,
            extra: &stacks,
        }],
        &["src/stacks.rs"],
    );
}
