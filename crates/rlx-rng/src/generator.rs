//! numpy's `Generator` (`np.random.default_rng(seed)`): the distributions
//! of `_generator.pyx` over any [`BitGenerator`], by default [`Pcg64`]
//! seeded through a [`SeedSequence`].

use crate::bit_generator::BitGenerator;
use crate::bounded::{self, NumpyInt};
use crate::choice;
use crate::error::{Result, RngError};
use crate::pcg64::Pcg64;
use crate::seed_sequence::SeedSequence;
use crate::ziggurat;

/// numpy's `Generator`.
///
/// ```
/// use rlx_rng::Generator;
/// let mut rng = Generator::new(42); // np.random.default_rng(42)
/// let u = rng.random(3);
/// assert_eq!(u[0], 0.7739560485559633);
/// let k = rng.integers(0, 10, 5)?;  // rng.integers(0, 10, 5), after the draw above
/// assert!(k.iter().all(|&v| (0..10).contains(&v)));
/// # Ok::<(), rlx_rng::RngError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Generator<B: BitGenerator = Pcg64> {
    bit_generator: B,
}

impl Generator<Pcg64> {
    /// `np.random.default_rng(seed)` for an integer seed.
    pub fn new(seed: u128) -> Self {
        Self::from_bit_generator(Pcg64::new(seed))
    }

    /// `np.random.default_rng([s0, s1, ...])`.
    pub fn from_ints(seeds: &[u128]) -> Self {
        Self::from_seed_sequence(&SeedSequence::from_ints(seeds))
    }

    /// `np.random.default_rng(seed_sequence)`.
    pub fn from_seed_sequence(seq: &SeedSequence) -> Self {
        Self::from_bit_generator(Pcg64::from_seed_sequence(seq))
    }
}

impl<B: BitGenerator> Generator<B> {
    /// `np.random.Generator(bit_generator)`.
    pub fn from_bit_generator(bit_generator: B) -> Self {
        Generator { bit_generator }
    }

    /// The underlying bit generator.
    pub fn bit_generator(&self) -> &B {
        &self.bit_generator
    }

    /// The underlying bit generator, mutably.
    pub fn bit_generator_mut(&mut self) -> &mut B {
        &mut self.bit_generator
    }

