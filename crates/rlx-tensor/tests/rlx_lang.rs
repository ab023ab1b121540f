//! `rlx!` programs vs numpy: the digits-style MLP, a MiniLM-style encoder
//! layer, a `repeat` stack and `scan`s, compiled and run on the CPU and
//! compared with `tests/fixtures/rlx_lang.json` (`tools/gen_rlx_lang_fixtures.py`).

use rlx_ir::{Graph, HostTensor};
use rlx_runtime::{Device, Session};
use rlx_tensor::rlx;
use serde_json::Value;
use std::collections::HashMap;

/// One fixture case.
struct Case(Value);

fn case(name: &str) -> Case {
    let text = include_str!("fixtures/rlx_lang.json");
    let all: Value = serde_json::from_str(text).expect("fixture json");
    Case(all[name].clone())
}

fn tensor(v: &Value) -> HostTensor {
    let dims: Vec<usize> = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let data: Vec<f32> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_f64().unwrap() as f32)
        .collect();
    HostTensor::from_vec(data, &dims).unwrap()
}

impl Case {
    /// Binds the symbolic dims, compiles on the CPU, loads the params, runs.
    fn run(&self, g: Graph) -> HashMap<String, HostTensor> {
        let dims: HashMap<String, usize> = self.0["dims"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap() as usize))
            .collect();
        let g = g.bind_dims(&dims).expect("bind dims");
        let names: Vec<String> = g
            .outputs()
            .iter()
            .map(|&o| g.node(o).name.clone().expect("named output"))
            .collect();
        let mut c = Session::new(Device::Cpu).try_compile(g).expect("compile");
        for (n, v) in self.0["params"].as_object().unwrap() {
            c.set_param_typed(n, &tensor(v)).expect("param");
        }
        let inputs: Vec<(String, HostTensor)> = self.0["inputs"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(n, v)| (n.clone(), tensor(v)))
            .collect();
        let refs: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let outs = c.try_run_typed(&refs).expect("run");
        names.into_iter().zip(outs).collect()
    }

    /// Every named fixture output against the run's, within `tol` (relative to max |want|).
    fn check(&self, got: &HashMap<String, HostTensor>, tol: f64) {
        for (name, want) in self.0["outputs"].as_object().unwrap() {
            let Some(g) = got.get(name) else { continue };
            let w = tensor(want);
            assert_eq!(g.dims(), w.dims(), "{name}: dims");
            let (g, w) = (g.to_f64_lossy(), w.to_f64_lossy());
            let scale = w.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            for (i, (a, b)) in g.iter().zip(&w).enumerate() {
                assert!((a - b).abs() <= tol * scale, "{name}[{i}] = {a}, numpy {b}");
            }
        }
        for name in self.0["outputs"].as_object().unwrap().keys() {
            assert!(
                got.contains_key(name) || name == "numpy_cumsum",
                "{name} not produced"
            );
        }
    }
}

#[test]
fn mlp_matches_numpy() {
    let g = rlx! {
        graph digits_mlp;
        input x: f32[B, 784];
        input y: f32[B, 10];          // one-hot labels
        param w1: f32[784, 8];
        param b1: f32[8];
        param w2: f32[8, 10];
        param b2: f32[10];
        let h = relu(x @ w1 + b1);
        let logits = h @ w2 + b2;
        out probs = softmax(logits, axis=-1);
        out loss = -mean(sum(y * log_softmax(logits, axis=-1), axis=-1));
        tap hidden = h;
    };
    let c = case("mlp");
    let got = c.run(g);
    c.check(&got, 1e-5);
}

#[test]
fn encoder_layer_matches_numpy() {
    let g = rlx! {
        graph minilm_layer;
        input x: f32[B, S, 16];
        param wq: f32[16, 16];
        param bq: f32[16];
        param wk: f32[16, 16];
        param bk: f32[16];
        param wv: f32[16, 16];
        param bv: f32[16];
        param wo: f32[16, 16];
        param bo: f32[16];
        param ln1_g: f32[16];
        param ln1_b: f32[16];
        param w_ff1: f32[16, 32];
        param b_ff1: f32[32];
        param w_ff2: f32[32, 16];
        param b_ff2: f32[16];
        param ln2_g: f32[16];
        param ln2_b: f32[16];
        const HEADS = 4;
        const DH = 4;
        // [B, S, D] -> [B, heads, S, dh]
        fn heads(t) = transpose(reshape(t, [B, S, HEADS, DH]), [0, 2, 1, 3]);
        let q = heads(x @ wq + bq);
        let k = heads(x @ wk + bk);
        let v = heads(x @ wv + bv);
        let attn = softmax(q @ swapaxes(k, -1, -2) / DH ** 0.5, axis=-1);
        let ctx = reshape(transpose(attn @ v, [0, 2, 1, 3]), [B, S, 16]);
        let a = layer_norm(x + ctx @ wo + bo, ln1_g, ln1_b, eps=1e-12);
        let f = gelu(a @ w_ff1 + b_ff1) @ w_ff2 + b_ff2;
        out y = layer_norm(a + f, ln2_g, ln2_b, eps=1e-12);
        tap attn = attn;
    };
    let c = case("encoder");
    let got = c.run(g);
    c.check(&got, 1e-5);
}

#[test]
fn repeat_stack_matches_numpy() {
    let g = rlx! {
        graph stack;
        input x: f32[B, 6];
        let h = x;
        repeat 2 {
            param w: f32[6, 6];
            param b: f32[6];
            let h = tanh(h @ w + b);
        }
        out h = h;
    };
    let c = case("repeat");
    let got = c.run(g);
    c.check(&got, 1e-5);
}

#[test]
fn scan_cumsum_and_rnn_match_numpy() {
    let g = rlx! {
        graph scans;
        input xs: f32[6, 4];
        input seq: f32[6, 3];
        input h0: f32[3];
        param wh: f32[3, 3];
        param wx: f32[3, 3];
        param b: f32[3];
        // cumulative sum: the carry is the running total, y_t the total so far
        let (total, sums) = scan(sum(xs, 0) * 0.0, xs) |c, x| {
            let c = c + x;
            (c, c)
        };
        out total = total;
        out cumsum = sums;
        // an RNN step; wx, wh, b are captured from the enclosing graph
        let (h, hs) = scan(h0, seq) |h, x| {
            let h = tanh(x @ wx + h @ wh + b);
            (h, h)
        };
        out h = h;
        out hs = hs;
    };
    let c = case("scan");
    let got = c.run(g);
    c.check(&got, 1e-5);
    // and the scan agrees with numpy's cumsum (a second, independent reference)
    let want = tensor(&c.0["outputs"]["numpy_cumsum"]).to_f64_lossy();
    let sums = got["cumsum"].to_f64_lossy();
    for (a, b) in sums.iter().zip(&want) {
        assert!((a - b).abs() < 1e-5, "{a} vs {b}");
    }
}
