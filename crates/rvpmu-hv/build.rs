//! Links the bare-metal binaries with their scripts (only for a `none`
//! target; on the host both are stubs): the hypervisor where QEMU puts
//! `-kernel` (host-physical 0x80200000), vs-check at the guest-physical
//! address the hypervisor enters its guests at (also 0x80200000).
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=link/hv.ld");
    println!("cargo:rerun-if-changed=link/guest.ld");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("none") {
        println!("cargo:rustc-link-arg-bin=rvpmu-hv=-T{dir}/link/hv.ld");
        println!("cargo:rustc-link-arg-bin=vs-check=-T{dir}/link/guest.ld");
    }
}
