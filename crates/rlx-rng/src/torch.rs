//! PyTorch's CPU generator (`torch.manual_seed` / `torch.Generator()`):
//! MT19937 with torch's seeding and the transformations of ATen's
//! `DistributionsHelper.h` / `TransformationHelper.h` and CPU kernels
//! (`DistributionTemplates.h`, `randperm`, `dropout`, `nn.Linear`'s
//! `reset_parameters`).

use crate::error::{Result, RngError};
use crate::mt19937::Mt19937;
use crate::torch_mathfun::{log_ps, sincos_ps};

/// Which build of torch's CPU kernels to reproduce where their bits differ:
/// `randn` / `normal` of 16 or more float32 values, and (through the
/// compiler's multiply-add contraction) `uniform_` scaling, `nn.Linear`
/// init and `normal` with `std != 1`. torch picks the build at start-up
/// from the CPU (`torch.backends.cpu.get_cpu_capability()`; the
/// environment variable `ATEN_CPU_CAPABILITY` overrides it). Both variants
/// are checked against torch 2.15; the `"AVX512"` build is not reproduced
/// (its kernels presumably mix the two, libm math as in `Default` with the
/// contraction of `Avx2`; unverified).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TorchCpuCapability {
    /// `"AVX2"`: vectorised Cephes log / sincos for float32 `randn`, and the
    /// build's contraction of `a * b + c` into one fused multiply-add
    /// (`uniform_`'s scaling, the scalar `normal`'s `* std + mean`).
    #[default]
    Avx2,
    /// `"DEFAULT"`: libm `logf` / `cosf` / `sinf`, and no contraction.
    Default,
}

/// `nn.Linear(in_features, out_features)` right after construction.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearInit {
    /// `weight`, `[out_features, in_features]` row-major.
    pub weight: Vec<f32>,
    /// `bias`, `[out_features]` (empty for `bias=False`).
    pub bias: Vec<f32>,
}

/// torch's CPU generator.
///
/// ```
/// use rlx_rng::TorchGenerator;
/// let mut g = TorchGenerator::manual_seed(0); // torch.manual_seed(0)
/// let r = g.rand(2);                           // torch.rand(2)
/// assert_eq!(r, [0.49625659_f32, 0.76822180]);
/// let p = TorchGenerator::manual_seed(0).randperm(5);
/// assert_eq!(p.len(), 5);
/// ```
#[derive(Clone, Debug)]
pub struct TorchGenerator {
    mt: Mt19937,
    seed: u64,
    next_normal_f64: Option<f64>,
    capability: TorchCpuCapability,
}

