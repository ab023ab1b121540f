//! Correctly rounded sums and means of f64 values, independent of their order.
//!
//! The values are accumulated exactly as a Shewchuk expansion (non-overlapping
//! f64 partials whose sum is the exact sum, as in Python's `math.fsum`); the
//! result is then rounded once to the target type, with every rounding decision
//! taken from the sign of an exact residual. The result is therefore a function
//! of the multiset of values (and the divisor) only, not of how they were split
//! across ranks or in which order they arrived.

use std::cmp::Ordering;

/// Exact running sum of f64 values.
#[derive(Debug, Default, Clone)]
pub(crate) struct ExactSum {
    /// Non-overlapping partials, increasing in magnitude; their sum is exact.
    partials: Vec<f64>,
    /// Any NaN, or +inf and -inf together.
    nan: bool,
    pos_inf: bool,
    neg_inf: bool,
    /// Number of values added, and how many of them were -0.0.
    count: usize,
    neg_zeros: usize,
    /// Scratch expansion for the exact residual signs.
    scratch: Vec<f64>,
}

/// Adds `x` to the expansion `partials` exactly (Shewchuk's grow-expansion with
/// zero elimination, as in CPython's `math.fsum`).
fn grow(partials: &mut Vec<f64>, mut x: f64) {
    let mut i = 0;
    for j in 0..partials.len() {
        let mut y = partials[j];
        if x.abs() < y.abs() {
            std::mem::swap(&mut x, &mut y);
        }
        let hi = x + y;
        let lo = y - (hi - x);
        if lo != 0.0 {
            partials[i] = lo;
            i += 1;
        }
        x = hi;
    }
    partials.truncate(i);
    partials.push(x);
}

/// The sign of the exact sum of `terms` (`p`: scratch space, reused to
/// avoid an allocation per element).
fn exact_sign(p: &mut Vec<f64>, terms: impl IntoIterator<Item = f64>) -> Ordering {
    p.clear();
    for t in terms {
        grow(p, t);
    }
    // Non-overlapping partials: the largest in magnitude (the last nonzero
    // one) decides the sign.
    let top = p.iter().rev().copied().find(|v| *v != 0.0).unwrap_or(0.0);
    top.partial_cmp(&0.0).unwrap_or(Ordering::Equal)
}

/// `q * n` as an exact pair `(product, error)`.
fn two_prod(q: f64, n: f64) -> (f64, f64) {
    let p = q * n;
    (p, q.mul_add(n, -p))
}

impl ExactSum {
    /// Forgets every value (keeps the allocation).
    pub(crate) fn clear(&mut self) {
        self.partials.clear();
        *self = ExactSum {
            partials: std::mem::take(&mut self.partials),
            scratch: std::mem::take(&mut self.scratch),
            ..ExactSum::default()
        };
    }

    /// Adds one value.
    pub(crate) fn add(&mut self, x: f64) {
        self.count += 1;
        if x.is_nan() {
            self.nan = true;
        } else if x == f64::INFINITY {
            self.pos_inf = true;
        } else if x == f64::NEG_INFINITY {
            self.neg_inf = true;
        } else if x == 0.0 {
            self.neg_zeros += usize::from(x.is_sign_negative());
        } else {
            grow(&mut self.partials, x);
        }
    }

    /// Sign of `S - q * n` (S: the exact sum).
    fn cmp_scaled(&mut self, q: f64, n: f64) -> Ordering {
        let (p, e) = two_prod(q, n);
        let terms = self.partials.iter().copied().chain([-p, -e]);
        exact_sign(&mut self.scratch, terms)
    }

