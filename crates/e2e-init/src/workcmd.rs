//! The `rvpmu-work` command line: which workload to run. The same binary is
//! /init; it takes this role when started under the name `rvpmu-work`
//! (basename of `argv[0]`), see the crate documentation for the contract.

/// The name (basename of `argv[0]`) under which the binary runs a workload.
pub const NAME: &str = "rvpmu-work";

/// Usage text, printed on stderr with exit status 2 for a bad command line.
pub const USAGE: &str = "\
usage: rvpmu-work WORKLOAD ARG
  alu N    rvpmu_alu_loop(N): exactly 2 user instructions per iteration
  hot N    rvpmu_hot_a for 3N iterations, then rvpmu_hot_b for N (4 each):
           cycles:u samples fall 75% / 25% into the two functions
  spin MS  spin in user mode for MS milliseconds of CLOCK_MONOTONIC
  ipi N    N IPIs from this CPU to another one, sent by the kernel through
           SBI (N reads of a perf event bound to the other CPU; needs 2 CPUs)
N and MS are decimal (0 allowed). alu, hot and spin print nothing: give N
with the same number of digits (e.g. 0000000 and 1000000) and two runs
differ by exactly the loop's instructions.";

/// A workload and its argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    Alu(u64),
    Hot(u64),
    Spin(u64),
    Ipi(u64),
}

/// Whether a program started as `argv0` is the workload runner.
pub fn is_work(argv0: &[u8]) -> bool {
    let base = match argv0.iter().rposition(|&b| b == b'/') {
        Some(i) => &argv0[i + 1..],
        None => argv0,
    };
    base == NAME.as_bytes()
}

/// Parse the arguments after `argv[0]`.
pub fn parse(args: &[String]) -> Result<Work, String> {
    let [what, n] = args else {
        return Err(format!(
            "expected a workload and one number, got {} argument(s)",
            args.len()
        ));
    };
    // Plain decimal digits only: u64::from_str would also take a '+'.
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{n}` is not a decimal number"));
    }
    let n: u64 = n.parse().map_err(|_| format!("`{n}` is too large"))?;
    Ok(match what.as_str() {
        "alu" => Work::Alu(n),
        "hot" => {
            // 3N iterations must fit.
            if n > u64::MAX / 3 {
                return Err(format!("hot {n}: 3N overflows"));
            }
            Work::Hot(n)
        }
        "spin" => Work::Spin(n),
        "ipi" => Work::Ipi(n),
        _ => return Err(format!("unknown workload `{what}`")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strings;

    #[test]
    fn recognises_its_name() {
        assert!(is_work(b"rvpmu-work"));
        assert!(is_work(b"/usr/bin/rvpmu-work"));
        assert!(is_work(b"./rvpmu-work"));
        assert!(!is_work(b"/init"));
        assert!(!is_work(b"init"));
        assert!(!is_work(b"rvpmu-work2"));
        assert!(!is_work(b"/usr/bin/rvpmu-work/"));
        assert!(!is_work(b""));
        assert!(!is_work(b"rvpmu-work\xff"));
    }

    #[test]
    fn parses_workloads() {
        assert_eq!(
            parse(&strings(&["alu", "1000000"])),
            Ok(Work::Alu(1_000_000))
        );
        assert_eq!(parse(&strings(&["alu", "0000000"])), Ok(Work::Alu(0)));
        assert_eq!(parse(&strings(&["hot", "5"])), Ok(Work::Hot(5)));
        assert_eq!(parse(&strings(&["spin", "250"])), Ok(Work::Spin(250)));
        assert_eq!(parse(&strings(&["ipi", "0"])), Ok(Work::Ipi(0)));
        assert_eq!(
            parse(&strings(&["alu", "18446744073709551615"])),
            Ok(Work::Alu(u64::MAX))
        );
    }

    #[test]
    fn rejects_bad_command_lines() {
        for bad in [
            &[][..],
            &["alu"][..],
            &["alu", "1", "2"][..],
            &["mul", "1"][..],
            &["alu", ""][..],
            &["alu", "-1"][..],
            &["alu", "+1"][..],
            &["alu", "1e6"][..],
            &["alu", " 1"][..],
            &["alu", "0x10"][..],
            &["alu", "18446744073709551616"][..],
            &["hot", "6148914691236517206"][..],
            &["ALU", "1"][..],
        ] {
            assert!(parse(&strings(bad)).is_err(), "{bad:?} accepted");
        }
        assert_eq!(
            parse(&strings(&["hot", "6148914691236517205"])),
            Ok(Work::Hot(6148914691236517205))
        );
    }
}
