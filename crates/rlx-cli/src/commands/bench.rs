//! `rlx bench FILE`: latency percentiles of a model per device and CPU
//! thread count, as the runtime's [`DeviceBenchResult`] rows.

use super::inspect::parse_binding;
use super::run::{parse_input, read_inputs};
use crate::model::Model;
use crate::progress;
use anyhow::{bail, Result};
use clap::Args;
use rlx::runtime::devices::unavailable_reason;
use rlx::{
    available_devices, is_available, parse_device_list, BenchOptions, Device, DeviceBenchResult,
    DeviceCandidate, Dim, HostTensor,
};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

/// `rlx bench` arguments.
#[derive(Args)]
pub struct BenchArgs {
    /// The model (.onnx, .rlxp, or a .rlx text-IR graph with --weights).
    file: PathBuf,
    /// Inputs as name=path.npy; inputs not given are zeros of the model's shape.
    #[arg(long = "input", short = 'i', value_parser = parse_input)]
    inputs: Vec<(String, PathBuf)>,
    /// Size of a symbolic dim of a zero-filled input, `name=N`.
    #[arg(long, value_parser = parse_binding)]
    bind: Vec<(String, usize)>,
    /// Params of a .rlx graph, from a safetensors file.
    #[arg(long)]
    weights: Option<PathBuf>,
    /// `all` (every available device) or a list such as `cpu,cuda:0`.
    #[arg(long, default_value = "all")]
    devices: String,
    /// Timed runs per device.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Untimed runs before timing.
    #[arg(long, default_value_t = 2)]
    warmup: u32,
    /// CPU worker-thread counts to measure, each a row (`1,4`); default: RLX_NUM_THREADS or the cores.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    threads: Vec<u32>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// One measured configuration: the runtime's [`DeviceBenchResult`], or why
/// the candidate could not run the model.
#[derive(Clone, Debug)]
pub struct Row {
    /// The device and CPU thread count (`None`: the default).
    pub candidate: DeviceCandidate,
    /// Compile time and run-time statistics, or the reason it failed.
    pub result: std::result::Result<DeviceBenchResult, String>,
}

/// What to measure: devices, thread counts, runs.
pub struct BenchPlan {
    /// Devices, in order.
    pub devices: Vec<Device>,
    /// CPU thread counts (empty: the default).
    pub threads: Vec<u32>,
    /// Untimed and timed runs per candidate.
    pub bench: BenchOptions,
}

impl BenchPlan {
    /// One candidate per device, the CPU once per thread count.
    pub fn candidates(&self) -> Vec<DeviceCandidate> {
        let mut out = Vec::new();
        for &d in &self.devices {
            if d == Device::Cpu && !self.threads.is_empty() {
                out.extend(
                    self.threads
                        .iter()
                        .map(|&t| DeviceCandidate::cpu_threads(t as usize)),
                );
            } else {
                out.push(DeviceCandidate::new(d));
            }
        }
        out
    }
}

/// Compiles and times `model` on every candidate of `plan` with
/// [`DeviceBenchResult::measure`], the runtime's benchmark core (what
/// `benchmark_devices` uses for one graph). The CLI keeps its own loop over
/// candidates because its models are not all one graph with params as
/// feeds: `.rlxp` packages bind their params from the file and GGUF llama
/// models run as a token loop; and a failing candidate is a row here, not
/// the end of the run.
pub fn bench_devices(
    model: &Model,
    inputs: &[(String, HostTensor)],
    plan: &BenchPlan,
) -> Result<Vec<Row>> {
    let candidates = plan.candidates();
    let per = (plan.bench.warmup + plan.bench.runs.max(1)) as u64;
    let bar = progress::bar(candidates.len() as u64 * per, "bench");
    let mut rows = Vec::new();
    for (i, candidate) in candidates.into_iter().enumerate() {
        let result = if is_available(candidate.device) {
            bar.set_message(candidate.to_string());
            // The llama runner takes its thread count from the environment.
            if let Some(t) = candidate.threads {
                rlx::ir::env::set("RLX_NUM_THREADS", &t.to_string());
            }
            let r = measure(model, inputs, candidate, &plan.bench, &bar);
            if candidate.threads.is_some() {
                rlx::ir::env::unset("RLX_NUM_THREADS");
            }
            r.map_err(|e| format!("{e:#}"))
        } else {
            Err(unavailable_reason(candidate.device))
        };
        // Past this candidate's runs, whether it ran them all or not.
        bar.set_position((i as u64 + 1) * per);
        rows.push(Row { candidate, result });
    }
    bar.finish_and_clear();
    Ok(rows)
}

fn measure(
    model: &Model,
    inputs: &[(String, HostTensor)],
    candidate: DeviceCandidate,
    bench: &BenchOptions,
    bar: &indicatif::ProgressBar,
) -> Result<DeviceBenchResult> {
    let t0 = Instant::now();
    let mut runner = model.prepare(candidate, inputs)?;
    let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
    DeviceBenchResult::measure(candidate, compile_ms, bench, || {
        runner.run(inputs)?;
        bar.inc(1);
        anyhow::Ok(())
    })
}

/// Zeros for each model input not in `given`, symbolic dims from `bind`.
fn fill_inputs(
    model: &Model,
    mut given: Vec<(String, HostTensor)>,
    bind: &[(String, usize)],
) -> Result<Vec<(String, HostTensor)>> {
    for (_, name, shape) in model.graph.inputs() {
        if given.iter().any(|(n, _)| n == name) {
            continue;
        }
        let mut dims = Vec::new();
        for d in shape.dims() {
            dims.push(match d {
                Dim::Static(n) => *n,
                Dim::Sym(s) => match bind.iter().find(|(k, _)| k == s) {
                    Some(&(_, n)) => n,
                    None => match model.options.lower.bindings.get(s) {
                        Some(&n) => n,
                        None => bail!(
                            "input \"{name}\" has the symbolic dim \"{s}\": give --bind {s}=N or --input {name}=file.npy"
                        ),
                    },
                },
            });
        }
        given.push((name.to_string(), HostTensor::zeros(shape.dtype(), &dims)));
    }
    Ok(given)
}

/// Runs `rlx bench`.
pub fn run(a: BenchArgs) -> Result<()> {
    let model = Model::load(&a.file, a.weights.as_deref())?;
    let inputs = fill_inputs(&model, read_inputs(&a.inputs)?, &a.bind)?;
    let devices = if a.devices.trim().eq_ignore_ascii_case("all") {
        available_devices()
    } else {
        parse_device_list(&a.devices)?
    };
    let plan = BenchPlan {
        devices,
        threads: a.threads.clone(),
        bench: BenchOptions {
            warmup: a.warmup as usize,
            runs: a.runs as usize,
        },
    };
    let rows = bench_devices(&model, &inputs, &plan)?;
    if a.json {
        let v: Vec<_> = rows
            .iter()
            .map(|r| match &r.result {
                Ok(b) => b.to_json(),
                Err(e) => json!({
                    "device": r.candidate.device.to_string(),
                    "threads": r.candidate.threads,
                    "candidate": r.candidate.to_string(),
                    "error": e,
                }),
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"file": a.file.display().to_string(), "rows": v})
            )?
        );
        return Ok(());
    }
    println!(
        "{:<10} {:>7} {:>11} {:>5} {:>10} {:>10} {:>10} {:>10}",
        "device", "threads", "compile ms", "runs", "min ms", "p50 ms", "p90 ms", "p99 ms"
    );
    for r in &rows {
        let device = r.candidate.device.to_string();
        let threads = r
            .candidate
            .threads
            .map_or("-".to_string(), |t| t.to_string());
        match &r.result {
            Ok(b) => println!(
                "{device:<10} {threads:>7} {:>11.2} {:>5} {:>10.3} {:>10.3} {:>10.3} {:>10.3}",
                b.compile_ms, b.runs, b.min_ms, b.median_ms, b.p90_ms, b.p99_ms
            ),
            Err(e) => println!("{device:<10} {threads:>7} failed: {e}"),
        }
    }
    Ok(())
}