    /// The exact sum divided by `n`, rounded once: to nearest-even f64 when
    /// `to_f64`, else rounded to odd at f64 precision (so that one further
    /// nearest-even rounding to a type with at most 51 significant bits, f32
    /// or f16, gives the correctly rounded quotient).
    ///
    /// Special values follow IEEE addition: NaN if any NaN or both
    /// infinities, else the infinity; an exact zero is -0.0 only when every
    /// value was -0.0. Finite values whose partial sums overflow f64 (only
    /// possible near `f64::MAX`) give ±inf.
    pub(crate) fn quotient(&mut self, n: usize, to_f64: bool) -> f64 {
        if self.nan || (self.pos_inf && self.neg_inf) {
            return f64::NAN;
        }
        if self.pos_inf {
            return f64::INFINITY;
        }
        if self.neg_inf {
            return f64::NEG_INFINITY;
        }
        let approx: f64 = self.partials.iter().sum();
        if !approx.is_finite() || self.partials.iter().any(|p| !p.is_finite()) {
            return approx;
        }
        let nf = n as f64;
        // The largest f64 `q` with q * n <= S (S: the exact sum).
        let mut q = approx / nf;
        while self.cmp_scaled(q, nf) == Ordering::Less {
            q = q.next_down();
        }
        while self.cmp_scaled(q.next_up(), nf) != Ordering::Less {
            q = q.next_up();
        }
        if q == 0.0 {
            q = 0.0;
        }
        if self.cmp_scaled(q, nf) == Ordering::Equal {
            if q == 0.0 && self.neg_zeros == self.count && self.count > 0 {
                return -0.0;
            }
            return q;
        }
        // S / n lies strictly between q and its successor.
        let up = q.next_up();
        if !to_f64 {
            return if q.to_bits() & 1 == 1 { q } else { up };
        }
        // Nearest-even: compare 2S with (q + up) * n, all terms exact.
        let (a, b) = two_prod(q, nf);
        let (c, d) = two_prod(up, nf);
        let twice = self.partials.iter().map(|v| 2.0 * v);
        match exact_sign(&mut self.scratch, twice.chain([-a, -b, -c, -d])) {
            Ordering::Less => q,
            Ordering::Greater => up,
            Ordering::Equal => {
                if q.to_bits() & 1 == 0 {
                    q
                } else {
                    up
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ExactSum;

    fn sum(xs: &[f64], n: usize, to_f64: bool) -> f64 {
        let mut s = ExactSum::default();
        xs.iter().for_each(|&x| s.add(x));
        s.quotient(n, to_f64)
    }

    #[test]
    fn cancellation_is_exact() {
        // math.fsum([1e100, 1.0, -1e100, 1e-100]) == 1.0 + 1e-100 rounded == 1.0
        assert_eq!(sum(&[1e100, 1.0, -1e100, 1e-100], 1, true), 1.0);
        assert_eq!(sum(&[0.1; 10], 1, true), 1.0);
        assert_eq!(sum(&[-0.0, -0.0], 1, true).to_bits(), (-0.0f64).to_bits());
        assert_eq!(sum(&[-0.0, 0.0], 1, true).to_bits(), 0.0f64.to_bits());
        assert!(sum(&[f64::INFINITY, f64::NEG_INFINITY], 1, true).is_nan());
    }

    #[test]
    fn halfway_rounds_to_even() {
        // 1 + 2^-53 is a tie between 1 and 1 + 2^-52: even keeps 1.
        let t = 2f64.powi(-53);
        assert_eq!(sum(&[1.0, t], 1, true), 1.0);
        // A tiny extra term breaks the tie upwards.
        assert_eq!(sum(&[1.0, t, 1e-300], 1, true), 1.0 + 2.0 * t);
        // Round to odd keeps the inexactness visible.
        assert_eq!(sum(&[1.0, t], 1, false), 1.0 + 2.0 * t);
    }

    #[test]
    fn mean_rounds_once() {
        assert_eq!(sum(&[1.0, 0.0, 0.0], 3, true), 1.0 / 3.0);
        assert_eq!(sum(&[3.0, 3.0, 3.0], 3, true), 3.0);
    }
}
