//! Bare-metal crate: built for riscv64gc-unknown-none-elf by `cargo xtask`.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("this is a bare-metal program; build it with `cargo xtask`");
}
