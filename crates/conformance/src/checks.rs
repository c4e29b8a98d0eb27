//! The conformance checks. Every expectation comes from the SBI PMU chapter
//! (EID 0x504D55, SBI 3.0) or the STA chapter (EID 0x535441), and for the
//! narrow parameters of HSM, SRST, DBCN and the legacy console from the
//! binary encoding chapter (`params.rs`); where the spec
//! leaves a choice every allowed answer passes and the line says so.
//! Counter validity is derived from what the firmware itself reports
//! (num_counters, get_info), never from a fixed layout.

use crate::mem::{Area, Shm};
use crate::report::{errs, names, Suite, Verdict};
use crate::sbi::{self, err::*, pmu::*, Ret};
use crate::text;

/// What the kernel learnt about the machine from the device tree.
pub struct Env {
    /// Stack/buffer slot of the running hart.
    pub slot: usize,
    pub ram_end: usize,
    /// The ISA string lists Sscofpmf (overflow bits are then meaningful).
    pub sscofpmf: bool,
}

/// Where the firmware lives on QEMU virt (`-bios` is loaded here): memory
/// the supervisor does not own.
const FW_ADDR: usize = 0x8000_0000;
/// The virt UART: device registers, not memory.
const MMIO_ADDR: usize = 0x1000_0000;
const ALL_ONES: usize = usize::MAX;
/// Either way of refusing a reserved or undefined value: the error tables
/// list INVALID_PARAM for bad parameters and NOT_SUPPORTED for events no
/// counter can monitor, and the spec does not say which one a reserved
/// event encoding gets.
const REJECT: &[isize] = &[INVALID_PARAM, NOT_SUPPORTED];

/// The firmware's counter layout as reported by num_counters / get_info.
pub(crate) struct Pmu {
    version: (usize, usize),
    num: usize,
    info: [Option<usize>; 64],
    hw: u64,
    fw: u64,
}

impl Pmu {
    pub(crate) fn discover() -> Self {
        let v = sbi::spec_version();
        let version = if v.ok() {
            ((v.value >> 24) & 0x7f, v.value & 0xff_ffff)
        } else {
            (0, 0)
        };
        let n = sbi::num_counters();
        let num = if n.ok() { n.value } else { 0 };
        let mut p = Pmu {
            version,
            num,
            info: [None; 64],
            hw: 0,
            fw: 0,
        };
        for i in 0..num.min(64) {
            let r = sbi::get_info(i);
            if r.ok() {
                p.info[i] = Some(r.value);
                if r.value >> 63 == 1 {
                    p.fw |= 1 << i;
                } else {
                    p.hw |= 1 << i;
                }
            }
        }
        p
    }
    fn at_least(&self, major: usize, minor: usize) -> bool {
        self.version >= (major, minor)
    }
    /// A counter index is valid when it is below num_counters and get_info
    /// accepts it.
    fn valid(&self, idx: usize) -> bool {
        if idx < 64 {
            self.info[idx].is_some()
        } else {
            idx < self.num && sbi::get_info(idx).ok()
        }
    }
    /// A set is valid when non-empty and every member exists (base + bit
    /// must not wrap around either).
    fn set_valid(&self, base: usize, mask: usize) -> bool {
        mask != 0
            && (0..64)
                .filter(|b| mask >> b & 1 == 1)
                .all(|b| base.checked_add(b).is_some_and(|i| self.valid(i)))
    }
    fn is_hw(&self, idx: usize) -> bool {
        idx < 64 && self.hw >> idx & 1 == 1
    }
    fn is_fw(&self, idx: usize) -> bool {
        idx < 64 && self.fw >> idx & 1 == 1
    }
    fn csr(&self, idx: usize) -> Option<usize> {
        self.info[idx]
            .filter(|_| self.is_hw(idx))
            .map(|i| i & 0xfff)
    }
    /// The logical index of the counter backed by `csr`.
    fn by_csr(&self, csr: usize) -> Option<usize> {
        (0..64).find(|&i| self.csr(i) == Some(csr))
    }
    /// Hardware counters other than cycle and instret: the set used to find
    /// a free programmable counter (cycle/instret may already be running).
    pub(crate) fn hpm_set(&self) -> usize {
        let mut m = self.hw;
        for csr in [0xc00, 0xc02] {
            if let Some(i) = self.by_csr(csr) {
                m &= !(1 << i);
            }
        }
        m as usize
    }
    pub(crate) fn fw_set(&self) -> usize {
        self.fw as usize
    }
    /// Every counter except cycle and instret.
    fn match_set(&self) -> usize {
        self.hpm_set() | self.fw_set()
    }
    fn lowest(mask: usize) -> Option<usize> {
        (mask != 0).then(|| mask.trailing_zeros() as usize)
    }
}

fn in_set(base: usize, mask: usize, idx: usize) -> bool {
    idx >= base && idx - base < 64 && mask >> (idx - base) & 1 == 1
}

fn timers(n: usize) {
    for _ in 0..n {
        sbi::set_timer(u64::MAX);
    }
}

/// Releases a counter whatever state it is in. Counters 0 and 2 (cycle and
/// instret on every known layout) are left alone: a firmware that wrongly
/// answers them for a match must not make the suite stop the clocks that
/// later checks and the supervisor rely on.
fn release(idx: usize) {
    if idx != 0 && idx != 2 {
        let _ = sbi::stop(idx, 1, STOP_RESET);
    }
}

/// Reads a hardware counter CSR (cycle, instret, hpmcounter3..31) by number.
fn read_counter_csr(csr: usize) -> Option<u64> {
    // A counter the firmware keeps closed (mcounteren) traps as an illegal
    // instruction: caught.
    let (v, trapped) = crate::rt::catch_illegal(|| {
        u16::try_from(csr)
            .ok()
            .and_then(rvpmu_rt::csr::read_counter)
            .map(|v| v as u64)
    });
    if trapped {
        None
    } else {
        v
    }
}

/// A short busy loop the compiler cannot remove.
fn spin(n: usize) {
    for i in 0..n {
        core::hint::black_box(i);
    }
}

/// Runs the whole suite on the calling hart.
pub fn run(s: &mut Suite<'_>, env: &Env) {
    let p = Pmu::discover();
    base(s, &p);
    counter_info(s, &p);
    config_flags(s, &p);
    counter_sets(s, &p);
    events(s, &p);
    config_behaviour(s, &p);
    firmware_counters(s, &p);
    counter_groups(s, &p);
    hardware_counters(s, &p);
    snapshot(s, &p, env);
    event_info(s, &p, env);
    sta(s, env);
    crate::params::run(s);
}

fn base(s: &mut Suite<'_>, p: &Pmu) {
    s.check("base.version", "SBI base get_spec_version answers SUCCESS; the PMU needs SBI >= 0.3 (Table 20: FIDs 0-5 are SBI 0.3)", || {
        let r = sbi::spec_version();
        Verdict::new(
            r.ok() && r.value >> 31 == 0 && p.at_least(0, 3),
            text!("SUCCESS, version >= 0.3"),
            text!("{r} (v{}.{})", p.version.0, p.version.1),
        )
    });
    s.check(
        "base.probe.pmu",
        "probe_extension(0x504D55) reports the PMU extension under test as available",
        || {
            let r = sbi::probe_extension(sbi::eid::PMU);
            Verdict::new(
                r.ok() && r.value != 0,
                text!("SUCCESS value != 0"),
                text!("{r}"),
            )
        },
    );
    s.check("base.probe.sta", "probe_extension(0x535441) agrees with the STA call: an absent extension's calls answer NOT_SUPPORTED, a present one's do not", || {
        let pr = sbi::probe_extension(sbi::eid::STA);
        // Disabling (all-ones) is harmless whether or not it was enabled.
        let r = sbi::sta_set_shmem(ALL_ONES, ALL_ONES, 0);
        let present = pr.ok() && pr.value != 0;
        Verdict::new(
            pr.ok() && present == (r.error != NOT_SUPPORTED),
            text!("probe != 0 exactly when set_shmem(-1,-1,0) is not NOT_SUPPORTED"),
            text!("probe {pr}; set_shmem {r}"),
        )
    });
    s.check("pmu.fid.unknown", "an undefined PMU function (FID 9; Table 20 lists 0-8) answers NOT_SUPPORTED (SBI base: unimplemented functions)", || {
        errs(sbi::call(sbi::eid::PMU, 9, [0; 6]), &[NOT_SUPPORTED])
    });
    s.check(
        "pmu.num.success",
        "FID 0 num_counters \"always returns SBI_SUCCESS\" with the number of counters",
        || {
            let r = sbi::num_counters();
            Verdict::new(
                r.ok() && r.value > 0,
                text!("SUCCESS value > 0"),
                text!("{r}"),
            )
        },
    );
    s.check(
        "pmu.num.stable",
        "FID 0 num_counters gives the same number on every call",
        || {
            let a = sbi::num_counters();
            let b = sbi::num_counters();
            Verdict::new(a == b, text!("{a}"), text!("{b}"))
        },
    );
}

