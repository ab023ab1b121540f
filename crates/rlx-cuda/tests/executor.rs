//! The CUDA graph executor against the CPU backend (itself checked against
//! numpy by the op matrix) on the same graphs: 1e-5 relative in f32, 1e-2
//! in f16. Needs a CUDA GPU: without one each device test prints why and
//! passes, unless `RLX_REQUIRE_CUDA=1` (as `tools/gpu_check.sh` sets).
//! The refusals at the end need no GPU and run everywhere.

mod common;

use common::graphs::{
    attention_block, binary_graph, compare_select, digits_batch, digits_grads, digits_init,
    digits_step, gguf_blocks, indexing_and_resampling, mlp, rand, scans_and_windows, swap_graph,
    unary_graph, DIGIT_PARAMS,
};
use common::reference::{compile, f64s, ordered_inputs, run, worst};
use common::training::{cpu_rlx_optim, digit_slots};
use rlx_compile::{lower, LowerOptions, Precision};
use rlx_cuda::optim::{AdamUpdate, DeviceOptimizer, OptimizerRule};
use rlx_cuda::CudaBackend;
use rlx_driver::{Backend, BackendError, Device, Executable};
use rlx_ir::op::UnaryOp;
use rlx_ir::quant::QuantScheme;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use rlx_optim::AdamConfig;
use rlx_optim::AdamW;

/// True when a CUDA device answers; otherwise prints why (a failure under
/// `RLX_REQUIRE_CUDA=1`).
fn cuda(test: &str) -> bool {
    let required = rlx_ir::env::vars::REQUIRE_CUDA
        .get()
        .ok()
        .flatten()
        .unwrap_or(false);
    match rlx_cuda::probe() {
        Ok(_) => true,
        Err(e) if required => panic!("{test}: RLX_REQUIRE_CUDA=1 but CUDA is unusable: {e}"),
        Err(e) => {
            println!("{test} skipped: {e}");
            false
        }
    }
}

fn compile_with(
    backend: &dyn Backend,
    g: &Graph,
    precision: Precision,
) -> Box<dyn rlx_driver::Executable> {
    let opts = LowerOptions {
        precision,
        ..LowerOptions::default()
    };
    let lir = lower(g, &|op| backend.claims(op), &opts).unwrap();
    backend.compile(lir).unwrap()
}

/// `g` on cuda:0 (at `precision`) and on the CPU (f32): every output agrees
/// to `rtol` relative (plus `atol`).
fn assert_cuda_matches_cpu(
    g: &Graph,
    params: &[(&str, &HostTensor)],
    inputs: &[(&str, &HostTensor)],
    precision: Precision,
    rtol: f64,
    atol: f64,
) {
    let mut gpu = compile_with(&CudaBackend::new(0), g, precision);
    let got = run(gpu.as_mut(), params, inputs);
    let want = run(compile(&rlx_cpu::CpuBackend, g).as_mut(), params, inputs);
    assert_eq!(got.len(), want.len());
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        let w = worst(&f64s(a), &f64s(b), rtol, atol);
        assert!(
            w <= 1.0,
            "{}: output {k} off by {w:.3} of the tolerance",
            g.name()
        );
    }
}

fn f32_in(g: &mut Graph, name: &str, dims: &[usize]) -> rlx_ir::NodeId {
    g.input(name, Shape::new(dims, DType::F32))
}

#[test]
fn unary_ops_f32_and_f16() {
    if !cuda("unary_ops_f32_and_f16") {
        return;
    }
    let (x, p) = (rand(&[3, 37], -4.0, 4.0, 1), rand(&[3, 37], 0.05, 6.0, 2));
    let ins = [("x", &x), ("p", &p)];
    assert_cuda_matches_cpu(&unary_graph(), &[], &ins, Precision::F32, 1e-5, 1e-6);
    assert_cuda_matches_cpu(&unary_graph(), &[], &ins, Precision::F16, 1e-2, 1e-2);
}

