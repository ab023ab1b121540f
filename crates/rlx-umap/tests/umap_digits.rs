//! UMAP on digits vs umap-learn: trustworthiness of fit and of transformed
//! held-out points, reproducibility, and refusals.

mod common;
use common::{digits, f64s, load, to_f64};
use rlx_umap::{knn_query, trustworthiness, Umap, UmapError, UmapParams};

fn split(x: &[f64], every: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for (i, r) in x.chunks_exact(64).enumerate() {
        if i % every == 0 {
            test.extend_from_slice(r)
        } else {
            train.extend_from_slice(r)
        }
    }
    (train, test)
}

#[test]
fn fit_on_digits_is_as_trustworthy_as_umap_learn() {
    let fx = load("umap_digits.json");
    let reference = f64s(&fx["fit_trust"]);
    let mean = reference.iter().sum::<f64>() / reference.len() as f64;
    let (x, _) = digits();
    let mut model = Umap::new(UmapParams {
        random_state: 7,
        ..UmapParams::default()
    });
    let e = model.fit_transform(&x, 64).unwrap();
    assert_eq!(e.len(), 1797 * 2);
    let t = trustworthiness(&x, 64, &to_f64(&e), 2, 5).unwrap();
    println!("trustworthiness {t:.4}, umap-learn {reference:?}");
    assert!(
        t >= mean - 0.01,
        "trustworthiness {t} vs umap-learn mean {mean}"
    );
}

#[test]
fn transform_of_held_out_points_is_consistent_with_fit() {
    let fx = load("umap_digits.json");
    let every = fx["held_out_every"].as_u64().unwrap() as usize;
    let (x, _) = digits();
    let (train, test) = split(&x, every);
    let mut model = Umap::new(UmapParams {
        random_state: 3,
        ..UmapParams::default()
    });
    model.fit(&train, 64).unwrap();
    let e = model.transform(&test).unwrap();
    let t = trustworthiness(&test, 64, &to_f64(&e), 2, 5).unwrap();
    let want_t = fx["transform_trust"].as_f64().unwrap();
    assert!(
        t >= want_t - 0.01,
        "transform trustworthiness {t} vs umap-learn {want_t}"
    );

    // Each held-out point's 15 nearest training points in the embedding are
    // mostly among its 15 input-space nearest training points.
    let k = 15;
    let input = knn_query(&test, &train, 64, k).unwrap();
    let emb = knn_query(&to_f64(&e), &to_f64(model.embedding().unwrap()), 2, k).unwrap();
    let m = test.len() / 64;
    let overlap: f64 = (0..m)
        .map(|i| {
            let a = &input.indices[i * k..(i + 1) * k];
            emb.indices[i * k..(i + 1) * k]
                .iter()
                .filter(|j| a.contains(j))
                .count() as f64
                / k as f64
        })
        .sum::<f64>()
        / m as f64;
    let want_o = fx["transform_overlap"].as_f64().unwrap();
    println!("transform trustworthiness {t:.4} (umap-learn {want_t:.4}), overlap {overlap:.3} (umap-learn {want_o:.3})");
    assert!(
        overlap >= want_o - 0.05,
        "overlap {overlap} vs umap-learn {want_o}"
    );
}

#[test]
fn same_seed_gives_a_bit_identical_embedding() {
    let (x, _) = digits();
    let x = &x[..400 * 64];
    let params = UmapParams {
        n_epochs: Some(60),
        random_state: 11,
        ..UmapParams::default()
    };
    let a = Umap::new(params.clone()).fit_transform(x, 64).unwrap();
    let b = Umap::new(params.clone()).fit_transform(x, 64).unwrap();
    assert!(a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()));
    let c = Umap::new(UmapParams {
        random_state: 12,
        ..params
    })
    .fit_transform(x, 64)
    .unwrap();
    assert!(a.iter().zip(&c).any(|(p, q)| p.to_bits() != q.to_bits()));
}

#[test]
fn bad_parameters_and_data_are_refused_by_name() {
    let x = vec![0.5; 40 * 3];
    let fit = |p: UmapParams| Umap::new(p).fit(&x, 3).map(|_| ()).unwrap_err();
    assert!(matches!(
        fit(UmapParams {
            n_neighbors: 1,
            ..Default::default()
        }),
        UmapError::InvalidParameter {
            name: "n_neighbors",
            ..
        }
    ));
    assert!(matches!(
        fit(UmapParams {
            min_dist: 2.0,
            ..Default::default()
        }),
        UmapError::InvalidParameter {
            name: "min_dist",
            ..
        }
    ));
    assert!(matches!(
        fit(UmapParams {
            n_epochs: Some(0),
            ..Default::default()
        }),
        UmapError::InvalidParameter {
            name: "n_epochs",
            ..
        }
    ));
    assert!(matches!(
        fit(UmapParams {
            n_neighbors: 40,
            ..Default::default()
        }),
        UmapError::InvalidData { name: "x", .. }
    ));
    assert!(matches!(
        Umap::new(UmapParams::default()).transform(&x),
        Err(UmapError::NotFitted)
    ));
    let mut bad = x.clone();
    bad[7] = f64::INFINITY;
    assert!(matches!(
        Umap::new(UmapParams::default()).fit(&bad, 3).map(|_| ()),
        Err(UmapError::NonFinite { row: 2, col: 1, .. })
    ));
}
