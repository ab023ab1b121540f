//! AdaLoRA's rank allocation, as PEFT's `RankAllocator` driven by
//! `AdaLoraModel.update_and_allocate`: a cubic budget schedule, importance
//! scores `|p · grad|` smoothed by an EMA and weighted by an EMA of their
//! uncertainty, and masking of the least important singular values
//! (`lora_E` entries) down to the budget.
//!
//! Arithmetic is f32 elementwise as PyTorch does it; the row / column means
//! accumulate in f64.

use crate::error::{invalid, Result};
use std::cmp::Ordering::{Equal, Less};
use std::collections::BTreeMap;

/// The schedule and EMA parameters of PEFT's `AdaLoraConfig`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AllocatorConfig {
    /// Target average rank per module after allocation.
    pub target_r: usize,
    /// Warm-up steps (full budget, no masking).
    pub tinit: usize,
    /// Final steps at the target budget.
    pub tfinal: usize,
    /// Mask every `delta_t` steps during the budget decay.
    pub delta_t: usize,
    /// EMA factor of the importance.
    pub beta1: f64,
    /// EMA factor of the uncertainty.
    pub beta2: f64,
    /// Total training steps.
    pub total_step: usize,
}

/// One module's SVD triplet and its gradients, as flat row-major slices:
/// `lora_A [r, in]`, `lora_E [r, 1]` (masked in place), `lora_B [out, r]`.
#[derive(Debug)]
pub struct TripletMut<'a> {
    /// `lora_A` values.
    pub lora_a: &'a [f32],
    /// Gradient of `lora_A`.
    pub grad_a: &'a [f32],
    /// `lora_E` values; masked entries are set to 0.
    pub lora_e: &'a mut [f32],
    /// Gradient of `lora_E`.
    pub grad_e: &'a [f32],
    /// `lora_B` values.
    pub lora_b: &'a [f32],
    /// Gradient of `lora_B`.
    pub grad_b: &'a [f32],
}

/// Per-module EMAs of one tensor kind.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Importance {
    /// Latest `|p · grad|`.
    pub ipt: Vec<f32>,
    /// EMA of the importance.
    pub exp_avg_ipt: Vec<f32>,
    /// EMA of `|ipt - exp_avg_ipt|`.
    pub exp_avg_unc: Vec<f32>,
}

/// The importance state of one module: for `lora_A`, `lora_E`, `lora_B`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModuleImportance {
    /// Of `lora_A`.
    pub a: Importance,
    /// Of `lora_E`.
    pub e: Importance,
    /// Of `lora_B`.
    pub b: Importance,
}

/// Which singular values each module keeps: PEFT's `rank_pattern`.
pub type RankPattern = BTreeMap<String, Vec<bool>>;

/// The rank allocator. Call [`RankAllocator::update_and_allocate`] after
/// every optimizer step, with the parameters and the gradients of that step.
#[derive(Clone, Debug)]
pub struct RankAllocator {
    config: AllocatorConfig,
    ranks: BTreeMap<String, usize>,
    init_bgt: usize,
    target_bgt: usize,
    state: BTreeMap<String, ModuleImportance>,
    rank_pattern: Option<RankPattern>,
}

impl RankAllocator {
    /// An allocator over modules given as (name, current rank).
    pub fn new(config: AllocatorConfig, modules: &[(String, usize)]) -> Result<RankAllocator> {
        for (name, b) in [("beta1", config.beta1), ("beta2", config.beta2)] {
            if !(b > 0.0 && b < 1.0) {
                return Err(invalid(name, format!("must be in (0, 1), given {b}")));
            }
        }
        if config.tinit + config.tfinal >= config.total_step {
            return Err(invalid(
                "AdaLoRA schedule",
                format!(
                    "tinit ({}) + tfinal ({}) must be below total_step ({})",
                    config.tinit, config.tfinal, config.total_step
                ),
            ));
        }
        if config.delta_t == 0 {
            return Err(invalid("deltaT", "must be positive"));
        }
        let ranks: BTreeMap<String, usize> = modules.iter().cloned().collect();
        if ranks.len() != modules.len() {
            return Err(invalid("AdaLoRA modules", "a module name is repeated"));
        }
        let init_bgt = ranks.values().sum();
        let target_bgt = config.target_r * ranks.len();
        Ok(RankAllocator {
            config,
            ranks,
            init_bgt,
            target_bgt,
            state: BTreeMap::new(),
            rank_pattern: None,
        })
    }

