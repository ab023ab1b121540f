//! vmap of linalg ops against numpy's batched results (fixtures), mixed
//! batched / unbatched operands against per-example runs, and bad input
//! as typed errors naming the shapes; `lu_solve` against `numpy.linalg.solve`.

use rlx_autodiff::vmap;
use rlx_driver::Device;
use rlx_ir::{DType, Graph, HostTensor, Shape};
use rlx_runtime::Session;
use serde_json::Value;

fn case(name: &str) -> Value {
    let v: Value = serde_json::from_str(include_str!("fixtures/linalg.json")).unwrap();
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()
        .clone()
}

fn tensor(v: &Value) -> (Vec<usize>, Vec<f64>) {
    let dims = v["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let data = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    (dims, data)
}

fn run(g: Graph, inputs: &[(&str, HostTensor)]) -> Vec<Vec<f64>> {
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let refs: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (*n, t)).collect();
    c.try_run_typed(&refs)
        .unwrap()
        .iter()
        .map(|t| t.to_f64_lossy())
        .collect()
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (a, b) in got.iter().zip(want) {
        assert!(
            (a - b).abs() <= 1e-9 * (1.0 + b.abs()),
            "{got:?}\nvs\n{want:?}"
        );
    }
}

#[test]
fn vmap_of_cholesky_matches_numpy_batched() {
    // Fixture input [2, 3, 3, 3]: vmap a [3, 3, 3] graph over the first axis.
    let c = case("cholesky_batched");
    let (dims, data) = tensor(&c["inputs"][0]);
    let mut g = Graph::new("chol");
    let a = g.input("a", Shape::new(&dims[1..], DType::F64));
    let l = rlx_linalg::cholesky(&mut g, a).unwrap();
    g.set_outputs(vec![l]);
    let v = vmap(&g, &["a"], dims[0]).unwrap();
    let got = run(v, &[("a", HostTensor::from_vec(data, &dims).unwrap())]);
    close(&got[0], &tensor(&c["outputs"][0]).1);
}

#[test]
fn vmap_of_solve_with_an_unbatched_matrix_matches_per_example_solves() {
    let c = case("solve_4");
    let (ad, a) = tensor(&c["inputs"][0]);
    let (bd, b) = tensor(&c["inputs"][1]);
    let want = tensor(&c["outputs"][0]).1; // numpy.linalg.solve(a, b)
    let mut g = Graph::new("solve");
    let ai = g.input("a", Shape::new(&ad, DType::F64));
    let bi = g.input("b", Shape::new(&bd, DType::F64));
    let x = rlx_linalg::solve(&mut g, ai, bi).unwrap();
    g.set_outputs(vec![x]);
    // Batch b twice: [b, 2 b] -> [x, 2 x] (solve is linear in b).
    let v = vmap(&g, &["b"], 2).unwrap();
    let b2: Vec<f64> = b.iter().copied().chain(b.iter().map(|v| 2.0 * v)).collect();
    let mut dims = vec![2];
    dims.extend(&bd);
    let got = run(
        v,
        &[
            ("a", HostTensor::from_vec(a, &ad).unwrap()),
            ("b", HostTensor::from_vec(b2, &dims).unwrap()),
        ],
    );
    let want2: Vec<f64> = want
        .iter()
        .copied()
        .chain(want.iter().map(|v| 2.0 * v))
        .collect();
    close(&got[0], &want2);
}

#[test]
fn singular_solve_gives_non_finite_values_as_jax() {
    let mut g = Graph::new("sing");
    let a = g.input("a", Shape::new(&[2, 2], DType::F64));
    let b = g.input("b", Shape::new(&[2, 1], DType::F64));
    let x = rlx_linalg::solve(&mut g, a, b).unwrap();
    let i = rlx_linalg::inv(&mut g, a).unwrap();
    g.set_outputs(vec![x, i]);
    let got = run(
        g,
        &[
            (
                "a",
                HostTensor::from_vec(vec![1.0, 2.0, 2.0, 4.0], &[2, 2]).unwrap(),
            ),
            ("b", HostTensor::from_vec(vec![1.0, 1.0], &[2, 1]).unwrap()),
        ],
    );
    assert!(got[0].iter().any(|v| !v.is_finite()), "{:?}", got[0]);
    assert!(got[1].iter().any(|v| !v.is_finite()), "{:?}", got[1]);
}

#[test]
fn bad_shapes_and_dtypes_are_typed_errors_naming_them() {
    let mut g = Graph::new("bad");
    let rect = g.input("r", Shape::new(&[3, 2], DType::F64));
    let e = rlx_linalg::cholesky(&mut g, rect).unwrap_err().to_string();
    assert!(
        e.contains("linalg.cholesky") && e.contains("[..., n, n]") && e.contains("f64[3,2]"),
        "{e}"
    );
    let a = g.input("a", Shape::new(&[3, 3], DType::F64));
    let b = g.input("b", Shape::new(&[4, 1], DType::F64));
    let e = rlx_linalg::solve(&mut g, a, b).unwrap_err().to_string();
    assert!(e.contains("f64[3,3]") && e.contains("f64[4,1]"), "{e}");
    let b32 = g.input("b32", Shape::new(&[3, 1], DType::F32));
    let e = rlx_linalg::solve_triangular(&mut g, a, b32, true, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("share a dtype"), "{e}");
    let ints = g.input("i", Shape::new(&[2, 2], DType::I32));
    let e = rlx_linalg::det(&mut g, ints).unwrap_err().to_string();
    assert!(e.contains("f32 or f64"), "{e}");
}

