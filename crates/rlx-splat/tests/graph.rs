//! The splat ops inside compiled graphs on the CPU backend, with the
//! reference renderer registered as the executors: render, prepare +
//! rasterize, grad through render, the host-slice entry points and the
//! textual IR, against the jax.numpy fixtures.

mod common;

use common::{assert_close, floats, scenes, Scene};
use rlx_cpu::splat::{backward_host_slices, render_host_slices, SplatError, SplatSlot};
use rlx_ir::ops::splat::{
    gaussian_splat_packed_grad_len, gaussian_splat_prep_packed_len, splat_prepare, splat_rasterize,
    splat_render, unpack_gaussian_splat_packed_grads, GaussianSplatInputs,
};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::{Device, Session};

const NAMES: [&str; 5] = ["means", "scales", "rotations", "opacities", "colors"];

fn inputs(g: &mut Graph, n: usize) -> GaussianSplatInputs<NodeId> {
    let dims: [&[usize]; 5] = [&[n, 3], &[n, 3], &[n, 4], &[n], &[n, 3]];
    GaussianSplatInputs::from_array(std::array::from_fn(|k| {
        g.input(NAMES[k], Shape::new(dims[k], DType::F32))
    }))
}

fn feeds(s: &Scene) -> Vec<(&'static str, HostTensor)> {
    let n = s.inputs.means.len() / 3;
    let dims: [&[usize]; 5] = [&[n, 3], &[n, 3], &[n, 4], &[n], &[n, 3]];
    let data = s.inputs.clone().into_array();
    (0..5)
        .map(|k| {
            (
                NAMES[k],
                HostTensor::from_vec(data[k].clone(), dims[k]).unwrap(),
            )
        })
        .collect()
}

