//! vmap(f)(X) equals stacking f(x_i), for every op family, and per-example
//! gradients: vmap(grad(f)) equals grad(f) per example.

use rlx_autodiff::{grad_with_loss, vmap, vmap_axes};
use rlx_driver::Device;
use rlx_ir::op::{MaskKind, PadMode};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::Session;

const B: usize = 3;

fn vals(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

fn run(g: &Graph, inputs: &[(String, HostTensor)]) -> Vec<HostTensor> {
    let mut c = Session::new(Device::Cpu)
        .try_compile(g.clone())
        .unwrap_or_else(|e| panic!("{}: {e}", g.name()));
    let refs: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
    c.try_run_typed(&refs)
        .unwrap_or_else(|e| panic!("{}: {e}", g.name()))
}

/// Checks vmap over the inputs whose index is in `batched` against a loop.
fn check(
    name: &str,
    shapes: &[&[usize]],
    batched: &[usize],
    f: impl Fn(&mut Graph, &[NodeId]) -> Vec<NodeId>,
) {
    let mut g = Graph::new(name);
    let xs: Vec<NodeId> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| g.input(&format!("x{i}"), Shape::new(s, DType::F64)))
        .collect();
    let ys = f(&mut g, &xs);
    g.set_outputs(ys);
    let names: Vec<String> = batched.iter().map(|i| format!("x{i}")).collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let v = vmap(&g, &name_refs, B).unwrap_or_else(|e| panic!("{name}: {e}"));
    let data: Vec<Vec<f64>> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            vals(
                s.iter().product::<usize>() * if batched.contains(&i) { B } else { 1 },
                i as u64 + 3,
            )
        })
        .collect();
    let batched_inputs: Vec<(String, HostTensor)> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut d = s.to_vec();
            if batched.contains(&i) {
                d.insert(0, B);
            }
            (
                format!("x{i}"),
                HostTensor::from_vec(data[i].clone(), &d).unwrap(),
            )
        })
        .collect();
    let got = run(&v, &batched_inputs);
    for k in 0..B {
        let one: Vec<(String, HostTensor)> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let n: usize = s.iter().product();
                let slice = if batched.contains(&i) {
                    data[i][k * n..(k + 1) * n].to_vec()
                } else {
                    data[i].clone()
                };
                (format!("x{i}"), HostTensor::from_vec(slice, s).unwrap())
            })
            .collect();
        let want = run(&g, &one);
        for (o, (gt, w)) in got.iter().zip(&want).enumerate() {
            let wv = w.to_f64_lossy();
            let n = wv.len();
            assert_eq!(gt.dims()[0], B, "{name}: output {o} lacks the batch axis");
            let gv = &gt.to_f64_lossy()[k * n..(k + 1) * n];
            for (j, (a, b)) in gv.iter().zip(&wv).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-12 * (1.0 + b.abs()) || (a.is_nan() && b.is_nan()),
                    "{name}: example {k}, output {o}[{j}]: {a} vs {b}"
                );
            }
        }
    }
}

#[test]
fn elementwise_and_broadcasting() {
    check("unary", &[&[2, 3]], &[0], |g, x| vec![g.tanh(x[0])]);
    check("binary_rank_mismatch", &[&[3], &[2, 3]], &[0], |g, x| {
        vec![g.mul(x[0], x[1])]
    });
    check("binary_both", &[&[2, 1], &[3]], &[0, 1], |g, x| {
        vec![g.add(x[0], x[1])]
    });
    check("select", &[&[4], &[4], &[1]], &[0, 2], |g, x| {
        let c = g.gt(x[0], 0.0);
        vec![g.where_(c, x[1], x[2])]
    });
    check("cast", &[&[4]], &[0], |g, x| vec![g.cast(x[0], DType::F32)]);
}

