//! Every reserved bit of every flags word, each set alone: the spec
//! reserves bits 8..XLEN-1 of config_flags (Table 8), 2..XLEN-1 of
//! start_flags (Table 10) and stop_flags (Table 12), and the whole flags
//! word of snapshot_set_shmem (Table 17), event_get_info (Table 19) and
//! STA set_shmem (STA Table 2), and lists INVALID_PARAM for "the flags
//! parameter" with a reserved bit set or "not zero". The sampled bits the
//! other areas check (8, 31, 32, 63) name a check each; here one check per
//! word covers all of them, and its line lists the bits a firmware
//! accepted. A call that is accepted is undone (counter released or
//! stopped, area unregistered) before the next bit.

use crate::mem::{Area, Shm};
use crate::report::{Suite, Verdict};
use crate::sbi::{self, err::*, pmu::*, Ret};
use crate::text;

/// XLEN: the flags words are `unsigned long`.
const XLEN: usize = usize::BITS as usize;

/// The shared-memory pair that unregisters an area (`-1`, `-1`).
const DISABLE: usize = usize::MAX;

/// The verdict of `call(bit)` for every bit of `bits`: INVALID_PARAM each
/// time, else the bits answered otherwise (as ranges) and the first other
/// answer.
fn every_bit(bits: core::ops::Range<usize>, mut call: impl FnMut(usize) -> Ret) -> Verdict {
    let n = bits.len();
    let mut other: Option<(usize, Ret)> = None;
    let mut list = crate::console::Field::new();
    let mut run: Option<(usize, usize)> = None;
    let flush = |list: &mut crate::console::Field, run: (usize, usize)| {
        let sep = if list.as_str().is_empty() { "" } else { "," };
        let _ = if run.0 == run.1 {
            core::fmt::Write::write_fmt(list, format_args!("{sep}{}", run.0))
        } else {
            core::fmt::Write::write_fmt(list, format_args!("{sep}{}-{}", run.0, run.1))
        };
    };
    for bit in bits {
        let r = call(bit);
        if r.error == INVALID_PARAM {
            continue;
        }
        other.get_or_insert((bit, r));
        run = match run {
            Some((a, b)) if b + 1 == bit => Some((a, bit)),
            Some(done) => {
                flush(&mut list, done);
                Some((bit, bit))
            }
            None => Some((bit, bit)),
        };
    }
    if let Some(done) = run {
        flush(&mut list, done);
    }
    match other {
        None => Verdict::new(
            true,
            text!("INVALID_PARAM for each of the {n} bits"),
            text!("INVALID_PARAM for each of the {n} bits"),
        ),
        Some((bit, r)) => Verdict::new(
            false,
            text!("INVALID_PARAM for each of the {n} bits"),
            text!("bits {} answered otherwise (bit {bit}: {r})", list.as_str()),
        ),
    }
}

/// The checks, with the free hardware counters `set` (cycle and instret
/// left out), the firmware counters `fw_set` and the hart's memory slot.
pub fn run(s: &mut Suite<'_>, set: usize, fw_set: usize, slot: usize) {
    s.check("pmu.cfg.flag.each_reserved", "Table 9 INVALID_PARAM: \"the given flag parameter has a reserved bit set\", each of Table 8's RESERVED bits 8:(XLEN-1) alone, cycles on the free hardware counters", || {
        every_bit(8..XLEN, |bit| {
            let r = sbi::config_matching(0, set, 1 << bit, HW_CPU_CYCLES, 0);
            if r.ok() && r.value != 0 && r.value != 2 {
                let _ = sbi::stop(r.value, 1, STOP_RESET);
            }
            r
        })
    });
    let fw = sbi::config_matching(0, fw_set, CFG_CLEAR_VALUE, FW_SET_TIMER, 0);
    let na = || Verdict::na("no firmware counter counts SET_TIMER; firmware counters are optional");
    s.check("pmu.start.flag.each_reserved", "Table 11 INVALID_PARAM: start_flags with a reserved bit, each of Table 10's RESERVED bits 2:(XLEN-1) alone, on a stopped firmware counter", || {
        if !fw.ok() {
            return na();
        }
        every_bit(2..XLEN, |bit| {
            let r = sbi::start(fw.value, 1, 1 << bit, 0);
            if r.ok() {
                let _ = sbi::stop(fw.value, 1, 0);
            }
            r
        })
    });
    s.check("pmu.stop.flag.each_reserved", "Table 13 INVALID_PARAM: stop_flags with a reserved bit, each of Table 12's RESERVED bits 2:(XLEN-1) alone, on a running firmware counter", || {
        if !fw.ok() {
            return na();
        }
        let _ = sbi::start(fw.value, 1, 0, 0);
        let v = every_bit(2..XLEN, |bit| {
            let r = sbi::stop(fw.value, 1, 1 << bit);
            if r.ok() {
                let _ = sbi::start(fw.value, 1, 0, 0);
            }
            r
        });
        let _ = sbi::stop(fw.value, 1, 0);
        v
    });
    if fw.ok() {
        let _ = sbi::stop(fw.value, 1, STOP_RESET);
    }
    let snap = Shm::of(slot, Area::Snapshot);
    s.check("pmu.snap.flag.each_reserved", "Table 17 INVALID_PARAM: \"The flags parameter is not zero\", each bit of flags alone, a page-aligned page", || {
        let plain = sbi::snapshot_set_shmem(snap.addr(), 0, 0);
        if plain.error == NOT_SUPPORTED {
            return Verdict::na("PMU snapshot absent: FID 7 \"is an optional function\"");
        }
        let _ = sbi::snapshot_set_shmem(DISABLE, DISABLE, 0);
        every_bit(0..XLEN, |bit| {
            let r = sbi::snapshot_set_shmem(snap.addr(), 0, 1 << bit);
            if r.ok() {
                let _ = sbi::snapshot_set_shmem(DISABLE, DISABLE, 0);
            }
            r
        })
    });
    let info = Shm::of(slot, Area::EventInfo);
    s.check("pmu.evinfo.flag.each_reserved", "Table 19 INVALID_PARAM: \"The flags parameter is not zero\", each bit of flags alone, one valid entry", || {
        let entry = |shm: Shm| {
            shm.wr32(0, HW_CPU_CYCLES as u32);
            shm.wr32(4, 0);
            shm.wr64(8, 0);
        };
        entry(info);
        let plain = sbi::event_get_info(info.addr(), 0, 1, 0);
        if plain.error == NOT_SUPPORTED {
            return Verdict::na("event info absent: Table 19 allows NOT_SUPPORTED (\"not available in the SBI implementation\")");
        }
        every_bit(0..XLEN, |bit| {
            entry(info);
            sbi::event_get_info(info.addr(), 0, 1, 1 << bit)
        })
    });
    let sta = Shm::of(slot, Area::Sta);
    s.check("sta.flags.each_reserved", "STA Table 2 INVALID_PARAM: \"The flags parameter is not zero\", each bit of flags alone, a 64-byte aligned area", || {
        let pr = sbi::probe_extension(sbi::eid::STA);
        if !(pr.ok() && pr.value != 0) {
            return Verdict::na("STA extension absent (probe_extension 0); SBI extensions are optional");
        }
        every_bit(0..XLEN, |bit| {
            let r = sbi::sta_set_shmem(sta.addr(), 0, 1 << bit);
            if r.ok() {
                let _ = sbi::sta_set_shmem(DISABLE, DISABLE, 0);
            }
            r
        })
    });
}
