//! The per-hart PMU engine: the semantics of the nine SBI PMU functions.
//!
//! Every function takes typed values only ([`CounterSet`], [`Event`],
//! [`Counter`], the flags as `sbi-spec`'s bitflags with no undefined bit,
//! [`InitialValue`], the shared-memory areas); [`crate::ecall`] builds them
//! from the registers and answers a call that cannot be typed itself. Every
//! function checks the state before it changes anything (so an error leaves
//! the state untouched), then acts. Counter state is kept as bitmaps over
//! canonical logical indices (see [`crate::counter`]).

use crate::counter::{
    BitIter, Counter, CounterLayout, CounterSet, CYCLE, HW_SLOTS, INSTRET, NUM_FW,
};
use crate::dt::{EventMap, CACHE_SLOT_BASE, TABLE_SLOTS};
use crate::event::{Cache, Event, FwEvent, General, FW_EVENT_COUNT};
use crate::hw::{bits, Hpm};
use crate::mem::SupervisorMemory;
use crate::snapshot::{self, event_info, SnapshotArea, SNAPSHOT_SIZE};
use crate::{CounterInfo, Error};
pub use sbi_spec::pmu::flags::{CounterCfgFlags, CounterStartFlags, CounterStopFlags};

/// What counter_start gives the counters it starts: `start_flags` and
/// `initial_value` of `sbi_pmu_counter_start`, typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitialValue {
    /// No flag: each counter keeps its value.
    Current,
    /// SBI_PMU_START_SET_INIT_VALUE: every counter gets this value.
    Value(u64),
    /// SBI_PMU_START_FLAG_INIT_SNAPSHOT: each counter gets its value from
    /// the snapshot area.
    Snapshot,
}

impl InitialValue {
    /// Type valid start flags: INIT_VALUE and INIT_SNAPSHOT together are
    /// INVALID_PARAM (the spec calls them mutually exclusive).
    #[inline(always)]
    pub fn from_flags(flags: CounterStartFlags, initial_value: u64) -> Result<Self, Error> {
        if flags.contains(CounterStartFlags::INIT_VALUE | CounterStartFlags::INIT_SNAPSHOT) {
            Err(Error::InvalidParam)
        } else if flags.contains(CounterStartFlags::INIT_SNAPSHOT) {
            Ok(InitialValue::Snapshot)
        } else if flags.contains(CounterStartFlags::INIT_VALUE) {
            Ok(InitialValue::Value(initial_value))
        } else {
            Ok(InitialValue::Current)
        }
    }
}

/// ISA features that change what the engine can do. More may come with
/// new extensions, so it is built from [`IsaFeatures::none`] with the
/// `with_*` methods (or by assigning its fields), never by a literal
/// outside this crate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IsaFeatures {
    /// Sscofpmf: OF and xINH bits in mhpmevent, overflow interrupt.
    pub sscofpmf: bool,
    /// Smcntrpmf: privilege filtering of mcycle/minstret.
    pub smcntrpmf: bool,
    /// H extension: VS/VU modes exist.
    pub h: bool,
}

impl IsaFeatures {
    /// None of the features.
    pub const fn none() -> IsaFeatures {
        IsaFeatures {
            sscofpmf: false,
            smcntrpmf: false,
            h: false,
        }
    }
    /// With or without Sscofpmf.
    pub const fn with_sscofpmf(mut self, on: bool) -> IsaFeatures {
        self.sscofpmf = on;
        self
    }
    /// With or without Smcntrpmf.
    pub const fn with_smcntrpmf(mut self, on: bool) -> IsaFeatures {
        self.smcntrpmf = on;
        self
    }
    /// With or without the H extension.
    pub const fn with_h(mut self, on: bool) -> IsaFeatures {
        self.h = on;
        self
    }
}

/// Maximum implementation-specific / platform firmware events a platform
/// can declare.
pub const MAX_EXTRA_FW_EVENTS: usize = 8;

/// The firmware events this platform's firmware records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FwEventSet {
    /// Bit `n`: standard event code `n` (0..=21) is recorded.
    pub standard: u32,
    /// Implementation-specific codes (256..=65534) recorded, `0` = unused slot.
    pub implementation: [u16; MAX_EXTRA_FW_EVENTS],
    /// Platform event_data values recorded (SBI_PMU_FW_PLATFORM).
    pub platform: [Option<u64>; MAX_EXTRA_FW_EVENTS],
}

impl FwEventSet {
    /// Every standard event except the hypervisor fences.
    pub const fn without_h() -> FwEventSet {
        FwEventSet {
            standard: (1 << 14) - 1,
            implementation: [0; MAX_EXTRA_FW_EVENTS],
            platform: [None; MAX_EXTRA_FW_EVENTS],
        }
    }
    /// All 22 standard events.
    pub const fn all_standard() -> FwEventSet {
        FwEventSet {
            standard: (1 << FW_EVENT_COUNT) - 1,
            implementation: [0; MAX_EXTRA_FW_EVENTS],
            platform: [None; MAX_EXTRA_FW_EVENTS],
        }
    }
    #[inline(always)]
    fn contains(&self, ev: &Event) -> bool {
        match *ev {
            Event::Firmware(f) => self.standard & (1 << f as u32) != 0,
            Event::FirmwareImpl(c) => self.implementation.contains(&c),
            Event::FirmwarePlatform(d) => self.platform.contains(&Some(d)),
            _ => false,
        }
    }
}

