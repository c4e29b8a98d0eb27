//! `hpmtrace`: decode, report on and export performance-counter traces
//! written with the SiFive Trace Performance Library format (or hpmtrace).
//!
//! ## Layering
//!
//! Bottom-up: the shared pieces (`fastmap`, `names`, `symbols`), reading
//! a trace file (`pipeline`), the `decode` output formats (`text`), the
//! call stacks rebuilt from the records (`stack`) and the commands built
//! on them (`report`, `export`); the crate root ties them to the command
//! line.
//!
//! | module | uses |
//! |---|---|
//! | `fastmap` | |
//! | `names` | |
//! | `symbols` | `fastmap` |
//! | `pipeline` | |
//! | `text` | `fastmap`, `names`, `symbols` |
//! | `stack` | `fastmap`, `names`, `symbols` |
//! | `report` | `stack` |
//! | `export` | `fastmap`, `stack`, `text` |

mod export;
mod fastmap;
mod names;
mod pipeline;
mod report;
mod stack;
mod symbols;
mod text;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use pipeline::InputArgs;
use stack::{NoVisitor, Walker};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use symbols::Symbolizer;

/// What `--help` says about the exit status.
const EXIT_STATUS: &str = "\
Exit status: 0 when the trace was decoded, also when it is damaged: the
damaged parts are skipped, each decoding error is printed to stderr (up to
--max-errors) and then their count. 1 when nothing could be decoded (no
performance header at all: random bytes, a wrong file, or the wrong
--channel/--src-bits), and on any other error (trace or ELF unreadable,
output not writable).";

/// Decode, report on and export HPM performance-counter traces (.rtd
/// files: Nexus trace-sink bytes with ITC data-acquisition messages).
#[derive(Parser, Debug)]
#[command(name = "hpmtrace", version, about, long_about = None, after_help = EXIT_STATUS)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Decode a trace into text: SiFive decoder `.perf` lines, CSV or JSON lines.
    ///
    /// Example: hpmtrace decode trace.rtd --elf prog -o prog.perf
    #[command(after_help = EXIT_STATUS)]
    Decode {
        #[command(flatten)]
        input: InputArgs,
        /// Output format.
        #[arg(long, short = 'f', value_enum, default_value = "perf")]
        format: text::TextFormat,
        /// Output file (default: standard output).
        #[arg(long, short = 'o')]
        output: Option<PathBuf>,
    },
    /// Per-function counts (calls, inclusive/exclusive, IPC, miss rates),
    /// call tree and trace summary.
    ///
    /// Example: hpmtrace report trace.rtd --elf prog --top 10 --tree
    #[command(after_help = EXIT_STATUS)]
    Report {
        #[command(flatten)]
        input: InputArgs,
        #[command(flatten)]
        opts: report::ReportArgs,
    },
    /// Export for viewers: Perfetto/Chrome JSON, speedscope, folded stacks, SVG flame graph.
    ///
    /// Example: hpmtrace export trace.rtd --elf prog -f svg -o flame.svg
    #[command(after_help = EXIT_STATUS)]
    Export {
        #[command(flatten)]
        input: InputArgs,
        #[command(flatten)]
        opts: export::ExportArgs,
        /// Output file (default: standard output).
        #[arg(long, short = 'o')]
        output: Option<PathBuf>,
    },
    /// Make a .rtd file of the trace a bare-metal program printed on its
    /// console (`perfWriteTrace` of the bare-metal library): every core's
    /// buffer, checked against its length and checksum, in core order.
    ///
    /// Example: hpmtrace import console.log -o trace.rtd && hpmtrace decode trace.rtd --src-bits 1
    Import {
        /// The console log (a serial capture, QEMU's -nographic output).
        log: PathBuf,
        /// Take the dumps named so (default: the first name in the log).
        #[arg(long)]
        name: Option<String>,
        /// Output .rtd file.
        #[arg(long, short = 'o')]
        output: PathBuf,
    },
}

