//! The firmware's only mutable global state: the per-hart table (HSM state,
//! inter-hart message slots, hart-private state) plus the write-once
//! platform description, and the boot hand-off words.

use crate::csr::{self, csr_clear, csr_read, csr_set, hartid, MIP_SSIP};
use crate::layout::MAX_HARTS;
use crate::platform::{Features, Platform};
use crate::pmu::{self, HartPerf};
use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use rvpmu::dt::EventMap;
use rvpmu::event::FwEvent;
use sbi_spec::hsm::hart_state;

/// Boot hand-off. Nonzero initial values keep these in `.data`, which QEMU
/// reloads on every reset, so they are valid before `.bss` is cleared.
struct BootSync {
    stage: AtomicUsize,
    lottery: AtomicUsize,
}
const STAGE_COLD: usize = 1;
const STAGE_READY: usize = 2;
const NO_WINNER: usize = usize::MAX;
static BOOT: BootSync = BootSync {
    stage: AtomicUsize::new(STAGE_COLD),
    lottery: AtomicUsize::new(NO_WINNER),
};

/// First hart to call this wins; returns the winner.
pub fn lottery(me: usize) -> usize {
    match BOOT
        .lottery
        .compare_exchange(NO_WINNER, me, AcqRel, Acquire)
    {
        Ok(_) => me,
        Err(w) => w,
    }
}

/// Back to the cold-boot state, before a reset.
pub fn rearm_boot() {
    BOOT.lottery.store(NO_WINNER, Release);
    BOOT.stage.store(STAGE_COLD, Release);
}

/// Messages a hart finds in its `pending` word when its MSIP fires.
const MSG_IPI: usize = 1 << 0;
const MSG_FENCE: usize = 1 << 1;
const MSG_START: usize = 1 << 2;

/// A remote fence request, one slot per (target, sender) pair.
struct FenceSlot {
    busy: AtomicBool,
    kind: AtomicUsize,
    start: AtomicUsize,
    size: AtomicUsize,
    /// ASID for the *_ASID kinds, VMID for HFENCE_GVMA_VMID, the sender's
    /// hgatp VMID field for the VVMA kinds.
    id: AtomicUsize,
}

/// What a remote fence asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum FenceKind {
    I = 0,
    Vma,
    VmaAsid,
    GvmaVmid,
    Gvma,
    VvmaAsid,
    Vvma,
}

impl FenceKind {
    fn from_raw(v: usize) -> Self {
        [
            Self::I,
            Self::Vma,
            Self::VmaAsid,
            Self::GvmaVmid,
            Self::Gvma,
            Self::VvmaAsid,
            Self::Vvma,
        ][v.min(6)]
    }
    /// Firmware events (sent, received) for this kind.
    fn events(self) -> (FwEvent, FwEvent) {
        match self {
            Self::I => (FwEvent::FenceISent, FwEvent::FenceIReceived),
            Self::Vma => (FwEvent::SfenceVmaSent, FwEvent::SfenceVmaReceived),
            Self::VmaAsid => (FwEvent::SfenceVmaAsidSent, FwEvent::SfenceVmaAsidReceived),
            Self::GvmaVmid => (FwEvent::HfenceGvmaVmidSent, FwEvent::HfenceGvmaVmidReceived),
            Self::Gvma => (FwEvent::HfenceGvmaSent, FwEvent::HfenceGvmaReceived),
            Self::VvmaAsid => (FwEvent::HfenceVvmaAsidSent, FwEvent::HfenceVvmaAsidReceived),
            Self::Vvma => (FwEvent::HfenceVvmaSent, FwEvent::HfenceVvmaReceived),
        }
    }
}

/// A fence to run on some hart.
#[derive(Clone, Copy)]
pub struct Fence {
    pub kind: FenceKind,
    pub start: usize,
    pub size: usize,
    pub id: usize,
}

/// State only the owning hart touches.
pub struct HartLocal {
    pub perf: HartPerf,
    /// Supervisor timer deadline kept in mtimecmp (harts without Sstc).
    pub s_deadline: u64,
    /// Next noisy-neighbour period (`steal.rs`), u64::MAX when off.
    pub steal_deadline: u64,
}

/// One hart's entry in the table.
pub struct HartSlot {
    hsm: AtomicUsize,
    start_addr: AtomicUsize,
    start_arg: AtomicUsize,
    pending: AtomicUsize,
    fences: [FenceSlot; MAX_HARTS],
    local: UnsafeCell<MaybeUninit<HartLocal>>,
}

/// The table and the platform it serves.
pub struct Machine {
    platform: UnsafeCell<MaybeUninit<Platform>>,
    /// The riscv,pmu event map (~25 KiB), filled by the boot hart in place.
    event_map: UnsafeCell<EventMap>,
    console_lock: AtomicBool,
    harts: [HartSlot; MAX_HARTS],
}

