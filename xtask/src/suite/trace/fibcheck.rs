//! SiFive's fib example's trace checked against fib itself: the call tree against
//! the recursion, the counts against each other and against fib's
//! disassembly (instructions per call, exact under icount). Used for the
//! Linux guest's traces (`super::linux`) and the bare-metal ones
//! (`super::baremetal`), decoded both by the library and by the `hpmtrace`
//! CLI.

use crate::build::disasm::{self, parse_disassembly, Insn};
use crate::suite::{print_check, Verdict};
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// One fib trace to check.
pub struct Trace<'a> {
    /// The .rtd bytes (also written to `rtd`).
    pub bytes: &'a [u8],
    pub rtd: &'a Path,
    /// The program, for symbols.
    pub elf: &'a Path,
    /// The root call's argument (the program printed fib(n)).
    pub n: u64,
    /// The `hpmtrace` binary.
    pub cli: &'a Path,
    /// Where work files go.
    pub dir: &'a Path,
    pub decode: hpmtrace::decode::DecodeConfig,
    /// The CSRs the header must name for cycles and instructions (`None`:
    /// any counter CSR, as the platform's SBI assigns them).
    pub csrs: Option<(u16, u16)>,
}

/// What the checks found, for callers that check more.
pub struct Analysis {
    pub header: Option<hpmtrace::format::Header>,
    pub records: Vec<Rec>,
    pub tree: Tree,
    /// Records whose cycles or instructions delta is zero.
    pub zero_deltas: usize,
    pub sum_cycles: u64,
    pub sum_instructions: u64,
}