/// `hpmtrace import`: the dumps of one name, concatenated in core order
/// (each core's messages carry its SRC, so one file holds them all).
fn import(log: &Path, name: Option<&str>, out: &Path) -> Result<()> {
    let text = std::fs::read(log).with_context(|| format!("cannot read {}", log.display()))?;
    let dumps = hpmtrace::dump::parse(&String::from_utf8_lossy(&text))
        .with_context(|| format!("{}: damaged trace dump", log.display()))?;
    let Some(first) = dumps.first() else {
        bail!(
            "{}: no trace dump (no `{}` line): did the program call perfWriteTrace()?",
            log.display(),
            hpmtrace::dump::BEGIN
        );
    };
    let name = name.unwrap_or(&first.name);
    let mut chosen: Vec<_> = dumps.iter().filter(|d| d.name == name).collect();
    if chosen.is_empty() {
        let names: Vec<_> = dumps.iter().map(|d| d.name.as_str()).collect();
        bail!(
            "{}: no dump named {name:?}; the log has {names:?}",
            log.display()
        );
    }
    chosen.sort_by_key(|d| d.core);
    let bytes: Vec<u8> = chosen.iter().flat_map(|d| d.data.iter().copied()).collect();
    std::fs::write(out, &bytes).with_context(|| format!("cannot write {}", out.display()))?;
    let hint = match first.src_bits {
        Some(b) => format!("; decode with --src-bits {b}"),
        None => String::new(),
    };
    eprintln!(
        "hpmtrace: {}: {} bytes from {} core(s) {:?}{hint}",
        out.display(),
        bytes.len(),
        chosen.len(),
        chosen.iter().map(|d| d.core).collect::<Vec<_>>(),
    );
    Ok(())
}

fn symbolizer(input: &InputArgs) -> Result<Symbolizer> {
    let Some(elf) = &input.elf else {
        return Ok(Symbolizer::none());
    };
    let mut sym = Symbolizer::load(elf)?;
    if let Some(b) = input.load_bias {
        sym.set_bias(b);
    } else if sym.is_pie() {
        // The first 8 MiB hold tens of thousands of records: enough.
        let seen = pipeline::sample_addresses(input, 8 << 20, 4096)?;
        match sym.infer_bias(&seen.entries, &seen.sites, &seen.calls, &seen.other) {
            Some(b) => {
                eprintln!(
                    "hpmtrace: {} is position-independent: load bias {b:#x}, inferred from {} \
                     function entries (--load-bias overrides)",
                    elf.display(),
                    seen.entries.len()
                );
                sym.set_bias(b);
            }
            None => eprintln!(
                "hpmtrace: warning: {} is position-independent and the trace does not record where it \
                 was loaded; {}. Pass --load-bias HEX (its base in /proc/PID/maps while it ran), \
                 or build it with -no-pie",
                elf.display(),
                if seen.entries.is_empty() {
                    "the trace has no function-entry records to infer it from"
                } else {
                    "no load bias explains the trace's function entries (wrong ELF?)"
                }
            ),
        }
    }
    Ok(sym)
}

fn output(path: &Option<PathBuf>) -> Result<Box<dyn Write>> {
    Ok(match path {
        Some(p) => Box::new(BufWriter::with_capacity(
            1 << 20,
            File::create(p)
                .with_context(|| format!("cannot create output file {}", p.display()))?,
        )),
        None => Box::new(BufWriter::with_capacity(1 << 20, io::stdout().lock())),
    })
}

/// Decodes and walks the trace; `tree`: keep the call tree (only the
/// outputs that print it need its memory).
fn walk(
    input: &InputArgs,
    v: &mut impl stack::Visitor,
    tree: bool,
) -> Result<(Walker, hpmtrace::decode::Stats)> {
    let mut sym = symbolizer(input)?;
    let mut w = if tree {
        Walker::new()
    } else {
        Walker::without_tree()
    };
    let stats = pipeline::run(input, &mut |o| {
        w.item(o, &mut sym, v);
        ControlFlow::Continue(())
    })?;
    w.finish(v);
    Ok((w, stats))
}

