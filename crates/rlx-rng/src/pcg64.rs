//! numpy's `PCG64` bit generator: the 128-bit LCG of O'Neill's PCG family
//! with the XSL-RR output function, seeded through a [`SeedSequence`], and
//! numpy's buffered 32-bit draws (one 64-bit output serves two calls).

use crate::bit_generator::BitGenerator;
use crate::seed_sequence::SeedSequence;

const MULTIPLIER: u128 = (0x2360_ed05_1fc6_5da4 << 64) | 0x4385_df64_9fcc_f645;

/// numpy's `PCG64`.
///
/// ```
/// use rlx_rng::Pcg64;
/// let mut bg = Pcg64::new(0);
/// // numpy: np.random.PCG64(0).random_raw()
/// assert_eq!(bg.next_u64(), 0xa30f_ebcf_d9c2_825f);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pcg64 {
    state: u128,
    inc: u128,
    /// The buffered high half of a 64-bit draw, when one is pending.
    buffered_u32: Option<u32>,
}

impl Pcg64 {
    /// `PCG64(seed)`: seeded through `SeedSequence(seed)`.
    pub fn new(seed: u128) -> Self {
        Self::from_seed_sequence(&SeedSequence::new(seed))
    }

    /// `PCG64(seed_sequence)`: four 64-bit words from `generate_state`, the
    /// first two the initial state, the last two the stream.
    pub fn from_seed_sequence(seq: &SeedSequence) -> Self {
        let w = seq.generate_state_u64(4);
        let initstate = ((w[0] as u128) << 64) | w[1] as u128;
        let initseq = ((w[2] as u128) << 64) | w[3] as u128;
        Self::from_seed_words(initstate, initseq)
    }

    /// PCG's `srandom_r(initstate, initseq)`.
    pub fn from_seed_words(initstate: u128, initseq: u128) -> Self {
        let mut p = Pcg64 {
            state: 0,
            inc: (initseq << 1) | 1,
            buffered_u32: None,
        };
        p.step();
        p.state = p.state.wrapping_add(initstate);
        p.step();
        p
    }

    /// A generator at a raw state (numpy's `state['state']`: `state`, `inc`),
    /// with no buffered 32-bit half.
    pub fn from_state(state: u128, inc: u128) -> Self {
        Pcg64 {
            state,
            inc,
            buffered_u32: None,
        }
    }

    /// The raw LCG state and increment (numpy's `state['state']`).
    pub fn state(&self) -> (u128, u128) {
        (self.state, self.inc)
    }

    /// numpy's `has_uint32` / `uinteger`: the pending high half, if any.
    pub fn buffered_u32(&self) -> Option<u32> {
        self.buffered_u32
    }

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(MULTIPLIER).wrapping_add(self.inc);
    }

    /// The next 64-bit output (step, then XSL-RR of the new state).
    pub fn next_u64(&mut self) -> u64 {
        self.step();
        let s = self.state;
        let rot = (s >> 122) as u32;
        (((s >> 64) as u64) ^ (s as u64)).rotate_right(rot)
    }

    /// numpy's buffered `pcg64_next32`: the low half of a fresh 64-bit
    /// output, or the high half kept from the previous call.
    pub fn next_u32(&mut self) -> u32 {
        if let Some(v) = self.buffered_u32.take() {
            return v;
        }
        let next = self.next_u64();
        self.buffered_u32 = Some((next >> 32) as u32);
        next as u32
    }

    /// `(next_u64 >> 11) * 2^-53`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `advance(delta)`: jumps the LCG `delta` steps ahead in O(log delta)
    /// and drops the buffered half, as numpy does.
    pub fn advance(&mut self, mut delta: u128) {
        let (mut acc_mult, mut acc_plus) = (1u128, 0u128);
        let (mut cur_mult, mut cur_plus) = (MULTIPLIER, self.inc);
        while delta > 0 {
            if delta & 1 == 1 {
                acc_mult = acc_mult.wrapping_mul(cur_mult);
                acc_plus = acc_plus.wrapping_mul(cur_mult).wrapping_add(cur_plus);
            }
            cur_plus = cur_mult.wrapping_add(1).wrapping_mul(cur_plus);
            cur_mult = cur_mult.wrapping_mul(cur_mult);
            delta >>= 1;
        }
        self.state = acc_mult.wrapping_mul(self.state).wrapping_add(acc_plus);
        self.buffered_u32 = None;
    }
}

impl BitGenerator for Pcg64 {
    fn next_u32(&mut self) -> u32 {
        Pcg64::next_u32(self)
    }
    fn next_u64(&mut self) -> u64 {
        Pcg64::next_u64(self)
    }
    fn next_f64(&mut self) -> f64 {
        Pcg64::next_f64(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advance_matches_stepping() {
        let mut a = Pcg64::new(7);
        let mut b = a.clone();
        for _ in 0..1000 {
            a.next_u64();
        }
        b.advance(1000);
        assert_eq!(a.next_u64(), b.next_u64());
    }
}
