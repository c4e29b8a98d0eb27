//! Address -> function, file and line, from an ELF's symbol table and its
//! DWARF line tables (object + addr2line; nothing is shelled out).

use crate::fastmap::FastMap;
use anyhow::{Context, Result};
use object::{
    Architecture, Object, ObjectKind, ObjectSection, ObjectSymbol, SectionKind, SymbolKind,
};
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
    /// The code: text sections (link address, bytes) and the instruction
    /// set, to check call sites when inferring the load bias.
    code: Code,
}

/// The executable sections of an ELF and its instruction set.
#[derive(Default)]
struct Code {
    arch: Option<Architecture>,
    text: Vec<(u64, Vec<u8>)>,
}

impl Code {
    /// `len` bytes of code from link address `addr`.
    fn bytes(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.text.iter().find_map(|(start, data)| {
            let off = usize::try_from(addr.checked_sub(*start)?).ok()?;
            data.get(off..off.checked_add(len)?)
        })
    }

    /// Whether the instruction before link address `site` (a return
    /// address) is a direct call to `target`: x86-64 `call rel32`, RISC-V
    /// `jal ra` or `auipc`+`jalr ra`. False for other instruction sets and
    /// indirect calls.
    fn calls(&self, site: u64, target: u64) -> bool {
        let word = |a: u64| {
            self.bytes(a, 4)
                .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
        };
        match self.arch {
            Some(Architecture::X86_64) => self.bytes(site.wrapping_sub(5), 5).is_some_and(|b| {
                let rel = i32::from_le_bytes(b[1..5].try_into().expect("4 bytes"));
                b[0] == 0xe8 && site.wrapping_add(rel as i64 as u64) == target
            }),
            Some(Architecture::Riscv64) => {
                // The instruction before the site, and the one before that.
                let (last_at, pair_at) = (site.wrapping_sub(4), site.wrapping_sub(8));
                let Some(j) = word(last_at) else {
                    return false;
                };
                // jal ra, imm (J-type).
                let jal = j & 0xfff == 0x0ef && {
                    let imm = ((j >> 31) as u64) << 20
                        | ((j >> 21) as u64 & 0x3ff) << 1
                        | ((j >> 20) as u64 & 1) << 11
                        | ((j >> 12) as u64 & 0xff) << 12;
                    last_at.wrapping_add(((imm << 43) as i64 >> 43) as u64) == target
                };
                // auipc rX, hi; jalr ra, lo(rX).
                let auipc_jalr = word(pair_at).is_some_and(|a| {
                    a & 0x7f == 0x17
                        && j & 0x707f == 0x67
                        && j >> 7 & 0x1f == 1
                        && j >> 15 & 0x1f == a >> 7 & 0x1f
                        && pair_at
                            .wrapping_add((a & 0xffff_f000) as i32 as i64 as u64)
                            .wrapping_add((j as i32 >> 20) as i64 as u64)
                            == target
                });
                jal || auipc_jalr
            }
            _ => false,
        }
    }
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
            code: Code::default(),
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
        let pie = file.kind() == ObjectKind::Dynamic;
        // Only a PIE's load bias is inferred from its code: no copy of the
        // text otherwise.
        let code = if pie {
            Code {
                arch: Some(file.architecture()),
                text: file
                    .sections()
                    .filter(|s| s.kind() == SectionKind::Text)
                    .filter_map(|s| Some((s.address(), s.data().ok()?.to_vec())))
                    .collect(),
            }
        } else {
            Code::default()
        };
        Ok(Symbolizer {
            funcs,
            pie,
            bias: 0,
            dwarf,
            cache: FastMap::default(),
            unknown: Resolved::unknown(),
            files: HashMap::new(),
            code,
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
    /// apart: first by `sites`, (entry address, call site) pairs: with the
    /// right bias the instruction before a call site is a direct call to
    /// the function entered (x86-64, RISC-V; a function with the same low
    /// 12 bits as the one traced, and large enough to hold its call sites,
    /// passed the other tests); then by `calls`, (caller's entry address,
    /// call site) pairs of nested entries: with the right bias each call
    /// site lies inside its caller; with a wrong one, by chance. `other`
    /// addresses (sampled or manual PCs) landing inside any function break
    /// what ties remain. `None` when no candidate explains at least half
    /// the entries.
    pub fn infer_bias(
        &self,
        entries: &[u64],
        sites: &[(u64, u64)],
        calls: &[(u64, u64)],
        other: &[u64],
    ) -> Option<u64> {
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
            // The trace drops bit 0 of addresses: an x86-64 return
            // address may be one more than the call site recorded.
            let direct = sites
                .iter()
                .filter(|&&(f, site)| {
                    let (site, f) = (site.wrapping_sub(bias), f.wrapping_sub(bias));
                    self.code.calls(site, f) || self.code.calls(site | 1, f)
                })
                .count();
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
            (direct, nested, inside)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A symbolizer for hand-made code: `funcs` (start, end, name) and one
    /// text section of `len` zero bytes at `base`, then `patch`es.
    fn symbolizer(
        arch: Architecture,
        funcs: &[(u64, u64, &str)],
        base: u64,
        len: usize,
        patch: &[(u64, &[u8])],
    ) -> Symbolizer {
        let mut text = vec![0u8; len];
        for &(at, bytes) in patch {
            let off = (at - base) as usize;
            text[off..off + bytes.len()].copy_from_slice(bytes);
        }
        let mut s = Symbolizer::none();
        s.pie = true;
        s.funcs = funcs
            .iter()
            .map(|&(start, end, name)| Func {
                start,
                end,
                name: Arc::from(name),
            })
            .collect();
        s.code = Code {
            arch: Some(arch),
            text: vec![(base, text)],
        };
        s
    }

    /// `call rel32` at `at` to `target`.
    fn x86_call(at: u64, target: u64) -> Vec<u8> {
        let rel = target.wrapping_sub(at + 5) as i32;
        let mut b = vec![0xe8];
        b.extend_from_slice(&rel.to_le_bytes());
        b
    }

    /// `jal ra, target` at `at`.
    fn rv_jal(at: u64, target: u64) -> [u8; 4] {
        let imm = target.wrapping_sub(at) as u32;
        let w = (imm >> 20 & 1) << 31
            | (imm >> 1 & 0x3ff) << 21
            | (imm >> 11 & 1) << 20
            | (imm >> 12 & 0xff) << 12
            | 1 << 7
            | 0x6f;
        w.to_le_bytes()
    }

    /// `auipc rd, hi; jalr ra, lo(rd)` at `at` to `target`.
    fn rv_auipc_jalr(at: u64, target: u64, rd: u32) -> [u8; 8] {
        let off = target.wrapping_sub(at) as i64;
        let hi = ((off + 0x800) >> 12) as u32;
        let lo = (off - ((hi as i32 as i64) << 12)) as u32 & 0xfff;
        let auipc = hi << 12 | rd << 7 | 0x17;
        let jalr = lo << 20 | rd << 15 | 1 << 7 | 0x67;
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&auipc.to_le_bytes());
        b[4..].copy_from_slice(&jalr.to_le_bytes());
        b
    }

    #[test]
    fn direct_calls_are_recognised_by_their_encoding() {
        let x = symbolizer(
            Architecture::X86_64,
            &[],
            0x1000,
            0x100,
            &[(0x1010, &x86_call(0x1010, 0x1080))],
        );
        assert!(x.code.calls(0x1015, 0x1080));
        assert!(!x.code.calls(0x1015, 0x1084), "another target");
        assert!(!x.code.calls(0x1016, 0x1080), "not after the call");
        assert!(!x.code.calls(0x1004, 0x1080), "no call there (zeros)");
        assert!(!x.code.calls(0x2000, 0x1080), "outside the text");
        let jal = rv_jal(0x1020, 0x1000);
        let far = rv_auipc_jalr(0x1040, 0x1000u64.wrapping_sub(0x12_3456), 5);
        let near = rv_auipc_jalr(0x1060, 0x10f0, 1);
        let r = symbolizer(
            Architecture::Riscv64,
            &[],
            0x1000,
            0x100,
            &[(0x1020, &jal), (0x1040, &far), (0x1060, &near)],
        );
        assert!(r.code.calls(0x1024, 0x1000), "jal ra backwards");
        assert!(
            r.code.calls(0x1048, 0x1000u64.wrapping_sub(0x12_3456)),
            "auipc t0 + jalr ra"
        );
        assert!(r.code.calls(0x1068, 0x10f0), "auipc ra + jalr ra");
        assert!(!r.code.calls(0x1024, 0x1004));
        assert!(!r.code.calls(0x1048, 0x1000));
        // The same bytes mean nothing on another instruction set.
        let other = symbolizer(Architecture::Aarch64, &[], 0x1000, 0x100, &[(0x1020, &jal)]);
        assert!(!other.code.calls(0x1024, 0x1000));
    }

    /// One function traced (fib) and another at the same page offset, large
    /// enough to hold fib's call sites: both biases explain the entry and
    /// the nesting; the direct call before the call site tells them apart
    /// (the host fib PIE resolved to a Rust function before).
    #[test]
    fn one_traced_function_is_told_from_its_page_offset_twin_by_its_calls() {
        let (twin, fib, main) = (0x1e30, 0x2e30, 0x2c80);
        // fib calls itself; the return address 0x2e5f is recorded as 0x2e5e
        // (the trace drops bit 0).
        let call = x86_call(0x2e5a, fib);
        let funcs = [
            (twin, twin + 0xd0, "twin"),
            (main, fib, "main"),
            (fib, fib + 0x60, "fib"),
        ];
        let with = |patch: &[(u64, &[u8])]| {
            symbolizer(Architecture::X86_64, &funcs, 0x1000, 0x2000, patch)
        };
        let bias = 0x5555_5555_4000;
        let entries = [fib + bias];
        let sites = [(fib + bias, 0x2e5e + bias)];
        let calls = [(fib + bias, 0x2e5e + bias)];
        let s = with(&[(0x2e5a, &call)]);
        assert_eq!(s.infer_bias(&entries, &sites, &calls, &[]), Some(bias));
        // Without the call the two biases tie, and the twin's (larger)
        // wins: what the check is for.
        let plain = with(&[]);
        assert_eq!(
            plain.infer_bias(&entries, &sites, &calls, &[]),
            Some(bias + (fib - twin))
        );
    }
}
