//! Trustworthiness vs scikit-learn on fixed embeddings.

mod common;
use common::{digits, load, matrix};
use rlx_umap::{trustworthiness, UmapError};

#[test]
fn trustworthiness_matches_sklearn() {
    let fx = load("trust.json");
    let (x, y) = matrix(&fx["small_x"]);
    let (e, d) = matrix(&fx["small_embedding"]);
    let t = trustworthiness(&x, y, &e, d, 5).unwrap();
    assert!(
        (t - fx["small_trust"].as_f64().unwrap()).abs() < 1e-12,
        "{t}"
    );
    let t = trustworthiness(&x, y, &e, d, 10).unwrap();
    assert!(
        (t - fx["small_trust_k10"].as_f64().unwrap()).abs() < 1e-12,
        "{t}"
    );

    // Digits: integer pixels, so input-space distance ties exist; sklearn's
    // argsort orders them arbitrarily and ours by index, hence the tolerance.
    let (digits, _) = digits();
    let (p, _) = matrix(&fx["projection"]);
    let proj: Vec<f64> = digits
        .chunks_exact(64)
        .flat_map(|r| {
            (0..2)
                .map(|c| (0..64).map(|i| r[i] * p[i * 2 + c]).sum::<f64>())
                .collect::<Vec<_>>()
        })
        .collect();
    let t = trustworthiness(&digits, 64, &proj, 2, 5).unwrap();
    let want = fx["digits_trust"].as_f64().unwrap();
    assert!((t - want).abs() < 1e-4, "{t} vs sklearn {want}");
}

#[test]
fn trustworthiness_refuses_mismatched_input() {
    let x = vec![0.0; 20];
    assert!(matches!(
        trustworthiness(&x, 2, &[0.0; 8], 2, 1),
        Err(UmapError::InvalidData {
            name: "embedding",
            ..
        })
    ));
    assert!(matches!(
        trustworthiness(&x, 2, &x, 2, 5),
        Err(UmapError::InvalidParameter { name: "k", .. })
    ));
}
