//! Shared by the collector tests: decoding a session's trace.
#![allow(dead_code)] // each test binary uses a different subset

use hpmtrace::decode::{decode_stream, DecodeConfig, HeaderInfo, Output, Record};
use hpmtrace::nexus::NexusConfig;
use hpmtrace::rtd::RtdConfig;

/// One decoded output, in stream order.
pub enum Item {
    Header(Box<HeaderInfo>),
    Record(Record),
}

/// Decode a trace written with `rtd`; asserts it decodes without an error.
pub fn decode_items(bytes: &[u8], rtd: RtdConfig) -> Vec<Item> {
    let cfg = DecodeConfig {
        channel: rtd.channel,
        nexus: NexusConfig {
            src_bits: rtd.src_bits,
            timestamp_bits: rtd.timestamp_bits,
        },
    };
    let mut items = Vec::new();
    let mut errors = Vec::new();
    decode_stream(
        bytes,
        cfg,
        &mut |o| match o {
            Output::Header(h) => items.push(Item::Header(Box::new(*h))),
            Output::Record(r) => items.push(Item::Record(r.clone())),
            Output::Error(e) => errors.push(e.to_string()),
        },
        &mut |_| {},
    );
    assert!(errors.is_empty(), "{errors:?}");
    items
}
