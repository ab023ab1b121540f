//! A 3-channel 7x7 stride-2 stem + ReLU and the 3x3 stride-2 max pool
//! that is its only reader, run as one step in bands of pool rows
//! (`kernels/stem_pool.rs`, paired by `stem_pool_plan.rs`), against numpy
//! float64 (tools/gen_stem_pool_fixtures.py): odd and even maps, 16 / 32 /
//! 64 outputs, batch 1 and 2, at 1-3 threads. The pool's reader is a 1x1
//! max pool (the identity), so the pool writes blocked as ResNet's does
//! for layer 1. On an AVX-512 host the pair is fused (`stem_pools_fused`),
//! and its bits equal the unfused pair's: the same graph with the stem
//! also a graph output runs the stem kernel alone (NCHW, the same tiles
//! and FMA order) and the blocked pool on it; so do they with the image
//! copied into the arena, whose slot the pool's output may share.

use rlx_compile::{lower, LowerOptions};
use rlx_cpu::{CpuBackend, CpuExecutable};
use rlx_driver::{Backend, Executable};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use serde_json::Value;

mod common;
use common::conv_window;
use common::nchwc::{assert_close, avx512};
use common::yolo_net::{floats, values};

const FIXTURE: &str = include_str!("fixtures/stem_pool/cases.json");

/// Case `i`'s graph: the stem (weight `values(.., 70 + i)`, bias
/// `values(o, 80 + i)`) + ReLU, the max pool, its identity reader; the
/// stem also a graph output when `stem_out`.
fn stem_pool(i: u64, (n, h, w, o): (usize, usize, usize, usize), stem_out: bool) -> CpuExecutable {
    let mut g = Graph::new("stem_pool");
    let f32s = |d: &[usize]| Shape::new(d, DType::F32);
    let x = g.input("x", f32s(&[n, 3, h, w]));
    let wt = HostTensor::from_slice(&values(o * 3 * 49, 70 + i), &[o, 3, 7, 7]).unwrap();
    let b = HostTensor::from_slice(&values(o, 80 + i), &[o]).unwrap();
    let (wt, b) = (g.constant_tensor(&wt), g.constant_tensor(&b));
    let s = g.conv(x, wt, Some(b), conv_window(7, 2), 1);
    let s = g.relu(s);
    let m = g.max_pool2d(s, [3, 3], [2, 2], [1, 1]);
    let q = g.max_pool2d(m, [1, 1], [1, 1], [0, 0]);
    g.set_outputs(if stem_out { vec![q, s] } else { vec![q] });
    let lir = lower(&g, &|op| CpuBackend.claims(op), &LowerOptions::default()).unwrap();
    CpuExecutable::new(lir).unwrap()
}

#[test]
fn stem_and_pool_in_bands_match_numpy_and_the_unfused_pair() {
    let cases: Value = serde_json::from_str(FIXTURE).unwrap();
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 5);
    for (i, fx) in cases.iter().enumerate() {
        let dim = |k: &str| fx[k].as_u64().unwrap() as usize;
        let (n, h, w, o) = (dim("n"), dim("h"), dim("w"), dim("o"));
        let xs: Vec<f32> = values(n * 3 * h * w, 60 + i as u64)
            .iter()
            .map(|v| v * 16.0)
            .collect();
        let x = HostTensor::from_slice(&xs, &[n, 3, h, w]).unwrap();
        let want = floats(&fx["m"]);
        let m_dims: Vec<usize> = fx["m_shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        let mut fused = stem_pool(i as u64, (n, h, w, o), false);
        let mut unfused = stem_pool(i as u64, (n, h, w, o), true);
        // The image copied through the arena (`RLX_CPU_IN_PLACE_IO=0`):
        // where the memory plan gives its slot to the pool's output, the
        // run falls back to the two ops in turn; the same bits either way.
        // (This file's only test: nothing else reads the variable.)
        std::env::set_var("RLX_CPU_IN_PLACE_IO", "0");
        let mut copied = stem_pool(i as u64, (n, h, w, o), false);
        std::env::remove_var("RLX_CPU_IN_PLACE_IO");
        for threads in 1..=3 {
            let what = format!("case {i} ({n} x 3 x {h} x {w} -> {o}), threads {threads}");
            fused.limit_threads(Some(threads)).unwrap();
            unfused.limit_threads(Some(threads)).unwrap();
            let got = fused.run(&[&x]).unwrap();
            if avx512() {
                assert_eq!(fused.stem_pools_fused(), 1, "{what}");
            }
            assert_eq!(got[0].dims(), &m_dims[..], "{what}");
            let got = got[0].to_vec::<f32>().unwrap();
            assert_close(&got, &want, &what);
            let reference = unfused.run(&[&x]).unwrap()[0].to_vec::<f32>().unwrap();
            assert_eq!(unfused.stem_pools_fused(), 0, "{what}");
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert!(
                bits(&got) == bits(&reference),
                "{what}: fused and unfused bits differ"
            );
            copied.limit_threads(Some(threads)).unwrap();
            let got = copied.run(&[&x]).unwrap()[0].to_vec::<f32>().unwrap();
            assert!(bits(&got) == bits(&reference), "{what}: image in the arena");
        }
    }
}