// SAFETY: `platform` is written once by the boot hart before BOOT.stage
// becomes READY and only read afterwards; each `local` is touched only by its
// own hart; everything else is atomic.
unsafe impl Sync for Machine {}

#[allow(clippy::declare_interior_mutable_const)]
const FENCE_SLOT: FenceSlot = FenceSlot {
    busy: AtomicBool::new(false),
    kind: AtomicUsize::new(0),
    start: AtomicUsize::new(0),
    size: AtomicUsize::new(0),
    id: AtomicUsize::new(0),
};
#[allow(clippy::declare_interior_mutable_const)]
const HART_SLOT: HartSlot = HartSlot {
    hsm: AtomicUsize::new(0),
    start_addr: AtomicUsize::new(0),
    start_arg: AtomicUsize::new(0),
    pending: AtomicUsize::new(0),
    fences: [FENCE_SLOT; MAX_HARTS],
    local: UnsafeCell::new(MaybeUninit::uninit()),
};

static MACHINE: Machine = Machine {
    platform: UnsafeCell::new(MaybeUninit::uninit()),
    event_map: UnsafeCell::new(EventMap::empty()),
    console_lock: AtomicBool::new(false),
    harts: [HART_SLOT; MAX_HARTS],
};

/// The event map, for the boot hart to fill before `publish`.
#[allow(clippy::mut_from_ref)]
pub fn event_map_mut() -> &'static mut EventMap {
    // SAFETY: only the boot hart calls this, before STAGE_READY.
    unsafe { &mut *MACHINE.event_map.get() }
}

/// The shared, read-only event map (after `publish`).
pub fn event_map() -> &'static EventMap {
    // SAFETY: written before STAGE_READY, read-only afterwards.
    unsafe { &*MACHINE.event_map.get() }
}

/// Publish the platform and release the other harts (boot hart only, once).
pub fn publish(p: Platform) {
    // SAFETY: only the boot hart runs this, before STAGE_READY.
    unsafe { (*MACHINE.platform.get()).write(p) };
    let p = platform();
    for (id, slot) in MACHINE.harts.iter().enumerate() {
        let state = if id == p.boot_hart {
            hart_state::STARTED
        } else {
            hart_state::STOPPED
        };
        slot.hsm.store(state, Relaxed);
    }
    BOOT.stage.store(STAGE_READY, Release);
    for id in 0..MAX_HARTS {
        if id != p.boot_hart && p.hart_valid(id) {
            send_msip(id);
        }
    }
}

/// Wait (secondary harts) until the boot hart has published the platform.
pub fn wait_for_platform() {
    csr_set!(mie, csr::MIP_MSIP);
    while BOOT.stage.load(Acquire) != STAGE_READY {
        // SAFETY: wfi only stalls; MSIP from `publish` wakes us.
        unsafe { core::arch::asm!("wfi") };
    }
}

/// The platform; only valid after `publish` (every trap handler runs after).
pub fn platform() -> &'static Platform {
    // SAFETY: written once before STAGE_READY, read-only afterwards.
    unsafe { (*MACHINE.platform.get()).assume_init_ref() }
}

/// The platform if boot got that far (for fatal-error reports).
pub fn platform_if_ready() -> Option<&'static Platform> {
    (BOOT.stage.load(Acquire) == STAGE_READY).then(platform)
}

/// Set up the calling hart's private state (once per hart, at its init).
pub fn init_local(me: usize, features: Features, present_counters: u32) {
    let perf = pmu::new_hart(features, present_counters);
    // SAFETY: each hart initializes only its own slot, before using it.
    unsafe {
        (*MACHINE.harts[me].local.get()).write(HartLocal {
            perf,
            s_deadline: u64::MAX,
            steal_deadline: u64::MAX,
        })
    };
    crate::trap::set_hart_pmu(&mut local().perf.pmu);
}

/// The calling hart's private state. Callers keep the borrow short and
/// never hold two at once.
#[allow(clippy::mut_from_ref)]
pub fn local() -> &'static mut HartLocal {
    // SAFETY: initialized by init_local before the hart takes any trap;
    // only the owning hart reaches its slot.
    unsafe { (*MACHINE.harts[hartid()].local.get()).assume_init_mut() }
}

/// Run `f` with the console to ourselves (whole DBCN writes stay together).
pub fn with_console<R>(f: impl FnOnce(&crate::console::Uart) -> R) -> R {
    while MACHINE.console_lock.swap(true, Acquire) {
        core::hint::spin_loop();
    }
    let r = f(&platform().uart);
    MACHINE.console_lock.store(false, Release);
    r
}