fn counter_info(s: &mut Suite<'_>, p: &Pmu) {
    s.check(
        "pmu.info.answers",
        "Table 7: get_info of every index below num_counters answers SUCCESS or INVALID_PARAM only",
        || {
            let (mut ok, mut bad) = (0usize, 0usize);
            let mut other: Option<(usize, Ret)> = None;
            for i in 0..p.num.min(8192) {
                let r = sbi::get_info(i);
                match r.error {
                    SUCCESS => ok += 1,
                    INVALID_PARAM => bad += 1,
                    _ => {
                        other.get_or_insert((i, r));
                    }
                }
            }
            match other {
                None => Verdict::new(
                    true,
                    text!("SUCCESS or INVALID_PARAM"),
                    text!("{ok} counters, {bad} invalid indices"),
                ),
                Some((i, r)) => Verdict::new(
                    false,
                    text!("SUCCESS or INVALID_PARAM"),
                    text!("index {i}: {r}"),
                ),
            }
        },
    );
    for (id, idx, what) in [
        (
            "pmu.info.past_end",
            p.num,
            "Table 7 INVALID_PARAM: counter_idx = num_counters points to an invalid counter",
        ),
        (
            "pmu.info.neg",
            ALL_ONES,
            "Table 7 INVALID_PARAM: counter_idx = -1 (all ones) points to an invalid counter",
        ),
        (
            "pmu.info.trunc32",
            1 << 32,
            "Table 7 INVALID_PARAM: counter_idx = 2^32 is invalid (not truncated to counter 0)",
        ),
    ] {
        s.check(id, what, || {
            if p.valid(idx) {
                return Verdict::new(
                    false,
                    text!("INVALID_PARAM"),
                    text!("num_counters {} makes {idx:#x} valid", p.num),
                );
            }
            errs(sbi::get_info(idx), &[INVALID_PARAM])
        });
    }
    s.check(
        "pmu.info.reserved",
        "counter_info[XLEN-2:18] \"Reserved for future use\" is zero for every counter",
        || {
            let bad =
                (0..64).find(|&i| p.info[i].is_some_and(|v| v & ((1 << 63) - (1 << 18)) != 0));
            match bad {
                None => Verdict::new(true, text!("reserved bits 0"), text!("all zero")),
                Some(i) => Verdict::new(
                    false,
                    text!("reserved bits 0"),
                    text!("counter {i}: {:#x}", p.info[i].unwrap_or(0)),
                ),
            }
        },
    );
    s.check("pmu.info.hw_csr", "hardware counter_info.csr names a counter CSR (cycle, instret, hpmcounter3-31; time 0xC01 is no PMU counter: it has no mcountinhibit/mhpmevent control)", || {
        let bad = (0..64).find(|&i| p.csr(i).is_some_and(|c| !(0xc00..=0xc1f).contains(&c) || c == 0xc01));
        match bad {
            None => Verdict::new(p.hw != 0, text!("0xC00, 0xC02-0xC1F; at least one hardware counter"), text!("hw mask {:#x}", p.hw)),
            Some(i) => Verdict::new(false, text!("0xC00, 0xC02-0xC1F"), text!("counter {i}: csr {:#x}", p.csr(i).unwrap_or(0))),
        }
    });
    s.check("pmu.info.time", "counter 1 / the time CSR is never a PMU counter: get_info(1) is INVALID_PARAM or a counter other than time", || {
        let r = sbi::get_info(1);
        let ok = r.error == INVALID_PARAM || (r.ok() && (r.value >> 63 == 1 || r.value & 0xfff != 0xc01));
        Verdict::new(ok, text!("INVALID_PARAM or not CSR 0xC01"), text!("{r}"))
    });
    s.check("pmu.info.unique", "counter_idx is \"a logical number assigned to each hardware/firmware counter\": no two indices below 64 name the same CSR", || {
        let dup = (0..64).find(|&i| p.csr(i).is_some() && (0..i).any(|j| p.csr(j) == p.csr(i)));
        Verdict::new(dup.is_none(), text!("distinct CSRs"), text!("{}", dup.map_or(-1, |d| d as isize)))
    });
    s.check("pmu.info.width", "cycle and instret are 64-bit (privileged spec), so their counter_info.width (bits - 1) is 63", || {
        let w = |csr| p.by_csr(csr).and_then(|i| p.info[i]).map(|v| (v >> 12) & 0x3f);
        let (c, i) = (w(0xc00), w(0xc02));
        Verdict::new(
            c.is_none_or(|x| x == 63) && i.is_none_or(|x| x == 63),
            text!("63 (or counter absent)"),
            text!("cycle {:?} instret {:?}", c, i),
        )
    });
}

fn config_flags(s: &mut Suite<'_>, p: &Pmu) {
    let set = p.hpm_set();
    for (id, bit) in [
        ("pmu.cfg.flag.bit8", 8),
        ("pmu.cfg.flag.bit31", 31),
        ("pmu.cfg.flag.bit32", 32),
        ("pmu.cfg.flag.bit63", 63),
    ] {
        s.check(id, "Table 9 INVALID_PARAM: \"the given flag parameter has a reserved bit set\" (Table 8 RESERVED 8:(XLEN-1)), cycles on the free hardware counters", || {
            let r = sbi::config_matching(0, set, 1 << bit, HW_CPU_CYCLES, 0);
            if r.ok() {
                release(r.value);
            }
            errs(r, &[INVALID_PARAM])
        });
    }
    let base = sbi::config_matching(0, set, 0, HW_CPU_CYCLES, 0);
    if base.ok() {
        release(base.value);
    }
    for (id, flag) in [
        ("pmu.cfg.filter.vuinh", CFG_SET_VUINH),
        ("pmu.cfg.filter.vsinh", CFG_SET_VSINH),
        ("pmu.cfg.filter.uinh", CFG_SET_UINH),
        ("pmu.cfg.filter.sinh", CFG_SET_SINH),
        ("pmu.cfg.filter.minh", CFG_SET_MINH),
        ("pmu.cfg.filter.vsinh_vuinh", CFG_SET_VSINH | CFG_SET_VUINH),
    ] {
        s.check(id, "Table 8 bits 3-7 are filtering hints that \"can be ignored or overridden\": with one set, a cycles match that succeeds without it still succeeds", || {
            if !base.ok() {
                return Verdict::na("no free hardware counter counts cycles; event support is the platform's choice");
            }
            let r = sbi::config_matching(0, set, flag, HW_CPU_CYCLES, 0);
            if r.ok() {
                release(r.value);
            }
            Verdict::new(r.ok() && in_set(0, set, r.value), text!("SUCCESS on a counter of the set"), text!("{r}"))
        });
    }
}

#[derive(Clone, Copy)]
enum Func {
    Cfg,
    Start,
    Stop,
}

impl Func {
    fn call(self, base: usize, mask: usize, fw_event: bool) -> Ret {
        match self {
            Func::Cfg => {
                let ev = if fw_event {
                    FW_SET_TIMER
                } else {
                    HW_CPU_CYCLES
                };
                sbi::config_matching(base, mask, 0, ev, 0)
            }
            Func::Start => sbi::start(base, mask, 0, 0),
            Func::Stop => sbi::stop(base, mask, 0),
        }
    }
    fn name(self) -> &'static str {
        match self {
            Func::Cfg => "cfg",
            Func::Start => "start",
            Func::Stop => "stop",
        }
    }
    fn table(self) -> &'static str {
        match self {
            Func::Cfg => "Table 9",
            Func::Start => "Table 11",
            Func::Stop => "Table 13",
        }
    }
}

fn counter_sets(s: &mut Suite<'_>, p: &Pmu) {
    let hole = (0..p.num.min(64)).find(|&i| p.info[i].is_none());
    let fw0 = Pmu::lowest(p.fw_set());
    for f in [Func::Cfg, Func::Start, Func::Stop] {
        let id = |what: &str| text!("pmu.{}.set.{what}", f.name());
        let table = f.table();
        s.check(id("mask0").as_str(), "counter_idx_mask 0 is an empty set: the spec names no error for it; rejecting it (INVALID_PARAM, or NOT_SUPPORTED for matching) or doing nothing (start/stop) are allowed", || {
            let r = f.call(0, 0, false);
            let allowed: &[isize] = match f {
                Func::Cfg => &[INVALID_PARAM, NOT_SUPPORTED],
                _ => &[INVALID_PARAM, SUCCESS],
            };
            errs(r, allowed)
        });
        let past = p.num.wrapping_sub(1);
        // (name, base, mask, the counter a firmware that wraps, truncates or
        // ignores the invalid member would touch, what)
        let cases: [(&str, usize, usize, Option<usize>, &str); 4] = [
            (
                "past_end",
                past,
                0b11,
                Some(past),
                "base num_counters-1 with mask 0b11: the highest set bit is past the last counter",
            ),
            ("neg", ALL_ONES, 1, None, "base -1 (all ones)"),
            (
                "wrap",
                usize::MAX - 62,
                1 << 63,
                Some(0),
                "base 2^64-63 with mask bit 63: base + bit wraps around to counter 0",
            ),
            (
                "trunc32",
                1 << 32,
                1,
                Some(0),
                "base 2^32 (must not be truncated to counter 0)",
            ),
        ];
        for (name, b, m, alias, what) in cases {
            let desc = text!("{table} INVALID_PARAM: \"set of counters has at least one invalid counter\": {what}");
            s.check(id(name).as_str(), desc.as_str(), || {
                if p.set_valid(b, m) {
                    return Verdict::new(
                        false,
                        text!("INVALID_PARAM"),
                        text!(
                            "firmware reports this set as valid (num_counters {})",
                            p.num
                        ),
                    );
                }
                let r = f.call(b, m, false);
                // Undo what a wrong firmware did to the counter it hit.
                if let (true, Some(a)) = (r.ok(), alias) {
                    match f {
                        Func::Cfg => release(r.value),
                        Func::Start => {
                            let _ = sbi::stop(a, 1, 0);
                        }
                        Func::Stop => {
                            let _ = sbi::start(a, 1, 0, 0);
                        }
                    }
                }
                errs(r, &[INVALID_PARAM])
            });
        }
        let desc = text!("{table}: base 4096, mask 1: INVALID_PARAM exactly when get_info/num_counters make counter 4096 invalid");
        s.check(id("base4096").as_str(), desc.as_str(), || {
            if !p.valid(4096) {
                return errs(f.call(4096, 1, false), &[INVALID_PARAM]);
            }
            let r = f.call(4096, 1, false);
            // Restore whatever the call changed on the valid counter.
            match f {
                Func::Cfg => {}
                Func::Start if r.ok() => {
                    let _ = sbi::stop(4096, 1, 0);
                }
                Func::Stop if r.ok() => {
                    let _ = sbi::start(4096, 1, 0, 0);
                }
                _ => {}
            }
            Verdict::new(
                r.error != INVALID_PARAM,
                text!("not INVALID_PARAM (counter 4096 is valid here)"),
                text!("{r}"),
            )
        });
        let desc = text!("{table} INVALID_PARAM: a set with a hole (an index get_info rejects) next to a valid firmware counter");
        s.check(id("hole").as_str(), desc.as_str(), || {
            let (Some(h), Some(f0)) = (hole, fw0) else {
                return Verdict::na(
                    "no hole below 64 or no firmware counter: the spec does not require either",
                );
            };
            let mask = 1 << h | 1 << f0;
            let r = f.call(0, mask, true);
            if r.ok() {
                match f {
                    Func::Cfg => release(r.value),
                    Func::Start => {
                        let _ = sbi::stop(f0, 1, 0);
                    }
                    Func::Stop => {}
                }
            }
            errs(r, &[INVALID_PARAM])
        });
    }
}