/// Platform description shared read-only by all harts. More settings may
/// come, so it is built with [`PmuConfig::new`] and the `with_*` methods
/// (or by assigning its fields), never by a literal outside this crate.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct PmuConfig<'a> {
    /// Event-to-counter map from the `riscv,pmu` node.
    pub map: &'a EventMap,
    /// ISA features of the harts.
    pub isa: IsaFeatures,
    /// Firmware events the firmware records.
    pub fw_events: FwEventSet,
    /// Offer the counter snapshot (FID 7); without it FID 7 answers
    /// NOT_SUPPORTED.
    pub snapshot: bool,
    /// Expose the alias window at [`crate::counter::ALIAS_BASE`].
    pub alias_window: bool,
}

impl<'a> PmuConfig<'a> {
    /// The harts' event map and ISA features; every standard firmware
    /// event recorded (without the hypervisor fences when there is no H
    /// extension), the snapshot offered, no alias window.
    pub const fn new(map: &'a EventMap, isa: IsaFeatures) -> PmuConfig<'a> {
        PmuConfig {
            map,
            isa,
            fw_events: if isa.h {
                FwEventSet::all_standard()
            } else {
                FwEventSet::without_h()
            },
            snapshot: true,
            alias_window: false,
        }
    }
    /// The firmware events the firmware records.
    pub const fn with_fw_events(mut self, fw_events: FwEventSet) -> PmuConfig<'a> {
        self.fw_events = fw_events;
        self
    }
    /// Offer the snapshot (FID 7) or not.
    pub const fn with_snapshot(mut self, on: bool) -> PmuConfig<'a> {
        self.snapshot = on;
        self
    }
    /// Expose the alias window or not.
    pub const fn with_alias_window(mut self, on: bool) -> PmuConfig<'a> {
        self.alias_window = on;
        self
    }
}

/// The mhpmevent bits that name the event: all but Sscofpmf's OF and mode
/// inhibits (bits 58..63), which say when to count, not what. Hardware that
/// counts an event on one counter only keys its event map on these (QEMU on
/// the low 20 of them).
const EVENT_SELECT: u64 = !(bits::OF | bits::ALL_INH);

/// How a hardware counter was programmed by config_matching.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct HwProgram {
    /// mhpmevent value (or mcyclecfg/minstretcfg) without OF.
    event_reg: u64,
}

/// The firmware event a firmware counter is mapped to (only firmware
/// events are ever mapped to firmware counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FwSel {
    None,
    Standard(FwEvent),
    Impl(u16),
    Platform(u64),
}

impl FwSel {
    /// The selector for a firmware event (None for a hardware event).
    #[inline(always)]
    fn of(ev: &Event) -> FwSel {
        match *ev {
            Event::Firmware(e) => FwSel::Standard(e),
            Event::FirmwareImpl(c) => FwSel::Impl(c),
            Event::FirmwarePlatform(d) => FwSel::Platform(d),
            _ => FwSel::None,
        }
    }
}

/// A hardware event as config_matching maps it: the counters that can
/// count it and the selector they get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HwEvent {
    /// Hardware counters (canonical bitmap) able to count it:
    /// [`Pmu::hw_candidates`].
    pub(crate) candidates: u64,
    /// Its mhpmevent selector ([`EventMap::selector`]).
    pub(crate) selector: u64,
}

/// counter_start's answer: ALREADY_STARTED if some member was counting.
#[inline(always)]
fn started(already: bool) -> Result<(), Error> {
    if already {
        Err(Error::AlreadyStarted)
    } else {
        Ok(())
    }
}

/// counter_stop's answer: ALREADY_STOPPED if some member was not counting.
#[inline(always)]
fn stopped(already: bool) -> Result<(), Error> {
    if already {
        Err(Error::AlreadyStopped)
    } else {
        Ok(())
    }
}

