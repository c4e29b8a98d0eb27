//! `hpmtrace report`: per-function table, call tree, trace summary.

use crate::stack::{FuncStats, Walker, TIME};

/// Report options.
#[derive(clap::Args, Debug, Clone)]
pub struct ReportArgs {
    /// Rows of the function table (0 = all).
    #[arg(long, short = 'n', default_value_t = 20)]
    pub top: usize,
    /// Sort key: a counter name (inclusive counts, e.g. `cycles`), a
    /// counter name with `.excl` (exclusive), `calls`, `samples` or `name`.
    /// Default: the first counter's inclusive counts.
    #[arg(long, short = 's')]
    pub sort: Option<String>,
    /// Also print the call tree (from function enter/exit records).
    #[arg(long)]
    pub tree: bool,
    /// Deepest call-tree level printed (at most 1024: each level indents
    /// by two more spaces).
    #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(0..=1024))]
    pub depth: u32,
    /// Counter columns to show (comma separated names); default all.
    #[arg(long, value_delimiter = ',')]
    pub counters: Vec<String>,
}

/// Columns shown: counters first (time last, only if nothing else).
fn shown_columns(w: &Walker, args: &ReportArgs) -> Result<Vec<usize>, String> {
    if !args.counters.is_empty() {
        return args
            .counters
            .iter()
            .map(|n| {
                w.column(n).ok_or_else(|| {
                    format!(
                        "no counter named `{n}` in this trace (it has: {})",
                        w.columns.join(", ")
                    )
                })
            })
            .collect();
    }
    let mut cols: Vec<usize> = (1..w.columns.len()).collect();
    if w.has_time {
        cols.push(TIME);
    }
    Ok(cols)
}

fn get(v: &[u64], i: usize) -> u64 {
    v.get(i).copied().unwrap_or(0)
}

/// Ratios the counters allow: (label, numerator, denominator, percent?).
fn derived(w: &Walker) -> Vec<(String, usize, usize, bool)> {
    let mut out = Vec::new();
    let c = |n: &str| w.column(n);
    if let (Some(i), Some(cy)) = (c("instructions"), c("cycles")) {
        out.push(("IPC".to_string(), i, cy, false));
    }
    if let (Some(m), Some(b)) = (c("branch-misses"), c("branches")) {
        out.push(("br-miss%".to_string(), m, b, true));
    }
    if let (Some(m), Some(r)) = (c("cache-misses"), c("cache-references")) {
        out.push(("cache-miss%".to_string(), m, r, true));
    }
    for (i, name) in w.columns.iter().enumerate() {
        if let Some(base) = name.strip_suffix("-miss") {
            if let Some(a) = c(&format!("{base}-access")) {
                out.push((format!("{base}-miss%"), i, a, true));
            }
        }
    }
    out
}

fn ratio(num: u64, den: u64, pct: bool) -> String {
    if den == 0 {
        return "-".to_string();
    }
    let r = num as f64 / den as f64;
    if pct {
        format!("{:.2}", 100.0 * r)
    } else {
        format!("{r:.3}")
    }
}

fn sort_key(w: &Walker, key: &str) -> Result<(Option<usize>, bool), String> {
    let (name, excl) = match key.strip_suffix(".excl") {
        Some(n) => (n, true),
        None => (key.strip_suffix(".incl").unwrap_or(key), false),
    };
    match w.column(name) {
        Some(c) => Ok((Some(c), excl)),
        None => Err(format!(
            "cannot sort by `{key}`: use calls, samples, name, or a counter ({})",
            w.columns.join(", ")
        )),
    }
}

/// Writes the whole report to `out`. Nothing is written when the options
/// are wrong (unknown counter or sort key); the call tree, which can be
/// as large as the trace, is streamed.
pub fn render(
    w: &Walker,
    args: &ReportArgs,
    stats: &hpmtrace::decode::Stats,
    out: &mut dyn std::fmt::Write,
) -> Result<(), String> {
    let cols = shown_columns(w, args)?;
    let mut head = String::new();
    summary(&mut head, w, stats);
    let calls_traced = w.kinds[0] + w.kinds[1] > 0;
    if calls_traced {
        functions(&mut head, w, args, &cols)?;
    }
    let _ = out.write_str(&head);
    if calls_traced && args.tree {
        let _ = writeln!(out, "\nCall tree (inclusive counts; calls):");
        for &(_, root) in &w.roots {
            tree(out, w, root, args, &cols);
        }
    }
    if w.kinds[2] + w.kinds[3] > 0 {
        samples(out, w, args, &cols);
    }
    Ok(())
}

fn summary(out: &mut dyn std::fmt::Write, w: &Walker, stats: &hpmtrace::decode::Stats) {
    let _ = writeln!(
        out,
        "Trace: {} records ({} enter, {} exit, {} manual, {} timer samples), {} headers, {} cores, {} decoding errors",
        stats.records, w.kinds[0], w.kinds[1], w.kinds[2], w.kinds[3], stats.headers, w.roots.len(), stats.errors
    );
    if let Some((a, b)) = w.time_span() {
        let _ = writeln!(out, "Time: {a} .. {b} ({} ticks)", b - a);
    }
    if w.unmatched > 0 {
        let _ = writeln!(out, "Unmatched enter/exit records: {}", w.unmatched);
    }
    let totals = w.totals();
    let parts: Vec<String> = (1..w.columns.len())
        .map(|i| format!("{} {}", w.columns[i], get(&totals, i)))
        .collect();
    if !parts.is_empty() {
        let _ = writeln!(out, "Counted (all cores): {}", parts.join(", "));
    }
    let d: Vec<String> = derived(w)
        .iter()
        .map(|(l, n, dd, p)| format!("{l} {}", ratio(get(&totals, *n), get(&totals, *dd), *p)))
        .collect();
    if !d.is_empty() {
        let _ = writeln!(out, "Overall: {}", d.join(", "));
    }
}

