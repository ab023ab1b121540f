//! Every differentiable op's reverse-mode gradient and forward-mode tangent
//! against central finite differences, in f64.

use rlx_autodiff::{grad_with_loss, jvp};
use rlx_driver::Device;
use rlx_ir::op::{AttentionLayout, MaskKind, PadMode};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Op, Shape};
use rlx_runtime::Session;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

fn run(g: &Graph, inputs: &[(String, HostTensor)]) -> Vec<Vec<f64>> {
    let mut c = Session::new(Device::Cpu)
        .try_compile(g.clone())
        .unwrap_or_else(|e| panic!("compile {}: {e}", g.name()));
    let refs: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
    c.try_run_typed(&refs)
        .unwrap_or_else(|e| panic!("run {}: {e}", g.name()))
        .iter()
        .map(|t| t.to_f64_lossy())
        .collect()
}

/// `loss = sum(f(x...) * r)` over f64 inputs `x0, x1, ...` with random `r`:
/// the graph, its inputs and the node of `f`.
fn weighted_loss(
    name: &str,
    shapes: &[&[usize]],
    rng: &mut Rng,
    f: impl Fn(&mut Graph, &[NodeId]) -> NodeId,
) -> (Graph, Vec<NodeId>, NodeId) {
    let mut g = Graph::new(name);
    let xs: Vec<NodeId> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| g.input(&format!("x{i}"), Shape::new(s, DType::F64)))
        .collect();
    let y = f(&mut g, &xs);
    let yd = g.shape(y).static_dims().unwrap();
    let n: usize = yd.iter().product();
    let r: Vec<f64> = (0..n).map(|_| rng.next()).collect();
    let rt = g.constant_tensor(&HostTensor::from_vec(r, &yd).unwrap());
    let w = g.mul(y, rt);
    let axes: Vec<i64> = (0..yd.len() as i64).collect();
    let loss = g.sum(w, &axes, false);
    g.set_outputs(vec![loss]);
    (g, xs, y)
}

/// Builds `loss = sum(f(x...) * r)` with fixed random `r`, then checks the
/// gradient of every input and a jvp along a random direction.
fn check(
    name: &str,
    shapes: &[&[usize]],
    positive: bool,
    f: impl Fn(&mut Graph, &[NodeId]) -> NodeId,
) {
    let mut rng = Rng(name.len() as u64 * 7919 + 17);
    let (g, xs, _) = weighted_loss(name, shapes, &mut rng, f);

    let vals: Vec<Vec<f64>> = shapes
        .iter()
        .map(|s| {
            (0..s.iter().product::<usize>())
                .map(|_| {
                    if positive {
                        0.5 + rng.next().abs()
                    } else {
                        rng.next()
                    }
                })
                .collect()
        })
        .collect();
    let inputs = |vals: &[Vec<f64>]| -> Vec<(String, HostTensor)> {
        vals.iter()
            .zip(shapes)
            .enumerate()
            .map(|(i, (v, s))| (format!("x{i}"), HostTensor::from_vec(v.clone(), s).unwrap()))
            .collect()
    };
    let eps = 1e-6;
    let fd = |k: usize, j: usize| {
        let mut p = vals.to_vec();
        p[k][j] += eps;
        let mut m = vals.to_vec();
        m[k][j] -= eps;
        (run(&g, &inputs(&p))[0][0] - run(&g, &inputs(&m))[0][0]) / (2.0 * eps)
    };
    let d = grad_with_loss(&g, &xs).unwrap_or_else(|e| panic!("{name}: {e}"));
    let got = run(&d, &inputs(&vals));
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-5 * (1.0 + a.abs().max(b.abs()));
    for k in 0..xs.len() {
        for (j, &gv) in got[1 + k].iter().enumerate() {
            let want = fd(k, j);
            assert!(
                close(gv, want),
                "{name}: d/dx{k}[{j}] = {gv} but finite differences give {want}"
            );
        }
    }
    // jvp along a random direction equals the directional finite difference.
    let dirs: Vec<Vec<f64>> = vals
        .iter()
        .map(|v| v.iter().map(|_| rng.next()).collect())
        .collect();
    let t = jvp(&g, &xs).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut tin = inputs(&vals);
    for (i, (dv, s)) in dirs.iter().zip(shapes).enumerate() {
        tin.push((
            format!("tangent_x{i}"),
            HostTensor::from_vec(dv.clone(), s).unwrap(),
        ));
    }
    let tout = run(&t, &tin);
    let tang = tout[1][0];
    assert!(
        (tout[0][0] - run(&g, &inputs(&vals))[0][0]).abs() < 1e-12,
        "{name}: jvp primal differs"
    );
    let shift = |sgn: f64| -> Vec<Vec<f64>> {
        vals.iter()
            .zip(&dirs)
            .map(|(v, dv)| v.iter().zip(dv).map(|(a, b)| a + sgn * eps * b).collect())
            .collect()
    };
    let want =
        (run(&g, &inputs(&shift(1.0)))[0][0] - run(&g, &inputs(&shift(-1.0)))[0][0]) / (2.0 * eps);
    assert!(
        close(tang, want),
        "{name}: jvp {tang} but finite differences give {want}"
    );
}

