//! Boot: read the host device tree, find the guest bundle, place and map
//! the guest's RAM, load the guest, set up the H CSRs, enter VS-mode.
//! Any failure is reported and ends the machine with "system failure".
#![cfg(target_os = "none")]

use crate::console::hvprintln;
use crate::counters::{GuestPmu, HsCounters};
use crate::switch::{HostPage, Switch};
use crate::vcpu::{GuestRegs, Vcpu, VsCsrs, VsState, A0, A1};
use core::cell::UnsafeCell;
use rvpmu::dt::{EventMap, PmuProps};
use rvpmu::hw::Hpm;
use rvpmu::mem::SupervisorMemory;
use rvpmu::Pmu;
use rvpmu_hv::bundle::Bundle;
use rvpmu_hv::dtb::{guest_dt, GuestDt, GuestIsa};
use rvpmu_hv::gstage::{self, GStage};
use rvpmu_hv::layout::{self, Reserved};
use rvpmu_hv::options::{guest_cmdline, HostOptions, MAX_GUESTS};
use rvpmu_hv::ram::{GuestMemory, GuestRam};
use rvpmu_hv::sbi::{ConsoleLine, GuestSbi, HostExtensions};
use rvpmu_hv::vpmu::{guest_pmu_config, load_guest_event_map, HostHpm};
use rvpmu_rt::csr::{
    self, CAUSE_BREAKPOINT, CAUSE_FETCH_PAGE_FAULT, CAUSE_LOAD_PAGE_FAULT, CAUSE_MISALIGNED_FETCH,
    CAUSE_STORE_PAGE_FAULT, CAUSE_USER_ECALL, COUNTEREN_CY_TM_IR, HENVCFG_STCE, HSTATUS_HU,
    HSTATUS_SPV, HSTATUS_SPVP, HSTATUS_VTSR, HSTATUS_VTVM, HSTATUS_VTW, IRQ_LCOF, SSTATUS_FS,
    SSTATUS_SIE, SSTATUS_SPIE, SSTATUS_SPP, VS_INTERRUPTS,
};
use rvpmu_sbi::client::sbi;
use sbi_spec::{dbcn, srst};

/// VMID of guest 0 (guest g has `FIRST_VMID + g`).
const FIRST_VMID: u16 = 1;

struct Tables(UnsafeCell<GStage>);
// SAFETY: each written once by the boot path before any guest runs,
// read only by the hardware afterwards.
unsafe impl Sync for Tables {}
static GSTAGE: [Tables; MAX_GUESTS] =
    [const { Tables(UnsafeCell::new(GStage::new())) }; MAX_GUESTS];

struct LineSlot(UnsafeCell<ConsoleLine>);
// SAFETY: each slot is handed out once, as the `&'static mut` of its
// guest's console (`hv_main`); nothing else refers to it.
unsafe impl Sync for LineSlot {}
/// Each guest's console line buffer (8 KiB) when several guests share
/// the console.
static CONSOLE_LINES: [LineSlot; MAX_GUESTS] =
    [const { LineSlot(UnsafeCell::new(ConsoleLine::new())) }; MAX_GUESTS];

struct MapSlot(UnsafeCell<EventMap>);
// SAFETY: written once by `guest_pmu` before the guest runs (nothing
// refers to it then), only read through a shared reference afterwards.
unsafe impl Sync for MapSlot {}
/// The guest's event map (about 25 KiB: a static, not the stack).
static GUEST_MAP: MapSlot = MapSlot(UnsafeCell::new(EventMap::empty()));

extern "C" {
    static __image_start: u8;
    static __end: u8;
}

fn fail(what: &str) -> ! {
    hvprintln!("boot failed: {what}");
    rvpmu_rt::runtime::halt_failure()
}

