//! The standard workloads, built with the public graph API.
//!
//! Every pattern's name is also its id in `tools/bench_ref.py`, which builds
//! the same computation (same shapes, same math) in numpy or JAX.

use crate::BenchmarkPattern;
use rlx_ir::op::MaskKind;
use rlx_ir::{DType, Graph, GraphExt, NodeId, Shape};

/// Deterministic values in `[-scale, scale)` (splitmix64 of the index).
pub fn values(len: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..len)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn f32_shape(dims: &[usize]) -> Shape {
    Shape::new(dims, DType::F32)
}

/// Collects params and inputs with generated values while a graph is built.
struct Builder {
    g: Graph,
    params: Vec<(String, Vec<f32>)>,
    inputs: Vec<(String, Vec<f32>)>,
}

impl Builder {
    fn new(name: &str) -> Builder {
        Builder {
            g: Graph::new(name),
            params: Vec::new(),
            inputs: Vec::new(),
        }
    }
    /// A parameter initialised uniformly in `±1/sqrt(fan_in)` (`fan_in` 0: zeros).
    fn param(&mut self, name: &str, dims: &[usize], fan_in: usize) -> NodeId {
        let n = dims.iter().product();
        let v = if fan_in == 0 {
            vec![0.0; n]
        } else {
            values(
                n,
                self.params.len() as u64 + 1,
                (fan_in as f32).sqrt().recip(),
            )
        };
        self.params.push((name.to_string(), v));
        self.g.param(name, f32_shape(dims))
    }
    fn input(&mut self, name: &str, dims: &[usize]) -> NodeId {
        let n = dims.iter().product();
        let seed = 1000 + self.inputs.len() as u64;
        self.inputs.push((name.to_string(), values(n, seed, 1.0)));
        self.g.input(name, f32_shape(dims))
    }
    /// `x @ w + b` with fresh parameters `{name}.w`, `{name}.b`.
    fn linear(&mut self, name: &str, x: NodeId, fan_in: usize, fan_out: usize) -> NodeId {
        let w = self.param(&format!("{name}.w"), &[fan_in, fan_out], fan_in);
        let b = self.param(&format!("{name}.b"), &[fan_out], 0);
        let y = self.g.mm(x, w);
        self.g.add(y, b)
    }
    fn finish(mut self, name: String, out: NodeId, flops: f64) -> BenchmarkPattern {
        self.g.set_outputs(vec![out]);
        BenchmarkPattern {
            name,
            flops,
            graph: self.g,
            params: self.params,
            inputs: self.inputs,
            sgd: None,
        }
    }
}

/// `x @ w` for square `n x n` f32 matrices.
pub fn matmul(n: usize) -> BenchmarkPattern {
    let mut b = Builder::new("matmul");
    let x = b.input("x", &[n, n]);
    let w = b.param("w", &[n, n], n);
    let y = b.g.mm(x, w);
    b.finish(format!("matmul_{n}"), y, 2.0 * (n as f64).powi(3))
}

/// `x @ w` with `x` `1 x k`, `w` `k x n` (GEMV).
pub fn gemv(k: usize, n: usize) -> BenchmarkPattern {
    let mut b = Builder::new("gemv");
    let x = b.input("x", &[1, k]);
    let w = b.param("w", &[k, n], k);
    let y = b.g.mm(x, w);
    b.finish(format!("gemv_{k}x{n}"), y, 2.0 * (k * n) as f64)
}

/// `gelu(x @ w)` (exact GELU), `x` `m x k`, `w` `k x n`.
pub fn matmul_gelu(m: usize, k: usize, n: usize) -> BenchmarkPattern {
    let mut b = Builder::new("matmul_gelu");
    let x = b.input("x", &[m, k]);
    let w = b.param("w", &[k, n], k);
    let y = b.g.mm(x, w);
    let y = b.g.gelu(y);
    b.finish(
        format!("matmul_gelu_{m}x{k}x{n}"),
        y,
        2.0 * (m * k * n) as f64,
    )
}

/// Transformer FFN: `gelu(x @ w1 + b1) @ w2 + b2`, `x` `seq x hidden`.
pub fn ffn(seq: usize, hidden: usize, inner: usize) -> BenchmarkPattern {
    let mut b = Builder::new("ffn");
    let x = b.input("x", &[seq, hidden]);
    let y = ffn_block(&mut b, x, hidden, inner);
    let flops = 4.0 * (seq * hidden * inner) as f64;
    b.finish(format!("ffn_{seq}x{hidden}x{inner}"), y, flops)
}

fn ffn_block(b: &mut Builder, x: NodeId, hidden: usize, inner: usize) -> NodeId {
    let h = b.linear("ffn1", x, hidden, inner);
    let h = b.g.gelu(h);
    b.linear("ffn2", h, inner, hidden)
}

/// Scaled dot-product attention without mask: `q, k, v` `heads x seq x dim`.
pub fn attention(heads: usize, seq: usize, dim: usize) -> BenchmarkPattern {
    let mut b = Builder::new("attention");
    let q = b.input("q", &[heads, seq, dim]);
    let k = b.input("k", &[heads, seq, dim]);
    let v = b.input("v", &[heads, seq, dim]);
    let o = b.g.attention_(q, k, v, MaskKind::None, None);
    let flops = 4.0 * (heads * seq * seq * dim) as f64;
    b.finish(format!("attention_{heads}x{seq}x{dim}"), o, flops)
}

