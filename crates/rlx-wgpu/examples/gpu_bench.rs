//! The BENCHMARKS.md rows of the wgpu backend, each next to its reference
//! measured in the same run: a tiny graph's run against the adapter's
//! empty-submit round trip (and against one bare dispatch, the floor under
//! any run) and against the CPU backend; the digits MLP training step and a
//! MiniLM-style encoder block with fused regions / matmul epilogues
//! against the same graphs decomposed (one dispatch per elementwise node);
//! and (with the model files) MiniLM-L6 batch 1 x 128 tokens against the
//! CPU backend.
//!
//! ```text
//! cargo run --release -p rlx-wgpu --example gpu_bench [-- --no-minilm]
//! ```

#[path = "common/digits.rs"]
mod digits;

use rlx_driver::{Backend, Executable};
use rlx_ir::op::UnaryOp;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Op, Shape};
use rlx_models::bert::{BertEncoder, TokenBatch};
use rlx_runtime::Device;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Median seconds of `reps` calls of `f` (after one warm-up call).
fn median(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[reps / 2]
}

fn compile(backend: &dyn Backend, g: &Graph) -> Box<dyn Executable> {
    let lir = rlx_compile::lower(g, &|op| backend.claims(op), &Default::default()).unwrap();
    backend.compile(lir).unwrap()
}

/// The floor under any graph run: one compute pass with one dispatch of a
/// trivial kernel, submitted and waited for (no upload, no read-back).
fn one_dispatch_round_trip(ctx: &rlx_wgpu::GpuContext) -> impl FnMut() + '_ {
    let d = &ctx.device;
    let buffer = d.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 64,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let src = "@group(0) @binding(0) var<storage, read_write> mem: array<u32>;\n\
               @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) \
               { if (g.x < 16u) { mem[g.x] = mem[g.x] * 2u; } }";
    let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(src.into()),
    });
    let pipeline = d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let bind_group = d.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: buffer.as_entire_binding(),
        }],
    });
    move || {
        let mut enc = d.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_bind_group(0, &bind_group, &[]);
            pass.set_pipeline(&pipeline);
            pass.dispatch_workgroups(1, 1, 1);
        }
        ctx.queue.submit([enc.finish()]);
        d.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = rlx_wgpu::context()?;
    println!(
        "adapter: {} (shader-f16: {}; features {:?})",
        ctx.describe(),
        ctx.shader_f16,
        ctx.device.features()
    );
    let empty = median(200, || {
        let enc = ctx.device.create_command_encoder(&Default::default());
        ctx.queue.submit([enc.finish()]);
        ctx.device
            .poll(wgpu::PollType::wait_indefinitely())
            .unwrap();
    });
    let one_dispatch = median(200, one_dispatch_round_trip(&ctx));
    let mut g = Graph::new("tiny");
    let x = g.input("x", Shape::new(&[16], DType::F32));
    let y = g.mul(x, g.constant(2.0, DType::F32));
    g.set_outputs(vec![y]);
    let xv = HostTensor::from_vec(vec![1.0f32; 16], &[16])?;
    let mut gpu = compile(&rlx_wgpu::WgpuBackend, &g);
    let mut cpu = compile(&rlx_cpu::CpuBackend, &g);
    let tiny_gpu = median(200, || {
        gpu.run(&[&xv]).unwrap();
    });
    let tiny_cpu = median(200, || {
        cpu.run(&[&xv]).unwrap();
    });
    println!("empty submit + wait: {:.1} us", empty * 1e6);
    println!(
        "one hand-written dispatch (16 words, no upload / read-back) + wait: {:.1} us = {:.2}x empty submit",
        one_dispatch * 1e6,
        one_dispatch / empty
    );
    println!(
        "tiny graph (x * 2, 16 floats, 1 dispatch + upload + read-back): gpu {:.1} us = {:.2}x empty submit; cpu {:.2} us (gpu / cpu {:.0}x)",
        tiny_gpu * 1e6,
        tiny_gpu / empty,
        tiny_cpu * 1e6,
        tiny_gpu / tiny_cpu
    );
    fused_vs_decomposed(
        "digits MLP training step (b32)",
        &digits::train_step_graph(),
    );
    fused_vs_decomposed(
        "MiniLM-style block (s32 h128 ffn512)",
        &encoder_block(32, 128, 512),
    );
    fused_vs_decomposed(
        "BERT FFN tail (s128 h384: bias, GELU, scale, residual)",
        &ffn_tail(128, 384),
    );
    let root = std::env::var("RLX_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/rlx-models")
        });
    let dir = root.join("all-MiniLM-L6-v2");
    if std::env::args().any(|a| a == "--no-minilm") {
        return Ok(());
    }
    if !dir.join("model.safetensors").is_file() {
        println!("MiniLM: skipped (no model files; tools/fetch_models.sh)");
        return Ok(());
    }
    rlx_driver::registry::register_backend(Arc::new(rlx_wgpu::WgpuBackend));
    let seq = 128;
    let tokens = TokenBatch {
        batch: 1,
        seq,
        ids: (0..seq as i64)
            .map(|i| {
                if i == 0 {
                    101
                } else if i == seq as i64 - 1 {
                    102
                } else {
                    2000 + i
                }
            })
            .collect(),
        mask: vec![1; seq],
        type_ids: vec![0; seq],
    };
    let mut times = Vec::new();
    for device in [Device::Cpu, Device::Gpu] {
        let mut enc = BertEncoder::from_dir(&dir, device)?;
        times.push(median(5, || {
            enc.run(&tokens).unwrap();
        }));
    }
    println!(
        "MiniLM-L6 b1 s128: cpu {:.1} ms, gpu {:.1} ms (gpu / cpu {:.2}x)",
        times[0] * 1e3,
        times[1] * 1e3,
        times[1] / times[0]
    );
    Ok(())
}

