//! Typed runs of every dtype, session precision, symbolic dims, and native
//! composite kernels against their decompositions.

use rlx_driver::Device;
use rlx_ir::op::MaskKind;
use rlx_ir::{bf16, f16, Complex32, DType, Dim, Graph, GraphExt, HostTensor, Shape};
use rlx_runtime::{CompileOptions, Precision, Session};

/// A transpose (dtype-agnostic data movement) of every dtype: the bytes come back permuted.
#[test]
fn typed_runs_of_every_dtype() {
    fn roundtrip(t: HostTensor) {
        let dt = t.dtype();
        let mut g = Graph::new("t");
        let x = g.input("x", Shape::new(&[2, 3], dt));
        let y = g.transpose_(x, &[1, 0]);
        g.set_outputs(vec![y]);
        let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
        let out = c.try_run_typed(&[("x", &t)]).unwrap();
        assert_eq!(out[0].dtype(), dt);
        assert_eq!(out[0].dims(), &[3, 2]);
        let w = dt.size_bytes();
        let b = t.bytes();
        let mut want = Vec::new();
        for j in 0..3 {
            for i in 0..2 {
                want.extend_from_slice(&b[(i * 3 + j) * w..(i * 3 + j + 1) * w]);
            }
        }
        assert_eq!(out[0].bytes(), &want[..], "{dt}");
    }
    let d = [2, 3];
    roundtrip(HostTensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], &d).unwrap());
    roundtrip(HostTensor::from_vec(vec![1f64, 2., 3., 4., 5., 6.], &d).unwrap());
    roundtrip(
        HostTensor::from_vec((1..=6).map(|v| f16::from_f32(v as f32)).collect(), &d).unwrap(),
    );
    roundtrip(
        HostTensor::from_vec((1..=6).map(|v| bf16::from_f32(v as f32)).collect(), &d).unwrap(),
    );
    roundtrip(HostTensor::from_vec(vec![1i8, -2, 3, -4, 5, -6], &d).unwrap());
    roundtrip(HostTensor::from_vec(vec![1i16, -2, 3, -4, 5, -6], &d).unwrap());
    roundtrip(HostTensor::from_vec(vec![1i32, -2, 3, -4, 5, -6], &d).unwrap());
    roundtrip(HostTensor::from_vec(vec![1i64, -2, 3, -4, 5, -6], &d).unwrap());
    roundtrip(HostTensor::from_vec(vec![1u8, 2, 3, 4, 5, 255], &d).unwrap());
    roundtrip(HostTensor::from_vec(vec![1u32, 2, 3, 4, 5, u32::MAX], &d).unwrap());
    roundtrip(HostTensor::from_vec(vec![true, false, true, true, false, false], &d).unwrap());
    roundtrip(
        HostTensor::from_vec(
            (0..6)
                .map(|v| Complex32::new(v as f32, -(v as f32)))
                .collect(),
            &d,
        )
        .unwrap(),
    );
}

/// Deterministic pseudo-random values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// A small attention block: layer norm, q/k/v projections, causal attention, GELU MLP.
fn block() -> Graph {
    let (s, d) = (8, 16);
    let mut g = Graph::new("block");
    let x = g.input("x", Shape::new(&[1, s, d], DType::F32));
    let gamma = g.param("gamma", Shape::new(&[d], DType::F32));
    let beta = g.param("beta", Shape::new(&[d], DType::F32));
    let wq = g.param("wq", Shape::new(&[d, d], DType::F32));
    let wk = g.param("wk", Shape::new(&[d, d], DType::F32));
    let wv = g.param("wv", Shape::new(&[d, d], DType::F32));
    let h = g.ln(x, gamma, beta, 1e-5);
    let q = g.mm(h, wq);
    let k = g.mm(h, wk);
    let v = g.mm(h, wv);
    let a = g.attention_(q, k, v, MaskKind::Causal, None);
    let m = g.gelu(a);
    let y = g.add(x, m);
    let p = g.sm(y, -1);
    g.set_outputs(vec![y, p]);
    g
}

fn run_block(opts: &CompileOptions) -> Vec<Vec<f32>> {
    let mut c = Session::new(Device::Cpu)
        .try_compile_with(block(), opts)
        .unwrap();
    for (i, (name, shape)) in c.param_shapes().into_iter().enumerate() {
        let n = shape.numel().unwrap();
        let v: Vec<f32> = values(n, i as u64 + 10).iter().map(|x| x * 0.5).collect();
        c.try_set_param(&name, &v).unwrap();
    }
    c.try_run(&[("x", &values(8 * 16, 1))]).unwrap()
}

fn max_rel(a: &[f32], b: &[f32]) -> f32 {
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-6);
    a.iter()
        .zip(b)
        .fold(0f32, |m, (x, y)| m.max((x - y).abs() / scale))
}

#[test]
fn f16_and_bf16_sessions_track_f32() {
    let full = run_block(&CompileOptions::default());
    for (p, tol) in [(Precision::F16, 1e-2), (Precision::BF16, 3e-2)] {
        let low = run_block(&CompileOptions::default().precision(p));
        for (a, b) in low.iter().zip(&full) {
            let r = max_rel(a, b);
            assert!(r < tol, "{p:?}: max relative error {r}");
            assert!(r > 0.0, "{p:?} must actually compute in low precision");
        }
    }
}

#[test]
fn f16_session_keeps_f32_io() {
    let mut c = Session::new(Device::Cpu)
        .try_compile_with(
            block(),
            &CompileOptions::default().precision(Precision::F16),
        )
        .unwrap();
    assert!(c
        .input_shapes()
        .iter()
        .all(|(_, s)| s.dtype() == DType::F32));
    assert!(c.output_shapes().iter().all(|s| s.dtype() == DType::F32));
    let g = &c.lir().graph;
    assert!(g.nodes().iter().any(|n| n.shape.dtype() == DType::F16));
    let _ = &mut c;
}

#[test]
fn native_composites_match_their_decompositions() {
    let native = run_block(&CompileOptions::default());
    let decomposed = run_block(&CompileOptions::default().decompose_composites(true));
    for (a, b) in native.iter().zip(&decomposed) {
        assert!(max_rel(a, b) < 1e-5, "{}", max_rel(a, b));
    }
    let c = Session::new(Device::Cpu)
        .try_compile_with(
            block(),
            &CompileOptions::default().decompose_composites(true),
        )
        .unwrap();
    assert!(c
        .lir()
        .graph
        .nodes()
        .iter()
        .all(|n| !n.op.kind().is_composite()));
}

#[test]
fn symbolic_batch_compiles_per_binding() {
    let mut g = Graph::new("dyn");
    let x = g.input(
        "x",
        Shape::from_dims(vec![Dim::sym("batch"), Dim::Static(3)], DType::F32),
    );
    let s = g.sum(x, &[1], false);
    let y = g.sm(x, -1);
    g.set_outputs(vec![s, y]);
    for batch in [1usize, 2, 5] {
        let opts = CompileOptions::default().bind_dim("batch", batch);
        let mut c = Session::new(Device::Cpu)
            .try_compile_with(g.clone(), &opts)
            .unwrap();
        let xs: Vec<f32> = (0..batch * 3).map(|v| v as f32).collect();
        let out = c.try_run(&[("x", &xs)]).unwrap();
        let want: Vec<f32> = (0..batch).map(|b| (9 * b + 3) as f32).collect();
        assert_eq!(out[0], want);
        assert_eq!(out[1].len(), batch * 3);
    }
    let e = Session::new(Device::Cpu)
        .try_compile(g)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unbound symbols [\"batch\"]"), "{e}");
}
