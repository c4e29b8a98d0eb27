//! Fuzz the DTB reader over whole blobs: arbitrary bytes through
//! `rvpmu_dtb::open` and then every lookup the firmware's platform parse,
//! the S-mode kernels and the engine's `riscv,pmu` binding make. No input
//! may panic: a blob is refused with an error that points inside it, or it
//! opens, has no NOP token left, opens again without a write, and every
//! walk over it ends.
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run dtb` from the repository root
//! (seed it with a few real trees: `mkdir -p fuzz/corpus/dtb` and copy
//! QEMU's, e.g. `target/dtcheck/qemu-virt.dtb` after `cargo xtask dt-check
//! --qemu`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rvpmu::dt::{platform_quirk_of, EventMap, PmuProps};

fuzz_target!(|data: &[u8]| {
    let mut blob = data.to_vec();
    let fdt = match rvpmu_dtb::open(&mut blob) {
        Ok(f) => f,
        Err(e) => {
            assert!(e.offset <= data.len(), "{e} outside {} bytes", data.len());
            assert_eq!(blob, data, "a refused blob is written");
            let _ = e.to_string();
            return;
        }
    };
    // The firmware's platform parse (crates/rvpmu-fw/src/platform.rs).
    let mut phandles = 0u32;
    for node in fdt.all_nodes() {
        for p in node.properties() {
            let _ = (p.name, p.as_usize(), p.as_str());
        }
        if let Some(reg) = node.reg() {
            for r in reg.take(64) {
                let _ = (r.starting_address, r.size);
            }
        }
        if let Some(c) = node.compatible() {
            let _ = c.all().count();
        }
        if let Some(v) = node.property("regmap").and_then(|p| p.as_usize()) {
            phandles += 1;
            if phandles <= 4 {
                let _ = fdt.find_phandle(v as u32).map(|n| n.reg().map(|mut r| r.next()));
            }
        }
    }
    // The S-mode kernels and the hypervisor.
    for path in ["/", "/chosen", "/cpus", "/memory", "/reserved-memory", "/soc/clint"] {
        if let Some(n) = fdt.find_node(path) {
            for c in n.children() {
                let _ = c.reg().and_then(|mut r| r.next());
                let _ = c.property("riscv,isa").and_then(|p| p.as_str());
            }
        }
    }
    for r in fdt.memory_reservations().take(64) {
        let _ = (r.address(), r.size());
    }
    // The engine's binding.
    let _ = PmuProps::find(&fdt);
    let _ = platform_quirk_of(&fdt);
    let _ = EventMap::from_fdt(&fdt);
    // Opened means normalised: a second open removes nothing.
    let again = blob.clone();
    assert_eq!(rvpmu_dtb::normalise(&mut blob), Ok(0));
    assert_eq!(blob, again);
});
