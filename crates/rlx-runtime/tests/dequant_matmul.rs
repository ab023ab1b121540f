//! `Op::DequantMatMul` end to end on the CPU: the native quantized kernel,
//! the decomposition (dequantize + matmul), and the fallback of a weight
//! format without a native kernel, against `dequant(W) · x` in f64 built
//! from rlx-gguf's codecs (bit-identical to gguf-py's).

use rlx_driver::Device;
use rlx_gguf::{codecs, GgmlType};
use rlx_ir::quant::QuantScheme;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, OpKind, Shape};
use rlx_runtime::{CompileOptions, Session};

fn wave(len: usize, f: f32, scale: f32) -> Vec<f32> {
    (0..len)
        .map(|i| scale * ((i as f32 * f).sin() + 0.5 * (i as f32 * 0.011).cos()))
        .collect()
}

/// Builds and runs `y = x · Wᵀ` for `[n, k]` weights `w` of `scheme`;
/// checks whether the compiled graph kept the op (`native`).
fn run(
    scheme: QuantScheme,
    n: usize,
    k: usize,
    w: &[u8],
    x: &[f32],
    decompose: bool,
    native: bool,
) -> Vec<f32> {
    let m = x.len() / k;
    let mut g = Graph::new("qmm");
    let xi = g.input("x", Shape::new(&[m, k], DType::F32));
    let wi = g.param("w", Shape::new(&[w.len()], DType::U8));
    let y = g.dequant_matmul(xi, wi, Some(scheme), n, k);
    g.set_outputs(vec![y]);
    let opts = CompileOptions::default().decompose_composites(decompose);
    let mut c = Session::new(Device::Cpu)
        .try_compile_with(g, &opts)
        .unwrap();
    let kept = c
        .lir()
        .graph
        .nodes()
        .iter()
        .any(|nd| nd.op.kind() == OpKind::DequantMatMul);
    assert_eq!(kept, native, "{scheme}: native kernel used");
    let wt = HostTensor::from_bytes(DType::U8, &[w.len()], w.to_vec()).unwrap();
    c.set_param_typed("w", &wt).unwrap();
    c.try_run(&[("x", x)]).unwrap().remove(0)
}

/// `dequant(W) · x` in f64 and each output's L1 magnitude.
fn reference(scheme: QuantScheme, n: usize, k: usize, w: &[u8], x: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let wd = codecs::dequantize(GgmlType::from(scheme), w, n * k).unwrap();
    let m = x.len() / k;
    let mut y = vec![0f64; m * n];
    let mut l1 = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            for t in 0..k {
                let p = f64::from(wd[j * k + t]) * f64::from(x[i * k + t]);
                y[i * n + j] += p;
                l1[i * n + j] += p.abs();
            }
        }
    }
    (y, l1)
}

#[test]
fn native_and_decomposed_dequant_matmul_match_the_reference() {
    let (m, n, k) = (3, 5, 512);
    let x = wave(m * k, 0.13, 1.5);
    for scheme in [
        QuantScheme::GgufQ4K,
        QuantScheme::GgufQ8_0,
        QuantScheme::GgufQ4_1,
    ] {
        let w = codecs::quantize(GgmlType::from(scheme), &wave(n * k, 0.07, 0.8)).unwrap();
        let (want, l1) = reference(scheme, n, k, &w, &x);
        // The decomposition computes dequant(W) · x in f32.
        let dec = run(scheme, n, k, &w, &x, true, false);
        // The native kernel quantizes x as ggml does: within Q8 rounding (< 1% of L1).
        let nat = run(scheme, n, k, &w, &x, false, true);
        for o in 0..m * n {
            let (d, q) = (f64::from(dec[o]), f64::from(nat[o]));
            assert!(
                (d - want[o]).abs() <= 1e-5 * l1[o],
                "{scheme} decomposed {o}: {d} vs {}",
                want[o]
            );
            assert!(
                (q - want[o]).abs() <= 1e-2 * l1[o],
                "{scheme} native {o}: {q} vs {}",
                want[o]
            );
        }
    }
}

#[test]
fn a_format_without_a_native_kernel_runs_decomposed() {
    let (m, n, k) = (2, 3, 256);
    let scheme = QuantScheme::GgufIq4Nl;
    // IQ4_NL has no quantizer here: random blocks with a sane f16 scale.
    let mut w: Vec<u8> = (0..n * k / 32 * 18).map(|i| (i * 37 % 251) as u8).collect();
    for b in w.chunks_exact_mut(18) {
        b[..2].copy_from_slice(&half::f16::from_f32(0.01).to_le_bytes());
    }
    let x = wave(m * k, 0.21, 2.0);
    let (want, l1) = reference(scheme, n, k, &w, &x);
    let got = run(scheme, n, k, &w, &x, false, false);
    for o in 0..m * n {
        assert!(
            (f64::from(got[o]) - want[o]).abs() <= 1e-5 * l1[o],
            "{o}: {} vs {}",
            got[o],
            want[o]
        );
    }
}

#[test]
fn wrong_weight_bytes_are_named_at_build_time() {
    let mut g = Graph::new("bad");
    let x = g.input("x", Shape::new(&[1, 256], DType::F32));
    let w = g.param("w", Shape::new(&[100], DType::U8));
    let e = g
        .try_node(
            rlx_ir::Op::DequantMatMul {
                scheme: Some(QuantScheme::GgufQ6K),
                n: 2,
                k: 256,
            },
            &[x, w],
            None,
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("420 bytes, given 100"), "{e}");
}
