//! Warnings and dumps on the console (the platform's: SBI DBCN in S-mode,
//! the program's function in M-mode).

use super::platform::{Platform, This};
use core::fmt::{self, Write};

struct Console;

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        This::console_write(s.as_bytes());
        Ok(())
    }
}

/// `hpmtrace: <message>` on a line of its own.
pub fn warn(args: fmt::Arguments<'_>) {
    let _ = Console.write_fmt(format_args!("hpmtrace: {args}\n"));
}
