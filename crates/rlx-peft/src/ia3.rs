//! IA3: a learned vector that rescales a layer's output features, or (for a
//! feed-forward layer) its input features, as PEFT's `ia3.Linear`.

use crate::error::Result;
use crate::linear::{check_base, Adapter, Linear, Merged};
use crate::mat::{check_dims, f32_values, host, Mat};
use rlx_ir::HostTensor;

/// PEFT adds this to `ia3_l` before dividing in `unmerge`.
const UNMERGE_EPS: f32 = 1e-8;

/// An IA3 adapter of a linear layer `[out, in]`. `ia3_l` is `[out, 1]`
/// (scales the output, bias included) or, when `is_feedforward`, `[1, in]`
/// (scales the input), PEFT's shapes.
#[derive(Clone, Debug, PartialEq)]
pub struct Ia3Adapter {
    is_feedforward: bool,
    l: Vec<f32>,
}

impl Ia3Adapter {
    /// Checks `ia3_l` is f32 `[n, 1]`, or `[1, n]` when `is_feedforward`.
    pub fn new(is_feedforward: bool, ia3_l: &HostTensor) -> Result<Ia3Adapter> {
        let n = ia3_l.numel();
        check_dims("ia3_l", ia3_l, &Self::shape_for(is_feedforward, n, n))?;
        Ok(Ia3Adapter {
            is_feedforward,
            l: f32_values("ia3_l", ia3_l)?,
        })
    }

    /// The number of scaled features (`in` when feed-forward, else `out`).
    pub fn features(&self) -> usize {
        self.l.len()
    }

    fn check(&self, base: &Linear) -> Result<()> {
        let n = Some(self.l.len());
        if self.is_feedforward {
            check_base(base, n, None)
        } else {
            check_base(base, None, n)
        }
    }

    /// PEFT's shape of `ia3_l`.
    pub fn shape_for(is_feedforward: bool, in_features: usize, out_features: usize) -> [usize; 2] {
        if is_feedforward {
            [1, in_features]
        } else {
            [out_features, 1]
        }
    }

    /// Whether the input (true) or the output (false) is scaled.
    pub fn is_feedforward(&self) -> bool {
        self.is_feedforward
    }

    /// `ia3_l` in PEFT's shape.
    pub fn ia3_l(&self) -> HostTensor {
        let n = self.l.len();
        host(self.l.clone(), &Self::shape_for(self.is_feedforward, n, n))
    }

    fn rescale(&self, base: &mut Linear, f: impl Fn(f32, f32) -> f32) -> Result<()> {
        self.check(base)?;
        let mut w = base.weight_mat();
        let cols = w.cols.max(1);
        for (r, row) in w.data.chunks_mut(cols).enumerate() {
            for (c, v) in row.iter_mut().enumerate() {
                *v = f(
                    *v,
                    if self.is_feedforward {
                        self.l[c]
                    } else {
                        self.l[r]
                    },
                );
            }
        }
        let bias = if self.is_feedforward {
            None
        } else {
            base.bias_vec()
                .map(|b| b.iter().zip(&self.l).map(|(&b, &l)| f(b, l)).collect())
        };
        base.set(w, bias);
        Ok(())
    }
}

impl Adapter for Ia3Adapter {
    fn forward(&self, x: &HostTensor, base: &Linear) -> Result<HostTensor> {
        self.check(base)?;
        let (xm, lead) = Mat::from_batch("x", x, base.in_features())?;
        let y = if self.is_feedforward {
            base.forward_mat(&xm.scale_cols(&self.l))
        } else {
            base.forward_mat(&xm).scale_cols(&self.l)
        };
        Ok(y.into_batch(&lead))
    }

    fn merge(&self, base: &mut Linear) -> Result<Merged> {
        self.rescale(base, |w, l| w * l)?;
        Ok(Merged::plain())
    }

    fn unmerge(&self, base: &mut Linear, _merged: &Merged) -> Result<()> {
        self.rescale(base, |w, l| w / (l + UNMERGE_EPS))
    }
}
