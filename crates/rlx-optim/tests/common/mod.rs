//! Shared harness: the fixture problem of tools/gen_optim_fixtures.py and
//! trajectory comparison.
#![allow(dead_code)]

use rlx_optim::{Float, Optimizer};
use serde_json::Value;

pub fn load(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

pub fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// The parameters, their shapes and the gradient function of the fixtures.
pub struct Problem {
    pub names: Vec<String>,
    pub shapes: Vec<Vec<usize>>,
    pub init: Vec<Vec<f64>>,
    h: Vec<Vec<f64>>,
    t: Vec<Vec<f64>>,
    c: f64,
    pub steps: usize,
    /// Give `-g` (the fixtures' maximize runs).
    pub negate: bool,
    /// Amplitude of the drift term `drift * sin(0.7 k + 0.37 i)` (numpy fixtures).
    drift: f64,
    /// Iterations done (the `k` of the drift term is `iter + 1`).
    iter: std::cell::Cell<usize>,
    /// `(zero_every, sparse_mod)` of torch_optim_more.json's problem.
    mask_spec: Option<(usize, usize)>,
    /// Apply the mask (the runs with `grad_mask`): element `j` of iteration
    /// `k` (1-based) is multiplied by 0 if `k % zero_every == 0` or
    /// `(j + k) % sparse_mod == 0`, else by 1.
    pub masked: bool,
}

impl Problem {
    pub fn from(v: &Value) -> Self {
        let names: Vec<String> = v["order"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
        let get = |k: &str| names.iter().map(|n| f64s(&v[k][n])).collect::<Vec<_>>();
        Problem {
            shapes: names
                .iter()
                .map(|n| {
                    v["shapes"][n]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|d| d.as_u64().unwrap() as usize)
                        .collect()
                })
                .collect(),
            init: get("init"),
            h: get("h"),
            t: get("t"),
            c: v["c"].as_f64().unwrap(),
            steps: v["steps"].as_u64().unwrap() as usize,
            negate: false,
            drift: v.get("drift").and_then(Value::as_f64).unwrap_or(0.0),
            iter: std::cell::Cell::new(0),
            mask_spec: match (v.get("zero_every"), v.get("sparse_mod")) {
                (Some(z), Some(m)) => {
                    Some((z.as_u64().unwrap() as usize, m.as_u64().unwrap() as usize))
                }
                _ => None,
            },
            masked: false,
            names,
        }
    }

    /// `g = h * (p - t) + c * ((p * p) * p)` in `T` (plus the drift term at
    /// the current iteration, computed in f64).
    pub fn grad<T: Float>(&self, i: usize, p: &[T]) -> Vec<T> {
        let c = T::c(self.c);
        let k = (self.iter.get() + 1) as f64;
        p.iter()
            .zip(&self.h[i])
            .zip(&self.t[i])
            .enumerate()
            .map(|(j, ((&x, &h), &t))| {
                let mut g = T::c(h) * (x - T::c(t)) + c * (x * x * x);
                if self.masked {
                    let (z, m) = self.mask_spec.expect("a problem with a mask");
                    let k = k as usize;
                    let off = k.is_multiple_of(z) || (j + k).is_multiple_of(m);
                    g = g * if off { T::zero() } else { T::one() };
                }
                if self.drift == 0.0 {
                    g
                } else {
                    g + T::c(self.drift * (0.7 * k + 0.37 * j as f64).sin())
                }
            })
            .collect()
    }

    pub fn reset(&self) {
        self.iter.set(0);
    }

    /// Steps the drift clock back / forward by one iteration.
    pub fn back(&self) {
        self.iter.set(self.iter.get() - 1);
    }

    pub fn forward(&self) {
        self.iter.set(self.iter.get() + 1);
    }

    pub fn params<T: Float>(&self) -> Vec<Vec<T>> {
        self.init
            .iter()
            .map(|v| v.iter().map(|&x| T::c(x)).collect())
            .collect()
    }

    /// One iteration: every parameter stepped with its gradient.
    pub fn iterate<T: Float>(&self, opt: &mut dyn Optimizer, ps: &mut [Vec<T>]) {
        for (i, p) in ps.iter_mut().enumerate() {
            let mut g = self.grad(i, p);
            if self.negate {
                g.iter_mut().for_each(|x| *x = -*x);
            }
            step_dyn(opt, &self.names[i], &self.shapes[i], p, &g);
        }
        opt.end_iteration();
        self.iter.set(self.iter.get() + 1);
    }

    /// Runs `steps` iterations from the initial values; the flattened
    /// parameters after each.
    pub fn run<T: Float>(&self, opt: &mut dyn Optimizer) -> Vec<Vec<f64>> {
        self.iter.set(0);
        let mut ps = self.params::<T>();
        (0..self.steps)
            .map(|_| {
                self.iterate(opt, &mut ps);
                ps.iter().flatten().map(|x| x.f64()).collect()
            })
            .collect()
    }
}

pub fn step_dyn<T: Float>(
    opt: &mut dyn Optimizer,
    name: &str,
    shape: &[usize],
    p: &mut [T],
    g: &[T],
) {
    T::step_on(opt, name, shape, p, g).unwrap_or_else(|e| panic!("step {name}: {e}"));
}

/// Largest `|a - b| / max(|b|, floor)` over a trajectory.
pub fn max_rel(got: &[Vec<f64>], want: &[Vec<f64>], floor: f64) -> (f64, usize, usize) {
    assert_eq!(got.len(), want.len(), "trajectory lengths");
    let mut worst = (0.0, 0, 0);
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.len(), w.len());
        for (i, (&a, &b)) in g.iter().zip(w).enumerate() {
            let r = (a - b).abs() / b.abs().max(floor);
            if r.is_nan() || r > worst.0 {
                worst = (r, k + 1, i);
            }
        }
    }
    worst
}

pub fn traj(v: &Value) -> Vec<Vec<f64>> {
    v.as_array().unwrap().iter().map(f64s).collect()
}