#[test]
fn unary_ops() {
    use rlx_ir::op::UnaryOp::*;
    for op in [
        Neg, Abs, Exp, Tanh, Sigmoid, Relu, Gelu, GeluApprox, Silu, Sin, Cos, Erf, Softplus,
    ] {
        check(&format!("{op:?}"), &[&[2, 3]], false, |g, x| {
            g.unary(op, x[0])
        });
    }
    for op in [Log, Sqrt, Rsqrt, Reciprocal] {
        check(&format!("{op:?}"), &[&[2, 3]], true, |g, x| {
            g.unary(op, x[0])
        });
    }
}

#[test]
fn binary_ops_with_broadcasting() {
    use rlx_ir::op::BinaryOp::*;
    for op in [Add, Sub, Mul, Div, Max, Min, Atan2] {
        check(&format!("{op:?}"), &[&[2, 1, 3], &[4, 1]], false, |g, x| {
            g.binary_op(op, x[0], x[1])
        });
    }
    check("pow", &[&[2, 3], &[3]], true, |g, x| g.pow(x[0], x[1]));
    check("mod", &[&[5], &[5]], true, |g, x| {
        let b = g.add(x[1], 0.3);
        g.rem(x[0], b)
    });
    check("where", &[&[2, 3], &[3], &[2, 1]], false, |g, x| {
        let c = g.gt(x[0], 0.0);
        g.where_(c, x[1], x[2])
    });
    check("shared", &[&[3]], false, |g, x| {
        let a = g.mul(x[0], x[0]);
        let b = g.sin(x[0]);
        g.mul(a, b)
    });
}

#[test]
fn linear_algebra() {
    check("matmul", &[&[3, 4], &[4, 2]], false, |g, x| {
        g.mm(x[0], x[1])
    });
    check(
        "matmul_batched",
        &[&[2, 1, 3, 4], &[3, 4, 2]],
        false,
        |g, x| g.mm(x[0], x[1]),
    );
    check("matmul_vec", &[&[4], &[2, 4, 3]], false, |g, x| {
        g.mm(x[0], x[1])
    });
    check("matvec", &[&[2, 3, 4], &[4]], false, |g, x| {
        g.mm(x[0], x[1])
    });
    check("dot_general", &[&[2, 3, 4], &[4, 2, 5]], false, |g, x| {
        g.dot_general(
            x[0],
            x[1],
            rlx_ir::op::DotDims {
                lhs_batch: vec![0],
                rhs_batch: vec![1],
                lhs_contract: vec![2],
                rhs_contract: vec![0],
            },
        )
    });
    check(
        "dot_general_2c",
        &[&[3, 4, 2], &[2, 5, 3]],
        false,
        |g, x| {
            g.dot_general(
                x[0],
                x[1],
                rlx_ir::op::DotDims {
                    lhs_batch: vec![],
                    rhs_batch: vec![],
                    lhs_contract: vec![0, 2],
                    rhs_contract: vec![2, 0],
                },
            )
        },
    );
}

