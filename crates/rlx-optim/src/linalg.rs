//! Small dense row-major matrix helpers for the matrix optimizers (Muon,
//! SOAP, Kron-PSGD, Stiefel): products, Householder QR, Jacobi
//! eigendecomposition, triangular solves, Newton–Schulz orthogonalisation.
//! Sizes here are one parameter's dimensions, so plain loops are enough.

use crate::float::Float;

/// A row-major `rows x cols` matrix.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mat<T> {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<T>,
}

impl<T: Float> Mat<T> {
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Mat {
            rows,
            cols,
            data: vec![T::zero(); rows * cols],
        }
    }

    pub fn eye(n: usize) -> Self {
        let mut m = Self::zeros(n, n);
        for i in 0..n {
            m.data[i * n + i] = T::one();
        }
        m
    }

    pub fn from(rows: usize, cols: usize, data: Vec<T>) -> Self {
        debug_assert_eq!(rows * cols, data.len());
        Mat { rows, cols, data }
    }

    #[inline]
    pub fn at(&self, i: usize, j: usize) -> T {
        self.data[i * self.cols + j]
    }

    #[inline]
    pub fn set(&mut self, i: usize, j: usize, v: T) {
        self.data[i * self.cols + j] = v;
    }

    pub fn t(&self) -> Self {
        let mut o = Self::zeros(self.cols, self.rows);
        for i in 0..self.rows {
            for j in 0..self.cols {
                o.data[j * self.rows + i] = self.at(i, j);
            }
        }
        o
    }

    /// `self @ b`.
    pub fn mm(&self, b: &Mat<T>) -> Self {
        debug_assert_eq!(self.cols, b.rows);
        let mut o = Self::zeros(self.rows, b.cols);
        for i in 0..self.rows {
            for k in 0..self.cols {
                let a = self.at(i, k);
                let brow = &b.data[k * b.cols..(k + 1) * b.cols];
                let orow = &mut o.data[i * b.cols..(i + 1) * b.cols];
                for (x, &y) in orow.iter_mut().zip(brow) {
                    *x = *x + a * y;
                }
            }
        }
        o
    }

    /// `alpha * self + beta * b` elementwise.
    pub fn axpby(&self, alpha: T, b: &Mat<T>, beta: T) -> Self {
        let data = self
            .data
            .iter()
            .zip(&b.data)
            .map(|(&x, &y)| alpha * x + beta * y)
            .collect();
        Mat {
            rows: self.rows,
            cols: self.cols,
            data,
        }
    }

    pub fn scale(&self, s: T) -> Self {
        Mat {
            rows: self.rows,
            cols: self.cols,
            data: self.data.iter().map(|&x| x * s).collect(),
        }
    }

    pub fn fro(&self) -> T {
        crate::float::norm(&self.data)
    }

    /// Columns reordered: column `j` of the result is column `idx[j]`.
    pub fn select_cols(&self, idx: &[usize]) -> Self {
        let mut o = Self::zeros(self.rows, idx.len());
        for i in 0..self.rows {
            for (j, &c) in idx.iter().enumerate() {
                o.set(i, j, self.at(i, c));
            }
        }
        o
    }
}

