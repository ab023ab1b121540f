//! The custom ops inside a compiled graph on the CPU backend, against the
//! same scipy / numpy fixtures as the host functions.

use rlx_geo::ops::{delaunay_node, voronoi_grid_node};
use rlx_geo::VoronoiMode;
use rlx_ir::{DType, Graph, HostTensor, Shape};
use rlx_runtime::{Device, Session};
use serde_json::Value;
use std::collections::BTreeSet;

fn load(name: &str) -> Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn run(g: Graph, name: &str, x: HostTensor) -> Vec<i32> {
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    c.try_run_typed(&[(name, &x)]).unwrap()[0]
        .to_vec::<i32>()
        .unwrap()
}

#[test]
fn delaunay_op_matches_scipy_in_a_graph() {
    let fx = load("delaunay.json");
    for case in fx.as_array().unwrap() {
        let pts = case["points"].as_array().unwrap();
        let n = pts.len();
        let integer = case["integer"].as_bool().unwrap();
        let mut g = Graph::new("tri");
        let dtype = if integer { DType::I64 } else { DType::F64 };
        let x = g.input("points", Shape::new(&[n, 2], dtype));
        let t = delaunay_node(&mut g, x).unwrap();
        g.set_outputs(vec![t]);
        let host = if integer {
            let v: Vec<i64> = pts
                .iter()
                .flat_map(|p| [p[0].as_i64().unwrap(), p[1].as_i64().unwrap()])
                .collect();
            HostTensor::from_vec(v, &[n, 2]).unwrap()
        } else {
            let v: Vec<f64> = pts
                .iter()
                .flat_map(|p| [p[0].as_f64().unwrap(), p[1].as_f64().unwrap()])
                .collect();
            HostTensor::from_vec(v, &[n, 2]).unwrap()
        };
        let out = run(g, "points", host);
        assert_eq!(out.len(), 2 * n * 3);
        let got: BTreeSet<[i32; 3]> = out
            .chunks_exact(3)
            .filter(|t| t[0] >= 0)
            .map(|t| {
                let mut s = [t[0], t[1], t[2]];
                s.sort();
                s
            })
            .collect();
        let want: BTreeSet<[i32; 3]> = case["triangles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| [0, 1, 2].map(|k| t[k].as_i64().unwrap() as i32))
            .collect();
        assert_eq!(got, want, "{}", case["name"]);
    }
}

#[test]
fn voronoi_op_matches_numpy_in_a_graph_and_text_round_trips() {
    let fx = load("voronoi.json");
    for case in fx.as_array().unwrap() {
        let (w, h) = (
            case["width"].as_u64().unwrap() as usize,
            case["height"].as_u64().unwrap() as usize,
        );
        let sites: Vec<f64> = case["sites"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| [p[0].as_f64().unwrap(), p[1].as_f64().unwrap()])
            .collect();
        let n = sites.len() / 2;
        let mut g = Graph::new("vor");
        let s = g.input("sites", Shape::new(&[n, 2], DType::F64));
        let v = voronoi_grid_node(&mut g, s, w, h, VoronoiMode::Exact).unwrap();
        g.set_outputs(vec![v]);
        let text = g.to_text();
        let parsed = Graph::from_text(&text).unwrap();
        assert_eq!(parsed.to_text(), text);
        let want: Vec<i32> = case["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap() as i32)
            .collect();
        assert_eq!(
            run(
                parsed,
                "sites",
                HostTensor::from_vec(sites, &[n, 2]).unwrap()
            ),
            want,
            "{}",
            case["name"]
        );
    }
}

#[test]
fn bad_shapes_and_modes_are_named_at_build_time() {
    let mut g = Graph::new("bad");
    let x = g.input("x", Shape::new(&[5, 3], DType::F64));
    let e = delaunay_node(&mut g, x).unwrap_err().to_string();
    assert!(e.contains("geo.delaunay") || e.contains("[n, 2]"), "{e}");
    assert!(e.contains("[n, 2]"), "{e}");
    let b = g.input("b", Shape::new(&[5, 2], DType::Bool));
    assert!(delaunay_node(&mut g, b)
        .unwrap_err()
        .to_string()
        .contains("f32 / f64 / i32 / i64"));
}