/// What the host device tree says.
struct Host {
    isa: &'static str,
    /// The hart's `mmu-type`: vsatp offers the guest the same
    /// translation modes as satp.
    mmu_type: Option<&'static str>,
    /// The host's `riscv,pmu` node, for the guest's event map.
    pmu_props: Option<PmuProps<'static>>,
    /// The host counts an event on one HPM counter only (the platform
    /// quirk table or the node's property).
    one_counter_per_event: bool,
    timebase: u32,
    /// The host's /chosen bootargs (the hypervisor's options).
    bootargs: &'static str,
    /// The host's `/chosen/rng-seed` (QEMU puts 32 bytes there): each
    /// guest's seed is made from it.
    rng_seed: Option<&'static [u8]>,
    mem: (u64, u64),
    bundle: (u64, u64),
    reserved: Reserved,
}

fn read_host_dt(hartid: usize, dtb: usize) -> Host {
    // SAFETY: a1 from the firmware points at the host DTB, which stays in
    // place (the firmware reserved it) and only this hart touches
    // (`open_at` removes NOP tokens in place; the firmware's copy has none).
    let fdt = match unsafe { rvpmu_dtb::open_at(dtb as *mut u8) } {
        Ok(f) => f,
        Err(e) => {
            hvprintln!("host {e}");
            fail("no valid host device tree at a1")
        }
    };
    let me = fdt
        .find_node("/cpus")
        .into_iter()
        .flat_map(|c| c.children())
        .filter(|c| c.name.split('@').next() == Some("cpu"))
        .find(|c| {
            c.reg()
                .and_then(|mut r| r.next())
                .map(|r| r.starting_address as usize)
                == Some(hartid)
        })
        .unwrap_or_else(|| fail("this hart is not in the host device tree"));
    let isa: &'static str = me
        .property("riscv,isa")
        .and_then(|p| p.as_str())
        .unwrap_or("");
    if !rvpmu_hv::isa_has_letter(isa, b'h') {
        fail("the hart has no H extension (QEMU: -cpu rv64,h=true)");
    }
    let hv = (&raw const __image_start as u64, &raw const __end as u64);
    let mem = fdt
        .find_node("/memory")
        .and_then(|m| m.reg())
        .into_iter()
        .flatten()
        .filter_map(|r| Some((r.starting_address as u64, r.size? as u64)))
        .map(|(b, s)| (b, b + s))
        .find(|&(b, e)| b <= hv.0 && hv.1 <= e)
        .unwrap_or_else(|| fail("the hypervisor is not in a memory node's range"));
    let chosen = fdt
        .find_node("/chosen")
        .unwrap_or_else(|| fail("no /chosen in the host device tree"));
    let cell = |name| chosen.property(name).and_then(|p| p.as_usize());
    let (Some(start), Some(end)) = (cell("linux,initrd-start"), cell("linux,initrd-end")) else {
        fail("no guest bundle: give it to QEMU with -initrd (cargo xtask hv does)")
    };
    let bundle = (start as u64, end as u64);
    let bootargs = chosen
        .property("bootargs")
        .and_then(|p| p.as_str())
        .unwrap_or("");
    if bundle.0 >= bundle.1 || bundle.0 < mem.0 || bundle.1 > mem.1 {
        fail("the guest bundle is not inside host RAM");
    }
    let mut reserved = Reserved::default();
    let mut ok = reserved.add(hv.0, hv.1)
        && reserved.add(bundle.0, bundle.1)
        && reserved.add(dtb as u64, dtb as u64 + fdt.total_size() as u64);
    for r in fdt.memory_reservations() {
        ok &= reserved.add(r.address() as u64, r.address() as u64 + r.size() as u64);
    }
    if let Some(rm) = fdt.find_node("/reserved-memory") {
        for child in rm.children() {
            for r in child.reg().into_iter().flatten() {
                let (b, s) = (r.starting_address as u64, r.size.unwrap_or(0) as u64);
                ok &= reserved.add(b, b + s);
            }
        }
    }
    if !ok {
        fail("more reserved host memory ranges than the hypervisor keeps");
    }
    // The cpu node's own timebase-frequency, else its parent /cpus node's.
    let timebase = [Some(me), fdt.find_node("/cpus")]
        .into_iter()
        .flatten()
        .find_map(|n| n.property("timebase-frequency")?.as_usize())
        .unwrap_or_else(|| fail("no timebase-frequency in the host device tree"));
    let pmu_props = PmuProps::find(&fdt);
    let one_counter_per_event = pmu_props.is_some_and(|p| p.one_counter_per_event == Some(&[]))
        || rvpmu::dt::platform_quirk_of(&fdt).is_some_and(|q| q.one_counter_per_event);
    Host {
        isa,
        mmu_type: me.property("mmu-type").and_then(|p| p.as_str()),
        pmu_props,
        one_counter_per_event,
        timebase: timebase as u32,
        bootargs,
        rng_seed: chosen.property("rng-seed").map(|p| p.value),
        mem,
        bundle,
        reserved,
    }
}