/// Thin QR of a `n x p` matrix (`n >= p`) by Householder reflections, with
/// the signs fixed so that `diag(R) >= 0` (the unique factorisation of a
/// full-rank matrix). Returns `(Q, R)`.
pub(crate) fn qr<T: Float>(a: &Mat<T>) -> (Mat<T>, Mat<T>) {
    let (n, p) = (a.rows, a.cols);
    let mut r = a.clone();
    let mut vs: Vec<Vec<T>> = Vec::with_capacity(p);
    for k in 0..p.min(n) {
        let x: Vec<T> = (k..n).map(|i| r.at(i, k)).collect();
        let nx = crate::float::norm(&x);
        let mut v = x.clone();
        if nx > T::zero() {
            let alpha = if x[0] >= T::zero() { -nx } else { nx };
            v[0] = v[0] - alpha;
        }
        let nv = crate::float::norm(&v);
        if nv > T::zero() {
            v.iter_mut().for_each(|e| *e = *e / nv);
            for j in 0..p {
                let dot = (k..n).fold(T::zero(), |s, i| s + v[i - k] * r.at(i, j));
                for i in k..n {
                    let val = r.at(i, j) - T::c(2.0) * v[i - k] * dot;
                    r.set(i, j, val);
                }
            }
        }
        vs.push(v);
    }
    // Q = H_0 H_1 ... H_{p-1} applied to the first p columns of I.
    let mut q = Mat::zeros(n, p);
    for j in 0..p.min(n) {
        q.set(j, j, T::one());
    }
    for (k, v) in vs.iter().enumerate().rev() {
        for j in 0..p {
            let dot = (k..n).fold(T::zero(), |s, i| s + v[i - k] * q.at(i, j));
            for i in k..n {
                let val = q.at(i, j) - T::c(2.0) * v[i - k] * dot;
                q.set(i, j, val);
            }
        }
    }
    let mut rr = Mat::zeros(p, p);
    for i in 0..p.min(n) {
        for j in i..p {
            rr.set(i, j, r.at(i, j));
        }
    }
    for k in 0..p.min(n) {
        if rr.at(k, k) < T::zero() {
            for j in 0..p {
                rr.set(k, j, -rr.at(k, j));
            }
            for i in 0..n {
                q.set(i, k, -q.at(i, k));
            }
        }
    }
    (q, rr)
}

/// Eigendecomposition of a symmetric matrix by cyclic Jacobi rotations:
/// eigenvalues in descending order and the matching unit eigenvectors as
/// the columns of the returned matrix.
pub(crate) fn eigh_desc<T: Float>(a: &Mat<T>) -> (Vec<T>, Mat<T>) {
    let n = a.rows;
    let mut m = a.clone();
    let mut v = Mat::eye(n);
    let scale = m.fro();
    for _sweep in 0..100 {
        let off = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .fold(T::zero(), |s, (i, j)| s + m.at(i, j) * m.at(i, j))
            .sqrt();
        if off <= T::epsilon() * scale || off == T::zero() {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = m.at(p, q);
                if apq == T::zero() {
                    continue;
                }
                let theta = (m.at(q, q) - m.at(p, p)) / (T::c(2.0) * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + T::one()).sqrt());
                let t = if theta == T::zero() { T::one() } else { t };
                let c = T::one() / (t * t + T::one()).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (mkp, mkq) = (m.at(k, p), m.at(k, q));
                    m.set(k, p, c * mkp - s * mkq);
                    m.set(k, q, s * mkp + c * mkq);
                }
                for k in 0..n {
                    let (mpk, mqk) = (m.at(p, k), m.at(q, k));
                    m.set(p, k, c * mpk - s * mqk);
                    m.set(q, k, s * mpk + c * mqk);
                }
                for k in 0..n {
                    let (vkp, vkq) = (v.at(k, p), v.at(k, q));
                    v.set(k, p, c * vkp - s * vkq);
                    v.set(k, q, s * vkp + c * vkq);
                }
            }
        }
    }
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&i, &j| {
        m.at(j, j)
            .partial_cmp(&m.at(i, i))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let vals = idx.iter().map(|&i| m.at(i, i)).collect();
    (vals, v.select_cols(&idx))
}

