//! torch's sampling on the CPU generator beyond the elementwise
//! distributions: `exponential_`, `torch.multinomial` (ATen's
//! `Sampling.cpp` fast path and `MultinomialKernel.cpp`), and
//! `torch.normal` with tensor `mean` / `std`.

use crate::error::{Result, RngError};
use crate::torch::TorchGenerator;
use std::ops::{Add, Div, Mul};

/// The element types torch samples over here (float32 and float64).
pub trait TorchFloat:
    Copy + PartialOrd + Add<Output = Self> + Mul<Output = Self> + Div<Output = Self> + private::Sealed
{
    /// Rounds a double to this type.
    fn from_f64(v: f64) -> Self;
    /// Widens to a double (exact).
    fn to_f64(self) -> f64;
    /// Zero.
    const ZERO: Self;
}

mod private {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

impl TorchFloat for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    const ZERO: Self = 0.0;
}

impl TorchFloat for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    const ZERO: Self = 0.0;
}

/// torch's limit on categories (`FLOAT_MAX_CONSECUTIVE_INT`, 2^24).
const MAX_CATEGORIES: usize = 1 << 24;

fn bad(reason: impl Into<String>) -> RngError {
    RngError::InvalidProbabilities(reason.into())
}

impl TorchGenerator {
    /// `torch.empty(n).exponential_(lambd)` (float32): each value
    /// `-1/lambd * log1p(-u)` on a 53-bit double uniform, rounded to float32.
    pub fn exponential(&mut self, lambd: f64, n: usize) -> Result<Vec<f32>> {
        Ok(self
            .exponential_f64(lambd, n)?
            .into_iter()
            .map(|v| v as f32)
            .collect())
    }

    /// `torch.empty(n, dtype=torch.float64).exponential_(lambd)`.
    pub fn exponential_f64(&mut self, lambd: f64, n: usize) -> Result<Vec<f64>> {
        if lambd.is_nan() || lambd <= 0.0 {
            return Err(RngError::InvalidParameter {
                name: "lambd",
                value: lambd,
                reason: "exponential_ expects lambd > 0",
            });
        }
        Ok((0..n).map(|_| self.exponential_one(lambd)).collect())
    }

    fn exponential_one(&mut self, lambd: f64) -> f64 {
        let u = self.uniform_unit_f64();
        -1.0 / lambd * (-u).ln_1p()
    }

    /// `torch.multinomial(probs, num_samples, replacement)` over `probs`
    /// holding `rows × categories` weights (row-major; one row for a 1-d
    /// tensor); returns `rows × num_samples` category indices.
    ///
    /// Without replacement, or for a single sample, torch's fast path:
    /// `q ~ Exp(1)` over the whole tensor, then the top `num_samples` of
    /// `probs / q` per row (ties, which have probability zero, go to the
    /// lower index). With replacement: per row the cumulative sum in the
    /// weights' precision, normalised by its last value, and a binary
    /// search of one double uniform per sample.
    ///
    /// Errors (torch's checks): no category or no sample asked, more than
    /// 2^24 categories, more samples than categories without replacement, a
    /// negative / infinite / NaN weight, a row summing to zero. Without
    /// replacement a row with fewer non-zero weights than samples is refused
    /// too (torch would fill with zero-weight categories in an unspecified
    /// order; numpy's `choice` refuses the same).
    pub fn multinomial<T: TorchFloat>(
        &mut self,
        probs: &[T],
        categories: usize,
        num_samples: usize,
        replacement: bool,
    ) -> Result<Vec<i64>> {
        if categories == 0 {
            return Err(bad("prob_dist must have at least one category"));
        }
        if !probs.len().is_multiple_of(categories) {
            return Err(RngError::Shape(format!(
                "{} weights do not split into rows of {categories} categories",
                probs.len()
            )));
        }
        if categories > MAX_CATEGORIES {
            return Err(bad(format!(
                "number of categories cannot exceed 2^24, given {categories}"
            )));
        }
        if num_samples == 0 {
            return Err(bad("cannot sample num_samples <= 0 samples"));
        }
        if !replacement && num_samples > categories {
            return Err(RngError::SampleTooLarge {
                size: num_samples,
                population: categories,
            });
        }
        if !replacement || num_samples == 1 {
            self.multinomial_gumbel(probs, categories, num_samples)
        } else {
            self.multinomial_cdf(probs, categories, num_samples)
        }
    }

