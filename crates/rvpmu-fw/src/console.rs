//! The ns16550 UART and tiny text output without `core::fmt` (which would
//! cost more code than the rest of the console put together).
#![cfg(target_os = "none")]

use core::ptr::{read_volatile, write_volatile};

/// QEMU virt's UART, used until the device tree has been read and for
/// reports of faults that happen before that.
pub const DEFAULT_UART: Uart = Uart {
    base: 0x1000_0000,
    shift: 0,
};

const THR: usize = 0;
const RBR: usize = 0;
const LSR: usize = 5;
const LSR_DATA_READY: u8 = 1;
const LSR_THR_EMPTY: u8 = 1 << 5;

/// An ns16550-compatible UART with byte registers `1 << shift` apart.
#[derive(Clone, Copy)]
pub struct Uart {
    pub base: usize,
    pub shift: u32,
}

impl Uart {
    fn reg(&self, r: usize) -> *mut u8 {
        (self.base + (r << self.shift)) as *mut u8
    }

    /// Send one byte, waiting for room in the transmitter.
    pub fn put(&self, b: u8) {
        // SAFETY: base comes from the device tree's UART node (or the virt default).
        unsafe {
            while read_volatile(self.reg(LSR)) & LSR_THR_EMPTY == 0 {}
            write_volatile(self.reg(THR), b);
        }
    }

    /// A received byte, if one is waiting.
    pub fn get(&self) -> Option<u8> {
        // SAFETY: as put.
        unsafe {
            if read_volatile(self.reg(LSR)) & LSR_DATA_READY != 0 {
                Some(read_volatile(self.reg(RBR)))
            } else {
                None
            }
        }
    }
}

/// Output helpers over the firmware's console UART.
pub struct Out(pub Uart);

impl Out {
    pub fn str(&self, s: &str) -> &Self {
        for b in s.bytes() {
            if b == b'\n' {
                self.0.put(b'\r');
            }
            self.0.put(b);
        }
        self
    }
    pub fn hex(&self, v: usize) -> &Self {
        self.str("0x");
        let mut started = false;
        for i in (0..16).rev() {
            let d = (v >> (i * 4)) & 0xf;
            if d != 0 || started || i == 0 {
                started = true;
                self.0.put(b"0123456789abcdef"[d]);
            }
        }
        self
    }
    pub fn dec(&self, mut v: usize) -> &Self {
        let mut buf = [0u8; 20];
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        for &b in &buf[i..] {
            self.0.put(b);
        }
        self
    }
}

/// Lower-case hex digits of `v` into `buf`, no prefix; returns the used tail.
pub fn hex_digits(v: u64, buf: &mut [u8; 16]) -> &[u8] {
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = b"0123456789abcdef"[(v & 0xf) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}