/// Decode `t` with the library and the CLI and run every check that holds
/// for any fib trace under icount: header, balance and nesting, the call
/// tree's shape, deltas adding up, cycles = instructions, timestamps, and
/// instructions per call against the disassembly.
pub fn check_trace(c: &mut Checks, t: &Trace) -> Result<Analysis> {
    let paths = FibPaths::derive(t.elf)?;
    let paths = &paths;
    // Header and record count with the library.
    let lib = decode_with_library(t.bytes, t.decode);
    let slot = |code: u16| {
        lib.headers.first().and_then(|h| {
            h.iter()
                .find(|(_, d)| d.event == hpmtrace::format::Event::General { code })
                .map(|(i, d)| (i, d.info.csr))
        })
    };
    let (cyc, ins) = (slot(1), slot(2));
    let names: Vec<String> = lib
        .headers
        .first()
        .map(|h| {
            h.iter()
                .map(|(i, d)| format!("{i}:{:?}/csr {:#x}", d.event, d.info.csr))
                .collect()
        })
        .unwrap_or_default();
    let csr_ok = |got: Option<(u8, u16)>, want: Option<u16>| match (got, want) {
        (Some((_, csr)), Some(w)) => csr == w,
        (Some((_, csr)), None) => (0xc00..=0xc1f).contains(&csr),
        (None, _) => false,
    };
    let want = |w: Option<u16>| w.map_or("a counter CSR".to_string(), |w| format!("CSR {w:#x}"));
    c.check(
        "one header naming hardware cycles (type 0 code 1) and instructions (type 0 code 2), Delta counts",
        lib.headers.len() == 1
            && lib.errors == 0
            && csr_ok(cyc, t.csrs.map(|c| c.0))
            && csr_ok(ins, t.csrs.map(|c| c.1))
            && lib.headers[0].count_type == hpmtrace::format::CountType::Delta,
        &format!(
            "1 header, no decoding error, General{{code:1}} in {}, General{{code:2}} in {}",
            want(t.csrs.map(|c| c.0)),
            want(t.csrs.map(|c| c.1))
        ),
        &format!(
            "{} header(s), {} errors, counters [{}]",
            lib.headers.len(),
            lib.errors,
            names.join(", ")
        ),
    );
    let (Some((cyc, _)), Some((ins, _))) = (cyc, ins) else {
        bail!("the header has no hardware cycles/instructions counter");
    };

    // Records, symbolized by the CLI with the fib ELF.
    let jsonl = t.dir.join("trace.jsonl");
    let src_bits = t.decode.nexus.src_bits.to_string();
    let channel = t.decode.channel.to_string();
    let common = ["-q", "--src-bits", &src_bits, "--channel", &channel];
    crate::host::run(
        Command::new(t.cli)
            .args(["decode", "-f", "json"])
            .args(common)
            .arg("--elf")
            .arg(t.elf)
            .arg(t.rtd)
            .arg("-o")
            .arg(&jsonl),
    )?;
    let report = crate::host::output(
        Command::new(t.cli)
            .arg("report")
            .args(common)
            .arg("--elf")
            .arg(t.elf)
            .arg(t.rtd),
    )?;
    let text = std::fs::read_to_string(&jsonl)?;
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let v: Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not JSON", jsonl.display(), i + 1))?;
        if v["type"] == "record" {
            records.push(Rec::from_json(&v, cyc, ins)?);
        }
    }
    c.check(
        "CLI and library decode the same number of records",
        records.len() as u64 == lib.records,
        &format!("{} (library)", lib.records),
        &format!("{} (hpmtrace decode -f json)", records.len()),
    );

    // The call tree against fib's recursion.
    let want_calls = calls(t.n);
    let tree = Tree::build(&records, t.n);
    let enters = records.iter().filter(|r| r.enter).count() as u64;
    let exits = records.len() as u64 - enters;
    c.check(
        "enter/exit records balance and nest; every one symbolizes to fib",
        tree.problems.is_empty() && enters == exits && records.iter().all(|r| r.function == "fib"),
        "each exit closes the innermost open call (same function and call site), none left open, function name \"fib\" from the ELF",
        &format!(
            "{enters} enters, {exits} exits, {} open at the end, problems: {:?}",
            tree.open,
            &tree.problems[..tree.problems.len().min(3)]
        ),
    );
    c.check(
        &format!("number of fib calls = calls made by fib({})", t.n),
        enters == want_calls && tree.nodes.len() as u64 == want_calls,
        &format!(
            "C({}) = 2*F({})-1 = {want_calls} (C(k) = 1 + C(k-1) + C(k-2), C(0) = C(1) = 1)",
            t.n,
            t.n + 1
        ),
        &format!("{enters} calls"),
    );
    let (shape_ok, shape) = tree.shape(paths);
    c.check(
        "call tree is fib's recursion: node f has children f-2 then f-1 (f >= 2), leaves f < 2, inner call sites from the disassembly",
        shape_ok,
        &format!("root f = {}; children called from {:#x} then {:#x}", t.n, paths.site1, paths.site2),
        &shape,
    );

    // Deltas.
    let bad: Vec<usize> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.cycles.delta == 0 || r.instructions.delta == 0)
        .map(|(i, _)| i)
        .collect();
    c.check(
        "every record's cycles and instructions deltas are positive",
        bad.is_empty() && !records.is_empty(),
        "delta > 0 on all records",
        &format!(
            "{} of {} records have a zero/absent delta (first: {:?})",
            bad.len(),
            records.len(),
            bad.first()
        ),
    );
    let sum_c: u64 = records.iter().map(|r| r.cycles.delta).sum();
    let sum_i: u64 = records.iter().map(|r| r.instructions.delta).sum();
    let last = records
        .last()
        .map(|r| (r.cycles.value, r.instructions.value))
        .unwrap_or((0, 0));
    let counted = report_totals(&report);
    let (rep_c, rep_i) = (
        counted.get("cycles").copied(),
        counted.get("instructions").copied(),
    );
    c.check(
        "deltas add up to the trace-wide totals",
        (sum_c, sum_i) == last && rep_c == Some(sum_c) && rep_i == Some(sum_i),
        "sum of deltas = last record's running reading = `hpmtrace report` \"Counted\" total (cycles, instructions)",
        &format!("sums ({sum_c}, {sum_i}), last reading {last:?}, report ({rep_c:?}, {rep_i:?})"),
    );
    let unequal = records
        .iter()
        .filter(|r| r.cycles.delta != r.instructions.delta)
        .count();
    c.check(
        "cycles = instructions on every record (icount: one cycle per instruction, both count the same modes)",
        unequal == 0 && sum_i > 0,
        "0 records with cycles delta != instructions delta",
        &format!("{unequal} of {} differ", records.len()),
    );
    let ts_back = records
        .windows(2)
        .filter(|w| matches!((w[0].timestamp, w[1].timestamp), (Some(a), Some(b)) if b < a))
        .count();
    let no_ts = records.iter().filter(|r| r.timestamp.is_none()).count();
    c.check(
        "timestamps present and non-decreasing",
        ts_back == 0 && no_ts == 0,
        "every record timestamped, never earlier than the previous one",
        &format!("{no_ts} without timestamp, {ts_back} going back"),
    );

    per_call_checks(c, &records, &tree, paths);
    Ok(Analysis {
        header: lib.headers.first().copied(),
        zero_deltas: bad.len(),
        records,
        tree,
        sum_cycles: sum_c,
        sum_instructions: sum_i,
    })
}

