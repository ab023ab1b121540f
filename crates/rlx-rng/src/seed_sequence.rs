//! numpy's `SeedSequence`: hashes arbitrary entropy (plus a spawn key) into
//! a 4-word pool, and expands the pool into as many state words as a bit
//! generator needs (`generate_state`). This is how `default_rng(seed)`,
//! `PCG64(seed)` and `MT19937(seed)` turn a seed into a state.

const DEFAULT_POOL_SIZE: usize = 4;
const INIT_A: u32 = 0x43b0_d7e5;
const MULT_A: u32 = 0x931e_8875;
const INIT_B: u32 = 0x8b51_f9dd;
const MULT_B: u32 = 0x58f3_8ded;
const MIX_MULT_L: u32 = 0xca01_f9dd;
const MIX_MULT_R: u32 = 0x4973_f715;
const XSHIFT: u32 = 16;

/// A numpy `SeedSequence` (pool size 4).
///
/// ```
/// use rlx_rng::SeedSequence;
/// let ss = SeedSequence::new(0);
/// // numpy: np.random.SeedSequence(0).generate_state(2)
/// assert_eq!(ss.generate_state_u32(2), [2_968_811_710, 3_677_149_159]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedSequence {
    entropy: Vec<u32>,
    spawn_key: Vec<u32>,
    n_children_spawned: u32,
    pool: [u32; DEFAULT_POOL_SIZE],
}

/// The 32-bit words numpy makes of one non-negative Python int: least
/// significant first, `[0]` for zero (`_int_to_uint32_array`).
pub fn int_to_words(mut n: u128) -> Vec<u32> {
    if n == 0 {
        return vec![0];
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(n as u32);
        n >>= 32;
    }
    out
}

fn hashmix(value: u32, hash_const: &mut u32) -> u32 {
    let mut value = value ^ *hash_const;
    *hash_const = hash_const.wrapping_mul(MULT_A);
    value = value.wrapping_mul(*hash_const);
    value ^ (value >> XSHIFT)
}

fn mix(x: u32, y: u32) -> u32 {
    let r = MIX_MULT_L
        .wrapping_mul(x)
        .wrapping_sub(MIX_MULT_R.wrapping_mul(y));
    r ^ (r >> XSHIFT)
}

impl SeedSequence {
    /// `SeedSequence(seed)` for one integer seed (Python ints up to 128 bits).
    pub fn new(seed: u128) -> Self {
        Self::from_words(&int_to_words(seed), &[])
    }

    /// `SeedSequence([s0, s1, ...])`: each integer contributes its own
    /// 32-bit words ([`int_to_words`]), concatenated.
    pub fn from_ints(seeds: &[u128]) -> Self {
        let words: Vec<u32> = seeds.iter().flat_map(|&s| int_to_words(s)).collect();
        Self::from_words(&words, &[])
    }

    /// `SeedSequence(np.array(words, dtype=np.uint32), spawn_key=spawn_key)`:
    /// the entropy given directly as 32-bit words.
    pub fn from_words(entropy: &[u32], spawn_key: &[u32]) -> Self {
        let mut ss = SeedSequence {
            entropy: entropy.to_vec(),
            spawn_key: spawn_key.to_vec(),
            n_children_spawned: 0,
            pool: [0; DEFAULT_POOL_SIZE],
        };
        ss.mix_entropy();
        ss
    }

    fn assembled_entropy(&self) -> Vec<u32> {
        let mut run = self.entropy.clone();
        if !self.spawn_key.is_empty() && run.len() < DEFAULT_POOL_SIZE {
            run.resize(DEFAULT_POOL_SIZE, 0);
        }
        run.extend_from_slice(&self.spawn_key);
        run
    }

    fn mix_entropy(&mut self) {
        let entropy = self.assembled_entropy();
        let mut hash_const = INIT_A;
        let pool = &mut self.pool;
        for (i, slot) in pool.iter_mut().enumerate() {
            let word = entropy.get(i).copied().unwrap_or(0);
            *slot = hashmix(word, &mut hash_const);
        }
        for i_src in 0..DEFAULT_POOL_SIZE {
            for i_dst in 0..DEFAULT_POOL_SIZE {
                if i_src != i_dst {
                    let h = hashmix(pool[i_src], &mut hash_const);
                    pool[i_dst] = mix(pool[i_dst], h);
                }
            }
        }
        for &word in entropy.iter().skip(DEFAULT_POOL_SIZE) {
            for slot in pool.iter_mut() {
                let h = hashmix(word, &mut hash_const);
                *slot = mix(*slot, h);
            }
        }
    }

    /// The mixed entropy pool (numpy's `.pool`).
    pub fn pool(&self) -> [u32; 4] {
        self.pool
    }

    /// The spawn key (numpy's `.spawn_key`).
    pub fn spawn_key(&self) -> &[u32] {
        &self.spawn_key
    }

    /// `generate_state(n_words, dtype=np.uint32)`.
    pub fn generate_state_u32(&self, n_words: usize) -> Vec<u32> {
        let mut hash_const = INIT_B;
        (0..n_words)
            .map(|i| {
                let mut v = self.pool[i % DEFAULT_POOL_SIZE] ^ hash_const;
                hash_const = hash_const.wrapping_mul(MULT_B);
                v = v.wrapping_mul(hash_const);
                v ^ (v >> XSHIFT)
            })
            .collect()
    }

    /// `generate_state(n_words, dtype=np.uint64)`: pairs of 32-bit words,
    /// the first one low.
    pub fn generate_state_u64(&self, n_words: usize) -> Vec<u64> {
        self.generate_state_u32(2 * n_words)
            .chunks_exact(2)
            .map(|w| (w[0] as u64) | ((w[1] as u64) << 32))
            .collect()
    }

    /// `spawn(n)`: `n` independent children whose spawn keys extend this
    /// one's with the child's index.
    pub fn spawn(&mut self, n: usize) -> Vec<SeedSequence> {
        (0..n)
            .map(|_| {
                let mut key = self.spawn_key.clone();
                key.push(self.n_children_spawned);
                self.n_children_spawned += 1;
                SeedSequence::from_words(&self.entropy, &key)
            })
            .collect()
    }
}