/// One post-norm BERT encoder layer (self-attention + FFN, each with a
/// residual and layer norm), `x` `seq x hidden`, FFN width `4 * hidden`.
pub fn bert_layer(seq: usize, hidden: usize, heads: usize) -> BenchmarkPattern {
    let mut b = Builder::new("bert_layer");
    let x = b.input("x", &[seq, hidden]);
    let dh = hidden / heads;
    let split = |b: &mut Builder, name: &str| {
        let t = b.linear(name, x, hidden, hidden);
        let t = b.g.reshape_(t, &[seq as i64, heads as i64, dh as i64]);
        b.g.transpose_(t, &[1, 0, 2])
    };
    let (q, k, v) = (split(&mut b, "q"), split(&mut b, "k"), split(&mut b, "v"));
    let a = b.g.attention_(q, k, v, MaskKind::None, None);
    let a = b.g.transpose_(a, &[1, 0, 2]);
    let a = b.g.reshape_(a, &[seq as i64, hidden as i64]);
    let a = b.linear("o", a, hidden, hidden);
    let h = b.g.add(a, x);
    let (g1, b1) = (
        b.param("ln1.g", &[hidden], 1),
        b.param("ln1.b", &[hidden], 0),
    );
    let h = b.g.ln(h, g1, b1, 1e-12);
    let f = ffn_block(&mut b, h, hidden, 4 * hidden);
    let f = b.g.add(f, h);
    let (g2, b2) = (
        b.param("ln2.g", &[hidden], 1),
        b.param("ln2.b", &[hidden], 0),
    );
    let y = b.g.ln(f, g2, b2, 1e-12);
    let flops =
        2.0 * (seq * hidden * hidden) as f64 * (4.0 + 8.0) + 4.0 * (seq * seq * hidden) as f64;
    b.finish(format!("bert_layer_{seq}x{hidden}x{heads}"), y, flops)
}

/// Ten elementwise ops on a small vector: measures per-op dispatch cost.
/// `log(sqrt(|tanh(1.5 x + 0.5) * x - x|) + 1)` then ReLU.
pub fn elementwise_chain(len: usize) -> BenchmarkPattern {
    let mut b = Builder::new("elementwise10");
    let x = b.input("x", &[len]);
    let g = &mut b.g;
    let h = g.mul(x, g.constant(1.5, DType::F32));
    let h = g.add(h, g.constant(0.5, DType::F32));
    let h = g.tanh(h);
    let h = g.mul(h, x);
    let h = g.sub(h, x);
    let h = g.abs(h);
    let h = g.sqrt(h);
    let h = g.add(h, g.constant(1.0, DType::F32));
    let h = g.log(h);
    let h = g.relu(h);
    b.finish(format!("elementwise10_{len}"), h, 0.0)
}

/// One SGD step of an MLP classifier: `relu(x @ w1 + b1) @ w2 + b2`, mean
/// softmax cross-entropy against one-hot labels, gradients by
/// `grad_with_loss`, `p -= 0.1 * grad`. `dims` = input, hidden, classes.
pub fn mlp_train_step(batch: usize, dims: [usize; 3]) -> BenchmarkPattern {
    let [d_in, d_hidden, d_out] = dims;
    let mut b = Builder::new("mlp");
    let x = b.input("x", &[batch, d_in]);
    let y = b.g.input("y", f32_shape(&[batch, d_out]));
    let mut onehot = vec![0.0; batch * d_out];
    for r in 0..batch {
        onehot[r * d_out + (r * 7 + 3) % d_out] = 1.0;
    }
    b.inputs.push(("y".into(), onehot));
    let h = b.linear("l1", x, d_in, d_hidden);
    let h = b.g.relu(h);
    let z = b.linear("l2", h, d_hidden, d_out);
    let lp = b.g.log_softmax(z, -1);
    let picked = b.g.mul(y, lp);
    let s = b.g.sum(picked, &[0, 1], false);
    let loss = b.g.mul(s, b.g.constant(-1.0 / batch as f64, DType::F32));
    let fwd = 2.0 * (batch * (d_in * d_hidden + d_hidden * d_out)) as f64;
    let name = format!("mlp_step_{batch}x{d_in}x{d_hidden}x{d_out}");
    let mut p = b.finish(name, loss, 3.0 * fwd);
    p.sgd = Some(0.1);
    p
}

/// The patterns `BENCHMARKS.md` records, cheapest first.
pub fn standard() -> Vec<BenchmarkPattern> {
    vec![
        elementwise_chain(64),
        mlp_train_step(64, [784, 256, 10]),
        gemv(4096, 4096),
        matmul(512),
        matmul(1024),
        matmul(2048),
        matmul_gelu(128, 768, 3072),
        ffn(128, 768, 3072),
        attention(12, 128, 64),
        bert_layer(128, 768, 12),
    ]
}