#[test]
fn reductions() {
    check("sum", &[&[2, 3, 4]], false, |g, x| {
        g.sum(x[0], &[0, 2], false)
    });
    check("mean", &[&[2, 3, 4]], false, |g, x| {
        g.mean(x[0], &[-1], true)
    });
    check("max", &[&[3, 5]], false, |g, x| {
        g.reduce_max(x[0], &[1], false)
    });
    check("min", &[&[3, 5]], false, |g, x| {
        g.reduce_min(x[0], &[0], false)
    });
    check("prod", &[&[3, 4]], true, |g, x| g.prod(x[0], &[1], false));
    check("cumsum", &[&[3, 4]], false, |g, x| {
        g.cumsum(x[0], 1, false, false)
    });
    check("cumsum_rev_excl", &[&[3, 4]], false, |g, x| {
        g.cumsum(x[0], 0, true, true)
    });
}

#[test]
fn movement() {
    check("reshape", &[&[2, 6]], false, |g, x| {
        g.reshape_(x[0], &[3, -1])
    });
    check("transpose", &[&[2, 3, 4]], false, |g, x| {
        g.transpose_(x[0], &[2, 0, 1])
    });
    check("slice_step", &[&[9, 4]], false, |g, x| {
        g.slice_(x[0], 0, 1, 8, 3)
    });
    check("slice_neg", &[&[7, 3]], false, |g, x| {
        g.slice_(x[0], 0, 5, 0, -2)
    });
    check("concat", &[&[2, 3], &[2, 1]], false, |g, x| {
        g.concat_(&[x[0], x[1], x[0]], 1)
    });
    check("pad_constant", &[&[2, 3]], false, |g, x| {
        g.pad_(x[0], &[(1, 0), (2, 1)], PadMode::Constant(1.5))
    });
    check("pad_reflect", &[&[3, 4]], false, |g, x| {
        g.pad_(x[0], &[(2, 1), (1, 3)], PadMode::Reflect)
    });
    check("pad_edge", &[&[3, 4]], false, |g, x| {
        g.pad_(x[0], &[(2, 1), (0, 3)], PadMode::Edge)
    });
    check("broadcast", &[&[3, 1]], false, |g, x| {
        g.expand_(x[0], &[2, 3, 4])
    });
}

#[test]
fn indexing() {
    check("gather", &[&[5, 3]], false, |g, x| {
        let i =
            g.constant_tensor(&HostTensor::from_vec(vec![4i64, 0, -1, 2, 2, 0], &[2, 3]).unwrap());
        g.gather_(x[0], i, 0)
    });
    check("gather_elements", &[&[3, 4]], false, |g, x| {
        let i =
            g.constant_tensor(&HostTensor::from_vec(vec![0i64, 3, 3, 1, 2, 0], &[3, 2]).unwrap());
        g.gather_elements(x[0], i, 1)
    });
    check("scatter_add", &[&[4, 3], &[2, 3]], false, |g, x| {
        let i =
            g.constant_tensor(&HostTensor::from_vec(vec![1i64, 3, 1, 1, 0, 3], &[2, 3]).unwrap());
        g.scatter_add(x[0], i, x[1], 0)
    });
    check("topk", &[&[3, 6]], false, |g, x| {
        g.topk(x[0], 3, -1, true).0
    });
}

/// Grouped-query attention with an additive bias, a custom scale and soft-capping.
fn attention_bias_gqa(g: &mut Graph, x: &[NodeId]) -> NodeId {
    g.attention_with(
        x[0],
        x[1],
        x[2],
        MaskKind::Bias,
        Some(x[3]),
        Some(0.7),
        Some(2.0),
    )
}

