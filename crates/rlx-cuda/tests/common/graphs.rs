//! Graphs the plan and executor tests share: a small MLP, an
//! attention-style block and the digits MLP's SGD training step.
#![allow(dead_code)]

use rlx_ir::op::{CmpOp, PadMode, PoolKind, Window};
use rlx_ir::ops::upsample::InterpMode;
use rlx_ir::quant::QuantScheme;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};

/// `softmax(tanh(x @ w1 + b1) @ w2 + b2)` on `x [4, 3]`.
pub fn mlp() -> Graph {
    let mut g = Graph::new("mlp");
    let x = g.input("x", Shape::new(&[4, 3], DType::F32));
    let w1 = g.param("w1", Shape::new(&[3, 8], DType::F32));
    let b1 = g.param("b1", Shape::new(&[8], DType::F32));
    let w2 = g.param("w2", Shape::new(&[8, 2], DType::F32));
    let b2 = g.param("b2", Shape::new(&[2], DType::F32));
    let h = g.mm(x, w1);
    let h = g.add(h, b1);
    let h = g.tanh(h);
    let o = g.mm(h, w2);
    let o = g.add(o, b2);
    let p = g.sm(o, -1);
    g.set_outputs(vec![p]);
    g
}

/// One attention head block on `x [2, 5, 8]`: `softmax(q k^T / sqrt(8)) v`
/// with q, k, v projections, a residual and a layer norm.
pub fn attention_block() -> Graph {
    let mut g = Graph::new("attention");
    let x = g.input("x", Shape::new(&[2, 5, 8], DType::F32));
    let proj = |g: &mut Graph, name: &str| -> NodeId {
        let w = g.param(name, Shape::new(&[8, 8], DType::F32));
        g.mm(x, w)
    };
    let q = proj(&mut g, "wq");
    let k = proj(&mut g, "wk");
    let v = proj(&mut g, "wv");
    let kt = g.transpose_(k, &[0, 2, 1]);
    let s = g.mm(q, kt);
    let s = g.mul(s, g.constant(1.0 / 8f64.sqrt(), DType::F32));
    let p = g.sm(s, -1);
    let a = g.mm(p, v);
    let r = g.add(a, x);
    let gamma = g.param("gamma", Shape::new(&[8], DType::F32));
    let beta = g.param("beta", Shape::new(&[8], DType::F32));
    let y = g.ln(r, gamma, beta, 1e-5);
    g.set_outputs(vec![y]);
    g
}

pub const PIXELS: usize = 64;
pub const HIDDEN: usize = 32;
pub const CLASSES: usize = 10;
pub const BATCH: usize = 16;
pub const DIGIT_PARAMS: [&str; 4] = ["w1", "b1", "w2", "b2"];

/// `[loss, dw1, db1, dw2, db2]`: the digits MLP's softmax cross-entropy
/// and its gradients, backward by reverse-mode autodiff.
pub fn digits_grads() -> Graph {
    let mut g = Graph::new("digits_grads");
    let x = g.input("x", Shape::new(&[BATCH, PIXELS], DType::F32));
    let y = g.input("y", Shape::new(&[BATCH, CLASSES], DType::F32));
    let w1 = g.param("w1", Shape::new(&[PIXELS, HIDDEN], DType::F32));
    let b1 = g.param("b1", Shape::new(&[HIDDEN], DType::F32));
    let w2 = g.param("w2", Shape::new(&[HIDDEN, CLASSES], DType::F32));
    let b2 = g.param("b2", Shape::new(&[CLASSES], DType::F32));
    let h = g.mm(x, w1);
    let h = g.add(h, b1);
    let h = g.tanh(h);
    let z = g.mm(h, w2);
    let z = g.add(z, b2);
    let lp = g.log_softmax(z, -1);
    let picked = g.mul(y, lp);
    let s = g.sum(picked, &[0, 1], false);
    let loss = g.mul(s, g.constant(-1.0 / BATCH as f64, DType::F32));
    g.set_outputs(vec![loss]);
    let params: Vec<NodeId> = DIGIT_PARAMS
        .iter()
        .map(|n| g.find_param(n).unwrap())
        .collect();
    rlx_autodiff::grad_with_loss(&g, &params).unwrap()
}