    /// `random(n)`: float64 uniforms in `[0, 1)` (53 bits of one 64-bit draw).
    pub fn random(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.bit_generator.next_f64()).collect()
    }

    /// `random(n, dtype=np.float32)`: float32 uniforms from 32-bit draws
    /// (for PCG64: the two halves of one 64-bit output serve two values).
    pub fn random_f32(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.bit_generator.next_f32()).collect()
    }

    /// `standard_normal(n)`: float64 normals by numpy's ziggurat.
    pub fn standard_normal(&mut self, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| ziggurat::standard_normal_f64(&mut self.bit_generator))
            .collect()
    }

    /// `standard_normal(n, dtype=np.float32)`: the float32 ziggurat.
    pub fn standard_normal_f32(&mut self, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| ziggurat::standard_normal_f32(&mut self.bit_generator))
            .collect()
    }

    /// `normal(loc, scale, n)`: `loc + scale * standard_normal`.
    pub fn normal(&mut self, loc: f64, scale: f64, n: usize) -> Result<Vec<f64>> {
        if scale.is_nan() || scale < 0.0 {
            return Err(RngError::NegativeScale {
                name: "scale",
                value: scale,
            });
        }
        Ok((0..n)
            .map(|_| loc + scale * ziggurat::standard_normal_f64(&mut self.bit_generator))
            .collect())
    }

    /// `uniform(low, high, n)`: `low + (high - low) * random()`.
    pub fn uniform(&mut self, low: f64, high: f64, n: usize) -> Result<Vec<f64>> {
        let range = high - low;
        if !range.is_finite() {
            return Err(RngError::NonFiniteRange(range));
        }
        Ok((0..n)
            .map(|_| low + range * self.bit_generator.next_f64())
            .collect())
    }

    /// `integers(low, high, n)` (int64, `high` exclusive), by Lemire's method:
    /// ranges that fit in 32 bits take 32-bit draws (buffered halves for
    /// PCG64), wider ones 64-bit draws.
    pub fn integers(&mut self, low: i64, high: i64, n: usize) -> Result<Vec<i64>> {
        self.integers_as(low as i128, high as i128, n, false)
    }

    /// `integers(low, high, n, dtype=T, endpoint=endpoint)` for any numpy
    /// integer dtype (each width samples its own way: 8 / 16-bit values are
    /// sliced out of 32-bit draws). Bounds are checked against `T`.
    pub fn integers_as<T: NumpyInt>(
        &mut self,
        low: i128,
        high: i128,
        n: usize,
        endpoint: bool,
    ) -> Result<Vec<T>> {
        bounded::integers(&mut self.bit_generator, low, high, n, endpoint, false)
    }

    /// `shuffle(x)` of a 1-d array (or along the first axis): Fisher-Yates
    /// from the end with `random_interval` (masked rejection) indices.
    pub fn shuffle<T>(&mut self, x: &mut [T]) {
        for i in (1..x.len()).rev() {
            let j = bounded::random_interval(&mut self.bit_generator, i as u64) as usize;
            x.swap(i, j);
        }
    }

    /// `permutation(n)`: `arange(n)`, shuffled.
    pub fn permutation(&mut self, n: usize) -> Vec<i64> {
        let mut v: Vec<i64> = (0..n as i64).collect();
        self.shuffle(&mut v);
        v
    }

    /// `permutation(x)` of a slice: a shuffled copy.
    pub fn permuted_copy<T: Clone>(&mut self, x: &[T]) -> Vec<T> {
        let mut v = x.to_vec();
        self.shuffle(&mut v);
        v
    }

    /// `choice(population, size, replace, p, shuffle)`: indices into
    /// `0..population`.
    ///
    /// Without `p`: with replacement `integers(0, population)`; without,
    /// numpy's tail shuffle (population > 10000 and size > population / 50
    /// (/ 20 when `shuffle` is false)) or Floyd's algorithm, then a shuffle
    /// of the result when `shuffle`. With `p`: inverse-CDF sampling.
    pub fn choice(
        &mut self,
        population: usize,
        size: usize,
        replace: bool,
        p: Option<&[f64]>,
        shuffle: bool,
    ) -> Result<Vec<i64>> {
        choice::check(population, size, replace, p)?;
        if size == 0 {
            return Ok(Vec::new());
        }
        if let Some(p) = p {
            return Ok(if replace {
                let u = self.random(size);
                choice::with_p_replace(p, &u)
            } else {
                choice::with_p_no_replace(p, size, |k| self.random(k))
            });
        }
        if replace {
            return self.integers(0, population as i64, size);
        }
        let cutoff = if shuffle { 50 } else { 20 };
        if population > 10_000 && size > population / cutoff {
            let mut idx: Vec<i64> = (0..population as i64).collect();
            self.shuffle_int(&mut idx, (population - size).max(1));
            return Ok(idx.split_off(population - size));
        }
        // Floyd's algorithm; a set stands for numpy's open-addressing table
        let mut seen = std::collections::HashSet::with_capacity(size);
        let mut idx = Vec::with_capacity(size);
        for j in (population - size) as u64..population as u64 {
            let val = bounded::bounded_u64(&mut self.bit_generator, 0, j, false);
            let pick = if seen.insert(val) {
                val
            } else {
                seen.insert(j);
                j
            };
            idx.push(pick as i64);
        }
        if shuffle {
            self.shuffle_int(&mut idx, 1);
        }
        Ok(idx)
    }

    /// numpy's `_shuffle_int(n, first)`: Fisher-Yates over `first..n` with
    /// Lemire-bounded indices.
    fn shuffle_int(&mut self, data: &mut [i64], first: usize) {
        for i in (first..data.len()).rev() {
            let j = bounded::bounded_u64(&mut self.bit_generator, 0, i as u64, false) as usize;
            data.swap(i, j);
        }
    }
}
