//! Trace buffers as console text: how a bare-metal program hands its
//! trace to the host without a debugger.
//!
//! On bare metal the trace buffer sits in the program's memory, where the
//! SiFive's flow has a debugger read it. Where no debugger is attached (a
//! QEMU run, a board on a serial line), `perfWriteTrace()` of the
//! bare-metal library prints each core's buffer on the console in this
//! framing, and `hpmtrace import` turns a captured console log back into a
//! `.rtd` file:
//!
//! ```text
//! hpmtrace-dump v1 name=trace.rtd core=0 src-bits=2 bytes=1234
//! 0a1b2c...              (64 bytes per line as 128 lowercase hex digits)
//! hpmtrace-dump end core=0 fnv1a64=0123456789abcdef
//! ```
//!
//! Everything else on the console (the program's own output, firmware or
//! kernel messages, even between a dump's lines) is ignored. The checksum
//! (FNV-1a, 64 bits, over the buffer's bytes) catches a console that
//! dropped or changed characters.
//!
//! The writer is `no_std` ([`write()`]); the reader, `parse`, needs `std`.

/// First word of a dump's header line.
pub const BEGIN: &str = "hpmtrace-dump v1";
/// First words of a dump's end line.
pub const END: &str = "hpmtrace-dump end";
/// Buffer bytes per hex line.
pub const BYTES_PER_LINE: usize = 64;

/// FNV-1a over `bytes` (64 bits): small, no table, and enough to tell a
/// damaged console capture from a good one.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// What a dump describes besides its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DumpInfo<'a> {
    /// The file name the program asked for (`perfWriteTrace`'s argument).
    pub name: &'a str,
    /// The core (Nexus SRC) whose buffer this is.
    pub core: u32,
    /// SRC field width of the messages (`--src-bits` when decoding), when
    /// the writer knows it (a program that copies a trace file may not).
    pub src_bits: Option<u8>,
}

/// Write `data` as one framed dump through `out`, which receives whole
/// lines (each ending in `\n`). `name` must not contain white space (it
/// is cut at the first).
pub fn write(info: DumpInfo<'_>, data: &[u8], out: &mut dyn FnMut(&[u8])) {
    use core::fmt::Write;
    let name = info.name.split_whitespace().next().unwrap_or("trace.rtd");
    let (buf, len) = ([0; 2 * BYTES_PER_LINE + 1], 0);
    let mut line = LineBuf { buf, len };
    let _ = write!(line, "{BEGIN} name={name} core={}", info.core);
    if let Some(b) = info.src_bits {
        let _ = write!(line, " src-bits={b}");
    }
    let _ = write!(line, " bytes={}", data.len());
    line.end(out);
    for chunk in data.chunks(BYTES_PER_LINE) {
        for &b in chunk {
            line.hex_byte(b);
        }
        line.end(out);
    }
    let _ = write!(
        line,
        "{END} core={} fnv1a64={:016x}",
        info.core,
        fnv1a64(data)
    );
    line.end(out);
}

/// One line being built: the longest is a hex line (128 digits + `\n`).
/// Header and end lines are formatted; hex lines, nearly all the output,
/// are written digit by digit (formatting each byte costs several times
/// more instructions on bare metal).
struct LineBuf {
    buf: [u8; 2 * BYTES_PER_LINE + 1],
    len: usize,
}

impl LineBuf {
    fn push(&mut self, s: &[u8]) {
        let n = s.len().min(self.buf.len() - 1 - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s[..n]);
        self.len += n;
    }
    fn hex_byte(&mut self, b: u8) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        self.push(&[DIGITS[(b >> 4) as usize], DIGITS[(b & 0xf) as usize]]);
    }
    fn end(&mut self, out: &mut dyn FnMut(&[u8])) {
        self.buf[self.len] = b'\n';
        out(&self.buf[..=self.len]);
        self.len = 0;
    }
}

impl core::fmt::Write for LineBuf {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.push(s.as_bytes());
        Ok(())
    }
}

/// A dump read back from console text.
#[cfg(feature = "std")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dump {
    /// The file name the program asked for.
    pub name: String,
    /// The core whose buffer this is.
    pub core: u32,
    /// SRC field width of the messages, if the dump says.
    pub src_bits: Option<u8>,
    /// The buffer's bytes.
    pub data: Vec<u8>,
}

/// Why console text could not be read as dumps: what, and on which line.
#[cfg(feature = "std")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpError {
    /// 1-based line of the console text.
    pub line: usize,
    /// What is wrong there.
    pub what: String,
}

#[cfg(feature = "std")]
impl std::fmt::Display for DumpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for DumpError {}

/// The `key=value` word of a header or end line.
#[cfg(feature = "std")]
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

/// Every dump in console text `text`, in order. Lines that are not part
/// of a dump are skipped; a dump that is cut short, or whose length or
/// checksum does not match, is an error naming its line (a console capture that lost characters must not decode as a
/// shorter trace).
#[cfg(feature = "std")]
pub fn parse(text: &str) -> Result<Vec<Dump>, DumpError> {
    let mut dumps = Vec::new();
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
    while let Some((at, l)) = lines.next() {
        let Some(rest) = l.find(BEGIN).map(|i| &l[i..]) else {
            continue;
        };
        let bad = |what: String| DumpError { line: at, what };
        let num = |key: &str| -> Result<u64, DumpError> {
            field(rest, key)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| bad(format!("dump header without a number `{key}=`: {rest:?}")))
        };
        let name = field(rest, "name")
            .ok_or_else(|| bad(format!("dump header without `name=`: {rest:?}")))?
            .to_string();
        let core = u32::try_from(num("core")?).map_err(|_| bad("core out of range".into()))?;
        let src_bits = field(rest, "src-bits")
            .map(|v| v.parse().map_err(|_| bad(format!("bad src-bits: {v:?}"))))
            .transpose()?;
        let bytes = num("bytes")? as usize;
        let mut data = Vec::with_capacity(bytes);
        let mut ended = false;
        for (at, l) in lines.by_ref() {
            let bad = |what: String| DumpError { line: at, what };
            if let Some(end) = l.find(END).map(|i| &l[i..]) {
                if field(end, "core").and_then(|v| v.parse::<u32>().ok()) != Some(core) {
                    return Err(bad(format!(
                        "end line of another core than {core}: {end:?}"
                    )));
                }
                if data.len() != bytes {
                    return Err(bad(format!(
                        "core {core}: {} bytes between the header and the end line, the header says {bytes} (console lost lines?)",
                        data.len()
                    )));
                }
                let sum = field(end, "fnv1a64")
                    .and_then(|v| u64::from_str_radix(v, 16).ok())
                    .ok_or_else(|| bad(format!("end line without `fnv1a64=`: {end:?}")))?;
                if sum != fnv1a64(&data) {
                    return Err(bad(format!(
                        "core {core}: checksum {:016x} of the bytes read, the dump says {sum:016x} (console changed characters?)",
                        fnv1a64(&data)
                    )));
                }
                ended = true;
                break;
            }
            // Other output may land between the lines (a kernel message on
            // a shared console): a line that is not all hex digits is not
            // part of the dump. Length and checksum catch a damaged one.
            if l.is_empty() || l.len() % 2 != 0 || !l.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            for i in (0..l.len()).step_by(2) {
                data.push(u8::from_str_radix(&l[i..i + 2], 16).expect("hex digits checked"));
            }
        }
        if !ended {
            return Err(bad(format!(
                "core {core}: the dump has no end line (the program stopped while writing it?)"
            )));
        }
        dumps.push(Dump {
            name,
            core,
            src_bits,
            data,
        });
    }
    Ok(dumps)
}
