//! The guest's virtual PMU: the `rvpmu` engine (the same one rvpmu-fw
//! runs) over [`HostHpm`], an [`Hpm`] backend whose "CSRs" are host
//! counters asked for through the host firmware's own SBI PMU extension
//! (`rvpmu_sbi::client`).
//!
//! - **Indices.** Guest counter `i` (3..=31) is host counter `i`: rvpmu-fw's
//!   logical index of a hardware counter is its CSR offset, so the CSR the
//!   guest is told (`0xC00 + i`) is the host's own `hpmcounterN`, which
//!   `hcounteren` lets the guest read directly. The fixed counters 0
//!   (cycle) and 2 (instret) are not the guest's PMU counters (they count
//!   every mode of the whole machine and cannot be filtered without
//!   Smcntrpmf): get_info answers INVALID_PARAM for them.
//! - **Events.** The guest's event map is the host's `riscv,pmu` map
//!   without `event-to-mhpmevent` and raw rows ([`load_guest_event_map`]),
//!   so the selector the engine writes for an event is its event_idx,
//!   which is what the backend asks the host for; raw events are
//!   NOT_SUPPORTED to the guest.
//! - **Modes.** A host counter given to the guest always inhibits M, HS
//!   (S) and U: it counts only while the guest runs. The guest's SINH
//!   becomes the host's VSINH and its UINH the host's VUINH
//!   ([`host_flags`]); the guest's MINH has nothing left to inhibit, and
//!   its VSINH/VUINH are vacuous (the guest has no H: the engine is built
//!   with `h: false` and drops them).
//! - **What reaches the firmware.** `write_event` with a new selector:
//!   config_matching with CLEAR_VALUE on exactly that host counter (after
//!   a stop with RESET if it held another), so a guest's CLEAR_VALUE
//!   costs nothing more and its direct CSR read sees the 0; a selector of
//!   0 (release): stop with RESET; `uninhibit`: start (SET_INIT_VALUE when the engine wrote a
//!   value while it was stopped, other than the 0 it already holds after
//!   config_matching); `inhibit`: stop; `write_counter` on a running
//!   counter: stop then start with the value. Reads are the CSRs
//!   (`HostCounters`), never a call.

use rvpmu::counter::CSR_CYCLE;
use rvpmu::dt::{EventMap, PmuProps};
use rvpmu::event::FwEvent;
use rvpmu::hart::{FwEventSet, IsaFeatures};
use rvpmu::hw::{bits, Hpm};
use rvpmu::mem::SupervisorMemory;
use rvpmu::snapshot;
use rvpmu::CounterInfo;
use rvpmu::PmuConfig;
use rvpmu_sbi::client::{
    CounterCfgFlags, CounterStartFlags, CounterStopFlags, SbiCall, Supervisor,
};

/// HPM counters (3..=31).
pub const HPM_COUNTERS: u32 = !0b111;

/// The mhpmevent bits that name the event (all but OF and the inhibits).
const SELECT: u64 = !(bits::OF | bits::ALL_INH);

/// The host's counter CSRs as HS-mode reads them.
pub trait HostCounters {
    /// `hpmcounterN` (`i` in 3..=31, a counter the host has).
    fn read(&self, i: usize) -> u64;
    /// `scountovf` (Sscofpmf): bit `i` is host counter `i`'s OF.
    fn overflow(&self) -> u32;
    /// Let the guest read exactly the host HPM counters in `hpm` (bit per
    /// CSR offset, 3..=31) directly (`hcounteren`), besides cycle, time
    /// and instret: a counter that is not the running guest's may hold
    /// another guest's last value.
    fn open(&mut self, hpm: u32);
}

/// The host flags for a guest counter whose engine programmed `reg`
/// (an mhpmevent value): M, HS and U always inhibited, the guest's
/// S and U inhibits onto VS and VU.
pub fn host_flags(reg: u64) -> CounterCfgFlags {
    let mut f = CounterCfgFlags::SET_MINH | CounterCfgFlags::SET_SINH | CounterCfgFlags::SET_UINH;
    if reg & bits::SINH != 0 {
        f |= CounterCfgFlags::SET_VSINH;
    }
    if reg & bits::UINH != 0 {
        f |= CounterCfgFlags::SET_VUINH;
    }
    f
}

/// Fill `map` (the guest's event map) from the host's `riscv,pmu`
/// properties: the counter rows only (no `event-to-mhpmevent`, no raw
/// rows), checked against `present` (the guest's counters), and the
/// one-counter-per-event rule when the host has it. A node the engine
/// rejects leaves the map empty (nothing countable but firmware events);
/// the result says so.
pub fn load_guest_event_map(
    map: &mut EventMap,
    host: Option<PmuProps<'_>>,
    present: u32,
    one_counter_per_event: bool,
) -> bool {
    let ok = match host {
        Some(p) => map
            .load_props(
                PmuProps {
                    event_to_mhpmevent: None,
                    event_to_mhpmcounters: p.event_to_mhpmcounters,
                    raw_event_to_mhpmcounters: None,
                    one_counter_per_event: None,
                },
                Some(present),
            )
            .is_ok(),
        None => true,
    };
    map.set_one_counter_per_event(one_counter_per_event);
    ok
}

