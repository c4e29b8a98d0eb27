//! The hash map of the per-record paths (function names, addresses, cores).
//!
//! With std's SipHash the hashing is a large share of `report`'s time
//! (docs/hpmtrace.md, "Decoder throughput and memory"). Keys come from the
//! trace, so colliding ones are possible: they cost probes, never a wrong
//! answer, and a trace is the user's own file.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// Values kept by [`memo`] at most: past it a value is made again each
/// time (a trace with millions of distinct addresses stays bounded).
const MEMO_MAX: usize = 1 << 20;

/// `map[key]`, made by `make` and kept the first time it is asked for.
pub fn memo<K, V>(map: &mut FastMap<K, V>, key: &K, make: impl FnOnce() -> V) -> V
where
    K: std::hash::Hash + Eq + Clone,
    V: Clone,
{
    if let Some(v) = map.get(key) {
        return v.clone();
    }
    let v = make();
    if map.len() < MEMO_MAX {
        map.insert(key.clone(), v.clone());
    }
    v
}

/// Multiply-rotate hashing, a word at a time (the FxHash scheme).
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        // The product's low bits are poor (zero for page-aligned keys) and
        // hashbrown takes the bucket from the low bits: rotate the well
        // mixed middle down.
        self.0.rotate_left(26)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }

    fn write_u8(&mut self, v: u8) {
        self.add(v as u64);
    }
    fn write_u16(&mut self, v: u16) {
        self.add(v as u64);
    }
    fn write_u32(&mut self, v: u32) {
        self.add(v as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }
    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn equal_keys_hash_equal_and_near_keys_spread() {
        let b = BuildHasherDefault::<FastHasher>::default();
        assert_eq!(b.hash_one("fib"), b.hash_one(String::from("fib")));
        assert_ne!(b.hash_one("fib"), b.hash_one("fic"));
        assert_ne!(b.hash_one("abcdefgh1"), b.hash_one("abcdefgh2"));
        // Page-aligned addresses still differ in the bits hashbrown uses
        // (top 7 for control bytes, low ones for the bucket).
        let hs: Vec<u64> = (0..64u64)
            .map(|i| b.hash_one(0x40_0000 + i * 4096))
            .collect();
        let tops: std::collections::HashSet<u64> = hs.iter().map(|h| h >> 57).collect();
        let lows: std::collections::HashSet<u64> = hs.iter().map(|h| h & 63).collect();
        assert!(
            tops.len() > 24 && lows.len() > 24,
            "{} {}",
            tops.len(),
            lows.len()
        );
    }
}
