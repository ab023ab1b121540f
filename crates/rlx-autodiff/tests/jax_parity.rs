//! The autodiff transforms against JAX reference fixtures.
//!
//! `tests/fixtures/*.json` are written by `tools/gen_ad_fixtures.py` (JAX in
//! float64; see its docstring for the format and the models). Each case
//! names a model, its leaves (inputs / params with their unbatched shapes), a
//! transform, the feeds of the transformed graph and its expected outputs.
//! The harness builds the model with the RLX graph builders (leaves named as
//! in the JSON), applies the transform (`grad_with_loss`, `jvp`, `hvp`,
//! `vmap`, `nth_order_grad`), compiles for the CPU, sets the params, runs on
//! the inputs and compares: `|got - want| <= atol + rtol |want|` with
//! `atol = atol_rel * max|want|` per output (float32: rtol 1e-5, atol_rel
//! 1e-6; float64: rtol 1e-10, atol_rel 1e-12).
//!
//! A transform that returns an `AutodiffError` (or panics) is a failure
//! carrying the error text. Each test gathers every failing case of its
//! family and reports them in one assertion message.
//!
//! `JAX_PARITY_FILTER=substring` runs only the cases whose name contains it.

use rlx_autodiff::{
    grad_with_loss, hvp, jvp, nth_order_grad, vmap, AutodiffError, HigherOrderOptions,
};
use rlx_driver::Device;
use rlx_ir::op::MaskKind;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::Session;
use serde_json::Value;
use std::cell::Cell;
use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Once;

type Res<T> = Result<T, String>;

/// How many mismatching elements one failure lists.
const SHOWN_MISMATCHES: usize = 4;

// ── fixture parsing ─────────────────────────────────────────────────────────

struct Leaf {
    name: String,
    param: bool,
    shape: Shape,
}

struct Case {
    name: String,
    model: String,
    dtype: DType,
    transform: Value,
    leaves: Vec<Leaf>,
    feeds: Vec<(String, HostTensor)>,
    outputs: Vec<(String, HostTensor)>,
    rtol: f64,
    atol_rel: f64,
}

fn load_cases(file: &str) -> Vec<Case> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let root: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not valid JSON: {e}", path.display()));
    root["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("{} has no \"cases\" array", path.display()))
        .iter()
        .enumerate()
        .map(|(i, c)| parse_case(c).unwrap_or_else(|e| panic!("{file}: case #{i}: {e}")))
        .collect()
}

fn str_of<'a>(v: &'a Value, key: &str) -> Res<&'a str> {
    v[key]
        .as_str()
        .ok_or_else(|| format!("missing string {key:?}"))
}

fn dtype_of(v: &Value) -> Res<DType> {
    let name = str_of(v, "dtype")?;
    DType::parse(name).ok_or_else(|| format!("unknown dtype {name}"))
}

fn dims_of(v: &Value) -> Res<Vec<usize>> {
    v["shape"]
        .as_array()
        .ok_or("missing shape")?
        .iter()
        .map(|d| {
            d.as_u64()
                .map(|d| d as usize)
                .ok_or_else(|| format!("bad dim {d}"))
        })
        .collect()
}

/// A JSON number, or one of the strings `"nan"`, `"inf"`, `"-inf"`.
fn json_f64(v: &Value) -> Res<f64> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| format!("bad number {n}")),
        Value::String(s) => match s.as_str() {
            "nan" => Ok(f64::NAN),
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            _ => Err(format!("bad float string {s:?}")),
        },
        _ => Err(format!("not a float: {v}")),
    }
}

fn parse_tensor(t: &Value) -> Res<(String, HostTensor)> {
    let name = str_of(t, "name")?.to_string();
    let dims = dims_of(t)?;
    let data = t["data"]
        .as_array()
        .ok_or("missing data")?
        .iter()
        .map(json_f64)
        .collect::<Res<Vec<f64>>>()?;
    let tensor = match dtype_of(t)? {
        DType::F32 => HostTensor::from_vec(data.into_iter().map(|v| v as f32).collect(), &dims),
        DType::F64 => HostTensor::from_vec(data, &dims),
        d => return Err(format!("{name}: unsupported fixture dtype {d}")),
    };
    Ok((name.clone(), tensor.map_err(|e| format!("{name}: {e}"))?))
}

