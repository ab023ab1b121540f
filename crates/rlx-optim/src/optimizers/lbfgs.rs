//! L-BFGS, as `torch.optim.LBFGS`, with its optional strong-Wolfe line
//! search. Unlike the other optimizers it needs to re-evaluate the loss, so
//! it does not implement [`crate::Optimizer`]: [`Lbfgs::step`] takes the
//! whole model as one flat parameter vector and a closure that computes the
//! loss and its gradient there.

use std::collections::VecDeque;

use crate::error::{OptimError, Result};
use crate::float::{axpy, Float};
use crate::optimizers::check;
use crate::state::{OptimState, ParamState, SavedParam};

/// How [`Lbfgs`] picks the step length along its search direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineSearch {
    /// A fixed step `lr` (the first iteration: `min(1, 1 / |g|_1) lr`), as
    /// `line_search_fn=None`.
    Fixed,
    /// torch's strong-Wolfe search (`line_search_fn="strong_wolfe"`,
    /// `c1 = 1e-4`, `c2 = 0.9`, cubic interpolation).
    StrongWolfe,
}

/// Hyperparameters of [`Lbfgs`]; defaults are `torch.optim.LBFGS`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct LbfgsConfig {
    /// Learning rate (1).
    pub lr: f64,
    /// Iterations per [`Lbfgs::step`] (20).
    pub max_iter: usize,
    /// Loss evaluations per step (`None`: `max_iter * 5 / 4`).
    pub max_eval: Option<usize>,
    /// Stop when `max |g| <= tolerance_grad` (1e-7).
    pub tolerance_grad: f64,
    /// Stop when the loss or the step changes less than this (1e-9).
    pub tolerance_change: f64,
    /// Correction pairs kept (100).
    pub history_size: usize,
    /// Step-length rule ([`LineSearch::Fixed`]).
    pub line_search: LineSearch,
    /// Ascend instead of descend (false).
    pub maximize: bool,
}

impl Default for LbfgsConfig {
    fn default() -> Self {
        LbfgsConfig {
            lr: 1.0,
            max_iter: 20,
            max_eval: None,
            tolerance_grad: 1e-7,
            tolerance_change: 1e-9,
            history_size: 100,
            line_search: LineSearch::Fixed,
            maximize: false,
        }
    }
}

/// L-BFGS (`torch.optim.LBFGS`) over one flat parameter vector.
///
/// ```
/// use rlx_optim::{Lbfgs, LbfgsConfig, LineSearch};
/// // minimise (x0 - 1)^2 + 10 (x1 + 2)^2
/// let mut opt = Lbfgs::new(LbfgsConfig { line_search: LineSearch::StrongWolfe, ..Default::default() })?;
/// let mut x = vec![0.0f64, 0.0];
/// opt.step(&mut x, |x: &[f64], g: &mut [f64]| {
///     g[0] = 2.0 * (x[0] - 1.0);
///     g[1] = 20.0 * (x[1] + 2.0);
///     (x[0] - 1.0).powi(2) + 10.0 * (x[1] + 2.0).powi(2)
/// })?;
/// assert!((x[0] - 1.0).abs() < 1e-6 && (x[1] + 2.0).abs() < 1e-6);
/// # Ok::<(), rlx_optim::OptimError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Lbfgs {
    cfg: LbfgsConfig,
    /// Everything kept between steps (saved as the parameter `"flat"`).
    state: Option<ParamState>,
}

/// The state between steps, unpacked.
struct Hist<T> {
    d: Option<Vec<T>>,
    t: f64,
    dirs: VecDeque<Vec<T>>,
    stps: VecDeque<Vec<T>>,
    ro: VecDeque<f64>,
    h_diag: f64,
    prev_flat_grad: Option<Vec<T>>,
    prev_loss: f64,
    n_iter: u64,
    func_evals: u64,
}

const NAME: &str = "Lbfgs";
const KEY: &str = "flat";

fn dot<T: Float>(a: &[T], b: &[T]) -> f64 {
    a.iter()
        .zip(b)
        .fold(T::zero(), |s, (&x, &y)| s + x * y)
        .f64()
}

fn abs_max<T: Float>(a: &[T]) -> f64 {
    a.iter().fold(T::zero(), |m, &x| m.max(x.abs())).f64()
}

