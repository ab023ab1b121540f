//! A host interpreter of launch plans: each [`Kernel`] computed in f64 on
//! the plan's byte places, exactly as the CUDA kernels index them (layouts,
//! strides, offsets, GEMM transposes, in-place outputs). Run on the CPU
//! against the CPU backend, it checks what a plan computes — every
//! stride, offset and buffer placement — without a GPU.

use super::interp_indexing as more;
use rlx_cuda::geometry::{PadLayout, Window2d};
use rlx_cuda::kernels::{BinaryOp, ReduceOp, UnaryOp};
use rlx_cuda::plan::{Buf, Epilogue, GemmSpec, Kernel, LaunchPlan, Region};
use rlx_ir::{DType, HostTensor};

struct Memory<'a> {
    arena: Vec<u8>,
    params: Vec<&'a [u8]>,
    constants: &'a [rlx_ir::ConstBytes],
}

impl Memory<'_> {
    fn bytes(&self, b: &Buf) -> &[u8] {
        place(self.constants, &self.arena, &self.params, b)
    }

    fn values(&self, b: &Buf) -> Vec<f64> {
        let bytes = self.bytes(b);
        match b.dtype {
            DType::F32 => bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
                .collect(),
            DType::I32 => bytes
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes(c.try_into().unwrap()) as f64)
                .collect(),
            DType::I64 => bytes
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64)
                .collect(),
            DType::Bool => bytes.iter().map(|&b| f64::from(b)).collect(),
            other => panic!("the interpreter reads f32 / i32 / i64 / bool, not {other}"),
        }
    }

    fn store(&mut self, b: &Buf, v: &[f64]) {
        let out = &mut self.arena[b.byte..b.byte + b.bytes];
        match b.dtype {
            DType::F32 => {
                for (c, x) in out.chunks_exact_mut(4).zip(v) {
                    c.copy_from_slice(&(*x as f32).to_le_bytes());
                }
            }
            DType::I32 => {
                for (c, x) in out.chunks_exact_mut(4).zip(v) {
                    c.copy_from_slice(&(*x as i32).to_le_bytes());
                }
            }
            DType::I64 => {
                for (c, x) in out.chunks_exact_mut(8).zip(v) {
                    c.copy_from_slice(&(*x as i64).to_le_bytes());
                }
            }
            other => panic!("the interpreter writes f32 / i32 / i64, not {other}"),
        }
    }
}

/// Offsets of element `i` of `dims` (row-major) under two stride sets.
fn offsets(dims: &[usize], a: &[i64], b: &[i64], mut i: usize) -> (i64, i64) {
    let (mut oa, mut ob) = (0i64, 0i64);
    for d in (0..dims.len()).rev() {
        let idx = (i % dims[d]) as i64;
        i /= dims[d];
        oa += idx * a[d];
        ob += idx * b[d];
    }
    (oa, ob)
}

fn unary(op: UnaryOp, x: f64) -> f64 {
    match op {
        UnaryOp::Neg => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Rsqrt => 1.0 / x.sqrt(),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        UnaryOp::Relu => x.max(0.0),
        UnaryOp::Gelu => 0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2)),
        UnaryOp::GeluTanh => {
            0.5 * x * (1.0 + (0.7978845608028654 * (x + 0.044715 * x * x * x)).tanh())
        }
        UnaryOp::Silu => x / (1.0 + (-x).exp()),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Recip => 1.0 / x,
        UnaryOp::Square => x * x,
        UnaryOp::Floor => x.floor(),
        UnaryOp::Ceil => x.ceil(),
        UnaryOp::Round => x.round_ties_even(),
        UnaryOp::Sign => {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                x
            }
        }
        UnaryOp::Erf => erf(x),
        UnaryOp::Softplus => (1.0 + x.exp()).ln(),
    }
}

/// Numerical Recipes' erfc coefficients, outermost first.
const ERFC_COEFFS: [f64; 10] = [
    -1.26551223,
    1.00002368,
    0.37409196,
    0.09678418,
    -0.18628806,
    0.27886807,
    -1.13520398,
    1.48851587,
    -0.82215223,
    0.17087277,
];

