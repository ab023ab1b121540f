//! Every kernel family and GEMM precision on a real device, against f64
//! references computed here. Needs a CUDA GPU: without one each test says
//! why and passes, unless `RLX_REQUIRE_CUDA=1` (as `tools/gpu_check.sh`
//! sets), which turns the skip into a failure.

use half::{bf16, f16};
use rlx_cuda::gemm::{CudaGemm, GemmDims, GemmPrecision};
use rlx_cuda::gpu::CudaGpu;
use rlx_cuda::kernels::{BinaryOp, ReduceOp, UnaryOp};
use std::sync::OnceLock;

fn gpu() -> Option<&'static CudaGpu> {
    static GPU: OnceLock<Option<CudaGpu>> = OnceLock::new();
    GPU.get_or_init(|| {
        let required = rlx_ir::env::vars::REQUIRE_CUDA
            .get()
            .ok()
            .flatten()
            .unwrap_or(false);
        match CudaGpu::new(0) {
            Ok(g) => Some(g),
            Err(e) if required => panic!("RLX_REQUIRE_CUDA=1 but CUDA is unusable: {e}"),
            Err(e) => {
                eprintln!("skipped: {e}");
                None
            }
        }
    })
    .as_ref()
}

/// Deterministic values in [-2, 2) (a 64-bit LCG).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

fn assert_close(got: &[f32], want: &[f64], rtol: f64, atol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g as f64 - w).abs() <= atol + rtol * w.abs() || (w.is_nan() && g.is_nan());
        assert!(ok, "{what}[{i}]: got {g}, want {w}");
    }
}

fn unary_ref(op: UnaryOp, x: f64) -> f64 {
    let erf = |v: f64| libm_erf(v);
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
        UnaryOp::Gelu => 0.5 * x * (1.0 + erf(x / 2f64.sqrt())),
        UnaryOp::GeluTanh => {
            0.5 * x
                * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh())
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
            if x == 0.0 || x.is_nan() {
                x
            } else {
                x.signum()
            }
        }
        UnaryOp::Erf => erf(x),
        UnaryOp::Softplus => x.exp().ln_1p(),
    }
}

/// erf by its series / continued fraction is overkill here: Abramowitz and
/// Stegun 7.1.26 is good to 1.5e-7, enough for an f32 comparison at 1e-5.
fn libm_erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.3275911 * x.abs());
    let y = 1.0
        - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
            + 0.254829592)
            * t
            * (-x * x).exp();
    y.copysign(x)
}

#[test]
fn unary_ops_match_f64_in_f32_and_f16() {
    let Some(g) = gpu() else { return };
    let x = values(4099, 1);
    let dx = g.upload(&x).unwrap();
    let x16: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
    let dx16 = g.upload(&x16).unwrap();
    for op in UnaryOp::ALL {
        let want: Vec<f64> = x.iter().map(|&v| unary_ref(op, v as f64)).collect();
        let got = g.download(&g.unary(&dx, op).unwrap()).unwrap();
        assert_close(&got, &want, 1e-5, 1e-6, &format!("{op:?} f32"));
        let want16: Vec<f64> = x16.iter().map(|v| unary_ref(op, v.to_f64())).collect();
        let got16: Vec<f32> = g
            .download(&g.unary(&dx16, op).unwrap())
            .unwrap()
            .iter()
            .map(|v| v.to_f32())
            .collect();
        assert_close(&got16, &want16, 1e-2, 1e-3, &format!("{op:?} f16"));
    }
}

#[test]
fn binary_ops_broadcast_like_numpy() {
    let Some(g) = gpu() else { return };
    let (a, b) = (values(2 * 3 * 5, 2), values(3, 3));
    let (da, db) = (g.upload(&a).unwrap(), g.upload(&b).unwrap());
    for op in BinaryOp::ALL {
        let (y, dims) = g.binary((&da, &[2, 3, 5]), (&db, &[3, 1]), op).unwrap();
        assert_eq!(dims, [2, 3, 5]);
        let want: Vec<f64> = (0..30)
            .map(|i| {
                let (x, z) = (a[i] as f64, b[(i / 5) % 3] as f64);
                match op {
                    BinaryOp::Add => x + z,
                    BinaryOp::Sub => x - z,
                    BinaryOp::Mul => x * z,
                    BinaryOp::Div => x / z,
                    BinaryOp::Max => x.max(z),
                    BinaryOp::Min => x.min(z),
                    BinaryOp::Pow => x.powf(z),
                    BinaryOp::Mod => x - z * (x / z).floor(),
                    BinaryOp::Atan2 => x.atan2(z),
                }
            })
            .collect();
        assert_close(
            &g.download(&y).unwrap(),
            &want,
            1e-5,
            1e-6,
            &format!("{op:?}"),
        );
    }
}