    /// The fast path: `argmax` / `topk` of `probs / Exp(1)`.
    fn multinomial_gumbel<T: TorchFloat>(
        &mut self,
        probs: &[T],
        categories: usize,
        num_samples: usize,
    ) -> Result<Vec<i64>> {
        if let Some(p) = probs
            .iter()
            .find(|p| !(0.0..f64::INFINITY).contains(&p.to_f64()))
        {
            return Err(bad(format!(
                "probability tensor contains either inf, nan or element < 0 (found {})",
                p.to_f64()
            )));
        }
        for (r, row) in probs.chunks_exact(categories).enumerate() {
            let nonzero = row.iter().filter(|p| p.to_f64() > 0.0).count();
            if nonzero == 0 {
                return Err(bad(format!(
                    "invalid multinomial distribution (sum of probabilities <= 0) in row {r}"
                )));
            }
            if nonzero < num_samples {
                return Err(bad(format!(
                    "row {r} has {nonzero} non-zero probabilities, fewer than the \
                     {num_samples} samples to draw without replacement"
                )));
            }
        }
        // One exponential per weight, in storage order, in the weights' dtype.
        let keys: Vec<T> = probs
            .iter()
            .map(|&p| p / T::from_f64(self.exponential_one(1.0)))
            .collect();
        let mut out = Vec::with_capacity(keys.len() / categories * num_samples);
        let mut order: Vec<usize> = Vec::with_capacity(categories);
        for row in keys.chunks_exact(categories) {
            order.clear();
            order.extend(0..categories);
            order.sort_by(|&a, &b| {
                row[b]
                    .partial_cmp(&row[a])
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(a.cmp(&b))
            });
            out.extend(order[..num_samples].iter().map(|&i| i as i64));
        }
        Ok(out)
    }

    /// With replacement, several samples: inverse-CDF by binary search.
    fn multinomial_cdf<T: TorchFloat>(
        &mut self,
        probs: &[T],
        categories: usize,
        num_samples: usize,
    ) -> Result<Vec<i64>> {
        let mut out = Vec::with_capacity(probs.len() / categories * num_samples);
        let mut cdf = vec![T::ZERO; categories];
        for row in probs.chunks_exact(categories) {
            let mut sum = T::ZERO;
            for (c, &p) in cdf.iter_mut().zip(row) {
                let v = p.to_f64();
                if v < 0.0 {
                    return Err(bad(
                        "invalid multinomial distribution (encountering probability entry < 0)",
                    ));
                }
                if !v.is_finite() {
                    return Err(bad("invalid multinomial distribution (encountering probability entry = infinity or NaN)"));
                }
                sum = sum + p;
                *c = sum;
            }
            if sum.to_f64() <= 0.0 {
                return Err(bad(
                    "invalid multinomial distribution (sum of probabilities <= 0)",
                ));
            }
            cdf.iter_mut().for_each(|c| *c = *c / sum);
            for _ in 0..num_samples {
                let u = self.uniform_unit_f64();
                let idx = cdf.partition_point(|c| c.to_f64() < u);
                out.push(idx as i64);
            }
        }
        Ok(out)
    }

    /// `torch.normal(mean, std)` with tensors `mean` and `std` of one shape
    /// (flattened here): standard normals (as [`randn`](Self::randn)
    /// draws them) times `std`, plus `mean`, each op rounded on its own.
    pub fn normal_tensor<T: TorchFloat>(&mut self, mean: &[T], std: &[T]) -> Result<Vec<T>> {
        if mean.len() != std.len() {
            return Err(RngError::Shape(format!(
                "mean has {} values and std {}; they must match",
                mean.len(),
                std.len()
            )));
        }
        check_stds(std)?;
        let z = self.standard_normals::<T>(mean.len());
        Ok(z.into_iter()
            .zip(std.iter().zip(mean))
            .map(|(z, (&s, &m))| z * s + m)
            .collect())
    }

    /// `torch.normal(mean_tensor, std)` with a scalar `std`: normals drawn
    /// with that `std` (as [`normal`](Self::normal)), plus `mean`.
    pub fn normal_mean_tensor<T: TorchFloat>(&mut self, mean: &[T], std: f64) -> Result<Vec<T>> {
        if std.is_nan() || std < 0.0 {
            return Err(RngError::NegativeScale {
                name: "std",
                value: std,
            });
        }
        let z = self.scaled_normals::<T>(std, mean.len());
        Ok(z.into_iter().zip(mean).map(|(z, &m)| z + m).collect())
    }

    /// `torch.normal(mean, std_tensor)` with a scalar `mean`: standard
    /// normals times `std`, plus `mean` (rounded to the dtype first).
    pub fn normal_std_tensor<T: TorchFloat>(&mut self, mean: f64, std: &[T]) -> Result<Vec<T>> {
        check_stds(std)?;
        let m = T::from_f64(mean);
        let z = self.standard_normals::<T>(std.len());
        Ok(z.into_iter().zip(std).map(|(z, &s)| z * s + m).collect())
    }

    fn standard_normals<T: TorchFloat>(&mut self, n: usize) -> Vec<T> {
        self.scaled_normals(1.0, n)
    }

    fn scaled_normals<T: TorchFloat>(&mut self, std: f64, n: usize) -> Vec<T> {
        if std::mem::size_of::<T>() == 4 {
            self.normal_f32_unchecked(0.0, std, n)
                .into_iter()
                .map(|v| T::from_f64(v as f64))
                .collect()
        } else {
            self.normal_f64_unchecked(0.0, std, n)
                .into_iter()
                .map(T::from_f64)
                .collect()
        }
    }
}

fn check_stds<T: TorchFloat>(std: &[T]) -> Result<()> {
    match std.iter().find(|s| s.to_f64().is_nan() || s.to_f64() < 0.0) {
        Some(s) => Err(RngError::NegativeScale {
            name: "std",
            value: s.to_f64(),
        }),
        None => Ok(()),
    }
}