/// torch's `_cubic_interpolate`.
fn cubic(x1: f64, f1: f64, g1: f64, x2: f64, f2: f64, g2: f64, bounds: Option<(f64, f64)>) -> f64 {
    let (lo, hi) = bounds.unwrap_or(if x1 <= x2 { (x1, x2) } else { (x2, x1) });
    let d1 = g1 + g2 - 3.0 * (f1 - f2) / (x1 - x2);
    let d2_square = d1 * d1 - g1 * g2;
    if d2_square >= 0.0 {
        let d2 = d2_square.sqrt();
        let min_pos = if x1 <= x2 {
            x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2.0 * d2))
        } else {
            x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2.0 * d2))
        };
        min_pos.max(lo).min(hi)
    } else {
        (lo + hi) / 2.0
    }
}

impl Lbfgs {
    /// The optimizer; errors on a negative rate or tolerance, a zero
    /// `max_iter` / `max_eval` or a zero history.
    pub fn new(cfg: LbfgsConfig) -> Result<Self> {
        check("lr", cfg.lr, cfg.lr >= 0.0, "must be >= 0")?;
        check(
            "max_iter",
            cfg.max_iter as f64,
            cfg.max_iter > 0,
            "must be > 0",
        )?;
        if let Some(e) = cfg.max_eval {
            check("max_eval", e as f64, e > 0, "must be > 0")?;
        }
        check(
            "history_size",
            cfg.history_size as f64,
            cfg.history_size > 0,
            "must be > 0",
        )?;
        for (name, v) in [
            ("tolerance_grad", cfg.tolerance_grad),
            ("tolerance_change", cfg.tolerance_change),
        ] {
            check(name, v, v >= 0.0, "must be >= 0")?;
        }
        Ok(Lbfgs { cfg, state: None })
    }

    /// The hyperparameters.
    pub fn config(&self) -> &LbfgsConfig {
        &self.cfg
    }

    /// Loss evaluations so far (torch's `state["func_evals"]`).
    pub fn func_evals(&self) -> u64 {
        self.state
            .as_ref()
            .map_or(0, |s| s.scalar("func_evals", 0.0) as u64)
    }

    /// Iterations so far (torch's `state["n_iter"]`).
    pub fn n_iter(&self) -> u64 {
        self.state
            .as_ref()
            .map_or(0, |s| s.scalar("n_iter", 0.0) as u64)
    }

    /// A snapshot of the state (one entry, `"flat"`).
    pub fn save_state(&self) -> OptimState {
        let mut params = std::collections::BTreeMap::new();
        if let Some(st) = &self.state {
            params.insert(KEY.to_string(), SavedParam::from_state(st));
        }
        OptimState {
            optimizer: NAME.into(),
            iteration: self.n_iter(),
            lr: self.cfg.lr,
            params,
        }
    }

    /// Replaces the state with one [`Lbfgs::save_state`] wrote; nothing
    /// changes on error.
    pub fn load_state(&mut self, st: &OptimState) -> Result<()> {
        if st.optimizer != NAME {
            return Err(OptimError::BadState(format!(
                "written by {}, loading into {NAME}",
                st.optimizer
            )));
        }
        let state = match st.params.get(KEY) {
            Some(p) if st.params.len() == 1 => Some(p.to_state(KEY)?),
            None if st.params.is_empty() => None,
            _ => {
                return Err(OptimError::BadState(format!(
                    "expected one parameter `{KEY}`"
                )))
            }
        };
        if let Some(s) = &state {
            match s.dtype {
                "f32" => drop(Self::unpack::<f32>(s)?),
                _ => drop(Self::unpack::<f64>(s)?),
            }
        }
        self.state = state;
        Ok(())
    }