#[test]
fn binary_ops_broadcast() {
    if !cuda("binary_ops_broadcast") {
        return;
    }
    let g = binary_graph();
    let (av, bv, pv) = (
        rand(&[2, 3, 4], -2.0, 2.0, 3),
        rand(&[3, 1], 0.5, 2.0, 4),
        rand(&[2, 3, 4], 0.1, 3.0, 5),
    );
    let ins = [("a", &av), ("b", &bv), ("pos", &pv)];
    assert_cuda_matches_cpu(&g, &[], &ins, Precision::F32, 1e-5, 1e-6);
}

fn rows_graph() -> Graph {
    let mut g = Graph::new("rows");
    let x = f32_in(&mut g, "x", &[4, 5, 300]);
    let gamma = f32_in(&mut g, "gamma", &[300]);
    let beta = f32_in(&mut g, "beta", &[300]);
    let outs = vec![
        g.sum(x, &[1], false),
        g.mean(x, &[1, 2], true),
        g.reduce_max(x, &[2], false),
        g.reduce_min(x, &[0], false),
        g.sm(x, -1),
        g.log_softmax(x, -1),
        g.ln(x, gamma, beta, 1e-5),
        g.rms_norm(x, gamma, 1e-6),
    ];
    g.set_outputs(outs);
    g
}

#[test]
fn reductions_softmax_and_norms() {
    if !cuda("reductions_softmax_and_norms") {
        return;
    }
    let g = rows_graph();
    let (xv, gv, bv) = (
        rand(&[4, 5, 300], -3.0, 3.0, 6),
        rand(&[300], 0.5, 1.5, 7),
        rand(&[300], -1.0, 1.0, 8),
    );
    let ins = [("x", &xv), ("gamma", &gv), ("beta", &bv)];
    assert_cuda_matches_cpu(&g, &[], &ins, Precision::F32, 1e-5, 1e-5);
    assert_cuda_matches_cpu(&g, &[], &ins, Precision::F16, 1e-2, 2e-2);
}

fn movement_graph() -> Graph {
    let mut g = Graph::new("movement");
    let a = f32_in(&mut g, "a", &[2, 3, 4]);
    let b = f32_in(&mut g, "b", &[2, 2, 4]);
    let table = f32_in(&mut g, "table", &[6, 3]);
    let idx = g.input("idx", Shape::new(&[5], DType::I64));
    let w = g.param("w", Shape::new(&[3, 4], DType::F32));
    let cat = g.concat_(&[a, b], 1);
    let outs = vec![
        g.transpose_(cat, &[2, 0, 1]),
        g.slice_(a, 2, 1, 4, 2),
        g.gather_(table, idx, 0),
        g.expand_(w, &[2, 3, 4]),
        g.reshape_(w, &[4, 3]),
        {
            let i = g.cast(a, DType::I32);
            g.cast(i, DType::F32)
        },
    ];
    g.set_outputs(outs);
    g
}

#[test]
fn movement_gather_and_cast() {
    if !cuda("movement_gather_and_cast") {
        return;
    }
    let g = movement_graph();
    let (av, bv, tv, wv) = (
        rand(&[2, 3, 4], -3.0, 3.0, 9),
        rand(&[2, 2, 4], -3.0, 3.0, 10),
        rand(&[6, 3], -1.0, 1.0, 11),
        rand(&[3, 4], -1.0, 1.0, 12),
    );
    let iv = HostTensor::from_vec(vec![0i64, 5, -1, 2, 3], &[5]).unwrap();
    let ins = [("a", &av), ("b", &bv), ("table", &tv), ("idx", &iv)];
    assert_cuda_matches_cpu(&g, &[("w", &wv)], &ins, Precision::F32, 0.0, 0.0);
}

#[test]
fn comparisons_and_select() {
    if !cuda("comparisons_and_select") {
        return;
    }
    let (g, [a, b, i]) = compare_select();
    let ins = [("a", &a), ("b", &b), ("i", &i)];
    assert_cuda_matches_cpu(&g, &[], &ins, Precision::F32, 0.0, 1e-7);
}

