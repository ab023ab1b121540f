//! The same models written the ways RLX offers, run on the same weights:
//!
//! 1. the graph API (`Graph` + `GraphExt`, node by node),
//! 2. the `Tensor` DSL (`rlx::tensor`, jax.numpy style) inside `graph(..)`,
//! 3. `#[rlx_model]`: a struct of `Tensor` params with a `forward` method,
//!    compiled lazily on the first call,
//! 4. `rlx!`: the declarative language, names and shapes checked while the
//!    macro expands (sizes are literals there: the checker sees tokens).
//!
//! Models: the digits MLP of `train_digits` (64-128-10, tanh) on real
//! digits images, and a MiniLM-style encoder layer (2-head self-attention,
//! residual + LayerNorm, GELU feed-forward, residual + LayerNorm). The
//! example prints each way's outputs and fails unless they are identical.
//!
//! `cargo run -p rlx --example dsl_tour`
//!
//! With `-- --bench` it also times, in the same run, the `Tensor` versions
//! against the graph-API ones (an MLP training step, the encoder layer) and,
//! with `--features eval`, a repeated 10-op eager expression on 64 floats
//! (rows of BENCHMARKS.md):
//! `cargo run --release -p rlx --features eval --example dsl_tour -- --bench`
use flate2::read::GzDecoder;
use rlx::prelude::*;
use rlx::tensor::{nn, Model, ModelDef};
use std::io::Read;

const IN: usize = 64;
const HIDDEN: usize = 128;
const CLASSES: usize = 10;
const BATCH: usize = 8;

const SEQ: usize = 8;
const D: usize = 32;
const HEADS: usize = 2;
const DH: usize = D / HEADS;
const FF: usize = 64;
const EPS: f64 = 1e-12;

/// A deterministic generator (splitmix64) for the weights.
struct Rng(u64);
impl Rng {
    fn uniform(&mut self, bound: f32) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * bound
    }
    fn tensor(&mut self, dims: &[usize], bound: f32) -> HostTensor {
        let n = dims.iter().product();
        let v: Vec<f32> = (0..n).map(|_| self.uniform(bound)).collect();
        HostTensor::from_vec(v, dims).expect("dims match")
    }
}

fn f32s(dims: &[usize]) -> Shape {
    Shape::new(dims, DType::F32)
}

// ---------------------------------------------------------------- MLP

/// 1. Graph API (as in `train_digits`).
fn mlp_graph() -> Graph {
    let mut g = Graph::new("digits_mlp");
    let x = g.input("arg0", f32s(&[BATCH, IN]));
    let w1 = g.param("w1", f32s(&[IN, HIDDEN]));
    let b1 = g.param("b1", f32s(&[HIDDEN]));
    let w2 = g.param("w2", f32s(&[HIDDEN, CLASSES]));
    let b2 = g.param("b2", f32s(&[CLASSES]));
    let h = g.mm(x, w1);
    let h = g.add(h, b1);
    let h = g.tanh(h);
    let o = g.mm(h, w2);
    let o = g.add(o, b2);
    g.set_outputs(vec![o]);
    g
}

/// 2. Tensor DSL.
fn mlp_tensor() -> rlx::tensor::Result<Graph> {
    graph("digits_mlp", |s| {
        let x = s.input("arg0", shape![(BATCH), (IN)]);
        let w1 = s.param("w1", shape![(IN), (HIDDEN)]);
        let b1 = s.param("b1", shape![(HIDDEN)]);
        let w2 = s.param("w2", shape![(HIDDEN), (CLASSES)]);
        let b2 = s.param("b2", shape![(CLASSES)]);
        (x.matmul(&w1) + &b1).tanh().matmul(&w2) + &b2
    })
}

/// 3. `#[rlx_model]`.
#[rlx_model]
struct DigitsMlp {
    #[param(shape = [IN, HIDDEN])]
    w1: Tensor,
    #[param(shape = [HIDDEN])]
    b1: Tensor,
    #[param(shape = [HIDDEN, CLASSES])]
    w2: Tensor,
    #[param(shape = [CLASSES])]
    b2: Tensor,
}

impl DigitsMlp {
    fn forward(&self, x: &Tensor) -> Tensor {
        (x.matmul(&self.w1) + &self.b1).tanh().matmul(&self.w2) + &self.b2
    }
}

/// 4. `rlx!` (64-128-10 as literals: the macro checks shapes at expansion).
fn mlp_rlx() -> Graph {
    rlx! {
        graph digits_mlp;
        input arg0: f32[8, 64];
        param w1: f32[64, 128];
        param b1: f32[128];
        param w2: f32[128, 10];
        param b2: f32[10];
        out logits = tanh(arg0 @ w1 + b1) @ w2 + b2;
    }
}