#[test]
fn composites() {
    check("softmax", &[&[3, 5]], false, |g, x| g.sm(x[0], 0));
    check("log_softmax", &[&[3, 5]], false, |g, x| {
        g.log_softmax(x[0], -1)
    });
    check(
        "layer_norm",
        &[&[2, 3, 4], &[3, 4], &[3, 4]],
        false,
        |g, x| g.layer_norm_axis(x[0], 1, x[1], x[2], 1e-5),
    );
    check("rms_norm", &[&[3, 4], &[4]], false, |g, x| {
        g.rms_norm(x[0], x[1], 1e-6)
    });
    check("group_norm", &[&[2, 4, 3], &[4], &[4]], false, |g, x| {
        g.group_norm(x[0], 2, Some((x[1], x[2])), 1e-5)
    });
    for mask in [MaskKind::None, MaskKind::Causal, MaskKind::SlidingWindow(2)] {
        check(
            &format!("attention_{mask:?}"),
            &[&[2, 3, 4], &[2, 5, 4], &[2, 5, 3]],
            false,
            |g, x| g.attention_(x[0], x[1], x[2], mask, None),
        );
    }
    check(
        "attention_bias_gqa",
        &[&[1, 4, 3, 2], &[1, 2, 3, 2], &[1, 2, 3, 2], &[3, 3]],
        false,
        attention_bias_gqa,
    );
    // Sequence-major operands [B, S, H, D] (grouped kv heads, a bias over
    // the scores [B, H, Sq, Sk]): the rule runs between axis swaps.
    check(
        "attention_seq_major_bias_gqa",
        &[&[1, 3, 4, 2], &[1, 5, 2, 2], &[1, 5, 2, 3], &[3, 5]],
        false,
        |g, x| {
            let op = Op::Attention {
                mask: MaskKind::Bias,
                scale: Some(0.8),
                softcap: None,
                layout: AttentionLayout::SeqMajor,
            };
            g.try_node(op, x, None).expect("a valid attention")
        },
    );
    check("rope", &[&[2, 3, 4], &[3, 2], &[3, 2]], false, |g, x| {
        g.rope(x[0], x[1], x[2])
    });
    check(
        "rope_interleaved",
        &[&[2, 3, 4], &[3, 2], &[3, 2]],
        false,
        |g, x| g.rope_interleaved(x[0], x[1], x[2]),
    );
    let _ = Op::Reshape;
}

#[test]
fn convolution_and_pooling() {
    use rlx_ir::op::{PoolKind, Window};
    let win = |stride: usize, pad: usize, dil: usize| Window {
        kernel: vec![],
        stride: vec![stride; 2],
        padding: vec![(pad, pad + 1); 2],
        dilation: vec![dil; 2],
    };
    check(
        "conv2d_groups",
        &[&[2, 4, 6, 5], &[6, 2, 3, 2], &[6]],
        false,
        |g, x| g.conv(x[0], x[1], Some(x[2]), win(2, 1, 1), 2),
    );
    check(
        "conv2d_dilated",
        &[&[1, 2, 7, 7], &[3, 2, 2, 3]],
        false,
        |g, x| g.conv(x[0], x[1], None, win(1, 0, 2), 1),
    );
    check("conv1d", &[&[2, 3, 9], &[4, 3, 3]], false, |g, x| {
        g.conv1d(x[0], x[1], None, 2, 1, 1, 1)
    });
    // Stride 2, dilation 2, groups 2, bias, odd sizes (closed-form vjp).
    let odd = |rank: usize| Window {
        kernel: vec![],
        stride: vec![2; rank],
        padding: vec![(2, 1); rank],
        dilation: vec![2; rank],
    };
    check(
        "conv1d_s2_d2_g2",
        &[&[3, 4, 11], &[6, 2, 3], &[6]],
        false,
        |g, x| g.conv(x[0], x[1], Some(x[2]), odd(1), 2),
    );
    check(
        "conv2d_s2_d2_g2",
        &[&[1, 4, 9, 7], &[2, 2, 3, 2], &[2]],
        false,
        |g, x| g.conv(x[0], x[1], Some(x[2]), odd(2), 2),
    );
    let pw = |k: usize| Window {
        kernel: vec![k; 2],
        stride: vec![2; 2],
        padding: vec![(1, 1); 2],
        dilation: vec![1; 2],
    };
    check("max_pool", &[&[2, 3, 6, 6]], false, |g, x| {
        g.pool(x[0], PoolKind::Max, pw(3), false)
    });
    check("avg_pool", &[&[2, 3, 6, 6]], false, |g, x| {
        g.pool(x[0], PoolKind::Avg, pw(3), false)
    });
    use rlx_ir::ops::upsample::InterpMode;
    check("upsample_nearest", &[&[1, 2, 3, 4]], false, |g, x| {
        g.upsample(x[0], &[5, 7], InterpMode::Nearest, false)
    });
    check("upsample_linear", &[&[1, 2, 3, 4]], false, |g, x| {
        g.upsample(x[0], &[6, 3], InterpMode::Linear, false)
    });
    check("upsample_linear_ac", &[&[2, 1, 4]], false, |g, x| {
        g.upsample(x[0], &[7], InterpMode::Linear, true)
    });
    check("avg_pool_incl", &[&[1, 2, 5, 5]], false, |g, x| {
        g.pool(x[0], PoolKind::Avg, pw(2), true)
    });
}