/// Matches `event` over every counter except cycle/instret and releases the
/// counter again.
fn try_event(p: &Pmu, event: usize, data: u64) -> Ret {
    let r = sbi::config_matching(0, p.match_set(), 0, event, data);
    if r.ok() {
        release(r.value);
    }
    r
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Hw,
    Fw,
}

/// A defined event: a counter of the right kind from the set, or
/// NOT_SUPPORTED (Table 9: "none of the counters can monitor the specified
/// event"; event support is the platform's choice).
fn supported_or_not(p: &Pmu, r: Ret, kind: Kind) -> Verdict {
    let k = if kind == Kind::Hw {
        "hardware"
    } else {
        "firmware"
    };
    let ok = r.error == NOT_SUPPORTED
        || (r.ok()
            && in_set(0, p.match_set(), r.value)
            && (if kind == Kind::Hw {
                p.is_hw(r.value)
            } else {
                p.is_fw(r.value)
            }));
    Verdict::new(
        ok,
        text!("SUCCESS on a {k} counter of the set, or NOT_SUPPORTED"),
        text!("{r}"),
    )
}

fn events(s: &mut Suite<'_>, p: &Pmu) {
    for g in rvpmu_sbi::event::General::ALL {
        let (code, name) = (g as usize, g.name());
        let id = text!("pmu.event.general.{code}");
        let what =
            text!("Table 2 SBI_PMU_HW_{name} (type 0 code {code}) on the non-fixed counters");
        s.check(id.as_str(), what.as_str(), || {
            supported_or_not(p, try_event(p, event(0, code), 0), Kind::Hw)
        });
    }
    let rejects: [(&str, usize, u64, &str); 18] = [
        ("general.0", 0, 0, "Table 2 SBI_PMU_HW_NO_EVENT (code 0): \"Unused event because event_idx cannot be zero\""),
        ("general.11", event(0, 11), 0, "type 0 code 11: not in Table 2"),
        ("general.65535", event(0, 0xffff), 0, "type 0 code 65535: not in Table 2"),
        ("general.data", HW_CPU_CYCLES, 1, "general event with event_data 1: \"all non-zero values of event_data are reserved\""),
        ("cache.id7", cache(7, 0, 0), 0, "cache_id 7: Table 3 defines 0-6"),
        ("cache.id8191", cache(0x1fff, 0, 0), 0, "cache_id 8191 (all code[15:3] set): Table 3 defines 0-6"),
        ("cache.op3", cache(0, 3, 0), 0, "op_id 3: Table 4 defines 0-2"),
        ("cache.data", cache(0, 0, 0), 1, "cache event with event_data 1: \"all non-zero values of event_data are reserved\""),
        ("type4", event(4, 0), 0, "event type 4: Table 1 defines types 0, 1, 2, 3, 15"),
        ("type14", event(14, 1), 0, "event type 14: Table 1 defines types 0, 1, 2, 3, 15"),
        ("bit20", 1 << 20 | HW_CPU_CYCLES, 0, "event_idx with bit 20 set: \"The event_idx is a 20 bits wide number\""),
        ("raw.code1", event(2, 1), 0, "raw event (type 2) with code 1: \"event_idx.code should be zero\""),
        ("raw2.code1", event(3, 1), 0, "raw event v2 (type 3) with code 1: \"event_idx.code should be zero\""),
        ("raw.data49", event(2, 0), 1 << 48, "raw event with event_data bit 48 set: only a \"48-bit value\" is allowed (Table 1: bits [0:47])"),
        ("raw2.data57", event(3, 0), 1 << 56, "raw event v2 with event_data bit 56 set: only a \"56-bit value\" is allowed (Table 1: bits [0:55])"),
        ("fw.22", event(15, 22), 0, "firmware event 22: Table 6 \"Reserved 22 - 255\""),
        ("fw.255", event(15, 255), 0, "firmware event 255: Table 6 \"Reserved 22 - 255\""),
        ("fw.data", FW_SET_TIMER, 1, "firmware event 5 with event_data 1: \"all non-zero values of event_data are reserved\" (all but SBI_PMU_FW_PLATFORM)"),
    ];
    for (name, ev, data, what) in rejects {
        let id = text!("pmu.event.{name}");
        let what = text!(
            "{what}: rejected (INVALID_PARAM or NOT_SUPPORTED; the spec names no single code)"
        );
        s.check(id.as_str(), what.as_str(), || {
            let r = try_event(p, ev, data);
            Verdict::new(REJECT.contains(&r.error), names(REJECT), text!("{r}"))
        });
    }
    const CACHE: [&str; 7] = ["L1D", "L1I", "LL", "DTLB", "ITLB", "BPU", "NODE"];
    for (id_, name) in CACHE.iter().enumerate() {
        let id = text!("pmu.event.cache.{name}");
        let what = text!("Tables 3-5: SBI_PMU_HW_CACHE_{name} x READ/WRITE/PREFETCH x ACCESS/MISS: each a hardware counter of the set or NOT_SUPPORTED");
        s.check(id.as_str(), what.as_str(), || {
            let mut actual = crate::console::Field::new();
            let mut ok = true;
            for op in 0..3 {
                for res in 0..2 {
                    let r = try_event(p, cache(id_, op, res), 0);
                    let v = supported_or_not(p, r, Kind::Hw);
                    ok &= v.status == crate::report::Status::Pass;
                    let _ = core::fmt::Write::write_fmt(
                        &mut actual,
                        format_args!(
                            "{}{}={} ",
                            ["rd", "wr", "pf"][op],
                            ["acc", "miss"][res],
                            if r.ok() { r.value as isize } else { r.error }
                        ),
                    );
                }
            }
            let _ = core::fmt::Write::write_str(&mut actual, "(counter index, or error code)");
            Verdict::new(
                ok,
                text!("SUCCESS on a hardware counter of the set, or NOT_SUPPORTED (-2)"),
                actual,
            )
        });
    }
    let defined: [(&str, usize, u64, Kind, &str); 4] = [
        ("raw.data48", event(2, 0), 1 << 47 | 1, Kind::Hw, "raw event (type 2, code 0) with a 48-bit event_data"),
        ("fw.256", event(15, 256), 0, Kind::Fw, "firmware event 256: Table 6 \"256 - 65534 SBI implementation specific\""),
        ("fw.65534", event(15, 65534), 0, Kind::Fw, "firmware event 65534: Table 6 \"256 - 65534 SBI implementation specific\""),
        ("fw.65535", event(15, 65535), 0x1234, Kind::Fw, "Table 6 SBI_PMU_FW_PLATFORM (65535) with event_data 0x1234 \"contains the event encoding\""),
    ];
    for (name, ev, data, kind, what) in defined {
        let id = text!("pmu.event.{name}");
        s.check(id.as_str(), what, || {
            supported_or_not(p, try_event(p, ev, data), kind)
        });
    }
    s.check("pmu.event.raw2.data56", "raw event v2 (type 3, code 0) with a 56-bit event_data: SUCCESS on a hardware counter or NOT_SUPPORTED; type 3 is new in SBI 3.0, so an older firmware may reject it as an undefined type", || {
        let r = try_event(p, event(3, 0), 1 << 55 | 1);
        if p.at_least(3, 0) {
            supported_or_not(p, r, Kind::Hw)
        } else {
            let ok = REJECT.contains(&r.error) || (r.ok() && p.is_hw(r.value));
            Verdict::new(ok, text!("SBI < 3.0: SUCCESS on a hardware counter, INVALID_PARAM or NOT_SUPPORTED"), text!("{r}"))
        }
    });
    for (code, (_, name)) in rvpmu_sbi::event::FW_EVENTS.iter().enumerate() {
        let id = text!("pmu.event.fw.{code}");
        let what = text!("Table 6 SBI_PMU_FW_{name} (type 15 code {code})");
        s.check(id.as_str(), what.as_str(), || {
            supported_or_not(p, try_event(p, event(15, code), 0), Kind::Fw)
        });
    }
}