#[test]
fn linear_algebra() {
    check("mm_lhs", &[&[2, 3], &[3, 4]], &[0], |g, x| {
        vec![g.mm(x[0], x[1])]
    });
    check("mm_rhs", &[&[2, 3], &[3, 4]], &[1], |g, x| {
        vec![g.mm(x[0], x[1])]
    });
    check(
        "mm_both_batched_dims",
        &[&[2, 2, 3], &[3, 4]],
        &[0, 1],
        |g, x| vec![g.mm(x[0], x[1])],
    );
    check("mm_vec", &[&[3], &[2, 3, 4]], &[0], |g, x| {
        vec![g.mm(x[0], x[1])]
    });
    check("mm_matvec", &[&[2, 3], &[3]], &[1], |g, x| {
        vec![g.mm(x[0], x[1])]
    });
    check("dot_general", &[&[2, 3, 4], &[4, 2, 5]], &[1], |g, x| {
        vec![g.dot_general(
            x[0],
            x[1],
            rlx_ir::op::DotDims {
                lhs_batch: vec![0],
                rhs_batch: vec![1],
                lhs_contract: vec![2],
                rhs_contract: vec![0],
            },
        )]
    });
}

#[test]
fn reductions_and_movement() {
    check("sum", &[&[2, 3]], &[0], |g, x| {
        vec![g.sum(x[0], &[-1], false), g.mean(x[0], &[0], true)]
    });
    check("argmax_cumsum", &[&[2, 5]], &[0], |g, x| {
        vec![g.argmax(x[0], 1, false), g.cumsum(x[0], 0, false, false)]
    });
    check("softmax", &[&[2, 5]], &[0], |g, x| {
        vec![g.sm(x[0], 0), g.log_softmax(x[0], 1)]
    });
    check("topk", &[&[2, 5]], &[0], |g, x| {
        let (v, i) = g.topk(x[0], 2, -1, true);
        vec![v, i]
    });
    check("reshape_transpose", &[&[2, 6]], &[0], |g, x| {
        let r = g.reshape_(x[0], &[3, 4]);
        vec![g.transpose_(r, &[1, 0])]
    });
    check("slice_pad_concat", &[&[4, 3], &[4, 1]], &[0], |g, x| {
        let s = g.slice_(x[0], 0, 3, 0, -2);
        let p = g.pad_(x[0], &[(1, 1), (0, 2)], PadMode::Reflect);
        vec![s, p, g.concat_(&[x[0], x[1]], 1)]
    });
    check("broadcast", &[&[3, 1]], &[0], |g, x| {
        vec![g.expand_(x[0], &[2, 3, 4])]
    });
}

#[test]
fn indexing_and_composites() {
    let idx =
        |g: &mut Graph| g.constant_tensor(&HostTensor::from_vec(vec![2i64, 0, -1], &[3]).unwrap());
    check("gather_x", &[&[4, 2]], &[0], |g, x| {
        let i = idx(g);
        vec![g.gather_(x[0], i, 0)]
    });
    check("gather_both", &[&[4, 2], &[3]], &[0, 1], |g, x| {
        let s = g.mul(x[1], 1.9);
        let f = g.floor(s);
        let i = g.cast(f, DType::I64);
        vec![g.gather_(x[0], i, 0), g.gather_(x[0], i, 1)]
    });
    check("gather_idx", &[&[2, 4], &[3]], &[1], |g, x| {
        let s = g.mul(x[1], 1.9);
        let f = g.floor(s);
        let i = g.cast(f, DType::I64);
        vec![g.gather_(x[0], i, 1)]
    });
    check("layer_norm", &[&[2, 4], &[4], &[4]], &[0, 1], |g, x| {
        vec![g.ln(x[0], x[1], x[2], 1e-5)]
    });
    check(
        "attention",
        &[&[2, 3, 4], &[2, 5, 4], &[2, 5, 4]],
        &[0, 2],
        |g, x| vec![g.attention_(x[0], x[1], x[2], MaskKind::Causal, None)],
    );
    check("conv", &[&[1, 2, 5, 5], &[3, 2, 3, 3]], &[0], |g, x| {
        vec![rlx_ir::GraphExt::conv2d(
            g,
            x[0],
            x[1],
            None,
            [1, 1],
            [1, 1],
        )]
    });
}

