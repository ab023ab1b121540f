//! LoRA and rsLoRA (`y = W x + b + s · B A x`) and DoRA (LoRA with a learned
//! per-output magnitude), as PEFT's `lora.Linear` and `DoraLinearLayer`.

use crate::error::{invalid, Result};
use crate::linear::{check_base, Adapter, Linear, Merged};
use crate::mat::{check_dims, f32_values, Mat};
use rlx_ir::HostTensor;

/// LoRA hyper-parameters of one layer (PEFT's `LoraConfig` after
/// `rank_pattern` / `alpha_pattern` were applied).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoraConfig {
    /// Rank `r` (rows of `lora_A`).
    pub r: usize,
    /// `lora_alpha`.
    pub lora_alpha: f64,
    /// rsLoRA: scale by `alpha / sqrt(r)` instead of `alpha / r`.
    pub use_rslora: bool,
}

impl LoraConfig {
    /// PEFT's `scaling`: `alpha / r`, or `alpha / sqrt(r)` with rsLoRA.
    pub fn scaling(&self) -> f64 {
        if self.use_rslora {
            self.lora_alpha / (self.r as f64).sqrt()
        } else {
            self.lora_alpha / self.r as f64
        }
    }

    pub(crate) fn check(&self) -> Result<()> {
        if self.r == 0 {
            return Err(invalid("LoRA r", "must be positive"));
        }
        if !self.lora_alpha.is_finite() {
            return Err(invalid(
                "lora_alpha",
                format!("{} is not finite", self.lora_alpha),
            ));
        }
        Ok(())
    }
}

/// A LoRA (or rsLoRA) adapter of a linear layer `[out, in]`:
/// `lora_A [r, in]`, `lora_B [out, r]`.
#[derive(Clone, Debug, PartialEq)]
pub struct LoraAdapter {
    config: LoraConfig,
    a: Mat,
    b: Mat,
}

impl LoraAdapter {
    /// Checks `a` is f32 `[r, in]` and `b` f32 `[out, r]` with `r = config.r`.
    pub fn new(config: LoraConfig, a: &HostTensor, b: &HostTensor) -> Result<LoraAdapter> {
        config.check()?;
        let (in_f, out_f) = lora_dims(a, b);
        check_dims("lora_A", a, &[config.r, in_f])?;
        check_dims("lora_B", b, &[out_f, config.r])?;
        Ok(LoraAdapter {
            config,
            a: Mat::from_host("lora_A", a)?,
            b: Mat::from_host("lora_B", b)?,
        })
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &LoraConfig {
        &self.config
    }

    /// `lora_A [r, in]`.
    pub fn lora_a(&self) -> HostTensor {
        self.a.to_host()
    }

    /// `lora_B [out, r]`.
    pub fn lora_b(&self) -> HostTensor {
        self.b.to_host()
    }

    fn scaling_f32(&self) -> f32 {
        self.config.scaling() as f32
    }

    /// `(B @ A) * scaling`, PEFT's `get_delta_weight`, `[out, in]`.
    pub fn delta_weight(&self) -> HostTensor {
        self.delta_mat().to_host()
    }

    pub(crate) fn delta_mat(&self) -> Mat {
        let s = self.scaling_f32();
        self.b.matmul(&self.a).map(|v| v * s)
    }

    /// `(x A^T) B^T` without the scaling.
    pub(crate) fn lora_out(&self, x: &Mat) -> Mat {
        x.matmul_t(&self.a).matmul_t(&self.b)
    }
}

/// `(in, out)` of a LoRA pair (`lora_A [r, in]`, `lora_B [out, r]`); the
/// full shapes are checked by the caller.
pub(crate) fn lora_dims(a: &HostTensor, b: &HostTensor) -> (usize, usize) {
    (
        a.dims().get(1).copied().unwrap_or(0),
        b.dims().first().copied().unwrap_or(0),
    )
}

impl LoraAdapter {
    /// `in` of the wrapped layer.
    pub fn in_features(&self) -> usize {
        self.a.cols
    }

    /// `out` of the wrapped layer.
    pub fn out_features(&self) -> usize {
        self.b.rows
    }
}

impl Adapter for LoraAdapter {
    fn forward(&self, x: &HostTensor, base: &Linear) -> Result<HostTensor> {
        check_base(base, Some(self.in_features()), Some(self.out_features()))?;
        let (xm, lead) = Mat::from_batch("x", x, self.in_features())?;
        let s = self.scaling_f32();
        let y = base
            .forward_mat(&xm)
            .zip(&self.lora_out(&xm), |y, l| y + l * s);
        Ok(y.into_batch(&lead))
    }

    fn merge(&self, base: &mut Linear) -> Result<Merged> {
        check_base(base, Some(self.in_features()), Some(self.out_features()))?;
        let w = base.weight_mat().zip(&self.delta_mat(), |w, d| w + d);
        base.set(w, None);
        Ok(Merged::plain())
    }

