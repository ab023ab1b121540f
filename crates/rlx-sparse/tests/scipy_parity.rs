//! rlx-sparse vs scipy.sparse (fixtures of tools/gen_sparse_fixtures.py).

use rlx_sparse::*;
use serde_json::Value;

fn fixtures() -> Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sparse.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

fn csr(v: &Value) -> CsrMatrix<f64> {
    let s = usizes(&v["shape"]);
    CsrMatrix::try_new(
        s[0],
        s[1],
        usizes(&v["indptr"]),
        usizes(&v["indices"]),
        f64s(&v["data"]),
    )
    .unwrap()
}

fn close(got: &[f64], want: &[f64], rtol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rtol * scale,
            "{what}[{i}]: {g} vs scipy {w}"
        );
    }
}

#[test]
fn products_match_scipy_bit_for_bit() {
    let fx = fixtures();
    for (k, case) in fx["products"].as_array().unwrap().iter().enumerate() {
        let a = csr(case);
        // scipy's csr_matvec sums each row in stored (sorted) order, as here
        assert_eq!(
            a.spmv(&f64s(&case["x"])).unwrap(),
            f64s(&case["Ax"]),
            "case {k} A x"
        );
        close(
            &a.spmv_transpose(&f64s(&case["y"])).unwrap(),
            &f64s(&case["ATy"]),
            1e-14,
            "A^T y",
        );
        close(
            &a.spmm(&f64s(&case["B"]), 3).unwrap(),
            &f64s(&case["AB"]),
            1e-14,
            "A B",
        );
        close(
            &a.transpose().spmv(&f64s(&case["y"])).unwrap(),
            &f64s(&case["ATy"]),
            1e-14,
            "transpose",
        );
        // format round trips keep the matrix
        assert_eq!(a.to_csc().to_csr(), a);
        assert_eq!(a.to_coo().to_csr(), a);
        let (m, n) = a.shape();
        assert_eq!(CsrMatrix::from_dense(m, n, &a.to_dense()).unwrap(), a);
    }
}

#[test]
fn unsorted_and_duplicate_indices_canonicalise_as_scipy() {
    let fx = fixtures();
    let c = &fx["canonical"];
    let a = csr(c);
    let want = &c["canonical"];
    assert_eq!(a.indptr(), usizes(&want["indptr"]));
    let indices: Vec<usize> = a.indices().iter().map(|&j| j as usize).collect();
    assert_eq!(indices, usizes(&want["indices"]));
    assert_eq!(a.values(), f64s(&want["data"]));
    assert_eq!(a.to_dense(), f64s(&c["dense"]));
}

#[test]
fn direct_solves_match_spsolve() {
    let fx = fixtures();
    let g = &fx["direct"]["general"];
    let a = csr(g);
    close(
        &solve_lu(&a, &f64s(&g["b"])).unwrap(),
        &f64s(&g["x"]),
        1e-12,
        "LU x",
    );
    close(
        &solve_lu(&a, &f64s(&g["B"])).unwrap(),
        &f64s(&g["X"]),
        1e-12,
        "LU X (2 rhs)",
    );
    let s = &fx["direct"]["spd"];
    let spd = csr(s);
    close(
        &solve_cholesky(&spd, &f64s(&s["b"])).unwrap(),
        &f64s(&s["x"]),
        1e-12,
        "Cholesky x",
    );
    close(
        &solve_lu(&spd, &f64s(&s["b"])).unwrap(),
        &f64s(&s["x"]),
        1e-12,
        "LU on SPD",
    );
    // f32 systems solve in f64 and round once
    let a32 = CsrMatrix::try_new(
        a.shape().0,
        a.shape().1,
        a.indptr().to_vec(),
        a.indices().iter().map(|&j| j as usize).collect(),
        a.values().iter().map(|&v| v as f32).collect(),
    )
    .unwrap();
    let b32: Vec<f32> = f64s(&g["b"]).iter().map(|&v| v as f32).collect();
    let x32 = solve_lu(&a32, &b32).unwrap();
    let x64: Vec<f64> = x32.iter().map(|&v| v as f64).collect();
    close(&x64, &f64s(&g["x"]), 1e-5, "LU f32");
}

