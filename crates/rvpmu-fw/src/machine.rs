//! The firmware's only mutable global state: the per-hart table (HSM state,
//! inter-hart message slots, and the storage of each hart's private state,
//! which the hart reaches through its trap frame's root, `frame.rs`) plus
//! the write-once platform description and event map, and the boot
//! hand-off words. Cross-hart requests (IPIs, remote fences, HSM) go
//! through the slots' atomics only; a hart's own firmware events go to the
//! `&mut HartPmu` its trap passes in.
//!
//! The platform is reached only through `Ready`, the proof that it was
//! published: boot gets one from `publish` or `wait_for_platform`, and each
//! hart's state keeps the one its setup had (`HartLocal::ready`), so the
//! trap paths have it wherever they have the hart's state.
#![cfg(target_os = "none")]

use crate::layout::MAX_HARTS;
use crate::platform::{Features, Platform};
use crate::pmu::{self, HartPerf, HartPmu};
use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use rvpmu::dt::EventMap;
use rvpmu::event::FwEvent;
use rvpmu_rt::csr::{self, MIP_SSIP};
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

/// Proof that the boot hart has published the platform (`publish`) and
/// that the hart holding it has seen it: only `publish`,
/// `wait_for_platform` and `platform_if_ready` (after checking) make one.
/// Zero-sized, so handing it down costs no instruction.
#[derive(Clone, Copy)]
pub struct Ready(());

impl Ready {
    /// The platform (read-only from `publish` on).
    #[inline(always)]
    pub fn platform(self) -> &'static Platform {
        // SAFETY: a `Ready` exists only once `publish` has written the
        // platform and released STAGE_READY, and its maker synchronised
        // with that (the boot hart wrote it; the others acquired
        // STAGE_READY); nothing writes the platform afterwards.
        unsafe { (*MACHINE.platform.get()).assume_init_ref() }
    }
}

/// State only the owning hart touches. It is stored in the hart's slot
/// but reached only through the hart's root beside its trap frame
/// (`frame::HartRoot`, set once by `init_local`'s caller): one way to it,
/// borrowed `&mut` once per trap (`frame::this_hart`) and passed down from
/// there. `repr(C)` with `perf` first, so the SBI fast path reaches the
/// hart's PMU state at offset 0.
#[repr(C)]
pub struct HartLocal {
    pub perf: HartPerf,
    /// Where the trap paths take the platform from: this hart was set up
    /// after it was published.
    pub ready: Ready,
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
///
/// # Safety
///
/// Called once, by the boot hart, before `publish`; no other reference
/// to the map (`event_map`) exists while the returned borrow is used.
pub unsafe fn event_map_mut() -> &'static mut EventMap {
    // SAFETY: the caller's contract: the only reference, before
    // STAGE_READY (no other hart reads the map before it).
    unsafe { &mut *MACHINE.event_map.get() }
}

/// The shared, read-only event map (after `publish`).
pub fn event_map() -> &'static EventMap {
    // SAFETY: written before STAGE_READY, read-only afterwards.
    unsafe { &*MACHINE.event_map.get() }
}

/// Publish the platform and release the other harts (boot hart only, once).
pub fn publish(p: Platform) -> Ready {
    // SAFETY: only the boot hart runs this, before STAGE_READY.
    unsafe { (*MACHINE.platform.get()).write(p) };
    let ready = Ready(());
    let p = ready.platform();
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
            send_msip(ready, id);
        }
    }
    ready
}

/// Wait (secondary harts) until the boot hart has published the platform.
pub fn wait_for_platform() -> Ready {
    csr::MIE.set(csr::MIP_MSIP);
    while BOOT.stage.load(Acquire) != STAGE_READY {
        // SAFETY: wfi only stalls; MSIP from `publish` wakes us.
        unsafe { core::arch::asm!("wfi") };
    }
    Ready(())
}

/// The platform if boot got that far (for fatal-error reports).
pub fn platform_if_ready() -> Option<&'static Platform> {
    (BOOT.stage.load(Acquire) == STAGE_READY).then(|| Ready(()).platform())
}

/// Set up hart `me`'s private state and return it (the caller hands it to
/// the hart's root, `frame::set_hart`, the one way to it from then on).
///
/// # Safety
///
/// Called once per hart, by hart `me` itself, before it takes any trap.
/// The returned borrow is the only one until the hart enters S-mode; it
/// must not be used after that (each trap then borrows the state afresh
/// through the hart's root).
pub unsafe fn init_local(
    ready: Ready,
    me: usize,
    features: Features,
    present_counters: u32,
) -> &'static mut HartLocal {
    let perf = pmu::new_hart(features, present_counters, event_map(), ready.platform());
    // SAFETY: the caller's contract: slot `me` belongs to the calling
    // hart, which has not used it yet, and nothing else refers to it.
    unsafe {
        (*MACHINE.harts[me].local.get()).write(HartLocal {
            perf,
            ready,
            s_deadline: u64::MAX,
            steal_deadline: u64::MAX,
        })
    }
}

/// Run `f` with the console to ourselves (whole DBCN writes stay together).
pub fn with_console<R>(ready: Ready, f: impl FnOnce(&crate::console::Uart) -> R) -> R {
    while MACHINE.console_lock.swap(true, Acquire) {
        core::hint::spin_loop();
    }
    let r = f(&ready.platform().uart);
    MACHINE.console_lock.store(false, Release);
    r
}

fn send_msip(ready: Ready, hart: usize) {
    // SAFETY: the MSIP word of a hart the DT lists, in the CLINT/MSWI.
    unsafe { core::ptr::write_volatile((ready.platform().msip + 4 * hart) as *mut u32, 1) };
}

