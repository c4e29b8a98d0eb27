//! A minimal JSON writer for the `RVPMU-RESULT` lines (the guest stays free
//! of serialisation crates; xtask parses the lines with serde_json).

use std::fmt::Write;

/// A JSON object under construction.
pub struct Obj {
    out: String,
    first: bool,
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
            c if (c as u32) < 0x20 => {
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
}