/// One hart's PMU: engine state plus its hardware seam. The supervisor's
/// memory is not held: each call that reads or writes it (counter_start,
/// counter_stop, snapshot_set_shmem, event_get_info) takes it as an
/// argument, as the STA calls do, so an embedder hands over the view that
/// is current (a hypervisor its guest's) and keeps it for its own calls.
pub struct Pmu<'a, H: Hpm> {
    cfg: PmuConfig<'a>,
    hw: H,
    layout: CounterLayout,
    /// Counters owned by a config_matching mapping (released by RESET).
    allocated: u64,
    /// Counters currently counting.
    started: u64,
    /// HPM counters (canonical bitmap) that may not share an event
    /// selector: every present HPM counter when the platform counts an
    /// event on one counter only ([`EventMap::one_counter_per_event`]),
    /// else 0, which turns the check off. Fixed and firmware counters
    /// are never in it.
    exclusive: u64,
    programs: [HwProgram; HW_SLOTS],
    fw_sel: [FwSel; NUM_FW],
    fw_value: [u64; NUM_FW],
    /// Per standard firmware event: firmware counters (bit = fw number)
    /// mapped to it. Combined with `fw_running` on the recording hot path.
    fw_listen: [u16; FW_EVENT_COUNT],
    fw_running: u16,
    snapshot_shmem: Option<u64>,
    /// [`Self::hw_candidates`] of every general and cache event, by table
    /// slot ([`table_slot`](crate::dt::table_slot)), worked out at construction
    /// (neither the event map nor the counters change afterwards):
    /// config_matching and event_get_info read these events' candidates
    /// here, without the event map.
    hw_table: [u32; TABLE_SLOTS],
}

impl<'a, H: Hpm> Pmu<'a, H> {
    /// Probe the hart's counters through `hw` and put them in their boot
    /// state: cycle and instret configured and counting, every HPM counter
    /// inhibited with an empty selector.
    ///
    /// The hardware counters are those [`Hpm::present`] names; their
    /// widths are probed, not assumed.
    pub fn new(cfg: PmuConfig<'a>, mut hw: H) -> Self {
        let hw_present = hw.present();
        let mut widths = [0u8; HW_SLOTS];
        for i in BitIter(hw_present as u64) {
            widths[i] = if i == CYCLE || i == INSTRET {
                64
            } else {
                hw.probe_width(i)
            };
        }
        let layout = CounterLayout::new(widths, cfg.alias_window);
        let mut inhibit = u32::MAX;
        for i in BitIter(layout.hw_present() as u64) {
            if i >= 3 {
                hw.write_event(i, 0);
            } else if cfg.isa.smcntrpmf {
                hw.write_fixed_cfg(i, 0);
            }
            if i == CYCLE || i == INSTRET {
                inhibit &= !(1 << i);
            }
        }
        hw.write_inhibit(inhibit);
        let started = (layout.hw_present() as u64) & (1 << CYCLE | 1 << INSTRET);
        let exclusive = if cfg.map.one_counter_per_event() {
            (layout.hw_present() & !(1 << CYCLE | 1 << INSTRET)) as u64
        } else {
            0
        };
        let mut pmu = Pmu {
            cfg,
            hw,
            layout,
            allocated: 0,
            started,
            exclusive,
            programs: [HwProgram::default(); HW_SLOTS],
            fw_sel: [FwSel::None; NUM_FW],
            fw_value: [0; NUM_FW],
            fw_listen: [0; FW_EVENT_COUNT],
            fw_running: 0,
            snapshot_shmem: None,
            hw_table: [0; TABLE_SLOTS],
        };
        for g in General::ALL {
            pmu.hw_table[g as usize] = pmu.hw_candidates(&Event::General(g)) as u32;
        }
        for code in 0..Cache::CODE_SPACE as u16 {
            if let Some(c) = Cache::from_code(code) {
                pmu.hw_table[CACHE_SLOT_BASE + code as usize] =
                    pmu.hw_candidates(&Event::Cache(c)) as u32;
            }
        }
        pmu
    }

    /// The counter layout.
    pub fn layout(&self) -> &CounterLayout {
        &self.layout
    }
    /// The hardware seam (tests inspect the simulated hart through this).
    pub fn hw(&self) -> &H {
        &self.hw
    }
    /// The hardware seam, mutably.
    pub fn hw_mut(&mut self) -> &mut H {
        &mut self.hw
    }
    /// Counters currently counting (canonical bitmap).
    pub fn started_mask(&self) -> u64 {
        self.started
    }
    /// Counters holding a config_matching mapping (canonical bitmap).
    pub fn allocated_mask(&self) -> u64 {
        self.allocated
    }
    /// The registered snapshot area.
    pub fn snapshot_area(&self) -> Option<u64> {
        self.snapshot_shmem
    }

    // ---- firmware event recording (hot path) ----

    /// Count one occurrence of a standard firmware event on this hart.
    #[inline]
    pub fn record(&mut self, ev: FwEvent) {
        let m = self.fw_listen[ev as usize] & self.fw_running;
        if m != 0 {
            for i in BitIter(m as u64) {
                self.fw_value[i] = self.fw_value[i].wrapping_add(1);
            }
        }
    }

    /// Count one implementation-specific firmware event (codes 256..=65534).
    pub fn record_impl(&mut self, code: u16) {
        self.record_matching(Event::FirmwareImpl(code));
    }

    /// Count one platform firmware event named by `event_data`.
    pub fn record_platform(&mut self, data: u64) {
        self.record_matching(Event::FirmwarePlatform(data));
    }

    fn record_matching(&mut self, ev: Event) {
        for i in BitIter(self.fw_running as u64) {
            if self.fw_sel[i] == FwSel::of(&ev) {
                self.fw_value[i] = self.fw_value[i].wrapping_add(1);
            }
        }
    }

