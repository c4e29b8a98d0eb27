//! Fuzz the trace decoder: Nexus framing, ITC write stream, header and
//! record state machines. Arbitrary bytes must never panic, every error
//! must point inside the input, and decoded records must be well formed.
#![no_main]

use hpmtrace::decode::{decode_stream, DecodeConfig, Output};
use hpmtrace::nexus::NexusConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the configuration, the rest is the trace.
    let Some((&cfg_byte, trace)) = data.split_first() else {
        return;
    };
    let cfg = DecodeConfig {
        channel: 6,
        nexus: NexusConfig {
            src_bits: cfg_byte & 7,
            timestamp_bits: 8 + (cfg_byte >> 3) % 56,
        },
    };
    let len = trace.len() as u64;
    let mut records = 0u64;
    let mut headers = 0u64;
    let mut errors = 0u64;
    let stats = decode_stream(
        trace,
        cfg,
        &mut |o| match o {
            Output::Header(h) => {
                headers += 1;
                assert!(h.offset < len);
            }
            Output::Record(r) => {
                records += 1;
                assert!(r.offset < len);
                assert!(r.counters.len() <= 32);
                assert_eq!(r.addr2.is_some(), r.kind.address_count() == 2);
                for w in r.counters.windows(2) {
                    assert!(w[0].index < w[1].index, "counters in mask order");
                }
            }
            Output::Error(e) => {
                errors += 1;
                assert!(e.offset <= len, "error offset {} past the input ({len})", e.offset);
                let _ = e.to_string();
            }
        },
        &mut |off| assert!(off <= len),
    );
    assert_eq!(stats.records, records);
    assert_eq!(stats.headers, headers);
    assert_eq!(stats.errors, errors);
});
