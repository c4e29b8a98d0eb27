//! Human names for the counters a header describes.

use hpmtrace::format::{CounterDesc, Event, Header};

/// perf-style name of a counter's event (`cycles`, `L1D-read-miss`, ...).
pub fn event_name(desc: &CounterDesc) -> String {
    match desc.event {
        Event::General { code } => match code {
            0 => "no-event".into(),
            1 => "cycles".into(),
            2 => "instructions".into(),
            3 => "cache-references".into(),
            4 => "cache-misses".into(),
            5 => "branches".into(),
            6 => "branch-misses".into(),
            7 => "bus-cycles".into(),
            8 => "stalled-cycles-frontend".into(),
            9 => "stalled-cycles-backend".into(),
            10 => "ref-cycles".into(),
            0x80 => "timestamp".into(),
            c => format!("hw:0x{c:x}"),
        },
        Event::Cache {
            cache_id,
            op_id,
            result_id,
        } => {
            let cache = match cache_id {
                0 => "L1D".to_string(),
                1 => "L1I".to_string(),
                2 => "LL".to_string(),
                3 => "dTLB".to_string(),
                4 => "iTLB".to_string(),
                5 => "branch".to_string(),
                6 => "node".to_string(),
                c => format!("cache{c}"),
            };
            let op = match op_id {
                0 => "read",
                1 => "write",
                2 => "prefetch",
                _ => "op?",
            };
            let res = if result_id == 0 { "access" } else { "miss" };
            format!("{cache}-{op}-{res}")
        }
        Event::Raw { event_data } => format!("raw:0x{event_data:x}"),
        Event::LinuxSoftware { code } => match code {
            0 => "cpu-clock".into(),
            1 => "task-clock".into(),
            2 => "page-faults".into(),
            3 => "context-switches".into(),
            4 => "cpu-migrations".into(),
            5 => "minor-faults".into(),
            6 => "major-faults".into(),
            7 => "alignment-faults".into(),
            8 => "emulation-faults".into(),
            c => format!("sw:{c}"),
        },
    }
}

/// Name of counter slot `index` of `header`, `hpm<index>` if absent.
pub fn counter_name(header: &Header, index: u8) -> String {
    match header.counters.get(index as usize).copied().flatten() {
        Some(d) => event_name(&d),
        None => format!("hpm{index}"),
    }
}
