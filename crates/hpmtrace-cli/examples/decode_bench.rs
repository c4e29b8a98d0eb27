//! Decoder throughput without any output: `decode_bench TRACE.rtd`.
use hpmtrace::decode::{decode_stream, DecodeConfig, Output};
use std::time::Instant;

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: decode_bench TRACE.rtd");
    let len = std::fs::metadata(&path).expect("trace").len();
    let f = std::fs::File::open(&path).expect("trace");
    let t = Instant::now();
    let mut counters = 0u64;
    let stats = decode_stream(
        f,
        DecodeConfig::default(),
        &mut |o| {
            if let Output::Record(r) = o {
                counters += r.counters.len() as u64;
            }
        },
        &mut |_| {},
    );
    let s = t.elapsed().as_secs_f64();
    println!(
        "{len} bytes, {} messages, {} records, {counters} counter values in {s:.2} s: {:.1} MB/s",
        stats.messages,
        stats.records,
        len as f64 / s / 1e6
    );
}
