//! Control flow (`If`, `While`, `Scan`, `CustomFn`) under grad / jvp / hvp / vmap,
//! against JAX (`tests/fixtures/control.json`, written by
//! `tools/gen_control_fixtures.py`, whose docstring defines each model).
//! Float32 results are compared with the float64 references at
//! `|got - want| <= 1e-4 (1 + |want|)` (`1e-5` for the checkpoint-segment cases).

use rlx_autodiff::{grad_with_loss, hvp, jvp, vmap, AutodiffError};
use rlx_driver::Device;
use rlx_ir::ops::control::{
    try_custom_fn, try_if, try_tuple_op, try_while, CustomFnSpec, ScanSpec,
};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Op, Shape};
use rlx_runtime::Session;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

fn f32s(d: &[usize]) -> Shape {
    Shape::new(d, DType::F32)
}

/// The RNN step over carry `(h, w, u)` and `x_t`: `(tanh(x w + h u), w, u, sum(h'))`.
fn rnn_step() -> Graph {
    let mut b = Graph::new("rnn_step");
    let h = b.input("h", f32s(&[4]));
    let w = b.input("w", f32s(&[3, 4]));
    let u = b.input("u", f32s(&[4, 4]));
    let x = b.input("x_t", f32s(&[3]));
    let xw = b.mm(x, w);
    let hu = b.mm(h, u);
    let s = b.add(xw, hu);
    let h2 = b.tanh(s);
    let y = b.sum(h2, &[0], false);
    b.set_outputs(vec![h2, w, u, y]);
    b
}

/// The RNN scanned over `xs [length, 3]`; outputs `[sum(ys) + sum(hT^2), hT, ys]`.
fn rnn(length: usize, reverse: bool, checkpoint: Option<usize>) -> Graph {
    let mut g = Graph::new("rnn");
    let h0 = g.input("h0", f32s(&[4]));
    let w = g.input("w", f32s(&[3, 4]));
    let u = g.input("u", f32s(&[4, 4]));
    let xs = g.input("xs", f32s(&[length, 3]));
    let spec = ScanSpec {
        body: Arc::new(rnn_step()),
        num_carry: 3,
        length,
        reverse,
        checkpoint,
    };
    let r = try_tuple_op(&mut g, Op::Scan(spec), &[h0, w, u, xs]).unwrap();
    let (ht, ys) = (r[0], r[3]);
    let sy = g.sum(ys, &[0], false);
    let hh = g.mul(ht, ht);
    let sh = g.sum(hh, &[0], false);
    let loss = g.add(sy, sh);
    g.set_outputs(vec![loss, ht, ys]);
    g
}

fn two_input(name: &str, f: impl FnOnce(&mut Graph, NodeId, NodeId) -> NodeId) -> Graph {
    let mut g = Graph::new(name);
    let x = g.input("x", f32s(&[3]));
    let y = g.input("y", f32s(&[3]));
    let r = f(&mut g, x, y);
    g.set_outputs(vec![r]);
    g
}

/// Outputs `[sum(r * r), r]` with `r = if p { sin(x) y } else { x x - y }`.
fn cond() -> Graph {
    let then_b = two_input("then", |g, x, y| {
        let s = g.sin(x);
        g.mul(s, y)
    });
    let else_b = two_input("else", |g, x, y| {
        let xx = g.mul(x, x);
        g.sub(xx, y)
    });
    let mut g = Graph::new("cond");
    let p = g.input("p", Shape::scalar(DType::Bool));
    let x = g.input("x", f32s(&[3]));
    let y = g.input("y", f32s(&[3]));
    let r = try_if(&mut g, p, then_b, else_b, &[x, y]).unwrap()[0];
    let rr = g.mul(r, r);
    let l = g.sum(rr, &[0], false);
    g.set_outputs(vec![l, r]);
    g
}

/// Outputs `[sum(xf), xf, i]` of the loop in the generator's docstring.
fn while_model() -> Graph {
    let i32s = Shape::scalar(DType::I32);
    let mut c = Graph::new("cond");
    let x = c.input("x", f32s(&[3]));
    let i = c.input("i", i32s.clone());
    let lt = c.lt(i, c.constant(20.0, DType::I32));
    let xx = c.mul(x, x);
    let s = c.sum(xx, &[0], false);
    let small = c.lt(s, c.constant(4.0, DType::F32));
    let both = c.logical_and(lt, small);
    c.set_outputs(vec![both]);
    let mut b = Graph::new("body");
    let x = b.input("x", f32s(&[3]));
    let i = b.input("i", i32s.clone());
    let x13 = b.mul(x, b.constant(1.3, DType::F32));
    let sx = b.sin(x);
    let s01 = b.mul(sx, b.constant(0.1, DType::F32));
    let x2 = b.add(x13, s01);
    let i2 = b.add(i, b.constant(1.0, DType::I32));
    b.set_outputs(vec![x2, i2]);
    let mut g = Graph::new("while");
    let x = g.input("x", f32s(&[3]));
    let i0 = g.scalar(0.0, DType::I32);
    let r = try_while(&mut g, c, b, &[x, i0], 1000).unwrap();
    let s = g.sum(r[0], &[0], false);
    g.set_outputs(vec![s, r[0], r[1]]);
    g
}