/// Rust entry from `_start`: a0 = hartid, a1 = host DTB.
#[no_mangle]
extern "C" fn hv_main(hartid: usize, dtb: usize) -> ! {
    let host = read_host_dt(hartid, dtb);
    let opts = HostOptions::parse(host.bootargs).unwrap_or_else(|e| fail(e));
    let n = opts.guests;
    if n == 1 {
        hvprintln!(
            "{} on hart {hartid}: one VS-mode guest, SBI 3.0 (impl id {:#x})",
            env!("CARGO_PKG_VERSION"),
            rvpmu_rt::base::impl_id::HYPERVISOR
        );
    } else {
        hvprintln!(
            "{} on hart {hartid}: {n} VS-mode guests time-sliced, quantum {} us, SBI 3.0 (impl id {:#x})",
            env!("CARGO_PKG_VERSION"),
            opts.quantum_us,
            rvpmu_rt::base::impl_id::HYPERVISOR
        );
    }
    hvprintln!(
        "host RAM {:#x}..{:#x}, DTB at {dtb:#x}, guest bundle at {:#x}..{:#x}",
        host.mem.0,
        host.mem.1,
        host.bundle.0,
        host.bundle.1
    );
    // SAFETY: QEMU loaded the bundle at [start, end) of host RAM (checked
    // against the memory node); the hypervisor only reads it, and the
    // guests' windows are placed clear of it.
    let bytes = unsafe {
        core::slice::from_raw_parts(
            host.bundle.0 as *const u8,
            (host.bundle.1 - host.bundle.0) as usize,
        )
    };
    let bundle = Bundle::parse(bytes).unwrap_or_else(|e| fail(e.as_str()));
    let host_ext = HostExtensions {
        dbcn: sbi().base_probe_extension(dbcn::EID_DBCN).value != 0,
        srst: sbi().base_probe_extension(srst::EID_SRST).value != 0,
    };
    let mut reserved = host.reserved;
    let mut vcpus = [core::ptr::null_mut(); MAX_GUESTS];
    let mut hgatp = [0usize; MAX_GUESTS];
    let mut timer = false;
    let mut any_pmu = false;
    let fs = csr::SSTATUS.read() & SSTATUS_FS;
    for g in 0..n {
        let ram = layout::place_window(host.mem.0, host.mem.1, &reserved, bundle.ram_size)
            .unwrap_or_else(|e| fail(e.as_str()));
        if !reserved.add(ram.hpa(), ram.hpa() + ram.size()) {
            fail("more reserved host memory ranges than the hypervisor keeps");
        }
        let guest = layout::guest_layout(
            &ram,
            layout::kernel_footprint(bundle.kernel),
            bundle.initrd.len() as u64,
        )
        .unwrap_or_else(|e| fail(e.as_str()));
        // SAFETY: the window is host RAM clear of the hypervisor, the
        // bundle, the host DTB, reserved memory and the other guests'
        // windows (place_window, `reserved`), given to this guest alone;
        // no Rust object lives there.
        let mut mem = unsafe { GuestMemory::new(ram) };
        load(&mut mem, guest.kernel, bundle.kernel);
        load(&mut mem, guest.initrd.0, bundle.initrd);
        let root = map_guest(g, &ram);
        hgatp[g] = gstage::hgatp(root, FIRST_VMID + g as u16) as usize;
        if g == 0 {
            timer = setup_h_csrs(hgatp[0]);
            if n > 1 && !timer {
                fail("several guests need Sstc: the quanta are timed with stimecmp");
            }
        }
        let pmu = guest_pmu(&host, g == 0);
        if g == 0 && pmu.is_some() {
            overflow_to_guest(&host);
        }
        any_pmu |= pmu.is_some();
        let isa = GuestIsa::from_host(host.isa, timer, pmu.is_some());
        let mut args = [0u8; 1024];
        let bootargs = guest_cmdline(&mut args, bundle.cmdline, opts.guest_args(g))
            .unwrap_or_else(|| fail("a guest's command line is too long"));
        let mut dt = [0u8; 8192];
        let mut seed = [0u8; rvpmu_hv::dtb::MAX_RNG_SEED];
        let dt_len = guest_dt(
            &mut dt,
            &GuestDt {
                ram,
                layout: guest,
                timebase: host.timebase,
                isa: &isa,
                bootargs,
                rng_seed: host
                    .rng_seed
                    .map(|h| rvpmu_hv::dtb::guest_rng_seed(h, g, &mut seed)),
                mmu_type: host.mmu_type,
            },
        )
        .unwrap_or_else(|_| fail("the guest device tree does not fit (command line too long?)"));
        load(&mut mem, guest.dtb, &dt[..dt_len]);
        hvprintln!(
            "{}guest RAM {:#x}..{:#x} at host {:#x}; kernel {} bytes at {:#x}, initrd {} bytes, DTB at {:#x}{}",
            if n > 1 { GUEST_NAMES[g] } else { "" },
            ram.gpa(),
            ram.gpa_end(),
            ram.hpa(),
            bundle.kernel.len(),
            guest.kernel,
            bundle.initrd.len(),
            guest.dtb,
            if timer {
                "; timer: Sstc vstimecmp"
            } else {
                "; no timer (no Sstc)"
            }
        );
        let mut regs = GuestRegs {
            x: [0; 32],
            pc: guest.kernel as usize,
        };
        regs.x[A0] = 0; // the guest's hart id
        regs.x[A1] = guest.dtb as usize;
        let switch = if n == 1 && opts.switch_every_ms && pmu.is_some() {
            // SAFETY: the one registration, at boot.
            match unsafe { HostPage::register() } {
                Some(page) => {
                    hvprintln!("guest PMU: counters saved and restored (host snapshot at {:#x}) every 1 ms (the hypervisor's timer)", HostPage::addr());
                    Some(Switch::new(page, host.timebase as u64))
                }
                None => {
                    hvprintln!("guest PMU: the host firmware refuses a snapshot area: no switch");
                    None
                }
            }
        } else {
            None
        };
        let mut vcpu = Vcpu {
            regs,
            id: g,
            vs: VsState::initial(fs),
            // SAFETY: as for `mem` above: the window is this guest's alone.
            sbi: GuestSbi::new(
                sbi(),
                host_ext,
                VsCsrs,
                timer,
                unsafe { GuestMemory::new(ram) },
                pmu,
            ),
            switch,
        };
        if n > 1 {
            // SAFETY: each guest's line is taken once, here (g counts up).
            let line = unsafe { &mut *CONSOLE_LINES[g].0.get() };
            vcpu.sbi.tag_console(g as u8, line);
        }
        // SAFETY: once per guest, before any guest runs; the pointer goes
        // to the trap vector and the scheduler only.
        vcpus[g] = unsafe { crate::vcpu::install(vcpu) };
    }
    let v = if n == 1 {
        vcpus[0]
    } else {
        let page = if any_pmu {
            // SAFETY: the one registration, at boot (with one guest the
            // page is registered above instead, for `switch`).
            unsafe { HostPage::register() }
        } else {
            None
        };
        if any_pmu && page.is_none() {
            hvprintln!(
                "guest PMU: the host firmware refuses a snapshot area: counters are not switched"
            );
        }
        let quantum = (opts.quantum_us as u64 * host.timebase as u64 / 1_000_000).max(1);
        // SAFETY: once, before any guest runs, with the installed vCPUs.
        unsafe { crate::guests::start(vcpus, hgatp, n, quantum, host.timebase as u64, page) }
    };
    // SAFETY: the CSRs are set for VS-mode with the G-stage in place.
    unsafe { crate::entry::run_guest(v) }
}

