//! Several guests time-sliced on this hart (host command line
//! `rvpmu-hv.guests=N`): the scheduler (`rvpmu_hv::sched`) decides, this
//! module switches.
//!
//! A switch from vCPU A to vCPU B:
//!
//! 1. A's counters stop: `HostHpm::switch_out` (one host call, stop with
//!    TAKE_SNAPSHOT into the hypervisor's snapshot page; an overflow found
//!    there becomes A's LCOFI in its saved hvip), and go back to the host
//!    (`HostHpm::release`, one stop with RESET), so that B can have the
//!    same host counter for the same event;
//! 2. A's VS state is saved (`vcpu::VsState`: the VS CSRs, hvip, vstimecmp,
//!    the previous mode of its trap, the FP registers and fcsr);
//! 3. if A is still runnable (its quantum ended), its STA record says
//!    `preempted` = 1;
//! 4. B's VS state and G-stage (hgatp with B's VMID) are loaded, B's
//!    counters are configured again (`reclaim`: the same counter, event
//!    and filters; a stopped one gets its value back) and the running
//!    ones start (`switch_in`, INIT_SNAPSHOT), B's STA record
//!    gets the steal added since it last ran, `preempted` = 0;
//! 5. the HS timer is armed at the end of B's quantum.
//!
//! A guest `wfi` (hstatus.VTW = 1: a virtual-instruction trap) with no
//! interrupt pending and enabled makes the vCPU idle until its
//! `vstimecmp`; when no vCPU is runnable the hart waits in `wfi` for the
//! earliest. A guest's SRST shutdown ends that guest; the last one's ends
//! the machine, after the hypervisor prints its accounting.
#![cfg(target_os = "none")]

use crate::console::hvprintln;
use crate::switch::{Costs, HostPage};
use crate::vcpu::Vcpu;
use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use rvpmu_hv::options::MAX_GUESTS;
use rvpmu_hv::sched::{ticks_to_ns, Next, Sched, StealClock};
use rvpmu_rt::csr::{self, HSTATUS_VTW, IRQ_LCOF, IRQ_S_TIMER};

/// The `wfi` instruction.
pub const WFI: usize = 0x1050_0073;
/// vsie/vsip bit of the supervisor timer interrupt (the guest's view).
const VS_STI: usize = 1 << 5;

/// The guests, their scheduler and the switch path.
pub struct Machine {
    sched: Sched<MAX_GUESTS>,
    n: usize,
    vcpus: [*mut Vcpu; MAX_GUESTS],
    hgatp: [usize; MAX_GUESTS],
    clocks: [StealClock; MAX_GUESTS],
    timebase: u64,
    /// The hypervisor's snapshot page with the host firmware, when the
    /// guests have PMUs.
    page: Option<HostPage>,
    cost: Costs,
    switches: u64,
    /// The vCPU that had the hart when the scheduler last decided.
    from: usize,
}

struct MachineSlot(UnsafeCell<MaybeUninit<Machine>>);
// SAFETY: one hart; written once by `start` before any guest runs, then
// reached only from the trap path (one trap at a time).
unsafe impl Sync for MachineSlot {}
static MACHINE: MachineSlot = MachineSlot(UnsafeCell::new(MaybeUninit::uninit()));
struct Active(UnsafeCell<bool>);
// SAFETY: as `MachineSlot`.
unsafe impl Sync for Active {}
static ACTIVE: Active = Active(UnsafeCell::new(false));

/// The machine, when more than one guest runs.
///
/// # Safety
///
/// Called from the trap path only, which holds no other reference to it.
pub unsafe fn machine() -> Option<&'static mut Machine> {
    // SAFETY: the caller's contract; `ACTIVE` is set only after the
    // machine was written.
    unsafe {
        if *ACTIVE.0.get() {
            Some((*MACHINE.0.get()).assume_init_mut())
        } else {
            None
        }
    }
}