#[test]
fn a_gather_index_out_of_range_is_an_error_naming_the_node() {
    if !cuda("a_gather_index_out_of_range_is_an_error_naming_the_node") {
        return;
    }
    let mut g = Graph::new("bad_gather");
    let table = f32_in(&mut g, "table", &[4, 2]);
    let idx = g.input("idx", Shape::new(&[3], DType::I64));
    let y = g.gather_(table, idx, 0);
    g.set_outputs(vec![y]);
    let mut exe = compile_with(&CudaBackend::new(0), &g, Precision::F32);
    let t = rand(&[4, 2], 0.0, 1.0, 13);
    let bad = HostTensor::from_vec(vec![1i64, 9, 0], &[3]).unwrap();
    let err = exe.run(&[&t, &bad]).unwrap_err().to_string();
    assert!(
        err.contains("gather") && err.contains("position 1") && err.contains("4 rows"),
        "{err}"
    );
    // The flag is cleared: a good run after a bad one succeeds.
    let good = HostTensor::from_vec(vec![1i64, 3, 0], &[3]).unwrap();
    assert!(exe.run(&[&t, &good]).is_ok());
}

fn matmul_graph() -> Graph {
    let mut g = Graph::new("matmul");
    let a = f32_in(&mut g, "a", &[3, 17, 33]);
    let b = f32_in(&mut g, "b", &[3, 33, 9]);
    let w = f32_in(&mut g, "w", &[33, 9]);
    let v = f32_in(&mut g, "v", &[33]);
    let at = g.transpose_(a, &[0, 2, 1]);
    let outs = vec![g.mm(a, b), g.mm(a, w), g.mm(a, v), g.mm(at, a)];
    g.set_outputs(outs);
    g
}

#[test]
fn matmuls_batched_broadcast_and_transposed() {
    if !cuda("matmuls_batched_broadcast_and_transposed") {
        return;
    }
    let g = matmul_graph();
    let (av, bv) = (
        rand(&[3, 17, 33], -1.0, 1.0, 14),
        rand(&[3, 33, 9], -1.0, 1.0, 15),
    );
    let (wv, vv) = (rand(&[33, 9], -1.0, 1.0, 16), rand(&[33], -1.0, 1.0, 17));
    let ins = [("a", &av), ("b", &bv), ("w", &wv), ("v", &vv)];
    assert_cuda_matches_cpu(&g, &[], &ins, Precision::F32, 1e-5, 1e-5);
    assert_cuda_matches_cpu(&g, &[], &ins, Precision::F16, 1e-2, 3e-2);
}

#[test]
fn an_mlp_and_an_attention_block_match_the_cpu() {
    if !cuda("an_mlp_and_an_attention_block_match_the_cpu") {
        return;
    }
    let x = rand(&[4, 3], -1.0, 1.0, 1);
    let (w1, b1, w2, b2) = (
        rand(&[3, 8], -1.0, 1.0, 2),
        rand(&[8], -1.0, 1.0, 3),
        rand(&[8, 2], -1.0, 1.0, 4),
        rand(&[2], -1.0, 1.0, 5),
    );
    let ps = [("w1", &w1), ("b1", &b1), ("w2", &w2), ("b2", &b2)];
    assert_cuda_matches_cpu(&mlp(), &ps, &[("x", &x)], Precision::F32, 1e-5, 1e-6);
    let x = rand(&[2, 5, 8], -1.0, 1.0, 7);
    let w: Vec<HostTensor> = (0..3).map(|s| rand(&[8, 8], -0.5, 0.5, 10 + s)).collect();
    let (gamma, beta) = (rand(&[8], 0.5, 1.5, 20), rand(&[8], -0.5, 0.5, 21));
    let ps = [
        ("wq", &w[0]),
        ("wk", &w[1]),
        ("wv", &w[2]),
        ("gamma", &gamma),
        ("beta", &beta),
    ];
    assert_cuda_matches_cpu(
        &attention_block(),
        &ps,
        &[("x", &x)],
        Precision::F32,
        1e-5,
        1e-5,
    );
    assert_cuda_matches_cpu(
        &attention_block(),
        &ps,
        &[("x", &x)],
        Precision::F16,
        1e-2,
        3e-2,
    );
}

