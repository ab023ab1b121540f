//! Runs every standard pattern at 1 and 2 threads and, where
//! `tools/bench_ref.py` has a reference for it, the reference in a child
//! process right after, printing a markdown table with the ratio
//! RLX median / reference median (below 1: RLX is faster).
//!
//! ```text
//! cargo run --release -p rlx-bench --example compare -- \
//!     [--threads 1,2] [--only matmul] [--quick] [--no-ref] [--python PATH] \
//!     [--rounds N] [--interleave]
//! ```
//! `--rounds N` measures each row N times, RLX and reference in turn, and
//! keeps each side's best statistics ([`rounds`]). `--interleave` makes the
//! rounds quarter-second batches against one reference process per row
//! (4 uncounted, then 8 unless `--rounds` says otherwise) and fills the
//! paired-ratio column.
//! The python defaults to `~/.cache/rlx-ref/venv/bin/python` (numpy + JAX +
//! onnxruntime; `tools/setup_bench_env.sh` makes it). The MiniLM-L6 rows ([`minilm`]) also take `--onnx PATH`
//! (the fp32 export ONNX Runtime and the ONNX import path run); their
//! peak-RSS line comes from the same binary re-run as `--rss-probe`.
//! The CNN rows ([`cnn`], `--only cnn_`) need `tools/gen_cnn_bench_models.py`'s
//! models and print their import + compile times after the table.
mod cnn;
mod minilm;
mod rounds;