    /// Total initial rank over all modules.
    pub fn init_budget(&self) -> usize {
        self.init_bgt
    }

    /// `target_r` times the number of modules.
    pub fn target_budget(&self) -> usize {
        self.target_bgt
    }

    /// The importance state of every module (empty before the first update
    /// and after the final allocation, as PEFT resets it there).
    pub fn importance(&self) -> &BTreeMap<String, ModuleImportance> {
        &self.state
    }

    /// The latest rank pattern.
    pub fn rank_pattern(&self) -> Option<&RankPattern> {
        self.rank_pattern.as_ref()
    }

    /// PEFT's `budget_schedule`: the budget at `step` and whether to mask.
    pub fn budget_schedule(&self, step: usize) -> (usize, bool) {
        let c = &self.config;
        if step <= c.tinit {
            (self.init_bgt, false)
        } else if step > c.total_step - c.tfinal {
            (self.target_bgt, true)
        } else {
            let mul = 1.0 - (step - c.tinit) as f64 / (c.total_step - c.tfinal - c.tinit) as f64;
            let span = self.init_bgt as f64 - self.target_bgt as f64;
            let budget = (span * mul.powi(3) + self.target_bgt as f64) as usize;
            (budget, step.is_multiple_of(c.delta_t))
        }
    }

    /// PEFT's `AdaLoraModel.update_and_allocate(step)`: updates the importance
    /// (before the final phase), masks `lora_E` to the budget when the
    /// schedule says so, forces the final allocation at
    /// `total_step - tfinal`, and re-applies the final pattern after it.
    /// Returns the rank pattern when this step produced one.
    pub fn update_and_allocate(
        &mut self,
        step: usize,
        modules: &mut BTreeMap<String, TripletMut<'_>>,
    ) -> Result<Option<RankPattern>> {
        self.check_modules(modules)?;
        let last = self.config.total_step - self.config.tfinal;
        if step < last {
            self.update_ipt(modules);
            let (budget, mask) = self.budget_schedule(step);
            if mask {
                let p = self.mask_to_budget(modules, budget)?;
                self.rank_pattern = Some(p.clone());
                return Ok(Some(p));
            }
            Ok(None)
        } else if step == last {
            let (budget, _) = self.budget_schedule(step);
            let p = self.mask_to_budget(modules, budget)?;
            self.rank_pattern = Some(p.clone());
            self.state.clear();
            Ok(Some(p))
        } else {
            if let Some(p) = &self.rank_pattern {
                for (name, t) in modules.iter_mut() {
                    for (e, keep) in t.lora_e.iter_mut().zip(&p[name]) {
                        if !keep {
                            *e = 0.0;
                        }
                    }
                }
            }
            Ok(None)
        }
    }

    fn check_modules(&self, modules: &BTreeMap<String, TripletMut<'_>>) -> Result<()> {
        if modules.len() != self.ranks.len() || modules.keys().ne(self.ranks.keys()) {
            return Err(invalid(
                "AdaLoRA modules",
                format!(
                    "expected {:?}, given {:?}",
                    self.ranks.keys().collect::<Vec<_>>(),
                    modules.keys().collect::<Vec<_>>()
                ),
            ));
        }
        for (name, t) in modules {
            let r = self.ranks[name];
            let lens = [
                ("lora_A", t.lora_a.len(), t.grad_a.len()),
                ("lora_E", t.lora_e.len(), t.grad_e.len()),
                ("lora_B", t.lora_b.len(), t.grad_b.len()),
            ];
            for (what, n, g) in lens {
                if n != g || (r == 0 && n != 0) || (r > 0 && n % r != 0) {
                    return Err(invalid(
                        format!("{name}.{what}"),
                        format!("{n} values and {g} gradients do not fit rank {r}"),
                    ));
                }
            }
            if t.lora_e.len() != r {
                return Err(crate::PeftError::Shape {
                    what: format!("{name}.lora_E"),
                    expected: vec![r, 1],
                    given: vec![t.lora_e.len(), 1],
                });
            }
        }
        Ok(())
    }

