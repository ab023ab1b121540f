//! The launch plan on any machine (no GPU, no CUDA library): the kernel
//! each node maps to, a simulation proving every read sees its value
//! intact, a host interpreter of the plan against the CPU backend, named
//! refusals and one golden dump.

mod common;

use common::graphs::{
    attention_block, compare_select, digits_step, mlp, rand, BATCH, CLASSES, HIDDEN, PIXELS,
};
use common::interp::interpret;
use common::plan_check::{assert_plan_matches_cpu, lir_of, lir_unfused};
use common::reference::{compile, f64s, ordered_inputs, ordered_params, run, worst};
use rlx_cuda::plan::{plan, Kernel, LaunchPlan, PlanFault, Region};
use rlx_driver::{BackendError, Device};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};

/// The plan of `g` unfused: one launch per primitive node.
fn plan_of(g: &Graph) -> LaunchPlan {
    plan(&lir_unfused(g), 0).unwrap()
}

/// A short name per launch, in order.
fn kinds(p: &LaunchPlan) -> Vec<String> {
    p.steps
        .iter()
        .map(|s| match &s.kernel {
            Kernel::Unary(op) => format!("unary {op:?}"),
            Kernel::Binary { op, .. } => format!("binary {op:?}"),
            Kernel::Reduce { op, .. } => format!("reduce {op:?}"),
            Kernel::Softmax { log: false, .. } => "softmax".into(),
            Kernel::Softmax { log: true, .. } => "log_softmax".into(),
            Kernel::LayerNorm { .. } => "layer_norm".into(),
            Kernel::RmsNorm { .. } => "rms_norm".into(),
            Kernel::Gather { .. } => "gather".into(),
            Kernel::Copy { pieces, .. } => format!("copy x{}", pieces.len()),
            Kernel::Cast { from, to } => format!("cast {from}->{to}"),
            Kernel::Iota { .. } => "iota".into(),
            Kernel::Compare { .. } => "compare".into(),
            Kernel::Select { .. } => "select".into(),
            Kernel::Gemm(s) => format!(
                "gemm{}{}",
                if s.trans_a { " a^T" } else { "" },
                if s.trans_b { " b^T" } else { "" }
            ),
            k @ (Kernel::ArgReduce { .. }
            | Kernel::Cumsum { .. }
            | Kernel::Pad { .. }
            | Kernel::Conv2d(_)
            | Kernel::Pool2d { .. }
            | Kernel::ConvTranspose2d(_)
            | Kernel::GatherElements(_)
            | Kernel::ScatterAdd(_)
            | Kernel::TopK { .. }
            | Kernel::Resize(_)
            | Kernel::Dequantize { .. }
            | Kernel::GemmBias { .. }) => k.to_string(),
        })
        .collect()
}

#[test]
fn an_mlp_plans_to_gemms_bias_adds_and_a_softmax() {
    let p = plan_of(&mlp());
    assert_eq!(
        kinds(&p),
        [
            "gemm",
            "binary Add",
            "unary Tanh",
            "gemm",
            "binary Add",
            "softmax"
        ]
    );
    // The bias add broadcasts b1 over rows (stride 0) and runs in place.
    let add = &p.steps[1];
    assert_eq!(add.inputs[1].region, Region::Param(1));
    match &add.kernel {
        Kernel::Binary {
            dims, b_strides, ..
        } => {
            assert_eq!(
                (dims.as_slice(), b_strides.as_slice()),
                (&[4, 8][..], &[0, 1][..])
            )
        }
        k => panic!("{k:?}"),
    }
    assert_eq!(add.output.byte, add.inputs[0].byte);
    p.check().unwrap();
    // Fused: the first layer's bias and tanh run after its GEMM (tanh is
    // no cuBLASLt epilogue), the second's bias in cuBLASLt's epilogue.
    let fused = plan(&lir_of(&mlp()), 0).unwrap();
    assert_eq!(
        kinds(&fused),
        [
            "gemm",
            "binary Add",
            "unary Tanh",
            "gemm 1x[4, 8]@[8, 2] strides 0 0 + bias",
            "softmax"
        ]
    );
    fused.check().unwrap();
}

