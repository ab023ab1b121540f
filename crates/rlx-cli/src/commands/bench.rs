//! `rlx bench FILE`: latency percentiles of a model per device.

use super::inspect::parse_binding;
use super::run::{parse_input, read_inputs};
use crate::model::Model;
use crate::progress;
use anyhow::{bail, Result};
use clap::Args;
use rlx::runtime::devices::unavailable_reason;
use rlx::{available_devices, is_available, parse_device_list, Device, Dim, HostTensor};
use rlx_cli::stats::Latency;
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

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

/// One measured configuration.
#[derive(Clone, Debug)]
pub struct Row {
    /// The device.
    pub device: Device,
    /// CPU worker threads (None: not a CPU row, or the default count).
    pub threads: Option<u32>,
    /// Compile time.
    pub compile: Duration,
    /// Run-time percentiles, or why the device could not run the model.
    pub latency: std::result::Result<Latency, String>,
}

/// What to measure: devices, thread counts, runs.
pub struct BenchPlan {
    /// Devices, in order.
    pub devices: Vec<Device>,
    /// CPU thread counts (empty: the default).
    pub threads: Vec<u32>,
    /// Untimed runs.
    pub warmup: u32,
    /// Timed runs.
    pub runs: u32,
}

/// Compiles and times `model` on every device of `plan` (one row per CPU
/// thread count). The one place `rlx bench` measures: a device layer's
/// `benchmark_devices` can replace its body.
pub fn bench_devices(
    model: &Model,
    inputs: &[(String, HostTensor)],
    plan: &BenchPlan,
) -> Result<Vec<Row>> {
    let mut configs: Vec<(Device, Option<u32>)> = Vec::new();
    for &d in &plan.devices {
        if d == Device::Cpu && !plan.threads.is_empty() {
            configs.extend(plan.threads.iter().map(|&t| (d, Some(t))));
        } else {
            configs.push((d, None));
        }
    }
    let total = configs.len() as u64 * u64::from(plan.warmup + plan.runs);
    let bar = progress::bar(total, "bench");
    let mut rows = Vec::new();
    for (device, threads) in configs {
        if !is_available(device) {
            rows.push(Row {
                device,
                threads,
                compile: Duration::ZERO,
                latency: Err(unavailable_reason(device)),
            });
            bar.inc(u64::from(plan.warmup + plan.runs));
            continue;
        }
        if let Some(t) = threads {
            rlx::ir::env::set("RLX_NUM_THREADS", &t.to_string());
        }
        bar.set_message(format!("{device}"));
        let t0 = Instant::now();
        let measured = model.prepare(device, inputs).and_then(|mut runner| {
            let compile = t0.elapsed();
            let mut times = Vec::with_capacity(plan.runs as usize);
            for i in 0..plan.warmup + plan.runs {
                let t = Instant::now();
                runner.run(inputs)?;
                if i >= plan.warmup {
                    times.push(t.elapsed());
                }
                bar.inc(1);
            }
            Ok((compile, Latency::of(&times)))
        });
        if threads.is_some() {
            rlx::ir::env::unset("RLX_NUM_THREADS");
        }
        rows.push(match measured {
            Ok((compile, l)) => Row {
                device,
                threads,
                compile,
                latency: Ok(l),
            },
            Err(e) => Row {
                device,
                threads,
                compile: t0.elapsed(),
                latency: Err(format!("{e:#}")),
            },
        });
    }
    bar.finish_and_clear();
    Ok(rows)
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
        warmup: a.warmup,
        runs: a.runs,
    };
    let rows = bench_devices(&model, &inputs, &plan)?;
    if a.json {
        let v: Vec<_> = rows
            .iter()
            .map(|r| {
                let mut o = json!({
                    "device": r.device.to_string(),
                    "threads": r.threads,
                    "compile_ms": r.compile.as_secs_f64() * 1e3,
                });
                match &r.latency {
                    Ok(l) => {
                        o["runs"] = json!(l.runs);
                        o["min_ms"] = json!(l.min_ms);
                        o["p50_ms"] = json!(l.p50_ms);
                        o["p90_ms"] = json!(l.p90_ms);
                        o["p99_ms"] = json!(l.p99_ms);
                        o["mean_ms"] = json!(l.mean_ms);
                    }
                    Err(e) => o["error"] = json!(e),
                }
                o
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
        let threads = r.threads.map_or("-".to_string(), |t| t.to_string());
        match &r.latency {
            Ok(l) => println!(
                "{:<10} {:>7} {:>11.2} {:>5} {:>10.3} {:>10.3} {:>10.3} {:>10.3}",
                r.device.to_string(),
                threads,
                r.compile.as_secs_f64() * 1e3,
                l.runs,
                l.min_ms,
                l.p50_ms,
                l.p90_ms,
                l.p99_ms
            ),
            Err(e) => println!("{:<10} {:>7} failed: {e}", r.device.to_string(), threads),
        }
    }
    Ok(())
}
