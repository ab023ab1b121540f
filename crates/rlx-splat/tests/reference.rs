//! The reference renderer against an independent jax.numpy renderer
//! (image, projection, tiles, depth order, JAX autodiff gradients) and
//! finite differences of its own forward.

mod common;

use common::{assert_close, floats, scenes};
use rlx_ir::ops::splat::gaussian_splat_tile_count;
use rlx_splat::{backward, prepare, render, Gaussians, SplatRenderError};

#[test]
fn image_matches_the_jax_renderer() {
    for s in scenes() {
        let img = render(&s.params, &s.gaussians()).unwrap();
        assert_close(&s.name, &img, &floats(&s.json, "image"), 1e-10, 1e-10);
    }
}

#[test]
fn projection_tiles_and_order_match_the_jax_renderer() {
    for s in scenes() {
        let prep = prepare(&s.params, &s.gaussians()).unwrap();
        let j = &s.json;
        let n = prep.gaussians.len();
        let radius = floats(j, "radius");
        let rect = floats(j, "rect");
        let (px, py, conic) = (floats(j, "px"), floats(j, "py"), floats(j, "conic"));
        for (i, p) in prep.gaussians.iter().enumerate() {
            assert_eq!(p.radius, radius[i], "{} radius {i}", s.name);
            if !p.visible() {
                continue;
            }
            let r: Vec<f64> = p.rect.iter().map(|&v| v as f64).collect();
            assert_eq!(r, rect[4 * i..4 * i + 4], "{} rect {i}", s.name);
            assert_close("mean", &p.mean, &[px[i], py[i]], 1e-12, 1e-12);
            assert_close("conic", &p.conic, &conic[3 * i..3 * i + 3], 1e-10, 0.0);
        }
        let order: Vec<usize> = floats(j, "order").iter().map(|&v| v as usize).collect();
        assert_eq!(prep.order, order, "{} depth order", s.name);
        let counts: Vec<usize> = floats(j, "tile_counts")
            .iter()
            .map(|&v| v as usize)
            .collect();
        assert_eq!(prep.tile_counts, counts, "{} tile counts", s.name);
        assert_eq!(counts.len(), gaussian_splat_tile_count(32, 24));
        let culled = prep.gaussians.iter().filter(|p| !p.visible()).count();
        assert_eq!(culled, radius.iter().filter(|&&r| r == 0.0).count());
        assert!(n >= 20);
    }
    // The sparse scene has one Gaussian behind the camera and one off screen.
    let s = &scenes()[0];
    let prep = prepare(&s.params, &s.gaussians()).unwrap();
    assert!(!prep.gaussians[18].visible() && !prep.gaussians[19].visible());
}

#[test]
fn gradients_match_jax_autodiff() {
    for s in scenes() {
        let got = backward(&s.params, &s.gaussians(), &s.d_image_f64()).unwrap();
        let names = ["means", "scales", "rotations", "opacities", "colors"];
        for ((g, want), name) in got.into_array().iter().zip(s.jax_grads()).zip(names) {
            assert_close(&format!("{} d{name}", s.name), g, &want, 1e-9, 1e-9);
        }
    }
}

/// `sum(render(g) · d_image)`.
fn loss(s: &common::Scene, g: &Gaussians) -> f64 {
    let img = render(&s.params, g).unwrap();
    img.iter().zip(s.d_image_f64()).map(|(a, b)| a * b).sum()
}

#[test]
fn gradients_match_finite_differences() {
    let h = 1e-6;
    for s in scenes() {
        let g0 = s.gaussians();
        let grads = backward(&s.params, &g0, &s.d_image_f64()).unwrap();
        let n = g0.len();
        let mut checked = 0;
        for i in 0..n {
            // (field, width) in input order; perturb every coordinate of Gaussian i.
            for (field, w) in [(0, 3), (1, 3), (2, 4), (3, 1), (4, 3)] {
                for k in 0..w {
                    let bump = |sign: f64| {
                        let mut g = g0.clone();
                        let v = match field {
                            0 => &mut g.means[i][k],
                            1 => &mut g.scales[i][k],
                            2 => &mut g.rotations[i][k],
                            3 => &mut g.opacities[i],
                            _ => &mut g.colors[i][k],
                        };
                        *v += sign * h;
                        loss(&s, &g)
                    };
                    let fd = (bump(1.0) - bump(-1.0)) / (2.0 * h);
                    let an = [
                        &grads.means,
                        &grads.scales,
                        &grads.rotations,
                        &grads.opacities,
                        &grads.colors,
                    ][field][i * w + k];
                    assert!(
                        (fd - an).abs() <= 1e-5 * an.abs().max(1.0),
                        "{} Gaussian {i} field {field}[{k}]: analytic {an}, finite difference {fd}",
                        s.name
                    );
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 14 * n);
    }
}

#[test]
fn invalid_gaussians_and_params_are_typed_errors() {
    let s = &scenes()[0];
    let mut g = s.gaussians();
    g.rotations[3] = [0.0; 4];
    let e = render(&s.params, &g).unwrap_err();
    assert!(
        matches!(e, SplatRenderError::Input(ref m) if m.contains("Gaussian 3") && m.contains("quaternion")),
        "{e}"
    );
    let mut g = s.gaussians();
    g.opacities.pop();
    assert!(matches!(
        render(&s.params, &g),
        Err(SplatRenderError::Input(_))
    ));
    let mut p = s.params.clone();
    p.fx = 0.0;
    let e = render(&p, &s.gaussians()).unwrap_err();
    assert!(e.to_string().contains("focal"), "{e}");
    let e = backward(&s.params, &s.gaussians(), &[0.0; 5]).unwrap_err();
    assert!(matches!(e, SplatRenderError::Buffer(_)), "{e}");
}
