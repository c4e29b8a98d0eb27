//! Links the bare-metal kernel with its own script (load address
//! 0x80200000, where QEMU puts `-kernel` after a small firmware). The host
//! stub links normally.
fn main() {
    println!("cargo:rerun-if-changed=link.x");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("none") {
        let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
        println!("cargo:rustc-link-arg=-T{dir}/link.x");
    }
}