/// The engine's configuration for a guest's PMU over `map` (the same for
/// every guest): Sscofpmf filters, no Smcntrpmf and no H (the guest has
/// none), the one firmware event the hypervisor sees (SET_TIMER), the
/// snapshot, and the alias window for Linux's snapshot restart
/// (counter_idx_base 4096), as on rvpmu-fw.
pub fn guest_pmu_config(map: &EventMap) -> PmuConfig<'_> {
    PmuConfig::new(map, IsaFeatures::none().with_sscofpmf(true))
        .with_fw_events(FwEventSet {
            standard: 1 << FwEvent::SetTimer as u32,
            ..FwEventSet::without_h()
        })
        .with_snapshot(true)
        .with_alias_window(true)
}

/// Host counters given to one guest, programmed through the host
/// firmware. Indices are CSR offsets, as [`Hpm`] has them.
pub struct HostHpm<C: SbiCall, R: HostCounters> {
    host: Supervisor<C>,
    csr: R,
    present: u32,
    width: [u8; 32],
    /// What the engine last wrote as mhpmevent (without OF), per counter.
    event: [u64; 32],
    /// Host counters configured for the guest (config_matching succeeded,
    /// not yet released).
    configured: u32,
    /// Host counters started.
    running: u32,
    /// A value the engine wrote while the counter was stopped: the next
    /// start gives it (SET_INIT_VALUE).
    pending: [Option<u64>; 32],
    /// Host counters known to hold 0: configured with CLEAR_VALUE and not
    /// started since (a 0 written then needs no host call, and the
    /// guest's direct CSR read already sees it).
    zero: u32,
    /// Host counters whose overflow the hypervisor took (LCOFI at HS)
    /// and that the guest has not started again: their OF as the guest
    /// sees it, whatever the host counter's own OF says by then.
    overflowed: u32,
    /// Counters [`HostHpm::switch_out`] stopped, and their values.
    switched_out: u32,
    saved: [u64; 32],
    /// Counters [`HostHpm::release`] gave back to the host (still the
    /// guest's), and the values of those that were not running.
    released: u32,
    released_value: [u64; 32],
    failures: u32,
}

impl<C: SbiCall, R: HostCounters> HostHpm<C, R> {
    /// Ask the host firmware for its PMU and its hardware counters: the
    /// HPM counters whose counter_info names their own CSR
    /// (`0xC00 + i`). `None` when the host has no PMU extension or no
    /// such counter.
    pub fn probe(mut host: Supervisor<C>, csr: R) -> Option<Self> {
        if host.base_probe_extension(sbi_spec::pmu::EID_PMU).value == 0 {
            return None;
        }
        let mut present = 0u32;
        let mut width = [0u8; 32];
        for (i, slot) in width.iter_mut().enumerate().skip(3) {
            let r = host.pmu_counter_get_info(i);
            if r.error != 0 {
                continue;
            }
            if let CounterInfo::Hardware { csr, width: w } = CounterInfo::decode(r.value as u64) {
                if csr == CSR_CYCLE + i as u16 {
                    present |= 1 << i;
                    *slot = w;
                }
            }
        }
        if present == 0 {
            return None;
        }
        Some(HostHpm {
            host,
            csr,
            present,
            width,
            event: [0; 32],
            configured: 0,
            running: 0,
            pending: [None; 32],
            zero: 0,
            overflowed: 0,
            switched_out: 0,
            saved: [0; 32],
            released: 0,
            released_value: [0; 32],
            failures: 0,
        })
    }

    /// Host calls that failed where the engine's state said they could
    /// not (each leaves that guest counter not counting).
    pub fn failures(&self) -> u32 {
        self.failures
    }
    /// Host counters currently configured / running for the guest.
    pub fn host_state(&self) -> (u32, u32) {
        (self.configured, self.running)
    }

    /// A local counter overflow interrupt reached the hypervisor: record
    /// which of the guest's host counters overflowed (`scountovf`) as the
    /// guest's overflow state (OF in [`Hpm::read_event`], hence the
    /// snapshot's overflow mask) until the guest starts them again.
    /// Returns the newly overflowed counters (0: none of the guest's).
    pub fn take_overflow(&mut self) -> u32 {
        let new = self.csr.overflow() & self.configured & !self.overflowed;
        self.overflowed |= new;
        new
    }

    /// The guest counters whose overflow is recorded.
    pub fn overflowed(&self) -> u32 {
        self.overflowed
    }

