//! rvpmu-hv: a minimal HS-mode hypervisor, loaded by rvpmu-fw as its
//! S-mode payload (QEMU `-kernel`, at 0x80200000, `-cpu rv64,h=true`),
//! running one VS-mode guest from a bundle given as `-initrd`, or several
//! from the same bundle time-sliced on the hart (`rvpmu-hv.guests=N`).
//! Design, memory layout and trap flow: `docs/hypervisor.md`; the
//! decisions made from guest input live in the `rvpmu_hv` library
//! (`src/lib.rs`), tested on the host.
//!
//! | module | what |
//! |---|---|
//! | `console` | the hypervisor's messages through the host's DBCN |
//! | `counters` | the host counter CSRs the guest's PMU backend reads; the guest's PMU type |
//! | `switch` | the hypervisor's snapshot page, saving and restoring the guest's counters with the host firmware's snapshot, and its cost |
//! | `vcpu` | the vCPUs, one per guest: registers, VS state (kept while another guest has the hart) and SBI, in static slots |
//! | `guests` | several guests time-sliced: the scheduler's decisions carried out, STA records written |
//! | `trap` | traps from the guest: SBI calls, guest page faults, reflection |
//! | `entry` | reset entry, trap vector (calling `trap`'s `hv_trap` by symbol), entering the guest |
//! | `boot` | host DT, bundle, guest RAM, G-stage, H CSRs |
//!
//! CSRs are `rvpmu_rt::csr`'s, by name; a failure ends the machine with
//! `rvpmu_rt::runtime::halt_failure`.
//!
//! These modules are built for riscv64gc-unknown-none-elf only (each
//! file opens with `#![cfg(target_os = "none")]`); on the host the
//! program is a stub `main`.
//!
//! ## Layering
//!
//! | module | uses |
//! |---|---|
//! | `console` | |
//! | `counters` | |
//! | `switch` | `console`, `counters` |
//! | `vcpu` | `counters`, `switch` |
//! | `guests` | `console`, `switch`, `vcpu` |
//! | `trap` | `console`, `vcpu`, `guests` |
//! | `entry` | `vcpu` |
//! | `boot` | `console`, `counters`, `switch`, `vcpu`, `guests`, `entry` |
#![cfg_attr(target_os = "none", no_std, no_main)]

mod boot;
mod console;
mod counters;
mod entry;
mod guests;
mod switch;
mod trap;
mod vcpu;

#[cfg(target_os = "none")]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    console::hvprintln!("panic: {info}");
    rvpmu_rt::runtime::halt_failure()
}

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("this is a bare-metal program; run it with `cargo xtask hv`");
}