/// Start the guests `vcpus[..n]` (installed; their G-stage roots as
/// `hgatp` values), vCPU 0 first, with a quantum of `quantum` ticks of
/// `timebase` Hz. Returns vCPU 0 to enter.
///
/// # Safety
///
/// Called once, before any guest runs, with the pointers `vcpu::install`
/// returned.
pub unsafe fn start(
    vcpus: [*mut Vcpu; MAX_GUESTS],
    hgatp: [usize; MAX_GUESTS],
    n: usize,
    quantum: u64,
    timebase: u64,
    page: Option<HostPage>,
) -> *mut Vcpu {
    let now = csr::TIME.read() as u64;
    let m = Machine {
        sched: Sched::new(n, now, quantum),
        n,
        vcpus,
        hgatp,
        clocks: [StealClock::default(); MAX_GUESTS],
        timebase,
        page,
        cost: Costs::new(),
        switches: 0,
        from: 0,
    };
    // SAFETY: the caller's contract: once, before any trap.
    unsafe {
        (*MACHINE.0.get()).write(m);
        *ACTIVE.0.get() = true;
    }
    // vCPU 0's VS state is what boot left in the CSRs; hstatus.VTW makes
    // a guest's wfi trap (idle), the HS timer ends quanta.
    csr::HGATP.write(hgatp[0]);
    csr::HSTATUS.set(HSTATUS_VTW);
    csr::STIMECMP.write(now.wrapping_add(quantum) as usize);
    csr::SIE.set(1 << IRQ_S_TIMER);
    vcpus[0]
}

impl Machine {
    fn now() -> u64 {
        csr::TIME.read() as u64
    }

    /// The HS timer fired while `v` ran: the quantum ended or an idle
    /// vCPU's timer passed (or an early interrupt: re-armed).
    pub fn timer(&mut self, v: *mut Vcpu) -> *mut Vcpu {
        match self.sched.timer(Self::now()) {
            Some(next) => self.go(next),
            None => {
                csr::STIMECMP.write(self.sched.deadline() as usize);
                v
            }
        }
    }

    /// The running guest executed `wfi` (pc already past it): idle
    /// unless an interrupt is pending and enabled for it.
    pub fn wfi(&mut self, v: *mut Vcpu) -> *mut Vcpu {
        let pending = csr::VSIP.read() & csr::VSIE.read();
        if pending != 0 {
            return v;
        }
        let wake = if csr::VSIE.read() & VS_STI != 0 {
            csr::VSTIMECMP.read() as u64
        } else {
            u64::MAX
        };
        let next = self.sched.idle(Self::now(), wake);
        self.go(next)
    }

    /// Whether a guest other than the running one is alive.
    pub fn others_alive(&self) -> bool {
        self.sched.others_alive(self.sched.current())
    }

    /// The running guest shut down; another one runs.
    pub fn end(&mut self) -> *mut Vcpu {
        let g = self.sched.current();
        // SAFETY: as in `save`.
        unsafe { (*self.vcpus[g]).sbi.flush_console() };
        hvprintln!("guest {g} shut down");
        let next = self.sched.end(Self::now());
        self.go(next)
    }

    /// Print each guest's run, steal and idle time (ns) and the switch
    /// costs; before the last guest's shutdown ends the machine.
    pub fn report(&mut self) {
        self.sched.settle(Self::now());
        for &v in &self.vcpus[..self.n] {
            // SAFETY: as in `save`: the trap path's one reference.
            unsafe { (*v).sbi.flush_console() };
        }
        for g in 0..self.n {
            let a = self.sched.account(g);
            // SAFETY: a shared look at an installed vCPU's STA state, on
            // the trap path with no `&mut` to it alive.
            let sta = unsafe { &(*self.vcpus[g]).sbi.sta };
            let ns = |t| ticks_to_ns(t, self.timebase);
            hvprintln!(
                "guest {g}: run {} ns, steal {} ns, idle {} ns; STA record: {} ns reported{}",
                ns(a.run),
                ns(a.steal),
                ns(a.idle),
                sta.steal_ns(),
                if sta.area().is_some() {
                    ""
                } else {
                    " (not registered)"
                }
            );
        }
        hvprintln!("{} switches between guests", self.switches);
        self.cost.report("guest switch");
    }

