//! A reference model of one hart's SBI PMU extension, written from the
//! SBI PMU chapter plus the engine's documented choices where the spec is
//! silent (hart.rs / counter.rs doc comments, docs/engine.md):
//!
//! - logical index = CSR offset for hardware counters (0 cycle, 2 instret,
//!   3..=31 where present, 1 never), then 16 firmware counters; with the
//!   alias window `4096 + i` names counter `i` and num_counters is `4096 + n`;
//! - counters 0 and 2 are configured and running from boot and never lose
//!   being configured; they are still free for config_matching once stopped;
//! - privilege filters: when a counter can filter (Sscofpmf for HPM,
//!   Smcntrpmf for 0/2) M-mode is always inhibited; a filter request never
//!   lands on a counter that cannot filter while one that can is eligible;
//! - start of an unconfigured counter and SKIP_MATCH of an unconfigured
//!   counter are INVALID_PARAM; unconfigured counters in a stop set count as
//!   already stopped; event_get_info with 0 entries is INVALID_PARAM;
//!   non-zero event_data on general/cache/standard firmware events is
//!   INVALID_PARAM;
//! - mhpmevent selector: DT `event-to-mhpmevent` row, else the zero-extended
//!   event_idx; raw events use event_data (as OpenSBI does);
//! - `rvpmu,one-counter-per-event` (docs/engine.md): while an HPM counter
//!   mapped by config_matching holds a selector (mhpmevent bits 0..57), no
//!   other HPM counter is a candidate for an event with that selector; the
//!   fixed counters, firmware counters and SKIP_MATCH are unaffected.
//!
//! Where the spec allows several answers the model computes the set of
//! allowed answers, checks the engine's answer is in it, and follows the
//! engine's choice. Nothing here is derived from the engine's code.

use rvpmu::sim::Mode;

pub const IP: isize = -3; // INVALID_PARAM
pub const NS: isize = -2; // NOT_SUPPORTED
pub const IA: isize = -5; // INVALID_ADDRESS
pub const AST: isize = -7; // ALREADY_STARTED
pub const ASP: isize = -8; // ALREADY_STOPPED
pub const NOSHM: isize = -9; // NO_SHMEM

/// The simulated supervisor memory: bytes `[BUF_BASE, BUF_END)`, of which
/// the firmware owns `[BUF_BASE, RAM_LO)` (see `BufMemory::virt`).
pub const BUF_BASE: u64 = 0x8000_0000;
pub const RAM_LO: u64 = 0x8004_0000;
pub const RAM_HI: u64 = 0x8010_0000;

/// Whether the supervisor owns `[addr, addr + len)`.
pub fn owned(addr: u64, len: u64) -> bool {
    match addr.checked_add(len) {
        Some(end) => len > 0 && addr >= RAM_LO && end <= RAM_HI,
        None => false,
    }
}

const MINH: u64 = 1 << 62;
const SINH: u64 = 1 << 61;
const UINH: u64 = 1 << 60;
const VSINH: u64 = 1 << 59;
const VUINH: u64 = 1 << 58;

pub fn mode_bit(m: Mode) -> u64 {
    match m {
        Mode::M => MINH,
        Mode::S => SINH,
        Mode::U => UINH,
        Mode::VS => VSINH,
        Mode::VU => VUINH,
    }
}

/// The platform: hart shape, ISA features, DT rows and firmware events.
#[derive(Clone, Debug)]
pub struct Platform {
    /// Hardware counters present (bit per CSR offset; bit 1 is ignored).
    pub present: u32,
    /// Width of the HPM counters (0 and 2 are 64 bits).
    pub width: u8,
    pub sscofpmf: bool,
    pub smcntrpmf: bool,
    pub h: bool,
    pub snapshot: bool,
    pub alias: bool,
    /// Standard firmware events recorded (bit per code 0..=21).
    pub fw_std: u32,
    /// Implementation-specific firmware event codes recorded.
    pub fw_impl: Vec<u16>,
    /// SBI_PMU_FW_PLATFORM event_data values recorded.
    pub fw_platform: Vec<u64>,
    /// `event-to-mhpmcounters` rows (first, last, counters).
    pub ranges: Vec<(u32, u32, u32)>,
    /// `event-to-mhpmevent` rows (event_idx, selector).
    pub selectors: Vec<(u32, u64)>,
    /// `raw-event-to-mhpmcounters` rows (select, mask, counters).
    pub raw: Vec<(u64, u64, u32)>,
    /// `rvpmu,one-counter-per-event`.
    pub one_per_event: bool,
    /// The simulated hart counts as QEMU does (an event id on one HPM
    /// counter only). The model does not: it says what the spec expects.
    pub qemu_event_map: bool,
}