pub fn send_msip(hart: usize) {
    // SAFETY: the MSIP word of a hart the DT lists, in the CLINT/MSWI.
    unsafe { core::ptr::write_volatile((platform().msip + 4 * hart) as *mut u32, 1) };
}

fn clear_msip(hart: usize) {
    // SAFETY: as send_msip.
    unsafe { core::ptr::write_volatile((platform().msip + 4 * hart) as *mut u32, 0) };
}

/// HSM state of a hart (any index; absent harts read as their slot says).
pub fn hsm_state(hart: usize) -> usize {
    MACHINE.harts[hart].hsm.load(Acquire)
}

fn set_hsm_state(hart: usize, state: usize) {
    MACHINE.harts[hart].hsm.store(state, Release);
}

/// Whether a hart runs supervisor code that messages must reach.
fn is_running(hart: usize) -> bool {
    matches!(hsm_state(hart), hart_state::STARTED | hart_state::SUSPENDED)
}

/// Deliver a supervisor software interrupt to `target`. The IPI firmware
/// events count only what crosses harts ("to/from other hart"), so a
/// hart's IPI to itself is neither sent nor received.
pub fn send_ipi(me: usize, target: usize) {
    if target == me {
        csr_set!(mip, MIP_SSIP);
    } else if is_running(target) {
        pmu::record(FwEvent::IpiSent);
        MACHINE.harts[target].pending.fetch_or(MSG_IPI, AcqRel);
        send_msip(target);
    }
}

/// Run `fence` on every hart in `targets` (a bit per hart id) and return
/// when all have done it. Stopped harts are skipped: they flush on start.
pub fn remote_fence(me: usize, targets: u64, fence: Fence) {
    let (sent, _) = fence.kind.events();
    let mut posted = 0u64;
    for t in 0..MAX_HARTS {
        if targets & (1 << t) == 0 {
            continue;
        }
        if t == me {
            // Local work, not a request to another hart: not counted.
            execute_fence(&fence);
        } else if is_running(t) {
            pmu::record(sent);
            let slot = &MACHINE.harts[t].fences[me];
            slot.kind.store(fence.kind as usize, Relaxed);
            slot.start.store(fence.start, Relaxed);
            slot.size.store(fence.size, Relaxed);
            slot.id.store(fence.id, Relaxed);
            slot.busy.store(true, Release);
            MACHINE.harts[t].pending.fetch_or(MSG_FENCE, AcqRel);
            send_msip(t);
            posted |= 1 << t;
        }
    }
    for t in 0..MAX_HARTS {
        if posted & (1 << t) != 0 {
            // Serve our own queue while waiting, or two harts fencing each
            // other would wait forever.
            // The target's completion MSIP wakes us; sleeping (rather than
            // spinning) also lets QEMU run the target hart right away.
            loop {
                process_messages(me, true);
                if !MACHINE.harts[t].fences[me].busy.load(Acquire) {
                    break;
                }
                // SAFETY: wfi only stalls; MSIP (enabled in mie) wakes us.
                unsafe { core::arch::asm!("wfi") };
            }
        }
    }
}

/// Execute a fence locally.
fn execute_fence(f: &Fence) {
    const FULL_FLUSH_PAGES: usize = 64;
    let whole =
        (f.start == 0 && f.size == 0) || f.size == usize::MAX || f.size / 4096 > FULL_FLUSH_PAGES;
    // SAFETY: fences have no memory-safety effects. hfence.* only run for
    // kinds that are accepted when the hart has H (encoded as .word so the
    // assembler needs no H support).
    unsafe {
        match f.kind {
            FenceKind::I => core::arch::asm!("fence.i"),
            FenceKind::Vma | FenceKind::VmaAsid => {
                let asid = if f.kind == FenceKind::VmaAsid {
                    Some(f.id)
                } else {
                    None
                };
                if whole {
                    match asid {
                        Some(a) => core::arch::asm!("sfence.vma zero, {0}", in(reg) a),
                        None => core::arch::asm!("sfence.vma"),
                    }
                } else {
                    let mut va = f.start & !0xfff;
                    let end = f.start.saturating_add(f.size);
                    while va < end {
                        match asid {
                            Some(a) => {
                                core::arch::asm!("sfence.vma {0}, {1}", in(reg) va, in(reg) a)
                            }
                            None => core::arch::asm!("sfence.vma {0}, zero", in(reg) va),
                        }
                        va += 4096;
                    }
                }
            }
            // Over-flushing is always correct: all guest-physical mappings.
            FenceKind::GvmaVmid | FenceKind::Gvma => core::arch::asm!(".word 0x62000073"),
            // hfence.vvma acts on the VMID in hgatp: borrow the sender's.
            FenceKind::VvmaAsid | FenceKind::Vvma => {
                let old: usize;
                core::arch::asm!("csrrw {0}, 0x680, {1}", out(reg) old, in(reg) f.id);
                core::arch::asm!(".word 0x22000073");
                core::arch::asm!("csrw 0x680, {0}", in(reg) old);
            }
        }
    }
}