/// `[loss, w1', b1', w2', b2']`: one SGD step (lr 0.3) of the digits MLP
/// on [`digits_grads`], the update in the graph.
pub fn digits_step() -> Graph {
    let mut d = digits_grads();
    let mut outs = vec![d.outputs()[0]];
    for (k, name) in DIGIT_PARAMS.iter().enumerate() {
        let p = d.find_param(name).unwrap();
        let grad = d.outputs()[1 + k];
        let step = d.mul(grad, d.constant(0.3, DType::F32));
        outs.push(d.sub(p, step));
    }
    d.set_outputs(outs);
    d
}

/// Initial digits MLP params, in [`DIGIT_PARAMS`] order.
pub fn digits_init() -> [HostTensor; 4] {
    [
        rand(&[PIXELS, HIDDEN], -0.125, 0.125, 50),
        HostTensor::zeros(DType::F32, &[HIDDEN]),
        rand(&[HIDDEN, CLASSES], -0.125, 0.125, 51),
        HostTensor::zeros(DType::F32, &[CLASSES]),
    ]
}

/// Batch `step` of a learnable toy task: `(x, y)`, the label the
/// brightest of the first ten pixels.
pub fn digits_batch(step: usize) -> (HostTensor, HostTensor) {
    let x = rand(&[BATCH, PIXELS], 0.0, 1.0, 100 + step as u64);
    let xs = x.to_vec::<f32>().unwrap();
    let mut y = vec![0f32; BATCH * CLASSES];
    for r in 0..BATCH {
        let row = &xs[r * PIXELS..r * PIXELS + CLASSES];
        let best = (0..CLASSES)
            .max_by(|&i, &j| row[i].total_cmp(&row[j]))
            .unwrap();
        y[r * CLASSES + best] = 1.0;
    }
    (x, HostTensor::from_vec(y, &[BATCH, CLASSES]).unwrap())
}

/// `lo..hi` pseudo-random f32s (a fixed LCG: the same on every machine).
pub fn rand(dims: &[usize], lo: f32, hi: f32, seed: u64) -> rlx_ir::HostTensor {
    let n: usize = dims.iter().product();
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect();
    rlx_ir::HostTensor::from_vec(v, dims).unwrap()
}

/// Every comparison of a broadcast pair, `where` over f32 and over i64,
/// and its inputs `a`, `b`, `i` (with one equal pair for eq / le / ge).
pub fn compare_select() -> (Graph, [rlx_ir::HostTensor; 3]) {
    let mut g = Graph::new("select");
    let a = g.input("a", Shape::new(&[2, 3, 4], DType::F32));
    let b = g.input("b", Shape::new(&[3, 1], DType::F32));
    let i = g.input("i", Shape::new(&[4], DType::I64));
    let mut outs = Vec::new();
    for op in [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ] {
        outs.push(g.compare_op(op, a, b));
    }
    let lt = g.compare_op(CmpOp::Lt, a, b);
    outs.push(g.where_(lt, a, b));
    let j = g.constant(2.0, DType::I64);
    let ge = g.compare_op(CmpOp::Ge, i, j);
    outs.push(g.where_(ge, i, j));
    g.set_outputs(outs);
    let mut av = rand(&[2, 3, 4], -1.0, 1.0, 60).to_vec::<f32>().unwrap();
    let bv = rand(&[3, 1], -1.0, 1.0, 61);
    av[5] = bv.to_vec::<f32>().unwrap()[1]; // an equal pair for eq / le / ge
    let av = HostTensor::from_vec(av, &[2, 3, 4]).unwrap();
    let iv = HostTensor::from_vec(vec![0i64, 2, 5, -1], &[4]).unwrap();
    (g, [av, bv, iv])
}