impl Platform {
    pub fn hw(&self) -> u32 {
        self.present & !0b10
    }
    pub fn fw_base(&self) -> usize {
        32 - self.hw().leading_zeros() as usize
    }
    /// Canonical logical counters.
    pub fn n(&self) -> usize {
        self.fw_base() + 16
    }
    pub fn num_counters(&self) -> u64 {
        self.n() as u64 + if self.alias { 4096 } else { 0 }
    }
    pub fn is_fw(&self, c: usize) -> bool {
        c >= self.fw_base()
    }
    /// Bits of counter `c`.
    pub fn width_of(&self, c: usize) -> u8 {
        if self.is_fw(c) || c == 0 || c == 2 {
            64
        } else {
            self.width
        }
    }
    pub fn value_mask(&self, c: usize) -> u64 {
        match self.width_of(c) {
            64 => u64::MAX,
            w => (1 << w) - 1,
        }
    }
    /// Canonical counter a caller's index names.
    pub fn resolve(&self, idx: u64) -> Option<usize> {
        let n = self.n() as u64;
        let c = if idx < n {
            idx
        } else if self.alias && idx >= 4096 && idx - 4096 < n {
            idx - 4096
        } else {
            return None;
        } as usize;
        if c < self.fw_base() && self.hw() & (1 << c) == 0 {
            return None;
        }
        Some(c)
    }
    /// The members of a counter set as (relative bit, canonical index).
    pub fn set(&self, base: u64, mask: u64) -> Option<Vec<(usize, usize)>> {
        if mask == 0 {
            return None;
        }
        let mut v = Vec::new();
        for j in 0..64 {
            if mask & (1 << j) != 0 {
                let idx = base.checked_add(j as u64)?;
                v.push((j, self.resolve(idx)?));
            }
        }
        Some(v)
    }
    /// Whether counter `c` (hardware) can apply privilege filters.
    pub fn filterable(&self, c: usize) -> bool {
        if c == 0 || c == 2 {
            self.smcntrpmf
        } else {
            self.sscofpmf
        }
    }
    /// Hardware counters able to count hardware event `ev`.
    pub fn hw_capable(&self, ev: &MEvent) -> u64 {
        let MEvent::Hw { idx, data } = *ev else {
            return 0;
        };
        let ty = idx >> 16;
        let mut m: u32 = 0;
        if ty <= 1 {
            for &(first, last, ctrs) in &self.ranges {
                if first <= idx && idx <= last {
                    m |= ctrs;
                }
            }
        } else {
            for &(sel, mask, ctrs) in &self.raw {
                if data & mask == sel {
                    m |= ctrs;
                }
            }
        }
        // cycle counts cycles, instret instructions, nothing else.
        m &= !0b111;
        if idx == 1 {
            m |= 1;
        }
        if idx == 2 {
            m |= 4;
        }
        (m & self.hw()) as u64
    }
    pub fn fw_supported(&self, ev: &MEvent) -> bool {
        match *ev {
            MEvent::Fw { code: 0xFFFF, data } => self.fw_platform.contains(&data),
            MEvent::Fw { code, .. } if code >= 256 => self.fw_impl.contains(&code),
            MEvent::Fw { code, .. } => code < 22 && self.fw_std & (1 << code) != 0,
            MEvent::Hw { .. } => false,
        }
    }
    /// Counters (canonical bitmap) able to count `ev`.
    pub fn capable(&self, ev: &MEvent) -> u64 {
        match ev {
            MEvent::Hw { .. } => self.hw_capable(ev),
            MEvent::Fw { .. } => {
                if self.fw_supported(ev) {
                    ((1u64 << 16) - 1) << self.fw_base()
                } else {
                    0
                }
            }
        }
    }
    /// The HPM counters (bitmap over CSR offsets 3..=31) present.
    pub fn hpm(&self) -> u64 {
        (self.hw() & !0b111) as u64
    }
    /// The mhpmevent selector of an HPM counter programmed for `ev`.
    pub fn selector(&self, ev: &MEvent) -> u64 {
        match *ev {
            MEvent::Hw { idx, data } if idx >> 16 >= 2 => data,
            MEvent::Hw { idx, .. } => self
                .selectors
                .iter()
                .find(|r| r.0 == idx)
                .map(|r| r.1)
                .unwrap_or(idx as u64),
            MEvent::Fw { .. } => 0,
        }
    }
}

