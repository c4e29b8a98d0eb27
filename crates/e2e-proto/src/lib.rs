//! The protocol between `cargo xtask` (the host) and the guest's /init
//! (e2e-init), one definition both sides use:
//!
//! - the host passes `rvpmu.*` words on the kernel command line and, for
//!   `rvpmu.mode=plan`, a plan of commands as `/rvpmu/plan` in the
//!   initramfs ([`plan`]);
//! - the guest answers on its console: one [`RESULT`] line per result (a
//!   JSON object whose `scenario` names what it reports; a plan command's
//!   is [`result::CmdResult`]), and finally one [`DONE`] line, `ok` or
//!   `error: <why>`.
//!
//! The guest writes JSON with [`json`] (no serialisation crate in the
//! static /init); the host reads it with serde_json (feature `read`).
//!
//! ## Layering
//!
//! | module | uses |
//! |---|---|
//! | `json` | |
//! | `plan` | |
//! | `result` | `json` |

pub mod json;
pub mod plan;
pub mod result;

/// The prefix of a result line: `RVPMU-RESULT {json}`.
pub const RESULT: &str = "RVPMU-RESULT ";
/// The prefix of the guest's last line: `RVPMU-DONE ok` or `RVPMU-DONE
/// error: <why>`.
pub const DONE: &str = "RVPMU-DONE ";

/// The console line of a result whose JSON is `json`.
pub fn result_line(json: &str) -> String {
    format!("{RESULT}{json}")
}

/// The console line that ends a guest's run: `Ok` or the error.
pub fn done_line(outcome: Result<(), &str>) -> String {
    match outcome {
        Ok(()) => format!("{DONE}ok"),
        Err(e) => format!("{DONE}error: {e}"),
    }
}

/// Owned copies of `s` (the unit tests' argument vectors).
#[cfg(test)]
fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines() {
        assert_eq!(super::result_line("{}"), "RVPMU-RESULT {}");
        assert_eq!(super::done_line(Ok(())), "RVPMU-DONE ok");
        assert_eq!(super::done_line(Err("x")), "RVPMU-DONE error: x");
    }
}
