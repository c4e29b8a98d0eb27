//! `hpmtrace decode` output formats: SiFive decoder `.perf` text, CSV and
//! JSON lines.

use crate::fastmap::{memo, FastMap};
use crate::names::event_name;
use crate::symbols::Symbolizer;
use hpmtrace::decode::{HeaderInfo, Output, Record};
use hpmtrace::format::{CountType, Event, Header, RecordType};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{self, Write};
use std::rc::Rc;

/// Output format of `decode`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextFormat {
    /// Lines as SiFive's trace decoder writes them to `<elf>.perf`.
    Perf,
    /// One CSV row per counter value (or per record without counters).
    Csv,
    /// One JSON object per header, record and error.
    Json,
}

/// Counter index -> event name of one header, escaped for the writer's
/// format (quoted for JSON, quoted when needed for CSV).
type Names = Rc<[(u8, Rc<str>)]>;

/// Writes decoded items in one of the text formats.
pub struct TextWriter<W: Write> {
    out: W,
    format: TextFormat,
    headers: HashMap<u16, Header>,
    names: HashMap<u16, Names>,
    /// Per-address location text in this writer's format (traces revisit
    /// few addresses, so formatting each once pays).
    frag: FastMap<u64, Rc<str>>,
    /// CSV only: per-address `address2,function2` columns, cached.
    frag2: FastMap<u64, Rc<str>>,
    /// The output lines of the record being written (reused).
    line: Vec<u8>,
}

fn count_type_name(c: CountType) -> &'static str {
    match c {
        CountType::Raw => "RAW",
        CountType::Delta => "Delta",
        CountType::DeltaXor => "DeltaXOR",
    }
}

fn kind_name(k: RecordType) -> &'static str {
    match k {
        RecordType::FuncEnter => "enter",
        RecordType::FuncExit => "exit",
        RecordType::Manual => "manual",
        RecordType::Isr => "sample",
    }
}

/// The ` ffl:file:function:line` suffix SiFive's decoder appends when an
/// ELF is given; unresolvable addresses are kept and marked `??`.
fn ffl(sym: &mut Symbolizer, addr: u64) -> String {
    if !sym.has_elf() {
        return String::new();
    }
    let r = sym.resolve(addr);
    match &r.func {
        Some(f) => format!(" ffl:{}:{}:{}", r.file.as_deref().unwrap_or(""), f, r.line),
        None => " ffl:??:??:0".to_string(),
    }
}

impl<W: Write> TextWriter<W> {
    /// A writer; `elf` is named in the `.perf` preamble.
    pub fn new(mut out: W, format: TextFormat, elf: Option<&str>) -> io::Result<Self> {
        match format {
            TextFormat::Perf => writeln!(out, "# ELFPATH={}", elf.unwrap_or(""))?,
            TextFormat::Csv => writeln!(
                out,
                "core,offset,timestamp,kind,address,function,file,line,resolved,address2,function2,counter,event,recorded,value,delta"
            )?,
            TextFormat::Json => {}
        }
        Ok(TextWriter {
            out,
            format,
            headers: HashMap::new(),
            names: HashMap::new(),
            frag: FastMap::default(),
            frag2: FastMap::default(),
            line: Vec::with_capacity(1024),
        })
    }

    /// Writes one decoder output item.
    pub fn item(&mut self, o: &Output<'_>, sym: &mut Symbolizer) -> io::Result<()> {
        match o {
            Output::Header(h) => self.header(h),
            Output::Record(r) => self.record(r, sym),
            Output::Error(e) => {
                if self.format == TextFormat::Json {
                    let v = json!({"type": "error", "offset": e.offset, "core": e.src, "message": e.to_string()});
                    writeln!(self.out, "{v}")?;
                }
                Ok(())
            }
        }
    }

