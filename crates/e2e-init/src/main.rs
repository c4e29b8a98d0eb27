//! `/init` of the end-to-end initramfs: a static riscv64 Linux program that
//! runs one perf scenario chosen on the kernel command line
//! (`rvpmu.mode=boot|demo|sampling|stress|fwevents|steal|trace`), prints a human report
//! and `RVPMU-RESULT {json}` lines for `cargo xtask`, then powers off.
//!
//! On any other target the program only explains itself: it is a guest
//! binary, built by `cargo xtask run` for riscv64gc-unknown-linux-gnu.

// On the host only the unit tests of these modules run; the guest code
// uses the rest.
#![cfg_attr(
    not(all(target_os = "linux", target_arch = "riscv64")),
    allow(dead_code)
)]

mod cmdline;
mod json;
mod procstat;

#[cfg(all(target_os = "linux", target_arch = "riscv64"))]
mod guest;

#[cfg(all(target_os = "linux", target_arch = "riscv64"))]
fn main() {
    guest::main()
}

#[cfg(not(all(target_os = "linux", target_arch = "riscv64")))]
fn main() {
    // Keep the host-only items referenced so the host build stays warning-free.
    let _ = cmdline::Params::parse("");
    let _ = json::Obj::new().f64("x", 0.0).finish();
    let _ = procstat::parse("").map(|l| procstat::delta(&l, &l, None).map(|d| d.share()));
    eprintln!(
        "e2e-init is the /init of the riscv64 guest; build and boot it with `cargo xtask run`"
    );
    std::process::exit(2);
}