/// Share of the edges of one kind whose instruction delta must equal the
/// kind's most common value: the library's hook is straight-line code
/// between its counter reads except when a buffer fills (the example's
/// trace stays far below the staging buffer), so under icount nearly all
/// edges are identical.
const MODAL_SHARE_MIN: f64 = 0.9;
/// Upper bound on the library's own user instructions between two counter
/// reads (rest of one hook + start of the next): its hot path stages a few
/// words, and a group read() is one libc wrapper. Far above the expected
/// value; catching a library that, say, encodes or allocates per record.
const OVERHEAD_MAX: i64 = 5000;

#[derive(Default)]
pub struct Checks {
    /// Printed with every check, e.g. `trace /fib-hw`.
    pub label: String,
    pub passed: u32,
    pub failed: Vec<String>,
}

impl Checks {
    pub fn check(&mut self, name: &str, ok: bool, expected: &str, got: &str) {
        if ok {
            print_check(&self.name(name), Verdict::Pass, expected, got);
            self.passed += 1;
        } else {
            self.fail(name, expected, got);
        }
    }

    pub fn fail(&mut self, name: &str, expected: &str, got: &str) {
        let label = self.name(name);
        print_check(&label, Verdict::Fail { context: None }, expected, got);
        self.failed.push(label);
    }

    fn name(&self, check: &str) -> String {
        format!("[{}] {check}", self.label)
    }
}

/// (n, F(n)) from the example's "fib(20) = 6765".
pub fn parse_fib_line(stdout: &str) -> Option<(u64, u64)> {
    let l = stdout.lines().find(|l| l.starts_with("fib("))?;
    let (arg, val) = l.strip_prefix("fib(")?.split_once(") = ")?;
    Some((arg.trim().parse().ok()?, val.trim().parse().ok()?))
}

/// F(n) by iteration.
pub fn fib(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a.wrapping_add(b));
    }
    a
}

/// Calls the recursive fib(n) makes, itself included: C(0) = C(1) = 1,
/// C(k) = 1 + C(k-2) + C(k-1).
pub fn calls(n: u64) -> u64 {
    let (mut a, mut b) = (1u64, 1u64); // C(k), C(k+1)
    for _ in 0..n {
        (a, b) = (b, 1 + a + b);
    }
    a
}

struct LibDecode {
    headers: Vec<hpmtrace::format::Header>,
    records: u64,
    errors: u64,
}

fn decode_with_library(bytes: &[u8], cfg: hpmtrace::decode::DecodeConfig) -> LibDecode {
    use hpmtrace::decode::{decode_stream, Output};
    let mut headers = Vec::new();
    let stats = decode_stream(
        bytes,
        cfg,
        &mut |o| {
            if let Output::Header(h) = o {
                headers.push(h.header);
            }
        },
        &mut |_| {},
    );
    LibDecode {
        headers,
        records: stats.records,
        errors: stats.errors,
    }
}

/// `Counted (all cores): cycles N, instructions M, ...` of `hpmtrace report`.
fn report_totals(report: &str) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    if let Some(l) = report
        .lines()
        .find_map(|l| l.strip_prefix("Counted (all cores): "))
    {
        for part in l.split(", ") {
            if let Some((k, v)) = part.rsplit_once(' ') {
                if let Ok(v) = v.parse() {
                    m.insert(k.to_string(), v);
                }
            }
        }
    }
    m
}

#[derive(Clone, Copy, Default)]
pub struct Count {
    pub delta: u64,
    pub value: u64,
}

/// One decoded record, as the CLI printed it.
pub struct Rec {
    pub enter: bool,
    pub function: String,
    pub addr: u64,
    /// Call site (enter) / return-to address (exit).
    pub site: u64,
    pub timestamp: Option<u64>,
    pub cycles: Count,
    pub instructions: Count,
}

fn hex(v: &Value) -> Option<u64> {
    u64::from_str_radix(v.as_str()?.strip_prefix("0x")?, 16).ok()
}