    fn header(&mut self, h: &HeaderInfo) -> io::Result<()> {
        self.headers.insert(h.src, h.header);
        let names: Names = h
            .header
            .iter()
            .map(|(i, d)| (i, self.escape(&event_name(&d))))
            .collect();
        self.names.insert(h.src, names);
        let ts = h.timestamp.unwrap_or(0);
        match self.format {
            TextFormat::Perf => {
                writeln!(
                    self.out,
                    "# COUNT_TYPE: {}",
                    count_type_name(h.header.count_type)
                )?;
                writeln!(
                    self.out,
                    "[{}] {ts} [Perf Cntr Mask] [Mask=0x{:08x}]",
                    h.src,
                    h.header.mask()
                )?;
                for (i, d) in h.header.iter() {
                    let (code, data) = match d.event {
                        Event::Raw { event_data } => (0, event_data),
                        e => (e.code().unwrap_or(0), 0),
                    };
                    writeln!(
                        self.out,
                        "[{}] {ts} [Perf Cntr Def] [Counter={i}] [Type={}] [Code={code}] [EventData=0x{data:08x}] [CntrCSR=0x{:03x}] [CntrBits={}]",
                        h.src,
                        d.event.event_type() as u32,
                        d.info.csr,
                        d.info.width
                    )?;
                }
            }
            TextFormat::Csv => {}
            TextFormat::Json => {
                let ctrs: Vec<Value> = h
                    .header
                    .iter()
                    .map(|(i, d)| {
                        json!({"index": i, "event": event_name(&d), "type": d.event.event_type() as u32,
                               "csr": d.info.csr, "bits": d.info.width})
                    })
                    .collect();
                let v = json!({"type": "header", "core": h.src, "offset": h.offset, "timestamp": h.timestamp,
                               "count_type": count_type_name(h.header.count_type), "mask": h.header.mask(),
                               "counters": ctrs});
                writeln!(self.out, "{v}")?;
            }
        }
        Ok(())
    }

