//! Counters for a header: one counter per event from the platform (the
//! SBI PMU or the M-mode CSRs), the header in SiFive's slots.

use super::console::warn;
use super::platform::{Platform, Refusal, This};
use crate::counters::{assign_slots, build_header};
use crate::format::{CountType, CounterInfo, Event, Header, MAX_COUNTERS};

/// Width of the trace clock as the header declares it (Nexus timestamps
/// are 40 bits by default).
pub const TIMESTAMP_BITS: u8 = crate::nexus::write::DEFAULT_TIMESTAMP_BITS;

/// What init configured on this hart.
pub struct Counters {
    /// The header: the events that are counted, in SiFive's slots.
    pub header: Header,
    /// Counter CSR of each counter but the timestamp, in record order
    /// (what a sample stores after its time), as
    /// [`crate::counters::read_user_counters`] takes them: 1 + the CSR's
    /// offset from 0xC00.
    pub index: [u32; MAX_COUNTERS],
    /// How many of `index` are used.
    pub values: usize,
    /// Record position of the timestamp, if listed.
    pub ts_pos: Option<usize>,
    /// Counter indices configured here (released on re-init).
    pub mask: u64,
    /// Per entry of the caller's list: (slot, counter info), `None` when
    /// the event was left out.
    pub placed: [Option<(u8, CounterInfo)>; MAX_COUNTERS],
}

/// Configure a counter for every countable event of `events` (running,
/// cleared) and build the header. `what` names the init call in warnings.
pub fn configure(what: &str, count_type: CountType, events: &[Option<Event>]) -> Counters {
    let all = This::counters();
    let mut mask = 0u64;
    let mut kept = [Event::General { code: 0 }; MAX_COUNTERS];
    let mut infos = [CounterInfo { csr: 0, width: 0 }; MAX_COUNTERS];
    let mut from = [0usize; MAX_COUNTERS];
    let mut n = 0;
    for (i, e) in events.iter().enumerate() {
        let Some(e) = *e else {
            warn(format_args!(
                "{what}: perfEvent {i} has an unknown type or code: left out"
            ));
            continue;
        };
        let info = if e.is_timestamp() {
            CounterInfo {
                csr: 0,
                width: TIMESTAMP_BITS,
            }
        } else {
            // Only counters not configured by this init, so two events
            // never share one.
            match This::configure(e, all & !mask) {
                Ok((ctr, info)) => {
                    mask |= 1 << ctr;
                    info
                }
                Err(why) => {
                    match why {
                        Refusal::Sbi(err) => warn(format_args!(
                            "{what}: perfEvent {i} ({e:?}) cannot be counted here (SBI error {err}): left out of the header"
                        )),
                        Refusal::Unsupported(reason) => warn(format_args!(
                            "{what}: perfEvent {i} ({e:?}) cannot be counted here ({reason}): left out of the header"
                        )),
                    }
                    continue;
                }
            }
        };
        kept[n] = e;
        infos[n] = info;
        from[n] = i;
        n += 1;
    }
    // Slots of the kept events in SiFive's order (cycles 0, timestamp 1,
    // instructions 2, the rest from 3); a fixed event listed twice is
    // dropped from the header instead of failing the whole init.
    let mut placed = [None; MAX_COUNTERS];
    let mut chosen = [(0, kept[0], infos[0]); MAX_COUNTERS];
    let m = match assign_slots(&kept[..n]) {
        Ok(slots) => {
            for k in 0..n {
                chosen[k] = (slots[k], kept[k], infos[k]);
                placed[from[k]] = Some((slots[k], infos[k]));
            }
            n
        }
        Err(err) => {
            warn(format_args!("{what}: {err:?}: no counters recorded"));
            0
        }
    };
    let header = build_header(count_type, &chosen[..m]);
    let ts_pos = crate::counters::timestamp_position(&header);
    let mut index = [0u32; MAX_COUNTERS];
    let mut values = 0;
    for (_, d) in header.iter().filter(|(_, d)| !d.event.is_timestamp()) {
        // configure() keeps only counters in 0xC00..=0xC1F.
        index[values] = 1 + (d.info.csr - 0xc00) as u32;
        values += 1;
    }
    Counters {
        index,
        values,
        header,
        ts_pos,
        mask,
        placed,
    }
}
