//! [`Linear`]: the base layer an adapter wraps, and the [`Adapter`] trait
//! every host-side adapter implements.

use crate::error::{PeftError, Result};
use crate::mat::{check_dims, f32_values, host, Mat};
use rlx_ir::HostTensor;

/// A linear layer in PyTorch's layout: `weight [out, in]`, optional
/// `bias [out]`, f32; `y = x @ weight^T + bias`.
#[derive(Clone, Debug, PartialEq)]
pub struct Linear {
    weight: HostTensor,
    bias: Option<HostTensor>,
}

impl Linear {
    /// Checks the layout: `weight` f32 `[out, in]`, `bias` f32 `[out]`.
    pub fn new(weight: HostTensor, bias: Option<HostTensor>) -> Result<Linear> {
        let d = weight.dims().to_vec();
        if d.len() != 2 {
            return Err(PeftError::Invalid {
                what: "base weight".into(),
                reason: format!("expected [out, in], given dims {d:?}"),
            });
        }
        check_dims("base weight", &weight, &d)?;
        if let Some(b) = &bias {
            check_dims("base bias", b, &[d[0]])?;
        }
        Ok(Linear { weight, bias })
    }

    /// `in` of `weight [out, in]`.
    pub fn in_features(&self) -> usize {
        self.weight.dims()[1]
    }

    /// `out` of `weight [out, in]`.
    pub fn out_features(&self) -> usize {
        self.weight.dims()[0]
    }

    /// The weight `[out, in]`.
    pub fn weight(&self) -> &HostTensor {
        &self.weight
    }

    /// The bias `[out]`, if any.
    pub fn bias(&self) -> Option<&HostTensor> {
        self.bias.as_ref()
    }

    /// `x [..., in] -> x @ weight^T + bias [..., out]`.
    pub fn forward(&self, x: &HostTensor) -> Result<HostTensor> {
        let (xm, lead) = Mat::from_batch("x", x, self.in_features())?;
        Ok(self.forward_mat(&xm).into_batch(&lead))
    }

    pub(crate) fn weight_mat(&self) -> Mat {
        Mat::from_host("base weight", &self.weight).expect("checked in Linear::new")
    }

    pub(crate) fn bias_vec(&self) -> Option<Vec<f32>> {
        self.bias
            .as_ref()
            .map(|b| f32_values("base bias", b).expect("checked in Linear::new"))
    }

    /// `x W^T` without the bias.
    pub(crate) fn matmul_mat(&self, x: &Mat) -> Mat {
        x.matmul_t(&self.weight_mat())
    }

    pub(crate) fn forward_mat(&self, x: &Mat) -> Mat {
        let y = self.matmul_mat(x);
        match self.bias_vec() {
            Some(b) => y.add_row_vector(&b),
            None => y,
        }
    }

    /// Replaces the weight (same shape by construction) and, if given, the bias.
    pub(crate) fn set(&mut self, weight: Mat, bias: Option<Vec<f32>>) {
        debug_assert_eq!(
            [weight.rows, weight.cols],
            [self.out_features(), self.in_features()]
        );
        self.weight = weight.to_host();
        if let (Some(b), Some(_)) = (bias, &self.bias) {
            let n = b.len();
            self.bias = Some(host(b, &[n]));
        }
    }
}

/// What [`Adapter::unmerge`] needs from the merge it undoes. DoRA keeps the
/// weight norm `||W + ΔW||` it divided by (PEFT caches the same value);
/// the other adapters keep nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct Merged {
    pub(crate) weight_norm: Option<Vec<f32>>,
}

impl Merged {
    pub(crate) fn plain() -> Merged {
        Merged { weight_norm: None }
    }
}

/// A host-side adapter of one linear layer, with PEFT's arithmetic.
///
/// Each method checks that `base` has the shape the adapter was made for
/// (an error names the expected and the given shape).
pub trait Adapter {
    /// The adapted layer's output for `x [..., in]` (PEFT's eval-mode forward,
    /// dropout off).
    fn forward(&self, x: &HostTensor, base: &Linear) -> Result<HostTensor>;
    /// Folds the adapter into `base` as PEFT's `merge()` does. On error `base`
    /// is unchanged.
    fn merge(&self, base: &mut Linear) -> Result<Merged>;
    /// Undoes [`Adapter::merge`] as PEFT's `unmerge()` does.
    fn unmerge(&self, base: &mut Linear, merged: &Merged) -> Result<()>;
}

/// Checks that `base` is `[out, in]`; a `None` side is not fixed by the
/// adapter (IA3 knows one side, OFT only `in`).
pub(crate) fn check_base(
    base: &Linear,
    in_features: Option<usize>,
    out_features: Option<usize>,
) -> Result<()> {
    let given = [base.out_features(), base.in_features()];
    let expected = [
        out_features.unwrap_or(given[0]),
        in_features.unwrap_or(given[1]),
    ];
    if given != expected {
        return Err(PeftError::Shape {
            what: "base weight".into(),
            expected: expected.to_vec(),
            given: given.to_vec(),
        });
    }
    Ok(())
}
