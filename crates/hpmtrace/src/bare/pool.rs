//! The static memory the trace buffers come from: SiFive's bare-metal
//! library allocates from a static pool of `PERF_MEM_POOL_SIZE` bytes
//! because there is no usable `malloc`; so does this one (the per-core
//! state lives in its own static table, so the pool holds buffers only).

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};

/// `PERF_MEM_POOL_SIZE` of sifive_bare_perf.h: 256 KiB, or the byte count
/// in `HPMTRACE_POOL_BYTES` when the library is built (`<n>[K|M]`), the
/// build-time setting SiFive's `#define` is.
pub const POOL_BYTES: usize = match option_env!("HPMTRACE_POOL_BYTES") {
    Some(v) => parse_bytes(v.as_bytes()),
    None => 256 * 1024,
};

/// `<n>[K|M]` at compile time; a malformed value fails the build.
const fn parse_bytes(v: &[u8]) -> usize {
    let mut n: usize = 0;
    let mut i = 0;
    let mut mul = 1;
    while i < v.len() {
        match v[i] {
            b'0'..=b'9' if mul == 1 => n = n * 10 + (v[i] - b'0') as usize,
            b'K' | b'k' if i + 1 == v.len() => mul = 1 << 10,
            b'M' | b'm' if i + 1 == v.len() => mul = 1 << 20,
            _ => panic!("HPMTRACE_POOL_BYTES must be <n>[K|M]"),
        }
        i += 1;
    }
    assert!(n > 0, "HPMTRACE_POOL_BYTES must be > 0");
    n * mul
}

#[repr(C, align(8))]
struct Pool(UnsafeCell<[u8; POOL_BYTES]>);

// SAFETY: the pool's bytes are only reached through `take`, which hands
// each range out once.
unsafe impl Sync for Pool {}

static POOL: Pool = Pool(UnsafeCell::new([0; POOL_BYTES]));
static USED: AtomicUsize = AtomicUsize::new(0);

/// Bytes not handed out yet.
pub fn free() -> usize {
    POOL_BYTES - USED.load(Ordering::Relaxed)
}

/// `words` 64-bit words of the pool, never handed out before.
pub fn take_words(words: usize) -> Option<&'static mut [u64]> {
    let bytes = take(words.checked_mul(8)?)?;
    // SAFETY: `take` hands out 8-aligned ranges (the pool is 8-aligned and
    // every size is rounded up to 8) of exactly words * 8 bytes, owned by
    // the caller from here on; any bit pattern is a valid u64.
    Some(unsafe { core::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<u64>(), words) })
}

/// `bytes` (rounded up to 8) of the pool, never handed out before; `None`
/// when the pool has fewer left. Memory is never returned.
pub fn take(bytes: usize) -> Option<&'static mut [u8]> {
    let bytes = bytes.checked_add(7)? & !7;
    let start = USED
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
            u.checked_add(bytes).filter(|&end| end <= POOL_BYTES)
        })
        .ok()?;
    // SAFETY: [start, start + bytes) lies in the pool and the update above
    // moved USED past it atomically, so no other call gets any of it: the
    // slice is the only reference to these bytes for the program's life.
    Some(unsafe { core::slice::from_raw_parts_mut(POOL.0.get().cast::<u8>().add(start), bytes) })
}