#[test]
fn reductions_over_a_middle_axis() {
    let Some(g) = gpu() else { return };
    let (outer, n, inner) = (3, 1000, 7);
    let x = values(outer * n * inner, 4);
    let dx = g.upload(&x).unwrap();
    for op in [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min] {
        let want: Vec<f64> = (0..outer * inner)
            .map(|j| {
                let (o, i) = (j / inner, j % inner);
                let col = (0..n).map(|k| x[(o * n + k) * inner + i] as f64);
                match op {
                    ReduceOp::Sum => col.sum(),
                    ReduceOp::Mean => col.sum::<f64>() / n as f64,
                    ReduceOp::Max => col.fold(f64::MIN, f64::max),
                    ReduceOp::Min => col.fold(f64::MAX, f64::min),
                }
            })
            .collect();
        let got = g
            .download(&g.reduce(&dx, [outer, n, inner], op).unwrap())
            .unwrap();
        assert_close(&got, &want, 1e-5, 1e-4, &format!("{op:?}"));
    }
}

#[test]
fn softmax_layer_norm_and_rms_norm_rows() {
    let Some(g) = gpu() else { return };
    let (rows, n) = (5, 384);
    let x = values(rows * n, 5);
    let (gamma, beta) = (values(n, 6), values(n, 7));
    let (dx, dg, db) = (
        g.upload(&x).unwrap(),
        g.upload(&gamma).unwrap(),
        g.upload(&beta).unwrap(),
    );
    let row = |r: usize| {
        x[r * n..(r + 1) * n]
            .iter()
            .map(|&v| v as f64)
            .collect::<Vec<_>>()
    };
    let mut soft = Vec::new();
    let mut logsoft = Vec::new();
    let mut ln = Vec::new();
    let mut rms = Vec::new();
    for r in 0..rows {
        let v = row(r);
        let m = v.iter().cloned().fold(f64::MIN, f64::max);
        let s: f64 = v.iter().map(|x| (x - m).exp()).sum();
        soft.extend(v.iter().map(|x| (x - m).exp() / s));
        logsoft.extend(v.iter().map(|x| x - m - s.ln()));
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        ln.extend(
            v.iter()
                .enumerate()
                .map(|(k, x)| (x - mean) / (var + 1e-5).sqrt() * gamma[k] as f64 + beta[k] as f64),
        );
        let ms = v.iter().map(|x| x * x).sum::<f64>() / n as f64;
        rms.extend(
            v.iter()
                .enumerate()
                .map(|(k, x)| x / (ms + 1e-6).sqrt() * gamma[k] as f64),
        );
    }
    let dl = |y| g.download(&y).unwrap();
    assert_close(
        &dl(g.softmax(&dx, [rows, n], false).unwrap()),
        &soft,
        1e-5,
        1e-7,
        "softmax",
    );
    assert_close(
        &dl(g.softmax(&dx, [rows, n], true).unwrap()),
        &logsoft,
        1e-5,
        1e-5,
        "log_softmax",
    );
    assert_close(
        &dl(g.layer_norm(&dx, &dg, &db, [rows, n], 1e-5).unwrap()),
        &ln,
        1e-4,
        1e-5,
        "layer_norm",
    );
    assert_close(
        &dl(g.rms_norm(&dx, &dg, [rows, n], 1e-6).unwrap()),
        &rms,
        1e-4,
        1e-5,
        "rms_norm",
    );
}

#[test]
fn gather_permute_and_cast() {
    let Some(g) = gpu() else { return };
    let (rows, width) = (10, 6);
    let table = values(rows * width, 8);
    let dt = g.upload(&table).unwrap();
    let idx = g.upload(&[3i64, -1, 0, 9]).unwrap();
    let got = g
        .download(&g.gather_rows(&dt, [rows, width], &idx).unwrap())
        .unwrap();
    let want: Vec<f64> = [3usize, 9, 0, 9]
        .iter()
        .flat_map(|&r| table[r * width..(r + 1) * width].iter().map(|&v| v as f64))
        .collect();
    assert_close(&got, &want, 0.0, 0.0, "gather");
    let bad = g.upload(&[1i64, 10]).unwrap();
    let err = g
        .gather_rows(&dt, [rows, width], &bad)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("index 10 at position 1 is outside a table of 10 rows"),
        "{err}"
    );

    let dims = [2usize, 3, 4];
    let x = values(24, 9);
    let y = g
        .download(
            &g.permute(&g.upload(&x).unwrap(), &dims, &[2, 0, 1])
                .unwrap(),
        )
        .unwrap();
    // numpy: x.reshape(2,3,4).transpose(2,0,1)[k, i, j] = x[i, j, k]
    let want: Vec<f64> = (0..24)
        .map(|t| {
            let (k, i, j) = (t / 6, (t / 3) % 2, t % 3);
            x[(i * 3 + j) * 4 + k] as f64
        })
        .collect();
    assert_close(&y, &want, 0.0, 0.0, "permute");

    let v = [1.5f32, -2.75, 65504.0, 1e-8, 3.99];
    let dv = g.upload(&v).unwrap();
    let h: Vec<f16> = g
        .download(&g.cast::<f32, f16>(&dv, "f32", "f16").unwrap())
        .unwrap();
    assert_eq!(h, v.map(f16::from_f32));
    let b: Vec<bf16> = g
        .download(&g.cast::<f32, bf16>(&dv, "f32", "bf16").unwrap())
        .unwrap();
    assert_eq!(b, v.map(bf16::from_f32));
    let i: Vec<i32> = g
        .download(&g.cast::<f32, i32>(&dv, "f32", "i32").unwrap())
        .unwrap();
    assert_eq!(i, [1, -2, 65504, 0, 3]);
}

