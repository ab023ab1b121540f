//! wgpu validation errors come back as errors, never as wgpu's panic: a
//! buffer past the adapter's limit, and a graph whose values need one.

mod common;

use common::{compile_gpu, gpu_or_skip};
use rlx_ir::op::UnaryOp;
use rlx_ir::{DType, Graph, GraphExt, Shape};

#[test]
fn a_buffer_past_the_adapter_limit_is_an_error_not_a_panic() {
    if !gpu_or_skip("a_buffer_past_the_adapter_limit_is_an_error_not_a_panic") {
        return;
    }
    let ctx = rlx_wgpu::context().unwrap();
    let too_big = ctx.limits.max_buffer_size.saturating_add(4);
    let err = ctx
        .create_buffer("too big", too_big, wgpu::BufferUsages::STORAGE)
        .expect_err("wgpu made a buffer past max_buffer_size");
    assert!(
        err.contains("too big") && err.contains(&too_big.to_string()),
        "{err}"
    );
    // The device still works afterwards.
    let ok = ctx.create_buffer("small", 16, wgpu::BufferUsages::STORAGE);
    assert!(ok.is_ok(), "{:?}", ok.err());
}

#[test]
fn a_graph_too_large_for_the_device_is_a_named_error() {
    if !gpu_or_skip("a_graph_too_large_for_the_device_is_a_named_error") {
        return;
    }
    let mut g = Graph::new("huge");
    // 2^34 f32 = 64 GiB, past any adapter's storage binding.
    let x = g.input("x", Shape::new(&[1 << 17, 1 << 17], DType::F32));
    let y = g.unary(UnaryOp::Exp, x);
    g.set_outputs(vec![y]);
    let err = match compile_gpu(&g) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("compiled a 64 GiB graph"),
    };
    assert!(
        err.contains("GPU buffer") && err.contains("allows"),
        "{err}"
    );
}