    // ---- the nine functions ----

    /// FID 0.
    pub fn num_counters(&self) -> usize {
        self.layout.num_counters()
    }

    /// FID 1 (`counter` from [`CounterLayout::resolve`]).
    pub fn counter_get_info(&self, counter: Counter) -> CounterInfo {
        self.layout.counter_info(counter)
    }

    /// Whether FID 7 (the counter snapshot) is offered; if not, it answers
    /// NOT_SUPPORTED whatever its arguments.
    pub fn snapshot_offered(&self) -> bool {
        self.cfg.snapshot
    }

    /// Counters that are configured: mapped by config_matching, or a fixed
    /// counter (always set up for its event).
    fn configured_mask(&self) -> u64 {
        self.allocated | 1 << CYCLE | 1 << INSTRET
    }

    /// Whether canonical counter `c` is configured.
    fn configured(&self, c: usize) -> bool {
        self.configured_mask() & (1 << c) != 0
    }

    /// Inhibit bits the caller asked for, reduced to modes that exist.
    fn requested_inhibit(&self, flags: CounterCfgFlags) -> u64 {
        let mut r = 0;
        if flags.contains(CounterCfgFlags::SET_MINH) {
            r |= bits::MINH;
        }
        if flags.contains(CounterCfgFlags::SET_SINH) {
            r |= bits::SINH;
        }
        if flags.contains(CounterCfgFlags::SET_UINH) {
            r |= bits::UINH;
        }
        if self.cfg.isa.h {
            if flags.contains(CounterCfgFlags::SET_VSINH) {
                r |= bits::VSINH;
            }
            if flags.contains(CounterCfgFlags::SET_VUINH) {
                r |= bits::VUINH;
            }
        }
        r
    }

    /// Hardware counters (canonical bitmap, any counter index) that can
    /// apply privilege filters: [`Self::can_filter`] as a mask.
    #[inline(always)]
    fn filterable(&self) -> u64 {
        let fixed = 1u64 << CYCLE | 1 << INSTRET;
        let mut m = 0;
        if self.cfg.isa.smcntrpmf {
            m |= fixed;
        }
        if self.cfg.isa.sscofpmf {
            m |= !fixed;
        }
        m
    }

    /// Whether hardware counter `i` can apply privilege filters.
    fn can_filter(&self, i: usize) -> bool {
        if i == CYCLE || i == INSTRET {
            self.cfg.isa.smcntrpmf
        } else {
            self.cfg.isa.sscofpmf
        }
    }

    /// Hardware counters (canonical bitmap) able to count `ev`.
    fn hw_candidates(&self, ev: &Event) -> u64 {
        let mut m = self.cfg.map.counters(ev);
        match ev {
            Event::General(crate::event::General::CpuCycles) => m |= 1 << CYCLE,
            Event::General(crate::event::General::Instructions) => m |= 1 << INSTRET,
            _ => {
                // Only cycles/instructions may use the fixed counters.
                m &= !(1 << CYCLE | 1 << INSTRET);
            }
        }
        (m & self.layout.hw_present()) as u64
    }

    /// Whether this platform can count `ev` at all (event_get_info).
    pub fn countable(&self, ev: &Event) -> bool {
        if ev.is_hardware() {
            self.hw_candidates(ev) != 0
        } else {
            self.cfg.fw_events.contains(ev)
        }
    }

    /// FID 2: find a free counter in the set able to count the event,
    /// program it and return its index (in the caller's index space); with
    /// SKIP_MATCH, re-configure the set's first counter in place.
    #[inline(always)]
    pub fn counter_config_matching(
        &mut self,
        set: &CounterSet,
        flags: CounterCfgFlags,
        ev: &Event,
    ) -> Result<u64, Error> {
        if flags.contains(CounterCfgFlags::SKIP_MATCH) {
            self.config_in_place(set, flags)
        } else {
            self.config_match(set, flags, ev)
        }
    }

    /// config_matching with SKIP_MATCH: the set's first counter (lowest
    /// mask bit) must be configured; it keeps its programming (the event,
    /// checked by the caller, is not looked at), then CLEAR_VALUE and
    /// AUTO_START apply. Nothing out of line (CSR accesses are inline asm).
    #[inline(always)]
    pub(crate) fn config_in_place(
        &mut self,
        set: &CounterSet,
        flags: CounterCfgFlags,
    ) -> Result<u64, Error> {
        let c = set.first();
        if !self.configured(c) {
            return Err(Error::InvalidParam);
        }
        Ok(self.matched(set, c, flags))
    }

