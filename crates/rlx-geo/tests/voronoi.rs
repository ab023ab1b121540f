//! Voronoi grids vs a numpy brute-force nearest-site search.

use rlx_geo::{voronoi_grid, GeoError, VoronoiMode};
use serde_json::Value;

fn load(name: &str) -> Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn exact_and_jump_flood_match_numpy_brute_force() {
    let fx = load("voronoi.json");
    for case in fx.as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let (w, h) = (
            case["width"].as_u64().unwrap() as usize,
            case["height"].as_u64().unwrap() as usize,
        );
        let sites: Vec<[f64; 2]> = case["sites"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| [p[0].as_f64().unwrap(), p[1].as_f64().unwrap()])
            .collect();
        let want: Vec<i32> = case["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap() as i32)
            .collect();
        assert_eq!(
            voronoi_grid(&sites, w, h, VoronoiMode::Exact).unwrap(),
            want,
            "{name} exact"
        );
        // Jump flooding is approximate: nearly every pixel gets its nearest
        // site, and a wrong one is only slightly farther.
        let jfa = voronoi_grid(&sites, w, h, VoronoiMode::JumpFlood).unwrap();
        let d2 = |i: i32, p: usize| {
            let s = sites[i as usize];
            let (x, y) = ((p % w) as f64, (p / w) as f64);
            (s[0] - x).powi(2) + (s[1] - y).powi(2)
        };
        let wrong: Vec<usize> = (0..w * h).filter(|&p| jfa[p] != want[p]).collect();
        let worst = wrong
            .iter()
            .map(|&p| d2(jfa[p], p).sqrt() - d2(want[p], p).sqrt())
            .fold(0.0, f64::max);
        assert!(
            wrong.len() * 200 <= w * h,
            "{name}: JFA wrong at {} of {} pixels",
            wrong.len(),
            w * h
        );
        assert!(
            worst < 1.0,
            "{name}: JFA site {worst} farther than the nearest"
        );
    }
}

#[test]
fn bad_arguments_are_named() {
    assert_eq!(
        voronoi_grid(&[], 3, 3, VoronoiMode::Exact)
            .unwrap_err()
            .to_string(),
        "invalid argument sites: no sites: every pixel needs a nearest one"
    );
    assert!(matches!(
        voronoi_grid(
            &[[0.0, 0.0], [f64::INFINITY, 1.0]],
            3,
            3,
            VoronoiMode::JumpFlood
        ),
        Err(GeoError::NonFinite { index: 1, .. })
    ));
    assert!(voronoi_grid(&[[0.0, 0.0]], 1 << 20, 1 << 20, VoronoiMode::Exact).is_err());
    assert!(voronoi_grid(&[[0.0, 0.0]], 0, 5, VoronoiMode::JumpFlood)
        .unwrap()
        .is_empty());
}