    fn update_ipt(&mut self, modules: &BTreeMap<String, TripletMut<'_>>) {
        let (b1, b2) = (self.config.beta1 as f32, self.config.beta2 as f32);
        let (c1, c2) = (
            (1.0 - self.config.beta1) as f32,
            (1.0 - self.config.beta2) as f32,
        );
        let update = |s: &mut Importance, p: &[f32], g: &[f32]| {
            if s.ipt.len() != p.len() {
                *s = Importance {
                    ipt: vec![0.0; p.len()],
                    exp_avg_ipt: vec![0.0; p.len()],
                    exp_avg_unc: vec![0.0; p.len()],
                };
            }
            for i in 0..p.len() {
                let ipt = (p[i] * g[i]).abs();
                s.ipt[i] = ipt;
                s.exp_avg_ipt[i] = b1 * s.exp_avg_ipt[i] + c1 * ipt;
                s.exp_avg_unc[i] = b2 * s.exp_avg_unc[i] + c2 * (ipt - s.exp_avg_ipt[i]).abs();
            }
        };
        for (name, t) in modules {
            let s = self.state.entry(name.clone()).or_default();
            update(&mut s.a, t.lora_a, t.grad_a);
            update(&mut s.e, t.lora_e, t.grad_e);
            update(&mut s.b, t.lora_b, t.grad_b);
        }
    }

    /// The score of every triplet of `name`: `score(E_i) + mean_j score(A_ij)
    /// + mean_o score(B_oi)`, with `score = exp_avg_ipt * exp_avg_unc`.
    fn triplet_scores(&self, name: &str) -> Vec<f32> {
        let r = self.ranks[name];
        let Some(s) = self.state.get(name) else {
            return vec![0.0; r];
        };
        let score = |i: &Importance| -> Vec<f32> {
            i.exp_avg_ipt
                .iter()
                .zip(&i.exp_avg_unc)
                .map(|(a, b)| a * b)
                .collect()
        };
        let (sa, se, sb) = (score(&s.a), score(&s.e), score(&s.b));
        let (n_in, n_out) = (sa.len() / r.max(1), sb.len() / r.max(1));
        (0..r)
            .map(|k| {
                let mean_a = sa[k * n_in..(k + 1) * n_in]
                    .iter()
                    .map(|&v| f64::from(v))
                    .sum::<f64>()
                    / n_in as f64;
                let mean_b =
                    (0..n_out).map(|o| f64::from(sb[o * r + k])).sum::<f64>() / n_out as f64;
                se[k] + (mean_a as f32 + mean_b as f32)
            })
            .collect()
    }

    /// PEFT's `mask_to_budget`: the `(init - budget)`-th smallest score is the
    /// threshold; every triplet at or below it is masked.
    fn mask_to_budget(
        &self,
        modules: &mut BTreeMap<String, TripletMut<'_>>,
        budget: usize,
    ) -> Result<RankPattern> {
        let scores: BTreeMap<&String, Vec<f32>> = self
            .ranks
            .keys()
            .map(|n| (n, self.triplet_scores(n)))
            .collect();
        let k = self
            .init_bgt
            .checked_sub(budget)
            .filter(|&k| k > 0)
            .ok_or_else(|| {
                invalid(
                    "AdaLoRA budget",
                    format!(
                        "budget {budget} leaves nothing to mask of {}",
                        self.init_bgt
                    ),
                )
            })?;
        let mut all: Vec<f32> = scores.values().flatten().copied().collect();
        all.sort_by(|a, b| a.total_cmp(b));
        let threshold = all[k - 1];
        let mut pattern = RankPattern::new();
        for (name, t) in modules.iter_mut() {
            // kept unless `s <= t`: a NaN score is kept, as in PEFT
            let keep: Vec<bool> = scores[name]
                .iter()
                .map(|s| !matches!(s.partial_cmp(&threshold), Some(Less | Equal)))
                .collect();
            for (e, &kept) in t.lora_e.iter_mut().zip(&keep) {
                if !kept {
                    *e = 0.0;
                }
            }
            pattern.insert(name.clone(), keep);
        }
        Ok(pattern)
    }
}
