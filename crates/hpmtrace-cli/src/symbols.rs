//! Address -> function, file and line, from an ELF's symbol table and its
//! DWARF line tables (object + addr2line; nothing is shelled out).

use crate::fastmap::FastMap;
use anyhow::{Context, Result};
use object::{Object, ObjectKind, ObjectSection, ObjectSymbol, SectionKind, SymbolKind};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// What an address resolves to. `func == None` means unresolved: the
/// address lies in no function of the ELF (or no ELF was given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Demangled function name.
    pub func: Option<Arc<str>>,
    /// Offset of the address from the function start.
    pub offset: u64,
    /// Source file (from DWARF), if known.
    pub file: Option<Arc<str>>,
    /// Source line (0 if unknown).
    pub line: u32,
}

impl Resolved {
    fn unknown() -> Self {
        Resolved {
            func: None,
            offset: 0,
            file: None,
            line: 0,
        }
    }

    /// True when the address is inside a known function.
    pub fn is_resolved(&self) -> bool {
        self.func.is_some()
    }
}

struct Func {
    start: u64,
    end: u64,
    name: Arc<str>,
}

/// Resolves addresses, caching every answer (traces revisit few addresses).
pub struct Symbolizer {
    funcs: Vec<Func>,
    /// Position-independent executable or shared object: its run-time
    /// addresses are its link addresses plus a load bias.
    pie: bool,
    /// Run-time address minus link address (0 for a fixed-address ELF).
    bias: u64,
    dwarf: Option<addr2line::Loader>,
    cache: FastMap<u64, Resolved>,
    unknown: Resolved,
    files: HashMap<String, Arc<str>>,
}

impl Symbolizer {
    /// A symbolizer that resolves nothing (no ELF given).
    pub fn none() -> Self {
        Symbolizer {
            funcs: Vec::new(),
            pie: false,
            bias: 0,
            dwarf: None,
            cache: FastMap::default(),
            unknown: Resolved::unknown(),
            files: HashMap::new(),
        }
    }

