//! Other spellings of attention and GELU reach the fused ops: the scale as
//! a `Div` by sqrt(d) or applied to q before the product, a causal mask as
//! a `Where` with `-inf` or a large negative fill (either branch), the
//! 4-d transpose / reshape shape of ONNX exports, and GELU written with
//! erf in any operand order. Each is checked for the fusion it reports and
//! against an attention / GELU computed independently in f64 on the host.

use rlx_compile::FusionKind;
use rlx_driver::Device;
use rlx_ir::op::UnaryOp;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::{CompileOptions, Session};

mod common;
use common::values;

const B: usize = 2;
const H: usize = 3;
const S: usize = 5;
const D: usize = 4;

/// softmax(q kᵀ * scale + bias) v per (batch, head) in f64; `keep` masks
/// with -inf. q, k, v are [B, H, S, D] row-major.
fn reference_attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    scale: f64,
    keep: impl Fn(usize, usize, usize) -> bool,
    bias: impl Fn(usize, usize, usize) -> f64,
) -> Vec<f64> {
    let mut out = vec![0.0; B * H * S * D];
    for bh in 0..B * H {
        let base = bh * S * D;
        for i in 0..S {
            let scores: Vec<f64> = (0..S)
                .map(|j| {
                    if !keep(bh / H, i, j) {
                        return f64::NEG_INFINITY;
                    }
                    let dot: f64 = (0..D)
                        .map(|d| q[base + i * D + d] as f64 * k[base + j * D + d] as f64)
                        .sum();
                    dot * scale + bias(bh / H, i, j)
                })
                .collect();
            let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
            let z: f64 = e.iter().sum();
            for d in 0..D {
                out[base + i * D + d] = (0..S).map(|j| e[j] / z * v[base + j * D + d] as f64).sum();
            }
        }
    }
    out
}

fn assert_close(got: &[f32], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

fn qkv_inputs(g: &mut Graph) -> (NodeId, NodeId, NodeId) {
    let s = Shape::new(&[B, H, S, D], DType::F32);
    (
        g.input("q", s.clone()),
        g.input("k", s.clone()),
        g.input("v", s),
    )
}

fn qkv_values() -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let n = B * H * S * D;
    (values(n, 1, 1.5), values(n, 2, 1.5), values(n, 3, 1.0))
}

/// The `[S, S]` lower-triangular keep mask as a bool constant.
fn causal(g: &mut Graph) -> NodeId {
    let keep: Vec<bool> = (0..S * S).map(|i| i % S <= i / S).collect();
    g.constant_tensor(&HostTensor::from_vec(keep, &[S, S]).unwrap())
}

/// Compiles `g` (with and without the algebraic passes, which may respell
/// the scale), checks it reports one attention fusion, and runs it on q / k / v.
fn run_attention(g: Graph) -> Vec<f32> {
    let raw = CompileOptions::default()
        .simplify(false)
        .cse(false)
        .fold_constants(false);
    let first = attention_once(g.clone(), &raw);
    let second = attention_once(g, &CompileOptions::default());
    assert_eq!(first.len(), second.len());
    first
}

fn attention_once(g: Graph, opts: &CompileOptions) -> Vec<f32> {
    let mut c = Session::new(Device::Cpu).compile_with(g, opts);
    let report = &c.lir().fusion;
    assert_eq!(report.of_kind(FusionKind::Attention).len(), 1, "{report}");
    assert!(
        !c.lir()
            .graph
            .nodes()
            .iter()
            .any(|n| matches!(n.op, rlx_ir::Op::Softmax { .. })),
        "{}",
        c.lir().graph
    );
    let (q, k, v) = qkv_values();
    c.run(&[("q", &q), ("k", &k), ("v", &v)]).remove(0)
}

fn finish(mut g: Graph, scores: NodeId, v: NodeId) -> Graph {
    let p = g.sm(scores, -1);
    let o = g.mm(p, v);
    g.set_outputs(vec![o]);
    g
}