    /// config_matching for standard firmware event `ev` with flags that do
    /// not include SKIP_MATCH: what Linux asks for every firmware event it
    /// counts, given a path of its own by [`crate::ecall`]. Firmware events
    /// are cheap for any firmware to map, and the general path's hardware
    /// lookups would cost more than the rest of the call. Same answers as
    /// [`Self::config_match`] (the reference model in tests/model.rs drives
    /// both).
    #[inline(always)]
    pub(crate) fn config_standard_fw(
        &mut self,
        set: &CounterSet,
        flags: CounterCfgFlags,
        ev: FwEvent,
    ) -> Result<u64, Error> {
        if self.cfg.fw_events.standard & (1 << ev as u32) == 0 {
            return Err(Error::NotSupported);
        }
        let free = set.members() & self.layout.fw_mask() & !self.allocated & !self.started;
        if free == 0 {
            return Err(Error::NotSupported);
        }
        let c = free.trailing_zeros() as usize;
        // `c` is a firmware counter, so `f < NUM_FW`; the modulo says so
        // to the compiler (no bounds checks below).
        let f = (c - self.layout.fw_base()) % NUM_FW;
        self.allocated |= 1 << c;
        self.map_fw(f, FwSel::Standard(ev));
        // `matched`, specialised: no CSR path, nothing out of line.
        if flags.contains(CounterCfgFlags::CLEAR_VALUE) {
            self.fw_value[f] = 0;
        }
        if flags.contains(CounterCfgFlags::AUTO_START) {
            self.start_fw(c, f);
        }
        Ok(set.caller_index(c))
    }

    /// config_matching without SKIP_MATCH, for any event.
    #[inline(always)]
    pub(crate) fn config_match(
        &mut self,
        set: &CounterSet,
        flags: CounterCfgFlags,
        ev: &Event,
    ) -> Result<u64, Error> {
        if ev.is_hardware() {
            let hw = self.hw_event(ev);
            self.config_hw(set, flags, hw)
        } else {
            let free = set.members() & !self.allocated & !self.started;
            let candidates = if self.cfg.fw_events.contains(ev) {
                free & self.layout.fw_mask()
            } else {
                0
            };
            if candidates == 0 {
                return Err(Error::NotSupported);
            }
            let c = candidates.trailing_zeros() as usize;
            self.allocated |= 1 << c;
            if let Counter::Fw(f) = self.layout.kind(c) {
                self.map_fw(f as usize, FwSel::of(ev));
            }
            Ok(self.matched(set, c, flags))
        }
    }

    /// The candidates and selector of hardware event `ev`.
    #[inline(always)]
    pub(crate) fn hw_event(&self, ev: &Event) -> HwEvent {
        HwEvent {
            candidates: self.hw_candidates(ev),
            selector: self.cfg.map.selector(ev),
        }
    }

    /// [`Self::hw_event`] of the general or cache event in table slot
    /// `slot` ([`table_slot`](crate::dt::table_slot)) whose `event_idx` is `event_idx`: two
    /// loads, no decoded event.
    #[inline(always)]
    pub(crate) fn table_event(&self, slot: usize, event_idx: u64) -> HwEvent {
        HwEvent {
            candidates: self.hw_table.get(slot).map_or(0, |&c| c as u64),
            selector: self.cfg.map.table_selector(slot, event_idx),
        }
    }

    /// config_matching without SKIP_MATCH for hardware event `hw`: find a
    /// free counter for it in `set`, program it, then CLEAR_VALUE and
    /// AUTO_START. Nothing out of line (CSR accesses are inline asm).
    #[inline(always)]
    pub(crate) fn config_hw(
        &mut self,
        set: &CounterSet,
        flags: CounterCfgFlags,
        hw: HwEvent,
    ) -> Result<u64, Error> {
        let c = self.find_hw_counter(set, hw, flags)?;
        self.program_hw(c, hw.selector, flags);
        Ok(self.matched(set, c, flags))
    }

    /// The end of config_matching once counter `c` is chosen: CLEAR_VALUE,
    /// AUTO_START, and the caller's index.
    #[inline(always)]
    fn matched(&mut self, set: &CounterSet, c: usize, flags: CounterCfgFlags) -> u64 {
        if flags.contains(CounterCfgFlags::CLEAR_VALUE) {
            self.write_value(c, 0);
        }
        if flags.contains(CounterCfgFlags::AUTO_START) && self.started & (1 << c) == 0 {
            self.start_one(c);
        }
        set.caller_index(c)
    }

    /// The counter config_matching picks for hardware event `hw` in `set`.
    #[inline(always)]
    fn find_hw_counter(
        &self,
        set: &CounterSet,
        hw: HwEvent,
        flags: CounterCfgFlags,
    ) -> Result<usize, Error> {
        let free = set.members() & !self.allocated & !self.started;
        let mut candidates = free & hw.candidates;
        // One counter per event: a second HPM counter with this selector
        // would read 0, so none is a candidate while one holds it (the
        // fixed counters count on their own and stay). The first test is
        // all the check costs while no HPM counter is configured, e.g.
        // Linux's boot-time probing of every event.
        if self.allocated & self.exclusive != 0 && self.selector_held(hw.selector) {
            candidates &= !self.exclusive;
        }
        if self.requested_inhibit(flags) != 0 {
            // Never fall back to a counter that would ignore the filters.
            candidates &= self.filterable();
        }
        if candidates == 0 {
            return Err(Error::NotSupported);
        }
        // With Sscofpmf only HPM counters raise overflow interrupts, so
        // sampling needs them: use the fixed counters last.
        let fixed = 1u64 << CYCLE | 1 << INSTRET;
        let preferred = if self.cfg.isa.sscofpmf && candidates & !fixed != 0 {
            candidates & !fixed
        } else {
            candidates
        };
        Ok(preferred.trailing_zeros() as usize)
    }

