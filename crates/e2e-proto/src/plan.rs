//! The plan of `rvpmu.mode=plan`: commands for the guest's /init to run in
//! order, written by the host ([`Plan`]) and read by the guest ([`parse`]).
//! Running them is the guest's part; each one's result is a
//! [`crate::result::CmdResult`].
//!
//! Format: UTF-8 text, one command per line. Empty lines (only spaces or
//! tabs) and lines whose first non-blank character is `#` are ignored.
//! Fields are separated by single TABs: the first is the command's name
//! (any text, for the result), the rest its argv (`argv[0]` is looked up on
//! PATH). Fields are taken verbatim (an empty field between two TABs is an
//! empty argument); a trailing CR (CRLF files) is dropped.

/// Where the plan is read from (in the initramfs).
pub const PATH: &str = "/rvpmu/plan";
/// The kernel command line word that makes /init run the plan.
pub const MODE: &str = "rvpmu.mode=plan";
/// In `rvpmu.mode=shell`, a script /init runs on the console with
/// busybox's `sh` instead of an interactive shell, when the initramfs has
/// one (a KVM host that hands its console to its KVM guest's QEMU).
pub const SHELL_SCRIPT: &str = "/rvpmu/shell";

/// One planned command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// 1-based line number in the plan (for error messages).
    pub line: usize,
    pub name: String,
    pub argv: Vec<String>,
}

/// Commands for the guest's /init to run in order, built on the host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub cmds: Vec<Command>,
}

impl Plan {
    fn push(&mut self, name: &str, argv: Vec<String>) -> &mut Self {
        assert!(
            !name.is_empty() && !name.contains(['\t', '\n', '\r']) && !argv.is_empty(),
            "a plan command has a one-field name and an argv"
        );
        self.cmds.push(Command {
            line: self.cmds.len() + 1,
            name: name.to_string(),
            argv,
        });
        self
    }

    /// Add `argv`, each element one argument (no TAB or newline in any),
    /// under `name`.
    pub fn args(&mut self, name: &str, argv: impl IntoIterator<Item = String>) -> &mut Self {
        let argv: Vec<String> = argv.into_iter().collect();
        assert!(
            argv.iter().all(|a| !a.contains(['\t', '\n'])),
            "plan arguments are one line without TABs"
        );
        self.push(name, argv)
    }

    /// Add `argv` (split at spaces) under `name`.
    pub fn cmd(&mut self, name: &str, argv: &str) -> &mut Self {
        self.push(name, argv.split_whitespace().map(String::from).collect())
    }

    /// A plan whose first command turns address-space randomisation off:
    /// with it a process's start-up (stack and mmap alignment in libc's
    /// and std's initialisation) varies by a few dozen instructions from
    /// run to run, and exact counts compare two runs.
    pub fn exact() -> Plan {
        let mut p = Plan::default();
        p.sh("aslr-off", "echo 0 > /proc/sys/kernel/randomize_va_space");
        p
    }

    /// Add `words` and then `last` (which may hold spaces, not a TAB or a
    /// newline: a plan line is TAB-separated) under `name`.
    pub fn argv<const N: usize>(&mut self, name: &str, words: [&str; N], last: &str) -> &mut Self {
        assert!(!last.contains(['\t', '\n']), "plan arguments are one line");
        let mut argv: Vec<String> = words.map(String::from).to_vec();
        argv.push(last.to_string());
        self.push(name, argv)
    }

    /// Add a busybox shell script (one line) under `name`.
    pub fn sh(&mut self, name: &str, script: &str) -> &mut Self {
        self.argv(name, ["sh", "-c"], script)
    }

    /// The plan's text (for [`PATH`]): a line per command, TAB-separated
    /// fields.
    pub fn text(&self) -> String {
        self.cmds
            .iter()
            .map(|c| format!("{}\t{}\n", c.name, c.argv.join("\t")))
            .collect()
    }
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

/// The console line announcing a command, as a shell session shows it.
pub fn announce(argv: &[String]) -> String {
    format!("rvpmu /init: $ {}", argv.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strings;

    #[test]
    fn plan_text_is_tab_separated_and_parses_back() {
        let mut p = Plan::default();
        p.cmd("a", "perf stat -e cycles -- rvpmu-work alu 5")
            .cmd("b", "true")
            .sh("c", "echo 0 > /x");
        assert_eq!(
            p.text(),
            "a\tperf\tstat\t-e\tcycles\t--\trvpmu-work\talu\t5\nb\ttrue\nc\tsh\t-c\techo 0 > /x\n"
        );
        assert_eq!(parse(&p.text()).unwrap(), p.cmds);
        let mut q = Plan::default();
        q.args("d", strings(&["qemu", "-append", "a b=c"]));
        assert_eq!(q.text(), "d\tqemu\t-append\ta b=c\n");
        assert_eq!(parse(&q.text()).unwrap(), q.cmds);
    }

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
}