impl Rec {
    fn from_json(v: &Value, cyc: u8, ins: u8) -> Result<Rec> {
        let enter = match v["kind"].as_str() {
            Some("enter") => true,
            Some("exit") => false,
            k => bail!("unexpected record kind {k:?} at offset {}", v["offset"]),
        };
        let count = |slot: u8| -> Count {
            v["counters"]
                .as_array()
                .and_then(|a| a.iter().find(|c| c["index"] == slot))
                .map(|c| Count {
                    delta: c["delta"].as_u64().unwrap_or(0),
                    value: c["value"].as_u64().unwrap_or(0),
                })
                .unwrap_or_default()
        };
        Ok(Rec {
            enter,
            function: v["location"]["function"].as_str().unwrap_or("").to_string(),
            addr: hex(&v["location"]["address"]).context("record without address")?,
            site: hex(&v["location2"]["address"]).unwrap_or(0),
            timestamp: v["timestamp"].as_u64(),
            cycles: count(cyc),
            instructions: count(ins),
        })
    }
}

/// The call tree the records describe.
pub struct Tree {
    /// Per call: (argument if known, children, call site).
    nodes: Vec<Node>,
    /// Per record: the call it belongs to.
    rec_node: Vec<usize>,
    problems: Vec<String>,
    open: usize,
}

struct Node {
    arg: Option<u64>,
    children: Vec<usize>,
    site: u64,
}

impl Tree {
    fn build(records: &[Rec], root_arg: u64) -> Tree {
        let mut t = Tree {
            nodes: Vec::new(),
            rec_node: Vec::new(),
            problems: Vec::new(),
            open: 0,
        };
        let mut stack: Vec<(usize, u64)> = Vec::new();
        for (i, r) in records.iter().enumerate() {
            if r.enter {
                let id = t.nodes.len();
                t.nodes.push(Node {
                    arg: None,
                    children: Vec::new(),
                    site: r.site,
                });
                match stack.last() {
                    Some(&(p, _)) => t.nodes[p].children.push(id),
                    None if id > 0 => t.problems.push(format!("record {i}: a second root call")),
                    None => {}
                }
                stack.push((id, r.addr));
                t.rec_node.push(id);
            } else {
                match stack.pop() {
                    Some((id, addr)) if addr == r.addr && t.nodes[id].site == r.site => {
                        t.rec_node.push(id)
                    }
                    Some((id, addr)) => {
                        t.problems.push(format!(
                            "record {i}: exit of {:#x} from {:#x} closes {addr:#x} called from {:#x}",
                            r.addr, r.site, t.nodes[id].site
                        ));
                        t.rec_node.push(id);
                    }
                    None => {
                        t.problems
                            .push(format!("record {i}: exit with no open call"));
                        t.rec_node.push(usize::MAX);
                    }
                }
            }
        }
        t.open = stack.len();
        if t.open > 0 {
            t.problems.push(format!("{} calls never exit", t.open));
        }
        // Arguments top-down: fib(f) calls fib(f-2), then fib(f-1).
        if !t.nodes.is_empty() {
            t.nodes[0].arg = Some(root_arg);
            for id in 0..t.nodes.len() {
                if let (Some(f @ 2..), &[first, second]) =
                    (t.nodes[id].arg, &t.nodes[id].children[..])
                {
                    t.nodes[first].arg = Some(f - 2);
                    t.nodes[second].arg = Some(f - 1);
                }
            }
        }
        t
    }

    /// Whether the tree is exactly fib's, call sites included.
    fn shape(&self, p: &FibPaths) -> (bool, String) {
        let mut bad = Vec::new();
        for (id, n) in self.nodes.iter().enumerate() {
            let Some(f) = n.arg else {
                bad.push(format!("call {id}: argument unknown"));
                continue;
            };
            let want = if f >= 2 { 2 } else { 0 };
            if n.children.len() != want {
                bad.push(format!("call {id} fib({f}): {} children", n.children.len()));
            } else if want == 2 {
                let (a, b) = (&self.nodes[n.children[0]], &self.nodes[n.children[1]]);
                if a.site != p.site1 || b.site != p.site2 {
                    bad.push(format!(
                        "call {id} fib({f}): children called from {:#x}, {:#x}",
                        a.site, b.site
                    ));
                }
            }
        }
        let leaves = self.nodes.iter().filter(|n| n.children.is_empty()).count();
        (
            bad.is_empty() && !self.nodes.is_empty(),
            format!(
                "{} calls, {leaves} leaves, {} mismatches {:?}",
                self.nodes.len(),
                bad.len(),
                &bad[..bad.len().min(3)]
            ),
        )
    }

