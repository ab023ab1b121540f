//! f16 on the wgpu device, both ways it computes: native WGSL `f16`
//! (where the adapter has `shader-f16`: `F16Mode::Auto`) and packed in f32
//! registers (`F16Mode::Packed`, what every adapter runs), each against the
//! CPU backend at 1e-2 relative: elementwise ops, casts, the moves between
//! them, a fused region and matmuls with and without an epilogue.

mod common;

use common::{compile_on, gpu_or_skip, rand, to_f16};
use rlx_driver::{Backend, Executable};
use rlx_ir::op::{CmpOp, UnaryOp};
use rlx_ir::op_coverage::{every_binary, every_unary};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_wgpu::{F16Mode, WgpuBackend, WgpuExecutable};

const RTOL_F16: f64 = 1e-2;
/// For results near zero (a difference of two rounded values).
const ATOL_F16: f64 = 2e-3;

/// The largest `|gpu - cpu| / (ATOL + RTOL * |cpu|)` over every output of
/// `g` run with `inputs` (in manifest order) on the GPU in `mode`; and
/// whether that run computed f16 natively.
fn worst_vs_cpu(g: &Graph, inputs: &[HostTensor], mode: F16Mode) -> (f64, bool) {
    let refs: Vec<&HostTensor> = inputs.iter().collect();
    let want = compile_on(&rlx_cpu::CpuBackend, g)
        .unwrap()
        .run(&refs)
        .unwrap();
    let lir =
        rlx_compile::lower(g, &|op| WgpuBackend.claims(op), &Default::default()).expect("lowers");
    let ctx = rlx_wgpu::context().expect("a GPU");
    let mut exe = WgpuExecutable::with_f16_mode(lir, ctx, mode)
        .unwrap_or_else(|e| panic!("{} ({mode:?}): {e}", g.name()));
    let got = exe.run(&refs).unwrap();
    let mut worst = 0.0f64;
    for (k, (w, x)) in want.iter().zip(&got).enumerate() {
        assert_eq!(w.dims(), x.dims(), "output {k}");
        for (a, b) in w.to_f64_lossy().iter().zip(x.to_f64_lossy()) {
            let same = *a == b || (a.is_nan() && b.is_nan());
            let r = if same {
                0.0
            } else {
                (a - b).abs() / (ATOL_F16 + RTOL_F16 * a.abs())
            };
            let r = if r.is_nan() { f64::INFINITY } else { r };
            if r > 1.0 {
                println!("{} output {k}: cpu {a} gpu {b}", g.name());
            }
            worst = worst.max(r);
        }
    }
    (worst, exe.native_f16())
}

/// Asserts `g` agrees with the CPU on both f16 paths; says which ran.
fn assert_both_paths(g: &Graph, inputs: &[HostTensor]) {
    let (packed, native) = worst_vs_cpu(g, inputs, F16Mode::Packed);
    assert!(!native, "F16Mode::Packed ran natively");
    println!("{}: packed f16 worst / tolerance {packed:.3}", g.name());
    assert!(packed <= 1.0, "{}: packed f16 path differs", g.name());
    let (auto, native) = worst_vs_cpu(g, inputs, F16Mode::Auto);
    let ctx = rlx_wgpu::context().unwrap();
    assert_eq!(native, ctx.shader_f16, "Auto follows the adapter");
    println!(
        "{}: {} f16 worst / tolerance {auto:.3} ({})",
        g.name(),
        if native {
            "native"
        } else {
            "packed (no shader-f16)"
        },
        ctx.describe()
    );
    assert!(
        auto <= 1.0,
        "{}: f16 path of F16Mode::Auto differs",
        g.name()
    );
}

fn f16_input(g: &mut Graph, name: &str, dims: &[usize]) -> NodeId {
    g.input(name, Shape::new(dims, DType::F16))
}