fn unary(name: &str, n: usize, f: impl FnOnce(&mut Graph, NodeId) -> NodeId) -> Graph {
    let mut g = Graph::new(name);
    let x = g.input("x", f32s(&[n]));
    let r = f(&mut g, x);
    g.set_outputs(vec![r]);
    g
}

/// `sum(x^3)` with a user vjp `clip(ct * 3 x^2, -1, 1)`.
fn clip_vjp() -> Graph {
    let body = unary("cube", 5, |g, x| {
        let xx = g.mul(x, x);
        g.mul(xx, x)
    });
    let mut v = Graph::new("cube_vjp");
    let x = v.input("x", f32s(&[5]));
    let ct = v.input("ct", f32s(&[5]));
    let xx = v.mul(x, x);
    let d = v.mul(xx, v.constant(3.0, DType::F32));
    let gr = v.mul(ct, d);
    let lo = v.maximum(gr, v.constant(-1.0, DType::F32));
    let c = v.minimum(lo, v.constant(1.0, DType::F32));
    v.set_outputs(vec![c]);
    let spec = CustomFnSpec {
        name: "cube".into(),
        body: Arc::new(body),
        vjp: Some(Arc::new(v)),
        jvp: None,
    };
    let mut g = Graph::new("clip_vjp");
    let x = g.input("x", f32s(&[5]));
    let y = try_custom_fn(&mut g, spec, &[x]).unwrap()[0];
    let l = g.sum(y, &[0], false);
    g.set_outputs(vec![l]);
    g
}

/// `sin(x)` with a user jvp `2 cos(x) t`.
fn scaled_jvp() -> Graph {
    let body = unary("sin", 4, |g, x| g.sin(x));
    let mut j = Graph::new("sin_jvp");
    let x = j.input("x", f32s(&[4]));
    let t = j.input("t", f32s(&[4]));
    let c = j.cos(x);
    let c2 = j.mul(c, j.constant(2.0, DType::F32));
    let r = j.mul(c2, t);
    j.set_outputs(vec![r]);
    let spec = CustomFnSpec {
        name: "ssin".into(),
        body: Arc::new(body),
        vjp: None,
        jvp: Some(Arc::new(j)),
    };
    let mut g = Graph::new("scaled_jvp");
    let x = g.input("x", f32s(&[4]));
    let y = try_custom_fn(&mut g, spec, &[x]).unwrap()[0];
    g.set_outputs(vec![y]);
    g
}

fn model(name: &str, opts: &Value) -> Graph {
    match name {
        "rnn" => rnn(
            opts["length"].as_u64().map_or(6, |n| n as usize),
            opts["reverse"].as_bool().unwrap_or(false),
            opts["checkpoint"].as_u64().map(|k| k as usize),
        ),
        "cond" => cond(),
        "while" => while_model(),
        "clip_vjp" => clip_vjp(),
        "scaled_jvp" => scaled_jvp(),
        m => panic!("unknown model {m}"),
    }
}

fn transform(g: &Graph, case: &Value) -> Result<Graph, AutodiffError> {
    let floats = |g: &Graph| -> Vec<NodeId> {
        g.inputs()
            .iter()
            .filter(|(_, _, s)| s.dtype().is_float())
            .map(|(id, _, _)| *id)
            .collect()
    };
    match case["transform"].as_str().unwrap() {
        "grad" => grad_with_loss(g, &floats(g)),
        "jvp" => jvp(g, &floats(g)),
        "hvp" => hvp(g, &floats(g)),
        "vmap" => {
            let names: Vec<&str> = case["options"]["batched"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            vmap(
                g,
                &names,
                case["options"]["batch"].as_u64().unwrap() as usize,
            )
        }
        t => panic!("unknown transform {t}"),
    }
}

fn dims_of(v: &Value) -> Vec<usize> {
    v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect()
}

fn tensor(v: &Value) -> HostTensor {
    let dims = dims_of(v);
    let data = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_f64().unwrap());
    match v["dtype"].as_str().unwrap() {
        "bool" => HostTensor::from_vec(data.map(|d| d != 0.0).collect::<Vec<bool>>(), &dims),
        _ => HostTensor::from_vec(data.map(|d| d as f32).collect::<Vec<f32>>(), &dims),
    }
    .unwrap()
}

