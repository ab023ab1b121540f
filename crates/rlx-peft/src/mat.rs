//! A private row-major f32 matrix for the host arithmetic. Values are stored
//! in f32 (as PyTorch holds them); dot products accumulate in f64, so a
//! result is the exactly rounded f32 of the sum for the sizes adapters use.

use crate::error::{PeftError, Result};
use rlx_ir::{DType, HostTensor};

/// Row-major `rows x cols` f32 matrix.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Mat {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f32>,
}

/// The f32 values of `t`, or a dtype error naming `what`.
pub(crate) fn f32_values(what: &str, t: &HostTensor) -> Result<Vec<f32>> {
    t.to_vec::<f32>().map_err(|_| PeftError::DType {
        what: what.into(),
        expected: "f32".into(),
        given: t.dtype().to_string(),
    })
}

/// A tensor whose dims match `expected` exactly.
pub(crate) fn check_dims(what: &str, t: &HostTensor, expected: &[usize]) -> Result<()> {
    if t.dtype() != DType::F32 {
        return Err(PeftError::DType {
            what: what.into(),
            expected: "f32".into(),
            given: t.dtype().to_string(),
        });
    }
    if t.dims() != expected {
        return Err(PeftError::Shape {
            what: what.into(),
            expected: expected.to_vec(),
            given: t.dims().to_vec(),
        });
    }
    Ok(())
}

/// A host tensor from values whose count matches `dims` by construction.
pub(crate) fn host(data: Vec<f32>, dims: &[usize]) -> HostTensor {
    HostTensor::from_vec(data, dims).expect("value count matches dims by construction")
}

impl Mat {
    pub fn new(rows: usize, cols: usize, data: Vec<f32>) -> Mat {
        debug_assert_eq!(data.len(), rows * cols);
        Mat { rows, cols, data }
    }

    pub fn zeros(rows: usize, cols: usize) -> Mat {
        Mat::new(rows, cols, vec![0.0; rows * cols])
    }

    pub fn identity(n: usize) -> Mat {
        let mut m = Mat::zeros(n, n);
        for i in 0..n {
            m.data[i * n + i] = 1.0;
        }
        m
    }

    /// A rank-2 f32 tensor as a matrix (dims checked by the caller).
    pub fn from_host(what: &str, t: &HostTensor) -> Result<Mat> {
        let d = t.dims();
        if d.len() != 2 {
            return Err(PeftError::Invalid {
                what: what.into(),
                reason: format!("expected a rank-2 tensor, given dims {d:?}"),
            });
        }
        Ok(Mat::new(d[0], d[1], f32_values(what, t)?))
    }

    /// `x [..., k]` flattened to `[n, k]`; also returns the leading dims.
    pub fn from_batch(what: &str, x: &HostTensor, k: usize) -> Result<(Mat, Vec<usize>)> {
        let d = x.dims();
        if d.last() != Some(&k) {
            let mut expected = d.to_vec();
            match expected.last_mut() {
                Some(last) => *last = k,
                None => expected.push(k),
            }
            return Err(PeftError::Shape {
                what: what.into(),
                expected,
                given: d.to_vec(),
            });
        }
        let lead = d[..d.len() - 1].to_vec();
        let n = lead.iter().product();
        Ok((Mat::new(n, k, f32_values(what, x)?), lead))
    }

    pub fn to_host(&self) -> HostTensor {
        host(self.data.clone(), &[self.rows, self.cols])
    }

    /// Back to `[lead..., cols]`.
    pub fn into_batch(self, lead: &[usize]) -> HostTensor {
        let mut dims = lead.to_vec();
        dims.push(self.cols);
        host(self.data, &dims)
    }

    pub fn at(&self, r: usize, c: usize) -> f32 {
        self.data[r * self.cols + c]
    }

    pub fn t(&self) -> Mat {
        let mut out = Mat::zeros(self.cols, self.rows);
        for r in 0..self.rows {
            for c in 0..self.cols {
                out.data[c * self.rows + r] = self.at(r, c);
            }
        }
        out
    }

    /// `self @ other`.
    pub fn matmul(&self, other: &Mat) -> Mat {
        debug_assert_eq!(self.cols, other.rows);
        let mut out = Mat::zeros(self.rows, other.cols);
        for i in 0..self.rows {
            for j in 0..other.cols {
                let mut acc = 0.0f64;
                for k in 0..self.cols {
                    acc += f64::from(self.at(i, k)) * f64::from(other.at(k, j));
                }
                out.data[i * other.cols + j] = acc as f32;
            }
        }
        out
    }

