//! The real `perf` tool in the guest: plans of commands for
//! `rvpmu.mode=plan` and their results (the protocol's [`Plan`] and
//! [`CmdResult`], crate `e2e_proto`) and parsers for what perf prints (`perf stat -x,`,
//! `perf record`'s summary, `perf report --stdio`).
//!
//! Formats, from tools/perf (stat-display.c, builtin-record.c,
//! ui/stdio/hist.c):
//! - `perf stat -x,` writes one CSV line per event to stderr:
//!   `value,unit,event,run time ns,percent running,metric,metric unit`;
//!   the value is `<not counted>` or `<not supported>` when perf has none.
//! - `perf record` ends with `[ perf record: Captured and wrote X MB FILE (N samples) ]`.
//! - `perf report --stdio` prints `# Samples: N  of event 'E'`, optionally
//!   `# Total Lost Samples: N`, then rows `  75.01%  ...  [.] symbol`.

pub use e2e_proto::plan::Plan;
pub use e2e_proto::result::CmdResult;

/// One event line of `perf stat` (either output format).
#[derive(Clone, Debug, PartialEq)]
pub struct StatLine {
    pub event: String,
    /// None for `<not counted>` / `<not supported>`.
    pub value: Option<u64>,
    /// `<not supported>`, `<not counted>` or empty.
    pub status: String,
    pub run_ns: Option<u64>,
    /// Share of the enabled time the event was on a counter, in percent.
    pub running_pct: Option<f64>,
}

/// The event lines of `perf stat -x,` output (other lines are skipped).
pub fn parse_stat_csv(text: &str) -> Vec<StatLine> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 5 {
            continue;
        }
        let (value, status) = if f[0].starts_with('<') {
            (None, f[0].to_string())
        } else {
            match f[0].parse::<f64>() {
                // perf prints integer counts; scaled ones may carry ".00".
                Ok(v) if v >= 0.0 => (Some(v.round() as u64), String::new()),
                _ => continue,
            }
        };
        out.push(StatLine {
            event: f[2].to_string(),
            value,
            status,
            run_ns: f[3].parse().ok(),
            running_pct: f[4].parse().ok(),
        });
    }
    out
}

/// The event lines of `perf stat`'s default output, as
/// tools/perf/util/stat-display.c prints them: the count (digits, grouped
/// by the locale's thousands separator when it has one) or `<not counted>`
/// / `<not supported>`, the event's name, an optional `# metric`, and
/// `(P%)` last when the event was on a counter for only part of the time
/// it was enabled (nothing when it was on one the whole time: 100%).
/// Other lines (the header, the times) are skipped. perf's `-x,` format
/// would be easier to read here, but the summary reads what the user saw.
pub fn parse_stat_human(text: &str) -> Vec<StatLine> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        let (value, status, rest) = if let Some(r) = t.strip_prefix('<') {
            let Some((word, rest)) = r.split_once('>') else {
                continue;
            };
            (None, format!("<{word}>"), rest)
        } else {
            let (count, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
            let digits: String = count.chars().filter(|c| *c != ',').collect();
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Ok(v) = digits.parse::<u64>() else {
                continue;
            };
            (Some(v), String::new(), rest)
        };
        let Some(event) = rest.split_whitespace().next() else {
            continue;
        };
        let share = rest
            .trim_end()
            .strip_suffix("%)")
            .and_then(|head| head.rsplit_once('('))
            .and_then(|(_, p)| p.trim().parse::<f64>().ok());
        out.push(StatLine {
            event: event.to_string(),
            value,
            status,
            run_ns: None,
            running_pct: share.or(value.map(|_| 100.0)),
        });
    }
    out
}

/// The `(N samples)` of perf record's last line.
pub fn parse_record_samples(text: &str) -> Option<u64> {
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains("perf record: Captured and wrote"))?;
    let open = line.rfind('(')?;
    line[open + 1..].split_whitespace().next()?.parse().ok()
}

/// What `perf report --stdio` says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub samples: Option<u64>,
    pub lost: u64,
    /// (percent, symbol) rows in perf's order.
    pub rows: Vec<(f64, String)>,
}

impl Report {
    /// The share of `symbol`, in percent (0 if absent).
    pub fn share(&self, symbol: &str) -> f64 {
        self.rows
            .iter()
            .filter(|(_, s)| s == symbol)
            .map(|(p, _)| p)
            .sum()
    }
}

pub fn parse_report(text: &str) -> Report {
    let mut r = Report::default();
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("# Samples:") {
            // "816  of event 'cycles:u'"; perf may print 1K-style counts.
            r.samples = rest.split_whitespace().next().and_then(|n| n.parse().ok());
        } else if let Some(rest) = t.strip_prefix("# Total Lost Samples:") {
            r.lost = rest.trim().parse().unwrap_or(0);
        } else if !t.starts_with('#') {
            let Some((pct, rest)) = t.split_once('%') else {
                continue;
            };
            let Ok(p) = pct.trim().parse::<f64>() else {
                continue;
            };
            // "[.] symbol", then perf 7's IPC columns ("-  -").
            if let Some(sym) = rest
                .split("] ")
                .nth(1)
                .and_then(|x| x.split_whitespace().next())
            {
                r.rows.push((p, sym.to_string()));
            }
        }
    }
    r
}