fn parse_case(c: &Value) -> Res<Case> {
    let name = str_of(c, "name")?.to_string();
    let tensors = |key: &str| -> Res<Vec<(String, HostTensor)>> {
        c[key]
            .as_array()
            .ok_or_else(|| format!("{name}: missing {key}"))?
            .iter()
            .enumerate()
            .map(|(i, t)| parse_tensor(t).map_err(|e| format!("{name}: {key}[{i}]: {e}")))
            .collect()
    };
    let leaves = c["leaves"]
        .as_array()
        .ok_or_else(|| format!("{name}: missing leaves"))?
        .iter()
        .map(|l| {
            let role = str_of(l, "role")?;
            if role != "input" && role != "param" {
                return Err(format!("unknown leaf role {role:?}"));
            }
            Ok(Leaf {
                name: str_of(l, "name")?.to_string(),
                param: role == "param",
                shape: Shape::new(&dims_of(l)?, dtype_of(l)?),
            })
        })
        .collect::<Res<Vec<Leaf>>>()
        .map_err(|e| format!("{name}: leaves: {e}"))?;
    Ok(Case {
        model: str_of(c, "model")?.to_string(),
        dtype: dtype_of(c)?,
        transform: c["transform"].clone(),
        leaves,
        feeds: tensors("feeds")?,
        outputs: tensors("outputs")?,
        rtol: c["rtol"].as_f64().ok_or("missing rtol")?,
        atol_rel: c["atol_rel"].as_f64().ok_or("missing atol_rel")?,
        name,
    })
}

// ── the models ──────────────────────────────────────────────────────────────

/// The leaves of a model by name.
struct Leaves(HashMap<String, NodeId>);

impl Leaves {
    fn get(&self, name: &str) -> Res<NodeId> {
        self.0
            .get(name)
            .copied()
            .ok_or_else(|| format!("the model needs a leaf named {name:?}"))
    }
}

fn all_axes(g: &Graph, x: NodeId) -> Vec<i64> {
    (0..g.shape(x).rank() as i64).collect()
}

/// Sum over every axis (the identity on a scalar).
fn sum_all(g: &mut Graph, x: NodeId) -> NodeId {
    if g.shape(x).rank() == 0 {
        return x;
    }
    let axes = all_axes(g, x);
    g.sum(x, &axes, false)
}

/// `tanh(x @ w1 + b1) @ w2 + b2`.
fn mlp_logits(g: &mut Graph, l: &Leaves) -> Res<NodeId> {
    let (x, w1, b1) = (l.get("x")?, l.get("w1")?, l.get("b1")?);
    let (w2, b2) = (l.get("w2")?, l.get("b2")?);
    let h = g.mm(x, w1);
    let h = g.add(h, b1);
    let h = g.tanh(h);
    let z = g.mm(h, w2);
    Ok(g.add(z, b2))
}

/// Mean over the batch of `-sum(y * log_softmax(z), -1)` (one example: no mean).
fn mlp_loss(g: &mut Graph, l: &Leaves) -> Res<NodeId> {
    let z = mlp_logits(g, l)?;
    let y = l.get("y")?;
    let ls = g.log_softmax(z, -1);
    let yl = g.mul(y, ls);
    let s = g.sum(yl, &[-1], false);
    let per = g.neg(s);
    Ok(if g.shape(per).rank() > 0 {
        g.mean(per, &[0], false)
    } else {
        per
    })
}