    /// `self @ other^T` (PyTorch's `F.linear(self, other)`).
    pub fn matmul_t(&self, other: &Mat) -> Mat {
        self.matmul(&other.t())
    }

    pub fn map(&self, f: impl Fn(f32) -> f32) -> Mat {
        Mat::new(
            self.rows,
            self.cols,
            self.data.iter().map(|&v| f(v)).collect(),
        )
    }

    pub fn zip(&self, other: &Mat, f: impl Fn(f32, f32) -> f32) -> Mat {
        debug_assert_eq!((self.rows, self.cols), (other.rows, other.cols));
        let data = self
            .data
            .iter()
            .zip(&other.data)
            .map(|(&a, &b)| f(a, b))
            .collect();
        Mat::new(self.rows, self.cols, data)
    }

    /// Each row `r` scaled by `s[r]`.
    pub fn scale_rows(&self, s: &[f32]) -> Mat {
        let mut out = self.clone();
        for (r, row) in out.data.chunks_mut(self.cols.max(1)).enumerate() {
            row.iter_mut().for_each(|v| *v *= s[r]);
        }
        out
    }

    /// Each column `c` scaled by `s[c]`.
    pub fn scale_cols(&self, s: &[f32]) -> Mat {
        let mut out = self.clone();
        for row in out.data.chunks_mut(self.cols.max(1)) {
            row.iter_mut().zip(s).for_each(|(v, &f)| *v *= f);
        }
        out
    }

    /// Adds `b[c]` to each row.
    pub fn add_row_vector(&self, b: &[f32]) -> Mat {
        let mut out = self.clone();
        for row in out.data.chunks_mut(self.cols.max(1)) {
            row.iter_mut().zip(b).for_each(|(v, &f)| *v += f);
        }
        out
    }

    /// The L2 norm of every row (`torch.linalg.norm(w, dim=1)`).
    pub fn row_norms(&self) -> Vec<f32> {
        (0..self.rows)
            .map(|r| {
                let s: f64 = (0..self.cols)
                    .map(|c| f64::from(self.at(r, c)).powi(2))
                    .sum();
                s.sqrt() as f32
            })
            .collect()
    }

    /// The inverse by Gauss-Jordan elimination with partial pivoting, in f64;
    /// `None` when (numerically) singular.
    pub fn inverse(&self) -> Option<Mat> {
        let n = self.rows;
        debug_assert_eq!(n, self.cols);
        let mut a: Vec<f64> = self.data.iter().map(|&v| f64::from(v)).collect();
        let mut inv = vec![0.0f64; n * n];
        for i in 0..n {
            inv[i * n + i] = 1.0;
        }
        for col in 0..n {
            let pivot = (col..n).max_by(|&x, &y| {
                a[x * n + col]
                    .abs()
                    .partial_cmp(&a[y * n + col].abs())
                    .unwrap_or(std::cmp::Ordering::Equal)
            })?;
            let p = a[pivot * n + col];
            if !p.is_finite() || p.abs() < 1e-300 {
                return None;
            }
            for k in 0..n {
                a.swap(col * n + k, pivot * n + k);
                inv.swap(col * n + k, pivot * n + k);
            }
            for k in 0..n {
                a[col * n + k] /= p;
                inv[col * n + k] /= p;
            }
            for r in 0..n {
                if r != col {
                    let f = a[r * n + col];
                    if f != 0.0 {
                        for k in 0..n {
                            a[r * n + k] -= f * a[col * n + k];
                            inv[r * n + k] -= f * inv[col * n + k];
                        }
                    }
                }
            }
        }
        Some(Mat::new(n, n, inv.into_iter().map(|v| v as f32).collect()))
    }

    /// A block-diagonal matrix of square blocks.
    pub fn block_diag(blocks: &[Mat]) -> Mat {
        let n: usize = blocks.iter().map(|b| b.rows).sum();
        let mut out = Mat::zeros(n, n);
        let mut off = 0;
        for b in blocks {
            for r in 0..b.rows {
                for c in 0..b.cols {
                    out.data[(off + r) * n + off + c] = b.at(r, c);
                }
            }
            off += b.rows;
        }
        out
    }
}