/// One output per float unary op of [`UnaryOp::ALL`] (`Not` is Bool-only)
/// of `x [3, 37]`, the log / root / reciprocal ones of the positive
/// `p [3, 37]`: an op added to the IR joins the tests by itself, failing
/// them until it has a kernel.
pub fn unary_graph() -> Graph {
    let mut g = Graph::new("unary");
    let x = g.input("x", Shape::new(&[3, 37], DType::F32));
    let p = g.input("p", Shape::new(&[3, 37], DType::F32));
    let outs = rlx_ir::op_coverage::every_unary(&mut g, x, p);
    g.set_outputs(outs);
    g
}

/// One output per float binary op of [`BinaryOp::ALL`] (`And` / `Or` /
/// `Xor` are Bool-only) of `a [2, 3, 4]` and `b [3, 1]` broadcast; `pow`
/// takes the positive base `pos [2, 3, 4]`.
pub fn binary_graph() -> Graph {
    let mut g = Graph::new("binary");
    let a = g.input("a", Shape::new(&[2, 3, 4], DType::F32));
    let b = g.input("b", Shape::new(&[3, 1], DType::F32));
    let pos = g.input("pos", Shape::new(&[2, 3, 4], DType::F32));
    let outs = rlx_ir::op_coverage::every_binary(&mut g, a, b, pos);
    g.set_outputs(outs);
    g
}

/// The scan, pad and window kernels in one graph of `x [2, 4, 7, 6]` and
/// params `w [6, 2, 3, 2]`, `b [6]`: argmax / argmin, a reversed cumsum, a
/// reflect pad, a grouped strided dilated conv with bias, max and average
/// pooling with padding.
pub fn scans_and_windows() -> Graph {
    let mut g = Graph::new("scans_and_windows");
    let x = g.input("x", Shape::new(&[2, 4, 7, 6], DType::F32));
    let w = g.param("w", Shape::new(&[6, 2, 3, 2], DType::F32));
    let b = g.param("b", Shape::new(&[6], DType::F32));
    let win = |kernel: &[usize],
               stride: &[usize],
               padding: &[(usize, usize)],
               dilation: &[usize]| Window {
        kernel: kernel.to_vec(),
        stride: stride.to_vec(),
        padding: padding.to_vec(),
        dilation: dilation.to_vec(),
    };
    let outs = vec![
        g.argmax(x, 1, false),
        g.argmin(x, -1, true),
        g.cumsum(x, 2, false, true),
        g.pad_(x, &[(0, 0), (1, 0), (2, 3), (1, 1)], PadMode::Reflect),
        g.conv(
            x,
            w,
            Some(b),
            win(&[], &[2, 1], &[(1, 2), (0, 1)], &[1, 2]),
            2,
        ),
        g.pool(
            x,
            PoolKind::Max,
            win(&[3, 2], &[2, 3], &[(1, 1), (1, 0)], &[1, 1]),
            false,
        ),
        g.pool(
            x,
            PoolKind::Avg,
            win(&[3, 2], &[2, 3], &[(1, 1), (1, 0)], &[1, 1]),
            true,
        ),
    ];
    g.set_outputs(outs);
    g
}

/// `blocks` GGUF blocks of `scheme` with small f16 scales (and mins) and
/// every quant value pattern (random quant / high-bit bytes; K-quants:
/// random scale bytes too).
pub fn gguf_blocks(scheme: QuantScheme, blocks: usize, seed: u64) -> Vec<u8> {
    let mut s = seed;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 33) as u32
    };
    let half = |v: u32, lo: f32, hi: f32| {
        half::f16::from_f32(lo + (hi - lo) * (v % 1000) as f32 / 1000.0).to_le_bytes()
    };
    let mut out = Vec::new();
    // K-quants: random bytes, then finite f16 scales at their offsets.
    let k_quant = match scheme {
        QuantScheme::GgufQ4K => Some((144, &[0usize, 2][..])),
        QuantScheme::GgufQ5K => Some((176, &[0, 2][..])),
        QuantScheme::GgufQ6K => Some((210, &[208][..])),
        _ => None,
    };
    if let Some((size, halves)) = k_quant {
        for _ in 0..blocks {
            let mut b: Vec<u8> = (0..size).map(|_| (next() & 0xFF) as u8).collect();
            for &at in halves {
                b[at..at + 2].copy_from_slice(&half(next(), 0.001, 0.05));
            }
            out.extend(b);
        }
        return out;
    }
    // Q5_0 / Q5_1: random quant and high-bit bytes after the scales.
    let five = match scheme {
        QuantScheme::GgufQ5_0 => Some(20),
        QuantScheme::GgufQ5_1 => Some(20),
        _ => None,
    };
    for _ in 0..blocks {
        out.extend(half(next(), 0.01, 0.1));
        let quants = match scheme {
            QuantScheme::GgufQ4_1 | QuantScheme::GgufQ5_1 => {
                out.extend(half(next(), -0.5, 0.5));
                five.unwrap_or(16)
            }
            QuantScheme::GgufQ4_0 => 16,
            _ => five.unwrap_or(32),
        };
        for _ in 0..quants {
            out.push((next() & 0xFF) as u8);
        }
    }
    out
}