/// erf: its Maclaurin series up to |x| = 3, Numerical Recipes' erfc
/// approximation (relative error under 1.2e-7) beyond.
fn erf(x: f64) -> f64 {
    if x.abs() > 3.0 {
        let t = 1.0 / (1.0 + 0.5 * x.abs());
        // Horner from the innermost coefficient (a loop: rustfmt takes
        // ~40 s on the nested form).
        let p = ERFC_COEFFS[1..9]
            .iter()
            .rev()
            .fold(ERFC_COEFFS[9], |acc, &c| c + t * acc);
        let y = 1.0 - t * (-x * x + ERFC_COEFFS[0] + t * p).exp();
        return y.copysign(x);
    }
    let (mut term, mut sum, mut n) = (x, x, 0.0);
    while term.abs() > 1e-17 {
        n += 1.0;
        term *= -x * x / n;
        sum += term / (2.0 * n + 1.0);
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

fn binary(op: BinaryOp, a: f64, b: f64) -> f64 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Max => a.max(b),
        BinaryOp::Min => a.min(b),
        BinaryOp::Pow => a.powf(b),
        BinaryOp::Mod => a - b * (a / b).floor(),
        BinaryOp::Atan2 => a.atan2(b),
    }
}

/// Runs `plan` on the host with `inputs` and `params` (manifest order);
/// returns the outputs' values.
pub fn interpret(
    plan: &LaunchPlan,
    inputs: &[&HostTensor],
    params: &[&HostTensor],
) -> Vec<Vec<f64>> {
    let params: Vec<&[u8]> = params.iter().map(|p| p.bytes()).collect();
    let m = Memory {
        arena: run_arena(plan, inputs, &params),
        params,
        constants: &plan.constants,
    };
    plan.outputs.iter().map(|b| m.values(b)).collect()
}

/// The bytes of place `b` in an arena, the params and a plan's constants.
pub fn place<'a>(
    constants: &'a [rlx_ir::ConstBytes],
    arena: &'a [u8],
    params: &[&'a [u8]],
    b: &Buf,
) -> &'a [u8] {
    let all: &[u8] = match b.region {
        Region::Arena => arena,
        Region::Param(i) => params[i],
        Region::Const(i) => &constants[i],
    };
    &all[b.byte..b.byte + b.bytes]
}