/// A well-formed event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MEvent {
    Hw { idx: u32, data: u64 },
    Fw { code: u16, data: u64 },
}

/// How the spec classifies an (event_idx, event_data) pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded {
    Valid(MEvent),
    /// Well-formed event_idx, reserved (non-zero) event_data on an event
    /// with unused data; `documented`: general/cache/standard firmware,
    /// where the engine documents INVALID_PARAM.
    ReservedData {
        documented: bool,
    },
    /// Not an event of SBI 3.0.
    Invalid,
}

pub fn decode(idx: u64, data: u64) -> Decoded {
    if idx >> 20 != 0 {
        return Decoded::Invalid;
    }
    let ty = idx >> 16;
    let code = (idx & 0xFFFF) as u16;
    let hw = MEvent::Hw {
        idx: idx as u32,
        data,
    };
    let no_data = |ev: MEvent, documented: bool| {
        if data == 0 {
            Decoded::Valid(ev)
        } else {
            Decoded::ReservedData { documented }
        }
    };
    match ty {
        0 if (1..=10).contains(&code) => no_data(hw, true),
        1 if code >> 3 <= 6 && (code >> 1) & 3 <= 2 => no_data(hw, true),
        2 if code == 0 && data >> 48 == 0 => Decoded::Valid(hw),
        3 if code == 0 && data >> 56 == 0 => Decoded::Valid(hw),
        15 if code == 0xFFFF => Decoded::Valid(MEvent::Fw { code, data }),
        15 if code < 22 => no_data(MEvent::Fw { code, data: 0 }, true),
        15 if code >= 256 => no_data(MEvent::Fw { code, data: 0 }, false),
        _ => Decoded::Invalid,
    }
}

/// The allowed answers of one call.
#[derive(Clone, Debug, Default)]
struct Allowed {
    errors: Vec<isize>,
}

impl Allowed {
    fn err(&mut self, codes: &[isize]) {
        for &c in codes {
            if !self.errors.contains(&c) {
                self.errors.push(c);
            }
        }
    }
    fn any(&self) -> bool {
        !self.errors.is_empty()
    }
}

/// What the harness observed around one call.
pub struct Obs<'a> {
    pub error: isize,
    pub value: u64,
    /// The engine's started counters after the call (canonical bitmap);
    /// only used to learn which of several allowed outcomes it chose.
    pub engine_started: u64,
    /// Snapshot area bytes before and after the call (if one was registered
    /// before the call).
    pub area_before: Option<&'a [u8]>,
    pub area_after: Option<&'a [u8]>,
    /// Reads supervisor memory (as it is after the call, for FID 8 outputs).
    pub peek: &'a dyn Fn(u64, usize) -> Vec<u8>,
    /// Event-info entries as they were before the call, when the array is
    /// owned memory: (event_idx word, output word, event_data).
    pub entries_before: Option<Vec<(u32, u32, u64)>>,
}

