//! A minimal JSON writer for the result lines (the guest stays free of
//! serialisation crates; xtask parses the lines with serde_json).

use std::fmt::Write;

/// A JSON object under construction.
pub struct Obj {
    out: String,
    first: bool,
}

impl Default for Obj {
    fn default() -> Obj {
        Obj::new()
    }
}

impl Obj {
    pub fn new() -> Obj {
        Obj {
            out: String::from("{"),
            first: true,
        }
    }

    fn key(&mut self, k: &str) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        push_str(&mut self.out, k);
        self.out.push(':');
    }

    /// Add an unsigned number.
    pub fn u64(mut self, k: &str, v: u64) -> Obj {
        self.key(k);
        let _ = write!(self.out, "{v}");
        self
    }

    /// Add a number with a fraction (`null` when not finite: JSON has no
    /// NaN or infinity).
    pub fn f64(mut self, k: &str, v: f64) -> Obj {
        self.key(k);
        if v.is_finite() {
            let _ = write!(self.out, "{v}");
        } else {
            self.out.push_str("null");
        }
        self
    }

    /// Add a signed number, or `null` for `None`.
    pub fn opt_i64(mut self, k: &str, v: Option<i64>) -> Obj {
        self.key(k);
        match v {
            Some(v) => {
                let _ = write!(self.out, "{v}");
            }
            None => self.out.push_str("null"),
        }
        self
    }

    /// Add an array of strings.
    pub fn str_array(mut self, k: &str, items: &[String]) -> Obj {
        self.key(k);
        self.out.push('[');
        for (i, s) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            push_str(&mut self.out, s);
        }
        self.out.push(']');
        self
    }

    /// Add a boolean.
    pub fn bool(mut self, k: &str, v: bool) -> Obj {
        self.key(k);
        self.out.push_str(if v { "true" } else { "false" });
        self
    }

    /// Add a string.
    pub fn str(mut self, k: &str, v: &str) -> Obj {
        self.key(k);
        push_str(&mut self.out, v);
        self
    }

    /// Add already-serialised JSON (an object or array from this module).
    pub fn raw(mut self, k: &str, json: &str) -> Obj {
        self.key(k);
        self.out.push_str(json);
        self
    }

    /// The finished object.
    pub fn finish(mut self) -> String {
        self.out.push('}');
        self.out
    }
}

/// A JSON array of already-serialised values.
pub fn array(items: &[String]) -> String {
    format!("[{}]", items.join(","))
}

fn push_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            // C0 controls must be escaped; DEL and the C1 controls need not
            // be, but escaped they cannot act on a terminal showing the
            // console.
            c if (c as u32) < 0x20 || (0x7f..=0x9f).contains(&(c as u32)) => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_objects_and_escapes() {
        let inner = Obj::new().u64("n", 3).finish();
        let s = Obj::new()
            .str("name", "a\"b\\c\n")
            .bool("ok", true)
            .f64("share", 0.25)
            .f64("nan", f64::NAN)
            .raw("list", &array(&[inner.clone(), inner]))
            .finish();
        assert_eq!(
            s,
            r#"{"name":"a\"b\\c\u000a","ok":true,"share":0.25,"nan":null,"list":[{"n":3},{"n":3}]}"#
        );
    }

    #[test]
    fn writes_nullable_numbers_and_string_arrays() {
        let s = Obj::new()
            .opt_i64("status", Some(-1))
            .opt_i64("signal", None)
            .str_array(
                "argv",
                &[
                    "perf".into(),
                    "a\tb\u{1b}[0m\u{7f}\u{9b}".into(),
                    "\u{e9}".into(),
                ],
            )
            .str_array("empty", &[])
            .finish();
        // Control characters are escaped, other characters (é) kept as UTF-8.
        assert_eq!(
            s,
            "{\"status\":-1,\"signal\":null,\"argv\":[\"perf\",\"a\\u0009b\\u001b[0m\\u007f\\u009b\",\"\u{e9}\"],\"empty\":[]}"
        );
    }
}