    /// fib's own instructions between the trace-on reading and the last
    /// record: every call's prologue, body and epilogue, but the root's
    /// epilogue (after its exit record).
    pub fn fib_instructions(&self, p: &FibPaths) -> u64 {
        let per_call: u64 = self
            .nodes
            .iter()
            .map(|n| {
                p.prologue
                    + p.epilogue
                    + match n.arg {
                        Some(0) => p.leaf0,
                        Some(1) => p.leaf1,
                        _ => p.before1 + p.between + p.after2,
                    }
            })
            .sum();
        per_call.saturating_sub(p.epilogue)
    }
}

/// What lies between two consecutive counter readings.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Edge {
    /// Enter and exit of a leaf fib(0).
    Leaf0,
    /// Enter and exit of a leaf fib(1).
    Leaf1,
    /// A call's enter and its first child's enter.
    EnterEnter,
    /// The first child's exit and the second child's enter.
    ExitEnter,
    /// The second child's exit and its parent's exit.
    ExitExit,
}

fn per_call_checks(c: &mut Checks, records: &[Rec], tree: &Tree, p: &FibPaths) {
    let mut by: HashMap<Edge, Vec<u64>> = HashMap::new();
    let mut other = 0;
    for i in 1..records.len() {
        let (a, b) = (&records[i - 1], &records[i]);
        let (na, nb) = (tree.rec_node[i - 1], tree.rec_node[i]);
        let node = |id: usize| tree.nodes.get(id);
        let edge = match (a.enter, b.enter) {
            (true, false) if na == nb => match node(na).and_then(|n| n.arg) {
                Some(0) => Some(Edge::Leaf0),
                Some(1) => Some(Edge::Leaf1),
                _ => None,
            },
            (true, true) if node(na).is_some_and(|n| n.children.first() == Some(&nb)) => {
                Some(Edge::EnterEnter)
            }
            (false, true) => Some(Edge::ExitEnter),
            (false, false) => Some(Edge::ExitExit),
            _ => None,
        };
        match edge {
            Some(e) => by.entry(e).or_default().push(b.instructions.delta),
            None => other += 1,
        }
    }
    let modal = |e: Edge| -> Option<(i64, f64)> {
        let v = by.get(&e)?;
        let mut counts: HashMap<u64, usize> = HashMap::new();
        for &x in v {
            *counts.entry(x).or_default() += 1;
        }
        let (&m, &k) = counts
            .iter()
            .max_by_key(|(&val, &k)| (k, std::cmp::Reverse(val)))?;
        Some((m as i64, k as f64 / v.len() as f64))
    };
    let edges = [
        Edge::Leaf0,
        Edge::Leaf1,
        Edge::EnterEnter,
        Edge::ExitEnter,
        Edge::ExitExit,
    ];
    let m: Vec<Option<(i64, f64)>> = edges.iter().map(|&e| modal(e)).collect();
    let desc: Vec<String> = edges
        .iter()
        .zip(&m)
        .map(|(e, m)| match m {
            Some((v, s)) => format!("{e:?} {v} ({:.1}% of {})", s * 100.0, by[e].len()),
            None => format!("{e:?} none"),
        })
        .collect();
    let all: Option<Vec<(i64, f64)>> = m.iter().copied().collect();
    let Some(all) = all else {
        c.fail(
            "instructions per call against the disassembly",
            "all five edge kinds present",
            &desc.join(", "),
        );
        return;
    };
    let [l0, l1, ee, xe, xx] = [all[0].0, all[1].0, all[2].0, all[3].0, all[4].0];
    let steady = all.iter().all(|&(v, s)| s >= MODAL_SHARE_MIN && v > 0) && other == 0;
    c.check(
        "instruction deltas between consecutive records are steady per kind of edge",
        steady,
        &format!(
            ">= {:.0}% of each kind at its most common (positive) value, every edge classified",
            MODAL_SHARE_MIN * 100.0
        ),
        &format!("{}; {other} unclassified", desc.join(", ")),
    );
    // Library code adds a constant per edge: the rest of one hook after its
    // counter read (T_enter or T_exit) plus the start of the next hook up
    // to its read (H_enter or H_exit). Differences of edges with the same
    // hooks, and Leaf0 + ExitEnter - EnterEnter - ExitExit (both sides
    // T_e + H_x + T_x + H_e), leave only fib's own instructions.
    let (pl, pee, pxe, pxx) = (
        p.leaf0 as i64,
        (p.before1 + p.prologue) as i64,
        (p.epilogue + p.between + p.prologue) as i64,
        (p.epilogue + p.after2) as i64,
    );
    let want_diff = p.leaf1 as i64 - pl;
    c.check(
        "leaf fib(1) - leaf fib(0) instructions = their path difference in the disassembly",
        l1 - l0 == want_diff,
        &format!("{want_diff} ({} - {})", p.leaf1, p.leaf0),
        &format!("{} ({l1} - {l0})", l1 - l0),
    );
    let want_mix = pl + pxe - pee - pxx;
    c.check(
        "Leaf0 + ExitEnter - EnterEnter - ExitExit instructions = fib's paths (library overheads cancel)",
        l0 + xe - ee - xx == want_mix,
        &format!("{want_mix} ({pl} + {pxe} - {pee} - {pxx}, from the disassembly)"),
        &format!("{} ({l0} + {xe} - {ee} - {xx})", l0 + xe - ee - xx),
    );
    let over = [l0 - pl, ee - pee, xe - pxe, xx - pxx];
    c.check(
        "library instructions between two readings are positive and small",
        over.iter().all(|&o| o > 0 && o <= OVERHEAD_MAX),
        &format!("each of enter->exit, enter->enter, exit->enter, exit->exit in 1..={OVERHEAD_MAX}"),
        &format!(
            "enter->exit {}, enter->enter {}, exit->enter {}, exit->exit {} (a leaf call costs {} instructions between its records, {} of them fib's)",
            over[0], over[1], over[2], over[3], l0, pl
        ),
    );
}

