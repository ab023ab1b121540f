//! Runs the MiniLM-L6 graph-API encoder in a loop, for profiling:
//!
//! ```text
//! RLX_CPU_PROFILE=1 RLX_NUM_THREADS=1 cargo run --release -p rlx-bench \
//!     --example minilm_loop -- [batch] [seq] [runs]
//! ```
//! (defaults 1 128 50). Prints the min / median time per run; with
//! `RLX_CPU_PROFILE` set the CPU executor prints its per-op table at exit.
//! Needs `$RLX_MODELS/all-MiniLM-L6-v2` (tools/fetch_models.sh).

use rlx_ir::HostTensor;
use rlx_models::bert::{BertEncoder, TokenBatch};
use rlx_runtime::Device;
use std::path::PathBuf;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let arg = |i: usize, d: usize| args.get(i).copied().unwrap_or(d);
    let (batch, seq, runs) = (arg(0, 1), arg(1, 128), arg(2, 50).max(1));
    let models = std::env::var("RLX_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/rlx-models")
        });
    let mut encoder = BertEncoder::from_dir(&models.join("all-MiniLM-L6-v2"), Device::Cpu)?;
    let n = batch * seq;
    let toks = TokenBatch {
        batch,
        seq,
        ids: (0..n as i64).map(|i| (i * 7919) % 29000 + 1000).collect(),
        mask: vec![1; n],
        type_ids: vec![0; n],
    };
    let inputs: Vec<(&str, HostTensor)> = toks.tensors()?.into_iter().collect();
    let feed: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, x)| (*n, x)).collect();
    let compiled = encoder.compiled(batch, seq)?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        compiled.try_run_typed(&feed)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "minilm b{batch} s{seq}: min {:.3} ms, median {:.3} ms over {runs} runs",
        times[0],
        times[runs / 2]
    );
    Ok(())
}