// ---------------------------------------------------------------- encoder layer

/// 1. Graph API.
fn encoder_graph() -> Graph {
    let mut g = Graph::new("encoder_layer");
    let x = g.input("arg0", f32s(&[SEQ, D]));
    let p = |g: &mut Graph, n: &str, dims: &[usize]| g.param(n, f32s(dims));
    let (wq, bq) = (p(&mut g, "wq", &[D, D]), p(&mut g, "bq", &[D]));
    let (wk, bk) = (p(&mut g, "wk", &[D, D]), p(&mut g, "bk", &[D]));
    let (wv, bv) = (p(&mut g, "wv", &[D, D]), p(&mut g, "bv", &[D]));
    let (wo, bo) = (p(&mut g, "wo", &[D, D]), p(&mut g, "bo", &[D]));
    let (g1, be1) = (p(&mut g, "ln1_g", &[D]), p(&mut g, "ln1_b", &[D]));
    let (wi, bi) = (p(&mut g, "wi", &[D, FF]), p(&mut g, "bi", &[FF]));
    let (wf, bf) = (p(&mut g, "wf", &[FF, D]), p(&mut g, "bf", &[D]));
    let (g2, be2) = (p(&mut g, "ln2_g", &[D]), p(&mut g, "ln2_b", &[D]));
    // [SEQ, D] -> [HEADS, SEQ, DH]
    let heads = |g: &mut Graph, w, b| {
        let t = g.mm(x, w);
        let t = g.add(t, b);
        let t = g.reshape(t, f32s(&[SEQ, HEADS, DH]));
        g.transpose(t, &[1, 0, 2], f32s(&[HEADS, SEQ, DH]))
    };
    let q = heads(&mut g, wq, bq);
    let k = heads(&mut g, wk, bk);
    let v = heads(&mut g, wv, bv);
    let kt = g.transpose(k, &[0, 2, 1], f32s(&[HEADS, DH, SEQ]));
    let scores = g.mm(q, kt);
    let scores = g.mul(scores, 1.0 / (DH as f64).sqrt());
    let probs = g.softmax(scores, 2, f32s(&[HEADS, SEQ, SEQ]));
    let ctx = g.mm(probs, v);
    let ctx = g.transpose(ctx, &[1, 0, 2], f32s(&[SEQ, HEADS, DH]));
    let ctx = g.reshape(ctx, f32s(&[SEQ, D]));
    let attn = g.mm(ctx, wo);
    let attn = g.add(attn, bo);
    let h = g.add(x, attn);
    let h = g.layer_norm(h, g1, be1, EPS, f32s(&[SEQ, D]));
    let f = g.mm(h, wi);
    let f = g.add(f, bi);
    let f = g.gelu(f);
    let f = g.mm(f, wf);
    let f = g.add(f, bf);
    let y = g.add(h, f);
    let y = g.layer_norm(y, g2, be2, EPS, f32s(&[SEQ, D]));
    g.set_outputs(vec![y]);
    g
}

/// 2 and 3: `#[rlx_model]`, whose `forward` is plain `Tensor` code (the
/// Tensor-DSL way of writing the layer; `Model` compiles it).
#[rlx_model]
struct EncoderLayer {
    #[param(shape = [D, D])]
    wq: Tensor,
    #[param(shape = [D])]
    bq: Tensor,
    #[param(shape = [D, D])]
    wk: Tensor,
    #[param(shape = [D])]
    bk: Tensor,
    #[param(shape = [D, D])]
    wv: Tensor,
    #[param(shape = [D])]
    bv: Tensor,
    #[param(shape = [D, D])]
    wo: Tensor,
    #[param(shape = [D])]
    bo: Tensor,
    #[param(shape = [D])]
    ln1_g: Tensor,
    #[param(shape = [D])]
    ln1_b: Tensor,
    #[param(shape = [D, FF])]
    wi: Tensor,
    #[param(shape = [FF])]
    bi: Tensor,
    #[param(shape = [FF, D])]
    wf: Tensor,
    #[param(shape = [D])]
    bf: Tensor,
    #[param(shape = [D])]
    ln2_g: Tensor,
    #[param(shape = [D])]
    ln2_b: Tensor,
}