fn config_behaviour(s: &mut Suite<'_>, p: &Pmu) {
    let cyc = p.by_csr(0xc00);
    let ins = p.by_csr(0xc02);
    s.check("pmu.cfg.skip.cycles", "Table 8 SKIP_MATCH: \"unconditionally select the first counter\": the cycle counter alone, event cycles, answers its own index", || {
        let Some(c) = cyc else { return Verdict::na("no cycle counter reported") };
        let r = sbi::config_matching(c, 1, CFG_SKIP_MATCH, HW_CPU_CYCLES, 0);
        Verdict::new(r.ok() && r.value == c, text!("SUCCESS value={c:#x}"), text!("{r}"))
    });
    s.check(
        "pmu.cfg.skip.instret",
        "Table 8 SKIP_MATCH on the instret counter with event instructions answers its own index",
        || {
            let Some(c) = ins else {
                return Verdict::na("no instret counter reported");
            };
            let r = sbi::config_matching(c, 1, CFG_SKIP_MATCH, HW_INSTRUCTIONS, 0);
            Verdict::new(
                r.ok() && r.value == c,
                text!("SUCCESS value={c:#x}"),
                text!("{r}"),
            )
        },
    );
    s.check("pmu.cfg.skip.first", "SKIP_MATCH selects \"the first counter from the set\": set {cycle, instret}, event cycles, answers the cycle counter", || {
        let (Some(c), Some(i)) = (cyc, ins) else { return Verdict::na("no cycle/instret counters") };
        if i <= c || i - c >= 64 {
            return Verdict::na("instret is not above cycle");
        }
        let r = sbi::config_matching(c, 1 | 1 << (i - c), CFG_SKIP_MATCH, HW_CPU_CYCLES, 0);
        Verdict::new(r.ok() && r.value == c, text!("SUCCESS value={c:#x}"), text!("{r}"))
    });
    let hpm = p.hpm_set();
    s.check("pmu.cfg.skip.unconfigured", "SKIP_MATCH on two free counters selects the first one; whether an unconfigured counter may be taken this way is left open (an error is allowed)", || {
        let Some(h0) = Pmu::lowest(hpm) else { return Verdict::na("no programmable hardware counter") };
        let Some(h1) = Pmu::lowest(hpm & !(1 << h0)) else { return Verdict::na("only one programmable counter") };
        let r = sbi::config_matching(h0, 1 | 1 << (h1 - h0), CFG_SKIP_MATCH, HW_CPU_CYCLES, 0);
        if r.ok() {
            release(r.value);
        }
        Verdict::new(
            (r.ok() && r.value == h0) || REJECT.contains(&r.error),
            text!("SUCCESS value={h0:#x}, or INVALID_PARAM/NOT_SUPPORTED"),
            text!("{r}"),
        )
    });
    let auto = sbi::config_matching(0, hpm, CFG_CLEAR_VALUE | CFG_AUTO_START, HW_CPU_CYCLES, 0);
    s.check("pmu.cfg.auto_start", "Table 8 AUTO_START: \"Start the counter after configuring\": a following start answers ALREADY_STARTED (Table 11)", || {
        if auto.error == NOT_SUPPORTED {
            return Verdict::na("no programmable counter counts cycles");
        }
        if !auto.ok() {
            return Verdict::new(false, text!("config SUCCESS, then ALREADY_STARTED"), text!("config {auto}"));
        }
        errs(sbi::start(auto.value, 1, 0, 0), &[ALREADY_STARTED])
    });
    s.check("pmu.cfg.not_started", "FID 2 finds \"a counter from a set of counters which is not started\": a set holding only a started counter gives NOT_SUPPORTED (Table 9)", || {
        if !auto.ok() {
            return Verdict::na("no programmable counter counts cycles");
        }
        let r = sbi::config_matching(auto.value, 1, 0, HW_CPU_CYCLES, 0);
        errs(r, &[NOT_SUPPORTED])
    });
    if auto.ok() {
        release(auto.value);
    }
    s.check("pmu.cfg.hw_event_fw_set", "Table 9 NOT_SUPPORTED \"none of the counters can monitor the specified event\": cycles on a set of firmware counters only", || {
        if p.fw == 0 {
            return Verdict::na("no firmware counters; they are optional");
        }
        let r = sbi::config_matching(0, p.fw_set(), 0, HW_CPU_CYCLES, 0);
        if r.ok() {
            release(r.value);
        }
        errs(r, &[NOT_SUPPORTED])
    });
    s.check(
        "pmu.cfg.fw_event_hw_set",
        "Table 9 NOT_SUPPORTED: firmware event SET_TIMER on a set of hardware counters only",
        || {
            let r = sbi::config_matching(0, hpm, 0, FW_SET_TIMER, 0);
            if r.ok() {
                release(r.value);
            }
            errs(r, &[NOT_SUPPORTED])
        },
    );
}