#[test]
fn the_mlp_plan_computes_what_the_cpu_does() {
    let (x, w1, b1) = (
        rand(&[4, 3], -1.0, 1.0, 1),
        rand(&[3, 8], -1.0, 1.0, 2),
        rand(&[8], -1.0, 1.0, 3),
    );
    let (w2, b2) = (rand(&[8, 2], -1.0, 1.0, 4), rand(&[2], -1.0, 1.0, 5));
    assert_plan_matches_cpu(
        &mlp(),
        &[("w1", &w1), ("b1", &b1), ("w2", &w2), ("b2", &b2)],
        &[("x", &x)],
        1e-5,
    );
}

#[test]
fn an_attention_block_plans_batched_gemms_and_its_numbers_match_the_cpu() {
    let x = rand(&[2, 5, 8], -1.0, 1.0, 7);
    let w: Vec<HostTensor> = (0..3).map(|s| rand(&[8, 8], -0.5, 0.5, 10 + s)).collect();
    let (gamma, beta) = (rand(&[8], 0.5, 1.5, 20), rand(&[8], -0.5, 0.5, 21));
    let p = assert_plan_matches_cpu(
        &attention_block(),
        &[
            ("wq", &w[0]),
            ("wk", &w[1]),
            ("wv", &w[2]),
            ("gamma", &gamma),
            ("beta", &beta),
        ],
        &[("x", &x)],
        1e-5,
    );
    let k = kinds(&p);
    // Scores and the weighted values: one batched GEMM each over the 2 batches.
    let batched = p
        .steps
        .iter()
        .filter(|s| matches!(&s.kernel, Kernel::Gemm(g) if g.batch == 2))
        .count();
    assert_eq!(batched, 2, "{k:?}");
    assert_eq!(k.iter().filter(|s| *s == "softmax").count(), 1, "{k:?}");
    assert_eq!(k.last().map(String::as_str), Some("layer_norm"), "{k:?}");
}

#[test]
fn the_digits_training_step_plans_and_matches_the_cpu() {
    let x = rand(&[BATCH, PIXELS], 0.0, 1.0, 30);
    let mut y = vec![0f32; BATCH * CLASSES];
    for r in 0..BATCH {
        y[r * CLASSES + (r * 7) % CLASSES] = 1.0;
    }
    let y = HostTensor::from_vec(y, &[BATCH, CLASSES]).unwrap();
    let (w1, b1) = (
        rand(&[PIXELS, HIDDEN], -0.2, 0.2, 31),
        rand(&[HIDDEN], -0.1, 0.1, 32),
    );
    let (w2, b2) = (
        rand(&[HIDDEN, CLASSES], -0.2, 0.2, 33),
        rand(&[CLASSES], -0.1, 0.1, 34),
    );
    let p = assert_plan_matches_cpu(
        &digits_step(),
        &[("w1", &w1), ("b1", &b1), ("w2", &w2), ("b2", &b2)],
        &[("x", &x), ("y", &y)],
        1e-5,
    );
    let k = kinds(&p);
    // Forward: x @ w1, h @ w2; backward: dL/dh, and two weight gradients
    // as transposed-operand GEMMs (h^T @ dz, x^T @ dh).
    assert_eq!(
        k.iter().filter(|s| s.starts_with("gemm")).count(),
        5,
        "{k:?}"
    );
    assert_eq!(k.iter().filter(|s| *s == "gemm a^T").count(), 2, "{k:?}");
    assert_eq!(k.iter().filter(|s| *s == "log_softmax").count(), 1, "{k:?}");
    assert_eq!(p.outputs.len(), 5);
}