    /// Loads the function symbols and DWARF line tables of `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let data = std::fs::read(path)
            .with_context(|| format!("cannot read ELF file {}", path.display()))?;
        let file = object::File::parse(&*data).with_context(|| {
            format!(
                "{} is not an ELF/object file the symbolizer can read",
                path.display()
            )
        })?;
        let text_end: Vec<(u64, u64)> = file
            .sections()
            .filter(|s| s.kind() == SectionKind::Text)
            .map(|s| (s.address(), s.address() + s.size()))
            .collect();
        let mut raw: Vec<(u64, u64, String)> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && (s.address() != 0 || s.size() > 0))
            .filter_map(|s| {
                let name = s.name().ok()?;
                if name.is_empty() || name.starts_with("$x") || name.starts_with(".L") {
                    return None;
                }
                Some((s.address(), s.size(), name.to_string()))
            })
            .collect();
        raw.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        raw.dedup_by(|b, a| a.0 == b.0);
        let mut funcs = Vec::with_capacity(raw.len());
        for i in 0..raw.len() {
            let (start, size, ref name) = raw[i];
            // Symbols without a size extend to the next symbol or the end of
            // their text section.
            let end = if size > 0 {
                start + size
            } else {
                let next = raw.get(i + 1).map_or(u64::MAX, |n| n.0);
                let sec = text_end
                    .iter()
                    .find(|(a, e)| *a <= start && start < *e)
                    .map_or(start + 1, |(_, e)| *e);
                next.min(sec)
            };
            funcs.push(Func {
                start,
                end,
                name: Arc::from(demangle(name)),
            });
        }
        let dwarf = addr2line::Loader::new(path).ok();
        Ok(Symbolizer {
            funcs,
            pie: file.kind() == ObjectKind::Dynamic,
            bias: 0,
            dwarf,
            cache: FastMap::default(),
            unknown: Resolved::unknown(),
            files: HashMap::new(),
        })
    }

    /// True when the ELF is position-independent (the trace's addresses
    /// are its own plus a load bias the trace does not record).
    pub fn is_pie(&self) -> bool {
        self.pie
    }

    /// Set the load bias (run-time minus link address); clears the cache.
    pub fn set_bias(&mut self, bias: u64) {
        self.bias = bias;
        self.cache.clear();
    }

    /// Infers a position-independent program's load bias from the trace's
    /// function-entry records (`-finstrument-functions` passes `this_fn`,
    /// a function start, and `call_site`).
    ///
    /// The bias is page aligned, so an entry address and the start of the
    /// function it is differ by a multiple of 4096: every bias that turns
    /// some entry address into a function start is a candidate, and those
    /// doing so for the most distinct `entries` remain. Function starts
    /// often share their low 12 bits, so the remaining candidates are told
    /// apart by `calls`, (caller's entry address, call site) pairs of
    /// nested entries: with the right bias each call site lies inside its
    /// caller; with a wrong one, by chance. `other` addresses (sampled or
    /// manual PCs) landing inside any function break what ties remain.
    /// `None` when no candidate explains at least half the entries.
    pub fn infer_bias(&self, entries: &[u64], calls: &[(u64, u64)], other: &[u64]) -> Option<u64> {
        let mut starts: HashMap<u64, Vec<u64>> = HashMap::new();
        for f in &self.funcs {
            starts.entry(f.start & 0xfff).or_default().push(f.start);
        }
        let mut votes: HashMap<u64, usize> = HashMap::new();
        for &a in entries {
            for &s in starts.get(&(a & 0xfff)).into_iter().flatten() {
                *votes.entry(a.wrapping_sub(s)).or_default() += 1;
            }
        }
        let best = votes.values().copied().max()?;
        if best * 2 < entries.len() {
            return None;
        }
        let func_of = |a: u64| self.func_at(a).map(|f| f.start);
        let score = |bias: u64| {
            let nested = calls
                .iter()
                .filter(|&&(caller, site)| {
                    let f = func_of(caller.wrapping_sub(bias));
                    f.is_some() && f == func_of(site.wrapping_sub(bias))
                })
                .count();
            let inside = other
                .iter()
                .filter(|&&a| func_of(a.wrapping_sub(bias)).is_some())
                .count();
            (nested, inside)
        };
        votes
            .into_iter()
            .filter(|&(_, v)| v == best)
            .map(|(b, _)| (score(b), b))
            .max()
            .map(|(_, b)| b)
    }

    /// True if an ELF was loaded.
    pub fn has_elf(&self) -> bool {
        !self.funcs.is_empty() || self.dwarf.is_some()
    }

    /// Resolves `addr` (cached).
    pub fn resolve(&mut self, addr: u64) -> &Resolved {
        if !self.has_elf() {
            return &self.unknown;
        }
        if !self.cache.contains_key(&addr) {
            let r = self.lookup(addr.wrapping_sub(self.bias));
            self.cache.insert(addr, r);
        }
        &self.cache[&addr]
    }

    /// The function containing the link address `addr`.
    fn func_at(&self, addr: u64) -> Option<&Func> {
        let i = self.funcs.partition_point(|f| f.start <= addr);
        i.checked_sub(1)
            .map(|i| &self.funcs[i])
            .filter(|f| addr < f.end)
    }

    fn lookup(&mut self, addr: u64) -> Resolved {
        let Some(f) = self.func_at(addr) else {
            return Resolved::unknown();
        };
        let (name, offset) = (f.name.clone(), addr - f.start);
        let (mut file, mut line) = (None, 0);
        if let Some(d) = &self.dwarf {
            if let Ok(Some(loc)) = d.find_location(addr) {
                if let Some(fl) = loc.file {
                    let key = fl.to_string();
                    let arc = self
                        .files
                        .entry(key.clone())
                        .or_insert_with(|| Arc::from(key.as_str()))
                        .clone();
                    file = Some(arc);
                }
                line = loc.line.unwrap_or(0);
            }
        }
        Resolved {
            func: Some(name),
            offset,
            file,
            line,
        }
    }

    /// A short label: `func`, `func+0x10`, or `0x1234` when unresolved.
    pub fn label(&mut self, addr: u64) -> String {
        let r = self.resolve(addr);
        match &r.func {
            Some(f) if r.offset == 0 => f.to_string(),
            Some(f) => format!("{f}+0x{:x}", r.offset),
            None => format!("0x{addr:x}"),
        }
    }

    /// The function name, or `0x...` for an unresolved address.
    pub fn func_name(&mut self, addr: u64) -> Arc<str> {
        match &self.resolve(addr).func {
            Some(f) => f.clone(),
            None => Arc::from(format!("0x{addr:x}")),
        }
    }
}

fn demangle(name: &str) -> String {
    if let Some(d) = addr2line::demangle(name, addr2line::gimli::DW_LANG_Rust) {
        return d;
    }
    if let Some(d) = addr2line::demangle(name, addr2line::gimli::DW_LANG_C_plus_plus) {
        return d;
    }
    name.to_string()
}
