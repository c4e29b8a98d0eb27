/// The tests' deterministic random numbers (xorshift64*): seeded streams
/// that replay the same way on every run and need no dependency. The seed
/// must not be 0.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Below `n` (not 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