/// Trains `steps` SGD steps of the digits MLP on fixed batches; returns
/// the last loss and the final weights.
fn train(backend: &dyn Backend, steps: usize) -> (f32, Vec<HostTensor>) {
    let g = digits_step();
    let mut exe = compile(backend, &g);
    let slots: Vec<usize> = DIGIT_PARAMS
        .iter()
        .map(|n| exe.lir().io.params.iter().position(|p| p.1 == *n).unwrap())
        .collect();
    for (&s, v) in slots.iter().zip(&digits_init()) {
        exe.set_param(s, v).unwrap();
    }
    let updates: Vec<(usize, usize)> = slots.iter().enumerate().map(|(k, &s)| (k + 1, s)).collect();
    let mut loss = f32::NAN;
    for step in 0..steps {
        let (x, y) = digits_batch(step);
        let ins = ordered_inputs(exe.lir(), &[("x", &x), ("y", &y)]);
        loss = exe.run_updating(&ins, &updates).unwrap()[0]
            .to_vec::<f32>()
            .unwrap()[0];
    }
    let w = slots.iter().map(|&s| exe.param_value(s).unwrap()).collect();
    (loss, w)
}

#[test]
fn digits_mlp_training_steps_match_the_cpu() {
    if !cuda("digits_mlp_training_steps_match_the_cpu") {
        return;
    }
    let (cpu_loss, cpu_w) = train(&rlx_cpu::CpuBackend, 30);
    let (gpu_loss, gpu_w) = train(&CudaBackend::new(0), 30);
    println!("digits loss after 30 steps: cpu {cpu_loss}, cuda {gpu_loss}");
    assert!(
        (cpu_loss - gpu_loss).abs() <= 1e-4 * cpu_loss.abs().max(1.0),
        "{cpu_loss} vs {gpu_loss}"
    );
    for ((name, c), g) in DIGIT_PARAMS.iter().zip(&cpu_w).zip(&gpu_w) {
        let w = worst(&f64s(g), &f64s(c), 1e-4, 1e-5);
        assert!(
            w <= 1.0,
            "{name}: weights differ by {w:.3} of the tolerance"
        );
    }
}

#[test]
fn adam_steps_from_gradient_outputs_run_on_the_device_like_rlx_optim() {
    if !cuda("adam_steps_from_gradient_outputs_run_on_the_device_like_rlx_optim") {
        return;
    }
    let steps = 20;
    let cfg = AdamConfig {
        lr: 1e-2,
        betas: (0.9, 0.999),
        eps: f64::from(1e-8f32),
        weight_decay: 0.05,
        amsgrad: false,
        maximize: false,
    };
    let (want_loss, want) = cpu_rlx_optim(&mut AdamW::new(cfg).unwrap(), steps);
    let backend = CudaBackend::new(0);
    let lir = lower(
        &digits_grads(),
        &|op| backend.claims(op),
        &LowerOptions::default(),
    )
    .unwrap();
    let mut exe = backend.compile_cuda(lir).unwrap();
    let slots = digit_slots(exe.lir());
    for (&s, v) in slots.iter().zip(&digits_init()) {
        exe.set_param(s, v).unwrap();
    }
    let grads: Vec<(usize, usize)> = slots.iter().enumerate().map(|(k, &s)| (k + 1, s)).collect();
    let mut opt = DeviceOptimizer::new(OptimizerRule::Adam(AdamUpdate {
        lr: 1e-2,
        betas: (0.9, 0.999),
        eps: 1e-8,
        weight_decay: 0.05,
        decoupled: true,
        amsgrad: false,
        maximize: false,
    }));
    let mut loss = Vec::new();
    for step in 0..steps {
        let (x, y) = digits_batch(step);
        let ins = ordered_inputs(exe.lir(), &[("x", &x), ("y", &y)]);
        let outs = exe.run_training_step(&ins, &grads, &mut opt).unwrap();
        assert_eq!(outs.len(), 1, "only the loss comes back");
        loss.push(outs[0].to_vec::<f32>().unwrap()[0]);
    }
    assert_eq!(opt.steps(slots[0]), steps as u64);
    println!(
        "adamw digits loss: cuda {:?}, cpu + rlx-optim {:?}",
        loss.last(),
        want_loss.last()
    );
    let lw: Vec<f64> = want_loss.iter().map(|&v| v as f64).collect();
    let lg: Vec<f64> = loss.iter().map(|&v| v as f64).collect();
    assert!(
        worst(&lg, &lw, 1e-4, 1e-5) <= 1.0,
        "{loss:?} vs {want_loss:?}"
    );
    for (k, name) in DIGIT_PARAMS.iter().enumerate() {
        let got = f64s(&exe.param_value(slots[k]).unwrap());
        let w: Vec<f64> = want[k].iter().map(|&v| v as f64).collect();
        let off = worst(&got, &w, 1e-4, 1e-5);
        assert!(
            off <= 1.0,
            "{name}: weights differ by {off:.3} of the tolerance"
        );
    }
}

