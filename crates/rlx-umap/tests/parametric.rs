//! Parametric UMAP on digits: the encoder trained through rlx autodiff
//! reaches a trustworthiness close to non-parametric UMAP's.
//!
//! umap-learn's ParametricUMAP needs TensorFlow (not available here), so the
//! threshold comes from the published comparison instead: Sainburg, McInnes
//! & Gentner (2021, "Parametric UMAP embeddings for representation and
//! semi-supervised learning", Table / Fig. on trustworthiness) report
//! parametric and non-parametric UMAP within about 0.01-0.02 of each other
//! on small image sets. We ask for umap-learn's non-parametric value minus
//! 0.03 (and the loss to fall), which a linear projection or an untrained
//! encoder does not reach (checked below).

mod common;
use common::{digits, f64s, load, to_f64};
use rlx_umap::parametric::{ParametricParams, ParametricUmap};
use rlx_umap::{trustworthiness, UmapError, UmapParams};

#[test]
fn parametric_umap_on_digits_is_trustworthy() {
    let fx = load("umap_digits.json");
    let reference = f64s(&fx["fit_trust"]);
    let mean = reference.iter().sum::<f64>() / reference.len() as f64;
    let (x, _) = digits();
    let params = ParametricParams {
        umap: UmapParams { random_state: 5, ..UmapParams::default() },
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
    assert!(t >= mean - 0.03, "trustworthiness {t} vs umap-learn {mean}");
    // The trained encoder embeds new points (here the same ones) identically.
    let again = model.transform(&x).unwrap();
    assert_eq!(again, e);
}

#[test]
fn parametric_refuses_bad_settings() {
    let x = vec![0.0; 30 * 4];
    let mut m = ParametricUmap::new(ParametricParams { steps: 0, ..Default::default() });
    assert!(matches!(m.fit_transform(&x, 4), Err(UmapError::InvalidParameter { .. })));
    assert!(matches!(ParametricUmap::new(Default::default()).transform(&x), Err(UmapError::NotFitted)));
}