/// `X = G / (||G||_F + eps)`, then `steps` quintic Newton–Schulz iterations
/// `A = X X^T, B = b A + c A A, X = a X + B X` (on the wide orientation),
/// as Keller Jordan's `zeropower_via_newtonschulz5`, in `T` instead of bf16.
pub(crate) fn newton_schulz<T: Float>(
    g: &Mat<T>,
    steps: usize,
    coeffs: (f64, f64, f64),
    eps: f64,
) -> Mat<T> {
    let tall = g.rows > g.cols;
    let mut x = if tall { g.t() } else { g.clone() };
    let nrm = x.fro() + T::c(eps);
    x.data.iter_mut().for_each(|e| *e = *e / nrm);
    let (a, b, c) = (T::c(coeffs.0), T::c(coeffs.1), T::c(coeffs.2));
    for _ in 0..steps {
        let am = x.mm(&x.t());
        let bm = am.axpby(b, &am.mm(&am), c);
        x = x.axpby(a, &bm.mm(&x), T::one());
    }
    if tall {
        x.t()
    } else {
        x
    }
}

/// Mode-`d` product of a row-major tensor of `shape` with `m`
/// (`m.cols == shape[d]`): `out[.., a, ..] = sum_n m[a, n] x[.., n, ..]`.
pub(crate) fn mode_mul<T: Float>(
    x: &[T],
    shape: &[usize],
    d: usize,
    m: &Mat<T>,
) -> (Vec<T>, Vec<usize>) {
    let outer: usize = shape[..d].iter().product();
    let inner: usize = shape[d + 1..].iter().product();
    let (n_in, n_out) = (shape[d], m.rows);
    let mut out = vec![T::zero(); outer * n_out * inner];
    for o in 0..outer {
        for a in 0..n_out {
            for n in 0..n_in {
                let w = m.at(a, n);
                let src = &x[(o * n_in + n) * inner..(o * n_in + n + 1) * inner];
                let dst = &mut out[(o * n_out + a) * inner..(o * n_out + a + 1) * inner];
                for (y, &v) in dst.iter_mut().zip(src) {
                    *y = *y + w * v;
                }
            }
        }
    }
    let mut s = shape.to_vec();
    s[d] = n_out;
    (out, s)
}

/// Scales the fibres along mode `d` elementwise: `out[.., a, ..] = f(a) x[.., a, ..]`.
pub(crate) fn mode_scale<T: Float>(
    x: &mut [T],
    shape: &[usize],
    d: usize,
    f: impl Fn(usize, T) -> T,
) {
    let inner: usize = shape[d + 1..].iter().product();
    let n = shape[d];
    for (k, v) in x.iter_mut().enumerate() {
        *v = f((k / inner) % n, *v);
    }
}

/// Gram matrix along mode `d`: `out[a, b] = sum_{other} x[.., a, ..] y[.., b, ..]`.
pub(crate) fn mode_gram<T: Float>(x: &[T], y: &[T], shape: &[usize], d: usize) -> Mat<T> {
    let outer: usize = shape[..d].iter().product();
    let inner: usize = shape[d + 1..].iter().product();
    let n = shape[d];
    let mut g = Mat::zeros(n, n);
    for a in 0..n {
        for b in 0..n {
            let mut s = T::zero();
            for o in 0..outer {
                let xa = &x[(o * n + a) * inner..(o * n + a + 1) * inner];
                let yb = &y[(o * n + b) * inner..(o * n + b + 1) * inner];
                s = xa.iter().zip(yb).fold(s, |s, (&u, &v)| s + u * v);
            }
            g.set(a, b, s);
        }
    }
    g
}

/// Inverse of an upper-triangular matrix by back substitution (`None` if
/// a diagonal entry is zero).
pub(crate) fn inv_upper<T: Float>(u: &Mat<T>) -> Option<Mat<T>> {
    let n = u.rows;
    let mut inv = Mat::zeros(n, n);
    for col in 0..n {
        for i in (0..=col).rev() {
            let mut s = if i == col { T::one() } else { T::zero() };
            for k in i + 1..=col {
                s = s - u.at(i, k) * inv.at(k, col);
            }
            let d = u.at(i, i);
            if d == T::zero() {
                return None;
            }
            inv.set(i, col, s / d);
        }
    }
    Some(inv)
}