#[test]
fn singular_and_indefinite_systems_are_errors() {
    // structurally singular: an empty row
    let a = CsrMatrix::try_new(3, 3, vec![0, 1, 1, 2], vec![0, 2], vec![1.0, 1.0]).unwrap();
    assert!(matches!(
        solve_lu(&a, &[1.0, 1.0, 1.0]),
        Err(SparseError::Factorization { method: "LU", .. })
    ));
    // numerically singular: two equal rows
    let b = CsrMatrix::from_dense(2, 2, &[1.0, 2.0, 1.0, 2.0]).unwrap();
    assert!(solve_lu(&b, &[1.0, 1.0]).is_err());
    // symmetric but indefinite
    let c = CsrMatrix::from_dense(2, 2, &[1.0, 2.0, 2.0, 1.0]).unwrap();
    let e = solve_cholesky(&c, &[1.0, 1.0]).unwrap_err().to_string();
    assert!(e.contains("Cholesky factorization failed"), "{e}");
    // shapes
    assert!(matches!(
        solve_lu(&c, &[1.0, 1.0, 1.0]),
        Err(SparseError::Shape { .. })
    ));
}

#[test]
fn krylov_solvers_follow_scipy() {
    let fx = fixtures();
    let p = &fx["iterative"]["poisson"];
    let a = csr(p);
    let b = f64s(&p["b"]);
    let opts = IterativeOptions {
        rtol: 1e-8,
        ..Default::default()
    };
    let r = cg(&a, &b, None, &opts).unwrap();
    assert!(r.converged());
    let its = p["cg_iterations"].as_u64().unwrap() as usize;
    assert!(
        r.iterations.abs_diff(its) <= 1,
        "cg: {} iterations, scipy {its}",
        r.iterations
    );
    close(&r.x, &f64s(&p["cg_x"]), 1e-7, "cg x");
    assert!(r.residual_norm <= 1e-8 * b.iter().map(|v| v * v).sum::<f64>().sqrt() * 1.01);
    let jac = IterativeOptions {
        preconditioner: Preconditioner::Jacobi,
        ..opts
    };
    let r = cg(&a, &b, None, &jac).unwrap();
    assert!(r.converged());
    close(&r.x, &f64s(&p["pcg_x"]), 1e-7, "pcg x");
    // out of iterations: reported, not a panic; the iterate is scipy's
    let short = cg(
        &a,
        &b,
        None,
        &IterativeOptions {
            maxiter: Some(5),
            ..opts
        },
    )
    .unwrap();
    assert_eq!(short.stop, StopReason::MaxIterations);
    assert_eq!(p["short_info"].as_u64(), Some(5));
    close(
        &short.x,
        &f64s(&p["short_x"]),
        1e-10,
        "cg after 5 iterations",
    );

    let c = &fx["iterative"]["convdiff"];
    let a = csr(c);
    let b = f64s(&c["b"]);
    for (pre, key, its_key) in [
        (
            Preconditioner::Identity,
            "bicgstab_x",
            "bicgstab_iterations",
        ),
        (
            Preconditioner::Jacobi,
            "pbicgstab_x",
            "pbicgstab_iterations",
        ),
    ] {
        let r = bicgstab(
            &a,
            &b,
            None,
            &IterativeOptions {
                preconditioner: pre,
                ..opts
            },
        )
        .unwrap();
        assert!(r.converged(), "{key}");
        let its = c[its_key].as_u64().unwrap() as usize;
        assert!(
            r.iterations.abs_diff(its) <= 1,
            "{key}: {} iterations, scipy {its}",
            r.iterations
        );
        close(&r.x, &f64s(&c[key]), 1e-6, key);
    }
}

#[test]
fn npz_files_written_by_scipy_load_and_ours_round_trip() {
    let fx = fixtures();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for f in fx["npz"]["files"].as_array().unwrap() {
        let name = f["file"].as_str().unwrap();
        let m = load_npz::<f64>(dir.join(name)).unwrap();
        let kind = match &m {
            NpzMatrix::Csr(_) => "csr",
            NpzMatrix::Csc(_) => "csc",
            NpzMatrix::Coo(_) => "coo",
        };
        assert_eq!(kind, f["format"].as_str().unwrap(), "{name}");
        let dense = m.clone().into_csr().to_dense();
        assert_eq!(dense, f64s(&f["dense"]), "{name}");
        let out = std::env::temp_dir().join(format!("rlx-sparse-{}-{name}", std::process::id()));
        save_npz(&out, &m).unwrap();
        assert_eq!(load_npz::<f64>(&out).unwrap(), m, "{name} round trip");
        std::fs::remove_file(&out).ok();
    }
}