/// `x + causal_attention(ln(x) @ wq, ln(x) @ wk, ln(x) @ wv)`.
fn attn_block(g: &mut Graph, l: &Leaves) -> Res<NodeId> {
    let (x, gamma, beta) = (l.get("x")?, l.get("gamma")?, l.get("beta")?);
    let (wq, wk, wv) = (l.get("wq")?, l.get("wk")?, l.get("wv")?);
    let h = g.ln(x, gamma, beta, 1e-5);
    let q = g.mm(h, wq);
    let k = g.mm(h, wk);
    let v = g.mm(h, wv);
    let d = *g
        .shape(q)
        .static_dims()
        .ok_or("symbolic q")?
        .last()
        .unwrap() as f64;
    let a = g.attention_with(q, k, v, MaskKind::Causal, None, Some(1.0 / d.sqrt()), None);
    Ok(g.add(x, a))
}

/// `sum(out * out) / out.size`.
fn attn_loss(g: &mut Graph, l: &Leaves) -> Res<NodeId> {
    let out = attn_block(g, l)?;
    let n = g.shape(out).numel().ok_or("symbolic out")? as f64;
    let sq = g.mul(out, out);
    let s = sum_all(g, sq);
    Ok(g.div(s, n))
}

/// conv -> relu -> pool -> linear; `mean(logsumexp(z) - sum(z * y))`.
fn conv_loss(g: &mut Graph, l: &Leaves, max_pool: bool) -> Res<NodeId> {
    let (x, y) = (l.get("x")?, l.get("y")?);
    let (cw, cb) = (l.get("conv_w")?, l.get("conv_b")?);
    let (lw, lb) = (l.get("lin_w")?, l.get("lin_b")?);
    let c = GraphExt::conv2d(g, x, cw, Some(cb), [1, 1], [1, 1]);
    let r = g.relu(c);
    let p = if max_pool {
        g.max_pool2d(r, [2, 2], [2, 2], [0, 0])
    } else {
        g.avg_pool2d(r, [2, 2], [2, 2], [0, 0])
    };
    let n = g.shape(x).static_dims().ok_or("symbolic x")?[0] as i64;
    let f = g.reshape_(p, &[n, -1]);
    let z = g.mm(f, lw);
    let z = g.add(z, lb);
    // logsumexp(z, -1) = m + log(sum(exp(z - m), -1)), m = max(z, -1)
    let m = g.reduce_max(z, &[-1], true);
    let zm = g.sub(z, m);
    let e = g.exp(zm);
    let s = g.sum(e, &[-1], false);
    let ls = g.log(s);
    let m1 = g.reshape_(m, &[n]);
    let lse = g.add(ls, m1);
    let zy = g.mul(z, y);
    let picked = g.sum(zy, &[-1], false);
    let per = g.sub(lse, picked);
    Ok(g.mean(per, &[0], false))
}

/// `sum(sin(a * b + c) * exp(-(a - c) ** 2) / (1 + b * b))`.
fn bcast(g: &mut Graph, l: &Leaves) -> Res<NodeId> {
    let (a, b, c) = (l.get("a")?, l.get("b")?, l.get("c")?);
    let ab = g.mul(a, b);
    let t = g.add(ab, c);
    let s = g.sin(t);
    let d = g.sub(a, c);
    let d2 = g.pow(d, 2.0);
    let nd2 = g.neg(d2);
    let e = g.exp(nd2);
    let bb = g.mul(b, b);
    let den = g.add(1.0, bb);
    let num = g.mul(s, e);
    let q = g.div(num, den);
    Ok(sum_all(g, q))
}

/// `sum(sin(x) * exp(x) * x ** 3)`.
fn sinexp(g: &mut Graph, l: &Leaves) -> Res<NodeId> {
    let x = l.get("x")?;
    let s = g.sin(x);
    let e = g.exp(x);
    let se = g.mul(s, e);
    let x3 = g.pow(x, 3.0);
    let f = g.mul(se, x3);
    Ok(sum_all(g, f))
}