    /// Whether a configured HPM counter under the one-counter-per-event
    /// rule holds `selector`. Walks only the configured ones (Linux holds
    /// a handful at most), reading their selectors back from the programs
    /// kept for start.
    #[inline(always)]
    fn selector_held(&self, selector: u64) -> bool {
        let key = selector & EVENT_SELECT;
        BitIter(self.allocated & self.exclusive)
            .any(|i| self.programs[i % HW_SLOTS].event_reg & EVENT_SELECT == key)
    }

    /// Map hardware counter `c` (canonical index, stopped) to `selector`
    /// with the filters `flags` ask for.
    #[inline(always)]
    fn program_hw(&mut self, c: usize, selector: u64, flags: CounterCfgFlags) {
        self.allocated |= 1 << c;
        if let Counter::Hw(i) = self.layout.kind(c) {
            let i = i as usize;
            let mut reg = if i >= 3 { selector } else { 0 };
            if self.can_filter(i) {
                // M-mode is always inhibited: firmware activity is not the
                // supervisor's to measure (the spec lets us override).
                reg |= self.requested_inhibit(flags) | bits::MINH;
            }
            self.programs[i % HW_SLOTS] = HwProgram { event_reg: reg };
            self.write_event_reg(i, reg);
        }
    }

    /// Map firmware counter `f` to `sel` (in place of what it counted).
    #[inline(always)]
    fn map_fw(&mut self, f: usize, sel: FwSel) {
        self.unlisten(f);
        self.fw_sel[f % NUM_FW] = sel;
        if let FwSel::Standard(e) = sel {
            self.fw_listen[e as usize] |= 1 << f;
        }
    }

    #[inline(always)]
    fn unlisten(&mut self, f: usize) {
        if let FwSel::Standard(e) = self.fw_sel[f % NUM_FW] {
            self.fw_listen[e as usize] &= !(1 << f);
        }
    }

    #[inline(always)]
    fn write_event_reg(&mut self, i: usize, reg: u64) {
        if i >= 3 {
            self.hw.write_event(i, reg & !bits::OF);
        } else if self.cfg.isa.smcntrpmf {
            self.hw.write_fixed_cfg(i, reg);
        }
    }

    #[inline(always)]
    fn write_value(&mut self, c: usize, v: u64) {
        match self.layout.kind(c) {
            Counter::Hw(i) => self.hw.write_counter(i as usize, v),
            Counter::Fw(f) => self.fw_value[f as usize % NUM_FW] = v,
        }
    }

    #[inline]
    fn read_value(&self, c: usize) -> u64 {
        match self.layout.kind(c) {
            Counter::Hw(i) => self.hw.read_counter(i as usize),
            Counter::Fw(f) => self.fw_value[f as usize % NUM_FW],
        }
    }

    #[inline(always)]
    fn start_one(&mut self, c: usize) {
        match self.layout.kind(c) {
            Counter::Hw(i) => {
                let i = i as usize;
                // Clear OF after the value is in place, then let it count:
                // the overflow interrupt can only follow the new value.
                if self.cfg.isa.sscofpmf && i >= 3 {
                    self.hw
                        .write_event(i, self.programs[i % HW_SLOTS].event_reg & !bits::OF);
                }
                self.started |= 1 << c;
                self.hw.uninhibit(1 << i);
            }
            Counter::Fw(f) => self.start_fw(c, f as usize),
        }
    }

    /// Start canonical counter `c`, firmware counter `f`.
    #[inline(always)]
    fn start_fw(&mut self, c: usize, f: usize) {
        self.started |= 1 << c;
        self.fw_running |= 1 << f;
    }

    /// FID 3 (`mem`: where the snapshot area is read from).
    #[inline(always)]
    pub fn counter_start<M: SupervisorMemory + ?Sized>(
        &mut self,
        mem: &M,
        set: &CounterSet,
        value: InitialValue,
    ) -> Result<(), Error> {
        match value {
            InitialValue::Snapshot => self.start_from_snapshot(mem, set),
            InitialValue::Value(v) => self.start_plain(set, Some(v)),
            InitialValue::Current => self.start_plain(set, None),
        }
    }

    /// counter_start without INIT_SNAPSHOT: every stopped member of `set`
    /// gets `value` (None: keeps its value) and starts. No calls (CSR
    /// accesses are inline asm), so no return address to save.
    #[inline(always)]
    pub(crate) fn start_plain(
        &mut self,
        set: &CounterSet,
        value: Option<u64>,
    ) -> Result<(), Error> {
        if set.members() & !self.configured_mask() != 0 {
            return Err(Error::InvalidParam);
        }
        started(self.start_members(set, |_, _| Ok(value))?)
    }