    fn unpack<T: Float>(st: &ParamState) -> Result<Hist<T>> {
        let n: usize = st.shape.iter().product();
        let bufs = T::bufs_ref(st);
        let get = |k: &str| -> Result<Option<Vec<T>>> {
            match bufs.get(k) {
                Some(v) if v.len() == n => Ok(Some(v.clone())),
                Some(v) => Err(OptimError::BadState(format!(
                    "buffer `{k}` has {} elements, expected {n}",
                    v.len()
                ))),
                None => Ok(None),
            }
        };
        let hist = st.scalar("history_len", 0.0);
        if !((0.0..=1e6).contains(&hist) && hist.fract() == 0.0) {
            return Err(OptimError::BadState(format!("history_len {hist}")));
        }
        let (mut dirs, mut stps, mut ro) = (VecDeque::new(), VecDeque::new(), VecDeque::new());
        for i in 0..hist as usize {
            let missing = || OptimError::BadState(format!("history entry {i} missing"));
            dirs.push_back(get(&format!("old_dirs.{i}"))?.ok_or_else(missing)?);
            stps.push_back(get(&format!("old_stps.{i}"))?.ok_or_else(missing)?);
            ro.push_back(*st.scalars.get(&format!("ro.{i}")).ok_or_else(missing)?);
        }
        Ok(Hist {
            d: get("d")?,
            t: st.scalar("t", 0.0),
            dirs,
            stps,
            ro,
            h_diag: st.scalar("H_diag", 1.0),
            prev_flat_grad: get("prev_flat_grad")?,
            prev_loss: st.scalar("prev_loss", 0.0),
            n_iter: st.scalar("n_iter", 0.0) as u64,
            func_evals: st.scalar("func_evals", 0.0) as u64,
        })
    }

    fn pack<T: Float>(h: Hist<T>, n: usize) -> ParamState {
        let mut st = ParamState {
            step: h.n_iter,
            shape: vec![n],
            dtype: T::NAME,
            ..Default::default()
        };
        let b = T::bufs(&mut st);
        if let Some(d) = h.d {
            b.insert("d".into(), d);
        }
        if let Some(p) = h.prev_flat_grad {
            b.insert("prev_flat_grad".into(), p);
        }
        let len = h.dirs.len();
        for (i, (y, s)) in h.dirs.into_iter().zip(h.stps).enumerate() {
            b.insert(format!("old_dirs.{i}"), y);
            b.insert(format!("old_stps.{i}"), s);
        }
        for (i, r) in h.ro.into_iter().enumerate() {
            st.scalars.insert(format!("ro.{i}"), r);
        }
        for (k, v) in [
            ("history_len", len as f64),
            ("t", h.t),
            ("H_diag", h.h_diag),
            ("prev_loss", h.prev_loss),
            ("n_iter", h.n_iter as f64),
            ("func_evals", h.func_evals as f64),
        ] {
            st.scalars.insert(k.into(), v);
        }
        st
    }

