//! The linker scripts of the bare-metal programs, for their build
//! scripts (`[build-dependencies]`): one layout, each program with its own
//! load address, `.bss` alignment and any sections of its own after
//! `.bss`.
//!
//! The image is `.text` (the entry's `.text.entry` first), `.rodata`,
//! `.data`, then `.bss`, not loaded, between `__bss_start` and
//! `__bss_end` (both 16-byte aligned; the program's entry zeroes it).
//! `__image_start` and `__image_end` bound what is loaded, `__end` the
//! whole program.

use std::fmt::Write as _;
use std::path::PathBuf;

/// One binary's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Image<'a> {
    /// The binary (cargo's `[[bin]]` name).
    pub bin: &'a str,
    /// Where it is loaded and linked.
    pub origin: u64,
    /// Alignment of `.bss` (a power of two, at least 16).
    pub bss_align: u64,
    /// Linker-script text placed after `.bss` (sections or symbols of the
    /// program's own), or "".
    pub extra: &'a str,
}

impl Image<'_> {
    /// The linker script.
    pub fn script(&self) -> String {
        assert!(
            self.bss_align.is_power_of_two() && self.bss_align >= 16,
            "bss_align {:#x} of {} is not a power of two >= 16",
            self.bss_align,
            self.bin
        );
        let mut s = String::new();
        let _ = write!(
            s,
            "/* {bin}: linked and loaded at {origin:#x}. Written by its build script. */\n\
             OUTPUT_ARCH(riscv)\n\
             ENTRY(_start)\n\
             \n\
             SECTIONS\n\
             {{\n\
             \x20   . = {origin:#x};\n\
             \x20   __image_start = .;\n\
             \x20   .text : {{\n\
             \x20       KEEP(*(.text.entry))\n\
             \x20       *(.text .text.*)\n\
             \x20   }}\n\
             \x20   .rodata : ALIGN(16) {{ *(.rodata .rodata.* .srodata .srodata.*) }}\n\
             \x20   .data : ALIGN(16) {{ *(.data .data.* .sdata .sdata.*) }}\n\
             \x20   . = ALIGN(8);\n\
             \x20   __image_end = .;\n\
             \x20   .bss (NOLOAD) : ALIGN({bss_align:#x}) {{\n\
             \x20       __bss_start = .;\n\
             \x20       *(.sbss .sbss.* .bss .bss.*)\n\
             \x20       . = ALIGN(16);\n\
             \x20       __bss_end = .;\n\
             \x20   }}\n\
             {extra}\
             \x20   __end = .;\n\
             \x20   /DISCARD/ : {{ *(.eh_frame .eh_frame_hdr .comment) }}\n\
             }}\n",
            bin = self.bin,
            origin = self.origin,
            bss_align = self.bss_align,
            extra = self.extra,
        );
        s
    }
}

/// For a build script: writes each image's script to `OUT_DIR` and links
/// its binary with it, when building for a bare-metal (`none`) target;
/// on the host the binaries are stubs linked normally. `sources` are the
/// files the scripts depend on besides the build script (e.g. the file
/// `extra` was read from).
pub fn link(images: &[Image<'_>], sources: &[&str]) {
    println!("cargo:rerun-if-changed=build.rs");
    for s in sources {
        println!("cargo:rerun-if-changed={s}");
    }
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("none") {
        return;
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for image in images {
        let path = out.join(format!("{}.ld", image.bin));
        std::fs::write(&path, image.script())
            .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        println!(
            "cargo:rustc-link-arg-bin={}=-T{}",
            image.bin,
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_places_the_image_at_its_origin_with_its_extra_after_bss() {
        let s = Image {
            bin: "fw",
            origin: 0x8000_0000,
            bss_align: 4096,
            extra: "    .stacks (NOLOAD) : { . += 0x1000; }\n",
        }
        .script();
        let at = |needle: &str| s.find(needle).unwrap_or_else(|| panic!("{needle} in\n{s}"));
        assert!(at(". = 0x80000000;") < at("KEEP(*(.text.entry))"));
        assert!(at("KEEP(*(.text.entry))") < at("*(.text .text.*)"));
        assert!(at(".bss (NOLOAD) : ALIGN(0x1000)") < at("__bss_start = ."));
        assert!(at("__bss_end = .;") < at(".stacks (NOLOAD)"));
        assert!(at(".stacks (NOLOAD)") < at("__end = .;"));
        assert_eq!(s.matches('{').count(), s.matches('}').count());
    }

    #[test]
    #[should_panic(expected = "not a power of two")]
    fn refuses_a_bss_alignment_that_is_no_power_of_two() {
        Image {
            bin: "x",
            origin: 0,
            bss_align: 24,
            extra: "",
        }
        .script();
    }
}
