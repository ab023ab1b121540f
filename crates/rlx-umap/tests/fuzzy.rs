//! The fuzzy simplicial set and `find_ab_params` vs umap-learn.

mod common;
use common::{digits, f64s, load};
use rlx_umap::{find_ab_params, fuzzy_simplicial_set, knn, UmapError};

#[test]
fn fuzzy_graph_on_digits_matches_umap_learn() {
    let fx = load("fuzzy.json");
    let (x, _) = digits();
    let k = fx["n_neighbors"].as_u64().unwrap() as usize;
    let (graph, smooth) = fuzzy_simplicial_set(&knn(&x, 64, k).unwrap(), 1.0);
    let close = |a: f64, b: f64, what: &str| {
        assert!(
            (a - b).abs() <= 1e-5 * b.abs().max(1.0),
            "{what}: {a} vs {b}"
        );
    };
    for (i, (s, want)) in smooth.sigmas.iter().zip(f64s(&fx["sigmas"])).enumerate() {
        close(*s, want, &format!("sigma {i}"));
    }
    for (i, (r, want)) in smooth.rhos.iter().zip(f64s(&fx["rhos"])).enumerate() {
        close(*r, want, &format!("rho {i}"));
    }
    assert_eq!(graph.nnz(), fx["nnz"].as_u64().unwrap() as usize);
    close(
        graph.vals.iter().sum(),
        fx["sum"].as_f64().unwrap(),
        "graph sum",
    );
    let entries = fx["entries"].as_array().unwrap();
    let ours: Vec<_> = (0..graph.nnz()).filter(|&e| graph.rows[e] < 60).collect();
    assert_eq!(ours.len(), entries.len());
    for (&e, want) in ours.iter().zip(entries) {
        assert_eq!(graph.rows[e], want[0].as_u64().unwrap() as usize);
        assert_eq!(graph.cols[e], want[1].as_u64().unwrap() as usize);
        close(graph.vals[e], want[2].as_f64().unwrap(), "membership");
    }
}

#[test]
fn find_ab_params_matches_umap_learn() {
    for case in load("ab.json").as_array().unwrap() {
        let (s, m) = (
            case["spread"].as_f64().unwrap(),
            case["min_dist"].as_f64().unwrap(),
        );
        let (a, b) = find_ab_params(s, m).unwrap();
        let (wa, wb) = (case["a"].as_f64().unwrap(), case["b"].as_f64().unwrap());
        assert!(
            (a - wa).abs() < 1e-4 * wa,
            "spread {s} min_dist {m}: a {a} vs {wa}"
        );
        assert!(
            (b - wb).abs() < 1e-4 * wb,
            "spread {s} min_dist {m}: b {b} vs {wb}"
        );
    }
}

#[test]
fn find_ab_params_refuses_bad_arguments() {
    assert!(matches!(
        find_ab_params(0.0, 0.1),
        Err(UmapError::InvalidParameter { name: "spread", .. })
    ));
    assert!(matches!(
        find_ab_params(1.0, -0.1),
        Err(UmapError::InvalidParameter {
            name: "min_dist",
            ..
        })
    ));
}