    fn unmerge(&self, base: &mut Linear, _merged: &Merged) -> Result<()> {
        check_base(base, Some(self.in_features()), Some(self.out_features()))?;
        let w = base.weight_mat().zip(&self.delta_mat(), |w, d| w - d);
        base.set(w, None);
        Ok(())
    }
}

/// A DoRA adapter: LoRA plus `lora_magnitude_vector [out]`. The output is
/// `m / ||W + s B A||_row ⊙ (W + s B A) x + b`, the norm treated as a
/// constant (detached), as in PEFT and section 4.3 of the DoRA paper.
#[derive(Clone, Debug, PartialEq)]
pub struct DoraAdapter {
    lora: LoraAdapter,
    magnitude: Vec<f32>,
}

impl DoraAdapter {
    /// Checks `magnitude` is f32 `[out]`.
    pub fn new(lora: LoraAdapter, magnitude: &HostTensor) -> Result<DoraAdapter> {
        check_dims("lora_magnitude_vector", magnitude, &[lora.out_features()])?;
        Ok(DoraAdapter {
            magnitude: f32_values("lora_magnitude_vector", magnitude)?,
            lora,
        })
    }

    /// The LoRA part.
    pub fn lora(&self) -> &LoraAdapter {
        &self.lora
    }

    /// `lora_magnitude_vector [out]`.
    pub fn magnitude(&self) -> HostTensor {
        crate::mat::host(self.magnitude.clone(), &[self.magnitude.len()])
    }

    /// `||W + s B A||` per output row, PEFT's `get_weight_norm`.
    pub fn weight_norm(&self, base: &Linear) -> Result<Vec<f32>> {
        check_base(base, Some(self.in_features()), Some(self.out_features()))?;
        Ok(self.norm_of(&base.weight_mat()))
    }

    fn norm_of(&self, w: &Mat) -> Vec<f32> {
        w.zip(&self.lora.delta_mat(), |w, d| w + d).row_norms()
    }

    fn factor(&self, norm: &[f32]) -> Vec<f32> {
        self.magnitude
            .iter()
            .zip(norm)
            .map(|(m, n)| m / n)
            .collect()
    }
}

impl DoraAdapter {
    /// `in` of the wrapped layer.
    pub fn in_features(&self) -> usize {
        self.lora.in_features()
    }

    /// `out` of the wrapped layer.
    pub fn out_features(&self) -> usize {
        self.lora.out_features()
    }
}

impl Adapter for DoraAdapter {
    fn forward(&self, x: &HostTensor, base: &Linear) -> Result<HostTensor> {
        let scale = self.factor(&self.weight_norm(base)?);
        let (xm, lead) = Mat::from_batch("x", x, self.in_features())?;
        let s = self.lora.scaling_f32();
        let xw = base.matmul_mat(&xm);
        let lora = self.lora.lora_out(&xm);
        // PEFT: result + (m/n - 1) * (x W^T) + (m/n) * lora * s
        let mut y = base.forward_mat(&xm);
        for r in 0..y.rows {
            for (c, &f) in scale.iter().enumerate() {
                let i = r * y.cols + c;
                y.data[i] += (f - 1.0) * xw.data[i] + f * lora.data[i] * s;
            }
        }
        Ok(y.into_batch(&lead))
    }

    fn merge(&self, base: &mut Linear) -> Result<Merged> {
        let norm = self.weight_norm(base)?;
        let w = base
            .weight_mat()
            .zip(&self.lora.delta_mat(), |w, d| w + d)
            .scale_rows(&self.factor(&norm));
        base.set(w, None);
        Ok(Merged {
            weight_norm: Some(norm),
        })
    }

    fn unmerge(&self, base: &mut Linear, merged: &Merged) -> Result<()> {
        check_base(base, Some(self.in_features()), Some(self.out_features()))?;
        let Some(norm) = merged.weight_norm.as_ref() else {
            return Err(invalid(
                "DoRA unmerge",
                "the Merged record holds no weight norm (it came from another adapter's merge)",
            ));
        };
        if norm.len() != self.out_features() {
            return Err(crate::PeftError::Shape {
                what: "DoRA merged weight norm".into(),
                expected: vec![self.out_features()],
                given: vec![norm.len()],
            });
        }
        // PEFT: W = W' / (m / n) - ΔW
        let factor = self.factor(norm);
        let mut w = base.weight_mat();
        for (row, f) in w.data.chunks_mut(self.in_features().max(1)).zip(&factor) {
            row.iter_mut().for_each(|v| *v /= f);
        }
        let w = w.zip(&self.lora.delta_mat(), |w, d| w - d);
        base.set(w, None);
        Ok(())
    }
}