#[test]
fn hostile_arrays_are_refused_with_the_position() {
    let e = |r: Result<CsrMatrix<f64>>| r.unwrap_err().to_string();
    assert_eq!(
        e(CsrMatrix::try_new(2, 2, vec![0, 1], vec![0], vec![1.0])),
        "indptr: length 2 for 2 lines; expected 3"
    );
    assert_eq!(
        e(CsrMatrix::try_new(2, 2, vec![1, 1, 1], vec![0], vec![1.0])),
        "indptr: starts at 1, not 0"
    );
    assert_eq!(
        e(CsrMatrix::try_new(
            2,
            2,
            vec![0, 2, 1],
            vec![0, 1],
            vec![1.0, 2.0]
        )),
        "indptr: decreases at position 2: 1 after 2"
    );
    assert_eq!(
        e(CsrMatrix::try_new(
            2,
            2,
            vec![0, 1, 3],
            vec![0, 1],
            vec![1.0, 2.0]
        )),
        "indptr: ends at 3 but there are 2 entries"
    );
    assert_eq!(
        e(CsrMatrix::try_new(
            2,
            2,
            vec![0, 1, 2],
            vec![0, 5],
            vec![1.0, 2.0]
        )),
        "column index 5 at position 1 is out of range for column count 2"
    );
    assert_eq!(
        e(CsrMatrix::try_new(
            2,
            2,
            vec![0, 1, 2],
            vec![0, 1],
            vec![1.0]
        )),
        "length mismatch: 2 indices but 1 values"
    );
    assert_eq!(
        CooMatrix::try_new(2, 3, vec![0, 2], vec![1, 1], vec![1.0, 2.0])
            .unwrap_err()
            .to_string(),
        "row index 2 at position 1 is out of range for row count 2"
    );
    assert!(matches!(
        CscMatrix::<f64>::try_new(3, 2, vec![0, 1, 1], vec![3], vec![1.0]),
        Err(SparseError::IndexOutOfRange {
            axis: "row",
            index: 3,
            ..
        })
    ));
    // a truncated / garbage npz
    let dir = std::env::temp_dir().join(format!("rlx-sparse-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/csc_plain.npz"),
    )
    .unwrap();
    for cut in [0, 10, good.len() / 2, good.len() - 1] {
        let p = dir.join(format!("cut{cut}.npz"));
        std::fs::write(&p, &good[..cut]).unwrap();
        assert!(matches!(
            load_npz::<f64>(&p),
            Err(SparseError::Npz(_)) | Err(SparseError::BadIndptr(_))
        ));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn spmm_values_gradient_matches_finite_differences() {
    let fx = fixtures();
    let case = &fx["products"][1];
    let a = csr(case);
    let (m, _) = a.shape();
    let b = f64s(&case["B"]);
    let g: Vec<f64> = (0..m * 3)
        .map(|i| ((i * 7 % 11) as f64 - 5.0) / 3.0)
        .collect();
    let loss = |vals: &[f64]| {
        let a2 = CsrMatrix::try_new(
            m,
            a.shape().1,
            a.indptr().to_vec(),
            a.indices().iter().map(|&j| j as usize).collect(),
            vals.to_vec(),
        )
        .unwrap();
        a2.spmm(&b, 3)
            .unwrap()
            .iter()
            .zip(&g)
            .map(|(y, g)| y * g)
            .sum::<f64>()
    };
    let grad = a.spmm_values_grad(&b, &g, 3).unwrap();
    let h = 1e-6;
    for p in 0..a.nnz() {
        let (mut up, mut down) = (a.values().to_vec(), a.values().to_vec());
        up[p] += h;
        down[p] -= h;
        let fd = (loss(&up) - loss(&down)) / (2.0 * h);
        assert!(
            (fd - grad[p]).abs() <= 1e-6 * (1.0 + fd.abs()),
            "entry {p}: {} vs fd {fd}",
            grad[p]
        );
    }
}
