//! Reading a trace file: decoding, progress, error reporting.

use anyhow::{bail, Context, Result};
use hpmtrace::decode::{
    decode_stream, DecodeConfig, DecodeError, HeaderInfo, Output, Record, Stats,
};
use hpmtrace::nexus::NexusConfig;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fs::File;
use std::io::Read;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

/// Options shared by every command that reads a trace.
#[derive(clap::Args, Debug, Clone)]
pub struct InputArgs {
    /// The trace: raw trace-sink bytes (Nexus messages), e.g. trace.rtd.
    pub trace: PathBuf,
    /// ELF file of the traced program, for function names and source lines.
    #[arg(long, short = 'e')]
    pub elf: Option<PathBuf>,
    /// ITC channel carrying the performance data.
    #[arg(long, default_value_t = hpmtrace::format::DEFAULT_CHANNEL, value_parser = clap::value_parser!(u8).range(0..32))]
    pub channel: u8,
    /// Width of the Nexus SRC field (0 for single-core traces; the number of
    /// bits the funnel uses to number cores otherwise).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=8))]
    pub src_bits: u8,
    /// Width of the trace encoder's timestamp counter in bits.
    #[arg(long, default_value_t = hpmtrace::nexus::DEFAULT_TIMESTAMP_BITS, value_parser = clap::value_parser!(u8).range(1..=63))]
    pub ts_bits: u8,
    /// Do not show a progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Print at most this many decoding errors (all are counted).
    #[arg(long, default_value_t = 20)]
    pub max_errors: usize,
    /// Load bias of a position-independent ELF (run-time address minus
    /// link address, hex): the trace does not record it. Default: inferred
    /// from the trace's function-entry records.
    #[arg(long, value_parser = parse_hex)]
    pub load_bias: Option<u64>,
    /// Decode and write on one thread (default: the Nexus decoder runs on
    /// a thread of its own, ahead of symbolization and output).
    #[arg(long)]
    pub single_thread: bool,
}

fn parse_hex(s: &str) -> Result<u64, String> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    // Underscores allowed, as in the example the error gives.
    u64::from_str_radix(&digits.replace('_', ""), 16)
        .map_err(|e| format!("expected a hex address such as 0x5555_5555_4000: {e}"))
}

/// Addresses for [`crate::symbols::Symbolizer::infer_bias`] from the
/// first `limit` bytes of the trace, at most `max` of each kind, distinct:
/// function-entry addresses; (entry address, call site) of entries;
/// (caller's entry address, call site) of nested entries; the other
/// addresses (manual and sampled PCs). Decoding errors
/// are left to the real pass to report.
pub struct Addresses {
    /// Entry addresses (`this_fn`).
    pub entries: Vec<u64>,
    /// (`this_fn`, `call_site`) of entries.
    pub sites: Vec<(u64, u64)>,
    /// (caller's `this_fn`, `call_site`) of entries inside another entry.
    pub calls: Vec<(u64, u64)>,
    /// Addresses of records other than function entries and exits.
    pub other: Vec<u64>,
}

/// See [`Addresses`].
pub fn sample_addresses(args: &InputArgs, limit: u64, max: usize) -> Result<Addresses> {
    use hpmtrace::format::RecordType;
    use std::collections::{BTreeSet, HashMap};
    use std::io::Read;
    let file = open(args)?;
    let (mut entries, mut sites, mut calls, mut other) = (
        BTreeSet::new(),
        BTreeSet::new(),
        BTreeSet::new(),
        BTreeSet::new(),
    );
    let mut stacks: HashMap<u16, Vec<u64>> = HashMap::new();
    decode_stream(
        file.take(limit),
        decode_config(args),
        &mut |o| {
            let Output::Record(r) = o else { return };
            let stack = stacks.entry(r.src).or_default();
            match r.kind {
                RecordType::FuncEnter => {
                    if entries.len() < max {
                        entries.insert(r.addr);
                    }
                    if let (Some(site), true) = (r.addr2, sites.len() < max) {
                        sites.insert((r.addr, site));
                    }
                    if let (Some(&caller), Some(site)) = (stack.last(), r.addr2) {
                        if calls.len() < max {
                            calls.insert((caller, site));
                        }
                    }
                    stack.push(r.addr);
                }
                RecordType::FuncExit => {
                    stack.pop();
                }
                _ => {
                    if other.len() < max {
                        other.insert(r.addr);
                    }
                }
            }
        },
        &mut |_| {},
    );
    Ok(Addresses {
        entries: entries.into_iter().collect(),
        sites: sites.into_iter().collect(),
        calls: calls.into_iter().collect(),
        other: other.into_iter().collect(),
    })
}

fn open(args: &InputArgs) -> Result<File> {
    File::open(&args.trace).with_context(|| {
        format!(
            "cannot open trace {} (give the .rtd file the trace sink was saved to)",
            args.trace.display()
        )
    })
}

fn decode_config(args: &InputArgs) -> DecodeConfig {
    DecodeConfig {
        channel: args.channel,
        nexus: NexusConfig {
            src_bits: args.src_bits,
            timestamp_bits: args.ts_bits,
        },
    }
}

/// Files from this size on get a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 16 << 20;