/// Steal and total time per CPU line of /proc/stat (`cpu` = all), in
/// USER_HZ ticks: steal is the 8th value.
pub fn parse_proc_stat(text: &str) -> Vec<(String, u64, u64)> {
    text.lines()
        .filter(|l| l.starts_with("cpu"))
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let cpu = w.next()?.to_string();
            let v: Vec<u64> = w.map(|x| x.parse().ok()).collect::<Option<_>>()?;
            (v.len() >= 8).then(|| (cpu, v[7], v.iter().take(8).sum()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_human_lines() {
        // Written from stat-display.c's default layout (count, name,
        // optional "# metric", "(P%)" only when run != enabled), not
        // from our output.
        let text = "\n Performance counter stats for 'rvpmu-work alu 10':\n\n\
                    \x20          2100000      cycles:u                                                      (44.30%)\n\
                    \x20        1,234,567      instructions:u                   #    0.59  insn per cycle    (55.70%)\n\
                    \x20              851      dTLB-load-misses\n\
                    \x20    <not counted>      cycles:k                                                      (0.00%)\n\
                    \x20  <not supported>      branches\n\
                    \x20                0      fw_set_timer\n\n\
                    \x20      0.021234567 seconds time elapsed\n\n\
                    \x20      0.020000000 seconds user\n";
        let l = parse_stat_human(text);
        let got: Vec<(&str, Option<u64>, &str, Option<f64>)> = l
            .iter()
            .map(|l| (l.event.as_str(), l.value, l.status.as_str(), l.running_pct))
            .collect();
        assert_eq!(
            got,
            vec![
                ("cycles:u", Some(2_100_000), "", Some(44.3)),
                ("instructions:u", Some(1_234_567), "", Some(55.7)),
                ("dTLB-load-misses", Some(851), "", Some(100.0)),
                ("cycles:k", None, "<not counted>", Some(0.0)),
                ("branches", None, "<not supported>", None),
                ("fw_set_timer", Some(0), "", Some(100.0)),
            ]
        );
        assert!(parse_stat_human("").is_empty());
        assert!(parse_stat_human("<broken\n12x cycles\n").is_empty());
    }

    #[test]
    fn proc_stat_steal() {
        let t = "cpu  10 0 20 300 0 0 0 70 0 0\ncpu0 10 0 20 300 0 0 0 70 0 0\nintr 5\n";
        assert_eq!(
            parse_proc_stat(t),
            vec![("cpu".into(), 70, 400), ("cpu0".into(), 70, 400)]
        );
    }

    #[test]
    fn stat_csv_lines() {
        // Written from stat-display.c's CSV layout, not from our output.
        let text = "# started on x\n\n20020480,,instructions:u,12345678,100.00,,\n\
                    <not supported>,,branches,0,100.00,,\n<not counted>,,cycles:k,0,0.00,,\n\
                    1234.00,,dTLB-load-misses,5000,50.00,,\n";
        let l = parse_stat_csv(text);
        assert_eq!(l.len(), 4);
        assert_eq!(l[0].event, "instructions:u");
        assert_eq!(l[0].value, Some(20020480));
        assert_eq!(l[0].run_ns, Some(12345678));
        assert_eq!(l[0].running_pct, Some(100.0));
        assert_eq!(l[1].value, None);
        assert_eq!(l[1].status, "<not supported>");
        assert_eq!(l[2].status, "<not counted>");
        assert_eq!(l[3].value, Some(1234));
        assert_eq!(l[3].running_pct, Some(50.0));
    }

    #[test]
    fn record_and_report() {
        assert_eq!(
            parse_record_samples(
                "[ perf record: Woken up 1 times to write data ]\n[ perf record: Captured and wrote 0.031 MB /root/perf.data (816 samples) ]\n"
            ),
            Some(816)
        );
        assert_eq!(parse_record_samples("nothing"), None);
        let r = parse_report(
            "# Total Lost Samples: 0\n#\n# Samples: 400  of event 'cycles:u'\n# Event count (approx.): 40000000\n#\n\
             # Overhead  Symbol           IPC   [IPC Coverage]\n# ........  ......\n#\n    75.00%  [.] rvpmu_hot_a  -      -            \n    24.75%  [.] rvpmu_hot_b\n     0.25%  [k] handle_exception\n",
        );
        assert_eq!(r.samples, Some(400));
        assert_eq!(r.lost, 0);
        assert_eq!(r.share("rvpmu_hot_a"), 75.0);
        assert_eq!(r.share("rvpmu_hot_b"), 24.75);
        assert_eq!(r.share("handle_exception"), 0.25);
        assert_eq!(r.share("absent"), 0.0);
    }
}