/// Instruction counts of fib's paths, from its disassembly: each segment
/// runs from the return of one call (hook or fib) up to and including the
/// next call instruction (or `ret`).
#[derive(Debug)]
pub struct FibPaths {
    /// Entry up to the call of __cyg_profile_func_enter.
    pub prologue: u64,
    /// After the enter hook, up to the exit hook call, for f = 0 and 1.
    pub leaf0: u64,
    pub leaf1: u64,
    /// f >= 2: after the enter hook up to the first `call fib`, between
    /// the two calls, after the second up to the exit hook call.
    pub before1: u64,
    pub between: u64,
    pub after2: u64,
    /// After the exit hook, up to and including `ret`.
    pub epilogue: u64,
    /// Return addresses of the two recursive calls (the call sites the
    /// children's records carry).
    pub site1: u64,
    pub site2: u64,
}

#[derive(Debug, PartialEq)]
enum Stop {
    Enter,
    Exit,
    /// A recursive call; its return address.
    Fib(u64),
    Ret,
}

impl FibPaths {
    pub fn derive(elf: &Path) -> Result<FibPaths> {
        let out = disasm::disassemble(elf, "fib")?;
        let insns = parse_disassembly(&out);
        Self::from_insns(&insns)
            .with_context(|| format!("cannot derive fib's paths from its disassembly:\n{out}"))
    }

    fn from_insns(insns: &[Insn]) -> Result<FibPaths> {
        if insns.is_empty() {
            bail!("no instructions");
        }
        let mut per_arg = Vec::new();
        for f in [0i64, 1, 2, 3] {
            let mut regs = HashMap::from([("a0".to_string(), f)]);
            let mut segs = Vec::new();
            let mut at = 0;
            loop {
                let (n, stop, next) = walk(insns, at, &mut regs)?;
                let done = stop == Stop::Ret;
                segs.push((n, stop));
                if done {
                    break;
                }
                at = next;
                if segs.len() > 8 {
                    bail!("fib({f}) makes more than 8 calls");
                }
            }
            per_arg.push(segs);
        }
        let shape = |segs: &Vec<(u64, Stop)>| -> Vec<u64> {
            segs.iter()
                .map(|(_, s)| match s {
                    Stop::Enter => 0,
                    Stop::Exit => 1,
                    Stop::Fib(_) => 2,
                    Stop::Ret => 3,
                })
                .collect()
        };
        let (s0, s1, s2, s3) = (&per_arg[0], &per_arg[1], &per_arg[2], &per_arg[3]);
        if shape(s0) != [0, 1, 3] || shape(s1) != [0, 1, 3] || shape(s2) != [0, 2, 2, 1, 3] {
            bail!("unexpected call sequence: f=0 {s0:?}, f=1 {s1:?}, f=2 {s2:?}");
        }
        let counts = |s: &Vec<(u64, Stop)>| s.iter().map(|(n, _)| *n).collect::<Vec<_>>();
        if counts(s2) != counts(s3) {
            bail!("fib(2) and fib(3) take different paths: {s2:?} vs {s3:?}");
        }
        if s0[0].0 != s1[0].0 || s0[0].0 != s2[0].0 || s0[2].0 != s1[2].0 || s0[2].0 != s2[4].0 {
            bail!("prologue or epilogue depends on the argument: {s0:?} {s1:?} {s2:?}");
        }
        let (Stop::Fib(site1), Stop::Fib(site2)) = (&s2[1].1, &s2[2].1) else {
            unreachable!("shape checked above")
        };
        Ok(FibPaths {
            prologue: s0[0].0,
            leaf0: s0[1].0,
            leaf1: s1[1].0,
            before1: s2[1].0,
            between: s2[2].0,
            after2: s2[3].0,
            epilogue: s0[2].0,
            site1: *site1,
            site2: *site2,
        })
    }
}

