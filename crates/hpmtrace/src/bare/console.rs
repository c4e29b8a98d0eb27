//! Warnings and dumps on the SBI console: DBCN console_write, or the
//! legacy console_putchar where DBCN is absent.

use core::fmt::{self, Write};
use rvpmu::supervisor::sbi;
use sbi_spec::legacy::LEGACY_CONSOLE_PUTCHAR;

/// Write `bytes` to the console. The buffer's address is passed as
/// physical (the library's contract: satp = Bare).
pub fn write_bytes(bytes: &[u8]) {
    let mut rest = bytes;
    while !rest.is_empty() {
        let r = sbi().console_write(rest.len(), rest.as_ptr() as usize, 0);
        if r.error != 0 || r.value == 0 {
            for &b in rest {
                sbi().legacy(LEGACY_CONSOLE_PUTCHAR, [b as usize, 0, 0, 0]);
            }
            return;
        }
        rest = &rest[r.value.min(rest.len())..];
    }
}

struct Console;

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        write_bytes(s.as_bytes());
        Ok(())
    }
}

/// `hpmtrace: <message>` on a line of its own.
pub fn warn(args: fmt::Arguments<'_>) {
    let _ = Console.write_fmt(format_args!("hpmtrace: {args}\n"));
}