/// Runs `case`; outputs must be within `tol * (1 + |want|)` of JAX.
fn run_case(case: &Value, tol: f64) -> Result<(), String> {
    let name = case["name"].as_str().unwrap();
    let g = model(case["model"].as_str().unwrap(), &case["options"]);
    let t = transform(&g, case).map_err(|e| format!("{name}: transform: {e}"))?;
    let mut c = Session::new(Device::Cpu)
        .try_compile(t)
        .map_err(|e| format!("{name}: compile: {e}"))?;
    let feeds: Vec<(String, HostTensor)> = case["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["name"].as_str().unwrap().to_string(), tensor(i)))
        .collect();
    let refs: Vec<(&str, &HostTensor)> = feeds.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let outs = c
        .try_run_typed(&refs)
        .map_err(|e| format!("{name}: run: {e}"))?;
    for o in case["outputs"].as_array().unwrap() {
        let k = o["index"].as_u64().unwrap() as usize;
        let got = outs
            .get(k)
            .ok_or_else(|| format!("{name}: no output {k} (has {})", outs.len()))?;
        let want: Vec<f64> = o["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_f64().unwrap())
            .collect();
        let dims = dims_of(o);
        if got.dims() != dims.as_slice() {
            return Err(format!(
                "{name}: output {k} dims {:?}, want {dims:?}",
                got.dims()
            ));
        }
        for (i, (a, b)) in got.to_f64_lossy().iter().zip(&want).enumerate() {
            if (a - b).abs() > tol * (1.0 + b.abs()) {
                return Err(format!("{name}: output {k}[{i}] = {a}, JAX {b}"));
            }
        }
    }
    Ok(())
}

fn cases() -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/control.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["cases"].as_array().unwrap().clone()
}

fn check(prefix: &str) {
    check_within(prefix, 1e-4);
}

fn check_within(prefix: &str, tol: f64) {
    let cs: Vec<Value> = cases()
        .into_iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with(prefix))
        .collect();
    assert!(!cs.is_empty(), "no {prefix} cases");
    let errors: Vec<String> = cs.iter().filter_map(|c| run_case(c, tol).err()).collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn scan_rnn_grad_jvp_hvp_vmap_match_jax() {
    check("rnn_");
}

/// Checkpoint segments `k` that do not divide the length (7 / 3, 10 / 4:
/// a short last segment), equal it (5 / 5) or exceed it (5 / 6), forward
/// and reverse scans, against JAX's gradient of the plain scan.
#[test]
fn scan_checkpoint_segments_of_any_length_match_jax() {
    check_within("rnn_ckpt_", 1e-5);
}

/// Reverse mode of a checkpointed scan stores one carry per segment,
/// `ceil(length / k)`, including the short last one: the backward scans
/// read the stacked `w [3, 4]` carries, whose leading dims add up to that
/// (a fallback to storing every step would read `length` of them).
#[test]
fn checkpointed_scans_store_one_carry_per_segment_even_a_short_one() {
    let stored = |length: usize, reverse: bool, ck: Option<usize>| -> Vec<usize> {
        let g = rnn(length, reverse, ck);
        let ids: Vec<NodeId> = g.inputs().iter().map(|(id, _, _)| *id).collect();
        let d = grad_with_loss(&g, &ids).unwrap();
        let mut lead = Vec::new();
        for n in d.nodes().iter().filter(|n| matches!(n.op, Op::Scan(_))) {
            for &i in &n.inputs {
                let s = d.shape(i);
                if s.rank() == 3 && s.dim(1) == Some(3) && s.dim(2) == Some(4) {
                    lead.extend(s.dim(0));
                }
            }
        }
        lead
    };
    for reverse in [false, true] {
        assert_eq!(stored(7, reverse, None), vec![7]);
        assert_eq!(stored(7, reverse, Some(7)), vec![7]);
        assert_eq!(stored(5, reverse, Some(6)), vec![5]);
        for (length, k) in [(7, 3), (10, 4), (10, 3), (7, 6), (6, 3), (7, 1)] {
            let got = stored(length, reverse, Some(k));
            assert_eq!(
                got.iter().sum::<usize>(),
                length.div_ceil(k),
                "length {length}, k {k}, reverse {reverse}: {got:?}"
            );
        }
    }
}

#[test]
fn if_grad_jvp_hvp_vmap_match_jax_on_both_branches() {
    check("cond_");
}

#[test]
fn while_jvp_and_vmap_match_jax() {
    check("while_");
}

#[test]
fn custom_fn_user_rules_are_used() {
    check("clip_vjp");
    check("scaled_jvp");
    // The clipped gradient is not the true one (3 x^2) on this data.
    let case = cases()
        .into_iter()
        .find(|c| c["name"] == "clip_vjp_grad")
        .unwrap();
    let x = tensor(&case["inputs"][0]).to_f64_lossy();
    let g = clip_vjp();
    let d = grad_with_loss(&g, &[g.find_input("x").unwrap()]).unwrap();
    let mut c = Session::new(Device::Cpu).try_compile(d).unwrap();
    let xt = tensor(&case["inputs"][0]);
    let got = c.try_run_typed(&[("x", &xt)]).unwrap()[1].to_f64_lossy();
    let clipped = x.iter().zip(&got).filter(|(x, g)| {
        let true_grad = 3.0 * *x * *x;
        true_grad > 1.0 && (**g - 1.0).abs() < 1e-6
    });
    assert!(clipped.count() > 0, "x {x:?} grad {got:?}");
}

#[test]
fn reverse_mode_through_while_is_a_clear_error() {
    let g = while_model();
    let x = g.find_input("x").unwrap();
    let e = grad_with_loss(&g, &[x]).unwrap_err();
    assert!(
        matches!(
            &e,
            AutodiffError::Unsupported {
                transform: "vjp",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("while"), "{e}");
}

#[test]
fn the_reverse_of_an_if_is_an_if_and_scans_store_or_checkpoint_carries() {
    let g = cond();
    let ids: Vec<NodeId> = ["x", "y"]
        .iter()
        .map(|n| g.find_input(n).unwrap())
        .collect();
    let d = grad_with_loss(&g, &ids).unwrap();
    let ifs = d
        .nodes()
        .iter()
        .filter(|n| matches!(n.op, Op::If(_)))
        .count();
    assert_eq!(ifs, 2, "the primal If and its reverse If");
    // Without checkpointing the primal scan stacks all 6 carries (so there
    // is one forward and one backward scan, no second forward pass); with
    // segments of 3 only the 2 segment-entry carries are stacked outside.
    let rnn_grad = |ck: Option<usize>| -> Graph {
        let g = rnn(6, false, ck);
        let ids: Vec<NodeId> = g.inputs().iter().map(|(id, _, _)| *id).collect();
        grad_with_loss(&g, &ids).unwrap()
    };
    let stacked = |ck: Option<usize>| -> Vec<usize> {
        rnn_grad(ck)
            .nodes()
            .iter()
            .filter_map(|n| match &n.op {
                Op::TupleGet { shape, .. } if shape.rank() == 3 => shape.dim(0),
                _ => None,
            })
            .collect()
    };
    assert!(stacked(None).contains(&6), "{:?}", stacked(None));
    let d = rnn_grad(None);
    let scans = d.nodes().iter().filter(|n| matches!(n.op, Op::Scan(_)));
    assert_eq!(scans.count(), 2);
    let seg = stacked(Some(3));
    assert!(seg.contains(&2) && !seg.contains(&6), "{seg:?}");
}

/// Transforms compose through control flow: per-example gradients (vmap of
/// grad) through a checkpointed scan equal the gradient run per example, and
/// a third derivative through an if matches its closed form.
#[test]
fn transforms_compose_through_control_flow() {
    let run = |g: Graph, feeds: &[(&str, HostTensor)]| -> Vec<Vec<f64>> {
        let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
        let refs: Vec<(&str, &HostTensor)> = feeds.iter().map(|(n, t)| (*n, t)).collect();
        c.try_run_typed(&refs)
            .unwrap()
            .iter()
            .map(|t| t.to_f64_lossy())
            .collect()
    };
    let vals = |n: usize, k: usize| -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 37 + k * 11) % 17) as f32 / 17.0 - 0.5)
            .collect()
    };
    // vmap(grad(rnn)) over (h0, xs) vs grad per example.
    let g = rnn(6, false, Some(3));
    let ids: Vec<NodeId> = g.inputs().iter().map(|(id, _, _)| *id).collect();
    let d = grad_with_loss(&g, &ids).unwrap();
    let b = 3;
    let vd = vmap(&d, &["h0", "xs"], b).unwrap();
    let (h0, xs, w, u) = (vals(b * 4, 1), vals(b * 18, 2), vals(12, 3), vals(16, 4));
    let tw = HostTensor::from_slice(&w, &[3, 4]).unwrap();
    let tu = HostTensor::from_slice(&u, &[4, 4]).unwrap();
    let batched = run(
        vd,
        &[
            ("h0", HostTensor::from_slice(&h0, &[b, 4]).unwrap()),
            ("xs", HostTensor::from_slice(&xs, &[b, 6, 3]).unwrap()),
            ("w", tw.clone()),
            ("u", tu.clone()),
        ],
    );
    for e in 0..b {
        let one = run(
            d.clone(),
            &[
                (
                    "h0",
                    HostTensor::from_slice(&h0[e * 4..(e + 1) * 4], &[4]).unwrap(),
                ),
                (
                    "xs",
                    HostTensor::from_slice(&xs[e * 18..(e + 1) * 18], &[6, 3]).unwrap(),
                ),
                ("w", tw.clone()),
                ("u", tu.clone()),
            ],
        );
        for (k, o) in one.iter().enumerate() {
            let n = o.len();
            let got = &batched[k][e * n..(e + 1) * n];
            for (a, want) in got.iter().zip(o) {
                assert!(
                    (a - want).abs() < 1e-5 * (1.0 + want.abs()),
                    "output {k} example {e}: {a} vs {want}"
                );
            }
        }
    }
    let mut g2 = cond();
    let l = g2.outputs()[0];
    g2.set_outputs(vec![l]);
    let t = rlx_autodiff::nth_order_grad(&g2, "x", 3, &Default::default()).unwrap();
    let xv = vals(3, 5);
    let yv = vals(3, 6);
    let out = run(
        t,
        &[
            ("p", HostTensor::scalar(true)),
            ("x", HostTensor::from_slice(&xv, &[3]).unwrap()),
            ("y", HostTensor::from_slice(&yv, &[3]).unwrap()),
        ],
    );
    // loss = sum((sin x y)^2) = sum(sin^2 x y^2): third derivative -4 sin(2x) y^2.
    for i in 0..3 {
        let (x, y) = (xv[i] as f64, yv[i] as f64);
        let want = -4.0 * (2.0 * x).sin() * y * y;
        assert!((out[0][i] - want).abs() < 1e-5, "{} vs {want}", out[0][i]);
    }
}

