//! A host mirror of `optim.cu`'s per-element updates, in f32 with the same
//! fused multiply-adds, written from the kernels' comments: checked here
//! against `rlx-optim` (torch's single-tensor path), and on a GPU the
//! kernels themselves are (`tests/gpu_kernels.rs`).

use rlx_cuda::optim::{AdamUpdate, OptimizerRule, SgdUpdate};
use std::collections::HashMap;

/// SGD state of one parameter: the momentum buffer once a step ran.
#[derive(Default)]
pub struct Sgd {
    buf: Option<Vec<f32>>,
}

impl Sgd {
    /// One step of `p` by `grad`.
    pub fn step(&mut self, c: &SgdUpdate, p: &mut [f32], grad: &[f32]) {
        let first = self.buf.is_none();
        let buf = (c.momentum != 0.0).then(|| self.buf.get_or_insert_with(|| vec![0.0; p.len()]));
        let mut buf = buf;
        for i in 0..p.len() {
            let mut g = if c.maximize { -grad[i] } else { grad[i] };
            if c.weight_decay != 0.0 {
                g = c.weight_decay.mul_add(p[i], g);
            }
            if let Some(b) = buf.as_deref_mut() {
                let v = if first {
                    g
                } else {
                    (1.0 - c.dampening).mul_add(g, b[i] * c.momentum)
                };
                b[i] = v;
                g = if c.nesterov {
                    c.momentum.mul_add(v, g)
                } else {
                    v
                };
            }
            p[i] = (-c.lr).mul_add(g, p[i]);
        }
    }
}

/// Adam state of one parameter.
#[derive(Default)]
pub struct Adam {
    m: Vec<f32>,
    v: Vec<f32>,
    vmax: Vec<f32>,
    t: u64,
}

impl Adam {
    /// One step of `p` by `grad`.
    pub fn step(&mut self, c: &AdamUpdate, p: &mut [f32], grad: &[f32]) {
        let n = p.len();
        if self.t == 0 {
            (self.m, self.v, self.vmax) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        }
        self.t += 1;
        let (b1, b2) = c.betas;
        let t = self.t as f64;
        let step_size = (c.lr / (1.0 - b1.powf(t))) as f32;
        let bc2_sqrt = (1.0 - b2.powf(t)).sqrt() as f32;
        let decay = (1.0 - c.lr * c.weight_decay) as f32;
        let (b1, b2, wd) = (b1 as f32, b2 as f32, c.weight_decay as f32);
        let lerp = |a: f32, b: f32, w: f32| {
            if w.abs() < 0.5 {
                w.mul_add(b - a, a)
            } else {
                (-(b - a)).mul_add(1.0 - w, b)
            }
        };
        for i in 0..n {
            let mut g = if c.maximize { -grad[i] } else { grad[i] };
            let mut pi = p[i];
            if wd != 0.0 {
                if c.decoupled {
                    pi *= decay;
                } else {
                    g = wd.mul_add(pi, g);
                }
            }
            let m = lerp(self.m[i], g, 1.0 - b1);
            let v = ((1.0 - b2) * g).mul_add(g, self.v[i] * b2);
            (self.m[i], self.v[i]) = (m, v);
            let mut second = v;
            if c.amsgrad {
                second = self.vmax[i].max(v);
                self.vmax[i] = second;
            }
            p[i] = pi + -step_size * m / (second.sqrt() / bc2_sqrt + c.eps);
        }
    }
}

/// The mirror of a `DeviceOptimizer`: one state per manifest param.
pub struct Mirror {
    rule: OptimizerRule,
    sgd: HashMap<usize, Sgd>,
    adam: HashMap<usize, Adam>,
}

impl Mirror {
    /// A fresh optimizer of `rule`.
    pub fn new(rule: OptimizerRule) -> Mirror {
        Mirror {
            rule,
            sgd: HashMap::new(),
            adam: HashMap::new(),
        }
    }

    /// One step of param `param`'s values `p` by `grad`.
    pub fn step(&mut self, param: usize, p: &mut [f32], grad: &[f32]) {
        match &self.rule {
            OptimizerRule::Sgd(c) => self.sgd.entry(param).or_default().step(c, p, grad),
            OptimizerRule::Adam(c) => self.adam.entry(param).or_default().step(c, p, grad),
        }
    }
}
