//! Links the bare-metal binaries with their linker scripts (only when
//! building for a `none` target; the host build is a stub).
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=link/fw.ld");
    println!("cargo:rerun-if-changed=link/payload.ld");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("none") {
        println!("cargo:rustc-link-arg-bin=rvpmu-fw=-T{dir}/link/fw.ld");
        println!("cargo:rustc-link-arg-bin=sbi-check=-T{dir}/link/payload.ld");
    }
}
