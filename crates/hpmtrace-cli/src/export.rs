//! `hpmtrace export`: Perfetto/Chrome trace JSON, speedscope evented JSON,
//! folded stacks and SVG flame graphs.

use crate::fastmap::{memo, FastMap};
use crate::stack::{Point, Visitor, Walker, TIME};
use crate::text::json_str;
use hpmtrace::format::RecordType;
use serde_json::json;
use std::io::{self, Write};
use std::rc::Rc;
use std::sync::Arc;

/// Export format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// Chrome trace-event JSON (opens in ui.perfetto.dev and chrome://tracing):
    /// function slices per core plus one counter track per counter.
    Perfetto,
    /// speedscope evented profile JSON (one profile per core).
    Speedscope,
    /// Folded stacks (`a;b;c weight`), the input of flamegraph tools.
    Folded,
    /// SVG flame graph.
    Svg,
}

/// Export options.
#[derive(clap::Args, Debug, Clone)]
pub struct ExportArgs {
    /// Output format.
    #[arg(long, short = 'f', value_enum)]
    pub format: ExportFormat,
    /// Weight of speedscope/folded/svg frames: a counter name (e.g.
    /// `cycles`), `time` (trace timestamps) or, for folded/svg, `calls`.
    /// Default: the first counter of the trace, else time.
    #[arg(long, short = 'w')]
    pub weight: Option<String>,
    /// Nanoseconds per timestamp tick, for time axes (Perfetto; speedscope
    /// with `--weight time`).
    #[arg(long, default_value_t = 1.0, value_parser = parse_tick_ns)]
    pub tick_ns: f64,
}

fn parse_tick_ns(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "`{s}`: give the nanoseconds per timestamp tick as a positive number, e.g. 10 for a 100 MHz timestamp clock"
        )),
    }
}

/// Streams Chrome trace events as the walker rebuilds the timeline.
///
/// Events are written directly, not built as JSON values: a trace has
/// millions of them, and names are escaped once each (cached).
pub struct PerfettoWriter<W: Write> {
    out: W,
    err: Option<io::Error>,
    first: bool,
    cores: Vec<u16>,
    columns: Vec<String>,
    /// Function name -> its JSON string literal.
    names: FastMap<Arc<str>, Rc<str>>,
    /// (core, column) -> the counter track's JSON string literal.
    tracks: FastMap<(u16, usize), Rc<str>>,
    tick_ns: f64,
    t0: Option<u64>,
}

impl<W: Write> PerfettoWriter<W> {
    /// Starts the JSON document.
    pub fn new(mut out: W, tick_ns: f64) -> io::Result<Self> {
        write!(out, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
        let mut w = PerfettoWriter {
            out,
            err: None,
            first: true,
            cores: Vec::new(),
            columns: Vec::new(),
            names: FastMap::default(),
            tracks: FastMap::default(),
            tick_ns,
            t0: None,
        };
        w.event(format_args!(
            r#""ph":"M","name":"process_name","pid":1,"args":{{"name":"hpmtrace"}}"#
        ));
        Ok(w)
    }

    /// Writes one event object with these members.
    fn event(&mut self, members: std::fmt::Arguments<'_>) {
        if self.err.is_some() {
            return;
        }
        let sep = if self.first { "\n" } else { ",\n" };
        self.first = false;
        if let Err(e) = write!(self.out, "{sep}{{{members}}}") {
            self.err = Some(e);
        }
    }

    fn name(&mut self, func: &Arc<str>) -> Rc<str> {
        memo(&mut self.names, func, || json_str(func))
    }

    /// Microseconds since the first timestamp (sequence numbers without
    /// timestamps); finite, as `--tick-ns` is.
    fn us(&mut self, at: &Point<'_>) -> f64 {
        match at.ts {
            Some(t) => {
                let t0 = *self.t0.get_or_insert(t);
                t.saturating_sub(t0) as f64 * self.tick_ns / 1000.0
            }
            None => at.seq as f64,
        }
    }

    fn core(&mut self, core: u16) {
        if !self.cores.contains(&core) {
            self.cores.push(core);
            self.event(format_args!(
                r#""ph":"M","name":"thread_name","pid":1,"tid":{core},"args":{{"name":"core {core}"}}"#
            ));
        }
    }

    /// Ends the document.
    pub fn finish(mut self) -> io::Result<()> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        writeln!(self.out, "\n]}}")?;
        self.out.flush()
    }
}