#[test]
fn movement_gather_cast_and_reductions_plan_to_what_the_cpu_computes() {
    let mut g = Graph::new("movement");
    let a = g.input("a", Shape::new(&[2, 3, 4], DType::F32));
    let b = g.input("b", Shape::new(&[2, 2, 4], DType::F32));
    let idx = g.input("idx", Shape::new(&[5], DType::I64));
    let table = g.input("table", Shape::new(&[6, 3], DType::F32));
    let gamma = g.input("gamma", Shape::new(&[4], DType::F32));
    let t = g.concat_(&[a, b], 1);
    let t = g.transpose_(t, &[2, 0, 1]);
    let sl = g.slice_(a, 2, 1, 4, 2);
    let rows = g.gather_(table, idx, 0);
    let m = g.mean(a, &[1, 2], false);
    let mx = g.reduce_max(a, &[0], true);
    let rms = g.rms_norm(a, gamma, 1e-6);
    let ci = g.cast(a, DType::I32);
    let back = g.cast(ci, DType::F32);
    let bc = g.expand_(m, &[3, 2]);
    let cat = g.concat_(&[a, b], 1);
    let pw = g.binary_op(
        rlx_ir::op::BinaryOp::Pow,
        gamma,
        g.constant(2.0, DType::F32),
    );
    let pos = g.iota(&[3, 4], 1, 2.0, 3.0, DType::I64);
    let pos = g.cast(pos, DType::F32);
    g.set_outputs(vec![t, sl, rows, mx, rms, back, bc, pw, cat, pos]);
    let av = rand(&[2, 3, 4], -3.0, 3.0, 40);
    let bv = rand(&[2, 2, 4], -3.0, 3.0, 41);
    let iv = HostTensor::from_vec(vec![0i64, 5, -1, 2, 3], &[5]).unwrap();
    let tv = rand(&[6, 3], -1.0, 1.0, 42);
    let gv = rand(&[4], 0.5, 1.5, 43);
    let p = assert_plan_matches_cpu(
        &g,
        &[],
        &[
            ("a", &av),
            ("b", &bv),
            ("idx", &iv),
            ("table", &tv),
            ("gamma", &gv),
        ],
        1e-5,
    );
    let k = kinds(&p);
    for want in [
        "copy x2",
        "gather",
        "reduce Mean",
        "reduce Max",
        "rms_norm",
        "cast f32->i32",
        "cast i32->f32",
    ] {
        assert!(k.iter().any(|s| s == want), "no {want} in {k:?}");
    }
}

#[test]
fn comparisons_and_select_plan_to_what_the_cpu_computes() {
    let (g, [av, bv, iv]) = compare_select();
    let p = assert_plan_matches_cpu(&g, &[], &[("a", &av), ("b", &bv), ("i", &iv)], 0.0);
    let k = kinds(&p);
    assert!(k.iter().filter(|s| *s == "compare").count() >= 7, "{k:?}");
    assert_eq!(k.iter().filter(|s| *s == "select").count(), 2, "{k:?}");
}