#[test]
fn in_and_out_axes() {
    let mut g = Graph::new("axes");
    let x = g.input("x", Shape::new(&[3], DType::F32));
    let y = g.exp(x);
    g.set_outputs(vec![y]);
    let v = vmap_axes(&g, &[("x", 1)], 1, 2).unwrap();
    let xs = HostTensor::from_vec(vec![0f32, 1.0, 0.0, 1.0, 2.0, 0.0], &[3, 2]).unwrap();
    let out = run(&v, &[("x".into(), xs)]);
    assert_eq!(out[0].dims(), &[3, 2]);
    let want = [0f32, 1.0, 0.0, 1.0, 2.0, 0.0].map(f32::exp);
    for (a, b) in out[0].to_vec::<f32>().unwrap().iter().zip(want) {
        assert!((a - b).abs() < 1e-6, "{a} vs {b}");
    }
    assert!(vmap(&g, &["nope"], 2)
        .unwrap_err()
        .to_string()
        .contains("\"nope\" is not an input"));
}

#[test]
fn per_example_gradients() {
    // loss_i = sum(tanh(x_i @ w)^2): vmap(grad) over x gives one gradient of w per example.
    let mut g = Graph::new("mlp");
    let x = g.input("x", Shape::new(&[4], DType::F64));
    let w = g.param("w", Shape::new(&[4, 3], DType::F64));
    let h = g.mm(x, w);
    let t = g.tanh(h);
    let sq = g.mul(t, t);
    let l = g.sum(sq, &[0], false);
    g.set_outputs(vec![l]);
    let d = grad_with_loss(&g, &[w]).unwrap();
    let v = vmap(&d, &["x"], B).unwrap();
    let xs = vals(B * 4, 1);
    let ws = vals(12, 2);
    let mut c = Session::new(Device::Cpu).try_compile(v).unwrap();
    c.set_param_typed("w", &HostTensor::from_vec(ws.clone(), &[4, 3]).unwrap())
        .unwrap();
    let out = c
        .try_run_typed(&[("x", &HostTensor::from_vec(xs.clone(), &[B, 4]).unwrap())])
        .unwrap();
    assert_eq!(out[1].dims(), &[B, 4, 3]);
    let got = out[1].to_vec::<f64>().unwrap();
    for k in 0..B {
        // dL/dw[i][j] = x[i] * 2 t_j (1 - t_j^2)
        let xk = &xs[k * 4..(k + 1) * 4];
        for j in 0..3 {
            let hj: f64 = (0..4).map(|i| xk[i] * ws[i * 3 + j]).sum();
            let tj = hj.tanh();
            for i in 0..4 {
                let want = xk[i] * 2.0 * tj * (1.0 - tj * tj);
                assert!(
                    (got[k * 12 + i * 3 + j] - want).abs() < 1e-12,
                    "example {k} w[{i}][{j}]"
                );
            }
        }
    }
}

#[test]
fn conv_transpose_with_batched_weight() {
    let ct = |g: &mut Graph, x: &[NodeId]| {
        let window = rlx_ir::op::Window {
            kernel: vec![],
            stride: vec![2, 1],
            padding: vec![(1, 0), (0, 1)],
            dilation: vec![1, 2],
        };
        let op = rlx_ir::Op::ConvTranspose {
            window,
            output_padding: vec![1, 0],
            groups: 2,
        };
        vec![g.try_node(op, x, None).unwrap()]
    };
    let shapes: [&[usize]; 3] = [&[1, 4, 3, 3], &[4, 2, 2, 2], &[4]];
    check("conv_transpose_w", &shapes, &[1], ct);
    check("conv_transpose_xw", &shapes, &[0, 1], ct);
    check("conv_transpose_xwb", &shapes, &[0, 1, 2], ct);
}
