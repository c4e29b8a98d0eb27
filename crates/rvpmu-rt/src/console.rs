//! Output through SBI DBCN (one write per line), or the legacy
//! console_putchar when DBCN is absent. Lines are formatted into a fixed
//! buffer first: there is no allocator.

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, Ordering};
use rvpmu_sbi::client::sbi;
use sbi_spec::{dbcn::EID_DBCN, legacy::LEGACY_CONSOLE_PUTCHAR};

static USE_DBCN: AtomicBool = AtomicBool::new(false);
static LOCK: AtomicBool = AtomicBool::new(false);

/// Picks the console once, at boot.
pub fn init() {
    let r = sbi().base_probe_extension(EID_DBCN);
    USE_DBCN.store(r.error == 0 && r.value != 0, Ordering::Relaxed);
}

pub use crate::text::Text;

/// Short text for report fields.
pub type Field = Text<240>;

/// Formats into a `Field`.
#[macro_export]
macro_rules! text {
    ($($arg:tt)*) => {{
        let mut t = $crate::console::Field::new();
        let _ = core::fmt::Write::write_fmt(&mut t, format_args!($($arg)*));
        t
    }};
}

/// Prints one line.
#[macro_export]
macro_rules! println {
    ($($arg:tt)*) => {
        $crate::console::print_line(format_args!($($arg)*))
    };
}

fn write_bytes(bytes: &[u8]) {
    if USE_DBCN.load(Ordering::Relaxed) {
        let mut rest = bytes;
        while !rest.is_empty() {
            // DBCN console_write(num_bytes, base_lo, base_hi): the kernel
            // runs with satp = 0, so the buffer's address is physical.
            let r = sbi().console_write(rest.len(), rest.as_ptr() as usize, 0);
            if r.error != 0 || r.value == 0 {
                break;
            }
            rest = &rest[r.value.min(rest.len())..];
        }
        if rest.is_empty() {
            return;
        }
        for &b in rest {
            sbi().console_write_byte(b);
        }
    } else {
        for &b in bytes {
            sbi().legacy(LEGACY_CONSOLE_PUTCHAR, [b as usize, 0, 0, 0]);
        }
    }
}

/// Prints one line (`println!`), whole: lines of several harts do not mix.
pub fn print_line(args: fmt::Arguments<'_>) {
    let mut line = Text::<1024>::new();
    let _ = line.write_fmt(args);
    let _ = line.write_str("\n");
    while LOCK
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
    write_bytes(line.as_bytes());
    LOCK.store(false, Ordering::Release);
}