/// `fmt::Write` into an `io::Write`, keeping the first error (the report
/// is written with `write!`; a closed pipe must still end it cleanly).
struct FmtIo<W: Write> {
    inner: W,
    err: Option<io::Error>,
}

impl<W: Write> std::fmt::Write for FmtIo<W> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.err.is_some() {
            return Err(std::fmt::Error);
        }
        self.inner.write_all(s.as_bytes()).map_err(|e| {
            self.err = Some(e);
            std::fmt::Error
        })
    }
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Import { log, name, output } => import(&log, name.as_deref(), &output)?,
        Cmd::Decode {
            input,
            format,
            output: out_path,
        } => {
            let mut sym = symbolizer(&input)?;
            let elf = input.elf.as_ref().map(|p| p.display().to_string());
            let mut tw = text::TextWriter::new(output(&out_path)?, format, elf.as_deref())?;
            let mut err: Option<io::Error> = None;
            pipeline::run(&input, &mut |o| match tw.item(o, &mut sym) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    // Stop decoding: nothing more can be written.
                    err = Some(e);
                    ControlFlow::Break(())
                }
            })?;
            if let Some(e) = err {
                return Err(e).context("cannot write the output");
            }
            tw.finish().context("cannot write the output")?;
        }
        Cmd::Report { input, opts } => {
            let (w, stats) = walk(&input, &mut NoVisitor, opts.tree)?;
            let mut out = FmtIo {
                inner: output(&None)?,
                err: None,
            };
            report::render(&w, &opts, &stats, &mut out).map_err(anyhow::Error::msg)?;
            if let Some(e) = out.err {
                return Err(e).context("cannot write the output");
            }
            out.inner.flush().context("cannot write the output")?;
        }
        Cmd::Export {
            input,
            opts,
            output: out_path,
        } => match opts.format {
            export::ExportFormat::Perfetto => {
                let mut pw = export::PerfettoWriter::new(output(&out_path)?, opts.tick_ns)?;
                walk(&input, &mut pw, false)?;
                pw.finish().context("cannot write the output")?;
            }
            export::ExportFormat::Speedscope => {
                let mut sc = export::SpeedscopeCollector::new(opts.weight.clone(), opts.tick_ns);
                let (w, _) = walk(&input, &mut sc, false)?;
                let wname = opts.weight.clone().unwrap_or_else(|| {
                    w.columns
                        .get(1)
                        .cloned()
                        .unwrap_or_else(|| "time".to_string())
                });
                if let Some(n) = &opts.weight {
                    if w.column(n).is_none() {
                        bail!(
                            "no counter named `{n}` in this trace; use one of: {}",
                            w.columns.join(", ")
                        );
                    }
                }
                sc.write(output(&out_path)?, &file_name(&input.trace), &wname)
                    .context("cannot write the output")?;
            }
            export::ExportFormat::Folded | export::ExportFormat::Svg => {
                let (w, _) = walk(&input, &mut NoVisitor, true)?;
                let col = export::weight_column(&w, opts.weight.as_deref())
                    .map_err(anyhow::Error::msg)?;
                let wname = col.map_or("calls".to_string(), |c| w.columns[c].clone());
                let mut out = output(&out_path)?;
                if opts.format == export::ExportFormat::Folded {
                    export::folded(&w, col, &mut |l| writeln!(out, "{l}"))?;
                } else {
                    // inferno wants every line (it merges and sorts them).
                    let mut lines = Vec::new();
                    export::folded(&w, col, &mut |l| {
                        lines.push(l.to_string());
                        Ok(())
                    })?;
                    let title = format!("{} ({wname})", file_name(&input.trace));
                    export::svg(&lines, &title, &wname, &mut out)
                        .context("cannot draw the flame graph")?;
                }
                out.flush()?;
            }
        },
    }
    Ok(())
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        // A closed pipe (e.g. `| head`) is not an error worth reporting.
        if e.chain().any(|c| {
            c.downcast_ref::<io::Error>()
                .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
        }) {
            std::process::exit(0);
        }
        eprintln!("hpmtrace: error: {e:#}");
        std::process::exit(1);
    }
}
