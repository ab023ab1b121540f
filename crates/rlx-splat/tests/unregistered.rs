//! Without registered executors (this test binary never calls
//! `rlx_splat::register`), a graph with a splat op fails at compile time
//! naming the empty slot, and the host entry points refuse naming theirs.

mod common;

use common::scenes;
use rlx_cpu::splat::{registered_slots, render_host_slices, SplatError, SplatSlot};
use rlx_ir::ops::splat::{splat_prepare, splat_rasterize, splat_render, GaussianSplatInputs};
use rlx_ir::{DType, Graph, Shape};
use rlx_runtime::{Device, Session};

#[test]
fn compiling_a_splat_op_without_its_executor_names_the_slot() {
    assert!(registered_slots().is_empty());
    let s = &scenes()[0];
    let n = 20;
    let dims: [&[usize]; 5] = [&[n, 3], &[n, 3], &[n, 4], &[n], &[n, 3]];
    let build = |which: &str| {
        let mut g = Graph::new("g");
        let ins = GaussianSplatInputs::from_array(std::array::from_fn(|k| {
            g.input(&format!("x{k}"), Shape::new(dims[k], DType::F32))
        }));
        let out = match which {
            "render" => splat_render(&mut g, ins, &s.params).unwrap(),
            _ => {
                let p = splat_prepare(&mut g, ins, &s.params).unwrap();
                splat_rasterize(&mut g, p, &s.params).unwrap()
            }
        };
        g.set_outputs(vec![out]);
        g
    };
    let e = Session::new(Device::Cpu)
        .try_compile(build("render"))
        .err()
        .unwrap();
    let msg = format!("{e:#}");
    assert!(
        msg.contains("splat.render")
            && msg.contains("`Render` executor")
            && msg.contains("not registered"),
        "{msg}"
    );
    let e = Session::new(Device::Cpu)
        .try_compile(build("split"))
        .err()
        .unwrap();
    let msg = format!("{e:#}");
    assert!(
        msg.contains("`Prepare` executor") || msg.contains("`Rasterize` executor"),
        "{msg}"
    );
    let e = render_host_slices(&s.params, s.slices()).unwrap_err();
    assert_eq!(
        e,
        SplatError::Unregistered {
            slot: SplatSlot::HostRender
        }
    );
    assert!(e.to_string().contains("HostRender"));
}