    /// Builds a record's lines by hand into one reused buffer, then writes
    /// them: records are most of a decode's output, and `write!` per line
    /// was half of its time.
    fn record(&mut self, r: &Record, sym: &mut Symbolizer) -> io::Result<()> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        let built = match self.format {
            TextFormat::Perf => self.perf_record(r, sym, &mut line),
            TextFormat::Csv => self.csv_record(r, sym, &mut line),
            TextFormat::Json => self.json_record(r, sym, &mut line),
        };
        let res = built.and_then(|()| self.out.write_all(&line));
        self.line = line;
        res
    }

    /// The location fragment of `addr` in this writer's format, cached.
    fn loc(&mut self, addr: u64, sym: &mut Symbolizer) -> Rc<str> {
        let format = self.format;
        memo(&mut self.frag, &addr, || match format {
            TextFormat::Perf => ffl(sym, addr).into(),
            TextFormat::Csv => {
                let res = sym.resolve(addr);
                format!(
                    "0x{addr:x},{},{},{},{}",
                    csv_field(res.func.as_deref().unwrap_or("")),
                    csv_field(res.file.as_deref().unwrap_or("")),
                    if res.line > 0 {
                        res.line.to_string()
                    } else {
                        String::new()
                    },
                    res.is_resolved()
                )
                .into()
            }
            TextFormat::Json => {
                let res = sym.resolve(addr);
                json!({"address": format!("0x{addr:x}"), "function": res.func.as_deref(), "offset": res.offset,
                       "file": res.file.as_deref(), "line": if res.line > 0 { Some(res.line) } else { None },
                       "resolved": res.is_resolved()})
                .to_string()
                .into()
            }
        })
    }

    fn perf_record(
        &mut self,
        r: &Record,
        sym: &mut Symbolizer,
        line: &mut Vec<u8>,
    ) -> io::Result<()> {
        line.put("[");
        line.num(r.src);
        line.put("] ");
        line.num(r.timestamp.unwrap_or(0));
        line.put(" ");
        let head = line.len();
        let a2 = r.addr2.unwrap_or(0);
        // The address the counter lines refer to: the function for
        // enter, the returned-to function for exit, else the PC.
        let pc = match r.kind {
            RecordType::FuncEnter => {
                write!(
                    line,
                    "[Func Enter at 0x{:08x}] [Called From 0x{a2:08x}]",
                    r.addr
                )?;
                r.addr
            }
            RecordType::FuncExit => {
                write!(
                    line,
                    "[Func Exit] [Func at 0x{:08x}] [Returning to 0x{a2:08x}]",
                    r.addr
                )?;
                a2
            }
            RecordType::Manual | RecordType::Isr => {
                write!(line, "PC=0x{:08x} [Address]", r.addr)?;
                r.addr
            }
        };
        let f = self.loc(pc, sym);
        line.put(&f);
        line.put("\n");
        if !r.counters.is_empty() {
            let start = line.len();
            line.extend_from_within(..head);
            write!(line, "PC=0x{pc:08x} [Perf Cntr] [Index=")?;
            let prefix = start..line.len();
            for (k, c) in r.counters.iter().enumerate() {
                if k > 0 {
                    line.extend_from_within(prefix.clone());
                }
                // SiFive's decoder prints the recorded value for Raw and
                // Delta traces and the reconstructed reading for DeltaXOR.
                let v = match r.count_type {
                    CountType::Delta => c.recorded,
                    _ => c.reading,
                };
                line.num(c.index);
                line.put("] [Value=");
                line.num(v);
                line.put("] ");
                line.put(&f);
                line.put("\n");
            }
        }
        Ok(())
    }

    /// Counter names of a core's header (shared, cheap to clone).
    fn names(&self, src: u16) -> Names {
        self.names
            .get(&src)
            .cloned()
            .unwrap_or_else(|| Rc::from(Vec::new()))
    }

    /// `s` as a field of this writer's format.
    fn escape(&self, s: &str) -> Rc<str> {
        match self.format {
            TextFormat::Perf => s.into(),
            TextFormat::Csv => csv_field(s).into(),
            TextFormat::Json => json_str(s),
        }
    }

    /// The escaped name of counter `index` (`hpmN` when the header has none).
    fn counter(&self, names: &[(u8, Rc<str>)], index: u8) -> Rc<str> {
        match names.iter().find(|(i, _)| *i == index) {
            Some((_, n)) => n.clone(),
            None => self.escape(&format!("hpm{index}")),
        }
    }

    fn csv_record(
        &mut self,
        r: &Record,
        sym: &mut Symbolizer,
        line: &mut Vec<u8>,
    ) -> io::Result<()> {
        let l1 = self.loc(r.addr, sym);
        // address2,function2
        let l2 = match r.addr2 {
            Some(a) => memo(&mut self.frag2, &a, || {
                format!("0x{a:x},{}", csv_field(&sym.label(a))).into()
            }),
            None => Rc::from(","),
        };
        line.num(r.src);
        line.put(",");
        line.num(r.offset);
        line.put(",");
        if let Some(t) = r.timestamp {
            line.num(t);
        }
        line.put(",");
        line.put(kind_name(r.kind));
        line.put(",");
        line.put(&l1);
        line.put(",");
        line.put(&l2);
        let prefix = line.len();
        if r.counters.is_empty() {
            line.put(",,,,,\n");
        }
        let names = self.names(r.src);
        for (k, c) in r.counters.iter().enumerate() {
            if k > 0 {
                line.extend_from_within(..prefix);
            }
            line.put(",");
            line.num(c.index);
            line.put(",");
            line.put(&self.counter(&names, c.index));
            line.put(",");
            line.num(c.recorded);
            line.put(",");
            line.num(c.reading);
            line.put(",");
            if let Some(d) = c.delta {
                line.num(d);
            }
            line.put("\n");
        }
        Ok(())
    }

    fn json_record(
        &mut self,
        r: &Record,
        sym: &mut Symbolizer,
        line: &mut Vec<u8>,
    ) -> io::Result<()> {
        let l1 = self.loc(r.addr, sym);
        let l2 = r.addr2.map(|a| self.loc(a, sym));
        line.put(r#"{"type":"record","core":"#);
        line.num(r.src);
        line.put(r#","offset":"#);
        line.num(r.offset);
        line.put(r#","timestamp":"#);
        match r.timestamp {
            Some(t) => line.num(t),
            None => line.put("null"),
        }
        line.put(r#","kind":""#);
        line.put(kind_name(r.kind));
        line.put(r#"","location":"#);
        line.put(&l1);
        line.put(r#","location2":"#);
        line.put(l2.as_deref().unwrap_or("null"));
        line.put(r#","counters":["#);
        let names = self.names(r.src);
        for (k, c) in r.counters.iter().enumerate() {
            if k > 0 {
                line.put(",");
            }
            line.put(r#"{"index":"#);
            line.num(c.index);
            line.put(r#","event":"#);
            line.put(&self.counter(&names, c.index));
            line.put(r#","recorded":"#);
            line.num(c.recorded);
            line.put(r#","value":"#);
            line.num(c.reading);
            line.put(r#","delta":"#);
            match c.delta {
                Some(d) => line.num(d),
                None => line.put("null"),
            }
            line.put("}");
        }
        line.put("]}\n");
        Ok(())
    }

    /// Flushes the output.
    pub fn finish(mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// `s` as a JSON string literal, quotes included.
pub fn json_str(s: &str) -> Rc<str> {
    serde_json::Value::from(s).to_string().into()
}

/// Appending text and integers to a line being built.
trait Put {
    fn put(&mut self, s: &str);
    fn num(&mut self, v: impl itoa::Integer);
}

impl Put for Vec<u8> {
    fn put(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }
    fn num(&mut self, v: impl itoa::Integer) {
        self.put(itoa::Buffer::new().format(v));
    }
}

fn csv_field(s: &str) -> Cow<'_, str> {
    if s.contains([',', '"', '\n']) {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(s)
    }
}