#[test]
fn scale_as_a_division_by_sqrt_d() {
    let mut g = Graph::new("div_scale");
    let (q, k, v) = qkv_inputs(&mut g);
    let kt = g.transpose_(k, &[0, 1, 3, 2]);
    let s = g.mm(q, kt);
    let s = g.div(s, (D as f64).sqrt());
    let got = run_attention(finish(g, s, v));
    let (q, k, v) = qkv_values();
    let scale = 1.0 / (D as f64).sqrt();
    let want = reference_attention(&q, &k, &v, scale, |_, _, _| true, |_, _, _| 0.0);
    assert_close(&got, &want, 1e-5, "div scale");
}

#[test]
fn scale_applied_to_q_before_the_product() {
    let mut g = Graph::new("q_scale");
    let (q, k, v) = qkv_inputs(&mut g);
    let qs = g.mul(q, 0.3);
    let kt = g.transpose_(k, &[0, 1, 3, 2]);
    let s = g.mm(qs, kt);
    let got = run_attention(finish(g, s, v));
    let (q, k, v) = qkv_values();
    let want = reference_attention(&q, &k, &v, 0.3, |_, _, _| true, |_, _, _| 0.0);
    assert_close(&got, &want, 1e-5, "q scale");
}

#[test]
fn causal_mask_as_a_where_with_minus_infinity() {
    let mut g = Graph::new("where_causal");
    let (q, k, v) = qkv_inputs(&mut g);
    let kt = g.transpose_(k, &[0, 1, 3, 2]);
    let s = g.mm(q, kt);
    let s = g.mul(s, 0.5);
    let keep = causal(&mut g);
    let s = g.where_(keep, s, f64::NEG_INFINITY);
    let got = run_attention(finish(g, s, v));
    let (q, k, v) = qkv_values();
    let want = reference_attention(&q, &k, &v, 0.5, |_, i, j| j <= i, |_, _, _| 0.0);
    assert_close(&got, &want, 1e-5, "where -inf");
}

#[test]
fn causal_mask_as_a_where_with_a_large_negative_on_the_masked_branch() {
    // where(masked, -1e9, scores): the condition marks what is dropped.
    let mut g = Graph::new("where_masked");
    let (q, k, v) = qkv_inputs(&mut g);
    let kt = g.transpose_(k, &[0, 1, 3, 2]);
    let s = g.mm(q, kt);
    let s = g.div(s, 2.0);
    let keep = causal(&mut g);
    let masked = g.unary(UnaryOp::Not, keep);
    let s = g.where_(masked, -1e9, s);
    let got = run_attention(finish(g, s, v));
    let (q, k, v) = qkv_values();
    let want = reference_attention(&q, &k, &v, 0.5, |_, i, j| j <= i, |_, _, _| 0.0);
    assert_close(&got, &want, 1e-5, "where -1e9");
}

#[test]
fn the_onnx_export_shape_with_4d_transposes_reshapes_and_an_additive_mask() {
    // As torch.onnx exports a BERT self-attention: [B, S, H*D] projections
    // split into heads, k transposed to [B, H, D, S] in one go, Div by
    // sqrt(d), Add of an extended [B, 1, 1, S] mask, Softmax, MatMul, merge.
    let mut g = Graph::new("onnx_attention");
    let hidden = Shape::new(&[B, S, H * D], DType::F32);
    let (xq, xk, xv) = (
        g.input("q", hidden.clone()),
        g.input("k", hidden.clone()),
        g.input("v", hidden),
    );
    let mask = g.input("mask", Shape::new(&[B, 1, 1, S], DType::F32));
    let split = |g: &mut Graph, x: NodeId, perm: &[usize]| {
        let r = g.reshape_(x, &[B as i64, S as i64, H as i64, D as i64]);
        g.transpose_(r, perm)
    };
    let q = split(&mut g, xq, &[0, 2, 1, 3]);
    let kt = split(&mut g, xk, &[0, 2, 3, 1]);
    let v = split(&mut g, xv, &[0, 2, 1, 3]);
    let s = g.mm(q, kt);
    let s = g.div(s, (D as f64).sqrt());
    let s = g.add(s, mask);
    let p = g.sm(s, -1);
    let o = g.mm(p, v);
    let o = g.transpose_(o, &[0, 2, 1, 3]);
    let o = g.reshape_(o, &[B as i64, S as i64, (H * D) as i64]);
    g.set_outputs(vec![o]);
    let mut c = Session::new(Device::Cpu).compile(g);
    let report = &c.lir().fusion;
    assert_eq!(report.of_kind(FusionKind::Attention).len(), 1, "{report}");
    // The head transposes go too: the attention reads [B, S, H, D] in place.
    assert_eq!(
        report.of_kind(FusionKind::AttentionLayout).len(),
        1,
        "{report}"
    );
    assert_eq!(transposes(&c), 0, "{}", c.lir().graph);
    let n = B * S * H * D;
    let (a, b, cv) = (values(n, 11, 1.5), values(n, 12, 1.5), values(n, 13, 1.0));
    // The last key of batch 1 is padding.
    let mask_v: Vec<f32> = (0..B * S)
        .map(|i| if i == B * S - 1 { -10000.0 } else { 0.0 })
        .collect();
    let got = c.run(&[("q", &a), ("k", &b), ("v", &cv), ("mask", &mask_v)]);
    // The reference works on [B, H, S, D]: split the heads on the host.
    let heads = |x: &[f32]| -> Vec<f32> {
        let mut out = vec![0.0; n];
        for (from, to) in head_index_pairs() {
            out[to] = x[from];
        }
        out
    };
    let want_heads = reference_attention(
        &heads(&a),
        &heads(&b),
        &heads(&cv),
        1.0 / (D as f64).sqrt(),
        |_, _, _| true,
        |bi, _, j| mask_v[bi * S + j] as f64,
    );
    let mut want = vec![0.0; n];
    for (to, from) in head_index_pairs() {
        want[to] = want_heads[from];
    }
    assert_close(&got[0], &want, 1e-5, "onnx attention");
}

