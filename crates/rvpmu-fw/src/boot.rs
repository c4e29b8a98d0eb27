//! Cold boot (one hart: platform, device tree, release the others) and the
//! per-hart M-mode setup every hart does before running S-mode code.
#![cfg(target_os = "none")]

use crate::console::Out;
use crate::layout;
use crate::machine::{self, HartLocal};
use crate::platform::{self, Features, Platform};
use rvpmu_rt::csr::{
    self, CAUSE_BREAKPOINT, CAUSE_FETCH_GUEST_PAGE_FAULT, CAUSE_FETCH_PAGE_FAULT,
    CAUSE_LOAD_GUEST_PAGE_FAULT, CAUSE_LOAD_PAGE_FAULT, CAUSE_MISALIGNED_FETCH,
    CAUSE_STORE_GUEST_PAGE_FAULT, CAUSE_STORE_PAGE_FAULT, CAUSE_USER_ECALL, CAUSE_VIRTUAL_INSN,
    CAUSE_VS_ECALL, MENVCFG_ADUE, MENVCFG_CBCFE, MENVCFG_CBIE_INV, MENVCFG_CBZE, MENVCFG_PBMTE,
    MENVCFG_STCE, MIP_LCOFIP, MIP_MSIP, MIP_SEIP, MIP_SSIP, MIP_STIP,
};

/// Rust entry from `_start`, on the hart's own stack.
pub extern "C" fn fw_main(hartid: usize, dtb: usize, info: usize) -> ! {
    let boot = match platform::boot_info(info) {
        Ok(b) => b,
        Err(e) => boot_failure(e),
    };
    let winner = boot.boot_hart.unwrap_or_else(|| machine::lottery(hartid));
    if hartid != winner {
        let ready = machine::wait_for_platform();
        if !ready.platform().hart_valid(hartid) {
            park();
        }
        // SAFETY: once, on this hart, before any trap; `stop_and_wait`
        // leaves M-mode only through `enter_supervisor`.
        let hart = unsafe { hart_init(ready, hartid) };
        crate::hsm::stop_and_wait(hartid, hart);
    }
    // SAFETY: no hart has touched .bss yet: the others wait on `.data`.
    unsafe { layout::zero_bss() };
    // SAFETY: a1 from the loader points at the DTB, in DRAM the firmware
    // owns until it enters S-mode (`open_at` removes NOP tokens in place).
    let fdt = match unsafe { rvpmu_dtb::open_at(dtb as *mut u8) } {
        Ok(f) => f,
        Err(e) => {
            Out(crate::console::DEFAULT_UART)
                .str("rvpmu-fw: device tree at ")
                .hex(dtb)
                .str(": ")
                .str(e.problem.what())
                .str(" at byte ")
                .hex(e.offset)
                .str("\n");
            boot_failure("no valid device tree at a1")
        }
    };
    let (p, pmu_node) = match platform::parse(&fdt, dtb, &boot, hartid) {
        Ok(r) => r,
        Err(e) => boot_failure(e),
    };
    let present = crate::pmu::present_counters();
    crate::pmu::load_event_map(
        // SAFETY: the boot hart, once, before `publish`; the borrow ends
        // with this call.
        unsafe { machine::event_map_mut() },
        pmu_node,
        present,
        p.pmu_quirk,
        &Out(p.uart),
    );
    reserve_firmware(&p);
    banner(&p, present);
    let next = p.next_addr;
    let ready = machine::publish(p);
    // SAFETY: once, on this hart, before any trap; the borrow is not used
    // after `enter_supervisor`.
    let hart = unsafe { hart_init(ready, hartid) };
    crate::timer::arm_steal(hartid, hart);
    // SAFETY: the next stage is entered in S-mode as fw_dynamic promises.
    unsafe { crate::frame::enter_supervisor(hartid, dtb, next) }
}

fn park() -> ! {
    loop {
        // SAFETY: stalling only.
        unsafe { core::arch::asm!("wfi") };
    }
}

fn boot_failure(what: &str) -> ! {
    Out(crate::console::DEFAULT_UART)
        .str("rvpmu-fw: boot failed: ")
        .str(what)
        .str("\n");
    crate::power::fail(rvpmu_rt::exit::BOOT_FAILED)
}

/// Add the firmware's no-map reservation to the DTB, growing it in place
/// into free DRAM after it (not over the initrd).
fn reserve_firmware(p: &Platform) {
    let dtb = p.dtb as u64;
    let Some(region) = p.memory().iter().find(|r| r.contains(dtb, 1)) else {
        boot_failure("the DTB is not in DRAM; cannot add /reserved-memory")
    };
    let mut limit = region.end();
    if let Some(i) = p.initrd {
        if i.base >= dtb {
            limit = limit.min(i.base);
        }
    }
    if p.firmware.base >= dtb {
        limit = limit.min(p.firmware.base);
    }
    // SAFETY: [dtb, limit) is DRAM that holds the DTB and free space after
    // it; nothing else runs yet.
    if let Err(e) = unsafe {
        crate::dtpatch::reserve(
            p.dtb,
            (limit - dtb) as usize,
            p.firmware.base,
            p.firmware.size,
        )
    } {
        boot_failure(e.as_str());
    }
}