    /// counter_start with INIT_SNAPSHOT: each member's value from the
    /// snapshot area.
    #[inline(never)]
    pub(crate) fn start_from_snapshot<M: SupervisorMemory + ?Sized>(
        &mut self,
        mem: &M,
        set: &CounterSet,
    ) -> Result<(), Error> {
        if set.members() & !self.configured_mask() != 0 {
            return Err(Error::InvalidParam);
        }
        let area = self.snapshot_shmem.ok_or(Error::NoShmem)?;
        let already = self.start_members(set, |_, j| {
            snapshot::read_value(mem, area, j)
                .map(Some)
                .map_err(|_| Error::Failed)
        })?;
        started(already)
    }

    /// Start every stopped member of `set`, first giving it the value
    /// `value` returns for it (None: keep its value). Returns whether some
    /// member was already started; an error from `value` stops the loop.
    #[inline(always)]
    fn start_members(
        &mut self,
        set: &CounterSet,
        mut value: impl FnMut(&Self, usize) -> Result<Option<u64>, Error>,
    ) -> Result<bool, Error> {
        let mut already = false;
        for (j, c) in set.iter() {
            if self.started & (1 << c) != 0 {
                already = true;
                continue;
            }
            if let Some(v) = value(self, j)? {
                self.write_value(c, v);
            }
            self.start_one(c);
        }
        Ok(already)
    }

    /// FID 4 (`mem`: where the snapshot area is written).
    #[inline(always)]
    pub fn counter_stop<M: SupervisorMemory + ?Sized>(
        &mut self,
        mem: &mut M,
        set: &CounterSet,
        flags: CounterStopFlags,
    ) -> Result<(), Error> {
        if flags.contains(CounterStopFlags::TAKE_SNAPSHOT) {
            self.stop_with_snapshot(mem, set, flags)
        } else {
            self.stop_plain(set, flags)
        }
    }

    /// counter_stop without TAKE_SNAPSHOT: each member on its own is
    /// stopped, then released with RESET. No calls, as in
    /// [`Self::start_plain`].
    #[inline(always)]
    pub(crate) fn stop_plain(
        &mut self,
        set: &CounterSet,
        flags: CounterStopFlags,
    ) -> Result<(), Error> {
        let already = self.stop_members(set);
        if flags.contains(CounterStopFlags::RESET) {
            for (_, c) in set.iter() {
                self.release(c);
            }
        }
        stopped(already)
    }

    /// Stop every member of `set` that is counting, the hardware ones with
    /// one mcountinhibit write (a stopped hardware counter is inhibited
    /// already); whether some member was not counting.
    #[inline(always)]
    fn stop_members(&mut self, set: &CounterSet) -> bool {
        let members = set.members();
        let counting = self.started & members;
        self.started &= !members;
        let fw = self.layout.fw_mask();
        // Hardware counter `c` is CSR offset `c`: its mcountinhibit bit.
        let hw = counting & !fw;
        if hw != 0 {
            self.hw.inhibit(hw as u32);
        }
        self.fw_running &= !((counting & fw) >> self.layout.fw_base()) as u16;
        counting != members
    }

    /// counter_stop with TAKE_SNAPSHOT: every member stopped, the snapshot
    /// taken of their stopped values, then RESET.
    #[inline(never)]
    pub(crate) fn stop_with_snapshot<M: SupervisorMemory + ?Sized>(
        &mut self,
        mem: &mut M,
        set: &CounterSet,
        flags: CounterStopFlags,
    ) -> Result<(), Error> {
        let area = self.snapshot_shmem.ok_or(Error::NoShmem)?;
        let already = self.stop_members(set);
        self.take_snapshot(mem, area, set)?;
        if flags.contains(CounterStopFlags::RESET) {
            for (_, c) in set.iter() {
                self.release(c);
            }
        }
        stopped(already)
    }

    fn take_snapshot<M: SupervisorMemory + ?Sized>(
        &mut self,
        mem: &mut M,
        area: u64,
        set: &CounterSet,
    ) -> Result<(), Error> {
        let mut overflow = 0u64;
        for (j, c) in set.iter() {
            let v = self.read_value(c);
            snapshot::write_value(mem, area, j, v).map_err(|_| Error::Failed)?;
            if let Counter::Hw(i) = self.layout.kind(c) {
                if self.cfg.isa.sscofpmf && i >= 3 && self.hw.read_event(i as usize) & bits::OF != 0
                {
                    overflow |= 1 << j;
                }
            }
        }
        // Without Sscofpmf the bitmap "must be zero" (Table 16).
        let new = if self.cfg.isa.sscofpmf {
            let old = snapshot::read_overflow(mem, area).map_err(|_| Error::Failed)?;
            (old & !set.relative_mask()) | overflow
        } else {
            0
        };
        snapshot::write_overflow(mem, area, new).map_err(|_| Error::Failed)
    }

