//! Renders a small scene of 3D Gaussians through a compiled graph
//! (`splat.render` on the CPU backend, executed by the reference renderer)
//! and writes it as a binary PPM.
//!
//! ```text
//! cargo run -p rlx-splat --example splat_scene -- [out.ppm] [width] [height]
//! ```

use rlx_ir::ops::splat::{splat_render, GaussianSplatInputs, GaussianSplatRenderParams};
use rlx_ir::{DType, Graph, HostTensor, Shape};
use rlx_runtime::{Device, Session};
use std::error::Error;

/// A helix of Gaussians in front of the camera, hue around the turn.
fn scene(n: usize) -> GaussianSplatInputs<Vec<f32>> {
    let mut s = GaussianSplatInputs::<Vec<f32>>::default();
    for i in 0..n {
        let t = i as f32 / n as f32;
        let a = t * std::f32::consts::TAU * 2.0;
        s.means
            .extend([1.2 * a.cos(), 0.8 * (2.0 * t - 1.0), 4.0 + 1.2 * a.sin()]);
        s.scales.extend([0.14, 0.04 + 0.04 * t, 0.06]);
        let half = a / 2.0;
        s.rotations.extend([half.cos(), 0.0, 0.0, half.sin()]);
        s.opacities.push(0.8);
        let hue = |k: f32| 0.5 + 0.5 * (a + k * std::f32::consts::TAU / 3.0).cos();
        s.colors.extend([hue(0.0), hue(1.0), hue(2.0)]);
    }
    s
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = args
        .first()
        .cloned()
        .unwrap_or_else(|| "splat_scene.ppm".into());
    let width: usize = args.get(1).map_or(Ok(320), |v| v.parse())?;
    let height: usize = args.get(2).map_or(Ok(240), |v| v.parse())?;
    rlx_splat::register();

    let n = 48;
    let mut params = GaussianSplatRenderParams::new(width, height, 0.9 * width as f32);
    params.background = [0.05, 0.05, 0.08];
    let mut g = Graph::new("splat_scene");
    let dims: [Vec<usize>; 5] = [vec![n, 3], vec![n, 3], vec![n, 4], vec![n], vec![n, 3]];
    let names = ["means", "scales", "rotations", "opacities", "colors"];
    let ins = GaussianSplatInputs::from_array(std::array::from_fn(|k| {
        g.input(names[k], Shape::new(&dims[k], DType::F32))
    }));
    let image = splat_render(&mut g, ins, &params)?;
    g.set_outputs(vec![image]);
    let mut compiled = Session::new(Device::Cpu).try_compile(g)?;

    let data = scene(n).into_array();
    let tensors = (0..5)
        .map(|k| HostTensor::from_vec(data[k].clone(), &dims[k]))
        .collect::<Result<Vec<_>, _>>()?;
    let feeds: Vec<(&str, &HostTensor)> = names.iter().copied().zip(&tensors).collect();
    let pixels = compiled.try_run_typed(&feeds)?[0].to_vec::<f32>()?;

    let mut ppm = format!("P6\n{width} {height}\n255\n").into_bytes();
    ppm.extend(
        pixels
            .iter()
            .map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8),
    );
    std::fs::write(&out, ppm)?;
    println!("rendered {n} Gaussians at {width}x{height} -> {out}");
    Ok(())
}