/// The im2col decompositions equal the native conv / pool kernels (which
/// the numpy fixtures check).
#[test]
fn conv_and_pool_decompositions_match_native() {
    use rlx_ir::op::{PoolKind, Window};
    let mut g = Graph::new("conv");
    let x = g.input("x", Shape::new(&[2, 4, 7, 6], DType::F64));
    let w = g.input("w", Shape::new(&[6, 2, 3, 2], DType::F64));
    let b = g.input("b", Shape::new(&[6], DType::F64));
    let cw = Window {
        kernel: vec![],
        stride: vec![2, 1],
        padding: vec![(1, 0), (2, 1)],
        dilation: vec![1, 2],
    };
    let y = g.conv(x, w, Some(b), cw.clone(), 2);
    let pw = Window {
        kernel: vec![3, 2],
        stride: vec![2, 2],
        padding: vec![(1, 1), (1, 0)],
        dilation: vec![1, 1],
    };
    let mp = g.pool(x, PoolKind::Max, pw.clone(), false);
    let ap = g.pool(x, PoolKind::Avg, pw.clone(), false);
    let ai = g.pool(x, PoolKind::Avg, pw.clone(), true);
    g.set_outputs(vec![y, mp, ap, ai]);
    let mut h = Graph::new("lowered");
    let (hx, hw, hb) = (
        h.input("x", Shape::new(&[2, 4, 7, 6], DType::F64)),
        h.input("w", Shape::new(&[6, 2, 3, 2], DType::F64)),
        h.input("b", Shape::new(&[6], DType::F64)),
    );
    let hy = rlx_ir::ops::conv::decompose_conv(&mut h, &[hx, hw, hb], &cw, 2).unwrap();
    let hm = rlx_ir::ops::conv::decompose_pool(&mut h, hx, PoolKind::Max, &pw, false).unwrap();
    let ha = rlx_ir::ops::conv::decompose_pool(&mut h, hx, PoolKind::Avg, &pw, false).unwrap();
    let hi = rlx_ir::ops::conv::decompose_pool(&mut h, hx, PoolKind::Avg, &pw, true).unwrap();
    h.set_outputs(vec![hy, hm, ha, hi]);
    let mut rng = Rng(5);
    let mk = |rng: &mut Rng, d: &[usize]| {
        HostTensor::from_vec(
            (0..d.iter().product::<usize>())
                .map(|_| rng.next())
                .collect::<Vec<f64>>(),
            d,
        )
        .unwrap()
    };
    let inputs = vec![
        ("x".to_string(), mk(&mut rng, &[2, 4, 7, 6])),
        ("w".to_string(), mk(&mut rng, &[6, 2, 3, 2])),
        ("b".to_string(), mk(&mut rng, &[6])),
    ];
    use rlx_ir::ops::upsample::{decompose_upsample, InterpMode};
    for (mode, ac) in [
        (InterpMode::Nearest, false),
        (InterpMode::Linear, false),
        (InterpMode::Linear, true),
    ] {
        let u = g.upsample(x, &[11, 4], mode, ac);
        let mut outs = g.outputs().to_vec();
        outs.push(u);
        g.set_outputs(outs);
        let su = g.shape(u).clone();
        let hu = decompose_upsample(&mut h, hx, mode, ac, &su).unwrap();
        let mut outs = h.outputs().to_vec();
        outs.push(hu);
        h.set_outputs(outs);
    }
    let (a, l) = (run(&g, &inputs), run(&h, &inputs));
    for (k, (p, q)) in a.iter().zip(&l).enumerate() {
        assert_eq!(p.len(), q.len());
        for (u, v) in p.iter().zip(q) {
            assert!(
                (u - v).abs() < 1e-12,
                "output {k}: native {u} vs decomposed {v}"
            );
        }
    }
}