/// Deterministic values in `[-0.5, 0.5)` for every param and input of `g`.
fn filled(shapes: &[(NodeId, String, Shape)]) -> Vec<HostTensor> {
    shapes
        .iter()
        .enumerate()
        .map(|(k, (_, _, s))| {
            let dims = s.static_dims().unwrap();
            let n = dims.iter().product();
            let v = digits::uniform_init(n, -0.5, 0.5, 7 + k as u64);
            HostTensor::from_vec(v, &dims).unwrap()
        })
        .collect()
}

/// Runs `g` compiled with the fused ops the wgpu backend claims and with
/// them decomposed (the kernels before fusion), on the same device in the
/// same run, the two runs alternating (so load on a shared host hits both
/// alike): median and best run time and the dispatches of each.
fn fused_vs_decomposed(name: &str, g: &Graph) {
    let ctx = rlx_wgpu::context().unwrap();
    let build = |fuse: bool| {
        let claims = |op: &Op| {
            rlx_wgpu::WgpuBackend.claims(op)
                && (fuse || !matches!(op, Op::ElementwiseRegion { .. } | Op::FusedMatMul { .. }))
        };
        let lir = rlx_compile::lower(g, &claims, &Default::default()).unwrap();
        let (params, inputs) = (filled(&lir.io.params), filled(&lir.io.inputs));
        let mut exe = rlx_wgpu::WgpuExecutable::new(lir, ctx.clone()).unwrap();
        for (i, p) in params.iter().enumerate() {
            exe.set_param(i, p).unwrap();
        }
        (exe, inputs)
    };
    let mut variants = [build(true), build(false)];
    let mut times = [Vec::new(), Vec::new()];
    for rep in 0..=30 {
        for (k, (exe, inputs)) in variants.iter_mut().enumerate() {
            let refs: Vec<&HostTensor> = inputs.iter().collect();
            let start = Instant::now();
            exe.run(&refs).unwrap();
            if rep > 0 {
                times[k].push(start.elapsed().as_secs_f64());
            }
        }
    }
    let stats = |t: &mut Vec<f64>| {
        t.sort_by(f64::total_cmp);
        (t[t.len() / 2], t[0])
    };
    let (fused, fused_best) = stats(&mut times[0]);
    let (plain, plain_best) = stats(&mut times[1]);
    println!(
        "{name}: fused {:.2} ms median / {:.2} best ({} dispatch(es)), decomposed {:.2} / {:.2} ({} dispatch(es)): fused / decomposed {:.2}x median, {:.2}x best",
        fused * 1e3,
        fused_best * 1e3,
        variants[0].0.dispatch_count(),
        plain * 1e3,
        plain_best * 1e3,
        variants[1].0.dispatch_count(),
        fused / plain,
        fused_best / plain_best
    );
}

/// `gelu(x + bias) * 0.5 + residual`: the elementwise work after a BERT
/// feed-forward matmul, four nodes the compiler fuses into one region.
fn ffn_tail(seq: usize, hidden: usize) -> Graph {
    let mut g = Graph::new("ffn_tail");
    let x = g.input("x", Shape::new(&[seq, hidden], DType::F32));
    let bias = g.input("bias", Shape::new(&[hidden], DType::F32));
    let res = g.input("res", Shape::new(&[seq, hidden], DType::F32));
    let y = g.add(x, bias);
    let y = g.unary(UnaryOp::Gelu, y);
    let y = g.mul(y, g.constant(0.5, DType::F32));
    let y = g.add(y, res);
    g.set_outputs(vec![y]);
    g
}

/// One MiniLM-style encoder layer written out of primitives (single-head
/// attention, residual adds, layer norms, a GELU feed-forward), so the
/// compiler's fusion passes have the shapes and tails a BERT layer has.
fn encoder_block(seq: usize, hidden: usize, ffn: usize) -> Graph {
    let mut g = Graph::new("encoder_block");
    let f32s = |d: &[usize]| Shape::new(d, DType::F32);
    let x = g.input("x", f32s(&[seq, hidden]));
    let dense = |g: &mut Graph, name: &str, x: NodeId, i: usize, o: usize| {
        let w = g.param(&format!("{name}.w"), f32s(&[i, o]));
        let b = g.param(&format!("{name}.b"), f32s(&[o]));
        let y = g.mm(x, w);
        g.add(y, b)
    };
    let q = dense(&mut g, "q", x, hidden, hidden);
    let k = dense(&mut g, "k", x, hidden, hidden);
    let v = dense(&mut g, "v", x, hidden, hidden);
    let kt = g.transpose_(k, &[1, 0]);
    let s = g.mm(q, kt);
    let s = g.mul(s, g.constant(1.0 / (hidden as f64).sqrt(), DType::F32));
    let p = g.sm(s, -1);
    let a = g.mm(p, v);
    let a = dense(&mut g, "o", a, hidden, hidden);
    let h = g.add(a, x);
    let h = g.ln(h, None, None, 1e-12);
    let f = dense(&mut g, "up", h, hidden, ffn);
    let f = g.unary(UnaryOp::Gelu, f);
    let f = dense(&mut g, "down", f, ffn, hidden);
    let y = g.add(f, h);
    let y = g.ln(y, None, None, 1e-12);
    g.set_outputs(vec![y]);
    g
}