/// Decodes the trace named in `args`, passing headers and records to
/// `sink` until it breaks; decoding errors are printed to stderr (up to
/// `max_errors`), then their count. A trace without any performance
/// header (nothing decoded) is an error, one with damage is not. Unless `--single-thread`, decoding runs on a second
/// thread a few batches ahead of `sink` (memory stays bounded).
pub fn run(
    args: &InputArgs,
    sink: &mut dyn FnMut(&Output<'_>) -> ControlFlow<()>,
) -> Result<Stats> {
    let file = open(args)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let bar = if args.quiet || len < PROGRESS_MIN_BYTES {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template(
                "{spinner} decoding [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        b
    };
    let cfg = decode_config(args);
    let mut shown = 0usize;
    let mut each = |o: &Output<'_>| {
        if let Output::Error(e) = o {
            if shown < args.max_errors {
                bar.suspend(|| eprintln!("hpmtrace: warning: {}: {e}", args.trace.display()));
            }
            shown += 1;
        }
        sink(o)
    };
    let stop = AtomicBool::new(false);
    let input = StopReader {
        inner: file,
        stop: &stop,
    };
    let stats = if args.single_thread {
        decode_stream(
            input,
            cfg,
            &mut |o| {
                if !stop.load(Ordering::Relaxed) && each(&o).is_break() {
                    stop.store(true, Ordering::Relaxed);
                }
            },
            &mut |off| bar.set_position(off),
        )
    } else {
        decode_threaded(input, cfg, &bar, &stop, &mut each)
    };
    bar.finish_and_clear();
    if stop.load(Ordering::Relaxed) {
        // The consumer stopped early (e.g. a closed pipe): it reports why.
        return Ok(stats);
    }
    if stats.headers == 0 {
        // Nothing decoded (records need a header): not a trace, a wrong
        // file, or the wrong --channel / --src-bits.
        bail!(
            "{}: no performance header found on ITC channel {} ({} writes on it, {} on other channels, \
             {} decoding errors); not a performance trace, or check --channel and --src-bits",
            args.trace.display(),
            args.channel,
            stats.channel_writes,
            stats.other_channel_writes,
            stats.errors
        );
    }
    // A damaged trace: what could be decoded was, and the errors are counted.
    if stats.errors as usize > args.max_errors {
        eprintln!(
            "hpmtrace: warning: {} decoding errors in total ({} shown; raise --max-errors to see more)",
            stats.errors, args.max_errors
        );
    } else if stats.errors > 0 {
        eprintln!(
            "hpmtrace: warning: {} decoding error{} in total",
            stats.errors,
            if stats.errors == 1 { "" } else { "s" }
        );
    }
    Ok(stats)
}

/// The trace file, ending early once the consumer has stopped (the
/// decoder then finishes at what looks like the end of the file).
struct StopReader<'a> {
    inner: File,
    stop: &'a AtomicBool,
}

impl Read for StopReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.stop.load(Ordering::Relaxed) {
            return Ok(0);
        }
        self.inner.read(buf)
    }
}

/// A decoder output the decoding thread owns until the consumer has seen it.
enum Item {
    /// Boxed: a header is 808 bytes, a record slot should not be.
    Header(Box<HeaderInfo>),
    Record(Record),
    Error(DecodeError),
}

impl Item {
    /// Stores `o` here, reusing this slot's counter vector when both are
    /// records (most are: no allocation per record once batches recycle).
    fn set(&mut self, o: &Output<'_>) {
        match (self, o) {
            (Item::Record(dst), Output::Record(r)) => dst.clone_from(r),
            (slot, o) => *slot = Item::from(o),
        }
    }

    fn output(&self) -> Output<'_> {
        match self {
            Item::Header(h) => Output::Header(h),
            Item::Record(r) => Output::Record(r),
            Item::Error(e) => Output::Error(e.clone()),
        }
    }
}

impl From<&Output<'_>> for Item {
    fn from(o: &Output<'_>) -> Item {
        match o {
            Output::Header(h) => Item::Header(Box::new(**h)),
            Output::Record(r) => Item::Record((*r).clone()),
            Output::Error(e) => Item::Error(e.clone()),
        }
    }
}

/// Items per hand-over between the threads.
const BATCH: usize = 2048;
/// Batches in flight: the decoder's lead over the consumer.
const IN_FLIGHT: usize = 4;

/// Decodes on a scoped thread, handing batches of items to `each` on this
/// one; used batches go back to the decoder to be refilled in place.
fn decode_threaded(
    input: StopReader<'_>,
    cfg: DecodeConfig,
    bar: &ProgressBar,
    stop: &AtomicBool,
    each: &mut dyn FnMut(&Output<'_>) -> ControlFlow<()>,
) -> Stats {
    let (full_tx, full_rx) = mpsc::sync_channel::<(Vec<Item>, usize)>(IN_FLIGHT);
    let (empty_tx, empty_rx) = mpsc::channel::<Vec<Item>>();
    std::thread::scope(|s| {
        let decoder = s.spawn(move || {
            let mut batch: Vec<Item> = Vec::with_capacity(BATCH);
            let mut n = 0usize;
            let send = |batch: &mut Vec<Item>, n: &mut usize| {
                let next = empty_rx
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(BATCH));
                if full_tx.send((std::mem::replace(batch, next), *n)).is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                *n = 0;
            };
            let stats = decode_stream(
                input,
                cfg,
                &mut |o| {
                    match batch.get_mut(n) {
                        Some(slot) => slot.set(&o),
                        None => batch.push(Item::from(&o)),
                    }
                    n += 1;
                    if n == BATCH {
                        send(&mut batch, &mut n);
                    }
                },
                &mut |off| bar.set_position(off),
            );
            if n > 0 {
                send(&mut batch, &mut n);
            }
            stats
        });
        'batches: for (batch, n) in full_rx.iter() {
            for item in &batch[..n] {
                if each(&item.output()).is_break() {
                    stop.store(true, Ordering::Relaxed);
                    break 'batches;
                }
            }
            // The decoder may have finished and dropped its end: fine.
            let _ = empty_tx.send(batch);
        }
        // Unblocks a decoder waiting to send, so it sees `stop`.
        drop(full_rx);
        decoder.join().expect("decoder thread panicked")
    })
}