/// Per-hart model state.
#[derive(Clone, Debug)]
pub struct Hart {
    pub p: Platform,
    /// Mapping made by config_matching (released by stop with RESET).
    pub mapped: [Option<MEvent>; 64],
    pub started: u64,
    /// Counter values (canonical); hardware ones as S-mode reads them.
    pub value: [u64; 64],
    /// Effective mhpmevent / mcyclecfg filter bits per hardware counter.
    pub inh: [u64; 32],
    /// Selector of each HPM counter (0: counts nothing).
    pub sel: [u64; 32],
    /// Sscofpmf overflow flag per HPM counter.
    pub ovf: [bool; 32],
    pub shmem: Option<u64>,
    /// config_matching answers NOT_SUPPORTED only because of
    /// `one_per_event` (coverage).
    pub one_per_event_refusals: u32,
}

fn expect_err(a: &Allowed, got: isize, what: &str) -> Result<(), String> {
    if a.errors.contains(&got) {
        Ok(())
    } else {
        Err(format!("{what}: expected one of {:?}, got {got}", a.errors))
    }
}

impl Hart {
    pub fn new(p: Platform) -> Hart {
        let started = (p.hw() & 0b101) as u64;
        Hart {
            p,
            mapped: [None; 64],
            started,
            value: [0; 64],
            inh: [0; 32],
            sel: [0; 32],
            ovf: [false; 32],
            shmem: None,
            one_per_event_refusals: 0,
        }
    }

    pub fn configured(&self, c: usize) -> bool {
        self.mapped[c].is_some() || c == 0 || c == 2
    }

    /// Whether an HPM counter mapped by config_matching has the selector
    /// (mhpmevent bits 0..57: without OF and the mode inhibits) that `ev`
    /// would get.
    fn selector_taken(&self, ev: &MEvent) -> bool {
        const EVENT_BITS: u64 = (1 << 58) - 1;
        let want = self.p.selector(ev) & EVENT_BITS;
        (0..64).any(|c| {
            self.p.hpm() & (1 << c) != 0
                && self.mapped[c].is_some_and(|m| self.p.selector(&m) & EVENT_BITS == want)
        })
    }

    /// Modes a config request asks to inhibit (VS/VU only with H).
    fn requested(&self, flags: u64) -> u64 {
        let mut r = 0;
        if flags & (1 << 7) != 0 {
            r |= MINH;
        }
        if flags & (1 << 6) != 0 {
            r |= SINH;
        }
        if flags & (1 << 5) != 0 {
            r |= UINH;
        }
        if self.p.h {
            if flags & (1 << 4) != 0 {
                r |= VSINH;
            }
            if flags & (1 << 3) != 0 {
                r |= VUINH;
            }
        }
        r
    }

    fn start_counter(&mut self, c: usize) {
        self.started |= 1 << c;
        if c < 32 {
            self.ovf[c] = false;
        }
    }

    fn set_value(&mut self, c: usize, v: u64) {
        self.value[c] = v & self.p.value_mask(c);
    }

    /// Index the engine returned must name `c` (canonical or alias form).
    fn names(&self, ret: u64, c: usize) -> bool {
        self.p.resolve(ret) == Some(c)
    }

    /// FID 0.
    pub fn num_counters(&self, o: &Obs) -> Result<(), String> {
        if o.error != 0 || o.value != self.p.num_counters() {
            return Err(format!(
                "num_counters: expected (0, {}), got ({}, {})",
                self.p.num_counters(),
                o.error,
                o.value
            ));
        }
        Ok(())
    }

    /// FID 1.
    pub fn get_info(&self, idx: u64, o: &Obs) -> Result<(), String> {
        let Some(c) = self.p.resolve(idx) else {
            return if o.error == IP {
                Ok(())
            } else {
                Err(format!(
                    "get_info({idx}): expected INVALID_PARAM, got {}",
                    o.error
                ))
            };
        };
        if o.error != 0 {
            return Err(format!("get_info({idx}): error {}", o.error));
        }
        let ok = if self.p.is_fw(c) {
            o.value >> 63 == 1 && (o.value >> 18) & ((1 << 45) - 1) == 0
        } else {
            o.value == (0xC00 + c as u64) | ((self.p.width_of(c) as u64 - 1) << 12)
        };
        if !ok {
            return Err(format!(
                "get_info({idx}) (counter {c}): bad counter_info {:#x}",
                o.value
            ));
        }
        Ok(())
    }