#[test]
fn device_updates_read_params_before_any_changes() {
    if !cuda("device_updates_read_params_before_any_changes") {
        return;
    }
    let mut exe = compile(&CudaBackend::new(0), &swap_graph());
    let idx = |e: &dyn rlx_driver::Executable, n: &str| {
        e.lir().io.params.iter().position(|q| q.1 == n).unwrap()
    };
    let (ia, ib) = (idx(exe.as_ref(), "a"), idx(exe.as_ref(), "b"));
    let va = vec![1.0f32, 2.0, 3.0, 4.0, 5.0];
    let vb: Vec<f32> = va.iter().map(|v| -v).collect();
    exe.set_param(ia, &HostTensor::from_vec(va.clone(), &[5]).unwrap())
        .unwrap();
    exe.set_param(ib, &HostTensor::from_vec(vb.clone(), &[5]).unwrap())
        .unwrap();
    let outs = exe.run_updating(&[], &[(0, ia), (1, ib)]).unwrap();
    let doubled: Vec<f32> = va.iter().map(|v| 2.0 * v).collect();
    assert_eq!(outs[0].to_vec::<f32>().unwrap(), doubled);
    assert_eq!(exe.param_value(ia).unwrap().to_vec::<f32>().unwrap(), vb);
    assert_eq!(exe.param_value(ib).unwrap().to_vec::<f32>().unwrap(), va);
}

#[test]
fn every_graph_of_this_suite_plans_at_f32_and_f16_without_a_gpu() {
    let graphs = [
        unary_graph(),
        binary_graph(),
        rows_graph(),
        movement_graph(),
        matmul_graph(),
        mlp(),
        attention_block(),
        digits_step(),
        compare_select().0,
        indexing_and_resampling().0,
    ];
    let backend = CudaBackend::new(0);
    for g in &graphs {
        for precision in [Precision::F32, Precision::F16] {
            let opts = LowerOptions {
                precision,
                ..LowerOptions::default()
            };
            let lir = lower(g, &|op| backend.claims(op), &opts).unwrap();
            let p = rlx_cuda::plan::plan(&lir, 0)
                .unwrap_or_else(|e| panic!("{} at {precision:?}: {e}", g.name()));
            p.check().unwrap();
        }
    }
}