/// "guest N: " for the boot lines of each of several guests.
const GUEST_NAMES: [&str; MAX_GUESTS] = ["guest 0: ", "guest 1: ", "guest 2: ", "guest 3: "];

/// The guest's PMU, if the host can give it one: Sscofpmf (the host
/// counters must filter modes) and host HPM counters through the host
/// firmware's PMU. hcounteren lets the guest read those of them it has
/// configured (`HostHpm` opens them as it configures them).
/// Called once, at boot (it fills `GUEST_MAP`).
fn guest_pmu(host: &Host, first: bool) -> Option<GuestPmu> {
    if !host.isa.split('_').any(|e| e == "sscofpmf") {
        hvprintln!("no PMU for the guest: the hart has no Sscofpmf");
        return None;
    }
    let Some(hw) = HostHpm::probe(sbi(), HsCounters) else {
        hvprintln!("no PMU for the guest: the host firmware gives no HPM counters");
        return None;
    };
    let present = hw.present();
    // SAFETY: the map is written only in the first call (`first`), from
    // `hv_main` before any guest runs, so that is the one write and
    // nothing refers to the map yet; afterwards it is only shared (every
    // guest gets the same map).
    let map: &'static EventMap = unsafe {
        if first {
            let map = &mut *GUEST_MAP.0.get();
            if !load_guest_event_map(map, host.pmu_props, present, host.one_counter_per_event) {
                hvprintln!("warning: the host's riscv,pmu node was rejected; the guest counts firmware events only");
            }
        }
        &*GUEST_MAP.0.get()
    };
    if first {
        hvprintln!(
            "guest PMU: host counters {present:#x} (CSR = host's), modes VS/VU only{}, firmware event SET_TIMER",
            if host.one_counter_per_event {
                ", one counter per event"
            } else {
                ""
            }
        );
    }
    Some(Pmu::new(guest_pmu_config(map), hw))
}