    /// Carry out the scheduler's decision, leaving the vCPU that ran
    /// (saved once) if another one runs or the hart waits.
    fn go(&mut self, mut next: Next) -> *mut Vcpu {
        let from = self.from;
        let t0 = csr::INSTRET.read() as u64;
        let mut saved = None;
        loop {
            match next {
                Next::Run { vcpu, .. } if vcpu == from && saved.is_none() => {
                    // The same vCPU goes on (nobody else runnable): a new
                    // quantum, nothing to switch or publish.
                    csr::STIMECMP.write(self.sched.deadline() as usize);
                    return self.vcpus[vcpu];
                }
                Next::Run { vcpu, steal } => {
                    let running = match saved {
                        Some(r) => r,
                        None => self.save(from),
                    };
                    self.load(vcpu);
                    self.publish(vcpu, steal);
                    if saved.is_none() {
                        // A direct switch (not after a wait): its cost.
                        self.cost
                            .add(running, (csr::INSTRET.read() as u64).wrapping_sub(t0));
                    }
                    self.switches += 1;
                    self.from = vcpu;
                    csr::STIMECMP.write(self.sched.deadline() as usize);
                    return self.vcpus[vcpu];
                }
                Next::Wait { until } => {
                    if saved.is_none() {
                        saved = Some(self.save(from));
                    }
                    csr::STIMECMP.write(until as usize);
                    while Self::now() < until {
                        // SAFETY: wfi only stalls the hart until an
                        // enabled interrupt (the HS timer) is pending;
                        // sstatus.SIE is 0, so none is taken.
                        unsafe { core::arch::asm!("wfi") };
                    }
                    next = self.sched.pick(Self::now());
                }
                Next::AllEnded => {
                    // Unreachable: the last guest's shutdown is forwarded
                    // to the host firmware (trap.rs) and never gets here.
                    hvprintln!("every guest ended without a shutdown");
                    self.report();
                    rvpmu_rt::runtime::halt_failure()
                }
            }
        }
    }

    /// Take the hart from vCPU `g`: counters, VS state, STA `preempted`
    /// if it stays runnable. Returns the counters it had running.
    fn save(&mut self, g: usize) -> u32 {
        // SAFETY: the trap path's one reference to vCPU `g` (the trap's
        // own `&mut` is no longer used once the scheduler runs).
        let v = unsafe { &mut *self.vcpus[g] };
        let mut running = 0;
        if let (Some(p), Some(page)) = (&mut v.sbi.pmu, &self.page) {
            let (stopped, new) = p.hw_mut().switch_out(page, HostPage::addr());
            p.hw_mut().release();
            if new != 0 {
                csr::HVIP.set(1 << IRQ_LCOF);
            }
            running = stopped;
        }
        v.vs.save();
        if self.sched.withheld(g) {
            let sbi = &mut v.sbi;
            sbi.sta.account(&mut sbi.mem, 0, true);
        }
        running
    }

    /// Give the hart to vCPU `g`: VS state, G-stage, counters.
    fn load(&mut self, g: usize) {
        // SAFETY: as in `save`; `g` is not the vCPU `save` borrowed, or
        // that borrow ended.
        let v = unsafe { &mut *self.vcpus[g] };
        v.vs.load();
        csr::HGATP.write(self.hgatp[g]);
        if let (Some(p), Some(page)) = (&mut v.sbi.pmu, &mut self.page) {
            p.hw_mut().reclaim();
            p.hw_mut().switch_in(page, HostPage::addr());
        }
    }

    /// vCPU `g` is about to run after `steal` more ticks stolen: its STA
    /// record gets them, and `preempted` = 0.
    fn publish(&mut self, g: usize, steal: u64) {
        // SAFETY: as in `save`.
        let v = unsafe { &mut *self.vcpus[g] };
        let total = self.sched.account(g).steal;
        let ns = self.clocks[g].advance(total, self.timebase);
        debug_assert!(steal == 0 || total != 0);
        let sbi = &mut v.sbi;
        sbi.sta.account(&mut sbi.mem, ns, false);
    }
}