fn firmware_counters(s: &mut Suite<'_>, p: &Pmu) {
    let fset = p.fw_set();
    let cfg = sbi::config_matching(0, fset, CFG_CLEAR_VALUE, FW_SET_TIMER, 0);
    let f = if cfg.ok() && p.is_fw(cfg.value) {
        Some(cfg.value)
    } else {
        None
    };
    let na = || {
        Verdict::na("no firmware counter counts SET_TIMER; firmware counters are optional (\"can also provide\")")
    };
    s.check("pmu.fw.match", "FID 2: SET_TIMER (Table 6 code 5) on the firmware counters: a firmware counter of the set, or NOT_SUPPORTED", || {
        let ok = cfg.error == NOT_SUPPORTED || (cfg.ok() && in_set(0, fset, cfg.value) && p.is_fw(cfg.value));
        Verdict::new(ok, text!("SUCCESS on a firmware counter, or NOT_SUPPORTED"), text!("{cfg}"))
    });
    s.check("pmu.fw.count", "firmware counter for SBI_PMU_FW_SET_TIMER started at 0 (SET_INIT_VALUE) counts exactly: 5 set_timer calls read back 5 (FID 5)", || {
        let Some(f) = f else { return na() };
        let st = sbi::start(f, 1, START_SET_INIT_VALUE, 0);
        timers(5);
        let r = sbi::fw_read(f);
        Verdict::new(st.ok() && r.ok() && r.value == 5, text!("start SUCCESS; fw_read SUCCESS value=0x5"), text!("start {st}; fw_read {r}"))
    });
    s.check(
        "pmu.start.already_started.fw",
        "Table 11 ALREADY_STARTED: starting a running firmware counter",
        || {
            let Some(f) = f else { return na() };
            errs(sbi::start(f, 1, 0, 0), &[ALREADY_STARTED])
        },
    );
    s.check("pmu.fw.read_hi", "FID 6 \"always returns zero in sbiret.value for RV64\" (SUCCESS); NOT_SUPPORTED only below SBI 2.0 (Table 20)", || {
        let Some(f) = f else { return na() };
        let r = sbi::fw_read_hi(f);
        Verdict::new((r.ok() && r.value == 0) || (!p.at_least(2, 0) && r.error == NOT_SUPPORTED), text!("SUCCESS value=0x0"), text!("{r}"))
    });
    for (id, bit) in [("pmu.stop.flag.bit2", 2), ("pmu.stop.flag.bit63", 63)] {
        s.check(id, "Table 13 INVALID_PARAM: stop_flags reserved bit (Table 12 RESERVED 2:(XLEN-1)) on a running firmware counter", || {
            let Some(f) = f else { return na() };
            errs(sbi::stop(f, 1, 1 << bit), &[INVALID_PARAM])
        });
    }
    s.check("pmu.stop.fw", "FID 4 stops a running firmware counter (Table 13 SUCCESS); the rejected stops above left it running", || {
        let Some(f) = f else { return na() };
        errs(sbi::stop(f, 1, 0), &[SUCCESS])
    });
    s.check(
        "pmu.fw.stopped",
        "a stopped firmware counter does not count: 3 more set_timer calls leave it at 5",
        || {
            let Some(f) = f else { return na() };
            timers(3);
            let r = sbi::fw_read(f);
            Verdict::new(
                r.ok() && r.value == 5,
                text!("SUCCESS value=0x5"),
                text!("{r}"),
            )
        },
    );
    s.check(
        "pmu.stop.already_stopped.fw",
        "Table 13 ALREADY_STOPPED: stopping a stopped firmware counter",
        || {
            let Some(f) = f else { return na() };
            errs(sbi::stop(f, 1, 0), &[ALREADY_STOPPED])
        },
    );
    for (id, bit) in [("pmu.start.flag.bit2", 2), ("pmu.start.flag.bit63", 63)] {
        s.check(id, "Table 11 INVALID_PARAM: start_flags reserved bit (Table 10 RESERVED 2:(XLEN-1)) on a stopped firmware counter", || {
            let Some(f) = f else { return na() };
            errs(sbi::start(f, 1, 1 << bit, 0), &[INVALID_PARAM])
        });
    }
    s.check("pmu.start.continue", "Table 10 note: without SET_INIT_VALUE \"counting will start from the current counter value\": 5, then one set_timer gives 6 (the rejected starts did not start it)", || {
        let Some(f) = f else { return na() };
        let st = sbi::start(f, 1, 0, 0);
        let a = sbi::fw_read(f);
        timers(1);
        let b = sbi::fw_read(f);
        let _ = sbi::stop(f, 1, 0);
        Verdict::new(
            st.ok() && a.ok() && a.value == 5 && b.ok() && b.value == 6,
            text!("start SUCCESS; reads 5 then 6"),
            text!("start {st}; read {a} then {b}"),
        )
    });
    s.check("pmu.start.init.fw", "Table 10 SET_INIT_VALUE: \"Set the value of counters based on the initial_value parameter\": 1000 reads back 1000", || {
        let Some(f) = f else { return na() };
        let st = sbi::start(f, 1, START_SET_INIT_VALUE, 1000);
        let r = sbi::fw_read(f);
        let _ = sbi::stop(f, 1, 0);
        Verdict::new(st.ok() && r.ok() && r.value == 1000, text!("SUCCESS value=0x3e8"), text!("start {st}; fw_read {r}"))
    });
    s.check("pmu.cfg.clear.fw", "Table 8 CLEAR_VALUE: \"Clear (or zero) the counter value\": SKIP_MATCH|CLEAR_VALUE on the firmware counter reads 0", || {
        let Some(f) = f else { return na() };
        let r = sbi::config_matching(f, 1, CFG_SKIP_MATCH | CFG_CLEAR_VALUE, FW_SET_TIMER, 0);
        let v = sbi::fw_read(f);
        Verdict::new(r.ok() && r.value == f && v.ok() && v.value == 0, text!("SUCCESS value={f:#x}; fw_read 0"), text!("{r}; fw_read {v}"))
    });
    s.check("pmu.cfg.auto_start.value", "\"The SBI_PMU_CFG_FLAG_AUTO_START flag in config_flags has no impact on the counter value\": a counter left at 100 reads 100 after SKIP_MATCH|AUTO_START", || {
        let Some(f) = f else { return na() };
        let _ = sbi::start(f, 1, START_SET_INIT_VALUE, 100);
        let _ = sbi::stop(f, 1, 0);
        let r = sbi::config_matching(f, 1, CFG_SKIP_MATCH | CFG_AUTO_START, FW_SET_TIMER, 0);
        let v = sbi::fw_read(f);
        Verdict::new(r.ok() && v.ok() && v.value == 100, text!("SUCCESS; fw_read 100"), text!("{r}; fw_read {v}"))
    });
    s.check(
        "pmu.cfg.auto_start.counts",
        "AUTO_START started the firmware counter: 2 set_timer calls count (100 -> 102)",
        || {
            let Some(f) = f else { return na() };
            timers(2);
            let v = sbi::fw_read(f);
            Verdict::new(
                v.ok() && v.value == 102,
                text!("SUCCESS value=0x66"),
                text!("{v}"),
            )
        },
    );
    s.check("pmu.stop.reset", "Table 12 RESET \"Reset the counter to event mapping\": stop|RESET of a running counter succeeds and the counter can be matched to another event", || {
        let Some(f) = f else { return na() };
        let st = sbi::stop(f, 1, STOP_RESET);
        let r = sbi::config_matching(f, 1, 0, event(15, 4), 0);
        if r.ok() {
            release(r.value);
        }
        Verdict::new(
            st.ok() && (r.ok() && r.value == f || r.error == NOT_SUPPORTED),
            text!("stop SUCCESS; match ILLEGAL_INSN on it SUCCESS (or NOT_SUPPORTED if that event is absent)"),
            text!("stop {st}; match {r}"),
        )
    });
    s.check("pmu.stop.reset_stopped", "RESET releases an already-stopped (configured, never started) counter: stop|RESET answers ALREADY_STOPPED (Table 13) or SUCCESS, then the counter matches again", || {
        let Some(f) = f else { return na() };
        let c = sbi::config_matching(f, 1, 0, FW_SET_TIMER, 0);
        let st = sbi::stop(f, 1, STOP_RESET);
        let again = sbi::config_matching(f, 1, 0, FW_SET_TIMER, 0);
        if again.ok() {
            release(again.value);
        }
        Verdict::new(
            c.ok() && (st.error == ALREADY_STOPPED || st.ok()) && again.ok() && again.value == f,
            text!("config SUCCESS; stop ALREADY_STOPPED or SUCCESS; config SUCCESS value={f:#x}"),
            text!("config {c}; stop {st}; config {again}"),
        )
    });
    let hw0 = Pmu::lowest(p.hw as usize);
    let hw_reads: [(&str, Option<usize>, &str); 5] = [
        (
            "pmu.fw_read.hw",
            hw0,
            "Table 14 INVALID_PARAM: \"counter_idx points to a hardware counter\"",
        ),
        (
            "pmu.fw_read.past_end",
            Some(p.num),
            "Table 14 INVALID_PARAM: counter_idx = num_counters (invalid counter)",
        ),
        (
            "pmu.fw_read.neg",
            Some(ALL_ONES),
            "Table 14 INVALID_PARAM: counter_idx = -1 (invalid counter)",
        ),
        (
            "pmu.fw_read.trunc32",
            f.map(|f| f + (1 << 32)),
            "Table 14 INVALID_PARAM: firmware counter index + 2^32 (must not be truncated)",
        ),
        (
            "pmu.fw_read.hole",
            (0..p.num.min(64)).find(|&i| p.info[i].is_none()),
            "Table 14 INVALID_PARAM: an index get_info rejects (invalid counter)",
        ),
    ];
    for (id, idx, what) in hw_reads {
        s.check(id, what, || {
            not_fw_counter(p, idx, |i| errs(sbi::fw_read(i), &[INVALID_PARAM]))
        });
        let id_hi = id.replace_first("fw_read", "fw_read_hi");
        let what_hi = text!("Table 15 (read_hi) INVALID_PARAM, same case as {id}");
        s.check(id_hi.as_str(), what_hi.as_str(), || {
            not_fw_counter(p, idx, |i| {
                let r = sbi::fw_read_hi(i);
                let allowed: &[isize] = if p.at_least(2, 0) {
                    &[INVALID_PARAM]
                } else {
                    &[INVALID_PARAM, NOT_SUPPORTED]
                };
                errs(r, allowed)
            })
        });
    }
}

/// Reads that must fail on index `idx` (`None`: there is no such counter):
/// N/A without a counter, a failure if the firmware reports it as a valid
/// firmware counter, else `read`'s verdict on it.
fn not_fw_counter(p: &Pmu, idx: Option<usize>, read: impl FnOnce(usize) -> Verdict) -> Verdict {
    let Some(i) = idx else {
        return Verdict::na("no such counter: the layout is the platform's choice");
    };
    if p.valid(i) && !p.is_hw(i) {
        return Verdict::new(
            false,
            text!("INVALID_PARAM"),
            text!("firmware reports {i:#x} as a valid firmware counter"),
        );
    }
    read(i)
}

/// Start/stop act on sets: two firmware counters in one call.
fn counter_groups(s: &mut Suite<'_>, p: &Pmu) {
    let a = sbi::config_matching(0, p.fw_set(), CFG_CLEAR_VALUE, FW_SET_TIMER, 0);
    let rest = if a.ok() {
        p.fw_set() & !(1 << a.value.min(63))
    } else {
        0
    };
    let b = sbi::config_matching(0, rest, CFG_CLEAR_VALUE, FW_SET_TIMER, 0);
    let pair = (a.ok() && b.ok() && a.value != b.value && a.value.abs_diff(b.value) < 64)
        .then(|| (a.value.min(b.value), a.value.max(b.value)));
    let na = || {
        Verdict::na(
            "fewer than two firmware counters count SET_TIMER; firmware counters are optional",
        )
    };
    s.check("pmu.set.start_two", "FID 3 \"Start or enable a set of counters\": one start of two firmware counters (cleared at config) starts both; 2 set_timer calls read 2 on each", || {
        let Some((lo, hi)) = pair else { return na() };
        let mask = 1 | 1 << (hi - lo);
        let st = sbi::start(lo, mask, 0, 0);
        timers(2);
        let (x, y) = (sbi::fw_read(lo), sbi::fw_read(hi));
        Verdict::new(
            st.ok() && x.ok() && x.value == 2 && y.ok() && y.value == 2,
            text!("start SUCCESS; 2 and 2"),
            text!("start {st}; {x} and {y}"),
        )
    });
    s.check(
        "pmu.set.stop_one_of_two",
        "stopping one counter of the pair leaves the other running",
        || {
            let Some((lo, hi)) = pair else { return na() };
            let st = sbi::stop(hi, 1, 0);
            timers(1);
            let (x, y) = (sbi::fw_read(lo), sbi::fw_read(hi));
            Verdict::new(
                st.ok() && x.ok() && x.value == 3 && y.ok() && y.value == 2,
                text!("stop SUCCESS; 3 and 2"),
                text!("stop {st}; {x} and {y}"),
            )
        },
    );
    s.check("pmu.set.start_partly_started", "Table 11 ALREADY_STARTED: \"set of counters includes at least one counter which is already started\" (one running, one stopped)", || {
        let Some((lo, hi)) = pair else { return na() };
        errs(sbi::start(lo, 1 | 1 << (hi - lo), 0, 0), &[ALREADY_STARTED])
    });
    s.check("pmu.set.stop_partly_stopped", "Table 13 ALREADY_STOPPED: \"set of counters includes at least one counter which is already stopped\" (state after the call above: a firmware may have started the stopped one, then both run and SUCCESS is right)", || {
        let Some((lo, hi)) = pair else { return na() };
        // Whether the rejected start above started the stopped member is
        // not specified; find out, so the expectation is exact.
        let before = sbi::fw_read(hi);
        timers(1);
        let after = sbi::fw_read(hi);
        let hi_running = before.ok() && after.ok() && after.value != before.value;
        let r = sbi::stop(lo, 1 | 1 << (hi - lo), 0);
        let want = if hi_running { SUCCESS } else { ALREADY_STOPPED };
        errs(r, &[want])
    });
    s.check(
        "pmu.set.stop_two",
        "FID 4 stops a set: after stopping both, set_timer calls change neither",
        || {
            let Some((lo, hi)) = pair else { return na() };
            let _ = sbi::stop(lo, 1, 0);
            let _ = sbi::stop(hi, 1, 0);
            let (x0, y0) = (sbi::fw_read(lo), sbi::fw_read(hi));
            timers(2);
            let (x, y) = (sbi::fw_read(lo), sbi::fw_read(hi));
            Verdict::new(
                x == x0 && y == y0 && x.ok() && y.ok(),
                text!("unchanged"),
                text!("{x0} -> {x}; {y0} -> {y}"),
            )
        },
    );
    if a.ok() {
        release(a.value);
    }
    if b.ok() {
        release(b.value);
    }
}

