//! Host-side plumbing of the kernels: batched row-major matrices read into
//! faer matrices of the tensor's own dtype (f32 stays f32) and written back.
//!
//! faer is column-major, the tensors row-major: a row-major `n x n` block
//! read as-is *is* the transpose in column-major order, so kernels that can
//! work on `A^T` (solves, inverse, determinant, symmetric input) use
//! [`load_t`], a sequential copy, and the rest [`load`], a transposing one.

use rlx_ir::custom::{KernelArg, KernelOut};

/// A real scalar the kernels run in: f32 or f64, with its byte encoding.
pub(crate) trait Real: faer::traits::RealField + Copy {
    /// Bytes per value.
    const SIZE: usize;
    /// The value of the `SIZE` little-endian bytes at the start of `b`.
    fn decode(b: &[u8]) -> Self;
    /// Writes the value into the `SIZE` bytes at the start of `b`.
    fn encode(self, b: &mut [u8]);
    /// `x` rounded to this type.
    fn of(x: f64) -> Self;
    /// The value as f64 (exact).
    fn f64(self) -> f64;
}

macro_rules! real {
    ($t:ty, $n:expr) => {
        impl Real for $t {
            const SIZE: usize = $n;
            fn decode(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b[..$n].try_into().expect("SIZE bytes"))
            }
            fn encode(self, b: &mut [u8]) {
                b[..$n].copy_from_slice(&self.to_le_bytes());
            }
            fn of(x: f64) -> Self {
                x as $t
            }
            fn f64(self) -> f64 {
                self as f64
            }
        }
    };
}
real!(f32, 4);
real!(f64, 8);

/// Runs `$f::<T>(args)` with `T` the f32 / f64 of `$dtype`, or an error naming
/// any other dtype.
macro_rules! by_dtype {
    ($dtype:expr, $f:ident($($arg:expr),*)) => {
        match $dtype {
            rlx_ir::DType::F64 => $f::<f64>($($arg),*),
            rlx_ir::DType::F32 => $f::<f32>($($arg),*),
            d => Err(format!("dtype {d} is not supported (f32 or f64)")),
        }
    };
}
pub(crate) use by_dtype;

/// Value `k` (row-major element index) of `a`.
#[inline]
pub(crate) fn get<T: Real>(a: &KernelArg, k: usize) -> T {
    T::decode(&a.bytes[k * T::SIZE..])
}

/// Row-major `rows x cols` block `i` of `a` as a faer matrix (a transposing copy).
pub(crate) fn load<T: Real>(a: &KernelArg, i: usize, rows: usize, cols: usize) -> faer::Mat<T> {
    let base = i * rows * cols;
    faer::Mat::from_fn(rows, cols, |r, c| get(a, base + r * cols + c))
}

/// The transpose (`cols x rows`) of row-major block `i` of `a`: its bytes
/// copied in order (faer fills column by column).
pub(crate) fn load_t<T: Real>(a: &KernelArg, i: usize, rows: usize, cols: usize) -> faer::Mat<T> {
    let base = i * rows * cols;
    faer::Mat::from_fn(cols, rows, |r, c| get(a, base + c * cols + r))
}

/// `(A + A^T) / 2` of square block `i` of `a` (only its lower triangle is
/// filled: the symmetric routines read no more).
pub(crate) fn load_sym_lower<T: Real>(a: &KernelArg, i: usize, n: usize) -> faer::Mat<T> {
    let base = i * n * n;
    let half = T::of(0.5);
    faer::Mat::from_fn(n, n, |r, c| {
        if c <= r {
            half * (get::<T>(a, base + r * n + c) + get::<T>(a, base + c * n + r))
        } else {
            T::of(0.0)
        }
    })
}

/// Writes `v` into `out` at element `at`.
#[inline]
pub(crate) fn put<T: Real>(out: &mut KernelOut, at: usize, v: T) {
    v.encode(&mut out.bytes[at * T::SIZE..]);
}

/// Writes `m` row-major into `out` from element `at`, each row `stride`
/// elements apart (`stride >= m.ncols()`).
pub(crate) fn store<T: Real>(
    out: &mut KernelOut,
    at: usize,
    stride: usize,
    m: faer::MatRef<'_, T>,
) {
    for r in 0..m.nrows() {
        for c in 0..m.ncols() {
            put(out, at + r * stride + c, m[(r, c)]);
        }
    }
}

/// Writes `m^T` row-major into `out` from element `at` (`m` read in its
/// own column-major order).
pub(crate) fn store_t<T: Real>(out: &mut KernelOut, at: usize, m: faer::MatRef<'_, T>) {
    let rows = m.nrows();
    for c in 0..m.ncols() {
        for r in 0..rows {
            put(out, at + c * rows + r, m[(r, c)]);
        }
    }
}

/// `(batch, n)` of a `[..., n, n]` argument.
pub(crate) fn square(a: &KernelArg) -> Result<(usize, usize), String> {
    let r = a.dims.len();
    if r < 2 || a.dims[r - 1] != a.dims[r - 2] {
        return Err(format!("expects [..., n, n], given {:?}", a.dims));
    }
    let n = a.dims[r - 1];
    let batch = a.dims[..r - 2].iter().product();
    Ok((batch, n))
}

/// `(batch, m, n)` of a `[..., m, n]` argument.
pub(crate) fn matrices(a: &KernelArg) -> Result<(usize, usize, usize), String> {
    let d = a.dims;
    let r = d.len();
    if r < 2 {
        return Err(format!("expects [..., m, n], given {d:?}"));
    }
    Ok((d[..r - 2].iter().product(), d[r - 2], d[r - 1]))
}

/// `(batch, n, k)` of `[..., n, n]` with `[..., n, k]`.
pub(crate) fn system(a: &KernelArg, b: &KernelArg) -> Result<(usize, usize, usize), String> {
    let (batch, n) = square(a)?;
    let r = b.dims.len();
    if r != a.dims.len() || b.dims[..r - 2] != a.dims[..r - 2] || b.dims[r - 2] != n {
        return Err(format!(
            "a {:?} and b {:?} must be [..., n, n] and [..., n, k]",
            a.dims, b.dims
        ));
    }
    Ok((batch, n, b.dims[r - 1]))
}

/// Per column of `u`: `-1` where its largest-magnitude entry (the first
/// such row on ties) is negative, else `1`. Multiplying the columns by
/// these fixes the sign of eigenvectors / singular vectors, so their
/// derivatives are well defined.
pub(crate) fn column_signs<T: Real>(u: faer::MatRef<'_, T>) -> Vec<T> {
    let zero = T::of(0.0);
    (0..u.ncols())
        .map(|c| {
            let mut best = 0;
            let abs = |x: T| if x < zero { zero - x } else { x };
            for r in 1..u.nrows() {
                if abs(u[(r, c)]) > abs(u[(best, c)]) {
                    best = r;
                }
            }
            T::of(if u[(best, c)] < zero { -1.0 } else { 1.0 })
        })
        .collect()
}
