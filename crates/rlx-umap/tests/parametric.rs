//! Parametric UMAP on digits: the encoder trained through rlx autodiff
//! beats the best linear 2-D map by a wide margin.
//!
//! umap-learn's ParametricUMAP needs TensorFlow (not available here), so its
//! value cannot be recorded. The thresholds are set between two measured
//! references from the fixture: PCA to 2-D (sklearn, trustworthiness 0.830:
//! what a linear encoder can reach at best, and roughly where an untrained
//! one starts) and umap-learn's non-parametric UMAP (0.989: an upper bound,
//! since the encoder is a constrained version of the free embedding it
//! optimises). The short schedule of the default test (1000 steps of 256
//! edges, to keep the suite's time down) reaches 0.932 here, so it must clear
//! PCA + 0.09 = 0.92; the default schedule (1000 steps of 1024 edges, the
//! ignored test) reaches 0.958-0.964 here (seeds 5 and 42) and must clear
//! non-parametric - 0.035.
mod common;
use common::{digits, f64s, load, to_f64};
use rlx_umap::parametric::{ParametricParams, ParametricUmap};
use rlx_umap::{trustworthiness, UmapError, UmapParams};

/// Trains on digits (pixels scaled to [0, 1], as umap-learn's parametric
/// examples feed them; the fuzzy graph is the same since kNN ranks do not
/// change) and returns (trustworthiness, PCA's, umap-learn's mean).
fn train(batch_size: usize) -> (f64, f64, f64) {
    let fx = load("umap_digits.json");
    let reference = f64s(&fx["fit_trust"]);
    let mean = reference.iter().sum::<f64>() / reference.len() as f64;
    let x: Vec<f64> = digits().0.iter().map(|p| p / 16.0).collect();
    let params = ParametricParams {
        umap: UmapParams {
            random_state: 5,
            ..UmapParams::default()
        },
        batch_size,
        ..ParametricParams::default()
    };
    let mut model = ParametricUmap::new(params);
    let e = model.fit_transform(&x, 64).unwrap();
    let t = trustworthiness(&x, 64, &to_f64(&e), 2, 5).unwrap();
    let losses = model.losses();
    let head: f32 = losses[..50].iter().sum::<f32>() / 50.0;
    let tail: f32 = losses[losses.len() - 50..].iter().sum::<f32>() / 50.0;
    println!("parametric trustworthiness {t:.4} (umap-learn non-parametric {mean:.4}); loss {head:.3} -> {tail:.3}");
    assert!(tail < head, "loss did not fall: {head} -> {tail}");
    // The trained encoder embeds points again identically (a forward pass).
    assert_eq!(model.transform(&x).unwrap(), e);
    (t, fx["pca_trust"].as_f64().unwrap(), mean)
}

#[test]
fn parametric_umap_on_digits_beats_pca() {
    let (t, pca, _) = train(256);
    assert!(t >= pca + 0.09, "trustworthiness {t} vs PCA {pca}");
}

#[test]
#[ignore = "the default schedule: minutes on a shared CPU"]
fn parametric_umap_default_schedule_is_close_to_umap_learn() {
    let (t, _, umap_learn) = train(ParametricParams::default().batch_size);
    assert!(
        t >= umap_learn - 0.035,
        "trustworthiness {t} vs umap-learn {umap_learn}"
    );
}

#[test]
fn parametric_refuses_bad_settings() {
    let x = vec![0.0; 30 * 4];
    let mut m = ParametricUmap::new(ParametricParams {
        steps: 0,
        ..Default::default()
    });
    assert!(matches!(
        m.fit_transform(&x, 4),
        Err(UmapError::InvalidParameter { .. })
    ));
    assert!(matches!(
        ParametricUmap::new(Default::default()).transform(&x),
        Err(UmapError::NotFitted)
    ));
}
