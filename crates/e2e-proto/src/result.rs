//! A plan command's result: what the guest writes after running it
//! ([`CmdResult::new`], [`CmdResult::to_json`]) and the host reads back
//! (`CmdResult::from_json`, feature `read`). The JSON object:
//!
//! ```text
//! {"scenario":"cmd","name":"<name>","argv":["perf","stat",...],"status":0,"signal":null,"elapsed_ns":1234,"stdout":"...","stderr":"..."}
//! ```

use crate::json::Obj;

/// The `scenario` of a plan command's result.
pub const SCENARIO: &str = "cmd";

/// How a command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and exited normally with this status.
    Exited(i32),
    /// It was killed by this signal.
    Signalled(i32),
    /// It could not be started (the error goes to "stderr").
    NotStarted(String),
}

/// What one plan command did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CmdResult {
    pub name: String,
    pub argv: Vec<String>,
    /// The exit code; `None` when killed by a signal or not started.
    pub status: Option<i64>,
    /// The signal that killed it, if one did.
    pub signal: Option<i64>,
    /// CLOCK_MONOTONIC from spawn to exit (under icount: instructions of
    /// the whole machine).
    pub elapsed_ns: u64,
    pub stdout: String,
    pub stderr: String,
}

impl CmdResult {
    /// The result of a command that ended with `outcome`. Output that is
    /// not UTF-8 is converted lossily (invalid sequences become U+FFFD). A
    /// command that did not start has empty stdout and its error as
    /// stderr.
    pub fn new(
        name: &str,
        argv: &[String],
        outcome: &Outcome,
        elapsed_ns: u64,
        stdout: &[u8],
        stderr: &[u8],
    ) -> CmdResult {
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let (status, signal, stdout, stderr) = match outcome {
            Outcome::Exited(s) => (Some(*s as i64), None, lossy(stdout), lossy(stderr)),
            Outcome::Signalled(s) => (None, Some(*s as i64), lossy(stdout), lossy(stderr)),
            Outcome::NotStarted(e) => (None, None, String::new(), e.clone()),
        };
        CmdResult {
            name: name.to_string(),
            argv: argv.to_vec(),
            status,
            signal,
            elapsed_ns,
            stdout,
            stderr,
        }
    }

    /// The JSON of the result line.
    pub fn to_json(&self) -> String {
        Obj::new()
            .str("scenario", SCENARIO)
            .str("name", &self.name)
            .str_array("argv", &self.argv)
            .opt_i64("status", self.status)
            .opt_i64("signal", self.signal)
            .u64("elapsed_ns", self.elapsed_ns)
            .str("stdout", &self.stdout)
            .str("stderr", &self.stderr)
            .finish()
    }

    /// A result read back from its JSON; absent or mistyped fields are
    /// empty (a result is judged by what its fields say, not rejected).
    #[cfg(feature = "read")]
    pub fn from_json(v: &serde_json::Value) -> CmdResult {
        CmdResult {
            name: v["name"].as_str().unwrap_or("").into(),
            argv: v["argv"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
            status: v["status"].as_i64(),
            signal: v["signal"].as_i64(),
            elapsed_ns: v["elapsed_ns"].as_u64().unwrap_or(0),
            stdout: v["stdout"].as_str().unwrap_or("").into(),
            stderr: v["stderr"].as_str().unwrap_or("").into(),
        }
    }

    /// It exited with status 0.
    pub fn ok(&self) -> bool {
        self.status == Some(0)
    }

    /// The command line as a user would type it.
    pub fn shell_line(&self) -> String {
        self.argv.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strings;

    /// `CmdResult::new(...).to_json()`.
    fn json(
        name: &str,
        argv: &[&str],
        outcome: &Outcome,
        elapsed_ns: u64,
        stdout: &[u8],
        stderr: &[u8],
    ) -> String {
        CmdResult::new(name, &strings(argv), outcome, elapsed_ns, stdout, stderr).to_json()
    }

    #[test]
    fn result_lines() {
        let j = json(
            "stat",
            &["perf", "stat", "-x,", "rvpmu-work", "alu", "10"],
            &Outcome::Exited(0),
            1234,
            b"out\n",
            b"1000,,instructions:u\n\"q\"\t\\\x1b[1m\x07",
        );
        assert_eq!(
            j,
            r#"{"scenario":"cmd","name":"stat","argv":["perf","stat","-x,","rvpmu-work","alu","10"],"status":0,"signal":null,"elapsed_ns":1234,"stdout":"out\u000a","stderr":"1000,,instructions:u\u000a\"q\"\u0009\\\u001b[1m\u0007"}"#
        );
        let j = json("k", &["sleep", "9"], &Outcome::Signalled(9), 5, b"", b"");
        assert!(
            j.contains(r#""status":null,"signal":9,"elapsed_ns":5,"stdout":"","stderr":"""#),
            "{j}"
        );
        let j = json(
            "missing",
            &["nosuch"],
            &Outcome::NotStarted("spawn nosuch: No such file or directory (os error 2)".into()),
            7,
            b"ignored",
            b"ignored",
        );
        assert!(j.ends_with(r#""status":null,"signal":null,"elapsed_ns":7,"stdout":"","stderr":"spawn nosuch: No such file or directory (os error 2)"}"#), "{j}");
    }

    #[test]
    fn non_utf8_output_is_replaced_lossily() {
        let j = json(
            "bin",
            &["cat", "/bin/busybox"],
            &Outcome::Exited(1),
            0,
            b"ok\xff\xfe\x80end\xe2\x82",
            b"\xc3\xa9\xc3",
        );
        assert!(
            j.contains("\"stdout\":\"ok\u{fffd}\u{fffd}\u{fffd}end\u{fffd}\""),
            "{j}"
        );
        assert!(j.contains("\"stderr\":\"\u{e9}\u{fffd}\""), "{j}");
        assert!(j.contains("\"status\":1,"), "{j}");
    }

    #[cfg(feature = "read")]
    #[test]
    fn a_result_reads_back_as_written() {
        let r = CmdResult::new(
            "s",
            &strings(&["perf", "stat", "a\tb"]),
            &Outcome::Signalled(9),
            42,
            b"o\x1b\x7f\xc2\x9b",
            b"e\n",
        );
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["scenario"], SCENARIO);
        assert_eq!(CmdResult::from_json(&v), r);
        assert!(!r.ok());
        assert_eq!(r.shell_line(), "perf stat a\tb");
        // Missing fields read as empty.
        assert_eq!(
            CmdResult::from_json(&serde_json::json!({"scenario": "cmd"})),
            CmdResult::default()
        );
    }
}
