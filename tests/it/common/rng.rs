//! One deterministic pseudo-random generator for the tests that draw their calls:
//! xorshift64*, so a failure can be replayed by its seed.

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// 0 .. n.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// 0 .. len, for indexing.
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }

    /// 1 ..= max, log-uniform (every magnitude as likely), or an edge.
    pub fn magnitude(&mut self, max: u64) -> u64 {
        match self.below(8) {
            0 => max,
            1 => 1,
            2 => max - self.below(3).min(max - 1),
            _ => {
                let bits = 64 - max.leading_zeros() as u64;
                let v = self.next() >> (64 - 1 - self.below(bits));
                v.clamp(1, max)
            }
        }
    }
}