    /// FID 2.
    pub fn config_matching(
        &mut self,
        base: u64,
        mask: u64,
        flags: u64,
        eidx: u64,
        edata: u64,
        o: &Obs,
    ) -> Result<(), String> {
        let what =
            format!("config_matching({base:#x}, {mask:#x}, {flags:#x}, {eidx:#x}, {edata:#x})");
        let mut a = Allowed::default();
        if flags >> 8 != 0 {
            a.err(&[IP]);
        }
        let set = self.p.set(base, mask);
        if set.is_none() {
            a.err(&[IP]);
        }
        let ev = match decode(eidx, edata) {
            Decoded::Valid(ev) => Some(ev),
            Decoded::ReservedData { documented: true } => {
                a.err(&[IP]);
                None
            }
            Decoded::ReservedData { documented: false } | Decoded::Invalid => {
                a.err(&[IP, NS]);
                None
            }
        };
        if a.any() {
            return expect_err(&a, o.error, &what);
        }
        let set = set.unwrap();
        let ev = ev.unwrap();
        let skip = flags & 1 != 0;
        let c = if skip {
            let c = set[0].1;
            if !self.configured(c) {
                a.err(&[IP]);
                return expect_err(&a, o.error, &what);
            }
            if o.error == NS && self.p.capable(&ev) & (1 << c) == 0 {
                return Ok(()); // allowed refusal, nothing changed
            }
            if o.error != 0 || !self.names(o.value, c) {
                return Err(format!(
                    "{what}: SKIP_MATCH must select counter {c}, got ({}, {})",
                    o.error, o.value
                ));
            }
            c
        } else {
            let members: u64 = set.iter().fold(0, |m, &(_, c)| m | 1 << c);
            let free = (0..64)
                .filter(|&c| {
                    members & (1 << c) != 0
                        && self.started & (1 << c) == 0
                        && self.mapped[c].is_none()
                })
                .fold(0u64, |m, c| m | 1 << c);
            let mut cand = free & self.p.capable(&ev);
            let blocked =
                self.p.one_per_event && matches!(ev, MEvent::Hw { .. }) && self.selector_taken(&ev);
            if blocked {
                cand &= !self.p.hpm();
            }
            let req = self.requested(flags);
            let (must, may_refuse) = match ev {
                MEvent::Hw { .. } if req != 0 => {
                    let filt = (0..32)
                        .filter(|&c| cand & (1 << c) != 0 && self.p.filterable(c))
                        .fold(0u64, |m, c| m | 1 << c);
                    if filt != 0 {
                        (filt, false)
                    } else {
                        // The hints may be ignored on counters that cannot
                        // filter, or the request refused.
                        (cand, true)
                    }
                }
                _ => (cand, false),
            };
            if must == 0 || (may_refuse && o.error == NS) {
                a.err(&[NS]);
                if blocked && o.error == NS {
                    self.one_per_event_refusals += 1;
                }
                return expect_err(&a, o.error, &what);
            }
            if o.error != 0 {
                return Err(format!(
                    "{what}: expected a counter of {must:#x}, got error {}",
                    o.error
                ));
            }
            let Some(c) = self.p.resolve(o.value).filter(|&c| must & (1 << c) != 0) else {
                return Err(format!(
                    "{what}: returned {:#x}, not one of {must:#x}",
                    o.value
                ));
            };
            self.mapped[c] = Some(ev);
            if c < 32 && !self.p.is_fw(c) {
                self.inh[c] = if self.p.filterable(c) { req | MINH } else { 0 };
                if c >= 3 {
                    self.sel[c] = self.p.selector(&ev);
                    self.ovf[c] = false;
                }
            }
            c
        };
        if flags & 2 != 0 {
            self.value[c] = 0;
        }
        if flags & 4 != 0 && self.started & (1 << c) == 0 {
            self.start_counter(c);
        }
        Ok(())
    }