fn banner(p: &Platform, counters: u32) {
    let o = Out(p.uart);
    let harts = (0..layout::MAX_HARTS).filter(|&h| p.hart_valid(h)).count();
    o.str("rvpmu-fw ")
        .str(env!("CARGO_PKG_VERSION"))
        .str(": SBI 3.0, ")
        .dec(harts)
        .str(" hart(s), boot hart ");
    o.dec(p.boot_hart)
        .str(", firmware ")
        .hex(p.firmware.base as usize)
        .str("+")
        .hex(p.firmware.size as usize);
    o.str(" reserved, counters ").hex(counters as usize);
    if machine::event_map().one_counter_per_event() {
        // Why config_matching refuses a second HPM counter for an event.
        o.str(", one counter per event");
    }
    o.str(", next stage ").hex(p.next_addr).str(" (S)\n");
}

/// M-mode state of one hart: delegation, counters, envcfg, PMP, timer.
/// Returns the hart's private state, borrowed for the rest of its M-mode
/// setup (until it enters S-mode).
///
/// # Safety
///
/// Called once per hart, by hart `me` itself, before it takes any trap;
/// the returned borrow is not used once the hart has entered S-mode.
unsafe fn hart_init(ready: machine::Ready, me: usize) -> &'static mut HartLocal {
    let p = ready.platform();
    let f = p.hart_features(me);

    let mut exceptions = 1 << CAUSE_MISALIGNED_FETCH
        | 1 << CAUSE_BREAKPOINT
        | 1 << CAUSE_USER_ECALL
        | 1 << CAUSE_FETCH_PAGE_FAULT
        | 1 << CAUSE_LOAD_PAGE_FAULT
        | 1 << CAUSE_STORE_PAGE_FAULT;
    if f.has(Features::H) {
        exceptions |= 1 << CAUSE_VS_ECALL
            | 1 << CAUSE_FETCH_GUEST_PAGE_FAULT
            | 1 << CAUSE_LOAD_GUEST_PAGE_FAULT
            | 1 << CAUSE_VIRTUAL_INSN
            | 1 << CAUSE_STORE_GUEST_PAGE_FAULT;
    }
    csr::MEDELEG.write(exceptions);
    let mut irqs = MIP_SSIP | MIP_STIP | MIP_SEIP;
    if f.has(Features::SSCOFPMF) {
        irqs |= MIP_LCOFIP;
    }
    csr::MIDELEG.write(irqs);

    let present = crate::pmu::present_counters();
    // S-mode reads cycle, time, instret and the HPM counters directly.
    csr::MCOUNTEREN.write(0xffff_ffff);

    let mut envcfg = 0;
    if f.has(Features::SSTC) {
        envcfg |= MENVCFG_STCE;
    }
    if f.has(Features::SVPBMT) {
        envcfg |= MENVCFG_PBMTE;
    }
    if f.has(Features::ZICBOM) {
        envcfg |= MENVCFG_CBIE_INV | MENVCFG_CBCFE;
    }
    if f.has(Features::ZICBOZ) {
        envcfg |= MENVCFG_CBZE;
    }
    if f.has(Features::SVADU) && !f.has(Features::SVADE) {
        envcfg |= MENVCFG_ADUE;
    }
    if envcfg != 0 {
        csr::MENVCFG.write(envcfg);
    }

    // PMP: entry 0 denies the firmware region to S/U, entry 1 allows the rest.
    const NAPOT: usize = 3 << 3;
    const RWX: usize = 7;
    let (base, size) = (p.firmware.base as usize, p.firmware.size as usize);
    csr::PMPADDR0.write((base >> 2) | ((size >> 3) - 1));
    csr::PMPADDR1.write(usize::MAX);
    csr::PMPCFG0.write(NAPOT | (NAPOT | RWX) << 8);
    // SAFETY: required after PMP changes; no memory effects.
    unsafe { core::arch::asm!("sfence.vma") };

    // SAFETY: the caller's contract: once, on hart `me` itself, before it
    // takes any trap.
    crate::frame::set_hart(unsafe { machine::init_local(ready, me, f, present) });
    // SAFETY: after `set_hart`; the caller's contract makes it the only
    // borrow until the hart enters S-mode, and unused after that.
    let hart = unsafe { crate::frame::this_hart() };
    crate::timer::disarm(me, hart);
    csr::MIE.write(MIP_MSIP);
    hart
}