/// Counter overflow for the guest: the host counters' LCOFI (rvpmu-fw
/// delegates it to S-mode, i.e. HS here) is taken by the hypervisor
/// (sie.LCOFIE; with V=1 an HS-level interrupt is taken whatever
/// sstatus.SIE says, and in HS-mode itself SIE stays 0), which records
/// the overflow in the guest's engine and injects LCOFI into VS through
/// hvip bit 13 (`trap.rs`). Injecting an interrupt other than VS
/// software, timer and external needs AIA's `hvien` (Ssaia; QEMU `-cpu
/// ...,ssaia=true`): without it the guest gets no overflow interrupt
/// and the overflow stays pending in HS-mode, which leaves it disabled.
fn overflow_to_guest(host: &Host) {
    if !host.isa.split('_').any(|e| e == "ssaia") {
        hvprintln!(
            "guest PMU: no overflow interrupt for the guest (the hart has no Ssaia for hvien)"
        );
        return;
    }
    csr::HVIEN.write(1 << IRQ_LCOF); // hvien: vsip/vsie bit 13 are hvip's
    if csr::HVIEN.read() & 1 << IRQ_LCOF == 0 {
        hvprintln!("guest PMU: no overflow interrupt for the guest (hvien bit 13 does not stick)");
        return;
    }
    csr::SIE.set(1 << IRQ_LCOF);
    hvprintln!(
        "guest PMU: counter overflow taken in HS-mode and injected as LCOFI (hvien/hvip bit 13)"
    );
}