    /// FID 3.
    pub fn start(
        &mut self,
        base: u64,
        mask: u64,
        flags: u64,
        init: u64,
        o: &Obs,
    ) -> Result<(), String> {
        let what = format!("start({base:#x}, {mask:#x}, {flags:#x}, {init:#x})");
        let mut a = Allowed::default();
        if flags >> 2 != 0 || flags == 3 {
            a.err(&[IP]);
        }
        let set = self.p.set(base, mask);
        match &set {
            None => a.err(&[IP]),
            Some(s) => {
                if s.iter().any(|&(_, c)| !self.configured(c)) {
                    a.err(&[IP]);
                }
            }
        }
        if flags & 2 != 0 && self.shmem.is_none() {
            a.err(&[NOSHM]);
        }
        if a.any() {
            return expect_err(&a, o.error, &what);
        }
        let set = set.unwrap();
        // "SET_INIT_VALUE ... is only valid for a single counter".
        if flags & 1 != 0 && set.len() > 1 && o.error == IP {
            return Ok(());
        }
        let already = set.iter().any(|&(_, c)| self.started & (1 << c) != 0);
        let to_start: Vec<(usize, usize)> = set
            .iter()
            .copied()
            .filter(|&(_, c)| self.started & (1 << c) == 0)
            .collect();
        if already {
            if o.error != AST {
                return Err(format!("{what}: expected ALREADY_STARTED, got {}", o.error));
            }
        } else if o.error != 0 {
            return Err(format!("{what}: expected SUCCESS, got {}", o.error));
        }
        // With ALREADY_STARTED the others may have been started or not.
        let started_now = to_start
            .iter()
            .filter(|&&(_, c)| o.engine_started & (1 << c) != 0)
            .count();
        if started_now != 0 && started_now != to_start.len() {
            return Err(format!("{what}: started only some of the stopped counters"));
        }
        if !already && started_now != to_start.len() {
            return Err(format!("{what}: success but counters not started"));
        }
        if started_now == 0 {
            return Ok(());
        }
        for (j, c) in to_start {
            if flags & 1 != 0 {
                self.set_value(c, init);
            } else if flags & 2 != 0 {
                let area = o.area_before.expect("area registered");
                let v = u64::from_le_bytes(area[8 + 8 * j..16 + 8 * j].try_into().unwrap());
                self.set_value(c, v);
            }
            self.start_counter(c);
        }
        Ok(())
    }