    /// Drop the counter-to-event mapping of a stopped counter.
    #[inline(always)]
    fn release(&mut self, c: usize) {
        self.allocated &= !(1 << c);
        match self.layout.kind(c) {
            Counter::Hw(i) => {
                let i = i as usize;
                self.programs[i % HW_SLOTS] = HwProgram::default();
                self.write_event_reg(i, 0);
            }
            Counter::Fw(f) => {
                self.unlisten(f as usize);
                self.fw_sel[f as usize % NUM_FW] = FwSel::None;
            }
        }
    }

    /// FID 5 (`counter` from [`CounterLayout::resolve`]): INVALID_PARAM
    /// for a hardware counter.
    pub fn counter_fw_read(&self, counter: Counter) -> Result<u64, Error> {
        match counter {
            Counter::Fw(f) => Ok(self.fw_value[f as usize % NUM_FW]),
            Counter::Hw(_) => Err(Error::InvalidParam),
        }
    }

    /// FID 6: the upper half of a firmware counter, always 0 on RV64.
    pub fn counter_fw_read_hi(&self, counter: Counter) -> Result<u64, Error> {
        self.counter_fw_read(counter).map(|_| 0)
    }

    /// FID 7: register (`Some`) or disable (`None`) the snapshot area.
    /// NOT_SUPPORTED when the snapshot is not offered
    /// ([`Self::snapshot_offered`]), INVALID_ADDRESS when the supervisor
    /// does not own the page; registration zeroes it.
    pub fn snapshot_set_shmem<M: SupervisorMemory + ?Sized>(
        &mut self,
        mem: &mut M,
        area: Option<SnapshotArea>,
    ) -> Result<(), Error> {
        if !self.cfg.snapshot {
            return Err(Error::NotSupported);
        }
        let Some(area) = area else {
            self.snapshot_shmem = None;
            return Ok(());
        };
        let addr = area.addr();
        if !mem.owns(addr, SNAPSHOT_SIZE) {
            return Err(Error::InvalidAddress);
        }
        mem.zero(addr, SNAPSHOT_SIZE)
            .map_err(|_| Error::InvalidAddress)?;
        self.snapshot_shmem = Some(addr);
        Ok(())
    }

    /// FID 8: fill the `output` word of each entry. All entries are checked
    /// before any is written, so an INVALID_PARAM leaves memory untouched.
    pub fn event_get_info<M: SupervisorMemory + ?Sized>(
        &self,
        mem: &mut M,
        entries: event_info::Entries,
    ) -> Result<(), Error> {
        let (addr, num) = (entries.addr(), entries.num());
        if !mem.owns(addr, entries.size()) {
            return Err(Error::InvalidAddress);
        }
        // The one `owns` above covers every entry (16-aligned by
        // `Entries::parse`), so the loops read and write without asking
        // again.
        for k in 0..num {
            // SAFETY: entry k lies in the owned, aligned array.
            let idx = unsafe { event_info::read_idx(mem, addr, k) };
            if crate::event::reserved_bits(idx as u64) {
                return Err(Error::InvalidParam);
            }
        }
        for k in 0..num {
            // SAFETY: as above.
            let e = unsafe { event_info::read(mem, addr, k) };
            let output = self.event_info_output(&e);
            // SAFETY: as above.
            unsafe { event_info::write_output(mem, addr, k, output) };
        }
        Ok(())
    }

    /// The `output` word of an event-info entry: [`event_info::SUPPORTED`]
    /// when the platform can count the event it names, 0 when it cannot
    /// or the entry names none.
    #[inline(always)]
    fn event_info_output(&self, e: &event_info::Entry) -> u32 {
        // General and cache events ignore the entry's event_data. Their
        // slots follow the event_idx (type 0 code c at c, type 1 code c at
        // CACHE_SLOT_BASE + c), and a slot no well-formed event names
        // stays 0 (`Pmu::new` fills only those), so a range check takes
        // the place of `table_slot`'s decode: the same answer, in a loop
        // that keeps its few values in registers.
        const FIRST_CACHE_IDX: usize = 1 << 16;
        let idx = e.event_idx as usize;
        let slot = if idx < CACHE_SLOT_BASE {
            Some(idx)
        } else {
            idx.checked_sub(FIRST_CACHE_IDX)
                .map(|code| CACHE_SLOT_BASE + code)
                .filter(|&slot| slot < TABLE_SLOTS)
        };
        let supported = match slot {
            Some(slot) => self.hw_table[slot] != 0,
            None => self.entry_countable(e),
        };
        if supported {
            event_info::SUPPORTED
        } else {
            0
        }
    }

    /// Whether an entry names an event the platform can count: the
    /// general way, for the events the per-event table does not hold. Out of
    /// line, so that the loop over the entries keeps its few values in
    /// registers.
    #[inline(never)]
    fn entry_countable(&self, e: &event_info::Entry) -> bool {
        e.event().is_ok_and(|ev| self.countable(&ev))
    }
}
