//! An f16 param cast to f32 for dot_generals only (an f16 KV cache read by
//! a decode step's attention) is not cast: the products read the f16
//! bytes. Checked on the lowered CPU executable: the cast is folded, its
//! products equal those of the same graph where the cast is also an output
//! (so it runs), bit for bit, at 1 and 2 threads, and both are within f32
//! rounding of an f64 loop over the f16 values.

use half::f16;
use rlx_compile::{lower, LowerOptions};
use rlx_cpu::{CpuBackend, CpuExecutable};
use rlx_driver::{Backend, Executable};
use rlx_ir::op::DotDims;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};

/// Deterministic values in [-1, 1).
fn values(len: usize, seed: u32) -> Vec<f32> {
    (0..len as u32)
        .map(|i| {
            let z = (i ^ seed.rotate_left(13)).wrapping_mul(0x9E37_79B9) ^ seed;
            (z >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

fn batched(rhs_contract: usize) -> DotDims {
    DotDims {
        lhs_batch: vec![0],
        rhs_batch: vec![0],
        lhs_contract: vec![2],
        rhs_contract: vec![rhs_contract],
    }
}

/// `q [2, 3, 40] · K^T` and `p [2, 3, 24] · V` with K, V f16 params
/// `[2, 24, 40]` cast to f32; with `expose`, the casts are outputs too.
fn graph(expose: bool) -> Graph {
    let mut g = Graph::new("f16_cache");
    let f32s = |d: &[usize]| Shape::new(d, DType::F32);
    let q = g.input("q", f32s(&[2, 3, 40]));
    let p = g.input("p", f32s(&[2, 3, 24]));
    let k = g.param("k", Shape::new(&[2, 24, 40], DType::F16));
    let v = g.param("v", Shape::new(&[2, 24, 40], DType::F16));
    let (k32, v32) = (g.cast(k, DType::F32), g.cast(v, DType::F32));
    let scores = g.dot_general(q, k32, batched(2));
    let out = g.dot_general(p, v32, batched(1));
    let mut outs = vec![scores, out];
    if expose {
        outs.extend([k32, v32]);
    }
    g.set_outputs(outs);
    g
}

#[test]
fn f16_param_casts_fold_into_their_products() {
    let (q, p) = (values(2 * 3 * 40, 1), values(2 * 3 * 24, 2));
    let (k, v) = (values(2 * 24 * 40, 3), values(2 * 24 * 40, 4));
    let half = |x: &[f32]| -> Vec<f16> { x.iter().map(|&x| f16::from_f32(x)).collect() };
    let (kh, vh) = (half(&k), half(&v));
    let tensor = |x: Vec<f32>, d: &[usize]| HostTensor::from_vec(x, d).unwrap();
    let (qt, pt) = (
        tensor(q.clone(), &[2, 3, 40]),
        tensor(p.clone(), &[2, 3, 24]),
    );
    let mut runs = Vec::new();
    for expose in [false, true] {
        let lir = lower(
            &graph(expose),
            &|op| CpuBackend.claims(op),
            &LowerOptions::default(),
        )
        .unwrap();
        let mut exe = CpuExecutable::new(lir).unwrap();
        assert_eq!(
            exe.widened_casts(),
            if expose { 0 } else { 2 },
            "expose {expose}"
        );
        for (i, x) in [&kh, &vh].into_iter().enumerate() {
            exe.set_param(i, &HostTensor::from_vec(x.clone(), &[2, 24, 40]).unwrap())
                .unwrap();
        }
        for threads in 1..=2 {
            exe.limit_threads(Some(threads)).unwrap();
            let outs = exe.run(&[&qt, &pt]).unwrap();
            runs.push((
                expose,
                outs[0].to_vec::<f32>().unwrap(),
                outs[1].to_vec::<f32>().unwrap(),
            ));
        }
    }
    // f64 references over the f16 values.
    let (kw, vw): (Vec<f64>, Vec<f64>) = (
        kh.iter().map(|x| x.to_f64()).collect(),
        vh.iter().map(|x| x.to_f64()).collect(),
    );
    let mut scores = vec![(0f64, 0f64); 2 * 3 * 24];
    let mut out = vec![(0f64, 0f64); 2 * 3 * 40];
    for b in 0..2 {
        for i in 0..3 {
            for j in 0..24 {
                for t in 0..40 {
                    let x = q[(b * 3 + i) * 40 + t] as f64 * kw[(b * 24 + j) * 40 + t];
                    let e = &mut scores[(b * 3 + i) * 24 + j];
                    *e = (e.0 + x, e.1 + x.abs());
                }
            }
            for j in 0..40 {
                for t in 0..24 {
                    let x = p[(b * 3 + i) * 24 + t] as f64 * vw[(b * 24 + t) * 40 + j];
                    let e = &mut out[(b * 3 + i) * 40 + j];
                    *e = (e.0 + x, e.1 + x.abs());
                }
            }
        }
    }
    for (expose, s, o) in &runs {
        assert_eq!(
            s, &runs[0].1,
            "scores, expose {expose}: not the cast's bits"
        );
        assert_eq!(
            o, &runs[0].2,
            "values, expose {expose}: not the cast's bits"
        );
        for (got, want) in [(s, &scores), (o, &out)] {
            for (g, &(w, abs)) in got.iter().zip(want) {
                assert!((*g as f64 - w).abs() <= 40.0 * 1.2e-7 * abs, "{g} vs {w}");
            }
        }
    }
}