impl EncoderLayer {
    fn forward(&self, x: &Tensor) -> Tensor {
        let heads = |w: &Tensor, b: &Tensor| {
            (x.matmul(w) + b)
                .reshape(&[SEQ as i64, HEADS as i64, DH as i64])
                .transpose(&[1, 0, 2])
        };
        let (q, k, v) = (
            heads(&self.wq, &self.bq),
            heads(&self.wk, &self.bk),
            heads(&self.wv, &self.bv),
        );
        let scores = q.matmul(&k.transpose(&[0, 2, 1])) * (1.0 / (DH as f64).sqrt());
        let ctx = nn::softmax(&scores, -1)
            .matmul(&v)
            .transpose(&[1, 0, 2])
            .reshape(&[SEQ as i64, D as i64]);
        let h = nn::layer_norm(
            &(x + (ctx.matmul(&self.wo) + &self.bo)),
            Some(&self.ln1_g),
            Some(&self.ln1_b),
            EPS,
        );
        let f = (h.matmul(&self.wi) + &self.bi).gelu().matmul(&self.wf) + &self.bf;
        nn::layer_norm(&(&h + f), Some(&self.ln2_g), Some(&self.ln2_b), EPS)
    }
}

/// Way 4, `rlx!`: seq 8, hidden 32, 2 heads of 16, ffn 64; the scale
/// `1 / sqrt(16)` is the graph API's multiply by 0.25.
fn encoder_rlx() -> Graph {
    rlx! {
        graph encoder_layer;
        input arg0: f32[8, 32];
        param wq: f32[32, 32];
        param bq: f32[32];
        param wk: f32[32, 32];
        param bk: f32[32];
        param wv: f32[32, 32];
        param bv: f32[32];
        param wo: f32[32, 32];
        param bo: f32[32];
        param ln1_g: f32[32];
        param ln1_b: f32[32];
        param wi: f32[32, 64];
        param bi: f32[64];
        param wf: f32[64, 32];
        param bf: f32[32];
        param ln2_g: f32[32];
        param ln2_b: f32[32];
        fn heads(t) = transpose(reshape(t, [8, 2, 16]), [1, 0, 2]);
        let q = heads(arg0 @ wq + bq);
        let k = heads(arg0 @ wk + bk);
        let v = heads(arg0 @ wv + bv);
        let probs = softmax(q @ transpose(k, [0, 2, 1]) * 0.25, axis=-1);
        let ctx = reshape(transpose(probs @ v, [1, 0, 2]), [8, 32]);
        let h = layer_norm(arg0 + (ctx @ wo + bo), ln1_g, ln1_b, eps=1e-12);
        let f = gelu(h @ wi + bi) @ wf + bf;
        out y = layer_norm(h + f, ln2_g, ln2_b, eps=1e-12);
    }
}

// ---------------------------------------------------------------- running

/// Runs a graph on the CPU with these params and one input.
fn run_graph(g: Graph, params: &[(String, HostTensor)], x: &HostTensor) -> rlx::Result<Vec<f32>> {
    let mut c = Session::new(Device::Cpu).try_compile(g)?;
    for (n, t) in params {
        c.set_param_typed(n, t)?;
    }
    Ok(c.try_run_typed(&[("arg0", x)])?[0].to_vec::<f32>()?)
}

/// Runs a `Model` with these params and one input.
fn run_model<M: ModelDef>(
    mut m: Model<M>,
    params: &[(String, HostTensor)],
    x: &HostTensor,
) -> rlx::Result<Vec<f32>> {
    for (n, t) in params {
        m.set_param(n, t)?;
    }
    Ok(m.forward(&[x])?[0].to_vec::<f32>()?)
}

/// Random weights for every param of a model definition.
fn weights<M: ModelDef>(rng: &mut Rng) -> Vec<(String, HostTensor)> {
    M::param_specs()
        .into_iter()
        .map(|(n, s)| {
            let dims = s.static_dims().expect("static");
            let t = if n.ends_with("_g") {
                // LayerNorm gains start at 1.
                HostTensor::from_vec(vec![1.0f32; dims[0]], &dims).expect("dims match")
            } else {
                rng.tensor(&dims, (1.0 / dims[0] as f32).sqrt())
            };
            (n, t)
        })
        .collect()
}

fn digits_batch() -> rlx::Result<HostTensor> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/data/digits/digits.csv.gz"
    );
    let mut text = String::new();
    GzDecoder::new(std::fs::File::open(path)?).read_to_string(&mut text)?;
    let mut x = Vec::with_capacity(BATCH * IN);
    for line in text.lines().take(BATCH) {
        let v: Vec<f32> = line.split(',').map(str::parse).collect::<Result<_, _>>()?;
        x.extend(v[..IN].iter().map(|p| p / 16.0));
    }
    Ok(HostTensor::from_vec(x, &[BATCH, IN])?)
}