fn gemm_ref(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p] as f64;
            for j in 0..n {
                c[i * n + j] += x * b[p * n + j] as f64;
            }
        }
    }
    c
}

#[test]
fn gemms_in_f32_tf32_f16_and_bf16() {
    let Some(g) = gpu() else { return };
    let blas = CudaGemm::new(g).unwrap();
    let (m, k, n) = (67, 129, 35);
    let dims = GemmDims { m, k, n };
    let (a, b) = (values(m * k, 10), values(k * n, 11));
    let want = gemm_ref(&a, &b, m, k, n);
    let (da, db) = (g.upload(&a).unwrap(), g.upload(&b).unwrap());
    for (p, rtol, atol) in [
        (GemmPrecision::F32, 1e-5, 1e-4),
        (GemmPrecision::Tf32, 5e-3, 5e-2),
    ] {
        let mut c = g.zeros::<f32>(m * n).unwrap();
        blas.f32(&da, &db, &mut c, dims, p).unwrap();
        assert_close(
            &g.download(&c).unwrap(),
            &want,
            rtol,
            atol,
            &format!("{p:?}"),
        );
    }
    // Half inputs: reference on the rounded inputs, output rounding 1e-2.
    let a16: Vec<f16> = a.iter().map(|&v| f16::from_f32(v)).collect();
    let b16: Vec<f16> = b.iter().map(|&v| f16::from_f32(v)).collect();
    let want16 = gemm_ref(
        &a16.iter().map(|v| v.to_f32()).collect::<Vec<_>>(),
        &b16.iter().map(|v| v.to_f32()).collect::<Vec<_>>(),
        m,
        k,
        n,
    );
    let mut c16 = g.zeros::<f16>(m * n).unwrap();
    blas.f16(
        &g.upload(&a16).unwrap(),
        &g.upload(&b16).unwrap(),
        &mut c16,
        dims,
    )
    .unwrap();
    let got16: Vec<f32> = g
        .download(&c16)
        .unwrap()
        .iter()
        .map(|v| v.to_f32())
        .collect();
    assert_close(&got16, &want16, 1e-2, 2e-2, "f16");
    let ab: Vec<bf16> = a.iter().map(|&v| bf16::from_f32(v)).collect();
    let bb: Vec<bf16> = b.iter().map(|&v| bf16::from_f32(v)).collect();
    let wantb = gemm_ref(
        &ab.iter().map(|v| v.to_f32()).collect::<Vec<_>>(),
        &bb.iter().map(|v| v.to_f32()).collect::<Vec<_>>(),
        m,
        k,
        n,
    );
    let mut cb = g.zeros::<bf16>(m * n).unwrap();
    blas.bf16(
        &g.upload(&ab).unwrap(),
        &g.upload(&bb).unwrap(),
        &mut cb,
        dims,
    )
    .unwrap();
    let gotb: Vec<f32> = g
        .download(&cb)
        .unwrap()
        .iter()
        .map(|v| v.to_f32())
        .collect();
    assert_close(&gotb, &wantb, 2e-2, 5e-2, "bf16");
    let err = blas
        .f32(
            &da,
            &db,
            &mut g.zeros::<f32>(3).unwrap(),
            dims,
            GemmPrecision::F32,
        )
        .unwrap_err();
    assert!(err.to_string().contains("buffers of"), "{err}");
}

#[test]
fn the_caching_allocator_hands_back_freed_buffers() {
    let Some(g) = gpu() else { return };
    let b = g.take_bytes(1 << 20).unwrap();
    assert!(b.len() >= 1 << 20);
    g.give_bytes(b);
    assert_eq!(g.cached_bytes(), 1 << 20);
    let again = g.take_bytes(700_000).unwrap();
    assert_eq!((again.len(), g.cached_bytes()), (1 << 20, 0));
}
