//! Rebuilds call stacks from function enter/exit records and attributes
//! counter increases to functions, call paths and sample locations. Shared
//! by `report` and `export`.
//!
//! Attribution rule: the counts between two records of a core happened in
//! the function on top of that core's stack at the second record (its
//! exclusive counts); a function's inclusive counts are the totals at its
//! exit minus those at its entry (outermost activation only, so recursion
//! is not counted twice). When a trace starts inside a function (an exit
//! of a function never entered, or the caller of the first entry), a frame
//! for it is made up so its counts are not lost; such frames add no calls.

use crate::fastmap::FastMap;
use crate::names::counter_name;
use crate::symbols::Symbolizer;
use hpmtrace::decode::{HeaderInfo, Output, Record};
use hpmtrace::format::RecordType;
use std::collections::HashMap;
use std::sync::Arc;

/// Column 0 is always trace time (timestamp ticks); counters follow, one
/// column per distinct event name across all headers.
pub const TIME: usize = 0;

/// A point in a core's timeline.
#[derive(Debug, Clone, Copy)]
pub struct Point<'a> {
    /// Trace timestamp of the record, if known.
    pub ts: Option<u64>,
    /// Record number in the core (1-based), a fallback time axis.
    pub seq: u64,
    /// Running totals per column since the core's first record.
    pub totals: &'a [u64],
}