fn f64s(d: &[usize]) -> Shape {
    Shape::new(d, DType::F64)
}

/// Step of a scan with carry `(h [3], w [3, 3])` over `x_t [3]`:
/// `h' = tanh(h w + x_t)`, `y_t = h' * x_t`.
fn scan_step() -> Graph {
    let mut b = Graph::new("step");
    let h = b.input("h", f64s(&[3]));
    let w = b.input("w", f64s(&[3, 3]));
    let x = b.input("x", f64s(&[3]));
    let hw = b.mm(h, w);
    let s = b.add(hw, x);
    let h2 = b.tanh(s);
    let y = b.mul(h2, x);
    b.set_outputs(vec![h2, w, y]);
    b
}

#[test]
fn control_flow() {
    use rlx_ir::ops::control::{try_custom_fn, try_if, try_tuple_op, CustomFnSpec, ScanSpec};
    use std::sync::Arc;
    for (reverse, checkpoint) in [
        (false, None),
        (true, None),
        (false, Some(2)),
        (true, Some(2)),
        // 3 does not divide the 4 steps: a short last segment of 1 step.
        (false, Some(3)),
        (true, Some(3)),
    ] {
        check(
            &format!("scan_{reverse}_{checkpoint:?}"),
            &[&[3], &[3, 3], &[4, 3]],
            false,
            |g, x| {
                let spec = ScanSpec {
                    body: Arc::new(scan_step()),
                    num_carry: 2,
                    length: 4,
                    reverse,
                    checkpoint,
                };
                let r = try_tuple_op(g, Op::Scan(spec), x).unwrap();
                let h = g.reshape_(r[0], &[1, 3]);
                g.concat_(&[h, r[2]], 0)
            },
        );
    }
    // An int scanned input and an int carry get no derivatives but steer the
    // step; also through segments of 2 of the 5 steps (a short last one).
    for (reverse, checkpoint) in [(false, None), (false, Some(2)), (true, Some(2))] {
        check(
            &format!("scan_int_inputs_{reverse}_{checkpoint:?}"),
            &[&[3], &[5, 3]],
            false,
            |g, x| {
                let mut b = Graph::new("step");
                let h = b.input("h", f64s(&[3]));
                let i = b.input("i", Shape::scalar(DType::I64));
                let xt = b.input("x", f64s(&[3]));
                let k = b.input("k", Shape::scalar(DType::I64));
                let kf = b.cast(k, DType::F64);
                let hk = b.mul(h, kf);
                let hk = b.mul(hk, b.constant(0.1, DType::F64));
                let sx = b.sin(xt);
                let h2 = b.add(hk, sx);
                let i2 = b.add(i, b.constant(1.0, DType::I64));
                b.set_outputs(vec![h2, i2, h2]);
                let ks = g
                    .constant_tensor(&HostTensor::from_vec(vec![3i64, -1, 2, 0, 5], &[5]).unwrap());
                let i0 = g.scalar(0.0, DType::I64);
                let spec = ScanSpec {
                    body: Arc::new(b),
                    num_carry: 2,
                    length: 5,
                    reverse,
                    checkpoint,
                };
                let r = try_tuple_op(g, Op::Scan(spec), &[x[0], i0, x[1], ks]).unwrap();
                let h = g.reshape_(r[0], &[1, 3]);
                g.concat_(&[h, r[2]], 0)
            },
        );
    }
    // The predicate is computed from the data, far from its boundary, so
    // finite differences stay on one branch; both branches are exercised.
    for bias in [5.0, -5.0] {
        check(&format!("if_{bias}"), &[&[3], &[3]], false, |g, x| {
            let s = g.sum(x[0], &[0], false);
            let s = g.add(s, g.constant(bias, DType::F64));
            let p = g.gt(s, g.constant(0.0, DType::F64));
            let mut t = Graph::new("then");
            let (a, b) = (t.input("a", f64s(&[3])), t.input("b", f64s(&[3])));
            let sa = t.sin(a);
            let r = t.mul(sa, b);
            t.set_outputs(vec![r]);
            let mut e = Graph::new("else");
            let (a, b) = (e.input("a", f64s(&[3])), e.input("b", f64s(&[3])));
            let eb = e.exp(b);
            let r = e.mul(a, eb);
            e.set_outputs(vec![r]);
            try_if(g, p, t, e, &[x[0], x[1]]).unwrap()[0]
        });
    }
    check("custom_fn_without_rules", &[&[4]], false, |g, x| {
        let mut body = Graph::new("body");
        let a = body.input("a", f64s(&[4]));
        let t = body.tanh(a);
        let r = body.mul(t, a);
        body.set_outputs(vec![r]);
        let spec = CustomFnSpec {
            name: "xtanh".into(),
            body: Arc::new(body),
            vjp: None,
            jvp: None,
        };
        try_custom_fn(g, spec, &[x[0]]).unwrap()[0]
    });
}

