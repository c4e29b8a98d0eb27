//! What runs on the machines, and reading what it says: Linux guests
//! booted with the project's kernel and initramfs and their /init's plan
//! and result lines (protocol: crate `e2e_proto`), the perf tool's output
//! in them, the `cargo xtask run` demo, the interactive shell, guests of
//! the hypervisor and their checks, the same Linux as a KVM host running
//! KVM guests and what KVM decides for them (sampling, steal time, guest
//! switches), the S-mode conformance kernel, and bare-metal C programs on
//! hpmtrace's C API.

pub mod baremetal;
pub mod conformance;
pub mod demo;
pub mod hv;
pub mod hvcheck;
pub mod kvm;
pub mod kvmcheck;
pub mod linux;
pub mod perftool;
pub mod shell;