fn show(label: &str, v: &[f32]) {
    let head: Vec<String> = v.iter().take(6).map(|x| format!("{x:+.6}")).collect();
    println!("  {label:<16} [{} ...]", head.join(", "));
}

/// Prints each way's outputs and fails unless all equal the first.
fn compare(model: &str, ways: &[(&str, Vec<f32>)]) -> rlx::Result<()> {
    println!("{model}:");
    for (label, v) in ways {
        show(label, v);
    }
    let (first, reference) = (&ways[0].0, &ways[0].1);
    for (label, v) in &ways[1..] {
        let diff = v
            .iter()
            .zip(reference)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        println!("  max |{label} - {first}| = {diff:e}");
        anyhow::ensure!(
            v.len() == reference.len() && diff == 0.0,
            "{model}: {label} differs from {first} by {diff}"
        );
    }
    Ok(())
}

pub fn main() -> rlx::Result<()> {
    let mut rng = Rng(2026);

    let mlp_w = weights::<DigitsMlp>(&mut rng);
    let x = digits_batch()?;
    compare(
        &format!("digits MLP {IN}-{HIDDEN}-{CLASSES}, logits of {BATCH} digits images"),
        &[
            ("graph API", run_graph(mlp_graph(), &mlp_w, &x)?),
            ("Tensor", run_graph(mlp_tensor()?, &mlp_w, &x)?),
            ("#[rlx_model]", run_model(DigitsMlp::model(), &mlp_w, &x)?),
            ("rlx!", run_graph(mlp_rlx(), &mlp_w, &x)?),
        ],
    )?;

    let enc_w = weights::<EncoderLayer>(&mut rng);
    let x = rng.tensor(&[SEQ, D], 1.0);
    let tensor_graph = EncoderLayer::model().graph(&[x.shape()])?;
    compare(
        &format!("MiniLM-style encoder layer (seq {SEQ}, hidden {D}, {HEADS} heads, ffn {FF})"),
        &[
            ("graph API", run_graph(encoder_graph(), &enc_w, &x)?),
            ("Tensor", run_graph(tensor_graph, &enc_w, &x)?),
            (
                "#[rlx_model]",
                run_model(EncoderLayer::model(), &enc_w, &x)?,
            ),
            ("rlx!", run_graph(encoder_rlx(), &enc_w, &x)?),
        ],
    )?;
    println!("all ways agree");
    if std::env::args().any(|a| a == "--bench") {
        bench::run(&mlp_w, &enc_w, &x)?;
    }
    Ok(())
}

mod bench {
    //! Same-run timings: the `Tensor` / `#[rlx_model]` versions against the
    //! graph API (median of rounds, rounds interleaved), and eager mode.
    use super::*;
    use rlx::optim::{Sgd, SgdConfig};
    use rlx::train::{train_step, TrainStep};
    use std::time::Instant;

    const ROUNDS: usize = 15;

    /// Median seconds per call of `f` over `ROUNDS` rounds of `n` calls,
    /// for two functions measured alternately.
    fn pair(
        n: usize,
        mut a: impl FnMut() -> rlx::Result<()>,
        mut b: impl FnMut() -> rlx::Result<()>,
    ) -> rlx::Result<(f64, f64)> {
        let (mut ta, mut tb) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            a()?;
            b()?;
        }
        for _ in 0..ROUNDS {
            let t = Instant::now();
            for _ in 0..n {
                a()?;
            }
            ta.push(t.elapsed().as_secs_f64() / n as f64);
            let t = Instant::now();
            for _ in 0..n {
                b()?;
            }
            tb.push(t.elapsed().as_secs_f64() / n as f64);
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        Ok((median(&mut ta), median(&mut tb)))
    }

    fn row(what: &str, graph_s: f64, dsl_s: f64) {
        println!(
            "  {what:<34} graph API {:>9.1} µs   DSL {:>9.1} µs   DSL / graph = {:.3}x",
            graph_s * 1e6,
            dsl_s * 1e6,
            dsl_s / graph_s
        );
    }

    fn sgd() -> rlx::Result<Sgd> {
        Ok(Sgd::new(SgdConfig {
            lr: 1e-3,
            ..Default::default()
        })?)
    }

