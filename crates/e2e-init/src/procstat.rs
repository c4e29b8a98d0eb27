//! The `cpu` lines of `/proc/stat` and steal shares computed from two
//! readings. Pure text handling, so it is tested on the host.
//!
//! A line is `cpu[N] user nice system idle iowait irq softirq steal guest
//! guest_nice` in USER_HZ ticks. `guest` and `guest_nice` are already part
//! of `user` and `nice` (the kernel accounts guest time twice), so the time
//! that passed is the sum of the first eight columns; steal is the eighth.

/// Columns that partition a CPU's time (user .. steal).
pub const TIME_COLUMNS: usize = 8;
/// Index of the steal column.
pub const STEAL: usize = 7;

/// One `cpu` line: `cpu` is `None` for the aggregate line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuLine {
    pub cpu: Option<u32>,
    /// The values in file order (at least the eight time columns).
    pub cols: Vec<u64>,
}

impl CpuLine {
    pub fn steal(&self) -> u64 {
        self.cols[STEAL]
    }

    /// All time accounted to this CPU (user through steal).
    pub fn total(&self) -> u64 {
        self.cols[..TIME_COLUMNS].iter().sum()
    }
}

/// Parse every `cpu` line; an unreadable one is an error naming it.
pub fn parse(text: &str) -> Result<Vec<CpuLine>, String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(head) = words.next() else { continue };
        let Some(suffix) = head.strip_prefix("cpu") else {
            continue;
        };
        let cpu = if suffix.is_empty() {
            None
        } else {
            Some(
                suffix
                    .parse::<u32>()
                    .map_err(|_| format!("/proc/stat: bad cpu name in `{line}`"))?,
            )
        };
        let cols = words
            .map(|w| w.parse::<u64>())
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|_| format!("/proc/stat: non-numeric value in `{line}`"))?;
        if cols.len() < TIME_COLUMNS {
            return Err(format!(
                "/proc/stat: `{line}` has {} values, expected at least {TIME_COLUMNS}",
                cols.len()
            ));
        }
        out.push(CpuLine { cpu, cols });
    }
    if !out.iter().any(|l| l.cpu.is_none()) {
        return Err("/proc/stat has no aggregate `cpu` line".into());
    }
    Ok(out)
}

/// Steal and total time that passed on one CPU (or all) between two
/// readings, in USER_HZ ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delta {
    pub steal: u64,
    pub total: u64,
}

impl Delta {
    /// Steal / total (0 when no time passed).
    pub fn share(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.steal as f64 / self.total as f64
        }
    }
}

/// The change of one line between `before` and `after` (`cpu` None: the
/// aggregate). None when the line is missing in either reading (an offline
/// CPU has none) or a value went backwards.
pub fn delta(before: &[CpuLine], after: &[CpuLine], cpu: Option<u32>) -> Option<Delta> {
    let b = before.iter().find(|l| l.cpu == cpu)?;
    let a = after.iter().find(|l| l.cpu == cpu)?;
    Some(Delta {
        steal: a.steal().checked_sub(b.steal())?,
        total: a.total().checked_sub(b.total())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "cpu  100 0 50 1000 0 0 3 20 0 0\n\
                          cpu0 60 0 30 500 0 0 2 10 0 0\n\
                          cpu1 40 0 20 500 0 0 1 10 0 0\n\
                          intr 1234 0 0\nctxt 99\n";
    const AFTER: &str = "cpu  260 0 60 1000 0 0 3 80 0 0\n\
                         cpu0 140 0 35 500 0 0 2 40 0 0\n\
                         cpu1 120 0 25 500 0 0 1 40 0 0\n";

    #[test]
    fn parses_cpu_lines_only() {
        let l = parse(BEFORE).unwrap();
        assert_eq!(l.len(), 3);
        assert_eq!(l[0].cpu, None);
        assert_eq!(l[2].cpu, Some(1));
        assert_eq!(l[1].steal(), 10);
        assert_eq!(l[1].total(), 60 + 30 + 500 + 2 + 10);
    }

    #[test]
    fn guest_columns_are_not_added_twice() {
        let l = parse("cpu 10 0 0 0 0 0 0 5 7 1\n").unwrap();
        assert_eq!(l[0].total(), 15);
    }

    #[test]
    fn deltas_and_shares() {
        let (b, a) = (parse(BEFORE).unwrap(), parse(AFTER).unwrap());
        let d0 = delta(&b, &a, Some(0)).unwrap();
        assert_eq!(
            d0,
            Delta {
                steal: 30,
                total: 80 + 5 + 30
            }
        );
        let all = delta(&b, &a, None).unwrap();
        assert_eq!(
            all,
            Delta {
                steal: 60,
                total: 160 + 10 + 60
            }
        );
        assert!((all.share() - 60.0 / 230.0).abs() < 1e-12);
        assert_eq!(delta(&b, &a, Some(2)), None);
        // A counter that went backwards gives no delta.
        assert_eq!(delta(&a, &b, Some(0)), None);
        assert_eq!(Delta { steal: 0, total: 0 }.share(), 0.0);
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse("cpu 1 2 3\n").is_err());
        assert!(parse("cpu 1 2 3 4 5 6 7 x\n").is_err());
        assert!(parse("cpux 1 2 3 4 5 6 7 8\ncpu 1 2 3 4 5 6 7 8\n").is_err());
        assert!(parse("cpu0 1 2 3 4 5 6 7 8\n").is_err());
    }
}