#[test]
fn vmap_of_custom_fn_keeps_the_user_rules() {
    // Per-example clipped gradients: vmap(grad(clip_vjp)) row by row equals
    // clip(3 x^2, -1, 1), and vmap(jvp(scaled_jvp)) equals 2 cos(x) t.
    let b = 2;
    let x: Vec<f32> = (0..b * 5).map(|i| i as f32 * 0.23 - 1.1).collect();
    let g = clip_vjp();
    let d = grad_with_loss(&g, &[g.find_input("x").unwrap()]).unwrap();
    let v = vmap(&d, &["x"], b).unwrap();
    let mut c = Session::new(Device::Cpu).try_compile(v).unwrap();
    let xt = HostTensor::from_slice(&x, &[b, 5]).unwrap();
    let out = c.try_run_typed(&[("x", &xt)]).unwrap();
    let got = out[1].to_f64_lossy();
    for (i, &xi) in x.iter().enumerate() {
        let want = (3.0 * xi as f64 * xi as f64).clamp(-1.0, 1.0);
        assert!((got[i] - want).abs() < 1e-6, "{i}: {} vs {want}", got[i]);
    }
    let g = scaled_jvp();
    let j = jvp(&g, &[g.find_input("x").unwrap()]).unwrap();
    let v = vmap(&j, &["x", "tangent_x"], b).unwrap();
    let mut c = Session::new(Device::Cpu).try_compile(v).unwrap();
    let x: Vec<f32> = (0..b * 4).map(|i| i as f32 * 0.3 - 1.0).collect();
    let t: Vec<f32> = (0..b * 4).map(|i| 1.0 - i as f32 * 0.2).collect();
    let (xt, tt) = (
        HostTensor::from_slice(&x, &[b, 4]).unwrap(),
        HostTensor::from_slice(&t, &[b, 4]).unwrap(),
    );
    let out = c.try_run_typed(&[("x", &xt), ("tangent_x", &tt)]).unwrap();
    let got = out[1].to_f64_lossy();
    for i in 0..b * 4 {
        let want = 2.0 * (x[i] as f64).cos() * t[i] as f64;
        assert!((got[i] - want).abs() < 1e-5, "{i}: {} vs {want}", got[i]);
    }
}
