//! The 32-bit Mersenne Twister MT19937 (Matsumoto & Nishimura), with the
//! three seedings the Python world uses: `init_genrand` (numpy
//! `RandomState(int)`, `torch.manual_seed`), `init_by_array` (numpy
//! `RandomState(array)`) and numpy's `MT19937(seed)` through a
//! [`SeedSequence`].

use crate::bit_generator::BitGenerator;
use crate::seed_sequence::SeedSequence;

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// MT19937 state: 624 words and the read position.
///
/// ```
/// use rlx_rng::Mt19937;
/// let mut mt = Mt19937::new(5489);
/// assert_eq!(mt.next_u32(), 3_499_211_612); // the reference implementation's first output
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mt19937 {
    key: [u32; N],
    pos: usize,
}

impl Mt19937 {
    /// `init_genrand(seed)`: the seeding of numpy's `RandomState(seed)` and
    /// of torch's `manual_seed(seed)` (which keeps the low 32 bits).
    pub fn new(seed: u32) -> Self {
        let mut key = [0u32; N];
        key[0] = seed;
        for i in 1..N {
            let prev = key[i - 1];
            key[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { key, pos: N }
    }

    /// `init_by_array(init_key)`: the seeding of numpy's
    /// `RandomState([k0, k1, ...])` (and of Python's `random.seed`). An
    /// empty key is treated as `[0]`; callers that must reject it (numpy
    /// does) check first.
    pub fn from_key(init_key: &[u32]) -> Self {
        let init_key: &[u32] = if init_key.is_empty() { &[0] } else { init_key };
        let mut mt = Mt19937::new(19_650_218);
        let key = &mut mt.key;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(init_key.len()) {
            let prev = key[i - 1];
            key[i] = (key[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(init_key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                key[0] = key[N - 1];
                i = 1;
            }
            if j >= init_key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = key[i - 1];
            key[i] =
                (key[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                key[0] = key[N - 1];
                i = 1;
            }
        }
        key[0] = 0x8000_0000;
        mt.pos = N;
        mt
    }

    /// numpy's `MT19937(seed)` bit generator (not `RandomState(seed)`!):
    /// the state words come from `SeedSequence(seed).generate_state(624)`,
    /// with the first word replaced by `0x80000000`, and reading starts at
    /// word 623.
    pub fn from_seed_sequence(seq: &SeedSequence) -> Self {
        let words = seq.generate_state_u32(N);
        let mut key = [0u32; N];
        key.copy_from_slice(&words);
        key[0] = 0x8000_0000;
        Mt19937 { key, pos: N - 1 }
    }

    /// Builds a generator from a raw state (numpy's `state['state']`:
    /// `key` and `pos`). `pos` is clamped to `0..=624`.
    pub fn from_state(key: [u32; 624], pos: usize) -> Self {
        Mt19937 {
            key,
            pos: pos.min(N),
        }
    }

    /// The raw state: the 624 key words and the read position.
    pub fn state(&self) -> (&[u32; 624], usize) {
        (&self.key, self.pos)
    }

    fn twist(&mut self) {
        let k = &mut self.key;
        for i in 0..N {
            let y = (k[i] & UPPER_MASK) | (k[(i + 1) % N] & LOWER_MASK);
            let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
            k[i] = k[(i + M) % N] ^ (y >> 1) ^ mag;
        }
        self.pos = 0;
    }

    /// The next tempered 32-bit output (`genrand_int32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.pos >= N {
            self.twist();
        }
        let mut y = self.key[self.pos];
        self.pos += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// Two outputs joined, the first one high: numpy's `mt19937_next64` and
    /// torch's `random64()`.
    pub fn next_u64(&mut self) -> u64 {
        let hi = self.next_u32() as u64;
        let lo = self.next_u32() as u64;
        (hi << 32) | lo
    }

    /// numpy's `mt19937_next_double` (`genrand_res53`):
    /// `((a >> 5) * 2^26 + (b >> 6)) / 2^53`.
    pub fn next_f64(&mut self) -> f64 {
        let a = (self.next_u32() >> 5) as f64;
        let b = (self.next_u32() >> 6) as f64;
        (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0
    }
}

impl BitGenerator for Mt19937 {
    fn next_u32(&mut self) -> u32 {
        Mt19937::next_u32(self)
    }
    fn next_u64(&mut self) -> u64 {
        Mt19937::next_u64(self)
    }
    fn next_f64(&mut self) -> f64 {
        Mt19937::next_f64(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_outputs() {
        // mt19937ar.c's published test: init_by_array({0x123, 0x234, 0x345, 0x456})
        let mut mt = Mt19937::from_key(&[0x123, 0x234, 0x345, 0x456]);
        let first: Vec<u32> = (0..5).map(|_| mt.next_u32()).collect();
        assert_eq!(
            first,
            [
                1_067_595_299,
                955_945_823,
                477_289_528,
                4_107_218_783,
                4_228_976_476
            ]
        );
        // std::mt19937 default seed: the 10000th output is 4123659995
        let mut mt = Mt19937::new(5489);
        let v = (0..10_000).map(|_| mt.next_u32()).last();
        assert_eq!(v, Some(4_123_659_995));
    }
}
