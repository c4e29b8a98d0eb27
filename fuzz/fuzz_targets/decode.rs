//! Fuzz the trace decoder: Nexus framing, ITC write stream, header and
//! record state machines. Arbitrary bytes must never panic, every error
//! must point inside the input, decoded records must be well formed, and
//! the outcome must not depend on how the input is split into reads.
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
    // Read in small pieces, messages straddle the reader's refills (its
    // byte-wise path); the outcome must not change.
    let chunk = 1 + (cfg_byte as usize % 5);
    let pieces = Chunked { bytes: trace, chunk };
    assert_eq!(decode_stream(pieces, cfg, &mut |_| {}, &mut |_| {}), stats);
});

struct Chunked<'a> {
    bytes: &'a [u8],
    chunk: usize,
}

impl std::io::Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.chunk.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}
