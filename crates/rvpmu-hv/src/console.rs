//! The hypervisor's own messages, through the host firmware's DBCN (one
//! `console_write` per line from a stack buffer: the hypervisor runs with
//! translation off, so the buffer's address is physical). Every line
//! starts with `rvpmu-hv: ` so tests can tell it from the guest's output.
#![cfg(target_os = "none")]

use core::fmt::{self, Write};
use rvpmu_sbi::client::sbi;

struct Line {
    buf: [u8; 256],
    len: usize,
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Text past the buffer is dropped: a message never fails.
        let take = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + take].copy_from_slice(&s.as_bytes()[..take]);
        self.len += take;
        Ok(())
    }
}

/// Print one line, prefixed with `rvpmu-hv: `.
pub fn print_line(args: fmt::Arguments<'_>) {
    let mut l = Line {
        buf: [0; 256],
        len: 0,
    };
    let _ = l.write_str("rvpmu-hv: ");
    let _ = l.write_fmt(args);
    if l.len == l.buf.len() {
        l.len -= 1;
    }
    l.buf[l.len] = b'\n';
    l.len += 1;
    let mut rest = &l.buf[..l.len];
    while !rest.is_empty() {
        let r = sbi().console_write(rest.len(), rest.as_ptr() as usize, 0);
        if r.error != 0 || r.value == 0 {
            // No DBCN (or it refuses): byte by byte, the last resort.
            rest.iter().for_each(|&b| {
                sbi().console_write_byte(b);
            });
            return;
        }
        rest = &rest[r.value.min(rest.len())..];
    }
}

/// Print a line of the hypervisor's.
macro_rules! hvprintln {
    ($($arg:tt)*) => {
        $crate::console::print_line(format_args!($($arg)*))
    };
}
pub(crate) use hvprintln;