const CALLER_SAVED: [&str; 16] = [
    "ra", "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "t0", "t1", "t2", "t3", "t4", "t5", "t6",
];

/// Execute from instruction `at` with the known register values `regs`
/// until a call or `ret`: (instructions executed, the stop, index after
/// the stop). Only what fib's control flow needs is modelled: moves,
/// immediates and additions into registers; any other instruction makes
/// its destination unknown, and a branch on an unknown value is an error.
fn walk(
    insns: &[Insn],
    mut at: usize,
    regs: &mut HashMap<String, i64>,
) -> Result<(u64, Stop, usize)> {
    let mut n = 0u64;
    let get = |regs: &HashMap<String, i64>, r: &str| -> Option<i64> {
        if r == "zero" {
            Some(0)
        } else {
            regs.get(r).copied()
        }
    };
    let index_of = |i: &Insn| -> Result<usize> {
        let a = i
            .target
            .with_context(|| format!("no branch target at {:#x}", i.addr))?;
        insns
            .iter()
            .position(|i| i.addr == a)
            .with_context(|| format!("branch target {a:#x} outside fib"))
    };
    loop {
        let i = insns.get(at).context("ran off the end of fib")?;
        n += 1;
        if n > 1000 {
            bail!("more than 1000 instructions without a call (a loop?)");
        }
        let a: Vec<&str> = i.operands.iter().map(String::as_str).collect();
        let imm = |s: &str| -> Option<i64> {
            match s.strip_prefix("0x") {
                Some(h) => i64::from_str_radix(h, 16).ok(),
                None => s.parse().ok(),
            }
        };
        let branch = |taken: Option<bool>| -> Result<Option<usize>> {
            match taken {
                Some(true) => Ok(Some(index_of(i)?)),
                Some(false) => Ok(None),
                None => bail!("branch at {:#x} on an unknown value", i.addr),
            }
        };
        let mut next = at + 1;
        match (i.mnemonic.as_str(), a.as_slice()) {
            ("ret", _) => return Ok((n, Stop::Ret, next)),
            ("jal" | "call", [target]) | ("jal", ["ra", target]) => {
                for r in CALLER_SAVED {
                    regs.remove(r);
                }
                let stop = match i.target_symbol.as_deref() {
                    Some("__cyg_profile_func_enter") => Stop::Enter,
                    Some("__cyg_profile_func_exit") => Stop::Exit,
                    Some("fib") => Stop::Fib(i.addr + i.len),
                    s => bail!("call at {:#x} to {s:?} ({target})", i.addr),
                };
                return Ok((n, stop, next));
            }
            ("j", [_]) => next = index_of(i)?,
            ("beqz" | "bnez" | "blez" | "bgez" | "bltz" | "bgtz", [r, _]) => {
                let v = get(regs, r);
                let taken = v.map(|v| match i.mnemonic.as_str() {
                    "beqz" => v == 0,
                    "bnez" => v != 0,
                    "blez" => v <= 0,
                    "bgez" => v >= 0,
                    "bltz" => v < 0,
                    _ => v > 0,
                });
                if let Some(t) = branch(taken)? {
                    next = t;
                }
            }
            ("beq" | "bne" | "blt" | "bge" | "bltu" | "bgeu", [r1, r2, _]) => {
                let taken = match (get(regs, r1), get(regs, r2)) {
                    (Some(x), Some(y)) => Some(match i.mnemonic.as_str() {
                        "beq" => x == y,
                        "bne" => x != y,
                        "blt" => x < y,
                        "bge" => x >= y,
                        "bltu" => (x as u64) < (y as u64),
                        _ => (x as u64) >= (y as u64),
                    }),
                    _ => None,
                };
                if let Some(t) = branch(taken)? {
                    next = t;
                }
            }
            ("mv", [rd, rs]) => match get(regs, rs) {
                Some(v) => {
                    regs.insert(rd.to_string(), v);
                }
                None => {
                    regs.remove(*rd);
                }
            },
            ("li", [rd, v]) => match imm(v) {
                Some(v) => {
                    regs.insert(rd.to_string(), v);
                }
                None => {
                    regs.remove(*rd);
                }
            },
            ("add" | "addi" | "addw" | "addiw", [rd, rs, x]) => {
                let v = match (get(regs, rs), imm(x).or_else(|| get(regs, x))) {
                    (Some(p), Some(q)) => Some(p.wrapping_add(q)),
                    _ => None,
                };
                match v {
                    Some(v) => regs.insert(rd.to_string(), v),
                    None => regs.remove(*rd),
                };
            }
            ("sd" | "sw" | "sh" | "sb" | "fsd" | "fsw", _) => {}
            (op, _) if op.starts_with('b') || op.starts_with('j') => {
                bail!("unmodelled control transfer {op} at {:#x}", i.addr)
            }
            (_, [rd, ..]) => {
                regs.remove(*rd);
            }
            _ => {}
        }
        at = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISASM: &str = "00000000000162ea <fib>:
   162ea:\tadd\tsp,sp,-32
   162ec:\tsd\ts0,16(sp)
   162ee:\tmv\ta1,ra
   162f0:\tmv\ts0,a0
   162f2:\tauipc\ta0,0x0
   162f6:\tadd\ta0,a0,-8 # 162ea <fib>
   162fa:\tsd\ts1,8(sp)
   162fc:\tsd\tra,24(sp)
   162fe:\tmv\ts1,ra
   16300:\tjal\t17112 <__cyg_profile_func_enter>
   16304:\tbeqz\ts0,16322 <fib+0x38>
   16306:\tli\ta5,1
   16308:\tbeq\ts0,a5,16322 <fib+0x38>
   1630c:\tadd\ta0,s0,-2
   16310:\tjal\t162ea <fib>
   16314:\tmv\ta5,a0
   16316:\tadd\ta0,s0,-1
   1631a:\tmv\ts0,a5
   1631c:\tjal\t162ea <fib>
   16320:\tadd\ts0,s0,a0
   16322:\tmv\ta1,s1
   16324:\tauipc\ta0,0x0
   16328:\tadd\ta0,a0,-58 # 162ea <fib>
   1632c:\tjal\t171ee <__cyg_profile_func_exit>
   16330:\tld\tra,24(sp)
   16332:\tmv\ta0,s0
   16334:\tld\ts0,16(sp)
   16336:\tld\ts1,8(sp)
   16338:\tadd\tsp,sp,32
   1633a:\tret
";

    #[test]
    fn fib_paths_from_gcc_riscv64_disassembly() {
        let p = FibPaths::from_insns(&parse_disassembly(DISASM)).unwrap();
        assert_eq!(
            (p.prologue, p.leaf0, p.leaf1, p.before1, p.between, p.after2, p.epilogue),
            (10, 5, 7, 5, 4, 5, 6)
        );
        assert_eq!((p.site1, p.site2), (0x16314, 0x16320));
    }

    #[test]
    fn branch_on_unknown_value_is_an_error() {
        let d = "   10:\tld\ta0,0(sp)\n   14:\tbeqz\ta0,10 <x>\n";
        let mut regs = HashMap::new();
        assert!(walk(&parse_disassembly(d), 0, &mut regs).is_err());
    }

    #[test]
    fn fib_numbers_and_calls() {
        assert_eq!((fib(0), fib(1), fib(2), fib(20)), (0, 1, 1, 6765));
        assert_eq!((calls(0), calls(1), calls(2), calls(3)), (1, 1, 3, 5));
        assert_eq!(calls(20), 2 * fib(21) - 1);
        assert_eq!(calls(20), 21891);
    }

    #[test]
    fn report_totals_parse() {
        let m = report_totals(
            "Trace: x\nCounted (all cores): cycles 12, timestamp 5, instructions 34\n",
        );
        assert_eq!(m.get("cycles"), Some(&12));
        assert_eq!(m.get("instructions"), Some(&34));
    }
}
