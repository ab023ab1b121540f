//! numpy's `Generator` (`np.random.default_rng(seed)`): the distributions
//! of `_generator.pyx` over any [`BitGenerator`], by default [`Pcg64`]
//! seeded through a [`SeedSequence`].

use crate::bit_generator::BitGenerator;
use crate::bounded::{self, NumpyInt};
use crate::choice;
use crate::distributions;
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
        bounded::shuffle(&mut self.bit_generator, x);
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

    /// `standard_exponential(n)`: float64 exponentials by numpy's ziggurat
    /// (`method='zig'`, the default).
    pub fn standard_exponential(&mut self, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| distributions::standard_exponential(&mut self.bit_generator))
            .collect()
    }

    /// `exponential(scale, n)`: `scale * standard_exponential()`.
    /// A negative `scale` (or `-0.0`, as numpy's sign-bit check) is an error.
    pub fn exponential(&mut self, scale: f64, n: usize) -> Result<Vec<f64>> {
        check_non_negative("scale", scale)?;
        Ok((0..n)
            .map(|_| scale * distributions::standard_exponential(&mut self.bit_generator))
            .collect())
    }

    /// `standard_gamma(shape, n)`: `shape == 1` is an exponential, `shape == 0`
    /// gives zeros, `shape < 1` rejection from a power / exponential mixture,
    /// `shape > 1` Marsaglia & Tsang with ziggurat normals.
    pub fn standard_gamma(&mut self, shape: f64, n: usize) -> Result<Vec<f64>> {
        check_non_negative("shape", shape)?;
        Ok((0..n)
            .map(|_| distributions::standard_gamma(&mut self.bit_generator, shape))
            .collect())
    }

    /// `gamma(shape, scale, n)`: `scale * standard_gamma(shape)`.
    pub fn gamma(&mut self, shape: f64, scale: f64, n: usize) -> Result<Vec<f64>> {
        check_non_negative("shape", shape)?;
        check_non_negative("scale", scale)?;
        Ok((0..n)
            .map(|_| scale * distributions::standard_gamma(&mut self.bit_generator, shape))
            .collect())
    }

    /// `beta(a, b, n)`: Johnk's algorithm when `a <= 1` and `b <= 1` (a
    /// direct 0 / 1 draw when both are below `3e-103`; logarithms when a
    /// power underflows), else `Ga / (Ga + Gb)` of two gammas. `a` and `b`
    /// must be `> 0`.
    pub fn beta(&mut self, a: f64, b: f64, n: usize) -> Result<Vec<f64>> {
        check_positive("a", a)?;
        check_positive("b", b)?;
        Ok((0..n)
            .map(|_| distributions::beta(&mut self.bit_generator, a, b))
            .collect())
    }

    /// `poisson(lam, n)`: multiplication of uniforms below `lam = 10`, PTRS
    /// from there. `lam` must be `>= 0` (not NaN) and at most numpy's
    /// `POISSON_LAM_MAX` (`i64::MAX - 10 sqrt(i64::MAX)`).
    pub fn poisson(&mut self, lam: f64, n: usize) -> Result<Vec<i64>> {
        // numpy: `np.iinfo('l').max - np.sqrt(np.iinfo('l').max) * 10`
        let lam_max = i64::MAX as f64 - (i64::MAX as f64).sqrt() * 10.0;
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(lam >= 0.0) {
            return Err(RngError::InvalidParameter {
                name: "lam",
                value: lam,
                reason: "lam < 0 or lam is NaN",
            });
        }
        if lam > lam_max {
            return Err(RngError::InvalidParameter {
                name: "lam",
                value: lam,
                reason: "lam value too large",
            });
        }
        Ok((0..n)
            .map(|_| distributions::poisson(&mut self.bit_generator, lam))
            .collect())
    }

    /// `binomial(trials, p, n)`: inversion while `trials * min(p, 1 - p) <= 30`,
    /// BTPE beyond. `trials >= 0` and `p` in `[0, 1]` (not NaN).
    pub fn binomial(&mut self, trials: i64, p: f64, n: usize) -> Result<Vec<i64>> {
        if !(0.0..=1.0).contains(&p) {
            return Err(RngError::Probability {
                name: "p",
                value: p,
            });
        }
        if trials < 0 {
            return Err(RngError::NegativeCount {
                name: "n",
                value: trials,
            });
        }
        Ok((0..n)
            .map(|_| distributions::binomial(&mut self.bit_generator, trials, p))
            .collect())
    }

    /// `shuffle(x, axis=axis)` of a row-major array of shape `shape` held in
    /// `data`: the sub-arrays along `axis` are permuted with the same
    /// Fisher-Yates index sequence as the 1-d [`shuffle`](Self::shuffle).
    /// A shape that does not match `data.len()` or an axis past the last
    /// is an error; nothing is drawn then.
    pub fn shuffle_axis<T>(&mut self, data: &mut [T], shape: &[usize], axis: usize) -> Result<()> {
        if axis >= shape.len() {
            return Err(RngError::Shape(format!(
                "axis {axis} is out of bounds for an array of dimension {}",
                shape.len()
            )));
        }
        let total = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if total != Some(data.len()) {
            return Err(RngError::Shape(format!(
                "shape {shape:?} does not hold {} elements",
                data.len()
            )));
        }
        let len = shape[axis];
        let inner: usize = shape[axis + 1..].iter().product();
        let outer: usize = shape[..axis].iter().product();
        for i in (1..len).rev() {
            let j = bounded::random_interval(&mut self.bit_generator, i as u64) as usize;
            if i == j || inner == 0 {
                continue;
            }
            for o in 0..outer {
                let base = o * len * inner;
                for e in 0..inner {
                    data.swap(base + i * inner + e, base + j * inner + e);
                }
            }
        }
        Ok(())
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

/// numpy's `CONS_NON_NEGATIVE`: the sign bit must be clear (so `-0.0` is
/// refused); NaN passes, as in numpy.
fn check_non_negative(name: &'static str, value: f64) -> Result<()> {
    if !value.is_nan() && value.is_sign_negative() {
        return Err(RngError::InvalidParameter {
            name,
            value,
            reason: "must be non-negative",
        });
    }
    Ok(())
}

/// numpy's `CONS_POSITIVE` on a scalar: `value <= 0` is refused (NaN
/// passes, as in numpy).
fn check_positive(name: &'static str, value: f64) -> Result<()> {
    if value.is_nan() || value > 0.0 {
        Ok(())
    } else {
        Err(RngError::InvalidParameter {
            name,
            value,
            reason: "must be > 0",
        })
    }
}