    /// FID 4.
    pub fn stop(&mut self, base: u64, mask: u64, flags: u64, o: &Obs) -> Result<(), String> {
        let what = format!("stop({base:#x}, {mask:#x}, {flags:#x})");
        let mut a = Allowed::default();
        if flags >> 2 != 0 {
            a.err(&[IP]);
        }
        let set = self.p.set(base, mask);
        if set.is_none() {
            a.err(&[IP]);
        }
        if flags & 2 != 0 && self.shmem.is_none() {
            a.err(&[NOSHM]);
        }
        if a.any() {
            return expect_err(&a, o.error, &what);
        }
        let set = set.unwrap();
        let already = set.iter().any(|&(_, c)| self.started & (1 << c) == 0);
        let expected = if already { ASP } else { 0 };
        if o.error != expected {
            return Err(format!("{what}: expected {expected}, got {}", o.error));
        }
        let stopping: Vec<(usize, usize)> = set
            .iter()
            .copied()
            .filter(|&(_, c)| self.started & (1 << c) != 0)
            .collect();
        for &(_, c) in &stopping {
            self.started &= !(1 << c);
        }
        if flags & 2 != 0 {
            let (Some(before), Some(after)) = (o.area_before, o.area_after) else {
                return Err(format!("{what}: no snapshot area"));
            };
            let word =
                |b: &[u8], off: usize| u64::from_le_bytes(b[off..off + 8].try_into().unwrap());
            let mut may_change = vec![false; 4096];
            let mut ovf_fixed = u64::MAX; // bits whose value is checked
            for &(j, c) in &set {
                let off = 8 + 8 * j;
                let now = word(after, off);
                let expect = self.value[c];
                let was_stopping = stopping.iter().any(|&(_, s)| s == c);
                if was_stopping {
                    if now != expect {
                        return Err(format!(
                            "{what}: snapshot value[{j}] (counter {c}) = {now:#x}, expected {expect:#x}"
                        ));
                    }
                } else if now != expect && now != word(before, off) {
                    return Err(format!(
                        "{what}: snapshot value[{j}] of an already stopped counter = {now:#x}"
                    ));
                }
                may_change[off..off + 8].iter_mut().for_each(|b| *b = true);
                if !was_stopping {
                    ovf_fixed &= !(1 << j);
                }
            }
            may_change[..8].iter_mut().for_each(|b| *b = true);
            let (ob, oa) = (word(before, 0), word(after, 0));
            let members: u64 = set.iter().fold(0, |m, &(j, _)| m | 1 << j);
            for j in 0..64 {
                if ovf_fixed & (1 << j) == 0 {
                    continue;
                }
                let got = oa >> j & 1 == 1;
                let want = if members & (1 << j) != 0 {
                    let c = set.iter().find(|m| m.0 == j).unwrap().1;
                    self.p.sscofpmf && c >= 3 && !self.p.is_fw(c) && self.ovf[c]
                } else if self.p.sscofpmf {
                    ob >> j & 1 == 1 // other counters' bits are left alone
                } else {
                    false // Table 16: without Sscofpmf the bitmap must be zero
                };
                if got != want {
                    return Err(format!(
                        "{what}: overflow bit {j} = {got}, expected {want} (bitmap {ob:#x} -> {oa:#x})"
                    ));
                }
            }
            for i in 0..4096 {
                if !may_change[i] && before[i] != after[i] {
                    return Err(format!("{what}: snapshot byte {i:#x} modified"));
                }
            }
        }
        if flags & 1 != 0 {
            for &(_, c) in &set {
                self.mapped[c] = None;
                if c < 32 && !self.p.is_fw(c) {
                    self.inh[c] = 0;
                    self.sel[c] = 0;
                    self.ovf[c] = false;
                }
            }
        }
        Ok(())
    }

    /// FID 5 / 6.
    pub fn fw_read(&self, idx: u64, hi: bool, o: &Obs) -> Result<(), String> {
        match self.p.resolve(idx) {
            Some(c) if self.p.is_fw(c) => {
                let want = if hi { 0 } else { self.value[c] };
                if o.error != 0 || o.value != want {
                    return Err(format!(
                        "fw_read{}({idx}): expected (0, {want:#x}), got ({}, {:#x})",
                        if hi { "_hi" } else { "" },
                        o.error,
                        o.value
                    ));
                }
                Ok(())
            }
            _ => {
                if o.error != IP {
                    return Err(format!(
                        "fw_read({idx}): expected INVALID_PARAM, got {}",
                        o.error
                    ));
                }
                Ok(())
            }
        }
    }

    /// FID 7.
    pub fn set_shmem(&mut self, lo: u64, hi: u64, flags: u64, o: &Obs) -> Result<(), String> {
        let what = format!("snapshot_set_shmem({lo:#x}, {hi:#x}, {flags:#x})");
        let mut a = Allowed::default();
        if !self.p.snapshot {
            a.err(&[NS]);
        }
        if flags != 0 {
            a.err(&[IP]);
        }
        let disable = lo == u64::MAX && hi == u64::MAX;
        if !disable {
            if !lo.is_multiple_of(4096) {
                a.err(&[IP]);
            }
            if hi != 0 || !owned(lo, 4096) {
                a.err(&[IA]);
            }
        }
        if a.any() {
            return expect_err(&a, o.error, &what);
        }
        if o.error != 0 {
            return Err(format!("{what}: expected SUCCESS, got {}", o.error));
        }
        self.shmem = if disable { None } else { Some(lo) };
        Ok(())
    }

