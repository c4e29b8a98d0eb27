//! Writes a large synthetic function enter/exit trace for benchmarks:
//! `cargo run --release -p hpmtrace-cli --example gen_trace -- OUT.rtd MB [ELF]`
//! (with an ELF, the call tree uses its first function symbols so the
//! trace symbolizes; otherwise made-up addresses).

use hpmtrace::encoder::Encoder;
use hpmtrace::format::{CountType, CounterDesc, CounterInfo, Event, Header, RecordType};
use hpmtrace::nexus::write::{NexusWriter, WriterConfig};
use hpmtrace::sink::{ByteSink, Stopped};
use object::{Object, ObjectSymbol, SymbolKind};
use std::io::{BufWriter, Write};

struct FileSink(BufWriter<std::fs::File>, u64);

impl ByteSink for FileSink {
    fn put_bytes(&mut self, bytes: &[u8]) -> Result<(), Stopped> {
        self.1 += bytes.len() as u64;
        self.0.write_all(bytes).map_err(|_| Stopped)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: gen_trace OUT.rtd MEGABYTES [ELF]");
        std::process::exit(2);
    }
    let limit: u64 = args[2].parse::<u64>().expect("MEGABYTES") << 20;
    let funcs: Vec<u64> = match args.get(3) {
        Some(elf) => {
            let data = std::fs::read(elf).expect("read ELF");
            let f = object::File::parse(&*data).expect("parse ELF");
            let mut v: Vec<u64> = f
                .symbols()
                .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
                .map(|s| s.address())
                .collect();
            v.sort();
            v
        }
        None => (0..16).map(|i| 0x8000_0000 + 0x100 * i).collect(),
    };
    let mut h = Header::new(CountType::Delta);
    for (i, code) in [(0usize, 1u16), (2, 2), (3, 4), (4, 5), (5, 6)] {
        h.counters[i] = Some(CounterDesc {
            event: Event::General { code },
            info: CounterInfo {
                csr: 0xc00 + i as u16,
                width: 64,
            },
        });
    }
    let file = std::fs::File::create(&args[1]).expect("create output");
    let mut w = NexusWriter::new(
        WriterConfig::default(),
        0,
        FileSink(BufWriter::with_capacity(1 << 20, file), 0),
    );
    let mut enc = Encoder::new(h);
    let mut r = [0u64; 5];
    let mut ts = 1000u64;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    enc.trace_on(&mut w, &r, ts).unwrap();
    let mut stack: Vec<u64> = vec![funcs[0]];
    while w.inner().1 < limit {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let step = x % 1000;
        r[0] += 50 + step;
        r[1] += 30 + step / 2;
        r[2] += step % 7;
        r[3] += 5 + step % 11;
        r[4] += step % 3;
        ts += 10 + step / 10;
        let top = *stack.last().unwrap();
        if stack.len() < 12 && (stack.len() == 1 || x.is_multiple_of(2)) {
            let f = funcs[(x >> 20) as usize % funcs.len()];
            enc.record(&mut w, RecordType::FuncEnter, [f, top], &r, ts)
                .unwrap();
            stack.push(f);
        } else {
            stack.pop();
            let to = *stack.last().unwrap();
            enc.record(&mut w, RecordType::FuncExit, [top, to], &r, ts)
                .unwrap();
        }
    }
    let bytes = w.inner().1;
    w.into_inner().0.flush().unwrap();
    eprintln!("wrote {bytes} bytes, {} records", enc.stats().records);
}
