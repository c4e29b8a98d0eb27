//! The guest's parameters, read from the kernel command line
//! (`/proc/cmdline`). Unknown words are the kernel's and are ignored; a
//! malformed `rvpmu.*` value is an error, never a silent default.

/// Which scenario `/init` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Report boot facts (CPUs, PMU) and, with 2+ CPUs, CPU hotplug.
    Boot,
    /// Count the fixed workload with hardware, filtered and firmware events.
    Demo,
    /// Sample the fixed loop every `period` events through the ring buffer.
    Sampling,
    /// Open/read/close many multiplexed events, then check counters are free.
    Stress,
    /// Per-CPU firmware event counts while one CPU sends fences and IPIs.
    FwEvents,
    /// Steal time from /proc/stat over a busy interval on every CPU (and,
    /// with `rvpmu.hotplug=1`, again after cpu1 went offline and online).
    Steal,
    /// Run the instrumented /fib (hpmtrace's C API) and copy its trace out.
    Trace,
    /// Run the commands of `/rvpmu/plan` (perf and friends), one result
    /// line each.
    Plan,
    /// An interactive busybox shell on the console.
    Shell,
    /// Instructions from a sampling counter's overflow to the sampled
    /// task's resumption (firmware + kernel), from timed loops.
    SampleCost,
    /// Sleep `rvpmu.busy_ms` (default [`Params::STEAL_MS`]) and end: an
    /// idle guest next to a busy one under rvpmu-hv.
    Idle,
}

impl Mode {
    fn from_word(s: &str) -> Option<Mode> {
        Some(match s {
            "boot" => Mode::Boot,
            "demo" => Mode::Demo,
            "sampling" => Mode::Sampling,
            "stress" => Mode::Stress,
            "fwevents" => Mode::FwEvents,
            "steal" => Mode::Steal,
            "trace" => Mode::Trace,
            "plan" => Mode::Plan,
            "shell" => Mode::Shell,
            "samplecost" => Mode::SampleCost,
            "idle" => Mode::Idle,
            _ => return None,
        })
    }

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Boot => "boot",
            Mode::Demo => "demo",
            Mode::Sampling => "sampling",
            Mode::Stress => "stress",
            Mode::FwEvents => "fwevents",
            Mode::Steal => "steal",
            Mode::Trace => "trace",
            Mode::Plan => "plan",
            Mode::Shell => "shell",
            Mode::SampleCost => "samplecost",
            Mode::Idle => "idle",
        }
    }
}

/// Everything `/init` takes from the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    pub mode: Mode,
    /// Iterations of the fixed two-instruction loop.
    pub iters: u64,
    /// Sampling period (events between samples).
    pub period: u64,
    /// Open/read/close rounds of the stress scenario (over all CPUs).
    pub rounds: u64,
    /// Guest milliseconds of the busy interval over which steal time is
    /// measured (`rvpmu.busy_ms`): the steal scenario uses
    /// [`Params::STEAL_MS`] when absent; the demo measures steal only when
    /// it is given.
    pub busy_ms: Option<u64>,
    /// `rvpmu.hotplug=1`: the steal scenario also takes cpu1 offline and
    /// online and measures again.
    pub hotplug: bool,
}

impl Params {
    /// Defaults used when the command line does not name a value.
    pub const DEFAULT: Params = Params {
        mode: Mode::Demo,
        iters: 10_000_000,
        period: 1_000_000,
        rounds: 1000,
        busy_ms: None,
        hotplug: false,
    };

    /// Busy interval of the steal scenario when `rvpmu.busy_ms` is absent.
    pub const STEAL_MS: u64 = 2000;

    /// Parse a kernel command line.
    pub fn parse(cmdline: &str) -> Result<Params, String> {
        let mut p = Params::DEFAULT;
        for word in cmdline.split_whitespace() {
            let Some(rest) = word.strip_prefix("rvpmu.") else {
                continue;
            };
            let (key, value) = rest
                .split_once('=')
                .ok_or_else(|| format!("`{word}`: expected rvpmu.KEY=VALUE"))?;
            let number = || -> Result<u64, String> {
                let n: u64 = value
                    .parse()
                    .map_err(|_| format!("`{word}`: `{value}` is not a decimal number"))?;
                if n == 0 {
                    return Err(format!("`{word}`: must be at least 1"));
                }
                Ok(n)
            };
            match key {
                "mode" => {
                    p.mode = Mode::from_word(value).ok_or_else(|| {
                        format!(
                        "`{word}`: mode must be boot, demo, sampling, stress, fwevents, steal, trace, plan, shell, samplecost or idle"
                    )
                    })?
                }
                "iters" => p.iters = number()?,
                "period" => p.period = number()?,
                "rounds" => p.rounds = number()?,
                "busy_ms" => p.busy_ms = Some(number()?),
                "hotplug" => {
                    p.hotplug = match value {
                        "0" => false,
                        "1" => true,
                        _ => return Err(format!("`{word}`: must be 0 or 1")),
                    }
                }
                _ => return Err(format!("`{word}`: unknown parameter rvpmu.{key}")),
            }
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_without_rvpmu_words() {
        let p = Params::parse("console=ttyS0 earlycon=sbi").unwrap();
        assert_eq!(p, Params::DEFAULT);
    }

    #[test]
    fn reads_every_key() {
        let p = Params::parse(
            "x rvpmu.mode=sampling rvpmu.iters=30000000 rvpmu.period=5 rvpmu.rounds=7",
        )
        .unwrap();
        assert_eq!(p.mode, Mode::Sampling);
        assert_eq!((p.iters, p.period, p.rounds), (30_000_000, 5, 7));
        let p = Params::parse("rvpmu.mode=steal rvpmu.busy_ms=1500 rvpmu.hotplug=1").unwrap();
        assert_eq!(p.mode, Mode::Steal);
        assert_eq!((p.busy_ms, p.hotplug), (Some(1500), true));
        assert!(!Params::parse("rvpmu.hotplug=0").unwrap().hotplug);
        assert_eq!(Params::parse("rvpmu.mode=trace").unwrap().mode, Mode::Trace);
        let p = Params::parse("rvpmu.mode=steal rvpmu.mode=idle rvpmu.busy_ms=9").unwrap();
        assert_eq!((p.mode, p.busy_ms), (Mode::Idle, Some(9)));
        for (word, mode) in [
            ("plan", Mode::Plan),
            ("shell", Mode::Shell),
            ("samplecost", Mode::SampleCost),
        ] {
            let p =
                Params::parse(&format!("rvpmu.mode={word} rvpmu.iters=7 rvpmu.period=3")).unwrap();
            assert_eq!(
                (p.mode, p.mode.name(), p.iters, p.period),
                (mode, word, 7, 3)
            );
        }
    }

    #[test]
    fn rejects_bad_values() {
        assert!(Params::parse("rvpmu.mode=fast").is_err());
        assert!(Params::parse("rvpmu.iters=ten").is_err());
        assert!(Params::parse("rvpmu.iters=0").is_err());
        assert!(Params::parse("rvpmu.iters").is_err());
        assert!(Params::parse("rvpmu.colour=red").is_err());
        assert!(Params::parse("rvpmu.iters=-1").is_err());
        assert!(Params::parse("rvpmu.busy_ms=0").is_err());
        assert!(Params::parse("rvpmu.hotplug=yes").is_err());
        assert!(Params::parse("rvpmu.hotplug=2").is_err());
    }
}
