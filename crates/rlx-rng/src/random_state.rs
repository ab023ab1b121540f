//! numpy's legacy `RandomState` (`np.random.seed` / `np.random.RandomState`):
//! MT19937 with the legacy seeding, 53-bit uniforms from two draws, the
//! polar Box-Muller normal with its cached second value, and masked
//! rejection for bounded integers.

use crate::bounded::{self, NumpyInt};
use crate::choice;
use crate::error::{Result, RngError};
use crate::mt19937::Mt19937;

/// numpy's `RandomState`.
///
/// ```
/// use rlx_rng::RandomState;
/// let mut rs = RandomState::new(0); // np.random.RandomState(0)
/// assert_eq!(rs.random_sample(1), [0.5488135039273248]);
/// let z = rs.randn(3); // the polar method keeps its second value for the next call
/// assert_eq!(z.len(), 3);
/// ```
#[derive(Clone, Debug)]
pub struct RandomState {
    mt: Mt19937,
    gauss: Option<f64>,
}

impl RandomState {
    /// `RandomState(seed)` for an integer seed in `[0, 2^32)`.
    pub fn new(seed: u32) -> Self {
        Self::from_mt(Mt19937::new(seed))
    }

    /// `RandomState(seed)` for any integer: numpy accepts `[0, 2^32 - 1]`
    /// and rejects the rest.
    pub fn try_new(seed: i128) -> Result<Self> {
        u32::try_from(seed).map(Self::new).map_err(|_| {
            RngError::InvalidSeed(format!("seed {seed} must be between 0 and 2**32 - 1"))
        })
    }

    /// `RandomState([k0, k1, ...])` for a list of integers: `init_by_array`.
    /// numpy rejects an empty list. (numpy squeezes a one-element *ndarray*
    /// seed into an integer seed; for that, use [`new`](Self::new).)
    pub fn from_array(key: &[u32]) -> Result<Self> {
        if key.is_empty() {
            return Err(RngError::InvalidSeed("seed must be non-empty".into()));
        }
        Ok(Self::from_mt(Mt19937::from_key(key)))
    }

    /// A `RandomState` over a given MT19937 state, with no cached normal.
    pub fn from_mt(mt: Mt19937) -> Self {
        RandomState { mt, gauss: None }
    }

    /// The underlying MT19937.
    pub fn mt19937(&self) -> &Mt19937 {
        &self.mt
    }

    /// The underlying MT19937, mutably (numpy's `_bit_generator`, e.g. for
    /// `random_raw`).
    pub fn mt19937_mut(&mut self) -> &mut Mt19937 {
        &mut self.mt
    }

    /// The cached second normal of the polar method, if one is pending
    /// (numpy's `has_gauss` / `gauss`).
    pub fn cached_gauss(&self) -> Option<f64> {
        self.gauss
    }

    /// `random_sample(n)` (also `rand`, `random`): float64 uniforms in
    /// `[0, 1)` from two 32-bit draws each.
    pub fn random_sample(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.mt.next_f64()).collect()
    }

    /// `rand(n)`: the same as [`random_sample`](Self::random_sample).
    pub fn rand(&mut self, n: usize) -> Vec<f64> {
        self.random_sample(n)
    }

    /// `legacy_gauss`: one standard normal by the polar method; every
    /// second call returns the value cached by the one before.
    pub fn gauss(&mut self) -> f64 {
        if let Some(g) = self.gauss.take() {
            return g;
        }
        loop {
            let x1 = 2.0 * self.mt.next_f64() - 1.0;
            let x2 = 2.0 * self.mt.next_f64() - 1.0;
            let r2 = x1 * x1 + x2 * x2;
            if r2 < 1.0 && r2 != 0.0 {
                let f = (-2.0 * r2.ln() / r2).sqrt();
                self.gauss = Some(f * x1);
                return f * x2;
            }
        }
    }

    /// `randn(n)`: standard normals (legacy polar method).
    pub fn randn(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.gauss()).collect()
    }

    /// `standard_normal(n)`: the same stream as [`randn`](Self::randn).
    pub fn standard_normal(&mut self, n: usize) -> Vec<f64> {
        self.randn(n)
    }

    /// `normal(loc, scale, n)`: `loc + scale * gauss`.
    pub fn normal(&mut self, loc: f64, scale: f64, n: usize) -> Result<Vec<f64>> {
        if scale.is_nan() || scale < 0.0 {
            return Err(RngError::NegativeScale {
                name: "scale",
                value: scale,
            });
        }
        Ok((0..n).map(|_| loc + scale * self.gauss()).collect())
    }

    /// `uniform(low, high, n)`: `low + (high - low) * random_sample`.
    pub fn uniform(&mut self, low: f64, high: f64, n: usize) -> Result<Vec<f64>> {
        let range = high - low;
        if !range.is_finite() {
            return Err(RngError::NonFiniteRange(range));
        }
        Ok((0..n).map(|_| low + range * self.mt.next_f64()).collect())
    }

    /// `randint(low, high, n)` (int64, `high` exclusive), by masked
    /// rejection sampling (32-bit draws while the range fits in 32 bits).
    pub fn randint(&mut self, low: i64, high: i64, n: usize) -> Result<Vec<i64>> {
        self.randint_as(low as i128, high as i128, n)
    }

    /// `randint(low, high, n, dtype=T)` for any numpy integer dtype.
    pub fn randint_as<T: NumpyInt>(&mut self, low: i128, high: i128, n: usize) -> Result<Vec<T>> {
        bounded::integers(&mut self.mt, low, high, n, false, true)
    }

    /// `shuffle(x)`: Fisher-Yates from the end with `random_interval` indices.
    pub fn shuffle<T>(&mut self, x: &mut [T]) {
        bounded::shuffle(&mut self.mt, x);
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

    /// `choice(population, size, replace, p)`: indices into `0..population`.
    /// Without `p`: `randint(0, population)` with replacement, the first
    /// `size` of `permutation(population)` without. With `p`: inverse-CDF
    /// sampling on `random_sample`.
    pub fn choice(
        &mut self,
        population: usize,
        size: usize,
        replace: bool,
        p: Option<&[f64]>,
    ) -> Result<Vec<i64>> {
        choice::check(population, size, replace, p)?;
        if size == 0 {
            return Ok(Vec::new());
        }
        Ok(match (p, replace) {
            (Some(p), true) => {
                let u = self.random_sample(size);
                choice::with_p_replace(p, &u)
            }
            (Some(p), false) => choice::with_p_no_replace(p, size, |k| self.random_sample(k)),
            (None, true) => self.randint(0, population as i64, size)?,
            (None, false) => {
                let mut perm = self.permutation(population);
                perm.truncate(size);
                perm
            }
        })
    }
}