#[test]
fn lu_solve_matches_numpy_solve() {
    let c = case("solve_4");
    let (ad, a) = tensor(&c["inputs"][0]);
    let (bd, b) = tensor(&c["inputs"][1]);
    let mut g = Graph::new("lu_solve");
    let ai = g.input("a", Shape::new(&ad, DType::F64));
    let bi = g.input("b", Shape::new(&bd, DType::F64));
    let f = rlx_linalg::lu(&mut g, ai).unwrap();
    let x = rlx_linalg::lu_solve(&mut g, f, bi).unwrap();
    g.set_outputs(vec![x]);
    let got = run(
        g,
        &[
            ("a", HostTensor::from_vec(a, &ad).unwrap()),
            ("b", HostTensor::from_vec(b, &bd).unwrap()),
        ],
    );
    close(&got[0], &tensor(&c["outputs"][0]).1);
}

/// Each multi-output decomposition is one factorizing custom node whose
/// outputs are read out of it (slices; `lu_unpack` for `lu`); its graph round-trips as text, and the parsed graph
/// still matches scipy / numpy.
#[test]
fn decompositions_factor_once_and_round_trip_as_text() {
    type Build = fn(&mut Graph, rlx_ir::NodeId) -> Vec<rlx_ir::NodeId>;
    let cases: [(&str, Build); 4] = [
        ("lu_batched", |g, a| {
            let (p, l, u) = rlx_linalg::lu(g, a).unwrap();
            vec![p, l, u]
        }),
        ("eigh_batched", |g, a| {
            let (w, v) = rlx_linalg::eigh(g, a).unwrap();
            vec![w, v]
        }),
        ("qr_square_batched", |g, a| {
            let (q, r) = rlx_linalg::qr(g, a).unwrap();
            vec![q, r]
        }),
        ("svd_square_batched", |g, a| {
            let (u, s, vt) = rlx_linalg::svd(g, a).unwrap();
            vec![u, s, vt]
        }),
    ];
    for (name, build) in cases {
        let c = case(name);
        let (dims, data) = tensor(&c["inputs"][0]);
        let mut g = Graph::new(name);
        let a = g.input("a", Shape::new(&dims, DType::F64));
        let outs = build(&mut g, a);
        g.set_outputs(outs);
        let customs = g
            .nodes()
            .iter()
            .filter(|n| matches!(&n.op, rlx_ir::Op::Custom(c) if c.name != rlx_linalg::LU_UNPACK))
            .count();
        assert_eq!(customs, 1, "{name}: {}", g.to_text());
        let text = g.to_text();
        let back = Graph::from_text(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        assert_eq!(back.to_text(), text);
        let got = run(back, &[("a", HostTensor::from_vec(data, &dims).unwrap())]);
        for (k, want) in c["outputs"].as_array().unwrap().iter().enumerate() {
            close(&got[k], &tensor(want).1);
        }
    }
}

/// With repeated eigenvalues / singular values only the vector derivatives
/// are undefined: the gradient of `sum(w)` (= `tr A`) and of `sum(s)` (the
/// nuclear norm, `U V^T` = `I` for a positive diagonal `A`) is the identity,
/// as JAX gives (its zero cotangents of `V` / `U`, `Vt` are skipped; ours
/// are masked).
#[test]
fn value_gradients_stay_finite_at_repeated_values() {
    use rlx_ir::GraphExt;
    type Values = fn(&mut Graph, rlx_ir::NodeId) -> rlx_ir::NodeId;
    let cases: [(&str, [f64; 3], Values); 2] = [
        ("eigh", [1.0, 1.0, 2.0], |g, a| {
            rlx_linalg::eigh(g, a).unwrap().0
        }),
        ("svd", [2.0, 2.0, 1.0], |g, a| {
            rlx_linalg::svd(g, a).unwrap().1
        }),
    ];
    for (name, diag, values) in cases {
        let mut g = Graph::new(name);
        let a = g.input("a", Shape::new(&[3, 3], DType::F64));
        let v = values(&mut g, a);
        let loss = g.sum(v, &[0], false);
        g.set_outputs(vec![loss]);
        let d = rlx_autodiff::grad(&g, &[a]).unwrap();
        let m: Vec<f64> = (0..9)
            .map(|k| if k % 4 == 0 { diag[k / 4] } else { 0.0 })
            .collect();
        let got = run(d, &[("a", HostTensor::from_vec(m, &[3, 3]).unwrap())]);
        let eye: Vec<f64> = (0..9).map(|k| f64::from(u8::from(k % 4 == 0))).collect();
        close(&got[0], &eye);
    }
}

/// A hand-made packed LU whose permutation column is out of range is a
/// run-time error naming the pivot, not a panic.
#[test]
fn lu_unpack_refuses_out_of_range_pivots() {
    use rlx_ir::custom::{CustomAttr, CustomAttrs, CustomOp};
    rlx_linalg::register();
    let mut g = Graph::new("bad_lu");
    let x = g.input("x", Shape::new(&[2, 3], DType::F64));
    let op = CustomOp::new(
        rlx_linalg::LU_UNPACK,
        CustomAttrs::new().with("output", CustomAttr::Int(0)),
    );
    let p = g.custom(op, &[x]).unwrap();
    g.set_outputs(vec![p]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let bad = HostTensor::from_vec(vec![1.0, 0.0, 7.0, 0.0, 1.0, 0.0], &[2, 3]).unwrap();
    let e = c.try_run_typed(&[("x", &bad)]).unwrap_err().to_string();
    assert!(e.contains("pivot 7"), "{e}");
}