fn load(mem: &mut GuestMemory, gpa: u64, data: &[u8]) {
    if mem.write(gpa, data).is_err() {
        fail("a guest image does not fit guest RAM");
    }
}

/// Map guest `n`'s RAM in its G-stage table; returns the root's address.
fn map_guest(n: usize, ram: &GuestRam) -> u64 {
    // SAFETY: the only borrow of guest n's tables, before any guest runs;
    // after it only the hardware reads them (through hgatp).
    let g = unsafe { &mut *GSTAGE[n].0.get() };
    if let Err(e) = g.map(ram) {
        hvprintln!("G-stage: {e:?}");
        fail("cannot map the guest's RAM");
    }
    g.root.0.as_ptr() as u64
}

/// Delegation, counters, timer and translation for the guest; returns
/// whether the guest has its timer (henvcfg.STCE sticks only when the
/// hart has Sstc and the firmware set menvcfg.STCE).
fn setup_h_csrs(hgatp: usize) -> bool {
    // Exceptions the guest handles itself, straight from the hardware:
    // those the firmware delegates to HS-mode (medeleg) and that are the
    // guest's own. The rest the firmware redirects here (`trap.rs`).
    csr::HEDELEG.write(
        1 << CAUSE_MISALIGNED_FETCH
            | 1 << CAUSE_BREAKPOINT
            | 1 << CAUSE_USER_ECALL
            | 1 << CAUSE_FETCH_PAGE_FAULT
            | 1 << CAUSE_LOAD_PAGE_FAULT
            | 1 << CAUSE_STORE_PAGE_FAULT,
    );
    csr::HIDELEG.write(VS_INTERRUPTS);
    csr::HVIP.write(0); // hvip: nothing injected
    csr::HIE.write(0); // hie: the guest enables its own (vsie)
    csr::HCOUNTEREN.write(COUNTEREN_CY_TM_IR);
    csr::HTIMEDELTA.write(0); // htimedelta: the guest's time is the host's
    csr::HENVCFG.write(HENVCFG_STCE);
    let timer = csr::HENVCFG.read() & HENVCFG_STCE != 0;
    if timer {
        csr::VSTIMECMP.write(usize::MAX); // no timer event until the guest asks
    }
    csr::VSATP.write(0); // vsatp: the guest starts untranslated
                         // The guest's FP state starts as a native supervisor's would (what
                         // the firmware gave this hart); HS-mode's own FS must be on for VS
                         // FP to work at all (the hypervisor itself uses no FP registers).
    let fs = csr::SSTATUS.read() & SSTATUS_FS;
    csr::VSSTATUS.write(fs);
    csr::SSTATUS.set(SSTATUS_FS);
    csr::HGATP.write(hgatp);
    if csr::HGATP.read() >> 60 != gstage::HGATP_MODE_SV39X4 as usize {
        fail("the hart does not offer Sv39x4 G-stage translation");
    }
    csr::hfence_gvma_all();
    // sret enters VS-mode: SPV = 1 (virtual), SPP = 1 (supervisor),
    // interrupts off in VS-mode until the guest enables them; no traps of
    // wfi, sret or satp accesses (VTW, VTSR, VTVM), no HU.
    let hs = csr::HSTATUS.read() & !(HSTATUS_VTW | HSTATUS_VTSR | HSTATUS_VTVM | HSTATUS_HU);
    csr::HSTATUS.write(hs | HSTATUS_SPV | HSTATUS_SPVP);
    let s = csr::SSTATUS.read() & !(SSTATUS_SIE | SSTATUS_SPIE);
    csr::SSTATUS.write(s | SSTATUS_SPP);
    timer
}
