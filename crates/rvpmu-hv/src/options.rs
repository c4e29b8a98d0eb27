//! The hypervisor's own options: words of the host device tree's
//! `/chosen` `bootargs` (QEMU `-append`), and each guest's command line.
//!
//! | word | meaning |
//! |---|---|
//! | `rvpmu-hv.guests=N` | run N guests (1..=[`MAX_GUESTS`]) from the one bundle, time-sliced on this hart; default 1 |
//! | `rvpmu-hv.quantum_us=U` | the scheduler's quantum in microseconds (1..=10^6); default [`DEFAULT_QUANTUM_US`] |
//! | `rvpmu-hv.argN=WORD` | append WORD to guest N's command line (repeatable; N from 0) |
//! | `rvpmu-hv.switch=1ms` | with one guest: save and restore its counters every 1 ms and report the cost |

/// Most guests the hypervisor runs (its static vCPU slots and G-stage
/// tables).
pub const MAX_GUESTS: usize = 4;
/// The default quantum: one tick of a `HZ=250` Linux guest.
pub const DEFAULT_QUANTUM_US: u32 = 4000;

/// The options in the host's bootargs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostOptions<'a> {
    /// `rvpmu-hv.switch=1ms`.
    pub switch_every_ms: bool,
    /// `rvpmu-hv.guests=`.
    pub guests: usize,
    /// `rvpmu-hv.quantum_us=`.
    pub quantum_us: u32,
    bootargs: &'a str,
}

const ARG: &str = "rvpmu-hv.arg";

impl<'a> HostOptions<'a> {
    /// Parse the host's bootargs (other words are ignored: they are not
    /// the hypervisor's). A malformed or out-of-range value is an error
    /// naming the word's option.
    pub fn parse(bootargs: &'a str) -> Result<HostOptions<'a>, &'static str> {
        let mut o = HostOptions {
            switch_every_ms: false,
            guests: 1,
            quantum_us: DEFAULT_QUANTUM_US,
            bootargs,
        };
        for w in bootargs.split_whitespace() {
            if w == "rvpmu-hv.switch=1ms" {
                o.switch_every_ms = true;
            } else if let Some(v) = w.strip_prefix("rvpmu-hv.guests=") {
                o.guests = match v.parse::<usize>() {
                    Ok(n) if (1..=MAX_GUESTS).contains(&n) => n,
                    _ => return Err("rvpmu-hv.guests= wants 1 to 4"),
                };
            } else if let Some(v) = w.strip_prefix("rvpmu-hv.quantum_us=") {
                o.quantum_us = match v.parse::<u32>() {
                    Ok(n) if (1..=1_000_000).contains(&n) => n,
                    _ => return Err("rvpmu-hv.quantum_us= wants 1 to 1000000"),
                };
            } else if let Some(r) = w.strip_prefix(ARG) {
                match Self::split_arg(r) {
                    Some((n, _)) if n < MAX_GUESTS => {}
                    _ => return Err("rvpmu-hv.argN=WORD wants N from 0 to 3"),
                }
            }
        }
        Ok(o)
    }

    fn split_arg(r: &str) -> Option<(usize, &str)> {
        let (n, word) = r.split_once('=')?;
        Some((n.parse().ok()?, word))
    }

    /// The words `rvpmu-hv.argN=` gives guest `n`, in order.
    pub fn guest_args(&self, n: usize) -> impl Iterator<Item = &'a str> {
        self.bootargs
            .split_whitespace()
            .filter_map(|w| Self::split_arg(w.strip_prefix(ARG)?))
            .filter(move |&(i, w)| i == n && !w.is_empty())
            .map(|(_, w)| w)
    }
}

/// `base` followed by each of `extra`, space-separated, in `buf`; `None`
/// when it does not fit.
pub fn guest_cmdline<'b, 'w>(
    buf: &'b mut [u8],
    base: &str,
    extra: impl Iterator<Item = &'w str>,
) -> Option<&'b str> {
    let mut len = 0;
    let mut put = |s: &str, len: &mut usize| -> Option<()> {
        let end = len.checked_add(s.len())?;
        buf.get_mut(*len..end)?.copy_from_slice(s.as_bytes());
        *len = end;
        Some(())
    };
    put(base, &mut len)?;
    for w in extra {
        if len > 0 {
            put(" ", &mut len)?;
        }
        put(w, &mut len)?;
    }
    // Whole UTF-8 strings were copied, so this cannot fail.
    core::str::from_utf8(&buf[..len]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_read_checked_and_default() {
        let o = HostOptions::parse("console=x rvpmu-hv.guests=2 rvpmu-hv.quantum_us=2500").unwrap();
        assert_eq!(
            (o.guests, o.quantum_us, o.switch_every_ms),
            (2, 2500, false)
        );
        let d = HostOptions::parse("").unwrap();
        assert_eq!((d.guests, d.quantum_us), (1, DEFAULT_QUANTUM_US));
        assert!(
            HostOptions::parse("rvpmu-hv.switch=1ms")
                .unwrap()
                .switch_every_ms
        );
        for bad in [
            "rvpmu-hv.guests=0",
            "rvpmu-hv.guests=5",
            "rvpmu-hv.guests=two",
            "rvpmu-hv.quantum_us=0",
            "rvpmu-hv.quantum_us=1000001",
            "rvpmu-hv.quantum_us=-4",
            "rvpmu-hv.arg4=x",
            "rvpmu-hv.argx=y",
            "rvpmu-hv.arg1",
        ] {
            assert!(HostOptions::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn each_guest_gets_its_own_words_appended() {
        let o = HostOptions::parse(
            "rvpmu-hv.arg1=rvpmu.mode=idle rvpmu-hv.arg0=a rvpmu-hv.arg1=rvpmu.busy_ms=5 rvpmu-hv.arg0=",
        )
        .unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(
            guest_cmdline(&mut buf, "console=hvc0", o.guest_args(1)),
            Some("console=hvc0 rvpmu.mode=idle rvpmu.busy_ms=5")
        );
        assert_eq!(guest_cmdline(&mut buf, "", o.guest_args(0)), Some("a"));
        assert_eq!(guest_cmdline(&mut buf, "b", o.guest_args(2)), Some("b"));
        let mut small = [0u8; 12];
        assert_eq!(
            guest_cmdline(&mut small, "console=hvc0", o.guest_args(1)),
            None
        );
        assert_eq!(
            guest_cmdline(&mut small, "console=hvc", o.guest_args(2)),
            Some("console=hvc")
        );
    }
}
