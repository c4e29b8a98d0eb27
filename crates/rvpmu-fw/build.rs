//! Links the firmware with its linker script (`rvpmu_rt::link`; only for a
//! `none` target, the host build is a stub): where QEMU's `-bios` goes,
//! with its per-hart stacks after `.bss`.
use rvpmu_rt::link::{link, Image};

include!("src/stacks.rs");

/// The firmware's per-hart stacks (hart N's ends at `_stacks_end` - N *
/// STACK_SIZE): after `.bss`, never zeroed, since harts run on them while
/// the boot hart clears `.bss`.
fn stacks() -> String {
    format!(
        "    .stacks (NOLOAD) : ALIGN(4096) {{
        _stacks_start = .;
        . += {:#x};
        _stacks_end = .;
    }}
",
        MAX_HARTS * STACK_SIZE
    )
}

fn main() {
    link(
        &[Image {
            bin: "rvpmu-fw",
            origin: 0x8000_0000,
            bss_align: 16,
            extra: &stacks(),
        }],
        &["src/stacks.rs"],
    );
}