#[test]
fn f16_elementwise_casts_and_moves_on_both_paths() {
    if !gpu_or_skip("f16_elementwise_casts_and_moves_on_both_paths") {
        return;
    }
    let mut g = Graph::new("f16_elementwise");
    let x = f16_input(&mut g, "x", &[4, 19]);
    let p = f16_input(&mut g, "p", &[4, 19]);
    let r = f16_input(&mut g, "r", &[19]);
    let mut outs = every_unary(&mut g, x, p);
    outs.extend(every_binary(&mut g, x, r, p));
    let lt = g.compare_op(CmpOp::Lt, x, r);
    outs.push(g.where_(lt, x, r));
    let wide = g.cast(x, DType::F32);
    outs.push(g.cast(wide, DType::F16));
    let scaled = g.mul(x, g.constant(9.0, DType::F16));
    let int = g.cast(scaled, DType::I32);
    outs.push(g.cast(int, DType::F16));
    let truth = g.cast(x, DType::Bool);
    outs.push(g.cast(truth, DType::F16));
    outs.push(g.transpose_(x, &[1, 0]));
    outs.push(g.concat_(&[x, p], 1));
    g.set_outputs(outs);
    let inputs = [
        to_f16(&rand(&[4, 19], -3.0, 3.0, 61)),
        to_f16(&rand(&[4, 19], 0.1, 4.0, 62)),
        to_f16(&rand(&[19], 0.5, 2.0, 63)),
    ];
    assert_both_paths(&g, &inputs);
}

#[test]
fn f16_regions_and_matmuls_on_both_paths() {
    if !gpu_or_skip("f16_regions_and_matmuls_on_both_paths") {
        return;
    }
    let mut g = Graph::new("f16_matmuls");
    let x = f16_input(&mut g, "x", &[2, 5, 24]);
    let w = f16_input(&mut g, "w", &[24, 10]);
    let b = f16_input(&mut g, "b", &[10]);
    let x2 = f16_input(&mut g, "x2", &[2, 5, 24]);
    let w_odd = f16_input(&mut g, "w_odd", &[24, 9]);
    // Plain matmuls (graph outputs; rows of even length run tiled, odd
    // ones one thread per output), a fused one (bias, gelu, scale; tiled)
    // and a region (the compiler's fusion of the elementwise chain).
    let plain = g.mm(x2, w);
    let odd = g.mm(x2, w_odd);
    let y = g.mm(x, w);
    let y = g.add(y, b);
    let y = g.unary(UnaryOp::Gelu, y);
    let y = g.mul(y, g.constant(0.5, DType::F16));
    let r = g.sub(x, g.constant(0.25, DType::F16));
    let r = g.unary(UnaryOp::Tanh, r);
    let r = g.mul(r, x);
    g.set_outputs(vec![plain, odd, y, r]);
    let inputs = [
        to_f16(&rand(&[2, 5, 24], -1.0, 1.0, 71)),
        to_f16(&rand(&[24, 10], -0.5, 0.5, 72)),
        to_f16(&rand(&[10], -0.5, 0.5, 73)),
        to_f16(&rand(&[2, 5, 24], -1.0, 1.0, 74)),
        to_f16(&rand(&[24, 9], -0.5, 0.5, 75)),
    ];
    assert_both_paths(&g, &inputs);
}

#[test]
fn f16_softmax_and_norms_on_both_paths() {
    if !gpu_or_skip("f16_softmax_and_norms_on_both_paths") {
        return;
    }
    let mut g = Graph::new("f16_softmax_norms");
    let x = f16_input(&mut g, "x", &[3, 5, 16]);
    let gamma = f16_input(&mut g, "gamma", &[16]);
    let beta = f16_input(&mut g, "beta", &[16]);
    let outs = vec![
        g.sm(x, -1),
        g.log_softmax(x, -1),
        g.ln(x, gamma, beta, 1e-5),
        g.rms_norm(x, gamma, 1e-6),
    ];
    g.set_outputs(outs);
    let inputs = [
        to_f16(&rand(&[3, 5, 16], -3.0, 3.0, 91)),
        to_f16(&rand(&[16], 0.5, 1.5, 92)),
        to_f16(&rand(&[16], -0.5, 0.5, 93)),
    ];
    assert_both_paths(&g, &inputs);
}

#[test]
fn f16_softmax_off_the_last_axis_is_refused_by_name() {
    if !gpu_or_skip("f16_softmax_off_the_last_axis_is_refused_by_name") {
        return;
    }
    // One thread per lane writes single f16 elements there: two threads
    // would share a word, so the kernel refuses (a fallback policy puts
    // the node on the CPU).
    let mut g = Graph::new("f16_softmax_axis0");
    let x = f16_input(&mut g, "x", &[4, 6]);
    let y = g.sm(x, 0);
    g.set_outputs(vec![y]);
    let err = common::gpu_compile_error(&g);
    assert!(
        err.contains("softmax") && err.contains("even length"),
        "{err}"
    );
}