    /// The hypervisor takes the hart from the guest: stop the guest's
    /// running host counters in one call with TAKE_SNAPSHOT (the host
    /// firmware writes their values and overflow bits into `area`, the
    /// hypervisor's own snapshot page registered with it, reached through
    /// `mem`), keep the values, and record the overflow bits as the
    /// guest's (a host counter that overflowed but whose LCOFI was not
    /// taken yet: [`HostHpm::switch_in`] clears its host OF). Returns the
    /// counters stopped and, of them, the newly overflowed ones (LCOFI to
    /// inject). Nothing is called when no counter runs.
    pub fn switch_out<M: SupervisorMemory>(&mut self, mem: &M, area: u64) -> (u32, u32) {
        let m = self.running;
        if m == 0 {
            return (0, 0);
        }
        let base = m.trailing_zeros();
        let r = self.host.pmu_counter_stop(
            base as usize,
            (m >> base) as usize,
            CounterStopFlags::TAKE_SNAPSHOT,
        );
        if !self.ok(r) {
            return (0, 0);
        }
        let mut bad = false;
        let mut k = m;
        while k != 0 {
            let i = k.trailing_zeros();
            k &= k - 1;
            match snapshot::read_value(mem, area, (i - base) as usize) {
                Ok(v) => self.saved[i as usize] = v,
                Err(_) => bad = true,
            }
        }
        let of = match snapshot::read_overflow(mem, area) {
            Ok(of) => ((of << base) as u32) & m,
            Err(_) => {
                bad = true;
                0
            }
        };
        if bad {
            self.failures = self.failures.saturating_add(1);
        }
        let new = of & !self.overflowed;
        self.overflowed |= new;
        self.running &= !m;
        self.switched_out = m;
        (m, new)
    }

    /// After [`HostHpm::switch_out`], when another guest will run: give
    /// every host counter configured for this guest back to the host
    /// (one stop with RESET over the set; ALREADY_STOPPED is the answer
    /// for counters already stopped, and RESET releases them anyway), so
    /// that the other guest can configure the same counter for the same
    /// event (QEMU counts an event on one counter only: a stopped but
    /// configured counter would keep it). The values of the configured
    /// counters that were not running are kept from their CSRs, and any
    /// overflow the host shows for them becomes the guest's. Nothing is
    /// called when none is configured.
    pub fn release(&mut self) {
        let m = self.configured;
        if m == 0 {
            return;
        }
        self.overflowed |= self.csr.overflow() & m & !self.switched_out;
        let mut k = m & !self.switched_out;
        while k != 0 {
            let i = k.trailing_zeros() as usize;
            k &= k - 1;
            self.released_value[i] = self.csr.read(i);
        }
        let base = m.trailing_zeros();
        let r = self.host.pmu_counter_stop(
            base as usize,
            (m >> base) as usize,
            CounterStopFlags::RESET,
        );
        if r.error != 0 && r.error != sbi_spec::binary::RET_ERR_ALREADY_STOPPED {
            self.failures = self.failures.saturating_add(1);
        }
        self.released = m;
    }

    /// Before [`HostHpm::switch_in`]: configure again every counter
    /// [`HostHpm::release`] gave back, on the same host counter with the
    /// same event and filters (from 0), and give the ones that were not
    /// running their value again (a start with it and a stop: they count
    /// nothing in between, the hart being in HS-mode). A counter the host
    /// refuses now is counted as a failure and no longer the guest's on
    /// the host.
    pub fn reclaim(&mut self) {
        let m = core::mem::take(&mut self.released);
        // Whatever happens below, the guest reads its own counters only.
        self.csr.open(self.configured);
        let mut k = m;
        while k != 0 {
            let i = k.trailing_zeros() as usize;
            k &= k - 1;
            let ev = self.event[i];
            let r = self.host.pmu_counter_config_matching(
                i,
                1,
                host_flags(ev) | CounterCfgFlags::CLEAR_VALUE,
                (ev & SELECT) as usize,
                0,
            );
            if r.error != 0 || r.value != i {
                self.failures = self.failures.saturating_add(1);
                self.configured &= !(1 << i);
                self.switched_out &= !(1 << i);
                self.csr.open(self.configured);
                continue;
            }
            let v = self.released_value[i];
            if self.switched_out & (1 << i) == 0 && v != 0 {
                let r = self
                    .host
                    .pmu_counter_start(i, 1, CounterStartFlags::INIT_VALUE, v);
                if self.ok(r) {
                    let r = self.host.pmu_counter_stop(i, 1, CounterStopFlags::empty());
                    self.ok(r);
                }
            }
        }
    }

    /// The guest gets the hart back: start what [`HostHpm::switch_out`]
    /// stopped, in one call with INIT_SNAPSHOT from the values it kept
    /// (written into `area` first). Nothing is called when it stopped
    /// nothing.
    pub fn switch_in<M: SupervisorMemory>(&mut self, mem: &mut M, area: u64) {
        let m = core::mem::take(&mut self.switched_out);
        if m == 0 {
            return;
        }
        let base = m.trailing_zeros();
        let mut k = m;
        while k != 0 {
            let i = k.trailing_zeros();
            k &= k - 1;
            if snapshot::write_value(mem, area, (i - base) as usize, self.saved[i as usize])
                .is_err()
            {
                self.failures = self.failures.saturating_add(1);
            }
        }
        let r = self.host.pmu_counter_start(
            base as usize,
            (m >> base) as usize,
            CounterStartFlags::INIT_SNAPSHOT,
            0,
        );
        if self.ok(r) {
            self.running |= m;
        }
    }

    fn ok(&mut self, r: sbi_spec::binary::SbiRet) -> bool {
        let ok = r.error == 0;
        if !ok {
            self.failures = self.failures.saturating_add(1);
        }
        ok
    }

