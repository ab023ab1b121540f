//! Exact kNN (host function and the `umap.knn` op in a compiled graph) vs
//! numpy brute force with a stable sort, on integer point sets full of ties.

mod common;
use common::{f64s, load, matrix, usizes};
use rlx_ir::{DType, Graph, HostTensor, Shape};
use rlx_runtime::{Device, Session};
use rlx_umap::ops::{knn_from_distances_node, knn_node, knn_query_node};
use rlx_umap::{knn, knn_from_distances, knn_query, UmapError};

/// The index output (I32 or I64) as usizes.
fn indices_of(t: &HostTensor) -> Vec<usize> {
    match t.to_vec::<i64>() {
        Ok(v) => v.iter().map(|&i| i as usize).collect(),
        Err(_) => t
            .to_vec::<i32>()
            .unwrap()
            .iter()
            .map(|&i| i as usize)
            .collect(),
    }
}

fn close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-12 * y.max(1.0), "{x} vs {y}");
    }
}

#[test]
fn host_knn_matches_numpy_including_ties() {
    for case in load("knn.json").as_array().unwrap() {
        let (pts, d) = matrix(&case["points"]);
        let k = case["k"].as_u64().unwrap() as usize;
        let r = knn(&pts, d, k).unwrap();
        assert_eq!(r.indices, usizes(&case["indices"]));
        close(
            &r.distances,
            &case["distances"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(f64s)
                .collect::<Vec<_>>(),
        );
        let (q, _) = matrix(&case["queries"]);
        let r = knn_query(&q, &pts, d, k).unwrap();
        assert_eq!(r.indices, usizes(&case["query_indices"]));
        close(
            &r.distances,
            &case["query_distances"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(f64s)
                .collect::<Vec<_>>(),
        );
    }
}

#[test]
fn knn_op_in_a_graph_matches_numpy() {
    for case in load("knn.json").as_array().unwrap() {
        let (pts, d) = matrix(&case["points"]);
        let (q, _) = matrix(&case["queries"]);
        let n = pts.len() / d;
        let m = q.len() / d;
        let k = case["k"].as_u64().unwrap() as usize;
        // Self kNN, f64 input, I32 indices.
        let mut g = Graph::new("knn");
        let x = g.input("x", Shape::new(&[n, d], DType::F64));
        let (i, dist) = knn_node(&mut g, x, k, DType::I32).unwrap();
        g.set_outputs(vec![i, dist]);
        let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
        let out = c
            .try_run_typed(&[("x", &HostTensor::from_vec(pts.clone(), &[n, d]).unwrap())])
            .unwrap();
        let idx = indices_of(&out[0]);
        assert_eq!(idx, usizes(&case["indices"]));
        close(
            &out[1].to_vec::<f64>().unwrap(),
            &case["distances"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(f64s)
                .collect::<Vec<_>>(),
        );
        // Query kNN, f32 input, I64 indices.
        let mut g = Graph::new("knn_query");
        let qi = g.input("q", Shape::new(&[m, d], DType::F32));
        let x = g.input("x", Shape::new(&[n, d], DType::F32));
        let (i, dist) = knn_query_node(&mut g, qi, x, k, DType::I64).unwrap();
        g.set_outputs(vec![i, dist]);
        let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
        let qf: Vec<f32> = q.iter().map(|&v| v as f32).collect();
        let pf: Vec<f32> = pts.iter().map(|&v| v as f32).collect();
        let out = c
            .try_run_typed(&[
                ("q", &HostTensor::from_vec(qf, &[m, d]).unwrap()),
                ("x", &HostTensor::from_vec(pf, &[n, d]).unwrap()),
            ])
            .unwrap();
        let idx = indices_of(&out[0]);
        assert_eq!(idx, usizes(&case["query_indices"]));
        let want = case["query_distances"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(f64s);
        for (got, want) in out[1].to_vec::<f32>().unwrap().iter().zip(want) {
            assert!((*got as f64 - want).abs() < 1e-6 * want.max(1.0));
        }
    }
}

#[test]
fn knn_op_refuses_bad_k_and_shapes_by_name() {
    let mut g = Graph::new("bad");
    let x = g.input("x", Shape::new(&[4, 2], DType::F32));
    let e = knn_node(&mut g, x, 5, DType::I32).unwrap_err().to_string();
    assert!(e.contains("umap.knn") || e.contains("k must be"), "{e}");
    let mut g = Graph::new("bad_dtype");
    let x = g.input("x", Shape::new(&[4, 2], DType::I32));
    let e = knn_node(&mut g, x, 2, DType::I32).unwrap_err().to_string();
    assert!(e.contains("f32 / f64"), "{e}");
}

#[test]
fn host_knn_refuses_bad_input() {
    assert!(matches!(
        knn(&[0.0; 6], 2, 4),
        Err(UmapError::InvalidParameter { name: "k", .. })
    ));
    assert!(matches!(
        knn(&[0.0; 5], 2, 1),
        Err(UmapError::InvalidData { name: "data", .. })
            | Err(UmapError::InvalidData {
                name: "queries",
                ..
            })
    ));
    assert!(matches!(
        knn(&[0.0, f64::NAN, 1.0, 2.0], 2, 1),
        Err(UmapError::NonFinite { row: 0, col: 1, .. })
    ));
}

/// Squared distances of integer points: exact in f64, ties included.
fn pairwise_squared(pts: &[f64], d: usize) -> Vec<f64> {
    let rows: Vec<&[f64]> = pts.chunks_exact(d).collect();
    rows.iter()
        .flat_map(|a| {
            rows.iter()
                .map(|b| {
                    a.iter()
                        .zip(*b)
                        .map(|(x, y)| (x - y) * (x - y))
                        .sum::<f64>()
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn knn_from_a_distance_matrix_matches_numpy() {
    for case in load("knn.json").as_array().unwrap() {
        let (pts, d) = matrix(&case["points"]);
        let n = pts.len() / d;
        let k = case["k"].as_u64().unwrap() as usize;
        let d2 = pairwise_squared(&pts, d);
        let want_d: Vec<f64> = case["distances"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(f64s)
            .map(|v| v * v)
            .collect();
        let r = knn_from_distances(&d2, n, k).unwrap();
        assert_eq!(r.indices, usizes(&case["indices"]));
        close(&r.distances, &want_d);
        let mut g = Graph::new("knn_dist");
        let x = g.input("d", Shape::new(&[n, n], DType::F64));
        let (i, dist) = knn_from_distances_node(&mut g, x, k, DType::I64).unwrap();
        g.set_outputs(vec![i, dist]);
        let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
        let out = c
            .try_run_typed(&[("d", &HostTensor::from_vec(d2, &[n, n]).unwrap())])
            .unwrap();
        let idx = indices_of(&out[0]);
        assert_eq!(idx, usizes(&case["indices"]));
        close(&out[1].to_vec::<f64>().unwrap(), &want_d);
    }
}
