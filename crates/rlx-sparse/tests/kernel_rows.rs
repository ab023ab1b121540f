//! The row loops at every row-length regime (0, 1, 3, 4, 5, 15, 16, 17 and
//! 40 entries: the single-accumulator loop, the four-accumulator loop and
//! its remainders), f64 and f32, through the matrix API and the
//! `sparse.spmv` / `sparse.spmm` graph kernels, against numpy's dense
//! products. Fixture: `tools/gen_sparse_kernel_fixtures.py`.

use rlx_driver::Device;
use rlx_ir::{DType, Graph, HostTensor, Shape};
use rlx_runtime::Session;
use rlx_sparse::graph::{spmm, spmv, CsrPattern};
use rlx_sparse::{CsrMatrix, Scalar};
use serde_json::Value;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/kernel_rows.json")).unwrap()
}

fn nums(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn cast<T: Scalar>(v: &Value) -> Vec<T> {
    nums(v).into_iter().map(T::from_f64).collect()
}

fn usizes(v: &Value) -> Vec<usize> {
    nums(v).into_iter().map(|x| x as usize).collect()
}

fn matrix<T: Scalar>(fx: &Value, dtype: &str) -> CsrMatrix<T> {
    let s = usizes(&fx["shape"]);
    CsrMatrix::try_new(
        s[0],
        s[1],
        usizes(&fx["indptr"]),
        usizes(&fx["indices"]),
        cast(&fx[dtype]["data"]),
    )
    .unwrap()
}

/// `|got - want| <= tol (1 + |want|)` elementwise.
fn close<T: Scalar>(what: &str, got: &[T], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.to_f64();
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{k}]: {g} vs numpy {w}"
        );
    }
}

fn check_matrix_api<T: Scalar>(dtype: &str, tol: f64) {
    let fx = fixture();
    let (a, c) = (matrix::<T>(&fx, dtype), &fx[dtype]);
    let k = fx["k"].as_u64().unwrap() as usize;
    let (x, y, b, g) = (
        cast::<T>(&c["x"]),
        cast(&c["y"]),
        cast(&c["B"]),
        cast(&c["G"]),
    );
    let ax = a.spmv(&x).unwrap();
    close(&format!("{dtype} A x"), &ax, &nums(&c["Ax"]), tol);
    let mut into = vec![T::from_f64(7.0); a.shape().0];
    a.spmv_into(&x, &mut into).unwrap();
    assert_eq!(into, ax, "{dtype}: spmv_into overwrites y with A x");
    close(
        &format!("{dtype} A B"),
        &a.spmm(&b, k).unwrap(),
        &nums(&c["AB"]),
        tol,
    );
    close(
        &format!("{dtype} A^T y"),
        &a.spmv_transpose(&y).unwrap(),
        &nums(&c["ATy"]),
        tol,
    );
    close(
        &format!("{dtype} (G B^T) on the pattern"),
        &a.spmm_values_grad(&b, &g, k).unwrap(),
        &nums(&c["GBt"]),
        tol,
    );
}

#[test]
fn matrix_products_match_dense_numpy_at_every_row_length_f64() {
    check_matrix_api::<f64>("f64", 1e-13);
}

#[test]
fn matrix_products_match_dense_numpy_at_every_row_length_f32() {
    check_matrix_api::<f32>("f32", 1e-5);
}

fn check_graph_kernels(dtype: &str, dt: DType, tol: f64) {
    let fx = fixture();
    let c = &fx[dtype];
    let s = usizes(&fx["shape"]);
    let (m, n, k) = (s[0], s[1], fx["k"].as_u64().unwrap() as usize);
    let i32s = |v: &Value| -> Vec<i32> { nums(v).into_iter().map(|x| x as i32).collect() };
    let (ip, ix) = (i32s(&fx["indptr"]), i32s(&fx["indices"]));
    let nnz = ix.len();
    let host = |v: &Value, dims: &[usize]| match dt {
        DType::F32 => HostTensor::from_vec(cast::<f32>(v), dims).unwrap(),
        _ => HostTensor::from_vec(cast::<f64>(v), dims).unwrap(),
    };
    let mut g = Graph::new("kernel_rows");
    let p = CsrPattern {
        indptr: g.constant_tensor(&HostTensor::from_vec(ip, &[m + 1]).unwrap()),
        indices: g.constant_tensor(&HostTensor::from_vec(ix, &[nnz]).unwrap()),
        nrows: m,
        ncols: n,
    };
    let v = g.input("v", Shape::new(&[nnz], dt));
    let x = g.input("x", Shape::new(&[n], dt));
    let b = g.input("b", Shape::new(&[n, k], dt));
    let y = g.input("y", Shape::new(&[m], dt));
    let outs = vec![
        spmv(&mut g, &p, v, x, false).unwrap(),
        spmm(&mut g, &p, v, b, false).unwrap(),
        spmv(&mut g, &p, v, y, true).unwrap(),
    ];
    g.set_outputs(outs);
    let inputs = [
        ("v", host(&c["data"], &[nnz])),
        ("x", host(&c["x"], &[n])),
        ("b", host(&c["B"], &[n, k])),
        ("y", host(&c["y"], &[m])),
    ];
    let refs: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (*n, t)).collect();
    let got: Vec<Vec<f64>> = Session::new(Device::Cpu)
        .try_compile(g)
        .unwrap()
        .try_run_typed(&refs)
        .unwrap()
        .iter()
        .map(|t| t.to_f64_lossy())
        .collect();
    close(&format!("graph {dtype} A x"), &got[0], &nums(&c["Ax"]), tol);
    close(&format!("graph {dtype} A B"), &got[1], &nums(&c["AB"]), tol);
    close(
        &format!("graph {dtype} A^T y"),
        &got[2],
        &nums(&c["ATy"]),
        tol,
    );
}

#[test]
fn graph_kernels_match_dense_numpy_at_every_row_length() {
    check_graph_kernels("f64", DType::F64, 1e-13);
    check_graph_kernels("f32", DType::F32, 1e-5);
}