/// Named test tensors.
pub type Named = Vec<(&'static str, HostTensor)>;

/// gather_elements, scatter_add, top-k values and indices, linear and
/// nearest resizes, a strided grouped transposed conv with bias and a Q8_0
/// dequantize; with its inputs and params.
pub fn indexing_and_resampling() -> (Graph, Named, Named) {
    let mut g = Graph::new("indexing_and_resampling");
    let x = g.input("x", Shape::new(&[2, 5, 4], DType::F32));
    let idx = g.input("idx", Shape::new(&[2, 3, 4], DType::I64));
    let u = g.input("u", Shape::new(&[2, 3, 4], DType::F32));
    let a = g.input("a", Shape::new(&[1, 4, 3, 5], DType::F32));
    let q = g.input("q", Shape::new(&[12 * 34], DType::U8));
    let w = g.param("w", Shape::new(&[4, 3, 3, 2], DType::F32));
    let b = g.param("b", Shape::new(&[6], DType::F32));
    let (top, arg) = g.topk(x, 3, 1, true);
    let deq = rlx_ir::Op::Dequantize {
        scheme: QuantScheme::GgufQ8_0,
    };
    let dq = g
        .try_node(deq, &[q], Some(Shape::new(&[6, 64], DType::F32)))
        .unwrap();
    let outs = vec![
        g.gather_elements(x, idx, 1),
        g.scatter_add(x, idx, u, 1),
        top,
        arg,
        g.upsample(a, &[5, 7], InterpMode::Linear, false),
        g.upsample(a, &[2, 9], InterpMode::Nearest, false),
        g.conv_transpose2d(a, w, Some(b), [2, 1], [1, 0], [1, 0], 2),
        dq,
    ];
    g.set_outputs(outs);
    let idx: Vec<i64> = (0..24).map(|i| (i * 7 % 10) - 5).collect();
    let bytes = gguf_blocks(QuantScheme::GgufQ8_0, 12, 5);
    let inputs = vec![
        ("x", rand(&[2, 5, 4], -1.0, 1.0, 51)),
        ("idx", HostTensor::from_vec(idx, &[2, 3, 4]).unwrap()),
        ("u", rand(&[2, 3, 4], -1.0, 1.0, 52)),
        ("a", rand(&[1, 4, 3, 5], -1.0, 1.0, 53)),
        ("q", HostTensor::from_vec(bytes, &[12 * 34]).unwrap()),
    ];
    let params = vec![
        ("w", rand(&[4, 3, 3, 2], -1.0, 1.0, 54)),
        ("b", rand(&[6], -1.0, 1.0, 55)),
    ];
    (g, inputs, params)
}

/// `[b, a, 2a]` over params `a`, `b` (f32 `[5]`): updating `a` from output
/// 0 and `b` from output 1 swaps them, each read before the other changes.
pub fn swap_graph() -> Graph {
    let mut g = Graph::new("swap");
    let a = g.param("a", Shape::new(&[5], DType::F32));
    let b = g.param("b", Shape::new(&[5], DType::F32));
    let two = g.mul(a, g.constant(2.0, DType::F32));
    g.set_outputs(vec![b, a, two]);
    g
}