fn transposes(c: &rlx_runtime::CompiledGraph) -> usize {
    let g = &c.lir().graph;
    g.nodes()
        .iter()
        .filter(|n| matches!(n.op, rlx_ir::Op::Transpose { .. }))
        .count()
}

/// `[B, S, H, D]` values in `[B, H, S, D]` order.
fn heads_major(x: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0; x.len()];
    for (from, to) in head_index_pairs() {
        out[to] = x[from];
    }
    out
}

#[test]
fn head_transposes_are_read_in_place_when_shared_or_the_output_stays_heads_major() {
    // q / k / v [B, S, H, D] transposed to heads-major for a native
    // attention, as a graph-API model writes it; q's transpose is also a
    // graph output and the attention's output stays heads-major. The fused
    // op reads the three sources in place, q's transpose stays for its
    // other reader, and one transpose brings the output back.
    let mut g = Graph::new("seq_major");
    let sh = Shape::new(&[B, S, H, D], DType::F32);
    let (q, k, v) = (
        g.input("q", sh.clone()),
        g.input("k", sh.clone()),
        g.input("v", sh),
    );
    let split = |g: &mut Graph, x| g.transpose_(x, &[0, 2, 1, 3]);
    let (qt, kt, vt) = (split(&mut g, q), split(&mut g, k), split(&mut g, v));
    let o = g.attention_(qt, kt, vt, rlx_ir::op::MaskKind::Causal, None);
    g.set_outputs(vec![o, qt]);
    let mut c = Session::new(Device::Cpu).compile(g);
    let report = &c.lir().fusion;
    assert_eq!(
        report.of_kind(FusionKind::AttentionLayout).len(),
        1,
        "{report}"
    );
    assert_eq!(transposes(&c), 2, "{}", c.lir().graph);
    let n = B * S * H * D;
    let (a, b, cv) = (values(n, 21, 1.5), values(n, 22, 1.5), values(n, 23, 1.0));
    let got = c.run(&[("q", &a), ("k", &b), ("v", &cv)]);
    let want = reference_attention(
        &heads_major(&a),
        &heads_major(&b),
        &heads_major(&cv),
        1.0 / (D as f64).sqrt(),
        |_, i, j| j <= i,
        |_, _, _| 0.0,
    );
    assert_close(&got[0], &want, 1e-5, "heads-major output");
    assert_eq!(got[1], heads_major(&a), "q's transpose");
}

/// `(index in [B, S, H, D], index in [B, H, S, D])` of every element.
fn head_index_pairs() -> Vec<(usize, usize)> {
    let mut pairs = Vec::with_capacity(B * S * H * D);
    for bi in 0..B {
        for s in 0..S {
            for h in 0..H {
                for d in 0..D {
                    pairs.push((
                        (bi * S + s) * H * D + h * D + d,
                        ((bi * H + h) * S + s) * D + d,
                    ));
                }
            }
        }
    }
    pairs
}