use rlx_bench::reference::{run_reference_with, ReferenceServer, ReferenceTiming};
use rlx_bench::{kernel, patterns, run_benchmark, BenchConfig, BenchError};
use std::path::PathBuf;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, which] = &args[..] {
        if flag == "--rss-probe" {
            return minilm::rss_probe(which);
        }
    }
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let threads: Vec<usize> = value("--threads")
        .unwrap_or_else(|| "1,2".into())
        .split(',')
        .map(|t| t.trim().parse())
        .collect::<Result<_, _>>()?;
    let only = value("--only");
    let interleave = args.iter().any(|a| a == "--interleave");
    let rounds = rounds::Plan {
        rounds: value("--rounds")
            .map_or(Ok(if interleave { 8 } else { 1 }), |r| r.trim().parse())?,
        warmup: if interleave { 4 } else { 0 },
    };
    let cfg = if interleave {
        BenchConfig {
            warmup: 2,
            min_runs: BATCH_RUNS,
            min_time: BATCH_TIME,
        }
    } else if args.iter().any(|a| a == "--quick") {
        BenchConfig::quick()
    } else {
        BenchConfig::default()
    };
    let python = value("--python").map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var("HOME").unwrap_or_default();
        PathBuf::from(home).join(".cache/rlx-ref/venv/bin/python")
    });
    let use_ref = !args.iter().any(|a| a == "--no-ref") && python.exists();
    if !use_ref && !args.iter().any(|a| a == "--no-ref") {
        eprintln!(
            "no reference python at {} (tools/setup_bench_env.sh makes it, or pass --python PATH): RLX rows only",
            python.display()
        );
    }
    let script = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tools/bench_ref.py"
    ));

    let minilm_paths = minilm::paths(value("--onnx").map(PathBuf::from));
    // The MiniLM reference runs the same export the ONNX import path reads.
    let extra: Vec<String> = match &minilm_paths {
        Ok((_, onnx)) => vec!["--onnx".into(), onnx.display().to_string()],
        Err(_) => Vec::new(),
    };
    // With --interleave: the serving reference process of the current row.
    let mut server: Option<((String, usize), Option<ReferenceServer>)> = None;
    let mut reference = |name: &str, t: usize| -> Result<Option<ReferenceTiming>, BenchError> {
        if !use_ref {
            return Ok(None);
        }
        if !interleave {
            return run_reference_with(&python, &script, name, t, &extra);
        }
        let key = (name.to_string(), t);
        if server.as_ref().is_none_or(|(k, _)| *k != key) {
            // The previous row's process ends before the next one starts.
            server = None;
            let started = ReferenceServer::start(&python, &script, name, t, &extra)?;
            server = Some((key, started));
        }
        match &mut server {
            Some((_, Some(s))) => s.batch(BATCH_RUNS, BATCH_TIME).map(Some),
            _ => Ok(None),
        }
    };
    let wanted = |name: &str| only.as_deref().is_none_or(|o| name.contains(o));

    println!(
        "| pattern | threads | RLX median | RLX min | RLX p99 | GFLOP/s (median) | reference | ref median | ref min | RLX / ref (median) | RLX / ref (min) | RLX / ref (paired) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for p in patterns::standard() {
        if !wanted(&p.name) {
            continue;
        }
        for &t in &threads {
            rlx_ir::env::set("RLX_NUM_THREADS", &t.to_string());
            let r =
                rounds::alternate(rounds, || run_benchmark(&p, &cfg), || reference(&p.name, t))?;
            row(&p.name, t, &r);
        }
    }
    minilm::rows(
        minilm_paths.clone(),
        &threads,
        &cfg,
        rounds,
        &wanted,
        &mut reference,
        row,
    )?;
    let cnn_notes = cnn::rows(
        &cnn::Env {
            python: use_ref.then_some(python.as_path()),
            script: &script,
        },
        &threads,
        &cfg,
        rounds,
        &wanted,
        &mut reference,
        row,
    )?;
    // The matmul kernel alone, without the session's input / output copies.
    for (m, k, n) in [
        (512, 512, 512),
        (1024, 1024, 1024),
        (2048, 2048, 2048),
        (1, 4096, 4096),
    ] {
        if !wanted(&kernel::kernel_name(m, k, n)) {
            continue;
        }
        for &t in &threads {
            rlx_ir::env::set("RLX_NUM_THREADS", &t.to_string());
            let name = kernel::kernel_name(m, k, n);
            let r = rounds::alternate(
                rounds,
                || kernel::matmul_kernel(m, k, n, &cfg),
                || reference(&name, t),
            )?;
            let label = format!("{} (kernel only)", r.ours.name);
            row(&label, t, &r);
        }
    }
    // bf16 operands on the vdpbf16ps kernel (f32 accumulation), against
    // JAX's bf16 matmul.
    for n in [512, 1024] {
        if !wanted(&format!("matmul_bf16_{n}")) {
            continue;
        }
        for &t in &threads {
            rlx_ir::env::set("RLX_NUM_THREADS", &t.to_string());
            let r = rounds::alternate(
                rounds,
                || kernel::typed_matmul_kernel(n, n, n, rlx_ir::DType::BF16, &cfg),
                || reference(&format!("matmul_bf16_{n}"), t),
            )?;
            let label = format!("{} (kernel only)", r.ours.name);
            row(&label, t, &r);
        }
    }
    if !cnn_notes.is_empty() {
        println!();
        cnn_notes.iter().for_each(|n| println!("{n}"));
    }
    if wanted("minilm_l6 peak RSS") {
        println!();
        minilm::rss_rows(&minilm_paths)?;
    }
    Ok(())
}

/// Runs and time of one interleaved batch, each side.
const BATCH_RUNS: usize = 5;
const BATCH_TIME: Duration = Duration::from_millis(250);

/// One markdown table row: RLX's timing and, if any, the reference's.
fn row(label: &str, threads: usize, rounds: &rounds::Rounds) {
    let (r, reference) = (&rounds.ours, rounds.theirs.as_ref());
    let gf = if r.flops > 0.0 {
        format!("{:.1}", r.gflops())
    } else {
        "-".into()
    };
    let ratio = |a: Duration, b: Duration| format!("{:.2}", a.as_secs_f64() / b.as_secs_f64());
    let refcols = match reference {
        Some(x) => [
            x.library.clone(),
            ms(x.median),
            ms(x.min),
            ratio(r.median, x.median),
            ratio(r.min, x.min),
        ]
        .join(" | "),
        None => "- | - | - | - | -".into(),
    };
    let paired = rounds.paired.map_or("-".into(), |p| format!("{p:.2}"));
    println!(
        "| {label} | {threads} | {} | {} | {} | {gf} | {refcols} | {paired} |",
        ms(r.median),
        ms(r.min),
        ms(r.p99)
    );
}

fn ms(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} µs")
    } else {
        format!("{:.3} ms", us / 1000.0)
    }
}