/// `sum(tanh(x))`.
fn tanh_sum(g: &mut Graph, l: &Leaves) -> Res<NodeId> {
    let x = l.get("x")?;
    let t = g.tanh(x);
    Ok(sum_all(g, t))
}

/// The case's model as a graph with one output.
fn build_model(case: &Case) -> Res<Graph> {
    let mut g = Graph::new(case.name.as_str());
    let mut map = HashMap::new();
    for leaf in &case.leaves {
        if leaf.shape.dtype() != case.dtype {
            return Err(format!(
                "leaf {} is {}, the case {}",
                leaf.name, leaf.shape, case.dtype
            ));
        }
        let id = if leaf.param {
            g.try_param(&leaf.name, leaf.shape.clone())
        } else {
            g.try_input(&leaf.name, leaf.shape.clone())
        }
        .map_err(|e| format!("leaf {}: {e}", leaf.name))?;
        map.insert(leaf.name.clone(), id);
    }
    let l = Leaves(map);
    let out = match case.model.as_str() {
        "mlp_loss" => mlp_loss(&mut g, &l)?,
        "mlp_logits" => mlp_logits(&mut g, &l)?,
        "attn_block" => attn_block(&mut g, &l)?,
        "attn_loss" => attn_loss(&mut g, &l)?,
        "conv_avg" => conv_loss(&mut g, &l, false)?,
        "conv_max" => conv_loss(&mut g, &l, true)?,
        "bcast" => bcast(&mut g, &l)?,
        "sinexp" => sinexp(&mut g, &l)?,
        "tanh" => tanh_sum(&mut g, &l)?,
        m => return Err(format!("unknown model {m:?}")),
    };
    g.set_outputs(vec![out]);
    Ok(g)
}

// ── the transforms ──────────────────────────────────────────────────────────

fn names_of(t: &Value, key: &str) -> Res<Vec<String>> {
    t[key]
        .as_array()
        .ok_or_else(|| format!("transform: missing list {key:?}"))?
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("transform: {key} holds a non-string {v}"))
        })
        .collect()
}

fn usize_of(t: &Value, key: &str) -> Res<usize> {
    t[key]
        .as_u64()
        .map(|v| v as usize)
        .ok_or_else(|| format!("transform: missing integer {key:?}"))
}

fn leaf_ids(g: &Graph, names: &[String]) -> Res<Vec<NodeId>> {
    names
        .iter()
        .map(|n| {
            g.find_input(n)
                .or_else(|| g.find_param(n))
                .ok_or_else(|| format!("no leaf named {n:?} in the model"))
        })
        .collect()
}

fn ad(what: &str, r: Result<Graph, AutodiffError>) -> Res<Graph> {
    r.map_err(|e| format!("{what} returned AutodiffError: {e} [{e:?}]"))
}

fn apply_transform(case: &Case, g: &Graph) -> Res<Graph> {
    let t = &case.transform;
    let kind = str_of(t, "kind").map_err(|e| format!("transform: {e}"))?;
    match kind {
        "grad" => {
            let wrt = leaf_ids(g, &names_of(t, "wrt")?)?;
            ad("grad_with_loss", grad_with_loss(g, &wrt))
        }
        "jvp" => {
            let tf = leaf_ids(g, &names_of(t, "tangent_for")?)?;
            ad("jvp", jvp(g, &tf))
        }
        "hvp" => {
            let wrt = leaf_ids(g, &names_of(t, "wrt")?)?;
            ad("hvp", hvp(g, &wrt))
        }
        "vmap" | "vmap_grad" => {
            let batched = names_of(t, "batched")?;
            let batched: Vec<&str> = batched.iter().map(String::as_str).collect();
            let size = usize_of(t, "batch_size")?;
            if kind == "vmap" {
                ad("vmap", vmap(g, &batched, size))
            } else {
                let wrt = leaf_ids(g, &names_of(t, "wrt")?)?;
                let gg = ad("grad_with_loss", grad_with_loss(g, &wrt))?;
                ad("vmap (of grad_with_loss)", vmap(&gg, &batched, size))
            }
        }
        "nth_order_grad" => {
            let wrt = str_of(t, "wrt").map_err(|e| format!("transform: {e}"))?;
            let order = usize_of(t, "order")?;
            ad(
                &format!("nth_order_grad(order {order})"),
                nth_order_grad(g, wrt, order, &HigherOrderOptions::default()),
            )
        }
        k => Err(format!("unknown transform kind {k:?}")),
    }
}

