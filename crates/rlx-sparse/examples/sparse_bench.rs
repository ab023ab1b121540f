//! Times spmv and a fixed-length CG on the 2-D Poisson matrix of a `k × k`
//! grid (default k = 448: 200,704 rows, ~1M non-zeros), as
//! `tools/bench_sparse.py` times scipy on the same matrix.
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
    let spmv = best_of(20, || {
        std::hint::black_box(a.spmv(&x).expect("spmv"));
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
        "rlx-sparse poisson k={k}: n={n} nnz={} spmv {:.3} ms, cg x100 {:.1} ms",
        a.nnz(),
        spmv * 1e3,
        cg_t * 1e3
    );
}
