//! Delaunay triangulations vs scipy.spatial.Delaunay (unique triangulations,
//! checked exact in the fixture script) and, on degenerate sets, an exact
//! validity check with Shewchuk's predicates (`robust`).

use rlx_geo::{delaunay, delaunay_i64, GeoError, Triangulation};
use robust::{incircle, orient2d, Coord};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

fn load(name: &str) -> Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn c(p: [f64; 2]) -> Coord<f64> {
    Coord { x: p[0], y: p[1] }
}

/// Exact checks: CCW triangles over distinct representatives, every
/// interior edge locally Delaunay (the opposite vertex not strictly inside
/// the circumcircle), each edge in at most two triangles, and the triangles
/// covering the convex hull (Euler: t = 2n - 2 - h for n distinct points, h
/// on the hull boundary, when not all collinear).
fn assert_valid(points: &[[f64; 2]], t: &Triangulation) {
    let distinct: BTreeSet<i32> = t.representative.iter().copied().collect();
    let mut edges: HashMap<(i32, i32), Vec<i32>> = HashMap::new();
    for tri in &t.triangles {
        for &v in tri {
            assert!(distinct.contains(&v), "triangle {tri:?} uses a duplicate");
        }
        let [a, b, cc] = tri.map(|i| points[i as usize]);
        assert!(
            orient2d(c(a), c(b), c(cc)) > 0.0,
            "{tri:?} not counter-clockwise"
        );
        for k in 0..3 {
            let (u, v, w) = (tri[k], tri[(k + 1) % 3], tri[(k + 2) % 3]);
            edges.entry((u.min(v), u.max(v))).or_default().push(w);
        }
    }
    for (&(u, v), opp) in &edges {
        assert!(opp.len() <= 2, "edge ({u}, {v}) in {} triangles", opp.len());
        if opp.len() == 2 {
            for (i, &w) in opp.iter().enumerate() {
                let other = opp[1 - i];
                // (u, v, w) oriented CCW
                let (a, b) = if orient2d(
                    c(points[u as usize]),
                    c(points[v as usize]),
                    c(points[w as usize]),
                ) > 0.0
                {
                    (u, v)
                } else {
                    (v, u)
                };
                let inside = incircle(
                    c(points[a as usize]),
                    c(points[b as usize]),
                    c(points[w as usize]),
                    c(points[other as usize]),
                );
                assert!(
                    inside <= 0.0,
                    "edge ({u}, {v}) not Delaunay: {other} inside circle of {a} {b} {w}"
                );
            }
        }
    }
    let boundary = edges.values().filter(|o| o.len() == 1).count();
    if !t.triangles.is_empty() {
        let n = distinct.len();
        assert_eq!(
            t.triangles.len(),
            2 * n - 2 - boundary,
            "triangles do not tile the hull"
        );
    }
}

fn as_sets(tris: &[[i32; 3]]) -> BTreeSet<[i32; 3]> {
    tris.iter()
        .map(|t| {
            let mut s = *t;
            s.sort();
            s
        })
        .collect()
}

#[test]
fn random_sets_match_scipy() {
    let fx = load("delaunay.json");
    let cases = fx.as_array().unwrap();
    assert!(cases.len() >= 8);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let want: BTreeSet<[i32; 3]> = case["triangles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let v: Vec<i32> = t
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_i64().unwrap() as i32)
                    .collect();
                [v[0], v[1], v[2]]
            })
            .collect();
        let pts = case["points"].as_array().unwrap();
        let t = if case["integer"].as_bool().unwrap() {
            let p: Vec<[i64; 2]> = pts
                .iter()
                .map(|p| [p[0].as_i64().unwrap(), p[1].as_i64().unwrap()])
                .collect();
            delaunay_i64(&p).unwrap()
        } else {
            let p: Vec<[f64; 2]> = pts
                .iter()
                .map(|p| [p[0].as_f64().unwrap(), p[1].as_f64().unwrap()])
                .collect();
            let t = delaunay(&p).unwrap();
            assert_valid(&p, &t);
            t
        };
        assert_eq!(as_sets(&t.triangles), want, "{name}");
        let padded = t.padded();
        assert_eq!(padded.len(), 2 * pts.len() * 3, "{name}");
        assert!(padded[t.triangles.len() * 3..].iter().all(|&v| v == -1));
    }
}

#[test]
fn degenerate_sets_are_valid_and_deterministic() {
    // a 10 x 10 grid: every unit square is cocircular
    let grid: Vec<[f64; 2]> = (0..100)
        .map(|i| [(i % 10) as f64, (i / 10) as f64])
        .collect();
    // integer points on the circle of radius 25 (Pythagorean triples), plus the centre
    let mut circle = vec![[0.0, 0.0]];
    for (a, b) in [(25, 0), (24, 7), (20, 15), (15, 20), (7, 24), (0, 25)] {
        for (sx, sy) in [(1, 1), (-1, 1), (1, -1), (-1, -1)] {
            let p = [(sx * a) as f64, (sy * b) as f64];
            if !circle.contains(&p) {
                circle.push(p);
            }
        }
    }
    let ring: Vec<[f64; 2]> = circle[1..].to_vec();
    let dup = vec![
        [0.0, 0.0],
        [1.0, 0.0],
        [0.0, 1.0],
        [1.0, 0.0],
        [-0.0, 0.0],
        [0.25, 0.25],
        [0.0, 1.0],
    ];
    for (name, pts) in [
        ("grid", &grid),
        ("circle+centre", &circle),
        ("ring", &ring),
        ("duplicates", &dup),
    ] {
        let t = delaunay(pts).unwrap();
        assert_valid(pts, &t);
        assert!(!t.triangles.is_empty(), "{name}");
        assert_eq!(delaunay(pts).unwrap(), t, "{name}: not deterministic");
    }
    // grid: 81 squares, two triangles each
    assert_eq!(delaunay(&grid).unwrap().triangles.len(), 162);
    // duplicates collapse onto the first occurrence
    let t = delaunay(&dup).unwrap();
    assert_eq!(t.representative, [0, 1, 2, 1, 0, 5, 2]);
    assert_eq!(t.triangles.len(), 3);
    // all collinear / too few distinct points: no triangle, all padding
    let line: Vec<[f64; 2]> = (0..7).map(|i| [i as f64, 2.0 * i as f64 + 1.0]).collect();
    for pts in [&line[..], &line[..2], &[][..], &[[1.0, 1.0]; 4][..]] {
        let t = delaunay(pts).unwrap();
        assert!(t.triangles.is_empty());
        assert!(t.padded().iter().all(|&v| v == -1));
    }
}

#[test]
fn bad_input_names_the_point() {
    assert_eq!(
        delaunay(&[[0.0, 0.0], [1.0, f64::NAN]])
            .unwrap_err()
            .to_string(),
        "point 1 has a non-finite coordinate (1, NaN)"
    );
    assert!(matches!(
        delaunay(&[[0.0, 0.0], [1.0, 0.0], [1e-300, 2.0]]),
        Err(GeoError::OutOfRange { index: 2, .. })
    ));
    assert!(matches!(
        delaunay(&[[1e300, 0.0]]),
        Err(GeoError::OutOfRange { index: 0, .. })
    ));
    assert_eq!(
        delaunay_i64(&[[0, 0], [1 << 54, 3]])
            .unwrap_err()
            .to_string(),
        "point 1 integer coordinate 18014398509481984 exceeds 2^53 in magnitude (not exact in f64)"
    );
}