/// `str::replacen` needs an allocator; this is the one-off no_std version.
trait ReplaceFirst {
    fn replace_first(&self, from: &str, to: &str) -> crate::console::Field;
}
impl ReplaceFirst for str {
    fn replace_first(&self, from: &str, to: &str) -> crate::console::Field {
        match self.find(from) {
            Some(i) => text!("{}{}{}", &self[..i], to, &self[i + from.len()..]),
            None => text!("{self}"),
        }
    }
}

fn hardware_counters(s: &mut Suite<'_>, p: &Pmu) {
    let hpm = p.hpm_set();
    let cfg = sbi::config_matching(0, hpm, CFG_CLEAR_VALUE, HW_CPU_CYCLES, 0);
    let h = if cfg.ok() && p.is_hw(cfg.value) {
        Some(cfg.value)
    } else {
        None
    };
    let csr = h.and_then(|h| p.csr(h));
    let na = || {
        Verdict::na("no programmable counter counts cycles; event support is the platform's choice")
    };
    s.check("pmu.hw.cleared", "CLEAR_VALUE zeroes a matched hardware counter, which stays stopped without AUTO_START: its CSR (readable from S-mode, chapter intro) reads 0 twice", || {
        let (Some(_), Some(c)) = (h, csr) else { return na() };
        let a = read_counter_csr(c);
        spin(100);
        let b = read_counter_csr(c);
        Verdict::new(a == Some(0) && b == Some(0), text!("0, 0"), text!("{a:?}, {b:?} (None: CSR read trapped)"))
    });
    s.check("pmu.hw.counts", "FID 3 start (no flags) makes the cycles counter count from its current value 0: two CSR reads increase", || {
        let (Some(h), Some(c)) = (h, csr) else { return na() };
        let st = sbi::start(h, 1, 0, 0);
        let a = read_counter_csr(c);
        spin(100);
        let b = read_counter_csr(c);
        let ok = st.ok() && matches!((a, b), (Some(a), Some(b)) if a > 0 && b > a && a < 1_000_000);
        Verdict::new(ok, text!("start SUCCESS; 0 < first < second"), text!("start {st}; {a:?} then {b:?}"))
    });
    s.check(
        "pmu.start.already_started.hw",
        "Table 11 ALREADY_STARTED: starting a running hardware counter",
        || {
            let Some(h) = h else { return na() };
            errs(sbi::start(h, 1, 0, 0), &[ALREADY_STARTED])
        },
    );
    s.check(
        "pmu.hw.stopped",
        "FID 4 stop: a stopped hardware counter keeps its value (two CSR reads equal)",
        || {
            let (Some(h), Some(c)) = (h, csr) else {
                return na();
            };
            let st = sbi::stop(h, 1, 0);
            let a = read_counter_csr(c);
            spin(100);
            let b = read_counter_csr(c);
            Verdict::new(
                st.ok() && a.is_some() && a == b,
                text!("stop SUCCESS; equal reads"),
                text!("stop {st}; {a:?} then {b:?}"),
            )
        },
    );
    s.check(
        "pmu.stop.already_stopped.hw",
        "Table 13 ALREADY_STOPPED: stopping a stopped hardware counter",
        || {
            let Some(h) = h else { return na() };
            errs(sbi::stop(h, 1, 0), &[ALREADY_STOPPED])
        },
    );
    s.check("pmu.start.init.hw", "Table 10 SET_INIT_VALUE on a hardware counter: started at 2^40 its CSR reads just above 2^40", || {
        let (Some(h), Some(c)) = (h, csr) else { return na() };
        let st = sbi::start(h, 1, START_SET_INIT_VALUE, 1 << 40);
        let a = read_counter_csr(c);
        let _ = sbi::stop(h, 1, 0);
        let ok = st.ok() && matches!(a, Some(a) if (1 << 40..(1 << 40) + 1_000_000).contains(&a));
        Verdict::new(ok, text!("start SUCCESS; 2^40 <= value < 2^40 + 10^6"), text!("start {st}; {a:?}"))
    });
    if let Some(h) = h {
        release(h);
    }
}

const SNAP_VALUES: usize = 8;
const SENTINEL: u64 = 0x5a5a_5a5a_5a5a_5a5a;