/// Runs `plan`'s steps on the host; returns the arena they leave.
pub fn run_arena(plan: &LaunchPlan, inputs: &[&HostTensor], params: &[&[u8]]) -> Vec<u8> {
    let mut m = Memory {
        arena: vec![0xAB; plan.arena_bytes], // garbage: a missed write shows
        params: params.to_vec(),
        constants: &plan.constants,
    };
    for ((_, b), t) in plan.inputs.iter().zip(inputs) {
        m.arena[b.byte..b.byte + b.bytes].copy_from_slice(t.bytes());
    }
    for step in &plan.steps {
        let out = step.output;
        let n = out.numel();
        let x = |k: usize, m: &Memory| m.values(&step.inputs[k]);
        let y: Vec<f64> = match &step.kernel {
            Kernel::Unary(op) => x(0, &m).into_iter().map(|v| unary(*op, v)).collect(),
            Kernel::Binary {
                op,
                dims,
                a_strides,
                b_strides,
            } => {
                let (a, b) = (x(0, &m), x(1, &m));
                (0..n)
                    .map(|i| {
                        let (oa, ob) = offsets(dims, a_strides, b_strides, i);
                        binary(*op, a[oa as usize], b[ob as usize])
                    })
                    .collect()
            }
            Kernel::Reduce {
                op,
                shape: [outer, len, inner],
            } => {
                let v = x(0, &m);
                let mut y = Vec::with_capacity(n);
                for o in 0..*outer {
                    for i in 0..*inner {
                        let it = (0..*len).map(|k| v[(o * len + k) * inner + i]);
                        y.push(match op {
                            ReduceOp::Sum => it.sum(),
                            ReduceOp::Mean => it.sum::<f64>() / *len as f64,
                            ReduceOp::Max => it.fold(f64::NEG_INFINITY, f64::max),
                            ReduceOp::Min => it.fold(f64::INFINITY, f64::min),
                        });
                    }
                }
                y
            }
            Kernel::Softmax {
                shape: [_, len],
                log,
            } => {
                let v = x(0, &m);
                v.chunks(*len)
                    .flat_map(|r| {
                        let mx = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        let s: f64 = r.iter().map(|a| (a - mx).exp()).sum();
                        r.iter()
                            .map(|a| {
                                if *log {
                                    a - mx - s.ln()
                                } else {
                                    (a - mx).exp() / s
                                }
                            })
                            .collect::<Vec<_>>()
                    })
                    .collect()
            }
            Kernel::LayerNorm {
                shape: [_, len],
                eps,
            }
            | Kernel::RmsNorm {
                shape: [_, len],
                eps,
            } => {
                let rms = matches!(step.kernel, Kernel::RmsNorm { .. });
                let v = x(0, &m);
                let gamma = (step.inputs.len() > 1).then(|| x(1, &m));
                let beta = (step.inputs.len() > 2).then(|| x(2, &m));
                v.chunks(*len)
                    .flat_map(|r| {
                        let mean = if rms {
                            0.0
                        } else {
                            r.iter().sum::<f64>() / *len as f64
                        };
                        let var =
                            r.iter().map(|a| (a - mean) * (a - mean)).sum::<f64>() / *len as f64;
                        let inv = 1.0 / (var + *eps as f64).sqrt();
                        (0..*len)
                            .map(|k| {
                                let mut o = (r[k] - mean) * inv;
                                if let Some(g) = &gamma {
                                    o *= g[k];
                                }
                                if let Some(b) = &beta {
                                    o += b[k];
                                }
                                o
                            })
                            .collect::<Vec<_>>()
                    })
                    .collect()
            }
            Kernel::Gather { rows, row_len } => {
                let (table, idx) = (x(0, &m), x(1, &m));
                idx.iter()
                    .flat_map(|&r| {
                        let r = if r < 0.0 {
                            r as i64 + *rows as i64
                        } else {
                            r as i64
                        } as usize;
                        table[r * row_len..(r + 1) * row_len].to_vec()
                    })
                    .collect()
            }
            Kernel::Copy { width, pieces } => {
                for (p, src) in pieces.iter().zip(&step.inputs) {
                    let from = m.bytes(src).to_vec();
                    let count: usize = p.dims.iter().product();
                    for i in 0..count {
                        let (ox, oy) = offsets(&p.dims, &p.x_strides, &p.y_strides, i);
                        let s = ((p.x_offset + ox) as usize) * width;
                        let d = out.byte + ((p.y_offset + oy) as usize) * width;
                        m.arena[d..d + width].copy_from_slice(&from[s..s + width]);
                    }
                }
                continue;
            }
            Kernel::Cast { .. } => x(0, &m)
                .into_iter()
                .map(|v| {
                    if out.dtype == DType::F32 {
                        v
                    } else {
                        v.trunc()
                    }
                })
                .collect(),
            Kernel::Compare {
                code,
                dims,
                a_strides,
                b_strides,
                ..
            } => {
                let (a, b) = (x(0, &m), x(1, &m));
                let bytes: Vec<u8> = (0..n)
                    .map(|i| {
                        let (oa, ob) = offsets(dims, a_strides, b_strides, i);
                        let (a, b) = (a[oa as usize], b[ob as usize]);
                        u8::from(match code {
                            0 => a == b,
                            1 => a != b,
                            2 => a < b,
                            3 => a <= b,
                            4 => a > b,
                            _ => a >= b,
                        })
                    })
                    .collect();
                m.arena[out.byte..out.byte + n].copy_from_slice(&bytes);
                continue;
            }
            Kernel::Select {
                width,
                dims,
                c_strides,
                a_strides,
                b_strides,
            } => {
                let (c, a, b) = (
                    m.bytes(&step.inputs[0]).to_vec(),
                    m.bytes(&step.inputs[1]).to_vec(),
                    m.bytes(&step.inputs[2]).to_vec(),
                );
                for i in 0..n {
                    let (oc, oa) = offsets(dims, c_strides, a_strides, i);
                    let (ob, _) = offsets(dims, b_strides, b_strides, i);
                    let (src, at) = if c[oc as usize] != 0 {
                        (&a, oa)
                    } else {
                        (&b, ob)
                    };
                    let (s0, d0) = (at as usize * width, out.byte + i * width);
                    m.arena[d0..d0 + width].copy_from_slice(&src[s0..s0 + width]);
                }
                continue;
            }
            Kernel::Iota {
                inner,
                len,
                start,
                step,
            } => (0..n)
                .map(|i| start + step * ((i / inner) % len) as f64)
                .collect(),
            Kernel::Gemm(s) => gemm(s, &x(0, &m), &x(1, &m)),
            Kernel::GemmBias { gemm: s, epilogue } => {
                let bias = x(2, &m);
                let c = gemm(s, &x(0, &m), &x(1, &m));
                c.iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let v = v + bias[i % s.n];
                        match epilogue {
                            Epilogue::Bias => v,
                            Epilogue::BiasRelu => unary(UnaryOp::Relu, v),
                            Epilogue::BiasGeluTanh => unary(UnaryOp::GeluTanh, v),
                        }
                    })
                    .collect()
            }
            Kernel::ArgReduce { argmin, shape } => arg_reduce(&x(0, &m), *shape, *argmin),
            Kernel::Cumsum {
                shape,
                exclusive,
                reverse,
            } => cumsum(&x(0, &m), *shape, *exclusive, *reverse),
            Kernel::Pad {
                layout, mode, fill, ..
            } => pad(&x(0, &m), layout, *mode, fill_value(*fill, out.dtype)),
            Kernel::Conv2d(w) => {
                let bias = (step.inputs.len() > 2).then(|| x(2, &m));
                conv2d(&x(0, &m), &x(1, &m), bias.as_deref(), w)
            }
            Kernel::Pool2d {
                window,
                avg,
                count_include_pad,
            } => pool2d(&x(0, &m), window, *avg, *count_include_pad),
            Kernel::ConvTranspose2d(w) => {
                let bias = (step.inputs.len() > 2).then(|| x(2, &m));
                more::conv_transpose2d(&x(0, &m), &x(1, &m), bias.as_deref(), w)
            }
            Kernel::GatherElements(a) => more::gather_elements(&x(0, &m), &x(1, &m), a),
            Kernel::ScatterAdd(a) => more::scatter_add(&x(0, &m), &x(1, &m), &x(2, &m), a),
            Kernel::TopK {
                shape,
                k,
                largest,
                indices,
            } => more::topk(&x(0, &m), *shape, *k, *largest, *indices),
            Kernel::Resize(r) => more::resize(&x(0, &m), r),
            Kernel::Dequantize { format } => more::dequantize(m.bytes(&step.inputs[0]), format),
        };
        m.store(&out, &y);
    }
    m.arena
}