/// `a * b + c`, fused (one rounding) in the AVX2 build, where the compiler
/// contracts it, and two roundings in the DEFAULT build.
fn madd32(fused: bool, a: f32, b: f32, c: f32) -> f32 {
    if fused {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// [`madd32`] for f64.
fn madd64(fused: bool, a: f64, b: f64, c: f64) -> f64 {
    if fused {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// `uniform_real` for float: 24 low bits of a 32-bit draw over `2^24`,
/// scaled to `[from, to)` in float32.
fn uniform_real_f32(fused: bool, v: u32, from: f32, to: f32) -> f32 {
    let x = (v & 0x00ff_ffff) as f32 * (1.0 / 16_777_216.0);
    madd32(fused, x, to - from, from)
}

/// `uniform_real` for double: 53 low bits of a 64-bit draw over `2^53`.
fn uniform_real_f64(fused: bool, v: u64, from: f64, to: f64) -> f64 {
    let x = (v & 0x001f_ffff_ffff_ffff) as f64 * (1.0 / 9_007_199_254_740_992.0);
    madd64(fused, x, to - from, from)
}

fn check_p(name: &'static str, p: f64) -> Result<()> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(RngError::Probability { name, value: p })
    }
}

fn check_std(std: f64) -> Result<()> {
    if std >= 0.0 {
        Ok(())
    } else {
        Err(RngError::NegativeScale {
            name: "std",
            value: std,
        })
    }
}

impl TorchGenerator {
    /// `torch.manual_seed(seed)` / `torch.Generator().manual_seed(seed)`:
    /// MT19937 `init_genrand` of the seed's low 32 bits (a negative Python
    /// seed `s` is `2^64 + s`), no cached normal, the AVX2 kernels.
    pub fn manual_seed(seed: u64) -> Self {
        TorchGenerator {
            mt: Mt19937::new(seed as u32),
            seed,
            next_normal_f64: None,
            capability: TorchCpuCapability::Avx2,
        }
    }

    /// The same generator, reproducing the kernels of another CPU build.
    pub fn with_capability(mut self, capability: TorchCpuCapability) -> Self {
        self.capability = capability;
        self
    }

    /// The CPU build whose kernels are reproduced.
    pub fn capability(&self) -> TorchCpuCapability {
        self.capability
    }

    /// `initial_seed()`: the seed given to `manual_seed`.
    pub fn initial_seed(&self) -> u64 {
        self.seed
    }

    /// `random()`: one 32-bit MT19937 output.
    pub fn random(&mut self) -> u32 {
        self.mt.next_u32()
    }

    /// `random64()`: two outputs, the first one high.
    pub fn random64(&mut self) -> u64 {
        self.mt.next_u64()
    }

    /// Whether the reproduced build contracts `a * b + c` into an FMA.
    fn fused(&self) -> bool {
        self.capability == TorchCpuCapability::Avx2
    }

    fn uniform_one_f32(&mut self, from: f32, to: f32) -> f32 {
        let v = self.random();
        uniform_real_f32(self.fused(), v, from, to)
    }

    fn uniform_one_f64(&mut self, from: f64, to: f64) -> f64 {
        let v = self.random64();
        uniform_real_f64(self.fused(), v, from, to)
    }

    /// `uniform_real_distribution<double>(0, 1)`: 53 bits of one 64-bit draw.
    pub(crate) fn uniform_unit_f64(&mut self) -> f64 {
        self.uniform_one_f64(0.0, 1.0)
    }

    /// `torch.rand(n)` (float32): 24 bits of one 32-bit draw each.
    pub fn rand(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.uniform_one_f32(0.0, 1.0)).collect()
    }

    /// `torch.rand(n, dtype=torch.float64)`: 53 bits of one 64-bit draw each.
    pub fn rand_f64(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.uniform_one_f64(0.0, 1.0)).collect()
    }

    /// `torch.empty(n).uniform_(low, high)` (float32; the bounds are
    /// rounded to float32 first, as torch does).
    pub fn uniform(&mut self, low: f64, high: f64, n: usize) -> Result<Vec<f32>> {
        check_range(low, high)?;
        let (from, to) = (low as f32, high as f32);
        Ok((0..n).map(|_| self.uniform_one_f32(from, to)).collect())
    }

    /// `torch.empty(n, dtype=torch.float64).uniform_(low, high)`.
    pub fn uniform_f64(&mut self, low: f64, high: f64, n: usize) -> Result<Vec<f64>> {
        check_range(low, high)?;
        Ok((0..n).map(|_| self.uniform_one_f64(low, high)).collect())
    }

    /// `at::normal_distribution<double>`: Box-Muller on two 53-bit
    /// uniforms; the sine half is cached for the next call.
    fn normal_one(&mut self, mean: f64, std: f64) -> f64 {
        let fused = self.fused();
        if let Some(v) = self.next_normal_f64.take() {
            return madd64(fused, v, std, mean);
        }
        let u1 = self.uniform_one_f64(0.0, 1.0);
        let u2 = self.uniform_one_f64(0.0, 1.0);
        let r = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        self.next_normal_f64 = Some(r * theta.sin());
        madd64(fused, r * theta.cos(), std, mean)
    }

    /// `normal_fill` (float32): all `n` uniforms first, Box-Muller over
    /// blocks of 16 (`u1 = 1 - data[j]`, `u2 = data[j + 8]`), and for a
    /// ragged end 16 fresh uniforms for the last 16 slots. The final
    /// `* std + mean` is one fused multiply-add in both builds (as measured
    /// against torch 2.15).
    fn normal_fill_f32(&mut self, n: usize, mean: f32, std: f32) -> Vec<f32> {
        let mut data: Vec<f32> = (0..n).map(|_| self.uniform_one_f32(0.0, 1.0)).collect();
        let cap = self.capability;
        let block = |d: &mut [f32]| match cap {
            TorchCpuCapability::Avx2 => {
                let two_pi = (2.0 * std::f64::consts::PI) as f32;
                for j in 0..8 {
                    let u1 = 1.0 - d[j];
                    let u2 = d[j + 8];
                    let radius = (-2.0 * log_ps(u1)).sqrt();
                    let (s, c) = sincos_ps(two_pi * u2);
                    d[j] = (radius * c).mul_add(std, mean);
                    d[j + 8] = (radius * s).mul_add(std, mean);
                }
            }
            TorchCpuCapability::Default => {
                for j in 0..8 {
                    let u1 = 1.0 - d[j];
                    let u2 = d[j + 8];
                    let radius = (-2.0 * u1.ln()).sqrt();
                    let theta = ((2.0f32 as f64 * std::f64::consts::PI) * u2 as f64) as f32;
                    d[j] = (radius * theta.cos()).mul_add(std, mean);
                    d[j + 8] = (radius * theta.sin()).mul_add(std, mean);
                }
            }
        };
        for chunk in data.chunks_exact_mut(16) {
            block(chunk);
        }
        if n & 15 != 0 {
            let tail = n - 16;
            for v in &mut data[tail..] {
                *v = self.uniform_one_f32(0.0, 1.0);
            }
            block(&mut data[tail..]);
        }
        data
    }

    /// `normal_fill<double>`: as the float32 fill, with libm log / cos / sin.
    fn normal_fill_f64(&mut self, n: usize, mean: f64, std: f64) -> Vec<f64> {
        let mut data: Vec<f64> = (0..n).map(|_| self.uniform_one_f64(0.0, 1.0)).collect();
        let block = |d: &mut [f64]| {
            for j in 0..8 {
                let u1 = 1.0 - d[j];
                let u2 = d[j + 8];
                let radius = (-2.0 * u1.ln()).sqrt();
                let theta = 2.0 * std::f64::consts::PI * u2;
                d[j] = (radius * theta.cos()).mul_add(std, mean);
                d[j + 8] = (radius * theta.sin()).mul_add(std, mean);
            }
        };
        for chunk in data.chunks_exact_mut(16) {
            block(chunk);
        }
        if n & 15 != 0 {
            let tail = n - 16;
            for v in &mut data[tail..] {
                *v = self.uniform_one_f64(0.0, 1.0);
            }
            block(&mut data[tail..]);
        }
        data
    }

    /// `torch.randn(n)` (float32). Below 16 values: one double Box-Muller
    /// normal at a time (two 64-bit draws per pair, the second value
    /// cached across calls), rounded to float32. From 16 on: torch's
    /// `normal_fill` over float32 uniforms, whose arithmetic depends on the
    /// [`TorchCpuCapability`].
    pub fn randn(&mut self, n: usize) -> Vec<f32> {
        self.normal_f32_unchecked(0.0, 1.0, n)
    }

    /// `torch.randn(n, dtype=torch.float64)`: one double normal at a time
    /// below 16 values, `normal_fill<double>` from 16 on.
    pub fn randn_f64(&mut self, n: usize) -> Vec<f64> {
        self.normal_f64_unchecked(0.0, 1.0, n)
    }

    pub(crate) fn normal_f32_unchecked(&mut self, mean: f64, std: f64, n: usize) -> Vec<f32> {
        if n >= 16 {
            self.normal_fill_f32(n, mean as f32, std as f32)
        } else {
            (0..n).map(|_| self.normal_one(mean, std) as f32).collect()
        }
    }

    pub(crate) fn normal_f64_unchecked(&mut self, mean: f64, std: f64, n: usize) -> Vec<f64> {
        if n >= 16 {
            self.normal_fill_f64(n, mean, std)
        } else {
            (0..n).map(|_| self.normal_one(mean, std)).collect()
        }
    }

    /// `torch.normal(mean, std, size=(n,))` (float32), the same paths as
    /// [`randn`](Self::randn).
    pub fn normal(&mut self, mean: f64, std: f64, n: usize) -> Result<Vec<f32>> {
        check_std(std)?;
        Ok(self.normal_f32_unchecked(mean, std, n))
    }

    /// `torch.normal(mean, std, size=(n,), dtype=torch.float64)`.
    pub fn normal_f64(&mut self, mean: f64, std: f64, n: usize) -> Result<Vec<f64>> {
        check_std(std)?;
        Ok(self.normal_f64_unchecked(mean, std, n))
    }

    /// `torch.randint(low, high, (n,))` (int64): `draw % (high - low) + low`
    /// with a 32-bit draw, or a 64-bit one when the range is `>= 2^28`
    /// (the threshold of current torch, measured: 2.15 draws 64 bits from
    /// `2^28` on).
    pub fn randint(&mut self, low: i64, high: i64, n: usize) -> Result<Vec<i64>> {
        if low >= high {
            return Err(RngError::EmptyRange {
                low: low as i128,
                high: high as i128,
                closed: false,
            });
        }
        let range = (high as i128 - low as i128) as u64;
        Ok((0..n)
            .map(|_| {
                let v = if range >= 1 << 28 {
                    self.random64()
                } else {
                    self.random() as u64
                };
                (v % range).wrapping_add(low as u64) as i64
            })
            .collect())
    }

    /// `torch.randperm(n)` (int64). For `n < (2^32 - 1) / 20`: swap slot
    /// `i` with `i + random() % (n - i)` for `i` in `0..n-1`; above, the
    /// inside-out Fisher-Yates with `random64() % (i + 1)`.
    pub fn randperm(&mut self, n: usize) -> Vec<i64> {
        if (n as u64) < u32::MAX as u64 / 20 {
            let mut r: Vec<i64> = (0..n as i64).collect();
            for i in 0..n.saturating_sub(1) {
                let z = (self.random() as u64 % (n - i) as u64) as usize;
                r.swap(i, z + i);
            }
            r
        } else {
            let mut r = vec![0i64; n];
            for i in 0..n {
                let z = (self.random64() % (i as u64 + 1)) as usize;
                r[i] = r[z];
                r[z] = i as i64;
            }
            r
        }
    }

    /// `torch.bernoulli(torch.full((n,), p))`: `p` is rounded to float32
    /// and each value is `rand < p` on a float32 uniform.
    pub fn bernoulli(&mut self, p: f64, n: usize) -> Result<Vec<f32>> {
        check_p("p", p)?;
        let p = p as f32;
        Ok((0..n)
            .map(|_| (self.uniform_one_f32(0.0, 1.0) < p) as u8 as f32)
            .collect())
    }

    /// `torch.bernoulli(probs)` for a float32 probability tensor.
    pub fn bernoulli_probs(&mut self, probs: &[f32]) -> Result<Vec<f32>> {
        if let Some(&bad) = probs.iter().find(|p| !(0.0..=1.0).contains(*p)) {
            return Err(RngError::Probability {
                name: "p",
                value: bad as f64,
            });
        }
        Ok(probs
            .iter()
            .map(|&p| (self.uniform_one_f32(0.0, 1.0) < p) as u8 as f32)
            .collect())
    }

    /// `torch.empty(n).bernoulli_(p)` (scalar `p`): `u < p` on float64
    /// uniforms. This is torch's kernel on non-Intel CPUs and in builds
    /// without MKL; on Intel CPUs the MKL build draws from MKL's own stream
    /// (seeded by one `random()`), which is not reproduced here.
    pub fn bernoulli_scalar(&mut self, p: f64, n: usize) -> Result<Vec<f32>> {
        check_p("p", p)?;
        Ok((0..n)
            .map(|_| (self.uniform_one_f64(0.0, 1.0) < p) as u8 as f32)
            .collect())
    }

    /// The multiplier `F.dropout(x, p, training=True)` applies to `n`
    /// values: `0` or `1 / (1 - p)` (float32), from
    /// [`bernoulli_scalar(1 - p)`](Self::bernoulli_scalar). `p = 0` gives
    /// ones and `p = 1` zeros, without drawing (as torch).
    pub fn dropout_mask(&mut self, p: f64, n: usize) -> Result<Vec<f32>> {
        check_p("p", p)?;
        if p == 0.0 {
            return Ok(vec![1.0; n]);
        }
        if p == 1.0 {
            return Ok(vec![0.0; n]);
        }
        let keep = 1.0 - p;
        let scale = keep as f32;
        let noise = self.bernoulli_scalar(keep, n)?;
        Ok(noise.into_iter().map(|v| v / scale).collect())
    }

    /// `F.dropout(x, p, training=True)` on float32 values.
    pub fn dropout(&mut self, x: &[f32], p: f64) -> Result<Vec<f32>> {
        if p == 1.0 {
            check_p("p", p)?;
            return Ok(x.iter().map(|&v| v * 0.0).collect());
        }
        let mask = self.dropout_mask(p, x.len())?;
        Ok(x.iter().zip(mask).map(|(&v, m)| v * m).collect())
    }

    /// `nn.Linear(in_features, out_features)`'s initialisation:
    /// `kaiming_uniform_(weight, a=sqrt(5))`, i.e. `uniform_(-b, b)` with
    /// `b = sqrt(3) * sqrt(2 / (1 + a^2)) / sqrt(in_features)`, then
    /// `uniform_(bias, -1 / sqrt(in_features), 1 / sqrt(in_features))`.
    pub fn linear_init(&mut self, in_features: usize, out_features: usize) -> LinearInit {
        self.linear_init_with(in_features, out_features, true)
    }

    /// `nn.Linear(in_features, out_features, bias=bias)`'s initialisation.
    pub fn linear_init_with(
        &mut self,
        in_features: usize,
        out_features: usize,
        bias: bool,
    ) -> LinearInit {
        let fan_in = in_features as f64;
        let mut weight = Vec::new();
        if in_features > 0 && out_features > 0 {
            let a = 5f64.sqrt();
            let gain = (2.0 / (1.0 + a * a)).sqrt();
            let std = gain / fan_in.sqrt();
            let bound = 3f64.sqrt() * std;
            let (from, to) = ((-bound) as f32, bound as f32);
            weight = (0..in_features * out_features)
                .map(|_| self.uniform_one_f32(from, to))
                .collect();
        }
        let mut b = Vec::new();
        if bias {
            let bound = if in_features > 0 {
                1.0 / fan_in.sqrt()
            } else {
                0.0
            };
            let (from, to) = ((-bound) as f32, bound as f32);
            b = (0..out_features)
                .map(|_| self.uniform_one_f32(from, to))
                .collect();
        }
        LinearInit { weight, bias: b }
    }
}

fn check_range(low: f64, high: f64) -> Result<()> {
    if low <= high && (high - low).is_finite() {
        Ok(())
    } else {
        Err(RngError::InvalidUniformRange { low, high })
    }
}