fn snapshot(s: &mut Suite<'_>, p: &Pmu, env: &Env) {
    let shm = Shm::of(env.slot, Area::Snapshot);
    let fcfg = sbi::config_matching(0, p.fw_set(), CFG_CLEAR_VALUE, FW_SET_TIMER, 0);
    let f = if fcfg.ok() && p.is_fw(fcfg.value) {
        Some(fcfg.value)
    } else {
        None
    };
    let nofw =
        || Verdict::na("no firmware counter counts SET_TIMER; firmware counters are optional");
    s.check("pmu.snap.noshmem.stop", "Table 13 NO_SHMEM: \"the snapshot shared memory is not available and SBI_PMU_STOP_FLAG_TAKE_SNAPSHOT is set\" (none was ever set on this hart)", || {
        let Some(f) = f else { return nofw() };
        let _ = sbi::start(f, 1, 0, 0);
        let r = sbi::stop(f, 1, STOP_TAKE_SNAPSHOT);
        let _ = sbi::stop(f, 1, 0);
        errs(r, &[NO_SHMEM])
    });
    s.check(
        "pmu.snap.noshmem.start",
        "Table 11 NO_SHMEM: INIT_SNAPSHOT without snapshot shared memory",
        || {
            let Some(f) = f else { return nofw() };
            let r = sbi::start(f, 1, START_INIT_SNAPSHOT, 0);
            let _ = sbi::stop(f, 1, 0);
            errs(r, &[NO_SHMEM])
        },
    );
    let set = sbi::snapshot_set_shmem(shm.addr(), 0, 0);
    let sup = set.ok();
    s.check("pmu.snap.set", "FID 7 \"is an optional function\": a page-aligned page answers SUCCESS, or NOT_SUPPORTED (Table 17)", || {
        errs(set, &[SUCCESS, NOT_SUPPORTED])
    });
    let absent = "PMU snapshot is absent; FID 7 \"is an optional function\", so every call answers NOT_SUPPORTED";
    let rejects: [ShmemReject; 10] = [
        ("flags1", shm.addr(), 0, 1, INVALID_PARAM, "Table 17 INVALID_PARAM: \"The flags parameter is not zero\" (1)"),
        ("flags63", shm.addr(), 0, 1 << 63, INVALID_PARAM, "Table 17 INVALID_PARAM: flags bit 63"),
        ("align8", shm.addr() + 8, 0, 0, INVALID_PARAM, "Table 17 INVALID_PARAM: shmem_phys_lo not 4096-byte aligned (+8)"),
        ("align2048", shm.addr() + 2048, 0, 0, INVALID_PARAM, "Table 17 INVALID_PARAM: shmem_phys_lo not 4096-byte aligned (+2048)"),
        ("lo_ones", ALL_ONES, 0, 0, INVALID_PARAM, "lo all-ones with hi 0 is not the disable form and not aligned: INVALID_PARAM"),
        ("fw_addr", FW_ADDR, 0, 0, INVALID_ADDRESS, "Table 17 INVALID_ADDRESS: 0x80000000, where the firmware lives, is not supervisor-writable"),
        ("mmio", MMIO_ADDR, 0, 0, INVALID_ADDRESS, "Table 17 INVALID_ADDRESS: 0x10000000 (the UART) is not memory"),
        ("past_ram", env.ram_end, 0, 0, INVALID_ADDRESS, "Table 17 INVALID_ADDRESS: the page at the end of RAM is not memory"),
        ("hi1", shm.addr(), 1, 0, INVALID_ADDRESS, "Table 17 INVALID_ADDRESS: shmem_phys_hi 1 (an address above 2^64 that no memory backs)"),
        ("hi_ones", shm.addr(), ALL_ONES, 0, INVALID_ADDRESS, "Table 17 INVALID_ADDRESS: hi all-ones with a normal lo is not the disable form"),
    ];
    shmem_rejects(
        s,
        "pmu.snap",
        &rejects,
        sup,
        absent,
        sbi::snapshot_set_shmem,
    );
    let na = || Verdict::na("PMU snapshot absent: FID 7 \"is an optional function\"");
    s.check(
        "pmu.snap.reset",
        "FID 7 may set the area again (Table 17 SUCCESS: \"Shared memory was set\")",
        || {
            if !sup {
                return na();
            }
            errs(sbi::snapshot_set_shmem(shm.addr(), 0, 0), &[SUCCESS])
        },
    );
    // Firmware counter f, snapshot relative to base f-1 (or f), so the
    // relative index is not simply the counter index.
    let (base, rel) = match f {
        Some(f) if f > 0 => (f - 1, 1),
        Some(f) => (f, 0),
        None => (0, 0),
    };
    let mut take = Ret {
        error: FAILED,
        value: 0,
    };
    if let (true, Some(f)) = (sup, f) {
        let _ = sbi::start(f, 1, START_SET_INIT_VALUE, 0);
        timers(3);
        shm.fill(0x5a);
        shm.wr64(0, 0);
        take = sbi::stop(base, 1 << rel, STOP_TAKE_SNAPSHOT);
    }
    s.check("pmu.snap.take.value", "stop TAKE_SNAPSHOT: \"must save the current value of all the stopped counters\" at counter_values[idx - counter_idx_base] (Table 16): 3 set_timer calls -> 3", || {
        if !sup {
            return na();
        }
        if f.is_none() {
            return nofw();
        }
        let v = shm.rd64(SNAP_VALUES + 8 * rel);
        Verdict::new(take.ok() && v == 3, text!("SUCCESS; values[{rel}] = 3"), text!("{take}; values[{rel}] = {v:#x}"))
    });
    s.check("pmu.snap.take.others", "\"The values corresponding to all other counters must not be modified\": the other 63 values keep their sentinel", || {
        if !sup {
            return na();
        }
        if f.is_none() {
            return nofw();
        }
        let bad = (0..64).filter(|&i| i != rel).find(|&i| shm.rd64(SNAP_VALUES + 8 * i) != SENTINEL);
        Verdict::new(bad.is_none(), text!("unchanged"), text!("{}", bad.map_or(text!("unchanged"), |i| text!("values[{i}] = {:#x}", shm.rd64(SNAP_VALUES + 8 * i))).as_str()))
    });
    s.check("pmu.snap.take.no_overflow", "counter_overflow_bitmap (Table 16): a firmware counter that did not overflow has its relative bit clear", || {
        if !sup {
            return na();
        }
        if f.is_none() {
            return nofw();
        }
        let m = shm.rd64(0);
        Verdict::new(m >> rel & 1 == 0, text!("bit {rel} clear"), text!("bitmap {m:#x}"))
    });
    s.check("pmu.snap.init", "start INIT_SNAPSHOT: \"must initialize all the given valid counters (to be started) from the value set in the shared snapshot memory\": values[rel] = 5000 reads back 5000", || {
        if !sup {
            return na();
        }
        let Some(f) = f else { return nofw() };
        shm.wr64(SNAP_VALUES + 8 * rel, 5000);
        let st = sbi::start(base, 1 << rel, START_INIT_SNAPSHOT, 0);
        let r = sbi::fw_read(f);
        let _ = sbi::stop(f, 1, 0);
        Verdict::new(st.ok() && r.ok() && r.value == 5000, text!("SUCCESS; fw_read 5000"), text!("start {st}; fw_read {r}"))
    });
    s.check("pmu.snap.init_and_value", "\"SBI_PMU_START_SET_INIT_VALUE and SBI_PMU_START_FLAG_INIT_SNAPSHOT are mutually exclusive\": both set is INVALID_PARAM (Table 11)", || {
        if !sup {
            return na();
        }
        let Some(f) = f else { return nofw() };
        let r = sbi::start(f, 1, START_SET_INIT_VALUE | START_INIT_SNAPSHOT, 7);
        if r.ok() {
            let _ = sbi::stop(f, 1, 0);
        }
        errs(r, &[INVALID_PARAM])
    });
    s.check("pmu.snap.untouched", "\"The SBI implementation must not access this memory any other time\": start and stop without snapshot flags leave the page unchanged", || {
        if !sup {
            return na();
        }
        let Some(f) = f else { return nofw() };
        shm.fill(0x5a);
        let _ = sbi::start(f, 1, 0, 0);
        timers(1);
        let _ = sbi::stop(f, 1, 0);
        let bad = shm.find_not(0..4096, 0x5a);
        Verdict::new(bad.is_none(), text!("unchanged"), text!("{bad:?} (first changed offset)"))
    });
    if let Some(f) = f {
        release(f);
    }
    s.check("pmu.snap.overflow", "counter_overflow_bitmap holds \"logical overflown counters relative to the counter_idx_base\" (with Sscofpmf; zero without): a cycles counter started 3000 below 2^64 overflows and sets exactly its relative bit", || {
        if !sup {
            return na();
        }
        let cfg = sbi::config_matching(0, p.hpm_set(), CFG_CLEAR_VALUE, HW_CPU_CYCLES, 0);
        if !cfg.ok() {
            return Verdict::na("no programmable counter counts cycles");
        }
        let h = cfg.value;
        let width = p.info.get(h).copied().flatten().map_or(63, |i| (i >> 12) & 0x3f);
        let top = if width >= 63 { u64::MAX } else { (1u64 << (width + 1)) - 1 };
        let (hb, hr) = if h > 0 { (h - 1, 1) } else { (h, 0) };
        let st = sbi::start(h, 1, START_SET_INIT_VALUE, top - 3000);
        spin(20_000);
        shm.wr64(0, 0);
        let sp = sbi::stop(hb, 1 << hr, STOP_TAKE_SNAPSHOT);
        release(h);
        let m = shm.rd64(0);
        let v = shm.rd64(SNAP_VALUES + 8 * hr);
        let want = if env.sscofpmf { 1u64 << hr } else { 0 };
        Verdict::new(
            st.ok() && sp.ok() && m == want && v < 1 << 32,
            text!("SUCCESS; bitmap {want:#x}; value wrapped (< 2^32)"),
            text!("start {st}; stop {sp}; bitmap {m:#x}; value {v:#x}"),
        )
    });
    s.check("pmu.snap.disable", "FID 7 with both addresses all-ones: \"the PMU snapshot shared memory is cleared and disabled\" (SUCCESS)", || {
        if !sup {
            return na();
        }
        errs(sbi::snapshot_set_shmem(ALL_ONES, ALL_ONES, 0), &[SUCCESS])
    });
    s.check("pmu.snap.disabled.stop", "after disabling, stop TAKE_SNAPSHOT answers NO_SHMEM (Table 13) and does not write the old page", || {
        if !sup {
            return na();
        }
        let Some(f) = f else { return nofw() };
        let _ = sbi::config_matching(f, 1, 0, FW_SET_TIMER, 0);
        shm.fill(0x5a);
        let _ = sbi::start(f, 1, 0, 0);
        let r = sbi::stop(f, 1, STOP_TAKE_SNAPSHOT);
        let _ = sbi::stop(f, 1, 0);
        let bad = shm.find_not(0..4096, 0x5a);
        Verdict::new(r.error == NO_SHMEM && bad.is_none(), text!("NO_SHMEM; page unchanged"), text!("{r}; first changed offset {bad:?}"))
    });
    s.check(
        "pmu.snap.disabled.start",
        "after disabling, start INIT_SNAPSHOT answers NO_SHMEM (Table 11)",
        || {
            if !sup {
                return na();
            }
            let Some(f) = f else { return nofw() };
            let r = sbi::start(f, 1, START_INIT_SNAPSHOT, 0);
            let _ = sbi::stop(f, 1, STOP_RESET);
            errs(r, &[NO_SHMEM])
        },
    );
    if let Some(f) = f {
        release(f);
    }
}

/// Entry layout (Table 18): word 0 event_idx, word 1 output, words 2-3
/// event_data.
fn put_entry(shm: Shm, i: usize, event: u32, data: u64) {
    shm.wr32(16 * i, event);
    shm.wr32(16 * i + 4, 0xffff_ffff);
    shm.wr64(16 * i + 8, data);
}

