//! Runs every standard pattern at 1 and 2 threads and, where
//! `tools/bench_ref.py` has a reference for it, the reference in a child
//! process right after, printing a markdown table with the ratio
//! RLX median / reference median (below 1: RLX is faster).
//!
//! ```text
//! cargo run --release -p rlx-bench --example compare -- \
//!     [--threads 1,2] [--only matmul] [--quick] [--no-ref] [--python PATH]
//! ```
//! The python defaults to `~/.cache/rlx-ref/venv/bin/python` (numpy + JAX).
use rlx_bench::reference::run_reference;
use rlx_bench::{patterns, run_benchmark, BenchConfig};
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
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
    let cfg = if args.iter().any(|a| a == "--quick") {
        BenchConfig::quick()
    } else {
        BenchConfig::default()
    };
    let python = value("--python").map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var("HOME").unwrap_or_default();
        PathBuf::from(home).join(".cache/rlx-ref/venv/bin/python")
    });
    let use_ref = !args.iter().any(|a| a == "--no-ref") && python.exists();
    let script = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tools/bench_ref.py"
    ));

    println!("| pattern | threads | RLX median | RLX min | RLX p99 | GFLOP/s | reference | ref median | RLX / ref |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for p in patterns::standard() {
        if only.as_deref().is_some_and(|o| !p.name.contains(o)) {
            continue;
        }
        for &t in &threads {
            rlx_ir::env::set("RLX_NUM_THREADS", &t.to_string());
            let r = run_benchmark(&p, &cfg)?;
            let reference = if use_ref {
                run_reference(&python, &script, &p.name, t)?
            } else {
                None
            };
            let gf = if p.flops > 0.0 {
                format!("{:.1}", r.gflops())
            } else {
                "-".into()
            };
            let (lib, rmed, ratio) = match &reference {
                Some(x) => (
                    x.library.clone(),
                    ms(x.median),
                    format!("{:.2}", r.median.as_secs_f64() / x.median.as_secs_f64()),
                ),
                None => ("-".into(), "-".into(), "-".into()),
            };
            println!(
                "| {} | {t} | {} | {} | {} | {gf} | {lib} | {rmed} | {ratio} |",
                p.name,
                ms(r.median),
                ms(r.min),
                ms(r.p99)
            );
        }
    }
    Ok(())
}

fn ms(d: std::time::Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} µs")
    } else {
        format!("{:.3} ms", us / 1000.0)
    }
}