fn conv_transpose_node(
    g: &mut Graph,
    x: &[NodeId],
    stride: usize,
    pad: (usize, usize),
    dil: usize,
    op: usize,
    groups: usize,
) -> NodeId {
    let spatial = g.shape(x[0]).rank() - 2;
    let window = rlx_ir::op::Window {
        kernel: vec![],
        stride: vec![stride; spatial],
        padding: vec![pad; spatial],
        dilation: vec![dil; spatial],
    };
    g.try_node(
        Op::ConvTranspose {
            window,
            output_padding: vec![op; spatial],
            groups,
        },
        x,
        None,
    )
    .unwrap()
}

/// Transposed convolution: gradients and tangents against finite
/// differences, and its decomposition against the native kernel (which the
/// numpy fixtures check).
#[test]
fn conv_transpose() {
    check(
        "conv_transpose2d_groups",
        &[&[2, 4, 3, 4], &[4, 3, 2, 3], &[6]],
        false,
        |g, x| conv_transpose_node(g, x, 2, (1, 0), 1, 1, 2),
    );
    check(
        "conv_transpose1d_dilated",
        &[&[1, 2, 5], &[2, 3, 3]],
        false,
        |g, x| conv_transpose_node(g, x, 3, (2, 1), 2, 2, 1),
    );
    let shapes: [&[usize]; 3] = [&[2, 4, 3, 4], &[4, 3, 2, 3], &[6]];
    let mut rng = Rng(11);
    let mut inputs = Vec::new();
    let (mut g, mut h) = (Graph::new("native"), Graph::new("lowered"));
    let (mut gx, mut hx) = (Vec::new(), Vec::new());
    for (i, s) in shapes.iter().enumerate() {
        let name = format!("x{i}");
        gx.push(g.input(&name, Shape::new(s, DType::F64)));
        hx.push(h.input(&name, Shape::new(s, DType::F64)));
        let v: Vec<f64> = (0..s.iter().product::<usize>())
            .map(|_| rng.next())
            .collect();
        inputs.push((name, HostTensor::from_vec(v, s).unwrap()));
    }
    for (stride, pad, dil, op) in [(2, (1, 0), 1, 1), (1, (0, 0), 2, 0), (3, (2, 2), 1, 2)] {
        let y = conv_transpose_node(&mut g, &gx, stride, pad, dil, op, 2);
        let window = rlx_ir::op::Window {
            kernel: vec![],
            stride: vec![stride; 2],
            padding: vec![pad; 2],
            dilation: vec![dil; 2],
        };
        let hy = rlx_ir::ops::conv::decompose_conv_transpose(&mut h, &hx, &window, &[op, op], 2)
            .unwrap();
        assert_eq!(g.shape(y), h.shape(hy));
        let mut o = g.outputs().to_vec();
        o.push(y);
        g.set_outputs(o);
        let mut o = h.outputs().to_vec();
        o.push(hy);
        h.set_outputs(o);
    }
    let (a, l) = (run(&g, &inputs), run(&h, &inputs));
    for (k, (p, q)) in a.iter().zip(&l).enumerate() {
        for (u, v) in p.iter().zip(q) {
            assert!(
                (u - v).abs() < 1e-12,
                "case {k}: native {u} vs decomposed {v}"
            );
        }
    }
}