fn event_info(s: &mut Suite<'_>, p: &Pmu, env: &Env) {
    let shm = Shm::of(env.slot, Area::EventInfo);
    put_entry(shm, 0, HW_CPU_CYCLES as u32, 0);
    let first = sbi::event_get_info(shm.addr(), 0, 1, 0);
    let sup = first.ok();
    s.check("pmu.evinfo.available", "FID 8 (SBI 3.0) with one valid entry: SUCCESS, or NOT_SUPPORTED (Table 19: \"not available in the SBI implementation\")", || {
        errs(first, &[SUCCESS, NOT_SUPPORTED])
    });
    let absent = "event info absent: Table 19 allows NOT_SUPPORTED, then every call answers it";
    // (name, shmem_phys_lo, shmem_phys_hi, num_entries, flags, allowed, what)
    type Case<'a> = (&'a str, usize, usize, usize, usize, &'a [isize], &'a str);
    let cases: [Case<'_>; 8] = [
        (
            "flags1",
            shm.addr(),
            0,
            1,
            1,
            &[INVALID_PARAM],
            "Table 19 INVALID_PARAM: \"The flags parameter is not zero\"",
        ),
        (
            "align8",
            shm.addr() + 8,
            0,
            1,
            0,
            &[INVALID_PARAM],
            "Table 19 INVALID_PARAM: shmem_phys_lo not 16-byte aligned (+8)",
        ),
        (
            "num0",
            shm.addr(),
            0,
            0,
            0,
            &[SUCCESS, INVALID_PARAM],
            "num_entries 0 (a 0-byte area): the spec names no error; SUCCESS or INVALID_PARAM",
        ),
        (
            "fw_addr",
            FW_ADDR,
            0,
            1,
            0,
            &[INVALID_ADDRESS],
            "Table 19 INVALID_ADDRESS: 0x80000000, where the firmware lives",
        ),
        (
            "mmio",
            MMIO_ADDR,
            0,
            1,
            0,
            &[INVALID_ADDRESS],
            "Table 19 INVALID_ADDRESS: 0x10000000 (the UART) is not memory",
        ),
        (
            "hi1",
            shm.addr(),
            1,
            1,
            0,
            &[INVALID_ADDRESS],
            "Table 19 INVALID_ADDRESS: shmem_phys_hi 1 (above 2^64)",
        ),
        (
            "size_overflow",
            shm.addr(),
            0,
            usize::MAX / 16 + 2,
            0,
            &[INVALID_ADDRESS],
            "Table 19 INVALID_ADDRESS: 16 * num_entries overflows XLEN",
        ),
        (
            "past_ram",
            env.ram_end - 16,
            0,
            2,
            0,
            &[INVALID_ADDRESS],
            "Table 19 INVALID_ADDRESS: a 32-byte area whose second entry lies past the end of RAM",
        ),
    ];
    for (name, lo, hi, num, flags, want, what) in cases {
        let id = text!("pmu.evinfo.{name}");
        s.check(id.as_str(), what, || {
            put_entry(shm, 0, HW_CPU_CYCLES as u32, 0);
            let r = sbi::event_get_info(lo, hi, num, flags);
            if sup {
                errs(r, want)
            } else {
                let mut v = errs(r, &[NOT_SUPPORTED]);
                v.expected = text!("NOT_SUPPORTED ({absent})");
                v
            }
        });
    }
    for (name, bit) in [("reserved20", 20), ("reserved31", 31)] {
        let id = text!("pmu.evinfo.{name}");
        let what = text!("Table 19 INVALID_PARAM: \"any reserved bit in an event_idx word is set\" (Table 18 BIT[20:31]; bit {bit}), as the second of two entries");
        s.check(id.as_str(), what.as_str(), || {
            put_entry(shm, 0, HW_CPU_CYCLES as u32, 0);
            put_entry(shm, 1, (1u32 << bit) | HW_INSTRUCTIONS as u32, 0);
            let r = sbi::event_get_info(shm.addr(), 0, 2, 0);
            if sup {
                errs(r, &[INVALID_PARAM])
            } else {
                errs(r, &[NOT_SUPPORTED])
            }
        });
    }
    // One call with defined and undefined events; the output bit of each
    // defined event must agree with config_matching, undefined ones read 0.
    let entries: [(&str, usize, u64, bool); 8] = [
        ("cycles", HW_CPU_CYCLES, 0, true),
        ("instructions", HW_INSTRUCTIONS, 0, true),
        ("dtlb_read_miss", cache(3, 0, 1), 0, true),
        ("fw_set_timer", FW_SET_TIMER, 0, true),
        ("raw2", event(3, 0), 0x1, true),
        ("general11", event(0, 11), 0, false),
        ("type4", event(4, 0), 0, false),
        ("fw22", event(15, 22), 0, false),
    ];
    let mut matched = [false; 8];
    for (i, e) in entries.iter().enumerate() {
        matched[i] = e.3 && try_event(p, e.1, e.2).ok();
    }
    for (i, e) in entries.iter().enumerate() {
        put_entry(shm, i, e.1 as u32, e.2);
    }
    let all = if sup {
        sbi::event_get_info(shm.addr(), 0, entries.len(), 0)
    } else {
        first
    };
    s.check("pmu.evinfo.batch", "FID 8 with 8 entries (defined and undefined events, no reserved bits) answers SUCCESS: \"The output field is updated for each event\"", || {
        if !sup {
            return Verdict::na(absent);
        }
        errs(all, &[SUCCESS])
    });
    for (i, e) in entries.iter().enumerate() {
        let id = text!("pmu.evinfo.out.{}", e.0);
        let what = if e.3 {
            text!("Table 18 output BIT[0] = supported, BIT[1:31] zero (the entire word is updated); supported must agree with config_matching of the same event")
        } else {
            text!("Table 18 output for an event no table defines: BIT[0] = 0 (not supported), BIT[1:31] zero")
        };
        s.check(id.as_str(), what.as_str(), || {
            if !sup {
                return Verdict::na(absent);
            }
            let out = shm.rd32(16 * i + 4);
            Verdict::new(
                out == matched[i] as u32,
                text!("{:#x}", matched[i] as u32),
                text!("{out:#x}"),
            )
        });
    }
    s.check("pmu.evinfo.readonly", "Table 18: event_idx and event_data are RO for the SBI implementation: unchanged after the call", || {
        if !sup {
            return Verdict::na(absent);
        }
        let bad = entries.iter().enumerate().find(|(i, e)| shm.rd32(16 * i) != e.1 as u32 || shm.rd64(16 * i + 8) != e.2);
        Verdict::new(bad.is_none(), text!("unchanged"), text!("{}", bad.map_or("unchanged", |b| b.1 .0)))
    });
}

/// A registration the spec rejects: (check name, shmem_phys_lo,
/// shmem_phys_hi, flags, the error, what the check is).
type ShmemReject<'a> = (&'a str, usize, usize, usize, isize, &'a str);

/// The checks `{prefix}.{name}` of shared-memory registrations `set` must
/// reject: each answers its error where the function is offered (`sup`),
/// NOT_SUPPORTED where it is absent (`absent` says why).
fn shmem_rejects(
    s: &mut Suite<'_>,
    prefix: &str,
    cases: &[ShmemReject<'_>],
    sup: bool,
    absent: &str,
    set: fn(usize, usize, usize) -> Ret,
) {
    for &(name, lo, hi, flags, want, what) in cases {
        let id = text!("{prefix}.{name}");
        s.check(id.as_str(), what, || {
            let r = set(lo, hi, flags);
            if sup {
                errs(r, &[want])
            } else {
                let mut v = errs(r, &[NOT_SUPPORTED]);
                v.expected = text!("NOT_SUPPORTED ({absent})");
                v
            }
        });
    }
}

fn sta(s: &mut Suite<'_>, env: &Env) {
    let shm = Shm::of(env.slot, Area::Sta);
    let pr = sbi::probe_extension(sbi::eid::STA);
    let sup = pr.ok() && pr.value != 0;
    let absent = "STA extension absent (probe_extension 0): SBI extensions are optional, so every call answers NOT_SUPPORTED";
    let cases: [ShmemReject; 10] = [
        ("flags1", shm.addr(), 0, 1, INVALID_PARAM, "STA Table 2 INVALID_PARAM: \"The flags parameter is not zero\" (1)"),
        ("flags63", shm.addr(), 0, 1 << 63, INVALID_PARAM, "STA Table 2 INVALID_PARAM: flags bit 63"),
        ("align32", shm.addr() + 32, 0, 0, INVALID_PARAM, "STA Table 2 INVALID_PARAM: \"shmem_phys_lo is not 64-byte aligned\" (+32)"),
        ("align8", shm.addr() + 8, 0, 0, INVALID_PARAM, "STA Table 2 INVALID_PARAM: not 64-byte aligned (+8)"),
        ("lo_ones", ALL_ONES, 0, 0, INVALID_PARAM, "lo all-ones with hi 0 is not the disable form and not 64-byte aligned: INVALID_PARAM"),
        ("fw_addr", FW_ADDR, 0, 0, INVALID_ADDRESS, "STA Table 2 INVALID_ADDRESS: 0x80000000, where the firmware lives, is not supervisor-writable"),
        ("mmio", MMIO_ADDR, 0, 0, INVALID_ADDRESS, "STA Table 2 INVALID_ADDRESS: 0x10000000 (the UART) is not memory"),
        ("past_ram", env.ram_end, 0, 0, INVALID_ADDRESS, "STA Table 2 INVALID_ADDRESS: the end of RAM"),
        ("hi1", shm.addr(), 1, 0, INVALID_ADDRESS, "STA Table 2 INVALID_ADDRESS: shmem_phys_hi 1 (above 2^64)"),
        ("hi_ones", shm.addr(), ALL_ONES, 0, INVALID_ADDRESS, "STA Table 2 INVALID_ADDRESS: hi all-ones with a normal lo is not the disable form"),
    ];
    shmem_rejects(s, "sta", &cases, sup, absent, sbi::sta_set_shmem);
    let na = || Verdict::na("STA extension absent (probe_extension 0)");
    shm.fill(0xa5);
    let set = if sup {
        sbi::sta_set_shmem(shm.addr(), 0, 0)
    } else {
        Ret {
            error: NOT_SUPPORTED,
            value: 0,
        }
    };
    s.check(
        "sta.set",
        "STA FID 0 on a 64-byte aligned area: SUCCESS and \"sbiret.value is set to zero\"",
        || {
            if !sup {
                return na();
            }
            Verdict::new(
                set.ok() && set.value == 0,
                text!("SUCCESS value=0x0"),
                text!("{set}"),
            )
        },
    );
    s.check("sta.zeroed", "\"MUST zero the first 64 bytes of the shared memory before returning\": flags (4..8), preempted (16) and pad (17..64) are zero, sequence even (steal may already be updated)", || {
        if !sup {
            return na();
        }
        let seq = shm.rd32(0);
        let bad = shm.find_not(4..8, 0).or_else(|| shm.find_not(16..64, 0));
        Verdict::new(
            set.ok() && seq.is_multiple_of(2) && bad.is_none(),
            text!("zeros, even sequence"),
            text!("sequence {seq}, steal {}, first non-zero byte {bad:?}", shm.rd64(8)),
        )
    });
    s.check("sta.beyond64", "the STA structure is 64 bytes (Table 1, pad to a 64 byte boundary): bytes 64.. keep their contents", || {
        if !sup {
            return na();
        }
        let bad = shm.find_not(64..4096, 0xa5);
        Verdict::new(bad.is_none(), text!("unchanged"), text!("first changed offset {bad:?}"))
    });
    s.check("sta.disable", "shmem all-ones: \"the SBI implementation will stop reporting steal-time information\" (SUCCESS, value 0)", || {
        if !sup {
            return na();
        }
        let r = sbi::sta_set_shmem(ALL_ONES, ALL_ONES, 0);
        Verdict::new(r.ok() && r.value == 0, text!("SUCCESS value=0x0"), text!("{r}"))
    });
    s.check(
        "sta.disabled_quiet",
        "after disabling, the old area is no longer written (steal-time reporting stopped)",
        || {
            if !sup {
                return na();
            }
            shm.fill(0xa5);
            timers(3);
            spin(10_000);
            let bad = shm.find_not(0..4096, 0xa5);
            Verdict::new(
                bad.is_none(),
                text!("unchanged"),
                text!("first changed offset {bad:?}"),
            )
        },
    );
}