#[test]
fn an_op_without_a_cuda_kernel_is_refused_at_compile_by_name_without_a_gpu() {
    let mut g = Graph::new("fft");
    let a = g.input("a", Shape::new(&[3, 4], DType::C64));
    let c = g.fft(a, rlx_ir::fft::FftNorm::Backward);
    g.set_outputs(vec![c]);
    let backend = CudaBackend::new(1);
    let lir = lower(&g, &|op| backend.claims(op), &LowerOptions::default()).unwrap();
    match backend.compile(lir).err().expect("refused") {
        BackendError::Unsupported { device, node } => {
            assert_eq!(device, Device::Cuda(1));
            assert!(node.contains("fft") && node.contains("c64[3,4]"), "{node}");
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn without_a_driver_compiling_says_why_instead_of_panicking() {
    let Err(why) = rlx_cuda::probe() else {
        println!("skipped: a CUDA device answers here");
        return;
    };
    let backend = CudaBackend::new(0);
    let lir = lower(&mlp(), &|op| backend.claims(op), &LowerOptions::default()).unwrap();
    let err = backend.compile(lir).err().expect("refused").to_string();
    assert!(
        err.contains("CUDA unavailable") && err.contains(&why.to_string()),
        "{err}"
    );
}

#[test]
fn scans_pads_convolutions_and_pooling() {
    if !cuda("scans_pads_convolutions_and_pooling") {
        return;
    }
    let (x, w, b) = (
        rand(&[2, 4, 7, 6], -1.0, 1.0, 41),
        rand(&[6, 2, 3, 2], -1.0, 1.0, 42),
        rand(&[6], -1.0, 1.0, 43),
    );
    let g = scans_and_windows();
    assert_cuda_matches_cpu(
        &g,
        &[("w", &w), ("b", &b)],
        &[("x", &x)],
        Precision::F32,
        1e-5,
        1e-6,
    );
}

#[test]
fn indexing_topk_resizes_transposed_conv_and_dequantize() {
    if !cuda("indexing_topk_resizes_transposed_conv_and_dequantize") {
        return;
    }
    let (g, inputs, params) = indexing_and_resampling();
    let ins: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (*n, t)).collect();
    let ps: Vec<(&str, &HostTensor)> = params.iter().map(|(n, t)| (*n, t)).collect();
    assert_cuda_matches_cpu(&g, &ps, &ins, Precision::F32, 1e-5, 1e-6);
}

#[test]
fn fused_matmul_epilogues_match_the_cpu() {
    if !cuda("fused_matmul_epilogues_match_the_cpu") {
        return;
    }
    // cuBLASLt's bias / bias + ReLU / bias + tanh GELU epilogues (GemmBias),
    // then an exact GELU (the GEMM and its kernels), batched and not.
    for act in [
        None,
        Some(UnaryOp::Relu),
        Some(UnaryOp::GeluApprox),
        Some(UnaryOp::Gelu),
    ] {
        for batch in [&[][..], &[3][..]] {
            let mut g = Graph::new("dense");
            let xd: Vec<usize> = batch.iter().copied().chain([33, 70]).collect();
            let x = f32_in(&mut g, "x", &xd);
            let w = g.param("w", Shape::new(&[70, 48], DType::F32));
            let b = g.param("b", Shape::new(&[48], DType::F32));
            let y = g.mm(x, w);
            let mut y = g.add(y, b);
            if let Some(a) = act {
                y = g.unary(a, y);
            }
            g.set_outputs(vec![y]);
            let (xv, wv, bv) = (
                rand(&xd, -1.0, 1.0, 60),
                rand(&[70, 48], -0.3, 0.3, 61),
                rand(&[48], -1.0, 1.0, 62),
            );
            let ps = [("w", &wv), ("b", &bv)];
            // cuBLASLt's GELU may use a faster tanh: 1e-4.
            assert_cuda_matches_cpu(&g, &ps, &[("x", &xv)], Precision::F32, 1e-4, 1e-5);
            assert_cuda_matches_cpu(&g, &ps, &[("x", &xv)], Precision::F16, 1e-2, 3e-2);
        }
    }
}

/// `dequantize(w)` to f32 `dims` of a `bytes`-long U8 input `w` of `g`.
fn dequantize_input(
    g: &mut Graph,
    scheme: QuantScheme,
    bytes: usize,
    dims: [usize; 2],
) -> rlx_ir::NodeId {
    let w = g.input("w", Shape::new(&[bytes], DType::U8));
    g.try_node(
        rlx_ir::Op::Dequantize { scheme },
        &[w],
        Some(Shape::new(&dims, DType::F32)),
    )
    .unwrap()
}

#[test]
fn k_quant_dequantize_and_quantized_matmul_match_the_cpu() {
    if !cuda("k_quant_dequantize_and_quantized_matmul_match_the_cpu") {
        return;
    }
    let (n, k) = (8, 512);
    for scheme in [
        QuantScheme::GgufQ4K,
        QuantScheme::GgufQ5K,
        QuantScheme::GgufQ6K,
    ] {
        let bytes = gguf_blocks(scheme, n * k / 256, 70);
        let wt = HostTensor::from_vec(bytes.clone(), &[bytes.len()]).unwrap();
        let mut g = Graph::new("k_quant");
        let x = f32_in(&mut g, "x", &[3, k]);
        let deq = dequantize_input(&mut g, scheme, bytes.len(), [n, k]);
        let wt_t = g.transpose_(deq, &[1, 0]);
        let y = g.mm(x, wt_t);
        g.set_outputs(vec![deq, y]);
        let xv = rand(&[3, k], -1.0, 1.0, 71);
        assert_cuda_matches_cpu(
            &g,
            &[],
            &[("x", &xv), ("w", &wt)],
            Precision::F32,
            1e-5,
            1e-6,
        );
    }
}

#[test]
fn legacy_quant_dequantize_on_the_device_is_bit_exact_like_rlx_gguf() {
    if !cuda("legacy_quant_dequantize_on_the_device_is_bit_exact_like_rlx_gguf") {
        return;
    }
    // Q5_0 is most of SmolLM2 Q4_K_M's weights (576 columns fall back
    // from Q5_K); every 32-value format against rlx-gguf's codecs.
    let (n, k) = (6, 64);
    for (scheme, ty) in [
        (QuantScheme::GgufQ4_0, rlx_gguf::GgmlType::Q4_0),
        (QuantScheme::GgufQ4_1, rlx_gguf::GgmlType::Q4_1),
        (QuantScheme::GgufQ5_0, rlx_gguf::GgmlType::Q5_0),
        (QuantScheme::GgufQ5_1, rlx_gguf::GgmlType::Q5_1),
        (QuantScheme::GgufQ8_0, rlx_gguf::GgmlType::Q8_0),
    ] {
        let bytes = gguf_blocks(scheme, n * k / 32, 72);
        let wt = HostTensor::from_vec(bytes.clone(), &[bytes.len()]).unwrap();
        let mut g = Graph::new("legacy_quant");
        let deq = dequantize_input(&mut g, scheme, bytes.len(), [n, k]);
        g.set_outputs(vec![deq]);
        let mut exe = compile_with(&CudaBackend::new(0), &g, Precision::F32);
        let got = exe.run(&[&wt]).unwrap()[0].to_vec::<f32>().unwrap();
        let want = rlx_gguf::codecs::dequantize(ty, &bytes, n * k).unwrap();
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            assert_eq!(a.to_bits(), b.to_bits(), "{ty:?} value {i}: {a} vs {b}");
        }
    }
}

#[test]
fn a_gather_elements_index_out_of_range_is_an_error_naming_the_node() {
    if !cuda("a_gather_elements_index_out_of_range_is_an_error_naming_the_node") {
        return;
    }
    let mut g = Graph::new("bad_gather_elements");
    let x = f32_in(&mut g, "x", &[2, 3]);
    let idx = g.input("idx", Shape::new(&[2, 2], DType::I64));
    let y = g.gather_elements(x, idx, 1);
    g.set_outputs(vec![y]);
    let mut exe = compile_with(&CudaBackend::new(0), &g, Precision::F32);
    let t = rand(&[2, 3], 0.0, 1.0, 14);
    let bad = HostTensor::from_vec(vec![0i64, 2, 3, -1], &[2, 2]).unwrap();
    let err = exe.run(&[&t, &bad]).unwrap_err().to_string();
    assert!(
        err.contains("gather_elements") && err.contains("position 2") && err.contains("length 3"),
        "{err}"
    );
}
