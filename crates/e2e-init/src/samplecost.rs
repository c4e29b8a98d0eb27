//! The per-sample cost benchmark's arithmetic and result line
//! (`rvpmu.mode=samplecost`); the timed runs are the guest's part
//! (guest/samplecost.rs, which also says what the difference includes).

use e2e_proto::json::{array, Obj};

/// One plain run and one sampled run of the same loop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// CLOCK_MONOTONIC ns of the loop without a perf event.
    pub plain_ns: u64,
    /// CLOCK_MONOTONIC ns of the loop with the sampling event enabled.
    pub sampled_ns: u64,
    /// PERF_RECORD_SAMPLE records in the ring buffer.
    pub samples: u64,
    /// Samples the kernel dropped (PERF_RECORD_LOST), each an overflow
    /// that was handled but not written.
    pub lost: u64,
    /// PERF_RECORD_THROTTLE records: the kernel stopped sampling for the
    /// rest of a tick, so fewer overflows than periods.
    pub throttle: u64,
}

impl Round {
    /// ns per overflow: the extra time of the sampled run over the
    /// overflows it handled (samples written + lost; the two are equal
    /// when lost is 0, as it should be). None without overflows.
    pub fn per_sample_ns(&self) -> Option<f64> {
        let n = self.samples + self.lost;
        (n > 0).then(|| (self.sampled_ns as f64 - self.plain_ns as f64) / n as f64)
    }
}

/// Minimum and median of the values (the mean of the middle two for an
/// even count); None when empty.
pub fn min_median(values: &[f64]) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    let median = if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    };
    Some((v[0], median))
}

/// The `RVPMU-RESULT` JSON. per_sample_ns_min / _median are null when no
/// round had an overflow.
pub fn result_json(iters: u64, period: u64, rounds: &[Round]) -> String {
    let items: Vec<String> = rounds
        .iter()
        .map(|r| {
            Obj::new()
                .u64("plain_ns", r.plain_ns)
                .u64("sampled_ns", r.sampled_ns)
                .u64("samples", r.samples)
                .u64("lost", r.lost)
                .u64("throttle", r.throttle)
                .f64("per_sample_ns", r.per_sample_ns().unwrap_or(f64::NAN))
                .finish()
        })
        .collect();
    let per: Vec<f64> = rounds.iter().filter_map(Round::per_sample_ns).collect();
    let (min, median) = min_median(&per).unwrap_or((f64::NAN, f64::NAN));
    Obj::new()
        .str("scenario", "samplecost")
        .u64("iters", iters)
        .u64("period", period)
        .raw("rounds", &array(&items))
        .f64("per_sample_ns_min", min)
        .f64("per_sample_ns_median", median)
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_sample_cost() {
        let r = Round {
            plain_ns: 20_000_000,
            sampled_ns: 20_300_000,
            samples: 20,
            lost: 0,
            throttle: 0,
        };
        assert_eq!(r.per_sample_ns(), Some(15_000.0));
        let lost = Round {
            samples: 15,
            lost: 5,
            ..r
        };
        assert_eq!(lost.per_sample_ns(), Some(15_000.0));
        assert_eq!(Round { samples: 0, ..r }.per_sample_ns(), None);
        // A sampled run faster than the plain one (cannot happen under
        // icount, but must not wrap).
        let neg = Round {
            sampled_ns: 19_999_000,
            ..r
        };
        assert_eq!(neg.per_sample_ns(), Some(-50.0));
    }

    #[test]
    fn min_and_median() {
        assert_eq!(min_median(&[]), None);
        assert_eq!(min_median(&[3.0]), Some((3.0, 3.0)));
        assert_eq!(min_median(&[5.0, 1.0, 4.0]), Some((1.0, 4.0)));
        assert_eq!(min_median(&[5.0, 1.0, 4.0, 2.0]), Some((1.0, 3.0)));
    }

    #[test]
    fn result_line() {
        let r = Round {
            plain_ns: 2_000_100,
            sampled_ns: 2_030_100,
            samples: 2,
            lost: 0,
            throttle: 0,
        };
        let none = Round { samples: 0, ..r };
        assert_eq!(
            result_json(1_000_000, 1_000_000, &[r, none]),
            r#"{"scenario":"samplecost","iters":1000000,"period":1000000,"rounds":[{"plain_ns":2000100,"sampled_ns":2030100,"samples":2,"lost":0,"throttle":0,"per_sample_ns":15000},{"plain_ns":2000100,"sampled_ns":2030100,"samples":0,"lost":0,"throttle":0,"per_sample_ns":null}],"per_sample_ns_min":15000,"per_sample_ns_median":15000}"#
        );
        assert!(result_json(1, 1, &[none])
            .ends_with(r#""per_sample_ns_min":null,"per_sample_ns_median":null}"#));
    }
}