/// The closed-form reverse rules of the composites give the gradient of
/// their decomposition (finite differences check both in `composites`).
#[test]
fn closed_form_vjps_match_the_decompositions() {
    type Build = Box<dyn Fn(&mut Graph, &[NodeId]) -> NodeId>;
    let cases: Vec<(&str, Vec<&[usize]>, Build)> = vec![
        (
            "layer_norm_affine",
            vec![&[2, 3, 4], &[3, 4], &[3, 4]],
            Box::new(|g, x| g.layer_norm_axis(x[0], 1, x[1], x[2], 1e-5)),
        ),
        (
            "layer_norm_plain",
            vec![&[3, 5]],
            Box::new(|g, x| g.layer_norm_axis(x[0], 1, None, None, 1e-3)),
        ),
        (
            "rms_norm_gamma",
            vec![&[2, 3, 4], &[4]],
            Box::new(|g, x| g.rms_norm(x[0], x[1], 1e-6)),
        ),
        (
            "rms_norm_plain",
            vec![&[4, 3]],
            Box::new(|g, x| g.rms_norm(x[0], None, 1e-2)),
        ),
        (
            "attention_causal",
            vec![&[2, 3, 4], &[2, 5, 4], &[2, 5, 3]],
            Box::new(|g, x| g.attention_(x[0], x[1], x[2], MaskKind::Causal, None)),
        ),
        (
            "attention_window",
            vec![&[2, 4, 4], &[2, 4, 4], &[2, 4, 2]],
            Box::new(|g, x| g.attention_(x[0], x[1], x[2], MaskKind::SlidingWindow(2), None)),
        ),
        (
            "attention_bias_gqa_softcap",
            vec![&[1, 4, 3, 2], &[1, 2, 3, 2], &[1, 2, 3, 2], &[3, 3]],
            Box::new(attention_bias_gqa),
        ),
        (
            "attention_custom_mask",
            vec![&[2, 3, 2], &[2, 4, 2], &[2, 4, 3]],
            Box::new(|g, x| {
                let keep = vec![
                    true, false, true, true, false, true, true, false, true, true, true, false,
                ];
                let m = g.constant_tensor(&HostTensor::from_vec(keep, &[3, 4]).unwrap());
                g.attention_with(x[0], x[1], x[2], MaskKind::Custom, Some(m), None, None)
            }),
        ),
    ];
    for (name, shapes, f) in cases {
        let mut rng = Rng(name.len() as u64 + 101);
        let (g, xs, y) = weighted_loss(name, &shapes, &mut rng, f);
        let kind = g.node(y).op.kind();
        let closed = grad_with_loss(&g, &xs).unwrap();
        assert!(
            closed.nodes().iter().any(|n| n.op.kind() == kind),
            "{name}: the composite should stay whole under reverse mode"
        );
        let lowered = rlx_autodiff::prepare_graph_for_ad(&g).unwrap();
        assert!(!lowered.nodes().iter().any(|n| n.op.kind() == kind));
        let lx: Vec<NodeId> = lowered.inputs().iter().map(|(id, _, _)| *id).collect();
        let decomposed = grad_with_loss(&lowered, &lx).unwrap();
        let inputs: Vec<(String, HostTensor)> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let v: Vec<f64> = (0..s.iter().product::<usize>())
                    .map(|_| rng.next())
                    .collect();
                (format!("x{i}"), HostTensor::from_vec(v, s).unwrap())
            })
            .collect();
        let (a, b) = (run(&closed, &inputs), run(&decomposed, &inputs));
        for (k, (p, q)) in a.iter().zip(&b).enumerate() {
            for (u, v) in p.iter().zip(q) {
                assert!(
                    (u - v).abs() <= 1e-12 * (1.0 + v.abs()),
                    "{name}: output {k}: closed form {u} vs decomposition {v}"
                );
            }
        }
    }
}