impl<W: Write> Visitor for PerfettoWriter<W> {
    fn columns(&mut self, columns: &[String]) {
        if self.columns != columns {
            self.columns = columns.to_vec();
            self.tracks.clear();
        }
    }
    fn open(&mut self, core: u16, func: &Arc<str>, at: Point<'_>, synthetic: bool) {
        self.core(core);
        let ts = self.us(&at);
        let name = self.name(func);
        let cat = if synthetic {
            "function (entry not traced)"
        } else {
            "function"
        };
        self.event(format_args!(
            r#""ph":"B","name":{name},"cat":"{cat}","pid":1,"tid":{core},"ts":{ts}"#
        ));
    }
    fn close(&mut self, core: u16, _func: &Arc<str>, at: Point<'_>) {
        let ts = self.us(&at);
        self.event(format_args!(r#""ph":"E","pid":1,"tid":{core},"ts":{ts}"#));
    }
    fn sample(&mut self, core: u16, kind: RecordType, func: &Arc<str>, at: Point<'_>) {
        self.core(core);
        let ts = self.us(&at);
        let name = self.name(func);
        let cat = if kind == RecordType::Isr {
            "sample"
        } else {
            "manual"
        };
        self.event(format_args!(
            r#""ph":"i","s":"t","name":{name},"cat":"{cat}","pid":1,"tid":{core},"ts":{ts}"#
        ));
    }
    fn counters(&mut self, core: u16, at: Point<'_>) {
        self.core(core);
        let ts = self.us(&at);
        for c in 1..self.columns.len().min(at.totals.len()) {
            let column = &self.columns[c];
            let name = memo(&mut self.tracks, &(core, c), || {
                json_str(&format!("core {core} {column}"))
            });
            let v = at.totals[c];
            self.event(format_args!(
                r#""ph":"C","name":{name},"pid":1,"ts":{ts},"args":{{"value":{v}}}"#
            ));
        }
    }
}

/// Collects evented profiles (one per core) for speedscope, in constant
/// memory: each core's events go to an unnamed temporary file as JSON text,
/// copied into the document at the end (only the frame names stay here).
pub struct SpeedscopeCollector {
    weight: Option<String>,
    col: Option<usize>,
    frames: Vec<Arc<str>>,
    frame_of: FastMap<Arc<str>, u32>,
    cores: Vec<(u16, CoreEvents)>,
    unit_time: bool,
    tick_ns: f64,
    err: Option<io::Error>,
}

/// One core's profile so far.
struct CoreEvents {
    file: io::BufWriter<std::fs::File>,
    /// Weight at the core's first event (the profile starts at 0).
    base: u64,
    last: u64,
    count: u64,
}

/// A temporary file with no name: nothing to clean up, whatever happens.
fn anonymous_file() -> io::Result<std::fs::File> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("hpmtrace-speedscope-{}-{n}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path);
        match f {
            Ok(f) => {
                std::fs::remove_file(&path)?;
                return Ok(f);
            }
            // Left behind by an earlier process with this pid: next name.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => continue,
            Err(e) => return Err(e),
        }
    }
}

impl SpeedscopeCollector {
    /// A collector weighting by `weight` (see [`ExportArgs::weight`]);
    /// `tick_ns` scales time weights to nanoseconds.
    pub fn new(weight: Option<String>, tick_ns: f64) -> Self {
        SpeedscopeCollector {
            weight,
            col: None,
            frames: Vec::new(),
            frame_of: FastMap::default(),
            cores: Vec::new(),
            unit_time: false,
            tick_ns,
            err: None,
        }
    }

    fn at(&self, at: &Point<'_>) -> u64 {
        at.totals
            .get(self.col.unwrap_or(TIME))
            .copied()
            .unwrap_or(0)
    }

    fn frame(&mut self, f: &Arc<str>) -> u32 {
        if let Some(&i) = self.frame_of.get(f) {
            return i;
        }
        let i = self.frames.len() as u32;
        self.frames.push(f.clone());
        self.frame_of.insert(f.clone(), i);
        i
    }

    fn scale(&self) -> f64 {
        if self.unit_time {
            self.tick_ns
        } else {
            1.0
        }
    }

    fn event(&mut self, core: u16, open: bool, func: &Arc<str>, at: &Point<'_>) {
        if self.err.is_some() {
            return;
        }
        let (frame, at) = (self.frame(func), self.at(at));
        let scale = self.scale();
        let k = match self.cores.iter().position(|c| c.0 == core) {
            Some(k) => k,
            None => match anonymous_file() {
                Ok(f) => {
                    self.cores.push((
                        core,
                        CoreEvents {
                            file: io::BufWriter::with_capacity(1 << 16, f),
                            base: at,
                            last: at,
                            count: 0,
                        },
                    ));
                    self.cores.len() - 1
                }
                Err(e) => {
                    self.err = Some(e);
                    return;
                }
            },
        };
        let c = &mut self.cores[k].1;
        let sep = if c.count == 0 { "" } else { "," };
        let kind = if open { "O" } else { "C" };
        let x = at.wrapping_sub(c.base) as f64 * scale;
        c.count += 1;
        c.last = at;
        if let Err(e) = write!(
            c.file,
            r#"{sep}{{"type":"{kind}","frame":{frame},"at":{x}}}"#
        ) {
            self.err = Some(e);
        }
    }