    /// Softmax cross-entropy of the MLP's logits against one-hot `y`.
    fn mlp_loss_graph() -> Graph {
        let mut g = mlp_graph();
        let logits = g.outputs()[0];
        let y = g.input("y", f32s(&[BATCH, CLASSES]));
        let lp = g.log_softmax(logits, -1);
        let picked = g.mul(y, lp);
        let s = g.sum(picked, &[0, 1], false);
        let loss = g.mul(s, -1.0 / BATCH as f64);
        g.set_outputs(vec![loss]);
        g
    }

    pub fn run(
        mlp_w: &[(String, HostTensor)],
        enc_w: &[(String, HostTensor)],
        enc_x: &HostTensor,
    ) -> rlx::Result<()> {
        println!("timings (median of {ROUNDS} interleaved rounds):");
        // MLP training step: TrainStep on the graph-API loss vs train_step on a closure.
        let mut graph_step = TrainStep::new(&mlp_loss_graph(), &["w1", "b1", "w2", "b2"], sgd()?)?;
        let specs = DigitsMlp::param_specs();
        let named: Vec<(&str, Shape)> =
            specs.iter().map(|(n, s)| (n.as_str(), s.clone())).collect();
        let mut dsl_step = train_step(
            |p: &[Tensor], b: &[Tensor]| {
                let logits = (b[0].matmul(&p[0]) + &p[1]).tanh().matmul(&p[2]) + &p[3];
                (&b[1] * nn::log_softmax(&logits, -1)).sum(None, false) * (-1.0 / BATCH as f64)
            },
            &named,
            &[
                ("arg0", shape![(BATCH), (IN)]),
                ("y", shape![(BATCH), (CLASSES)]),
            ],
            sgd()?,
        )?;
        for (n, t) in mlp_w {
            graph_step.set_param(n, &t.to_vec::<f32>()?)?;
            dsl_step.set_param(n, &t.to_vec::<f32>()?)?;
        }
        let x = digits_batch()?.to_vec::<f32>()?;
        let mut y = vec![0.0f32; BATCH * CLASSES];
        (0..BATCH).for_each(|r| y[r * CLASSES + r % CLASSES] = 1.0);
        let feeds = [("arg0", x.as_slice()), ("y", y.as_slice())];
        let (g, d) = pair(
            200,
            || graph_step.step(&feeds).map(|_| ()).map_err(Into::into),
            || dsl_step.step(&feeds).map(|_| ()).map_err(Into::into),
        )?;
        row("MLP train step (batch 8, SGD)", g, d);

        // Encoder layer forward: Session on the graph-API graph vs Model.
        let mut c = Session::new(Device::Cpu).try_compile(encoder_graph())?;
        let mut m = EncoderLayer::model();
        for (n, t) in enc_w {
            c.set_param_typed(n, t)?;
            m.set_param(n, t)?;
        }
        let (g, d) = pair(
            500,
            || {
                c.try_run_typed(&[("arg0", enc_x)])
                    .map(|_| ())
                    .map_err(Into::into)
            },
            || m.forward(&[enc_x]).map(|_| ()).map_err(Into::into),
        )?;
        row("encoder layer forward (seq 8, d 32)", g, d);
        eager()
    }

    #[cfg(feature = "eval")]
    fn eager() -> rlx::Result<()> {
        let xs: Vec<f32> = (0..64).map(|i| i as f32 / 64.0 - 0.5).collect();
        // Ten ops: from_vec is a leaf, then mul add tanh sub exp mul sqrt neg add abs.
        let once = || -> rlx::Result<f32> {
            let x = Tensor::from_vec(xs.clone(), &[64]);
            let y = (-((((x * 2.0 + 1.0).tanh() - 0.5).exp() * 3.0).sqrt()) + 4.0).abs();
            Ok(y.to_vec()?[0])
        };
        const OPS: f64 = 10.0;
        for _ in 0..20 {
            once()?;
        }
        let mut per_op = Vec::new();
        for _ in 0..ROUNDS {
            let t = Instant::now();
            for _ in 0..200 {
                once()?;
            }
            per_op.push(t.elapsed().as_secs_f64() / 200.0 / OPS);
        }
        per_op.sort_by(f64::total_cmp);
        let (compiles, hits) = rlx::tensor::eager_cache_stats();
        println!(
            "  eager 10-op expression, 64 floats: {:.2} µs per op (cache: {compiles} compiles, {hits} hits)",
            per_op[per_op.len() / 2] * 1e6
        );
        Ok(())
    }

    #[cfg(not(feature = "eval"))]
    fn eager() -> rlx::Result<()> {
        println!("  (eager timing needs --features eval)");
        Ok(())
    }
}
