//! MiniLM-L6 (the ONNX export, `RLX_MODELS` from `tools/fetch_models.sh`)
//! planned for CUDA: the plan interpreted on the host against the CPU
//! backend (no GPU needed), the plan's launches run by the real kernel
//! sources compiled for the CPU (`common::host_kernels`), and on cuda:0 itself against the CPU where a
//! device answers. `#[ignore]`: run with `--include-ignored`.

mod common;

use common::host_kernels::{host_kernels, run_plan};
use common::interp::interpret;
use common::reference::{f64s, worst};
use rlx_compile::{lower, LirModule, LowerOptions};
use rlx_cuda::{cuda_claims, CudaBackend};
use rlx_driver::Backend;
use rlx_ir::{Graph, HostTensor};
use std::path::PathBuf;

const BATCH: usize = 2;
const SEQ: usize = 16;

fn minilm() -> Graph {
    let dir = std::env::var("RLX_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/rlx-models")
        });
    let path = dir.join("onnx/all-MiniLM-L6-v2-fp32.onnx");
    let m = rlx_onnx::OnnxModel::load(&path, rlx_driver::Device::Cpu)
        .unwrap_or_else(|e| panic!("{}: {e} (run tools/fetch_models.sh)", path.display()));
    m.import().unwrap().graph
}

fn options() -> LowerOptions {
    let mut opts = LowerOptions::default();
    opts.bindings.insert("batch".into(), BATCH);
    opts.bindings.insert("sequence".into(), SEQ);
    opts
}

/// Token ids, a mask with the second sequence padded after 11 tokens, zero
/// token types: in `lir`'s input order.
fn inputs(lir: &LirModule) -> Vec<HostTensor> {
    let ids: Vec<i64> = (0..BATCH * SEQ)
        .map(|i| (101 + 37 * i as i64) % 30000)
        .collect();
    let mask: Vec<i64> = (0..BATCH * SEQ)
        .map(|i| i64::from(i / SEQ == 0 || i % SEQ < 11))
        .collect();
    lir.io
        .inputs
        .iter()
        .map(|(_, name, _)| {
            let v = match name.as_str() {
                "input_ids" => ids.clone(),
                "attention_mask" => mask.clone(),
                _ => vec![0; BATCH * SEQ],
            };
            HostTensor::from_vec(v, &[BATCH, SEQ]).unwrap()
        })
        .collect()
}

fn cpu_outputs(g: &Graph, ins: &[HostTensor]) -> Vec<HostTensor> {
    let cpu = rlx_cpu::CpuBackend;
    let lir = lower(g, &|op| cpu.claims(op), &options()).unwrap();
    let mut exe = cpu.compile(lir).unwrap();
    exe.run(&ins.iter().collect::<Vec<_>>()).unwrap()
}

#[test]
#[ignore = "needs RLX_MODELS (tools/fetch_models.sh)"]
fn the_minilm_plan_computes_what_the_cpu_does() {
    let g = minilm();
    let lir = lower(&g, &cuda_claims, &options()).unwrap();
    let p = rlx_cuda::plan::plan(&lir, 0).unwrap();
    p.check().unwrap();
    println!(
        "MiniLM b{BATCH} s{SEQ}: {} launches, arena {} bytes",
        p.steps.len(),
        p.arena_bytes
    );
    let ins = inputs(&lir);
    let got = interpret(&p, &ins.iter().collect::<Vec<_>>(), &[]);
    let want = cpu_outputs(&g, &ins);
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        let w = worst(a, &f64s(b), 1e-4, 1e-5);
        assert!(w <= 1.0, "output {k} off by {w:.3} of the tolerance");
    }
}

#[test]
#[ignore = "needs RLX_MODELS (tools/fetch_models.sh)"]
fn the_minilm_plan_with_the_real_kernels_on_the_host_computes_what_the_cpu_does() {
    let Some(hk) = host_kernels() else { return };
    let g = minilm();
    let lir = lower(&g, &cuda_claims, &options()).unwrap();
    let p = rlx_cuda::plan::plan(&lir, 0).unwrap();
    let ins = inputs(&lir);
    let got = run_plan(hk, &p, &ins.iter().collect::<Vec<_>>(), &[]).unwrap();
    let want = cpu_outputs(&g, &ins);
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        let w = worst(a, &f64s(b), 1e-4, 1e-5);
        assert!(w <= 1.0, "output {k} off by {w:.3} of the tolerance");
    }
}

#[test]
#[ignore = "needs RLX_MODELS (tools/fetch_models.sh) and a CUDA device"]
fn minilm_on_cuda_matches_the_cpu() {
    if let Err(e) = rlx_cuda::probe() {
        assert!(
            !rlx_ir::env::vars::REQUIRE_CUDA
                .get()
                .ok()
                .flatten()
                .unwrap_or(false),
            "RLX_REQUIRE_CUDA=1 but CUDA is unusable: {e}"
        );
        println!("skipped: {e}");
        return;
    }
    let g = minilm();
    let backend = CudaBackend::new(0);
    let lir = lower(&g, &|op| backend.claims(op), &options()).unwrap();
    let ins = inputs(&lir);
    let mut exe = backend.compile(lir).unwrap();
    let got = exe.run(&ins.iter().collect::<Vec<_>>()).unwrap();
    let want = cpu_outputs(&g, &ins);
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        let w = worst(&f64s(a), &f64s(b), 1e-4, 1e-5);
        assert!(w <= 1.0, "output {k} off by {w:.3} of the tolerance");
    }
}