    /// Writes the speedscope document.
    pub fn write(mut self, mut out: impl Write, name: &str, weight_name: &str) -> io::Result<()> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        let frames: Vec<_> = self.frames.iter().map(|f| json!({"name": &**f})).collect();
        write!(
            out,
            r#"{{"$schema":"https://www.speedscope.app/file-format-schema.json","name":{},"activeProfileIndex":0,"exporter":"hpmtrace","shared":{{"frames":{}}},"profiles":["#,
            json_str(name),
            serde_json::Value::from(frames)
        )?;
        let unit = if self.unit_time {
            "nanoseconds"
        } else {
            "none"
        };
        let scale = self.scale();
        self.cores.sort_by_key(|c| c.0);
        for (i, (core, c)) in self.cores.into_iter().enumerate() {
            let end = c.last.wrapping_sub(c.base) as f64 * scale;
            let label = json_str(&format!("core {core} ({weight_name})"));
            let sep = if i == 0 { "" } else { "," };
            write!(
                out,
                r#"{sep}{{"type":"evented","name":{label},"unit":"{unit}","startValue":0,"endValue":{end},"events":["#
            )?;
            let mut file = c.file.into_inner().map_err(|e| e.into_error())?;
            io::Seek::seek(&mut file, io::SeekFrom::Start(0))?;
            io::copy(&mut file, &mut out)?;
            write!(out, "]}}")?;
        }
        writeln!(out, "]}}")?;
        out.flush()
    }
}

impl Visitor for SpeedscopeCollector {
    fn columns(&mut self, columns: &[String]) {
        if self.col.is_some() {
            return;
        }
        self.col = match &self.weight {
            Some(w) if w == "time" => Some(TIME),
            Some(w) => columns.iter().position(|c| c == w),
            None if columns.len() > 1 => Some(1),
            None => Some(TIME),
        };
        self.unit_time = self.col == Some(TIME);
    }
    fn open(&mut self, core: u16, func: &Arc<str>, at: Point<'_>, _s: bool) {
        self.event(core, true, func, &at);
    }
    fn close(&mut self, core: u16, func: &Arc<str>, at: Point<'_>) {
        self.event(core, false, func, &at);
    }
}

/// Resolves the weight option against the walker's columns; `None` for
/// `calls`.
pub fn weight_column(w: &Walker, weight: Option<&str>) -> Result<Option<usize>, String> {
    match weight {
        Some("calls") => Ok(None),
        Some(n) => w.column(n).map(Some).ok_or_else(|| {
            format!(
                "no counter named `{n}` in this trace; use one of: {}, calls",
                w.columns.join(", ")
            )
        }),
        None if w.columns.len() > 1 => Ok(Some(1)),
        None => Ok(Some(TIME)),
    }
}

/// Deepest call path written by [`folded`]: each line repeats its whole
/// path, so a pathological (e.g. damaged) trace nesting millions deep would
/// make the output quadratic; deeper frames are folded into their ancestor
/// at this depth.
pub const FOLDED_MAX_DEPTH: usize = 2048;

/// Folded stack lines from the call tree (exclusive weights, or calls), in
/// depth-first order with children sorted by name, each passed to `line`
/// (without newline) as it is made: nothing but the tree stays in memory.
pub fn folded(
    w: &Walker,
    col: Option<usize>,
    line: &mut dyn FnMut(&str) -> io::Result<()>,
) -> io::Result<()> {
    let t = &w.tree;
    let weight = |n: usize| match col {
        Some(c) => t.excl(n).get(c).copied().unwrap_or(0),
        None => t.calls(n),
    };
    let sorted_children = |n: usize| {
        let mut kids: Vec<usize> = t.children(n).collect();
        kids.sort_by(|&a, &b| t.func(a).cmp(t.func(b)));
        kids
    };
    let multi = w.roots.len() > 1;
    let mut text = String::new();
    for &(_, root) in &w.roots {
        // (node, its depth); with one core its root frame is left out.
        let mut todo: Vec<(usize, usize)> = if multi {
            vec![(root, 0)]
        } else {
            sorted_children(root)
                .into_iter()
                .rev()
                .map(|k| (k, 0))
                .collect()
        };
        // The current path as text, and its length at each depth.
        let mut path = String::new();
        let mut ends: Vec<usize> = Vec::new();
        while let Some((n, depth)) = todo.pop() {
            ends.truncate(depth);
            path.truncate(ends.last().copied().unwrap_or(0));
            if depth > 0 {
                path.push(';');
            }
            path.push_str(&t.func(n).replace(';', ":"));
            ends.push(path.len());
            let mut v = weight(n);
            if depth + 1 >= FOLDED_MAX_DEPTH {
                // The whole subtree's weight stays on this frame.
                let mut below: Vec<usize> = t.children(n).collect();
                while let Some(k) = below.pop() {
                    v += weight(k);
                    below.extend(t.children(k));
                }
            } else {
                todo.extend(sorted_children(n).into_iter().rev().map(|k| (k, depth + 1)));
            }
            if v > 0 {
                text.clear();
                text.push_str(&path);
                text.push(' ');
                text.push_str(itoa::Buffer::new().format(v));
                line(&text)?;
            }
        }
    }
    Ok(())
}

/// Renders folded lines as an SVG flame graph.
pub fn svg(lines: &[String], title: &str, count_name: &str, out: impl Write) -> io::Result<()> {
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = count_name.to_string();
    if lines.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "nothing to draw: the trace has no function enter/exit records with this weight",
        ));
    }
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(|s| s.as_str()), out)
        .map_err(io::Error::other)
}