/// A planned GEMM ([`GemmSpec`]) in f64.
fn gemm(s: &GemmSpec, a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut c = vec![0.0; s.batch * s.m * s.n];
    for bt in 0..s.batch {
        let (ab, bb) = (bt * s.stride_a, bt * s.stride_b);
        for i in 0..s.m {
            for j in 0..s.n {
                let mut acc = 0.0;
                for k in 0..s.k {
                    let av = if s.trans_a {
                        a[ab + k * s.m + i]
                    } else {
                        a[ab + i * s.k + k]
                    };
                    let bv = if s.trans_b {
                        b[bb + j * s.k + k]
                    } else {
                        b[bb + k * s.n + j]
                    };
                    acc += av * bv;
                }
                c[(bt * s.m + i) * s.n + j] = acc;
            }
        }
    }
    c
}

/// The lines of `[outer, n, inner]` along `n`: each line's flat indices.
fn lines([outer, len, inner]: [usize; 3]) -> impl Iterator<Item = Vec<usize>> {
    (0..outer).flat_map(move |o| {
        (0..inner).map(move |i| (0..len).map(|k| (o * len + k) * inner + i).collect())
    })
}

/// numpy `argmax` / `argmin` per line: the first NaN, else the first extremum.
fn arg_reduce(v: &[f64], shape: [usize; 3], argmin: bool) -> Vec<f64> {
    lines(shape)
        .map(|line| {
            let vals: Vec<f64> = line.iter().map(|&i| v[i]).collect();
            let pick = vals.iter().position(|a| a.is_nan()).unwrap_or_else(|| {
                let better = |a: f64, b: f64| if argmin { a < b } else { a > b };
                (1..vals.len()).fold(
                    0,
                    |best, k| {
                        if better(vals[k], vals[best]) {
                            k
                        } else {
                            best
                        }
                    },
                )
            });
            pick as f64
        })
        .collect()
}

/// Cumulative sums per line; exclusive sums leave each element out,
/// reversed ones run from the line's end.
fn cumsum(v: &[f64], shape: [usize; 3], exclusive: bool, reverse: bool) -> Vec<f64> {
    let mut y = vec![0.0; v.len()];
    for mut line in lines(shape) {
        if reverse {
            line.reverse();
        }
        let mut before = 0.0;
        for &i in &line {
            y[i] = if exclusive { before } else { before + v[i] };
            before += v[i];
        }
    }
    y
}

