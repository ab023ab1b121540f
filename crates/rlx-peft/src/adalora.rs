//! AdaLoRA's SVD-form adapter (`ΔW = B (A ⊙ E) · α / (ranknum + 1e-5)`), as
//! PEFT's `adalora.SVDLinear`. Rank allocation lives in [`crate::allocator`].

use crate::error::{invalid, Result};
use crate::linear::{check_base, Adapter, Linear, Merged};
use crate::lora::lora_dims;
use crate::mat::{check_dims, Mat};
use rlx_ir::HostTensor;

/// PEFT adds this to `ranknum` before dividing.
pub const RANKNUM_EPS: f64 = 1e-5;

/// AdaLoRA hyper-parameters of one layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdaLoraConfig {
    /// Current rank `r` (rows of `lora_A`; the kept ranks after a save that
    /// cut the masked triplets).
    pub r: usize,
    /// `lora_alpha`; PEFT's `scaling` is alpha, or `r` when alpha <= 0.
    pub lora_alpha: f64,
    /// PEFT's `ranknum`: the rank the output is divided by. It is the
    /// initial rank `init_r` and stays so when triplets are masked or cut.
    pub ranknum: f64,
}

impl AdaLoraConfig {
    /// PEFT's `scaling`: `lora_alpha` if positive, else `r`.
    pub fn scaling(&self) -> f64 {
        if self.lora_alpha > 0.0 {
            self.lora_alpha
        } else {
            self.r as f64
        }
    }
}

/// An AdaLoRA adapter: `lora_A [r, in]` (right singular vectors),
/// `lora_E [r, 1]` (singular values), `lora_B [out, r]` (left).
#[derive(Clone, Debug, PartialEq)]
pub struct AdaLoraAdapter {
    config: AdaLoraConfig,
    a: Mat,
    e: Vec<f32>,
    b: Mat,
}

impl AdaLoraAdapter {
    /// Checks the shapes against `config.r`.
    pub fn new(
        config: AdaLoraConfig,
        a: &HostTensor,
        e: &HostTensor,
        b: &HostTensor,
    ) -> Result<AdaLoraAdapter> {
        if !config.ranknum.is_finite() || !config.lora_alpha.is_finite() {
            return Err(invalid("AdaLoRA ranknum / lora_alpha", "must be finite"));
        }
        let (in_f, out_f) = lora_dims(a, b);
        check_dims("lora_A", a, &[config.r, in_f])?;
        check_dims("lora_E", e, &[config.r, 1])?;
        check_dims("lora_B", b, &[out_f, config.r])?;
        Ok(AdaLoraAdapter {
            config,
            a: Mat::from_host("lora_A", a)?,
            e: crate::mat::f32_values("lora_E", e)?,
            b: Mat::from_host("lora_B", b)?,
        })
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &AdaLoraConfig {
        &self.config
    }

    /// `lora_E [r, 1]`.
    pub fn lora_e(&self) -> HostTensor {
        crate::mat::host(self.e.clone(), &[self.e.len(), 1])
    }

    /// `A ⊙ E` (each row of A times its singular value).
    fn ae(&self) -> Mat {
        self.a.scale_rows(&self.e)
    }

    /// `B (A ⊙ E) · scaling / (ranknum + 1e-5)`, PEFT's `get_delta_weight`.
    pub fn delta_weight(&self) -> HostTensor {
        self.delta_mat().to_host()
    }

    fn delta_mat(&self) -> Mat {
        let (s, rn) = self.factors();
        self.b.matmul(&self.ae()).map(|v| v * s / rn)
    }

    fn factors(&self) -> (f32, f32) {
        (
            self.config.scaling() as f32,
            (self.config.ranknum + RANKNUM_EPS) as f32,
        )
    }
}

impl AdaLoraAdapter {
    /// `in` of the wrapped layer.
    pub fn in_features(&self) -> usize {
        self.a.cols
    }

    /// `out` of the wrapped layer.
    pub fn out_features(&self) -> usize {
        self.b.rows
    }
}

impl Adapter for AdaLoraAdapter {
    fn forward(&self, x: &HostTensor, base: &Linear) -> Result<HostTensor> {
        check_base(base, Some(self.in_features()), Some(self.out_features()))?;
        let (xm, lead) = Mat::from_batch("x", x, self.in_features())?;
        let (s, rn) = self.factors();
        let delta = xm.matmul_t(&self.ae()).matmul_t(&self.b);
        let y = base.forward_mat(&xm).zip(&delta, |y, d| y + d * s / rn);
        Ok(y.into_batch(&lead))
    }

    fn merge(&self, base: &mut Linear) -> Result<Merged> {
        check_base(base, Some(self.in_features()), Some(self.out_features()))?;
        base.set(base.weight_mat().zip(&self.delta_mat(), |w, d| w + d), None);
        Ok(Merged::plain())
    }

    fn unmerge(&self, base: &mut Linear, _merged: &Merged) -> Result<()> {
        check_base(base, Some(self.in_features()), Some(self.out_features()))?;
        base.set(base.weight_mat().zip(&self.delta_mat(), |w, d| w - d), None);
        Ok(())
    }
}