#[test]
fn an_op_without_a_cuda_kernel_is_a_named_error() {
    let mut g = Graph::new("fft");
    let a = g.input("a", Shape::new(&[3, 4], DType::C64));
    let c = g.fft(a, rlx_ir::fft::FftNorm::Backward);
    g.set_outputs(vec![c]);
    let err = plan(&lir_of(&g), 3).unwrap_err();
    match &err {
        BackendError::Unsupported { device, node } => {
            assert_eq!(*device, Device::Cuda(3));
            assert!(node.contains(" fft"), "{node}");
            assert!(node.contains("no CUDA kernel for fft"), "{node}");
            assert!(node.contains("c64[3,4] <- (c64[3,4])"), "{node}");
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn a_dtype_without_a_cuda_kernel_is_a_named_error() {
    let mut g = Graph::new("i64add");
    let a = g.input("a", Shape::new(&[3], DType::I64));
    let b = g.input("b", Shape::new(&[3], DType::I64));
    let c = g.add(a, b);
    g.set_outputs(vec![c]);
    let err = plan(&lir_of(&g), 0).unwrap_err().to_string();
    assert!(err.contains("add") && err.contains("i64"), "{err}");
    assert!(err.contains("no CUDA kernel computes i64"), "{err}");
}

#[test]
fn the_simulation_catches_stale_reads_overlaps_and_unwritten_reads() {
    let p = plan_of(&mlp());
    p.check().unwrap();
    // The softmax also reading %6, which the tanh overwrote in place.
    let mut stale = p.clone();
    let old = p.steps[2].inputs[0];
    stale.steps[5].inputs.push(old);
    match stale.check().unwrap_err() {
        PlanFault::StaleRead {
            step,
            operand,
            found,
            ..
        } => {
            assert_eq!(operand, old.node.to_string());
            assert!(step.contains("softmax"), "{step}");
            assert_eq!(found, p.steps[2].output.node.to_string());
        }
        e => panic!("{e}"),
    }
    // A GEMM writing over its own operand (only elementwise kernels may).
    let mut overlap = p.clone();
    overlap.steps[0].output.byte = overlap.steps[0].inputs[0].byte;
    assert!(matches!(
        overlap.check().unwrap_err(),
        PlanFault::Overlap { .. }
    ));
    // A step before the one that writes its operand.
    let mut early = p;
    early.steps.swap(0, 1);
    assert!(matches!(
        early.check().unwrap_err(),
        PlanFault::StaleRead { found, .. } if found == "nothing written"
    ));
}

#[test]
fn a_wrong_stride_in_a_plan_shows_in_its_numbers() {
    // The comparison above can fail: the attention plan with the scores
    // GEMM reading k untransposed no longer computes the CPU's result.
    let g = attention_block();
    let lir = lir_of(&g);
    let mut p = plan(&lir, 0).unwrap();
    let x = rand(&[2, 5, 8], -1.0, 1.0, 7);
    let w: Vec<HostTensor> = (0..3).map(|s| rand(&[8, 8], -0.5, 0.5, 10 + s)).collect();
    let (gamma, beta) = (rand(&[8], 0.5, 1.5, 20), rand(&[8], -0.5, 0.5, 21));
    let params = [
        ("wq", &w[0]),
        ("wk", &w[1]),
        ("wv", &w[2]),
        ("gamma", &gamma),
        ("beta", &beta),
    ];
    let want = f64s(
        &run(
            compile(&rlx_cpu::CpuBackend, &g).as_mut(),
            &params,
            &[("x", &x)],
        )[0],
    );
    let ins = ordered_inputs(&lir, &[("x", &x)]);
    let ps = ordered_params(&lir, &params);
    assert!(worst(&interpret(&p, &ins, &ps)[0], &want, 1e-5, 1e-6) <= 1.0);
    let scores = p
        .steps
        .iter_mut()
        .find_map(|s| match &mut s.kernel {
            Kernel::Gemm(g) if g.batch == 2 && g.n == 5 => Some(g),
            _ => None,
        })
        .unwrap();
    scores.trans_b = !scores.trans_b;
    assert!(worst(&interpret(&p, &ins, &ps)[0], &want, 1e-5, 1e-6) > 1.0);
}

#[test]
fn the_mlp_plan_dump_is_stable() {
    let text = plan_of(&mlp()).to_string();
    let golden = include_str!("golden/mlp_plan.txt");
    assert_eq!(text, golden, "the dump changed:\n{text}");
}

#[test]
fn a_joined_concat_runs_no_launch_and_its_parts_are_proved() {
    // A batch-1 channel concat of two computed values: the parts' launches
    // write into the concat's bytes, no copy runs, and the simulation
    // proves each byte the tanh reads holds the part written there.
    let mut g = Graph::new("joined");
    let a = g.input("a", Shape::new(&[1, 4, 8], DType::F32));
    let e = g.exp(a);
    let n = g.neg(a);
    let cat = g.concat_(&[e, n], 1);
    let y = g.tanh(cat);
    g.set_outputs(vec![y]);
    let av = rand(&[1, 4, 8], -2.0, 2.0, 50);
    let p = assert_plan_matches_cpu(&g, &[], &[("a", &av)], 1e-6);
    assert_eq!(p.joined.len(), 1, "{p}");
    assert!(!kinds(&p).iter().any(|k| k.starts_with("copy")), "{p}");
    assert!(p.to_string().contains("joined "), "{p}");
    // Without the launch that writes the second part, the tanh reads
    // bytes nothing wrote.
    let mut missing = p.clone();
    let second = p.joined[0].1[1].node;
    missing.steps.retain(|s| s.output.node != second);
    assert!(matches!(
        missing.check().unwrap_err(),
        PlanFault::StaleRead { found, .. } if found == "nothing written"
    ));
}