/// The pad's constant read back as the output's element type.
fn fill_value(bits: u64, dtype: DType) -> f64 {
    match dtype {
        DType::F32 => f32::from_bits(bits as u32) as f64,
        DType::I32 => bits as u32 as i32 as f64,
        DType::I64 => bits as i64 as f64,
        other => panic!("the interpreter pads f32 / i32 / i64, not {other}"),
    }
}

/// numpy `pad`: mode 0 constant, 1 reflect (mirror, edge not repeated,
/// folded again while outside), 2 edge.
fn pad(v: &[f64], l: &PadLayout, mode: i32, fill: f64) -> Vec<f64> {
    let r = l.rank as usize;
    let (out, inp, before) = (&l.out_dims[..r], &l.in_dims[..r], &l.before[..r]);
    let total: i64 = out.iter().product();
    (0..total)
        .map(|flat| {
            let mut rest = flat;
            let mut coord = vec![0i64; r];
            for d in (0..r).rev() {
                coord[d] = rest % out[d];
                rest /= out[d];
            }
            let mut src = 0i64;
            for d in 0..r {
                let (n, mut c) = (inp[d], coord[d] - before[d]);
                if !(0..n).contains(&c) {
                    match mode {
                        0 => return fill,
                        2 => c = c.clamp(0, n - 1),
                        _ => {
                            while !(0..n).contains(&c) {
                                c = if c < 0 { -c } else { 2 * (n - 1) - c };
                            }
                        }
                    }
                }
                src = src * n + c;
            }
            v[src as usize]
        })
        .collect()
}

/// Input coordinate of output cell `o`, tap `k` along one spatial axis.
fn tap(o: i64, k: i64, stride: i64, pad: i64, dilation: i64) -> i64 {
    o * stride - pad + k * dilation
}

/// Grouped NCHW cross-correlation with zero padding and an optional bias.
fn conv2d(x: &[f64], wt: &[f64], bias: Option<&[f64]>, g: &Window2d) -> Vec<f64> {
    let (cpg, opg) = (g.in_c / g.groups, g.out_c / g.groups);
    let mut y = Vec::new();
    for n in 0..g.batch {
        for o in 0..g.out_c {
            let group = o / opg;
            for oy in 0..g.oh {
                for ox in 0..g.ow {
                    let mut acc = bias.map_or(0.0, |b| b[o as usize]);
                    for c in 0..cpg {
                        let ci = group * cpg + c;
                        for i in 0..g.kh {
                            for j in 0..g.kw {
                                let (yi, xi) =
                                    (tap(oy, i, g.sh, g.ph, g.dh), tap(ox, j, g.sw, g.pw, g.dw));
                                if (0..g.h).contains(&yi) && (0..g.w).contains(&xi) {
                                    let xv =
                                        x[(((n * g.in_c + ci) * g.h + yi) * g.w + xi) as usize];
                                    let wv = wt[(((o * cpg + c) * g.kh + i) * g.kw + j) as usize];
                                    acc += xv * wv;
                                }
                            }
                        }
                    }
                    y.push(acc);
                }
            }
        }
    }
    y
}

/// Max / average pooling per channel plane: padding never wins a max; an
/// average divides by the taps inside x, or with `count_include_pad` by
/// the taps inside the padded input.
fn pool2d(x: &[f64], g: &Window2d, avg: bool, count_include_pad: bool) -> Vec<f64> {
    let mut y = Vec::new();
    for plane in 0..g.batch * g.in_c {
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let (mut vals, mut padded) = (Vec::new(), 0);
                for i in 0..g.kh {
                    for j in 0..g.kw {
                        let (yi, xi) = (tap(oy, i, g.sh, g.ph, g.dh), tap(ox, j, g.sw, g.pw, g.dw));
                        if yi + g.ph < g.eh && xi + g.pw < g.ew {
                            padded += 1;
                        }
                        if (0..g.h).contains(&yi) && (0..g.w).contains(&xi) {
                            vals.push(x[((plane * g.h + yi) * g.w + xi) as usize]);
                        }
                    }
                }
                y.push(if avg {
                    let count = if count_include_pad {
                        padded
                    } else {
                        vals.len()
                    };
                    vals.iter().sum::<f64>() / count as f64
                } else {
                    vals.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                });
            }
        }
    }
    y
}
