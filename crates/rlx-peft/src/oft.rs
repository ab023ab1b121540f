//! OFT: the input is rotated by a block-diagonal orthogonal matrix before the
//! base layer, `y = W (R x) + b`, each block the Cayley transform of a
//! skew-symmetric matrix, as PEFT 0.21's `oft.Linear` / `OFTRotationModule`.

use crate::error::{invalid, PeftError, Result};
use crate::linear::{check_base, Adapter, Linear, Merged};
use crate::mat::{check_dims, Mat};
use rlx_ir::HostTensor;

/// OFT hyper-parameters of one layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OftConfig {
    /// Number of diagonal blocks (`in / block_size`).
    pub r: usize,
    /// Side of each block.
    pub block_size: usize,
    /// Approximate `(I + Q)^-1` by a truncated Neumann series (PEFT's default)
    /// instead of solving exactly.
    pub use_cayley_neumann: bool,
    /// Terms of that series (PEFT's default 5).
    pub num_cayley_neumann_terms: usize,
    /// One block's parameters shared by every block.
    pub block_share: bool,
}

impl OftConfig {
    /// Entries of the strict upper triangle of a block: `bs (bs - 1) / 2`.
    pub fn n_elements(&self) -> usize {
        self.block_size * self.block_size.saturating_sub(1) / 2
    }

    /// Rows of `oft_R.weight`: 1 when blocks are shared, else `r`.
    pub fn weight_rows(&self) -> usize {
        if self.block_share {
            1
        } else {
            self.r
        }
    }

    /// `in_features`: `r * block_size`.
    pub fn in_features(&self) -> usize {
        self.r * self.block_size
    }

    pub(crate) fn check(&self) -> Result<()> {
        if self.r == 0 || self.block_size == 0 {
            return Err(invalid(
                "OFT r / block_size",
                format!(
                    "both must be positive, given r = {}, block_size = {}",
                    self.r, self.block_size
                ),
            ));
        }
        if self.use_cayley_neumann && self.num_cayley_neumann_terms == 0 {
            return Err(invalid("num_cayley_neumann_terms", "must be positive"));
        }
        Ok(())
    }
}

/// An OFT adapter: `oft_R.weight [r (or 1), bs (bs - 1) / 2]`, the strict
/// upper triangles of the skew-symmetric generators, row by row.
#[derive(Clone, Debug, PartialEq)]
pub struct OftAdapter {
    config: OftConfig,
    weight: Mat,
}

impl OftAdapter {
    /// Checks the weight's shape against the config.
    pub fn new(config: OftConfig, weight: &HostTensor) -> Result<OftAdapter> {
        config.check()?;
        check_dims(
            "oft_R.weight",
            weight,
            &[config.weight_rows(), config.n_elements()],
        )?;
        Ok(OftAdapter {
            config,
            weight: Mat::from_host("oft_R.weight", weight)?,
        })
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &OftConfig {
        &self.config
    }

    /// `Q = S - S^T` for row `i` of the weight.
    fn skew(&self, i: usize) -> Mat {
        let bs = self.config.block_size;
        let mut q = Mat::zeros(bs, bs);
        let mut k = 0;
        for r in 0..bs {
            for c in r + 1..bs {
                let v = self.weight.at(i, k);
                q.data[r * bs + c] = v;
                q.data[c * bs + r] = -v;
                k += 1;
            }
        }
        q
    }

    /// PEFT's `_cayley_batch` for one block.
    fn cayley(&self, q: &Mat) -> Result<Mat> {
        let bs = self.config.block_size;
        let eye = Mat::identity(bs);
        if !self.config.use_cayley_neumann {
            // R (I + Q) = I - Q
            let inv = (eye.zip(q, |a, b| a + b)).inverse().ok_or_else(|| {
                invalid(
                    "OFT block",
                    "I + Q is singular; the exact Cayley transform is undefined",
                )
            })?;
            return Ok(eye.zip(q, |a, b| a - b).matmul(&inv));
        }
        let terms = self.config.num_cayley_neumann_terms;
        let add = |r: &Mat, p: &Mat, alpha: f32| r.zip(p, |a, b| a + alpha * b);
        let mut r = eye;
        if terms > 1 {
            r = add(&r, q, 2.0);
            if terms > 2 {
                let mut power = q.matmul(q);
                r = add(&r, &power, 2.0);
                for _ in 3..terms - 1 {
                    power = power.matmul(q);
                    r = add(&r, &power, 2.0);
                }
                power = power.matmul(q);
                r = add(&r, &power, 1.0);
            }
        }
        Ok(r)
    }

    /// The orthogonal blocks, one per diagonal position.
    fn blocks(&self) -> Result<Vec<Mat>> {
        let per_row: Vec<Mat> = (0..self.weight.rows)
            .map(|i| self.cayley(&self.skew(i)))
            .collect::<Result<_>>()?;
        Ok((0..self.config.r)
            .map(|i| per_row[if self.config.block_share { 0 } else { i }].clone())
            .collect())
    }

    /// The block-diagonal rotation `[in, in]`, PEFT's `get_delta_weight`.
    pub fn rotation(&self) -> Result<HostTensor> {
        Ok(Mat::block_diag(&self.blocks()?).to_host())
    }

    fn rotation_mat(&self) -> Result<Mat> {
        Ok(Mat::block_diag(&self.blocks()?))
    }
}

impl OftAdapter {
    /// `in` of the wrapped layer (`r * block_size`); OFT does not fix `out`.
    pub fn in_features(&self) -> usize {
        self.config.in_features()
    }
}

impl Adapter for OftAdapter {
    fn forward(&self, x: &HostTensor, base: &Linear) -> Result<HostTensor> {
        check_base(base, Some(self.in_features()), None)?;
        let (xm, lead) = Mat::from_batch("x", x, self.in_features())?;
        // x [n, r, bs] rotated blockwise: x_blk @ R_blk, i.e. x @ blockdiag(R)
        let rotated = xm.matmul(&self.rotation_mat()?);
        Ok(base.forward_mat(&rotated).into_batch(&lead))
    }

    fn merge(&self, base: &mut Linear) -> Result<Merged> {
        check_base(base, Some(self.in_features()), None)?;
        // PEFT: W^T <- R W^T
        let w = base.weight_mat().matmul_t(&self.rotation_mat()?);
        base.set(w, None);
        Ok(Merged::plain())
    }

    fn unmerge(&self, base: &mut Linear, _merged: &Merged) -> Result<()> {
        check_base(base, Some(self.in_features()), None)?;
        let inv = self
            .rotation_mat()?
            .inverse()
            .ok_or_else(|| PeftError::Invalid {
                what: "OFT unmerge".into(),
                reason: "the rotation is singular".into(),
            })?;
        // PEFT: W^T <- R^-1 W^T
        let w = base.weight_mat().matmul_t(&inv);
        base.set(w, None);
        Ok(())
    }
}