    /// One `torch.optim.LBFGS.step(closure)`: up to `max_iter` iterations
    /// on `x`. `closure(x, grad)` writes the gradient of the loss at `x`
    /// into `grad` and returns the loss. Returns the loss at the starting
    /// point. Errors (and changes nothing) if `x` does not match the state
    /// of earlier steps.
    pub fn step<T: Float, F>(&mut self, x: &mut [T], mut closure: F) -> Result<f64>
    where
        F: FnMut(&[T], &mut [T]) -> f64,
    {
        let n = x.len();
        let mut h = match &self.state {
            Some(st) => {
                if st.shape != [n] || st.dtype != T::NAME {
                    return Err(OptimError::StateMismatch {
                        name: KEY.into(),
                        expected: format!("{:?} {}", st.shape, st.dtype),
                        given: format!("{:?} {}", [n], T::NAME),
                    });
                }
                Self::unpack::<T>(st)?
            }
            None => Hist {
                d: None,
                t: 0.0,
                dirs: VecDeque::new(),
                stps: VecDeque::new(),
                ro: VecDeque::new(),
                h_diag: 1.0,
                prev_flat_grad: None,
                prev_loss: 0.0,
                n_iter: 0,
                func_evals: 0,
            },
        };
        let c = self.cfg.clone();
        let max_eval = c.max_eval.unwrap_or(c.max_iter * 5 / 4);
        let sign = if c.maximize { -1.0 } else { 1.0 };
        // loss and flat gradient at x + t d (torch's _directional_evaluate)
        let mut eval = |x: &[T], t: f64, d: Option<&[T]>| -> (f64, Vec<T>) {
            let mut g = vec![T::zero(); n];
            let f = match d {
                Some(d) => {
                    let mut xt = x.to_vec();
                    axpy(&mut xt, T::c(t), d);
                    closure(&xt, &mut g)
                }
                None => closure(x, &mut g),
            };
            if c.maximize {
                g.iter_mut().for_each(|v| *v = -*v);
            }
            (sign * f, g)
        };

        let (mut loss, mut flat_grad) = eval(x, 0.0, None);
        let orig_loss = sign * loss;
        let mut current_evals = 1;
        h.func_evals += 1;
        if abs_max(&flat_grad) <= c.tolerance_grad {
            self.state = Some(Self::pack(h, n));
            return Ok(orig_loss);
        }
        let mut n_iter = 0;
        while n_iter < c.max_iter {
            n_iter += 1;
            h.n_iter += 1;
            let d: Vec<T> = if h.n_iter == 1 {
                h.dirs.clear();
                h.stps.clear();
                h.ro.clear();
                h.h_diag = 1.0;
                flat_grad.iter().map(|&g| -g).collect()
            } else {
                let prev = h.prev_flat_grad.as_ref().expect("set after iteration 1");
                let old_d = h.d.as_ref().expect("set after iteration 1");
                let y: Vec<T> = flat_grad.iter().zip(prev).map(|(&a, &b)| a - b).collect();
                let tt = T::c(h.t);
                let s: Vec<T> = old_d.iter().map(|&v| v * tt).collect();
                let ys = dot(&y, &s);
                if ys > 1e-10 {
                    if h.dirs.len() == c.history_size {
                        h.dirs.pop_front();
                        h.stps.pop_front();
                        h.ro.pop_front();
                    }
                    h.h_diag = ys / dot(&y, &y);
                    h.dirs.push_back(y);
                    h.stps.push_back(s);
                    h.ro.push_back(1.0 / ys);
                }
                let k = h.dirs.len();
                let mut al = vec![0.0; k];
                let mut q: Vec<T> = flat_grad.iter().map(|&g| -g).collect();
                for i in (0..k).rev() {
                    al[i] = dot(&h.stps[i], &q) * h.ro[i];
                    axpy(&mut q, T::c(-al[i]), &h.dirs[i]);
                }
                let hd = T::c(h.h_diag);
                let mut r: Vec<T> = q.iter().map(|&v| v * hd).collect();
                for (i, &a) in al.iter().enumerate() {
                    let be = dot(&h.dirs[i], &r) * h.ro[i];
                    axpy(&mut r, T::c(a - be), &h.stps[i]);
                }
                r
            };
            h.prev_flat_grad = Some(flat_grad.clone());
            h.prev_loss = loss;
            let mut t = if h.n_iter == 1 {
                let l1 = flat_grad.iter().fold(T::zero(), |s, &g| s + g.abs()).f64();
                (1.0f64).min(1.0 / l1) * c.lr
            } else {
                c.lr
            };
            let gtd = dot(&flat_grad, &d);
            if gtd > -c.tolerance_change {
                h.d = Some(d);
                h.t = t;
                break;
            }
            let ls_evals;
            let opt_cond;
            match c.line_search {
                LineSearch::StrongWolfe => {
                    let max_ls = max_eval.saturating_sub(current_evals);
                    let (f, g, tt, e) = strong_wolfe(
                        &mut eval,
                        x,
                        t,
                        &d,
                        loss,
                        &flat_grad,
                        gtd,
                        c.tolerance_change,
                        max_ls,
                    );
                    loss = f;
                    flat_grad = g;
                    t = tt;
                    ls_evals = e;
                    axpy(x, T::c(t), &d);
                    opt_cond = abs_max(&flat_grad) <= c.tolerance_grad;
                }
                LineSearch::Fixed => {
                    axpy(x, T::c(t), &d);
                    if n_iter != c.max_iter {
                        let (f, g) = eval(x, 0.0, None);
                        loss = f;
                        flat_grad = g;
                        opt_cond = abs_max(&flat_grad) <= c.tolerance_grad;
                        ls_evals = 1;
                    } else {
                        opt_cond = false;
                        ls_evals = 0;
                    }
                }
            }
            current_evals += ls_evals;
            h.func_evals += ls_evals as u64;
            let tt = T::c(t);
            let step_max = d
                .iter()
                .fold(T::zero(), |m, &v| m.max((v * tt).abs()))
                .f64();
            h.d = Some(d);
            h.t = t;
            if n_iter == c.max_iter
                || current_evals >= max_eval
                || opt_cond
                || step_max <= c.tolerance_change
                || (loss - h.prev_loss).abs() < c.tolerance_change
            {
                break;
            }
        }
        self.state = Some(Self::pack(h, n));
        Ok(orig_loss)
    }
}