// ── running and comparing ───────────────────────────────────────────────────

thread_local! {
    static QUIET_PANICS: Cell<bool> = const { Cell::new(false) };
}

/// Silences the panic message of panics caught by [`guarded`] (on this
/// thread); other panics, the final assertion included, print as usual.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !QUIET_PANICS.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// Runs `f`, turning a panic into an error.
fn guarded<T>(f: impl FnOnce() -> Res<T>) -> Res<T> {
    QUIET_PANICS.with(|q| q.set(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    QUIET_PANICS.with(|q| q.set(false));
    result.unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "non-string panic payload".into());
        Err(format!("panicked: {msg}"))
    })
}

fn run_case(case: &Case) -> Res<()> {
    let model = guarded(|| build_model(case)).map_err(|e| format!("building the model: {e}"))?;
    let transformed = guarded(|| apply_transform(case, &model))?;
    let mut compiled = guarded(|| {
        Session::new(Device::Cpu)
            .try_compile(transformed)
            .map_err(|e| format!("compile: {e}"))
    })?;
    let params = compiled.param_names();
    let inputs = compiled.input_names();
    let fed: Vec<&str> = case.feeds.iter().map(|(n, _)| n.as_str()).collect();
    let missing: Vec<&String> = inputs
        .iter()
        .chain(&params)
        .filter(|n| !fed.contains(&n.as_str()))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the transformed graph has inputs / params {missing:?} with no feed (fixture feeds {fed:?}; graph inputs {inputs:?}, params {params:?})"
        ));
    }
    let mut run_inputs = Vec::new();
    for (name, t) in &case.feeds {
        if params.contains(name) {
            compiled
                .set_param_typed(name, t)
                .map_err(|e| format!("setting param {name}: {e}"))?;
        } else if inputs.contains(name) {
            run_inputs.push((name.as_str(), t));
        }
    }
    let outs = guarded(|| {
        compiled
            .try_run_typed(&run_inputs)
            .map_err(|e| format!("run: {e}"))
    })?;
    if outs.len() != case.outputs.len() {
        let got: Vec<String> = outs.iter().map(|t| format!("{:?}", t.dims())).collect();
        let want: Vec<String> = case
            .outputs
            .iter()
            .map(|(n, t)| format!("{n} {:?}", t.dims()))
            .collect();
        return Err(format!(
            "{} outputs {got:?}, expected {} [{}]",
            outs.len(),
            case.outputs.len(),
            want.join(", ")
        ));
    }
    let problems: Vec<String> = outs
        .iter()
        .zip(&case.outputs)
        .enumerate()
        .filter_map(|(i, (got, (name, want)))| {
            compare(got, want, case.rtol, case.atol_rel)
                .err()
                .map(|e| format!("output {i} ({name}): {e}"))
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n      "))
    }
}

/// Row-major multi-index of flat element `i`.
fn index_text(dims: &[usize], i: usize) -> String {
    let mut rest = i;
    let mut idx = vec![0; dims.len()];
    for (k, &d) in dims.iter().enumerate().rev() {
        if d > 0 {
            idx[k] = rest % d;
            rest /= d;
        }
    }
    format!("{idx:?}")
}