/// Handle everything other harts asked of `me` (the MSIP interrupt, and
/// polling in wait loops). Returns the message bits that were pending.
/// IPIs are dropped while the hart is not running supervisor code.
pub fn process_messages(me: usize, running: bool) -> usize {
    let slot = &MACHINE.harts[me];
    clear_msip(me);
    let bits = slot.pending.swap(0, AcqRel);
    if bits & MSG_IPI != 0 && running {
        csr_set!(mip, MIP_SSIP);
        pmu::record(FwEvent::IpiReceived);
    }
    if bits & MSG_FENCE != 0 {
        for (sender, f) in slot.fences.iter().enumerate() {
            if f.busy.load(Acquire) {
                let fence = Fence {
                    kind: FenceKind::from_raw(f.kind.load(Relaxed)),
                    start: f.start.load(Relaxed),
                    size: f.size.load(Relaxed),
                    id: f.id.load(Relaxed),
                };
                execute_fence(&fence);
                // Slots are per sender and a hart never posts to itself.
                pmu::record(fence.kind.events().1);
                f.busy.store(false, Release);
                send_msip(sender);
            }
        }
    }
    bits
}

/// HSM hart_start: claim a stopped hart and hand it its entry point.
pub fn request_start(target: usize, addr: usize, arg: usize) -> Result<(), usize> {
    let slot = &MACHINE.harts[target];
    match slot.hsm.compare_exchange(
        hart_state::STOPPED,
        hart_state::START_PENDING,
        AcqRel,
        Acquire,
    ) {
        Ok(_) => {}
        Err(hart_state::STOP_PENDING) => return Err(sbi_spec::binary::RET_ERR_FAILED),
        Err(_) => return Err(sbi_spec::binary::RET_ERR_ALREADY_AVAILABLE),
    }
    slot.start_addr.store(addr, Relaxed);
    slot.start_arg.store(arg, Relaxed);
    slot.pending.fetch_or(MSG_START, AcqRel);
    send_msip(target);
    Ok(())
}

/// Stop the calling hart (HSM hart_stop, or parking a secondary at boot)
/// and wait in M-mode until a hart_start names it.
pub fn stop_and_wait(me: usize) -> ! {
    // A secondary parking at boot is already STOPPED (published with the
    // platform) and may even be START_PENDING by now: only a running hart
    // passes through STOP_PENDING, so an early hart_start is never lost.
    if hsm_state(me) == hart_state::STARTED {
        set_hsm_state(me, hart_state::STOP_PENDING);
    }
    crate::timer::disarm(me);
    csr_clear!(mip, MIP_SSIP);
    let _ = MACHINE.harts[me].hsm.compare_exchange(
        hart_state::STOP_PENDING,
        hart_state::STOPPED,
        AcqRel,
        Acquire,
    );
    loop {
        let bits = process_messages(me, false);
        if bits & MSG_START != 0 && hsm_state(me) == hart_state::START_PENDING {
            let slot = &MACHINE.harts[me];
            let (addr, arg) = (slot.start_addr.load(Relaxed), slot.start_arg.load(Relaxed));
            // A fresh start: nothing stale in the TLB or I-cache.
            // SAFETY: fences only.
            unsafe { core::arch::asm!("fence.i", "sfence.vma") };
            set_hsm_state(me, hart_state::STARTED);
            crate::timer::arm_steal(me);
            // SAFETY: entering S-mode at the requested address.
            unsafe { crate::entry::enter_supervisor(me, arg, addr) };
        }
        // SAFETY: wfi only stalls; MSIP (kept enabled in mie) wakes us.
        unsafe { core::arch::asm!("wfi") };
    }
}

/// Retentive or non-retentive HSM suspend: wait in M-mode until an
/// interrupt S-mode enabled is pending.
pub fn suspend(me: usize) {
    set_hsm_state(me, hart_state::SUSPENDED);
    const S_IRQS: usize = csr::MIP_SSIP | csr::MIP_STIP | csr::MIP_SEIP | csr::MIP_LCOFIP;
    loop {
        process_messages(me, true);
        crate::timer::poll_mtimer();
        if csr_read!(mip) & csr_read!(mie) & S_IRQS != 0 {
            break;
        }
        // SAFETY: wfi only stalls; wakes on any interrupt enabled in mie.
        unsafe { core::arch::asm!("wfi") };
    }
    set_hsm_state(me, hart_state::STARTED);
}
