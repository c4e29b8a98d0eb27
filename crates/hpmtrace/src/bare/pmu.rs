//! Counters for a header, from the SBI PMU: one config_matching per event,
//! the counter's CSR from counter_get_info.

use super::console::warn;
use crate::counters::{assign_slots, build_header};
use crate::format::{CountType, CounterInfo, Event, EventType, Header, MAX_COUNTERS};
use rvpmu::supervisor::{sbi, CounterCfgFlags, CounterStopFlags};

/// Width of the trace clock as the header declares it (Nexus timestamps
/// are 40 bits by default).
pub const TIMESTAMP_BITS: u8 = crate::rtd::DEFAULT_TIMESTAMP_BITS;

/// What init configured on this hart.
pub struct Counters {
    /// The header: the events that are counted, in the seed's slots.
    pub header: Header,
    /// Counter CSR (0..=31 above 0xC00) of each counter but the timestamp,
    /// in record order: what a sample stores after its time.
    pub csrs: [u8; MAX_COUNTERS],
    /// How many of `csrs` are used.
    pub values: usize,
    /// Record position of the timestamp, if listed.
    pub ts_pos: Option<usize>,
    /// SBI counter indices configured here (released on re-init).
    pub sbi_mask: u64,
    /// Per entry of the caller's list: (slot, counter info), `None` when
    /// the event was left out.
    pub placed: [Option<(u8, CounterInfo)>; MAX_COUNTERS],
}

/// SBI `event_idx` and `event_data` of `e` (type << 16 | code; raw
/// events carry their selector in event_data).
fn sbi_event(e: Event) -> Option<(usize, u64)> {
    match e {
        Event::Raw { event_data } => Some(((EventType::HwRaw as usize) << 16, event_data)),
        Event::LinuxSoftware { .. } => None,
        _ => Some(((e.event_type() as usize) << 16 | e.code()? as usize, 0)),
    }
}

/// Stop and release the SBI counters in `mask` (a previous init's).
pub fn release(mask: u64) {
    if mask != 0 {
        let _ = sbi().pmu_counter_stop(0, mask as usize, CounterStopFlags::RESET);
    }
}

/// Configure a counter for every countable event of `events` (running,
/// cleared) and build the header. `what` names the
/// init call in warnings.
pub fn configure(what: &str, count_type: CountType, events: &[Option<Event>]) -> Counters {
    let mut s = sbi();
    // Counters that exist (an index with no counter_info, such as `time`
    // on many platforms, makes config_matching refuse the whole mask).
    let all = (0..s.pmu_num_counters().min(64))
        .filter(|&i| s.pmu_counter_get_info(i).error == 0)
        .fold(0u64, |m, i| m | 1 << i);
    let mut sbi_mask = 0u64;
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
            let Some((idx, data)) = sbi_event(e) else {
                warn(format_args!(
                    "{what}: perfEvent {i} ({e:?}) is a Linux software event, which bare metal has not: left out"
                ));
                continue;
            };
            // Only counters not configured by this init, so two events
            // never share one.
            let free = all & !sbi_mask;
            // No mode filter: `cycle` and `instret` cannot be filtered on
            // every platform (QEMU refuses M-inhibit on them), and the
            // hooks make no SBI call, so M-mode only counts where the
            // program itself calls SBI (the timer's set_timer).
            let flags = CounterCfgFlags::CLEAR_VALUE | CounterCfgFlags::AUTO_START;
            let r = s.pmu_counter_config_matching(0, free as usize, flags, idx, data);
            if r.error != 0 {
                warn(format_args!(
                    "{what}: perfEvent {i} ({e:?}, SBI event {idx:#x}) cannot be counted here (SBI error {}): left out of the header",
                    r.error as isize
                ));
                continue;
            }
            let ctr = r.value;
            sbi_mask |= 1 << ctr;
            match rvpmu::counter::CounterInfo::decode(s.pmu_counter_get_info(ctr).value as u64) {
                rvpmu::counter::CounterInfo::Hardware { csr, width }
                    if (0xc00..=0xc1f).contains(&csr) =>
                {
                    CounterInfo { csr, width }
                }
                _ => {
                    warn(format_args!(
                        "{what}: perfEvent {i} ({e:?}) got SBI counter {ctr}, which has no counter CSR: left out"
                    ));
                    let _ = s.pmu_counter_stop(ctr, 1, CounterStopFlags::RESET);
                    sbi_mask &= !(1 << ctr);
                    continue;
                }
            }
        };
        kept[n] = e;
        infos[n] = info;
        from[n] = i;
        n += 1;
    }
    // Slots of the kept events in the seed's order (cycles 0, timestamp 1,
    // instructions 2, the rest from 3); a fixed event listed twice is
    // dropped from the header instead of failing the whole init.
    let mut placed = [None; MAX_COUNTERS];
    let mut chosen = [(
        0u8,
        Event::General { code: 0 },
        CounterInfo { csr: 0, width: 0 },
    ); MAX_COUNTERS];
    let mut m = 0;
    match assign_slots(&kept[..n]) {
        Ok(slots) => {
            for k in 0..n {
                chosen[m] = (slots[k], kept[k], infos[k]);
                placed[from[k]] = Some((slots[k], infos[k]));
                m += 1;
            }
        }
        Err(err) => warn(format_args!("{what}: {err:?}: no counters recorded")),
    }
    let header = build_header(count_type, &chosen[..m]);
    let ts_pos = crate::counters::timestamp_position(&header);
    let mut csrs = [0u8; MAX_COUNTERS];
    let mut values = 0;
    for (_, d) in header.iter().filter(|(_, d)| !d.event.is_timestamp()) {
        // configure() keeps only counters in 0xC00..=0xC1F.
        csrs[values] = (d.info.csr - 0xc00) as u8;
        values += 1;
    }
    Counters {
        csrs,
        values,
        header,
        ts_pos,
        sbi_mask,
        placed,
    }
}