    /// FID 8.
    pub fn event_get_info(
        &mut self,
        lo: u64,
        hi: u64,
        num: u64,
        flags: u64,
        o: &Obs,
    ) -> Result<(), String> {
        let what = format!("event_get_info({lo:#x}, {hi:#x}, {num}, {flags:#x})");
        let mut a = Allowed::default();
        if flags != 0 || !lo.is_multiple_of(16) {
            a.err(&[IP]);
        } else if num == 0 {
            // No entry to update: the spec names no error for it, so
            // SUCCESS (nothing touched) or INVALID_PARAM are both allowed.
            return match o.error {
                0 => Ok(()),
                e if e == IP => Ok(()),
                e => Err(format!(
                    "{what}: expected SUCCESS or INVALID_PARAM, got {e}"
                )),
            };
        }
        if hi != 0 {
            a.err(&[IA]);
        }
        match num.checked_mul(16) {
            None => a.err(&[IA, IP]),
            Some(size) => {
                if !owned(lo, size) {
                    a.err(&[IA]);
                } else if let Some(e) = &o.entries_before {
                    if e.iter().any(|&(idx, _, _)| idx >> 20 != 0) {
                        a.err(&[IP]);
                    }
                }
            }
        }
        if a.any() {
            return expect_err(&a, o.error, &what);
        }
        if o.error != 0 {
            return Err(format!("{what}: expected SUCCESS, got {}", o.error));
        }
        let entries = o.entries_before.as_ref().expect("entries read");
        for (k, &(idx, out_before, data)) in entries.iter().enumerate() {
            let b = (o.peek)(lo + 16 * k as u64, 16);
            let idx_now = u32::from_le_bytes(b[0..4].try_into().unwrap());
            let out = u32::from_le_bytes(b[4..8].try_into().unwrap());
            let data_now = u64::from_le_bytes(b[8..16].try_into().unwrap());
            if idx_now != idx || data_now != data {
                return Err(format!("{what}: entry {k}: read-only words modified"));
            }
            // event_data counts only for types 2, 3 and 0xf.
            let ty = idx >> 16;
            let d = if ty == 2 || ty == 3 || ty == 15 {
                data
            } else {
                0
            };
            let ok = match decode(idx as u64, d) {
                Decoded::Valid(ev) => {
                    let sup = self.p.capable(&ev) != 0;
                    out == sup as u32
                }
                Decoded::ReservedData { .. } => {
                    let ev = decode(idx as u64, 0);
                    let sup = matches!(ev, Decoded::Valid(e) if self.p.capable(&e) != 0);
                    out == sup as u32 || out == 0 || out == out_before
                }
                Decoded::Invalid => out == 0 || out == out_before,
            };
            if !ok {
                return Err(format!(
                    "{what}: entry {k} (event {idx:#x}, data {data:#x}): output {out:#x} (was {out_before:#x})"
                ));
            }
        }
        Ok(())
    }

    // ---- events outside the SBI calls ----

    /// One firmware event occurrence.
    pub fn record(&mut self, ev: MEvent) {
        for c in self.p.fw_base()..self.p.n() {
            if self.started & (1 << c) != 0 && self.mapped[c] == Some(ev) {
                self.value[c] = self.value[c].wrapping_add(1);
            }
        }
    }

    /// `count` hardware events with `selector` in `mode`; returns how many
    /// counters wrapped.
    pub fn tick(&mut self, mode: Mode, selector: u64, count: u64) -> u32 {
        let mut wraps = 0;
        for c in 0..self.p.fw_base() {
            if self.p.hw() & (1 << c) == 0 || self.started & (1 << c) == 0 {
                continue;
            }
            let s = match c {
                0 => 1,
                2 => 2,
                _ => self.sel[c],
            };
            if s == 0 || s != selector {
                continue;
            }
            if self.p.filterable(c) && self.inh[c] & mode_bit(mode) != 0 {
                continue;
            }
            let m = self.p.value_mask(c);
            let sum = self.value[c] as u128 + count as u128;
            if sum > m as u128 {
                wraps += 1;
                if c >= 3 && self.p.sscofpmf {
                    self.ovf[c] = true;
                }
            }
            self.value[c] = (sum & m as u128) as u64;
        }
        wraps
    }
}
