//! cuBLASLt's descriptors for the planned GEMMs with epilogues
//! ([`LtGemm::new`]), checked without a GPU: a host model of what
//! `cublasLtMatmul` computes from those descriptors (column-major
//! layouts, leading dimensions, batch strides, transposes, a bias per row
//! of D, the epilogue's activation) must give the row-major product the
//! plan asks for, computed directly. On a GPU, `tests/executor.rs` runs
//! the fused matmuls themselves.

mod common;

use common::graphs::rand;
use rlx_cuda::gemm_lt::{LtGemm, LtLayout};
use rlx_cuda::plan::{Epilogue, GemmSpec};
use rlx_ir::DType;

/// Element `(r, c)` of batch `t` of a column-major matrix, `op` applied.
fn at(m: &[f64], l: &LtLayout, trans: bool, t: usize, r: usize, c: usize) -> f64 {
    let (r, c) = if trans { (c, r) } else { (r, c) };
    assert!(
        (r as u64) < l.rows && (c as u64) < l.cols,
        "({r}, {c}) outside {l:?}"
    );
    m[t * l.stride as usize + r + c * l.ld as usize]
}

fn gelu_tanh(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

/// What cuBLASLt computes: D = act(op(A) op(B) + bias[row]), column-major.
fn lt_model(d: &LtGemm, a: &[f64], b: &[f64], bias: &[f64]) -> Vec<f64> {
    let (rows, cols) = (d.d.rows as usize, d.d.cols as usize);
    let k = if d.trans_a { d.a.rows } else { d.a.cols } as usize;
    let mut out = vec![0.0; d.batch as usize * d.d.stride as usize];
    for t in 0..d.batch as usize {
        for r in 0..rows {
            for c in 0..cols {
                let mut acc = 0.0;
                for i in 0..k {
                    acc += at(a, &d.a, d.trans_a, t, r, i) * at(b, &d.b, d.trans_b, t, i, c);
                }
                let v = acc + bias[r];
                use rlx_cuda::gemm_lt::sys::cublasLtEpilogue_t as E;
                out[t * d.d.stride as usize + r + c * d.d.ld as usize] = match d.epilogue {
                    E::CUBLASLT_EPILOGUE_BIAS => v,
                    E::CUBLASLT_EPILOGUE_RELU_BIAS => v.max(0.0),
                    E::CUBLASLT_EPILOGUE_GELU_BIAS => gelu_tanh(v),
                    other => panic!("unexpected epilogue {other:?}"),
                };
            }
        }
    }
    out
}

/// The row-major product the plan means, directly.
fn direct(s: &GemmSpec, e: Epilogue, a: &[f64], b: &[f64], bias: &[f64]) -> Vec<f64> {
    let mut c = vec![0.0; s.batch * s.m * s.n];
    for t in 0..s.batch {
        for i in 0..s.m {
            for j in 0..s.n {
                let mut acc = 0.0;
                for p in 0..s.k {
                    let av = if s.trans_a {
                        a[t * s.stride_a + p * s.m + i]
                    } else {
                        a[t * s.stride_a + i * s.k + p]
                    };
                    let bv = if s.trans_b {
                        b[t * s.stride_b + j * s.k + p]
                    } else {
                        b[t * s.stride_b + p * s.n + j]
                    };
                    acc += av * bv;
                }
                let v = acc + bias[j];
                c[(t * s.m + i) * s.n + j] = match e {
                    Epilogue::Bias => v,
                    Epilogue::BiasRelu => v.max(0.0),
                    Epilogue::BiasGeluTanh => gelu_tanh(v),
                };
            }
        }
    }
    c
}

fn values(n: usize, seed: u64) -> Vec<f64> {
    rand(&[n], -1.0, 1.0, seed)
        .to_vec::<f32>()
        .unwrap()
        .into_iter()
        .map(f64::from)
        .collect()
}

#[test]
fn lt_descriptors_compute_the_planned_row_major_product() {
    let (m, k, n) = (3, 5, 4);
    let mut cases = Vec::new();
    for (trans_a, trans_b) in [(false, false), (true, false), (false, true), (true, true)] {
        for (batch, sa, sb) in [(1, 0, 0), (2, m * k, k * n), (2, m * k, 0), (2, 0, k * n)] {
            for e in [Epilogue::Bias, Epilogue::BiasRelu, Epilogue::BiasGeluTanh] {
                cases.push((
                    GemmSpec {
                        batch,
                        m,
                        k,
                        n,
                        trans_a,
                        trans_b,
                        stride_a: sa,
                        stride_b: sb,
                    },
                    e,
                ));
            }
        }
    }
    for (k_case, (s, e)) in cases.into_iter().enumerate() {
        let a = values(s.batch.max(1) * m * k, 1 + k_case as u64);
        let b = values(s.batch.max(1) * k * n, 100 + k_case as u64);
        let bias = values(n, 200 + k_case as u64);
        let d = LtGemm::new(&s, DType::F32, e).unwrap();
        assert_eq!(
            (d.d.rows, d.d.cols, d.d.ld),
            (n as u64, m as u64, n as i64),
            "D is c transposed: n x m column-major"
        );
        let got = lt_model(&d, &b, &a, &bias);
        let want = direct(&s, e, &a, &b, &bias);
        for (i, (x, y)) in got.iter().zip(&want).enumerate() {
            assert!(
                (x - y).abs() < 1e-12,
                "case {k_case} {s:?} {e:?}: [{i}] {x} vs {y}"
            );
        }
    }
}

#[test]
fn lt_descriptors_pick_the_storage_type_and_refuse_the_rest() {
    let s = GemmSpec {
        batch: 1,
        m: 2,
        k: 3,
        n: 4,
        trans_a: false,
        trans_b: false,
        stride_a: 0,
        stride_b: 0,
    };
    use rlx_cuda::gemm_lt::sys::{cublasComputeType_t as C, cudaDataType as T};
    for (dt, want) in [
        (DType::F32, T::CUDA_R_32F),
        (DType::F16, T::CUDA_R_16F),
        (DType::BF16, T::CUDA_R_16BF),
    ] {
        let d = LtGemm::new(&s, dt, Epilogue::Bias).unwrap();
        assert_eq!(d.data, want);
        // f32 accumulation, never TF32 (1e-5 relative against the CPU).
        assert_eq!(d.compute, C::CUBLAS_COMPUTE_32F);
    }
    let e = LtGemm::new(&s, DType::I32, Epilogue::Bias)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no cuBLASLt GEMM for i32"), "{e}");
    let empty = GemmSpec { m: 0, ..s };
    let e = LtGemm::new(&empty, DType::F32, Epilogue::Bias)
        .unwrap_err()
        .to_string();
    assert!(e.contains("every dim must be positive"), "{e}");
}