/// Receives the timeline as the walker rebuilds it.
pub trait Visitor {
    /// The column list grew (a header named new counters).
    fn columns(&mut self, _columns: &[String]) {}
    /// A function starts running (`synthetic`: made up, not traced).
    fn open(&mut self, _core: u16, _func: &Arc<str>, _at: Point<'_>, _synthetic: bool) {}
    /// A function returns.
    fn close(&mut self, _core: u16, _func: &Arc<str>, _at: Point<'_>) {}
    /// A manual or timer-sample record at `func`.
    fn sample(&mut self, _core: u16, _kind: RecordType, _func: &Arc<str>, _at: Point<'_>) {}
    /// Totals changed (after every record).
    fn counters(&mut self, _core: u16, _at: Point<'_>) {}
}

/// The no-op visitor.
pub struct NoVisitor;
impl Visitor for NoVisitor {}

/// Per-function totals.
#[derive(Debug, Clone, Default)]
pub struct FuncStats {
    /// Traced entries.
    pub calls: u64,
    /// Inclusive counts per column.
    pub incl: Vec<u64>,
    /// Exclusive counts per column.
    pub excl: Vec<u64>,
    /// Manual/sample records at this function.
    pub samples: u64,
    /// Counts in the intervals ending at those records.
    pub sample_counts: Vec<u64>,
}

/// The calling-context tree, stored compactly: a traced program can have
/// millions of distinct call paths. Nodes link to their first child and
/// next sibling; each node's inclusive and exclusive counts sit in one
/// shared array (`2 * stride` values per node).
#[derive(Debug, Default)]
pub struct Tree {
    nodes: Vec<NodeLinks>,
    counts: Vec<u64>,
    /// Counts per node and kind (inclusive or exclusive): the columns.
    stride: usize,
}

#[derive(Debug)]
struct NodeLinks {
    func: Arc<str>,
    first_child: u32,
    next_sibling: u32,
    calls: u64,
}

/// No child / no sibling.
const NONE: u32 = u32::MAX;

impl Tree {
    /// Function name (the root of a core is `core N`).
    pub fn func(&self, n: usize) -> &Arc<str> {
        &self.nodes[n].func
    }

    /// Traced entries along this path.
    pub fn calls(&self, n: usize) -> u64 {
        self.nodes[n].calls
    }

    /// Inclusive counts per column.
    pub fn incl(&self, n: usize) -> &[u64] {
        let at = 2 * n * self.stride;
        &self.counts[at..at + self.stride]
    }

    /// Exclusive counts per column.
    pub fn excl(&self, n: usize) -> &[u64] {
        let at = (2 * n + 1) * self.stride;
        &self.counts[at..at + self.stride]
    }

    /// The children of `n`, in no particular order.
    pub fn children(&self, n: usize) -> impl Iterator<Item = usize> + '_ {
        let mut next = self.nodes[n].first_child;
        std::iter::from_fn(move || {
            let c = next;
            (c != NONE).then(|| {
                next = self.nodes[c as usize].next_sibling;
                c as usize
            })
        })
    }

    /// A new node with no parent (a core's root).
    fn root(&mut self, func: Arc<str>) -> usize {
        let n = self.nodes.len();
        self.nodes.push(NodeLinks {
            func,
            first_child: NONE,
            next_sibling: NONE,
            calls: 0,
        });
        self.counts.resize(self.counts.len() + 2 * self.stride, 0);
        n
    }

    /// The child of `parent` for `func`, made if new.
    fn child(&mut self, parent: usize, func: &Arc<str>) -> usize {
        if let Some(c) = self
            .children(parent)
            .find(|&c| Arc::ptr_eq(&self.nodes[c].func, func) || self.nodes[c].func == *func)
        {
            return c;
        }
        let n = self.root(func.clone());
        self.nodes[n].next_sibling = self.nodes[parent].first_child;
        self.nodes[parent].first_child = u32::try_from(n).expect("fewer than 2^32 call paths");
        n
    }

    /// Room for `columns` counts per node (columns only grow).
    fn widen(&mut self, columns: usize) {
        if columns <= self.stride {
            return;
        }
        let mut counts = vec![0u64; 2 * self.nodes.len() * columns];
        if self.stride > 0 {
            for (old, new) in self
                .counts
                .chunks(self.stride)
                .zip(counts.chunks_mut(columns))
            {
                new[..self.stride].copy_from_slice(old);
            }
        }
        self.counts = counts;
        self.stride = columns;
    }

    fn add(&mut self, n: usize, excl: bool, v: &[u64]) {
        let at = (2 * n + excl as usize) * self.stride;
        for (a, b) in self.counts[at..at + self.stride].iter_mut().zip(v) {
            *a = a.wrapping_add(*b);
        }
    }
}

/// The node of a frame when the walker keeps no call tree.
const NO_NODE: usize = usize::MAX;

struct Frame {
    func: Arc<str>,
    node: usize,
    at_enter: Vec<u64>,
}

#[derive(Default)]
struct CoreState {
    totals: Vec<u64>,
    last_ts: Option<u64>,
    seq: u64,
    stack: Vec<Frame>,
    active: FastMap<Arc<str>, u32>,
    root: usize,
    /// header counter index -> column
    cols: Vec<(u8, usize)>,
}

fn add(into: &mut Vec<u64>, v: &[u64]) {
    if into.len() < v.len() {
        into.resize(v.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(v) {
        *a = a.wrapping_add(*b);
    }
}

/// The walker and its aggregates.
pub struct Walker {
    /// Column names (`time`, then counters).
    pub columns: Vec<String>,
    /// Per-function totals.
    pub funcs: FastMap<Arc<str>, FuncStats>,
    /// The call tree; its roots are listed in `roots`.
    pub tree: Tree,
    /// Root node of each core.
    pub roots: Vec<(u16, usize)>,
    /// Records seen by kind: enter, exit, manual, sample.
    pub kinds: [u64; 4],
    /// True once a record carried a timestamp.
    pub has_time: bool,
    /// Exits of functions not on the stack, entries never exited, ...
    pub unmatched: u64,
    cores: FastMap<u16, CoreState>,
    col_of: HashMap<String, usize>,
    first_ts: Option<u64>,
    last_ts: Option<u64>,
    /// Whether `tree` grows beyond the roots (see [`Walker::without_tree`]).
    keep_tree: bool,
}

impl Default for Walker {
    fn default() -> Self {
        Self::new()
    }
}

impl Walker {
    /// An empty walker.
    pub fn new() -> Self {
        let mut tree = Tree::default();
        tree.widen(1);
        Walker {
            keep_tree: true,
            columns: vec!["time".to_string()],
            funcs: FastMap::default(),
            tree,
            roots: Vec::new(),
            kinds: [0; 4],
            has_time: false,
            unmatched: 0,
            cores: FastMap::default(),
            col_of: HashMap::new(),
            first_ts: None,
            last_ts: None,
        }
    }

    /// A walker that keeps no call tree (`tree` holds only the cores'
    /// roots): its memory then grows with the number of functions, not
    /// with the number of distinct call paths.
    pub fn without_tree() -> Self {
        Walker {
            keep_tree: false,
            ..Self::new()
        }
    }

    /// Trace time span (first and last record timestamps).
    pub fn time_span(&self) -> Option<(u64, u64)> {
        Some((self.first_ts?, self.last_ts?))
    }

    /// Column index of a counter by event name.
    pub fn column(&self, name: &str) -> Option<usize> {
        if name == "time" {
            return Some(TIME);
        }
        self.col_of.get(name).copied()
    }

    fn core(&mut self, src: u16) -> &mut CoreState {
        if !self.cores.contains_key(&src) {
            let root = self.tree.root(Arc::from(format!("core {src}")));
            self.roots.push((src, root));
            self.cores.insert(
                src,
                CoreState {
                    root,
                    ..Default::default()
                },
            );
        }
        self.cores.get_mut(&src).expect("just inserted")
    }

    /// Feeds one decoder output item.
    pub fn item(&mut self, o: &Output<'_>, sym: &mut Symbolizer, v: &mut impl Visitor) {
        match o {
            Output::Header(h) => {
                self.header(h);
                v.columns(&self.columns);
            }
            Output::Record(r) => self.record(r, sym, v),
            Output::Error(_) => {}
        }
    }

    fn header(&mut self, h: &HeaderInfo) {
        let mut cols = Vec::new();
        for (i, _) in h.header.iter() {
            let name = counter_name(&h.header, i);
            let n = self.columns.len();
            let c = *self.col_of.entry(name.clone()).or_insert(n);
            if c == n {
                self.columns.push(name);
            }
            cols.push((i, c));
        }
        self.tree.widen(self.columns.len());
        let c = self.core(h.src);
        c.cols = cols;
        // Time counts from trace-on, like Delta counters do.
        if h.timestamp.is_some() {
            c.last_ts = h.timestamp;
        }
    }

    fn child(&mut self, parent: usize, func: &Arc<str>) -> usize {
        if !self.keep_tree {
            return NO_NODE;
        }
        self.tree.child(parent, func)
    }

    fn push(&mut self, src: u16, func: Arc<str>, synthetic: bool, v: &mut impl Visitor) {
        let parent = {
            let c = self.core(src);
            c.stack.last().map_or(c.root, |f| f.node)
        };
        let node = self.child(parent, &func);
        if !synthetic {
            if node != NO_NODE {
                self.tree.nodes[node].calls += 1;
            }
            self.funcs.entry(func.clone()).or_default().calls += 1;
        }
        let c = self.cores.get_mut(&src).expect("core exists");
        *c.active.entry(func.clone()).or_insert(0) += 1;
        c.stack.push(Frame {
            func: func.clone(),
            node,
            at_enter: c.totals.clone(),
        });
        let at = Point {
            ts: c.last_ts,
            seq: c.seq,
            totals: &c.totals,
        };
        v.open(src, &func, at, synthetic);
    }

    fn pop(&mut self, src: u16, v: &mut impl Visitor) {
        let c = self.cores.get_mut(&src).expect("core exists");
        let Some(f) = c.stack.pop() else { return };
        let incl: Vec<u64> = c
            .totals
            .iter()
            .enumerate()
            .map(|(i, t)| t.wrapping_sub(f.at_enter.get(i).copied().unwrap_or(0)))
            .collect();
        let outermost = {
            let n = c.active.get_mut(&f.func).expect("active frame");
            *n -= 1;
            *n == 0
        };
        let at = Point {
            ts: c.last_ts,
            seq: c.seq,
            totals: &c.totals,
        };
        v.close(src, &f.func, at);
        if f.node != NO_NODE {
            self.tree.add(f.node, false, &incl);
        }
        if outermost {
            add(&mut self.funcs.entry(f.func).or_default().incl, &incl);
        }
    }

    fn record(&mut self, r: &Record, sym: &mut Symbolizer, v: &mut impl Visitor) {
        self.kinds[r.kind as usize] += 1;
        if let Some(t) = r.timestamp {
            self.has_time = true;
            self.first_ts.get_or_insert(t);
            self.last_ts = Some(self.last_ts.map_or(t, |l| l.max(t)));
        }
        let ncols = self.columns.len();
        let src = r.src;
        // Counter increases since this core's previous record (or header).
        let deltas = {
            let c = self.core(src);
            let mut d = vec![0u64; ncols];
            if let (Some(t), Some(l)) = (r.timestamp, c.last_ts) {
                d[TIME] = t.saturating_sub(l);
            }
            for cv in &r.counters {
                if let Some(&(_, col)) = c.cols.iter().find(|(i, _)| *i == cv.index) {
                    d[col] = cv.delta.unwrap_or(0);
                }
            }
            d
        };
        // A function found running without a traced entry (the caller of
        // the first entry, a function exiting that never entered) ran
        // during this interval: open its frame before counting it.
        let func = sym.func_name(r.addr);
        match r.kind {
            RecordType::FuncEnter if self.core(src).stack.is_empty() => {
                if let Some(a2) = r.addr2 {
                    let caller = sym.func_name(a2);
                    self.push(src, caller, true, v);
                }
            }
            RecordType::FuncExit if !self.core(src).stack.iter().any(|f| f.func == func) => {
                self.unmatched += 1;
                self.push(src, func.clone(), true, v);
            }
            _ => {}
        }
        {
            let c = self.core(src);
            if r.timestamp.is_some() {
                c.last_ts = r.timestamp;
            }
            c.seq += 1;
            add(&mut c.totals, &deltas);
        }
        self.attribute(src, &deltas);
        match r.kind {
            RecordType::FuncEnter => self.push(src, func, false, v),
            RecordType::FuncExit => {
                // Pop up to and including the exiting function (frames
                // above it lost their exits, e.g. longjmp).
                while let Some(top) = self.core(src).stack.last().map(|f| f.func.clone()) {
                    self.pop(src, v);
                    if top == func {
                        break;
                    }
                    self.unmatched += 1;
                }
                if self.core(src).stack.is_empty() {
                    if let Some(a2) = r.addr2 {
                        let caller = sym.func_name(a2);
                        self.push(src, caller, true, v);
                    }
                }
            }
            RecordType::Manual | RecordType::Isr => {
                let s = self.funcs.entry(func.clone()).or_default();
                s.samples += 1;
                add(&mut s.sample_counts, &deltas);
                let c = &self.cores[&src];
                let at = Point {
                    ts: c.last_ts,
                    seq: c.seq,
                    totals: &c.totals,
                };
                v.sample(src, r.kind, &func, at);
            }
        }
        let c = &self.cores[&src];
        v.counters(
            src,
            Point {
                ts: c.last_ts,
                seq: c.seq,
                totals: &c.totals,
            },
        );
    }

    /// Exclusive attribution of one interval to the top of the stack.
    fn attribute(&mut self, src: u16, deltas: &[u64]) {
        let c = &self.cores[&src];
        let (node, func) = match c.stack.last() {
            Some(f) => (f.node, f.func.clone()),
            None => return,
        };
        if node != NO_NODE {
            self.tree.add(node, true, deltas);
        }
        add(&mut self.funcs.entry(func).or_default().excl, deltas);
    }

    /// Closes the frames still open at the end of the trace.
    pub fn finish(&mut self, v: &mut impl Visitor) {
        let mut cores: Vec<u16> = self.cores.keys().copied().collect();
        cores.sort_unstable();
        for src in cores {
            while !self.core(src).stack.is_empty() {
                self.pop(src, v);
            }
        }
        self.roots.sort_unstable();
        // A core's root covers everything that core counted.
        for &(src, root) in &self.roots {
            self.tree.add(root, false, &self.cores[&src].totals);
        }
    }

    /// Totals per column summed over all cores.
    pub fn totals(&self) -> Vec<u64> {
        let mut t = vec![0u64; self.columns.len()];
        for c in self.cores.values() {
            add(&mut t, &c.totals);
        }
        t
    }
}