    fn start(&mut self, i: usize) {
        let r = match self.pending[i].take() {
            Some(v) => self
                .host
                .pmu_counter_start(i, 1, CounterStartFlags::INIT_VALUE, v),
            None => self
                .host
                .pmu_counter_start(i, 1, CounterStartFlags::empty(), 0),
        };
        self.zero &= !(1 << i);
        // The host's start clears the counter's OF; so does the guest's.
        self.overflowed &= !(1 << i);
        if self.ok(r) {
            self.running |= 1 << i;
        }
    }

    fn stop(&mut self, i: usize) {
        let r = self.host.pmu_counter_stop(i, 1, CounterStopFlags::empty());
        self.ok(r);
        self.running &= !(1 << i);
    }
}

impl<C: SbiCall, R: HostCounters> Hpm for HostHpm<C, R> {
    /// The host HPM counters the guest gets (bit per CSR offset).
    fn present(&self) -> u32 {
        self.present
    }
    fn read_counter(&self, i: usize) -> u64 {
        let i = i % 32;
        if self.present & (1 << i) == 0 {
            return 0;
        }
        match self.pending[i] {
            Some(v) => v,
            None => self.csr.read(i),
        }
    }
    fn write_counter(&mut self, i: usize, v: u64) {
        let i = i % 32;
        if self.present & (1 << i) == 0 {
            return;
        }
        if v == 0 && self.zero & (1 << i) != 0 {
            self.pending[i] = None;
            return;
        }
        self.pending[i] = Some(v);
        if self.running & (1 << i) != 0 {
            self.stop(i);
            self.start(i);
        }
    }
    fn read_event(&self, i: usize) -> u64 {
        let i = i % 32;
        let of = if (self.csr.overflow() | self.overflowed) & self.present & (1 << i) != 0 {
            bits::OF
        } else {
            0
        };
        self.event[i] | of
    }
    fn write_event(&mut self, i: usize, v: u64) {
        let i = i % 32;
        let v = v & !bits::OF;
        if self.present & (1 << i) == 0 {
            return;
        }
        let held = self.configured & (1 << i) != 0;
        if v == self.event[i] && (held || v & SELECT == 0) {
            // The engine rewriting the same program (to clear OF at start).
            return;
        }
        if held {
            let r = self.host.pmu_counter_stop(i, 1, CounterStopFlags::RESET);
            // Already stopped is the usual case (the engine stops first).
            if r.error != 0 && r.error != sbi_spec::binary::RET_ERR_ALREADY_STOPPED {
                self.failures = self.failures.saturating_add(1);
            }
            self.configured &= !(1 << i);
            self.running &= !(1 << i);
        }
        self.zero &= !(1 << i);
        self.overflowed &= !(1 << i);
        self.event[i] = v;
        self.pending[i] = None;
        if v & SELECT != 0 {
            // Always from 0: without CLEAR_VALUE the spec leaves the
            // value open, and a counter the guest clears (Linux always
            // does) then needs no second call.
            let r = self.host.pmu_counter_config_matching(
                i,
                1,
                host_flags(v) | CounterCfgFlags::CLEAR_VALUE,
                (v & SELECT) as usize,
                0,
            );
            if r.error == 0 && r.value == i {
                self.configured |= 1 << i;
                self.zero |= 1 << i;
            } else {
                self.failures = self.failures.saturating_add(1);
            }
        }
        self.csr.open(self.configured);
    }
    fn read_inhibit(&self) -> u32 {
        !self.running
    }
    fn write_inhibit(&mut self, v: u32) {
        let want_running = !v & self.present;
        self.inhibit(self.running & !want_running);
        self.uninhibit(want_running & !self.running);
    }
    fn inhibit(&mut self, bits: u32) {
        let mut m = bits & self.running;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            self.stop(i);
        }
    }
    fn uninhibit(&mut self, bits: u32) {
        let mut m = bits & self.present & self.configured & !self.running;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            self.start(i);
        }
    }
    fn write_fixed_cfg(&mut self, _i: usize, _v: u64) {
        // The fixed counters are not the guest's.
    }
    fn probe_width(&mut self, i: usize) -> u8 {
        self.width[i % 32]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvpmu::ecall::SbiRet;
    use rvpmu::sim::BufMemory;
    use rvpmu::Pmu;
    use sbi_spec::binary::{RET_ERR_INVALID_PARAM, RET_ERR_NOT_SUPPORTED, RET_SUCCESS};
    use std::cell::RefCell;

    const PMU: usize = 0x504d55;

    /// A host firmware with QEMU's 16 HPM counters (3..=18, 64 bits) that
    /// answers get_info itself and records every other PMU call.
    #[derive(Default)]
    struct Host {
        calls: RefCell<Vec<(usize, [usize; 4])>>,
        refuse: bool,
    }
    impl SbiCall for &Host {
        fn call(&mut self, eid: usize, fid: usize, a: [usize; 6]) -> SbiRet {
            let ok = |value| SbiRet {
                error: RET_SUCCESS,
                value,
            };
            match (eid, fid) {
                (0x10, 3) => ok((a[0] == PMU) as usize),
                (PMU, 1) => {
                    if (3..=18).contains(&a[0]) {
                        ok(CounterInfo::Hardware {
                            csr: 0xC00 + a[0] as u16,
                            width: 64,
                        }
                        .encode() as usize)
                    } else {
                        SbiRet {
                            error: RET_ERR_INVALID_PARAM,
                            value: 0,
                        }
                    }
                }
                (PMU, f) => {
                    self.calls.borrow_mut().push((f, [a[0], a[1], a[2], a[3]]));
                    if self.refuse && f == 2 {
                        return SbiRet {
                            error: RET_ERR_NOT_SUPPORTED,
                            value: 0,
                        };
                    }
                    ok(if f == 2 { a[0] } else { 0 })
                }
                _ => SbiRet {
                    error: RET_ERR_NOT_SUPPORTED,
                    value: 0,
                },
            }
        }
    }
    struct Csr;
    thread_local! {
        /// The fake host's scountovf (per test thread).
        static SCOUNTOVF: std::cell::Cell<u32> = const { std::cell::Cell::new(1 << 4) };
        /// The HPM bits of the fake hart's hcounteren (per test thread).
        static OPEN: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }
    impl HostCounters for Csr {
        fn read(&self, i: usize) -> u64 {
            1000 + i as u64
        }
        fn overflow(&self) -> u32 {
            SCOUNTOVF.get()
        }
        fn open(&mut self, hpm: u32) {
            OPEN.set(hpm);
        }
    }

    fn qemu_map() -> &'static EventMap {
        // QEMU virt's generated riscv,event-to-mhpmcounters.
        let rows: [u32; 15] = [
            0x01, 0x01, 0x7fff9, 0x02, 0x02, 0x7fffc, 0x10019, 0x10019, 0x7fff8, 0x1001b, 0x1001b,
            0x7fff8, 0x10021, 0x10021, 0x7fff8,
        ];
        let bytes: Vec<u8> = rows.iter().flat_map(|c| c.to_be_bytes()).collect();
        let mut map = EventMap::empty();
        let props = PmuProps {
            event_to_mhpmcounters: Some(&bytes),
            // Dropped for the guest: a selector row and a raw row.
            event_to_mhpmevent: Some(&[0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0x99]),
            ..PmuProps::default()
        };
        assert!(load_guest_event_map(&mut map, Some(props), 0x7fff8, true));
        assert!(map.one_counter_per_event());
        assert!(map.selector_rows().is_empty() && map.raw_rows().is_empty());
        Box::leak(Box::new(map))
    }

    /// The guest's engine and the guest memory handed to it.
    struct Engine<'h> {
        pmu: Pmu<'static, HostHpm<&'h Host, Csr>>,
        mem: BufMemory,
    }

    impl<'h> core::ops::Deref for Engine<'h> {
        type Target = Pmu<'static, HostHpm<&'h Host, Csr>>;
        fn deref(&self) -> &Self::Target {
            &self.pmu
        }
    }

    impl core::ops::DerefMut for Engine<'_> {
        fn deref_mut(&mut self) -> &mut Self::Target {
            &mut self.pmu
        }
    }

    /// The hypervisor's own snapshot page (at 0x9000_0000), for the
    /// switches.
    fn switch_page() -> (u64, BufMemory) {
        let area = 0x9000_0000;
        (area, BufMemory::new(area, 0x1000, area, 0x1000))
    }

    fn guest(host: &Host) -> Engine<'_> {
        let hw = HostHpm::probe(Supervisor(host), Csr).expect("host PMU");
        assert_eq!(hw.present(), 0x7fff8);
        Engine {
            pmu: Pmu::new(guest_pmu_config(qemu_map()), hw),
            mem: BufMemory::new(0x8000_0000, 0x1_0000, 0x8000_0000, 0x1_0000),
        }
    }

    fn call(g: &mut Engine<'_>, fid: usize, a: [usize; 5]) -> SbiRet {
        rvpmu::ecall::pmu(
            &mut g.pmu,
            &mut g.mem,
            fid,
            [a[0], a[1], a[2], a[3], a[4], 0],
        )
    }

    #[test]
    fn the_guest_sees_the_hosts_hpm_counters_only() {
        let host = Host::default();
        let g = guest(&host);
        assert!(host.calls.borrow().is_empty(), "boot makes no host call");
        let mut g = g;
        // 16 HPM counters + 16 firmware counters, behind the alias window.
        assert_eq!(call(&mut g, 0, [0; 5]).value, 4096 + 19 + 16);
        for i in [0, 1, 2, 19 + 16] {
            assert_eq!(
                call(&mut g, 1, [i, 0, 0, 0, 0]).error,
                RET_ERR_INVALID_PARAM
            );
        }
        let info = call(&mut g, 1, [3, 0, 0, 0, 0]);
        assert_eq!(
            CounterInfo::decode(info.value as u64),
            CounterInfo::Hardware {
                csr: 0xC03,
                width: 64
            }
        );
        assert!(host.calls.borrow().is_empty(), "get_info is answered here");
    }

    #[test]
    fn guest_calls_become_host_calls_on_the_same_counter_with_vs_vu_filters() {
        let host = Host::default();
        let mut g = guest(&host);
        // Linux's instructions:u: SINH (+ VSINH|VUINH, vacuous for a
        // guest), CLEAR_VALUE; counters 3..=18.
        let flags = (CounterCfgFlags::CLEAR_VALUE
            | CounterCfgFlags::SET_SINH
            | CounterCfgFlags::SET_VSINH
            | CounterCfgFlags::SET_VUINH)
            .bits();
        assert_eq!(call(&mut g, 2, [3, 0xffff, flags, 2, 0]).value, 3);
        let mminh = (CounterCfgFlags::CLEAR_VALUE
            | CounterCfgFlags::SET_MINH
            | CounterCfgFlags::SET_SINH
            | CounterCfgFlags::SET_UINH)
            .bits();
        let vs = CounterCfgFlags::SET_VSINH.bits();
        assert_eq!(
            host.calls.take(),
            [(2, [3, 1, mminh | vs, 2])],
            "config_matching of counter 3 alone, event_idx 2, from 0, M/HS/U and VS inhibited"
        );
        // The guest's CLEAR_VALUE cost no call and left no pending value:
        // reads go to the host CSR (here the fake's 1000 + i; on a real
        // host 0, from the host's own CLEAR_VALUE).
        assert_eq!(g.hw().read_counter(3), 1003);
        // Start with a value, read through the CSR, stop, stop again.
        assert_eq!(call(&mut g, 3, [3, 1, 1, 77, 0]).error, RET_SUCCESS);
        assert_eq!(host.calls.take(), [(3, [3, 1, 1, 77])]);
        assert_eq!(g.hw().host_state(), (1 << 3, 1 << 3));
        // Snapshot area, then stop with TAKE_SNAPSHOT: the CSR's value.
        assert_eq!(
            call(&mut g, 7, [0x8000_1000, 0, 0, 0, 0]).error,
            RET_SUCCESS
        );
        assert_eq!(call(&mut g, 4, [3, 1, 2, 0, 0]).error, RET_SUCCESS);
        assert_eq!(host.calls.take(), [(4, [3, 1, 0, 0])]);
        let snap = rvpmu::snapshot::read_value(&g.mem, 0x8000_1000, 0).unwrap();
        assert_eq!(snap, 1003);
        // Start without a value: plain start; stop with RESET: stop, then
        // the release (stop RESET) on the host.
        assert_eq!(call(&mut g, 3, [3, 1, 0, 0, 0]).error, RET_SUCCESS);
        assert_eq!(call(&mut g, 4, [3, 1, 1, 0, 0]).error, RET_SUCCESS);
        assert_eq!(
            host.calls.take(),
            [(3, [3, 1, 0, 0]), (4, [3, 1, 0, 0]), (4, [3, 1, 1, 0])]
        );
        assert_eq!(g.hw().host_state(), (0, 0));
        // A released counter cannot be started: the engine says so, the
        // host hears nothing.
        assert_eq!(
            call(&mut g, 3, [3, 1, 0, 0, 0]).error,
            RET_ERR_INVALID_PARAM
        );
        // Kernel-only cycles: UINH -> VUINH.
        assert_eq!(
            call(
                &mut g,
                2,
                [3, 0xffff, CounterCfgFlags::SET_UINH.bits(), 1, 0]
            )
            .value,
            3
        );
        let vu = CounterCfgFlags::SET_VUINH.bits();
        assert_eq!(host.calls.take(), [(2, [3, 1, mminh | vu, 1])]);
        assert_eq!(g.hw().failures(), 0);
    }

    #[test]
    fn a_taken_overflow_is_the_guests_of_until_it_starts_the_counter_again() {
        let host = Host::default();
        let mut g = guest(&host);
        // Linux's sampling counter: counter 4 alone, instructions, started
        // with -period.
        assert_eq!(call(&mut g, 2, [4, 1, 0, 2, 0]).value, 4);
        let period = 100_000usize;
        assert_eq!(
            call(&mut g, 3, [4, 1, 1, period.wrapping_neg(), 0]).error,
            RET_SUCCESS
        );
        // Host counters 4 and 5 overflow; 5 is not the guest's.
        SCOUNTOVF.set(1 << 4 | 1 << 5);
        assert_eq!(g.hw_mut().take_overflow(), 1 << 4);
        assert_eq!(g.hw_mut().take_overflow(), 0, "taken once");
        // Whatever the host's OF says later (a switch restored the counter
        // with INIT_SNAPSHOT, which clears it), the guest sees its overflow.
        SCOUNTOVF.set(0);
        assert_eq!(g.hw().read_event(4) & bits::OF, bits::OF);
        // Linux's handler: stop with TAKE_SNAPSHOT, read the mask (bit 0:
        // relative to counter_idx_base 4) and the value.
        assert_eq!(
            call(&mut g, 7, [0x8000_1000, 0, 0, 0, 0]).error,
            RET_SUCCESS
        );
        assert_eq!(call(&mut g, 4, [4, 1, 2, 0, 0]).error, RET_SUCCESS);
        let mem = &g.mem;
        assert_eq!(rvpmu::snapshot::read_overflow(mem, 0x8000_1000).unwrap(), 1);
        assert_eq!(
            rvpmu::snapshot::read_value(mem, 0x8000_1000, 0).unwrap(),
            1004
        );
        // Restart from the snapshot (Linux's alias-window base 4096 + 4):
        // the overflow is consumed.
        rvpmu::snapshot::write_value(&mut g.mem, 0x8000_1000, 0, period.wrapping_neg() as u64)
            .unwrap();
        assert_eq!(call(&mut g, 3, [4096 + 4, 1, 2, 0, 0]).error, RET_SUCCESS);
        assert_eq!(g.hw().overflowed(), 0);
        assert_eq!(g.hw().read_event(4) & bits::OF, 0);
        let calls = host.calls.take();
        assert_eq!(
            calls.last(),
            Some(&(3, [4, 1, 1, period.wrapping_neg()])),
            "{calls:?}"
        );
        SCOUNTOVF.set(1 << 4);
    }

    #[test]
    fn a_switch_saves_and_restores_the_running_counters_through_the_host_snapshot() {
        let host = Host::default();
        let mut g = guest(&host);
        // The hypervisor's own page, registered with the host firmware.
        let (area, mut page) = switch_page();
        assert_eq!(g.hw_mut().switch_out(&page, area), (0, 0), "nothing runs");
        assert!(host.calls.borrow().is_empty());
        // instructions on 3, cycles on 5 (configured, started); 4 idle.
        assert_eq!(call(&mut g, 2, [3, 1, 0, 2, 0]).value, 3);
        assert_eq!(call(&mut g, 2, [5, 1, 0, 1, 0]).value, 5);
        assert_eq!(call(&mut g, 3, [3, 1, 0, 0, 0]).error, RET_SUCCESS);
        assert_eq!(call(&mut g, 3, [5, 1, 0, 0, 0]).error, RET_SUCCESS);
        host.calls.take();
        // What the host firmware writes at the stop: values relative to
        // base 3, counter 5 overflowed.
        rvpmu::snapshot::write_value(&mut page, area, 0, 111).unwrap();
        rvpmu::snapshot::write_value(&mut page, area, 2, 333).unwrap();
        rvpmu::snapshot::write_overflow(&mut page, area, 1 << 2).unwrap();
        SCOUNTOVF.set(0);
        let take = CounterStopFlags::TAKE_SNAPSHOT.bits();
        assert_eq!(
            g.hw_mut().switch_out(&page, area),
            (1 << 3 | 1 << 5, 1 << 5)
        );
        assert_eq!(host.calls.take(), [(4, [3, 0b101, take, 0])]);
        assert_eq!(g.hw().host_state(), (1 << 3 | 1 << 5, 0));
        // Another guest uses the page meanwhile.
        page.zero(area, 0x1000).unwrap();
        g.hw_mut().switch_in(&mut page, area);
        let init = CounterStartFlags::INIT_SNAPSHOT.bits();
        assert_eq!(host.calls.take(), [(3, [3, 0b101, init, 0])]);
        assert_eq!(rvpmu::snapshot::read_value(&page, area, 0), Ok(111));
        assert_eq!(rvpmu::snapshot::read_value(&page, area, 2), Ok(333));
        assert_eq!(g.hw().host_state(), (1 << 3 | 1 << 5, 1 << 3 | 1 << 5));
        // The overflow the switch found is the guest's until it restarts
        // the counter (the host's OF was cleared by INIT_SNAPSHOT's start).
        assert_eq!(g.hw().read_event(5) & bits::OF, bits::OF);
        assert_eq!(g.hw().read_event(3) & bits::OF, 0);
        assert_eq!(g.hw_mut().take_overflow(), 0);
        assert_eq!(g.hw().failures(), 0);
        SCOUNTOVF.set(1 << 4);
    }

    #[test]
    fn between_guests_the_counters_go_back_to_the_host_and_come_back_with_their_values() {
        let host = Host::default();
        let mut g = guest(&host);
        let (area, mut page) = switch_page();
        // Nothing configured: neither call reaches the host.
        g.hw_mut().release();
        g.hw_mut().reclaim();
        assert!(host.calls.borrow().is_empty());
        // instructions:u on 3, running; cycles on 5, configured and
        // stopped (its CSR reads 1005 in the fake host).
        assert_eq!(OPEN.get(), 0, "no counter of its own yet");
        assert_eq!(call(&mut g, 2, [3, 1, 1 << 6, 2, 0]).value, 3);
        assert_eq!(call(&mut g, 2, [5, 1, 0, 1, 0]).value, 5);
        assert_eq!(call(&mut g, 3, [3, 1, 0, 0, 0]).error, RET_SUCCESS);
        assert_eq!(OPEN.get(), 1 << 3 | 1 << 5, "its two counters only");
        host.calls.take();
        rvpmu::snapshot::write_value(&mut page, area, 0, 111).unwrap();
        rvpmu::snapshot::write_overflow(&mut page, area, 0).unwrap();
        SCOUNTOVF.set(0);
        assert_eq!(g.hw_mut().switch_out(&page, area), (1 << 3, 0));
        g.hw_mut().release();
        let (take, reset) = (
            CounterStopFlags::TAKE_SNAPSHOT.bits(),
            CounterStopFlags::RESET.bits(),
        );
        assert_eq!(
            host.calls.take(),
            [(4, [3, 1, take, 0]), (4, [3, 0b101, reset, 0])]
        );
        // The other guest ran (with its own counters open); this one
        // comes back: the same counters, events and filters, the stopped
        // one's value, then the running one from the snapshot.
        OPEN.set(1 << 7);
        page.zero(area, 0x1000).unwrap();
        g.hw_mut().reclaim();
        assert_eq!(OPEN.get(), 1 << 3 | 1 << 5, "its own counters again");
        g.hw_mut().switch_in(&mut page, area);
        let clear = CounterCfgFlags::CLEAR_VALUE.bits();
        let u = (CounterCfgFlags::SET_MINH | CounterCfgFlags::SET_SINH | CounterCfgFlags::SET_UINH)
            .bits();
        let (init, snap) = (
            CounterStartFlags::INIT_VALUE.bits(),
            CounterStartFlags::INIT_SNAPSHOT.bits(),
        );
        assert_eq!(
            host.calls.take(),
            [
                (2, [3, 1, u | CounterCfgFlags::SET_VSINH.bits() | clear, 2]),
                (2, [5, 1, u | clear, 1]),
                (3, [5, 1, init, 1005]),
                (4, [5, 1, 0, 0]),
                (3, [3, 1, snap, 0]),
            ]
        );
        assert_eq!(rvpmu::snapshot::read_value(&page, area, 0), Ok(111));
        assert_eq!(g.hw().host_state(), (1 << 3 | 1 << 5, 1 << 3));
        assert_eq!(g.hw().failures(), 0);
        // Released for good (the stopped one, stop with RESET): closed
        // to the guest.
        let r = call(&mut g, 4, [5, 1, CounterStopFlags::RESET.bits(), 0, 0]);
        assert!(r.error == RET_SUCCESS || r.error == sbi_spec::binary::RET_ERR_ALREADY_STOPPED);
        assert_eq!(OPEN.get(), 1 << 3);
        SCOUNTOVF.set(1 << 4);
    }

    #[test]
    fn malformed_guest_calls_never_reach_the_host() {
        let host = Host::default();
        let mut g = guest(&host);
        let bad: [(usize, [usize; 5], usize); 8] = [
            (2, [3, 0, 0, 2, 0], RET_ERR_INVALID_PARAM), // empty set
            (2, [3, 0xffff, 1 << 8, 2, 0], RET_ERR_INVALID_PARAM), // reserved flag
            (2, [1, 1, 0, 2, 0], RET_ERR_INVALID_PARAM), // time is no counter
            (2, [3, 0xffff, 0, 0x20000, 5], RET_ERR_NOT_SUPPORTED), // raw: no rows
            (2, [usize::MAX, 3, 0, 2, 0], RET_ERR_INVALID_PARAM), // wraps
            (3, [3, 1, 1 << 2, 0, 0], RET_ERR_INVALID_PARAM), // reserved start flag
            (4, [3, 1, 1 << 2, 0, 0], RET_ERR_INVALID_PARAM), // reserved stop flag
            (5, [3, 0, 0, 0, 0], RET_ERR_INVALID_PARAM), // fw_read of a hardware counter
        ];
        for (fid, a, e) in bad {
            assert_eq!(call(&mut g, fid, a).error, e, "fid {fid} {a:x?}");
        }
        assert!(host.calls.borrow().is_empty());
    }

    #[test]
    fn a_host_refusal_is_counted_not_hidden() {
        let host = Host {
            refuse: true,
            ..Host::default()
        };
        let mut g = guest(&host);
        assert_eq!(call(&mut g, 2, [3, 0xffff, 0, 2, 0]).value, 3);
        assert_eq!(g.hw().failures(), 1);
        assert_eq!(g.hw().host_state(), (0, 0));
        // Starting it asks the host for the counter again (the engine
        // rewrites the program at start) and, refused again, starts
        // nothing on the host.
        assert_eq!(call(&mut g, 3, [3, 1, 0, 0, 0]).error, RET_SUCCESS);
        let calls = host.calls.take();
        assert_eq!(calls.len(), 2);
        assert!(calls.iter().all(|c| c.0 == 2), "{calls:?}");
        assert_eq!(g.hw().failures(), 2);
    }

    #[test]
    fn overflow_and_widths_come_from_the_host() {
        let host = Host::default();
        let mut hw = HostHpm::probe(Supervisor(&host), Csr).unwrap();
        assert_eq!(hw.probe_width(3), 64);
        assert_eq!(hw.probe_width(19), 0);
        assert_eq!(hw.read_event(4) & bits::OF, bits::OF);
        assert_eq!(hw.read_event(3) & bits::OF, 0);
        assert_eq!(hw.read_counter(5), 1005);
        assert_eq!(hw.read_counter(2), 0, "not the guest's");
    }

    #[test]
    fn no_host_pmu_no_guest_pmu() {
        struct NoPmu;
        impl SbiCall for NoPmu {
            fn call(&mut self, _: usize, _: usize, _: [usize; 6]) -> SbiRet {
                SbiRet { error: 0, value: 0 }
            }
        }
        assert!(HostHpm::probe(Supervisor(NoPmu), Csr).is_none());
    }
}