fn compare(got: &HostTensor, want: &HostTensor, rtol: f64, atol_rel: f64) -> Res<()> {
    if got.dtype() != want.dtype() {
        return Err(format!("dtype {} (expected {})", got.dtype(), want.dtype()));
    }
    if got.dims() != want.dims() {
        return Err(format!(
            "dims {:?} (expected {:?})",
            got.dims(),
            want.dims()
        ));
    }
    let (g, w) = (got.to_f64_lossy(), want.to_f64_lossy());
    let scale = w.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let atol = atol_rel * scale;
    let bad: Vec<(usize, f64, f64)> = g
        .iter()
        .zip(&w)
        .enumerate()
        .filter(|(_, (&gv, &wv))| gv.is_nan() || (gv - wv).abs() > atol + rtol * wv.abs())
        .map(|(i, (&gv, &wv))| (i, wv, gv))
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    let worst = bad
        .iter()
        .map(|&(_, wv, gv)| (gv - wv).abs() / (atol + rtol * wv.abs()))
        .fold(
            0.0f64,
            |m, r| if r.is_nan() { f64::INFINITY } else { m.max(r) },
        );
    let shown: Vec<String> = bad
        .iter()
        .take(SHOWN_MISMATCHES)
        .map(|&(i, wv, gv)| {
            format!(
                "{}: expected {wv:e}, got {gv:e}",
                index_text(want.dims(), i)
            )
        })
        .collect();
    Err(format!(
        "{} of {} values differ (rtol {rtol:e}, atol {atol:e}; worst {worst:.3e}x the tolerance): {}",
        bad.len(),
        w.len(),
        shown.join("; ")
    ))
}

/// Runs the cases of `file` whose name starts with one of `prefixes` (all
/// when empty) and asserts that none failed.
fn check(file: &str, prefixes: &[&str]) {
    install_panic_hook();
    let filter = std::env::var("JAX_PARITY_FILTER").ok();
    let cases: Vec<Case> = load_cases(file)
        .into_iter()
        .filter(|c| prefixes.is_empty() || prefixes.iter().any(|p| c.name.starts_with(p)))
        .collect();
    assert!(!cases.is_empty(), "{file}: no cases match {prefixes:?}");
    let mut failures = Vec::new();
    let mut runs = 0;
    for case in &cases {
        if filter.as_deref().is_some_and(|f| !case.name.contains(f)) {
            continue;
        }
        runs += 1;
        if let Err(e) = run_case(case) {
            let kind = case.transform["kind"].as_str().unwrap_or("?");
            failures.push(format!("  {} ({kind} of {}): {e}", case.name, case.model));
        }
    }
    println!(
        "{file} {prefixes:?}: {runs} cases run, {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {runs} cases of {file} {prefixes:?} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// 1. MLP with softmax cross-entropy: grads wrt w1, b1, w2, b2, x.
#[test]
fn grad_mlp() {
    check("grad.json", &["mlp_"]);
}

/// 2. Layer norm + causal attention block: grads wrt gamma, beta, wq, wk, wv, x.
#[test]
fn grad_attention() {
    check("grad.json", &["attn_"]);
}

/// 3. Conv -> relu -> avg / max pool -> linear, logsumexp loss.
#[test]
fn grad_conv() {
    check("grad.json", &["conv_"]);
}

/// 4. Broadcasting-heavy elementwise expression: grads wrt a, b, c.
#[test]
fn grad_broadcast() {
    check("grad.json", &["bcast_"]);
}

/// 5. `nth_order_grad` orders 1..4 of sin(x) exp(x) x^3 and tanh(x), scalar and elementwise.
#[test]
fn higher_order() {
    check("higher_order.json", &[]);
}

/// 6. jvp of the MLP logits (tangents for w1, x) and of the attention block (x).
#[test]
fn jvp_forward_mode() {
    check("jvp.json", &[]);
}

/// 7. hvp of the MLP loss wrt (w2, b2) and of the broadcasting expression wrt a.
#[test]
fn hvp_second_order() {
    check("hvp.json", &[]);
}

/// 8. vmap: per-example MLP gradients (vmap of grad), the attention block and the expression.
#[test]
fn vmap_batching() {
    check("vmap.json", &[]);
}