fn run(g: Graph, extra: Vec<(&'static str, HostTensor)>, s: &Scene) -> Vec<Vec<f64>> {
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let mut all = feeds(s);
    all.extend(extra);
    let args: Vec<(&str, &HostTensor)> = all.iter().map(|(k, v)| (*k, v)).collect();
    c.try_run_typed(&args)
        .unwrap()
        .iter()
        .map(|t| {
            t.to_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(f64::from)
                .collect()
        })
        .collect()
}

#[test]
fn render_node_matches_the_jax_renderer() {
    rlx_splat::register();
    for s in scenes() {
        let n = s.inputs.means.len() / 3;
        let mut g = Graph::new("splat");
        let ins = inputs(&mut g, n);
        let img = splat_render(&mut g, ins, &s.params).unwrap();
        assert_eq!(g.shape(img), &Shape::new(&[24, 32, 3], DType::F32));
        g.set_outputs(vec![img]);
        let got = run(g, vec![], &s);
        assert_close(&s.name, &got[0], &floats(&s.json, "image"), 1e-6, 1e-6);
    }
}

#[test]
fn prepare_then_rasterize_matches_render() {
    rlx_splat::register();
    for s in scenes() {
        let n = s.inputs.means.len() / 3;
        let mut g = Graph::new("splat2");
        let ins = inputs(&mut g, n);
        let prep = splat_prepare(&mut g, ins, &s.params).unwrap();
        let len = gaussian_splat_prep_packed_len(n, 32, 24);
        assert_eq!(g.shape(prep), &Shape::new(&[len], DType::F32));
        let img = splat_rasterize(&mut g, prep, &s.params).unwrap();
        g.set_outputs(vec![prep, img]);
        let got = run(g, vec![], &s);
        // The prep buffer's header and tile counts, as the layout says.
        assert_eq!(
            &got[0][..8],
            &[
                32.0,
                24.0,
                2.0,
                2.0,
                n as f64,
                0.1f32 as f64,
                0.2f32 as f64,
                0.3f32 as f64
            ]
        );
        assert_eq!(&got[0][len - 4..], &floats(&s.json, "tile_counts")[..]);
        // Conics and centres go through f32 in the buffer.
        assert_close(&s.name, &got[1], &floats(&s.json, "image"), 1e-4, 1e-4);
    }
}

#[test]
fn grad_through_render_uses_render_bwd_and_matches_jax() {
    rlx_splat::register();
    for s in scenes() {
        let n = s.inputs.means.len() / 3;
        let mut g = Graph::new("loss");
        let ins = inputs(&mut g, n);
        let img = splat_render(&mut g, ins, &s.params).unwrap();
        let w = g.input("w", Shape::new(&[24, 32, 3], DType::F32));
        let prod = g.mul(img, w);
        let loss = g.sum(prod, &[0, 1, 2], false);
        g.set_outputs(vec![loss]);
        let d = rlx_autodiff::grad(&g, &ins.into_array()).unwrap();
        assert!(d.to_text().contains("custom.splat.render_bwd"));
        let wt = HostTensor::from_vec(s.d_image.clone(), &[24, 32, 3]).unwrap();
        let got = run(d, vec![("w", wt)], &s);
        for (k, want) in s.jax_grads().iter().enumerate() {
            let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert_close(
                &format!("{} d{}", s.name, NAMES[k]),
                &got[k],
                want,
                1e-4,
                1e-4 * scale,
            );
        }
    }
}

#[test]
fn host_slices_run_the_host_executors() {
    rlx_splat::register();
    let s = &scenes()[1];
    let img = render_host_slices(&s.params, s.slices()).unwrap();
    let img: Vec<f64> = img.into_iter().map(f64::from).collect();
    assert_close("host render", &img, &floats(&s.json, "image"), 1e-6, 1e-6);
    let packed = backward_host_slices(&s.params, s.slices(), &s.d_image).unwrap();
    let n = s.inputs.means.len() / 3;
    assert_eq!(packed.len(), gaussian_splat_packed_grad_len(n));
    let grads = unpack_gaussian_splat_packed_grads(&packed)
        .unwrap()
        .into_array();
    for (k, want) in s.jax_grads().iter().enumerate() {
        let got: Vec<f64> = grads[k].iter().map(|&v| v as f64).collect();
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert_close(NAMES[k], &got, want, 1e-5, 1e-5 * scale);
    }
    // Bad input is refused before the executor, or reported by it.
    let short = GaussianSplatInputs {
        colors: &s.inputs.colors[1..],
        ..s.slices()
    };
    let e = render_host_slices(&s.params, short).unwrap_err();
    assert!(
        matches!(e, SplatError::Invalid(ref m) if m.contains("colors")),
        "{e}"
    );
    let mut rot = s.inputs.rotations.clone();
    rot[..4].fill(0.0);
    let bad = GaussianSplatInputs {
        rotations: &rot[..],
        ..s.slices()
    };
    let e = render_host_slices(&s.params, bad).unwrap_err();
    assert!(
        matches!(e, SplatError::Executor { slot: SplatSlot::HostRender, ref message } if message.contains("quaternion")),
        "{e}"
    );
    let e = backward_host_slices(&s.params, s.slices(), &s.d_image[1..]).unwrap_err();
    assert!(e.to_string().contains("d_image"), "{e}");
}

#[test]
fn executor_errors_fail_the_node_and_text_round_trips() {
    rlx_splat::register();
    let s = &scenes()[0];
    let n = s.inputs.means.len() / 3;
    let mut g = Graph::new("splat");
    let ins = inputs(&mut g, n);
    let img = splat_render(&mut g, ins, &s.params).unwrap();
    g.set_outputs(vec![img]);
    let text = g.to_text();
    assert!(text.contains("custom.splat.render{"), "{text}");
    let back = Graph::from_text(&text).unwrap();
    assert_eq!(back.to_text(), text);
    // The parsed graph renders the same image.
    let got = run(back, vec![], s);
    assert_close("parsed", &got[0], &floats(&s.json, "image"), 1e-6, 1e-6);
    // A zero quaternion: the executor reports it and the run fails naming it.
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let mut f = feeds(s);
    let mut rot = s.inputs.rotations.clone();
    rot[8..12].fill(0.0);
    f[2].1 = HostTensor::from_vec(rot, &[n, 4]).unwrap();
    let args: Vec<(&str, &HostTensor)> = f.iter().map(|(k, v)| (*k, v)).collect();
    let e = c.try_run_typed(&args).unwrap_err().to_string();
    assert!(
        e.contains("splat.render") && e.contains("Gaussian 2") && e.contains("quaternion"),
        "{e}"
    );
}