fn table(out: &mut dyn std::fmt::Write, head: &[String], rows: &[Vec<String>]) {
    let mut width: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            // Padded by hand: `{:w$}` panics for widths over 65535, and
            // names come from the user's ELF.
            let pad = " ".repeat(width[i] - c.chars().count());
            if i == 0 {
                s.push_str(c);
                s.push_str(&pad);
            } else {
                s.push_str("  ");
                s.push_str(&pad);
                s.push_str(c);
            }
        }
        s.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(head));
    for r in rows {
        let _ = writeln!(out, "{}", line(r));
    }
}

fn functions(
    out: &mut dyn std::fmt::Write,
    w: &Walker,
    args: &ReportArgs,
    cols: &[usize],
) -> Result<(), String> {
    let mut list: Vec<(&std::sync::Arc<str>, &FuncStats)> = w
        .funcs
        .iter()
        .filter(|(_, s)| s.calls > 0 || !s.incl.is_empty())
        .collect();
    let key = args.sort.clone().unwrap_or_else(|| {
        cols.first()
            .map_or("calls".to_string(), |&c| w.columns[c].clone())
    });
    match key.as_str() {
        "calls" => list.sort_by(|a, b| b.1.calls.cmp(&a.1.calls).then(a.0.cmp(b.0))),
        "samples" => list.sort_by(|a, b| b.1.samples.cmp(&a.1.samples).then(a.0.cmp(b.0))),
        "name" => list.sort_by(|a, b| a.0.cmp(b.0)),
        k => {
            let (c, excl) = sort_key(w, k)?;
            let c = c.unwrap_or(TIME);
            let v = |s: &FuncStats| {
                if excl {
                    get(&s.excl, c)
                } else {
                    get(&s.incl, c)
                }
            };
            list.sort_by(|a, b| v(b.1).cmp(&v(a.1)).then(a.0.cmp(b.0)));
        }
    }
    let n = if args.top == 0 {
        list.len()
    } else {
        args.top.min(list.len())
    };
    let der = derived(w);
    let mut head = vec!["function".to_string(), "calls".to_string()];
    for &c in cols {
        head.push(format!("{} incl", w.columns[c]));
        head.push(format!("{} excl", w.columns[c]));
    }
    for (l, ..) in &der {
        head.push(format!("{l} excl"));
    }
    let rows: Vec<Vec<String>> = list[..n]
        .iter()
        .map(|(f, s)| {
            let mut r = vec![f.to_string(), s.calls.to_string()];
            for &c in cols {
                r.push(get(&s.incl, c).to_string());
                r.push(get(&s.excl, c).to_string());
            }
            for (_, num, den, pct) in &der {
                r.push(ratio(get(&s.excl, *num), get(&s.excl, *den), *pct));
            }
            r
        })
        .collect();
    let _ = writeln!(
        out,
        "\nFunctions (top {n} of {} by {key}; inclusive = in the function and its callees):",
        list.len()
    );
    table(out, &head, &rows);
    Ok(())
}

/// Prints the call tree under `root`, heaviest child first, down to
/// `--depth` (iteratively: a trace may nest deeper than a thread's stack).
fn tree(out: &mut dyn std::fmt::Write, w: &Walker, root: usize, args: &ReportArgs, cols: &[usize]) {
    let t = &w.tree;
    let key = cols.first().copied().unwrap_or(TIME);
    let mut todo = vec![(root, 0usize)];
    while let Some((n, depth)) = todo.pop() {
        let vals: Vec<String> = cols
            .iter()
            .map(|&c| format!("{} {}", w.columns[c], get(t.incl(n), c)))
            .collect();
        let _ = writeln!(
            out,
            "{:indent$}{}  [{}]  calls {}",
            "",
            t.func(n),
            vals.join(", "),
            t.calls(n),
            indent = 2 * depth
        );
        if depth >= args.depth as usize {
            continue;
        }
        let mut kids: Vec<usize> = t.children(n).collect();
        kids.sort_by(|&a, &b| {
            get(t.incl(b), key)
                .cmp(&get(t.incl(a), key))
                .then(t.func(a).cmp(t.func(b)))
        });
        // Reversed: the heaviest child is popped first.
        todo.extend(kids.into_iter().rev().map(|k| (k, depth + 1)));
    }
}

fn samples(out: &mut dyn std::fmt::Write, w: &Walker, args: &ReportArgs, cols: &[usize]) {
    let total: u64 = w.funcs.values().map(|s| s.samples).sum();
    let mut list: Vec<_> = w.funcs.iter().filter(|(_, s)| s.samples > 0).collect();
    list.sort_by(|a, b| b.1.samples.cmp(&a.1.samples).then(a.0.cmp(b.0)));
    let n = if args.top == 0 {
        list.len()
    } else {
        args.top.min(list.len())
    };
    let mut head = vec![
        "location".to_string(),
        "records".to_string(),
        "%".to_string(),
    ];
    for &c in cols {
        head.push(w.columns[c].clone());
    }
    let rows: Vec<Vec<String>> = list[..n]
        .iter()
        .map(|(f, s)| {
            let mut r = vec![
                f.to_string(),
                s.samples.to_string(),
                format!("{:.1}", 100.0 * s.samples as f64 / total.max(1) as f64),
            ];
            for &c in cols {
                r.push(get(&s.sample_counts, c).to_string());
            }
            r
        })
        .collect();
    let _ = writeln!(
        out,
        "\nManual and timer-sample records by function (counts = increase since the previous record):"
    );
    table(out, &head, &rows);
}
