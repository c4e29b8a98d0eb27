//! Shared by the tests: decoding a session's trace, the reference
//! encoder of the Nexus format and deterministic random numbers.
#![allow(dead_code)] // each test binary uses a different subset

pub mod reference_encoder;
pub mod rng;

use hpmtrace::decode::{decode_stream, DecodeConfig, HeaderInfo, Output, Record};
use hpmtrace::nexus::write::WriterConfig;

/// One decoded output, in stream order.
pub enum Item {
    Header(Box<HeaderInfo>),
    Record(Record),
}

/// Decode a trace written with `cfg`; asserts it decodes without an error.
pub fn decode_items(bytes: &[u8], cfg: WriterConfig) -> Vec<Item> {
    let cfg = DecodeConfig::from(cfg);
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