fn clear_msip(ready: Ready, hart: usize) {
    // SAFETY: as send_msip.
    unsafe { core::ptr::write_volatile((ready.platform().msip + 4 * hart) as *mut u32, 0) };
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
pub fn send_ipi(ready: Ready, me: usize, target: usize, pmu: &mut HartPmu) {
    if target == me {
        csr::MIP.set(MIP_SSIP);
    } else if is_running(target) {
        pmu.record(FwEvent::IpiSent);
        MACHINE.harts[target].pending.fetch_or(MSG_IPI, AcqRel);
        send_msip(ready, target);
    }
}

/// Run `fence` on every hart in `targets` (a bit per hart id) and return
/// when all have done it. Stopped harts are skipped: they flush on start.
pub fn remote_fence(ready: Ready, me: usize, targets: u64, fence: Fence, pmu: &mut HartPmu) {
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
            pmu.record(sent);
            let slot = &MACHINE.harts[t].fences[me];
            slot.kind.store(fence.kind as usize, Relaxed);
            slot.start.store(fence.start, Relaxed);
            slot.size.store(fence.size, Relaxed);
            slot.id.store(fence.id, Relaxed);
            slot.busy.store(true, Release);
            MACHINE.harts[t].pending.fetch_or(MSG_FENCE, AcqRel);
            send_msip(ready, t);
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
                process_messages(ready, me, true, pmu);
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
    // kinds that are accepted when the hart has H.
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
            FenceKind::GvmaVmid | FenceKind::Gvma => csr::hfence_gvma_all(),
            // hfence.vvma acts on the VMID in hgatp: borrow the sender's.
            FenceKind::VvmaAsid | FenceKind::Vvma => {
                let old = csr::HGATP.swap(f.id);
                csr::hfence_vvma_all();
                csr::HGATP.write(old);
            }
        }
    }
}

/// Handle everything other harts asked of `me` (the MSIP interrupt, and
/// polling in wait loops). Returns the message bits that were pending.
/// IPIs are dropped while the hart is not running supervisor code.
pub fn process_messages(ready: Ready, me: usize, running: bool, pmu: &mut HartPmu) -> usize {
    let slot = &MACHINE.harts[me];
    clear_msip(ready, me);
    let bits = slot.pending.swap(0, AcqRel);
    if bits & MSG_IPI != 0 && running {
        csr::MIP.set(MIP_SSIP);
        pmu.record(FwEvent::IpiReceived);
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
                pmu.record(fence.kind.events().1);
                f.busy.store(false, Release);
                send_msip(ready, sender);
            }
        }
    }
    bits
}

/// HSM hart_start: claim a stopped hart and hand it its entry point.
pub fn request_start(ready: Ready, target: usize, addr: usize, arg: usize) -> Result<(), usize> {
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
    send_msip(ready, target);
    Ok(())
}

/// HSM hart_stop, first step (the hart's own): a running hart becomes
/// STOP_PENDING. A secondary parking at boot is already STOPPED
/// (published with the platform) and may even be START_PENDING by now:
/// only a running hart passes through STOP_PENDING, so an early
/// hart_start is never lost.
pub fn begin_stop(me: usize) {
    if hsm_state(me) == hart_state::STARTED {
        set_hsm_state(me, hart_state::STOP_PENDING);
    }
}

/// HSM hart_stop, last step: STOP_PENDING becomes STOPPED (a hart_start
/// may claim it from then on).
pub fn finish_stop(me: usize) {
    let _ = MACHINE.harts[me].hsm.compare_exchange(
        hart_state::STOP_PENDING,
        hart_state::STOPPED,
        AcqRel,
        Acquire,
    );
}

/// The (entry address, argument) of a hart_start that claimed `me`, if
/// `bits` (from `process_messages`) carry one. The hart is still
/// START_PENDING: `set_started` follows.
pub fn start_request(me: usize, bits: usize) -> Option<(usize, usize)> {
    if bits & MSG_START != 0 && hsm_state(me) == hart_state::START_PENDING {
        let slot = &MACHINE.harts[me];
        Some((slot.start_addr.load(Relaxed), slot.start_arg.load(Relaxed)))
    } else {
        None
    }
}

/// The calling hart runs S-mode code again (after a start or a suspend).
pub fn set_started(me: usize) {
    set_hsm_state(me, hart_state::STARTED);
}

/// The calling hart waits in an HSM suspend.
pub fn set_suspended(me: usize) {
    set_hsm_state(me, hart_state::SUSPENDED);
}

pub fn write_mtimecmp(ready: Ready, me: usize, value: u64) {
    // SAFETY: this hart's mtimecmp in the CLINT/ACLINT the DT names.
    unsafe { core::ptr::write_volatile((ready.platform().mtimecmp + 8 * me) as *mut u64, value) };
}

/// Keep the hart in M-mode until `time` reaches `deadline`, asleep in
/// `wfi` on its M timer (under icount QEMU then runs the other harts up to
/// the deadline instead of letting a spinning hart overshoot it), still
/// serving other harts' IPI and fence requests (their firmware events go
/// to `pmu`). The caller reprograms mtimecmp afterwards.
pub fn sleep_until(ready: Ready, me: usize, deadline: u64, pmu: &mut HartPmu) {
    write_mtimecmp(ready, me, deadline);
    csr::MIE.set(csr::MIP_MTIP);
    while (csr::TIME.read() as u64) < deadline {
        // SAFETY: wfi only stalls; MTIP or MSIP (enabled in mie) wakes us.
        unsafe { core::arch::asm!("wfi") };
        process_messages(ready, me, true, pmu);
    }
}
