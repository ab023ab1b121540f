//! SmolLM2 decode steps per second on cuda:0 next to the CPU backend: the
//! one-token step graph of `rlx_llama::graph` (every block, a 64-slot f32
//! KV cache holding `FILLED` rows, all logits read back) compiled for each
//! device from the GGUF file given, one warm-up then the median of `reps`
//! runs (wall clock around `Executable::run`: input upload, launches,
//! logits and new keys / values read back). The host work of a real
//! decode loop (embedding lookup, writing the new cache row) is left out
//! on both sides. The CPU runs its native quantized matmul (ggml's
//! activation rounding) on every core; CUDA dequantizes each weight and
//! runs cuBLAS GEMMs (no quantized GEMM kernel yet).
//!
//! `cargo run --release -p rlx-cuda --example smollm2_decode_bench -- FILE.gguf [reps]`
//!
//! Prints one row per device: `smollm2 <quant> decode <device>: <ms> ms/token, <tok/s> tok/s`.

use rlx_compile::{lower, LowerOptions};
use rlx_driver::{Backend, Executable};
use rlx_gguf::GgufReader;
use rlx_ir::HostTensor;
use rlx_llama::graph::{build_step_graph, cache_param, LogitRows};
use rlx_llama::{KvCacheDtype, LlamaConfig, LlamaWeights, WeightMode};
use std::time::Instant;

/// Cache slots (rlx-llama's smallest decode bucket).
const CTX: usize = 64;
/// Filled cache rows the step attends over.
const FILLED: usize = 32;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: smollm2_decode_bench FILE.gguf [reps]")?;
    let reps: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(20);
    let quant = path.rsplit('.').nth(1).unwrap_or("gguf").to_string();
    let r = GgufReader::open(&path)?;
    let cfg = LlamaConfig::from_gguf(r.metadata())?;
    let w = LlamaWeights::from_gguf(&r, &cfg, WeightMode::Quantized)?;
    let step = build_step_graph(&cfg, &w, 1, CTX, LogitRows::All, KvCacheDtype::F32);
    // Cache rows of small made-up keys / values (the timing does not
    // depend on them).
    let cache_dims = [cfg.n_kv_heads, CTX, cfg.head_dim];
    let cache: Vec<f32> = (0..cache_dims.iter().product::<usize>())
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let cache = HostTensor::from_vec(cache, &cache_dims)?;
    let mut params: Vec<(String, &HostTensor)> = step.params.clone();
    for l in 0..cfg.n_layers {
        params.push((cache_param("k", l), &cache));
        params.push((cache_param("v", l), &cache));
    }
    let inputs = inputs(&cfg, &w)?;

    let cuda = rlx_cuda::CudaBackend::new(0);
    let cpu = rlx_cpu::CpuBackend;
    let devices: [(&str, &dyn Backend); 2] = [("cuda:0", &cuda), ("cpu", &cpu)];
    for (name, backend) in devices {
        if name.starts_with("cuda") {
            if let Err(e) = rlx_cuda::probe() {
                println!("smollm2 {quant} decode {name}: not run ({e})");
                continue;
            }
        }
        let lir = lower(
            &step.graph,
            &|op| backend.claims(op),
            &LowerOptions::default(),
        )?;
        let mut exe = backend.compile(lir)?;
        for (k, (_, pname, _)) in exe.lir().io.params.clone().iter().enumerate() {
            let v = params
                .iter()
                .find(|p| &p.0 == pname)
                .ok_or_else(|| format!("no param {pname}"))?;
            exe.set_param(k, v.1)?;
        }
        let ins: Vec<&HostTensor> = exe
            .lir()
            .io
            .inputs
            .iter()
            .map(|(_, n, _)| &inputs.iter().find(|i| i.0 == n).expect("an input").1)
            .collect();
        let ms = time(exe.as_mut(), &ins, reps)?;
        println!(
            "smollm2 {quant} decode {name}: {ms:.3} ms/token, {:.1} tok/s ({} blocks, {FILLED} cached tokens, median of {reps})",
            1e3 / ms,
            cfg.n_layers
        );
    }
    Ok(())
}

/// One warm-up run, then the median wall time of `reps` runs in ms.
fn time(
    exe: &mut dyn Executable,
    ins: &[&HostTensor],
    reps: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    exe.run(ins)?;
    let mut ms = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        exe.run(ins)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    Ok(ms[ms.len() / 2])
}

/// The step's inputs for one token at position `FILLED` (embedding of
/// token 504, its RoPE angles, a mask over the filled rows and itself).
fn inputs(
    cfg: &LlamaConfig,
    w: &LlamaWeights,
) -> Result<Vec<(&'static str, HostTensor)>, Box<dyn std::error::Error>> {
    let half = cfg.head_dim / 2;
    let mut x = vec![0f32; cfg.dim];
    w.embed_into(504, &mut x)?;
    let angle =
        |j: usize| FILLED as f64 * cfg.rope_base.powf(-2.0 * j as f64 / cfg.head_dim as f64);
    let cos: Vec<f32> = (0..half).map(|j| angle(j).cos() as f32).collect();
    let sin: Vec<f32> = (0..half).map(|j| angle(j).sin() as f32).collect();
    let mut mask = vec![-1.0e9f32; CTX + 1];
    mask[..FILLED].fill(0.0);
    mask[CTX] = 0.0;
    Ok(vec![
        ("x", HostTensor::from_vec(x, &[1, cfg.dim])?),
        ("cos", HostTensor::from_vec(cos, &[1, half])?),
        ("sin", HostTensor::from_vec(sin, &[1, half])?),
        ("mask", HostTensor::from_vec(mask, &[1, CTX + 1])?),
    ])
}
