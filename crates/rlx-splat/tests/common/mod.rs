//! The scenes of `tools/gen_splat_fixtures.py` (jax.numpy float64 renderer).
#![allow(dead_code)]

use rlx_ir::ops::splat::{GaussianSplatInputs, GaussianSplatRenderParams};
use rlx_splat::Gaussians;
use serde_json::Value;

/// One fixture scene.
pub struct Scene {
    pub name: String,
    pub params: GaussianSplatRenderParams,
    pub inputs: GaussianSplatInputs<Vec<f32>>,
    pub d_image: Vec<f32>,
    pub json: Value,
}

pub fn floats(v: &Value, key: &str) -> Vec<f64> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("fixture field {key}"))
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn f32s(v: &Value, key: &str) -> Vec<f32> {
    // Every input was rounded to f32 before rendering, so this is exact.
    floats(v, key).into_iter().map(|x| x as f32).collect()
}

pub fn scenes() -> Vec<Scene> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/splat.json");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    all.as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let p = &s["params"];
            let size = |k: &str| p[k].as_u64().unwrap() as usize;
            let f = |k: &str| p[k].as_f64().unwrap() as f32;
            let list = |k: &str| -> Vec<f32> { f32s(p, k) };
            let params = GaussianSplatRenderParams {
                width: size("width"),
                height: size("height"),
                fx: f("fx"),
                fy: f("fy"),
                cx: f("cx"),
                cy: f("cy"),
                near: f("near"),
                view: list("view").try_into().unwrap(),
                background: list("background").try_into().unwrap(),
            };
            Scene {
                name: s["name"].as_str().unwrap().to_string(),
                params,
                inputs: GaussianSplatInputs {
                    means: f32s(s, "means"),
                    scales: f32s(s, "scales"),
                    rotations: f32s(s, "rotations"),
                    opacities: f32s(s, "opacities"),
                    colors: f32s(s, "colors"),
                },
                d_image: f32s(s, "d_image"),
                json: s.clone(),
            }
        })
        .collect()
}

impl Scene {
    pub fn slices(&self) -> GaussianSplatInputs<&[f32]> {
        GaussianSplatInputs {
            means: &self.inputs.means,
            scales: &self.inputs.scales,
            rotations: &self.inputs.rotations,
            opacities: &self.inputs.opacities,
            colors: &self.inputs.colors,
        }
    }

    pub fn gaussians(&self) -> Gaussians {
        Gaussians::from_slices(self.slices()).unwrap()
    }

    pub fn d_image_f64(&self) -> Vec<f64> {
        self.d_image.iter().map(|&v| v as f64).collect()
    }

    /// The JAX gradients, in input order.
    pub fn jax_grads(&self) -> [Vec<f64>; 5] {
        [
            "grad_means",
            "grad_scales",
            "grad_rotations",
            "grad_opacities",
            "grad_colors",
        ]
        .map(|k| floats(&self.json, k))
    }
}

/// `max |got - want| <= atol + rtol · max |want|`, naming the worst element.
pub fn assert_close(what: &str, got: &[f64], want: &[f64], rtol: f64, atol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let (i, err) = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .enumerate()
        .fold(
            (0, 0.0f64),
            |best, (i, e)| if e > best.1 { (i, e) } else { best },
        );
    assert!(
        err <= atol + rtol * scale,
        "{what}: worst element {i}: got {} want {} (|diff| {err:e}, scale {scale})",
        got[i],
        want[i]
    );
}
