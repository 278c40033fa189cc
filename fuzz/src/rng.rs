//! A deterministic random number generator (SplitMix64): every campaign is
//! reproduced by its seed.

#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True with probability `1 / n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// A length biased towards small values: mostly 1 to 8, sometimes up to `max`.
    pub fn small_len(&mut self, max: usize) -> usize {
        let max = max.max(1);
        if self.one_in(4) {
            1 + self.below(max)
        } else {
            1 + self.below(max.min(8))
        }
    }

    /// A child generator, so that one stream's use does not shift another's.
    pub fn fork(&mut self) -> Rng {
        Rng(self.next_u64())
    }
}

/// The campaign's seed: `FNO_FUZZ_SEED` (decimal or 0x-hex) or the clock.
pub fn seed_from_env() -> u64 {
    match std::env::var("FNO_FUZZ_SEED") {
        Ok(s) => parse_seed(&s).unwrap_or_else(|| panic!("FNO_FUZZ_SEED={s:?} is not an integer")),
        Err(_) => clock_seed(),
    }
}

pub fn parse_seed(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

pub fn clock_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Rng::new(t.as_nanos() as u64 ^ u64::from(std::process::id())).next_u64()
}