/// torch's `_strong_wolfe` (c1 = 1e-4, c2 = 0.9): the loss, gradient and
/// step length found, and the evaluations made.
#[allow(clippy::too_many_arguments)]
fn strong_wolfe<T: Float, E>(
    eval: &mut E,
    x: &[T],
    mut t: f64,
    d: &[T],
    f: f64,
    g: &[T],
    gtd: f64,
    tolerance_change: f64,
    max_ls: usize,
) -> (f64, Vec<T>, f64, usize)
where
    E: FnMut(&[T], f64, Option<&[T]>) -> (f64, Vec<T>),
{
    let (c1, c2) = (1e-4, 0.9);
    let d_norm = abs_max(d);
    let (mut f_new, mut g_new) = eval(x, t, Some(d));
    let mut evals = 1;
    let mut gtd_new = dot(&g_new, d);
    let (mut t_prev, mut f_prev, mut g_prev, mut gtd_prev) = (0.0, f, g.to_vec(), gtd);
    let mut done = false;
    let mut ls_iter = 0;
    // (t, f, g, gtd) at the ends of the bracket
    let mut br: Vec<(f64, f64, Vec<T>, f64)> = vec![];
    while ls_iter < max_ls {
        if f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= f_prev) {
            br = vec![
                (t_prev, f_prev, g_prev.clone(), gtd_prev),
                (t, f_new, g_new.clone(), gtd_new),
            ];
            break;
        }
        if gtd_new.abs() <= -c2 * gtd {
            br = vec![(t, f_new, g_new.clone(), gtd_new)];
            done = true;
            break;
        }
        if gtd_new >= 0.0 {
            br = vec![
                (t_prev, f_prev, g_prev.clone(), gtd_prev),
                (t, f_new, g_new.clone(), gtd_new),
            ];
            break;
        }
        let min_step = t + 0.01 * (t - t_prev);
        let max_step = t * 10.0;
        let tmp = t;
        t = cubic(
            t_prev,
            f_prev,
            gtd_prev,
            t,
            f_new,
            gtd_new,
            Some((min_step, max_step)),
        );
        t_prev = tmp;
        f_prev = f_new;
        g_prev = g_new.clone();
        gtd_prev = gtd_new;
        let (a, b) = eval(x, t, Some(d));
        f_new = a;
        g_new = b;
        evals += 1;
        gtd_new = dot(&g_new, d);
        ls_iter += 1;
    }
    if ls_iter == max_ls {
        // torch leaves the slopes of the bracket as they were (unused: the
        // zoom loop below does not run).
        br = vec![(0.0, f, g.to_vec(), f64::NAN), (t, f_new, g_new, f64::NAN)];
    }
    let mut insuf_progress = false;
    let last = br.len() - 1;
    let (mut lo, mut hi) = if br[0].1 <= br[last].1 {
        (0, 1)
    } else {
        (1, 0)
    };
    while !done && ls_iter < max_ls {
        if (br[1].0 - br[0].0).abs() * d_norm < tolerance_change {
            break;
        }
        t = cubic(br[0].0, br[0].1, br[0].3, br[1].0, br[1].1, br[1].3, None);
        let (bmax, bmin) = (br[0].0.max(br[1].0), br[0].0.min(br[1].0));
        let eps = 0.1 * (bmax - bmin);
        if (bmax - t).min(t - bmin) < eps {
            if insuf_progress || t >= bmax || t <= bmin {
                t = if (t - bmax).abs() < (t - bmin).abs() {
                    bmax - eps
                } else {
                    bmin + eps
                };
                insuf_progress = false;
            } else {
                insuf_progress = true;
            }
        } else {
            insuf_progress = false;
        }
        let (fnew, gnew) = eval(x, t, Some(d));
        evals += 1;
        let gtdn = dot(&gnew, d);
        ls_iter += 1;
        if fnew > f + c1 * t * gtd || fnew >= br[lo].1 {
            br[hi] = (t, fnew, gnew, gtdn);
            (lo, hi) = if br[0].1 <= br[1].1 { (0, 1) } else { (1, 0) };
        } else {
            if gtdn.abs() <= -c2 * gtd {
                done = true;
            } else if gtdn * (br[hi].0 - br[lo].0) >= 0.0 {
                br[hi] = br[lo].clone();
            }
            br[lo] = (t, fnew, gnew, gtdn);
        }
    }
    let (t, f, g, _) = br.swap_remove(lo);
    (f, g, t, evals)
}
