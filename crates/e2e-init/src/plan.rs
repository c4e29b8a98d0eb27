//! The plan of `rvpmu.mode=plan`: parsing `/rvpmu/plan` and writing one
//! command's result line. Running the commands is the guest's part
//! (guest/session.rs).
//!
//! Format: UTF-8 text, one command per line. Empty lines (only spaces or
//! tabs) and lines whose first non-blank character is `#` are ignored.
//! Fields are separated by single TABs: the first is the command's name
//! (any text, for the result), the rest its argv (`argv[0]` is looked up on
//! PATH). Fields are taken verbatim (an empty field between two TABs is an
//! empty argument); a trailing CR (CRLF files) is dropped.

use crate::json::Obj;

/// Where the plan is read from.
pub const PATH: &str = "/rvpmu/plan";

/// One planned command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// 1-based line number in the plan (for error messages).
    pub line: usize,
    pub name: String,
    pub argv: Vec<String>,
}

/// Parse the plan's text. Errors name the line.
pub fn parse(text: &str) -> Result<Vec<Command>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let trimmed = line.trim_matches(|c| c == ' ' || c == '\t');
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let mut fields = line.split('\t');
        let name = fields.next().unwrap_or_default().to_string();
        let argv: Vec<String> = fields.map(str::to_string).collect();
        let n = i + 1;
        if name.is_empty() {
            return Err(format!("plan line {n}: empty command name: {line:?}"));
        }
        match argv.first() {
            None => {
                return Err(format!(
                    "plan line {n}: `{name}` has no argv (fields are TAB-separated): {line:?}"
                ))
            }
            Some(a0) if a0.is_empty() => {
                return Err(format!("plan line {n}: `{name}`: empty argv[0]"))
            }
            Some(_) => {}
        }
        if line.contains('\0') {
            return Err(format!("plan line {n}: NUL byte"));
        }
        out.push(Command {
            line: n,
            name,
            argv,
        });
    }
    Ok(out)
}

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

/// The console line announcing a command, as a shell session shows it.
pub fn announce(argv: &[String]) -> String {
    format!("rvpmu /init: $ {}", argv.join(" "))
}

/// The JSON of one command's `RVPMU-RESULT` line. Output that is not UTF-8
/// is converted lossily (invalid sequences become U+FFFD). A command that
/// did not start has empty stdout and its error as stderr.
pub fn result_json(
    name: &str,
    argv: &[String],
    outcome: &Outcome,
    elapsed_ns: u64,
    stdout: &[u8],
    stderr: &[u8],
) -> String {
    let lossy = String::from_utf8_lossy;
    let (status, signal, stdout, stderr) = match outcome {
        Outcome::Exited(s) => (Some(*s as i64), None, lossy(stdout), lossy(stderr)),
        Outcome::Signalled(s) => (None, Some(*s as i64), lossy(stdout), lossy(stderr)),
        Outcome::NotStarted(e) => (None, None, "".into(), e.as_str().into()),
    };
    Obj::new()
        .str("scenario", "cmd")
        .str("name", name)
        .str_array("argv", argv)
        .opt_i64("status", status)
        .opt_i64("signal", signal)
        .u64("elapsed_ns", elapsed_ns)
        .str("stdout", &stdout)
        .str("stderr", &stderr)
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strings;

    #[test]
    fn parses_lines_comments_and_blanks() {
        let text = "# a plan\n\nstat\tperf\tstat\t-e\tinstructions:u\trvpmu-work\talu\t1000\n   \n\t\n  # indented comment\r\npin\ttaskset\t-c\t1\trvpmu-work\tspin\t10\r\nempty-arg\tprintf\t%s|\t\nlast\ttrue";
        let p = parse(text).unwrap();
        assert_eq!(
            p,
            vec![
                Command {
                    line: 3,
                    name: "stat".into(),
                    argv: strings(&[
                        "perf",
                        "stat",
                        "-e",
                        "instructions:u",
                        "rvpmu-work",
                        "alu",
                        "1000"
                    ]),
                },
                Command {
                    line: 7,
                    name: "pin".into(),
                    argv: strings(&["taskset", "-c", "1", "rvpmu-work", "spin", "10"]),
                },
                Command {
                    line: 8,
                    name: "empty-arg".into(),
                    argv: strings(&["printf", "%s|", ""]),
                },
                Command {
                    line: 9,
                    name: "last".into(),
                    argv: strings(&["true"]),
                },
            ]
        );
        assert_eq!(parse("").unwrap(), vec![]);
        assert_eq!(parse("# only\n\n").unwrap(), vec![]);
        // Spaces are part of fields: only TAB separates.
        assert_eq!(
            parse("a b\techo\thello world").unwrap()[0],
            Command {
                line: 1,
                name: "a b".into(),
                argv: strings(&["echo", "hello world"]),
            }
        );
    }

    #[test]
    fn rejects_bad_lines() {
        let e = parse("ok\ttrue\nnoargv\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("noargv"), "{e}");
        assert!(parse("name perf stat").unwrap_err().contains("TAB"));
        assert!(parse("\tperf\tstat")
            .unwrap_err()
            .contains("empty command name"));
        assert!(parse("x\t\tstat").unwrap_err().contains("empty argv[0]"));
        assert!(parse("x\tperf\0\tstat").unwrap_err().contains("NUL"));
    }

    #[test]
    fn announces_like_a_shell() {
        assert_eq!(
            announce(&strings(&[
                "perf",
                "stat",
                "-e",
                "cycles:u",
                "rvpmu-work",
                "alu",
                "5"
            ])),
            "rvpmu /init: $ perf stat -e cycles:u rvpmu-work alu 5"
        );
    }

    #[test]
    fn result_lines() {
        let argv = strings(&["perf", "stat", "-x,", "rvpmu-work", "alu", "10"]);
        let j = result_json(
            "stat",
            &argv,
            &Outcome::Exited(0),
            1234,
            b"out\n",
            b"1000,,instructions:u\n\"q\"\t\\\x1b[1m\x07",
        );
        assert_eq!(
            j,
            r#"{"scenario":"cmd","name":"stat","argv":["perf","stat","-x,","rvpmu-work","alu","10"],"status":0,"signal":null,"elapsed_ns":1234,"stdout":"out\u000a","stderr":"1000,,instructions:u\u000a\"q\"\u0009\\\u001b[1m\u0007"}"#
        );
        let j = result_json(
            "k",
            &strings(&["sleep", "9"]),
            &Outcome::Signalled(9),
            5,
            b"",
            b"",
        );
        assert!(
            j.contains(r#""status":null,"signal":9,"elapsed_ns":5,"stdout":"","stderr":"""#),
            "{j}"
        );
        let j = result_json(
            "missing",
            &strings(&["nosuch"]),
            &Outcome::NotStarted("spawn nosuch: No such file or directory (os error 2)".into()),
            7,
            b"ignored",
            b"ignored",
        );
        assert!(j.ends_with(r#""status":null,"signal":null,"elapsed_ns":7,"stdout":"","stderr":"spawn nosuch: No such file or directory (os error 2)"}"#), "{j}");
    }

    #[test]
    fn non_utf8_output_is_replaced_lossily() {
        let j = result_json(
            "bin",
            &strings(&["cat", "/bin/busybox"]),
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
}
