//! Times spmv and a fixed-length CG on the 2-D Poisson matrix of a `k × k`
//! grid (default k = 448: 200,704 rows, ~1M non-zeros), as
//! `tools/bench_sparse.py` times scipy on the same matrix: `spmv` allocates
//! its output as scipy's `A @ x` does, `spmv_into` writes a caller's
//! vector as scipy's `csr_matvec` into a preallocated `y` does, and
//! `spmv f32` is `spmv` on the f32 copy of the matrix and vector.
//!
//! `cargo run --release -p rlx-sparse --example sparse_bench -- [k]`

use rlx_sparse::{cg, CooMatrix, IterativeOptions};
use std::time::Instant;

fn poisson(k: usize) -> rlx_sparse::CsrMatrix<f64> {
    let n = k * k;
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..k {
        for j in 0..k {
            let p = i * k + j;
            let mut put = |q: usize, v: f64| {
                rows.push(p);
                cols.push(q);
                vals.push(v);
            };
            put(p, 4.0);
            if j > 0 {
                put(p - 1, -1.0);
            }
            if j + 1 < k {
                put(p + 1, -1.0);
            }
            if i > 0 {
                put(p - k, -1.0);
            }
            if i + 1 < k {
                put(p + k, -1.0);
            }
        }
    }
    CooMatrix::try_new(n, n, rows, cols, vals)
        .expect("valid triplets")
        .to_csr()
}

fn f32_copy(a: &rlx_sparse::CsrMatrix<f64>) -> rlx_sparse::CsrMatrix<f32> {
    rlx_sparse::CsrMatrix::try_new(
        a.shape().0,
        a.shape().1,
        a.indptr().to_vec(),
        a.indices().iter().map(|&j| j as usize).collect(),
        a.values().iter().map(|&v| v as f32).collect(),
    )
    .expect("the same valid pattern")
}

fn best_of<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let k: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(448);
    let a = poisson(k);
    let n = a.shape().0;
    let x: Vec<f64> = (0..n).map(|i| ((i % 17) as f64 - 8.0) / 8.0).collect();
    let spmv = best_of(50, || {
        std::hint::black_box(a.spmv(&x).expect("spmv"));
    });
    let mut y = vec![0.0; n];
    let spmv_into = best_of(50, || {
        a.spmv_into(&x, &mut y).expect("spmv_into");
        std::hint::black_box(&y);
    });
    let a32 = f32_copy(&a);
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let spmv32 = best_of(50, || {
        std::hint::black_box(a32.spmv(&x32).expect("spmv f32"));
    });
    let opts = IterativeOptions {
        rtol: 0.0,
        maxiter: Some(100),
        ..Default::default()
    };
    let cg_t = best_of(3, || {
        std::hint::black_box(cg(&a, &x, None, &opts).expect("cg"));
    });
    println!(
        "rlx-sparse poisson k={k}: n={n} nnz={} spmv {:.3} ms, spmv_into {:.3} ms, spmv f32 {:.3} ms, cg x100 {:.1} ms",
        a.nnz(),
        spmv * 1e3,
        spmv_into * 1e3,
        spmv32 * 1e3,
        cg_t * 1e3
    );
}