/// Erf-spelled GELUs, in different operand orders and groupings.
fn gelu_graph(variant: usize) -> Graph {
    let mut g = Graph::new("gelu");
    let x = g.input("x", Shape::new(&[7, 9], DType::F32));
    let sqrt2 = std::f64::consts::SQRT_2;
    let y = match variant {
        // x * 0.5 * (1 + erf(x / sqrt2)), as ONNX exports of BERT.
        0 => {
            let z = g.div(x, sqrt2);
            let e = g.unary(UnaryOp::Erf, z);
            let one = g.add(e, 1.0);
            let h = g.mul(x, 0.5);
            g.mul(h, one)
        }
        // 0.5 * (x * (1 + erf(x * 0.7071...)))
        1 => {
            let z = g.mul(x, std::f64::consts::FRAC_1_SQRT_2);
            let e = g.unary(UnaryOp::Erf, z);
            let one = g.add(1.0, e);
            let xe = g.mul(x, one);
            g.mul(0.5, xe)
        }
        // ((1 + erf(x / sqrt2)) * 0.5) * x
        _ => {
            let z = g.div(x, sqrt2);
            let e = g.unary(UnaryOp::Erf, z);
            let one = g.add(e, 1.0);
            let h = g.mul(one, 0.5);
            g.mul(h, x)
        }
    };
    g.set_outputs(vec![y]);
    g
}

#[test]
fn erf_gelu_in_any_operand_order_becomes_the_native_gelu() {
    let x = values(63, 5, 4.0);
    for variant in 0..3 {
        let mut c = Session::new(Device::Cpu).compile(gelu_graph(variant));
        let report = &c.lir().fusion;
        assert_eq!(
            report.of_kind(FusionKind::Gelu).len(),
            1,
            "{variant}: {report}"
        );
        let ops: Vec<_> = c
            .lir()
            .graph
            .nodes()
            .iter()
            .filter(|n| !n.op.is_leaf())
            .map(|n| n.op.clone())
            .collect();
        assert_eq!(ops, [rlx_ir::Op::Unary(UnaryOp::Gelu)], "{variant}");
        let got = c.run(&[("x", &x)]).remove(0);
        let want: Vec<f64> = x
            .iter()
            .map(|&v| {
                let v = v as f64;
                0.5 * v * (1.0 + erf(v / std::f64::consts::SQRT_2))
            })
            .collect();
        assert_close(&got, &want, 1e-6, &format!("gelu variant {variant}"));
    }
}

#[test]
fn a_gelu_lookalike_with_other_constants_is_left_alone() {
    let mut g = Graph::new("not_gelu");
    let x = g.input("x", Shape::new(&[4], DType::F32));
    let z = g.div(x, 1.5);
    let e = g.unary(UnaryOp::Erf, z);
    let one = g.add(e, 1.0);
    let h = g.mul(x, 0.5);
    let y = g.mul(h, one);
    g.set_outputs(vec![y]);
    let c = Session::new(Device::Cpu).compile_with(g, &CompileOptions::default());
    assert!(c.lir().fusion.of_kind(FusionKind::Gelu).is_empty());
}

/// erf in f64 (Abramowitz-Stegun 7.1.26 is too coarse; this is the
/// series / continued-fraction pair accurate to ~1e-15).
fn erf(x: f64) -> f64 {
    if x.abs() < 2.5 {
        // Maclaurin series.
        let mut sum = x;
        let mut term = x;
        let x2 = x * x;
        for n in 1..200 {
            term *= -x2 / n as f64;
            let add = term / (2 * n + 1) as f64;
            sum += add;
            if add.abs() < 1e-17 {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        // Continued fraction for erfc.
        let ax = x.abs();
        let mut f = 0.0;
        for n in (1..60).rev() {
            f = n as f64 / 2.0 / (ax + f);
        }
        let erfc = (-ax * ax).exp() / std::f64::consts::PI.sqrt() / (ax + f);
        (1.0 - erfc).copysign(x)
    }
}
