//! A fixed-capacity string, for formatting without an allocator: the
//! S-mode runtime builds its console lines and report fields in it, and
//! the firmware and the hypervisor their messages.

use core::fmt;

/// A string of at most `N` bytes. Text past the capacity is dropped (a
/// report stays readable, formatting never fails), backing off to a char
/// boundary, so the contents are always whole UTF-8 sequences.
pub struct Text<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> Text<N> {
    /// An empty text.
    pub const fn new() -> Self {
        Self {
            buf: [0; N],
            len: 0,
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        // Only whole UTF-8 sequences are appended (see `write_str`).
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("?")
    }

    /// The text's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl<const N: usize> Default for Text<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> fmt::Write for Text<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = N - self.len;
        let mut take = s.len().min(room);
        while !s.is_char_boundary(take) {
            take -= 1;
        }
        self.buf[self.len..self.len + take].copy_from_slice(&s.as_bytes()[..take]);
        self.len += take;
        Ok(())
    }
}
