//! The MiniLM-L6 rows of the compare example: the whole 6-layer
//! all-MiniLM-L6-v2 encoder with its real fp32 weights, built with the
//! graph API (`rlx_models::bert`) and imported from the fp32 ONNX export
//! (`rlx_onnx::OnnxModel`), each against ONNX Runtime on that export; the
//! encoder's compile time; and the peak RSS of what the `bert_embed`
//! example does (tokenize, load, embed), measured in a child process.
//!
//! Needs `$RLX_MODELS/all-MiniLM-L6-v2` (tools/fetch_models.sh) and the
//! export (`--onnx`, default `$RLX_MODELS/onnx/all-MiniLM-L6-v2-fp32.onnx`
//! where it exists, else `~/.cache/rlx-ref/models/onnx/all-MiniLM-L6-v2-fp32.onnx`,
//! made by shared/ref/export_minilm_onnx.py); without them the rows are
//! skipped with a note.

use rlx_bench::reference::ReferenceTiming;
use rlx_bench::{time_iterations, BenchConfig, BenchError, BenchResult};
use rlx_ir::HostTensor;
use rlx_models::bert::{encoder_graph, BertConfig, BertEncoder, TokenBatch};
use rlx_onnx::OnnxModel;
use rlx_runtime::{Device, Session};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error>;
/// Reference timing of a pattern id at a thread count (`None`: no reference).
pub type Reference<'a> = dyn FnMut(&str, usize) -> Result<Option<ReferenceTiming>, BenchError> + 'a;
/// Prints one table row.
pub type Row = fn(&str, usize, &super::rounds::Rounds);

/// (batch, seq) shapes timed.
const SHAPES: [(usize, usize); 3] = [(1, 128), (1, 16), (8, 128)];

/// The model dir and the fp32 ONNX export, if both exist.
pub fn paths(onnx: Option<PathBuf>) -> Result<(PathBuf, PathBuf), String> {
    let home = PathBuf::from(std::env::var("HOME").unwrap_or_default());
    let models = std::env::var("RLX_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| home.join(".cache/rlx-models"));
    let dir = models.join("all-MiniLM-L6-v2");
    let onnx = onnx.unwrap_or_else(|| {
        let ours = models.join("onnx/all-MiniLM-L6-v2-fp32.onnx");
        if ours.is_file() {
            ours
        } else {
            home.join(".cache/rlx-ref/models/onnx/all-MiniLM-L6-v2-fp32.onnx")
        }
    });
    if !dir.join("model.safetensors").is_file() {
        return Err(format!(
            "{}: no model.safetensors (tools/fetch_models.sh)",
            dir.display()
        ));
    }
    if !onnx.is_file() {
        return Err(format!(
            "{}: no fp32 export (tools/fetch_models.sh)",
            onnx.display()
        ));
    }
    Ok((dir, onnx))
}

/// Deterministic ids without padding; `tools/bench_ref.py` feeds ONNX
/// Runtime the same: `(i * 7919) % 29000 + 1000`.
fn tokens(batch: usize, seq: usize) -> TokenBatch {
    let n = batch * seq;
    TokenBatch {
        batch,
        seq,
        ids: (0..n as i64).map(|i| (i * 7919) % 29000 + 1000).collect(),
        mask: vec![1; n],
        type_ids: vec![0; n],
    }
}

/// Multiply-adds x 2 of the linear layers plus the attention products.
fn flops(cfg: &BertConfig, batch: usize, seq: usize) -> f64 {
    let (h, i, l) = (
        cfg.hidden_size,
        cfg.intermediate_size,
        cfg.num_hidden_layers,
    );
    let tokens = (batch * seq) as f64;
    let per_layer = 2.0 * tokens * (4 * h * h + 2 * h * i) as f64 + 4.0 * tokens * (seq * h) as f64;
    per_layer * l as f64
}

fn pattern_id(batch: usize, seq: usize) -> String {
    format!("minilm_l6_b{batch}_s{seq}")
}

/// Times build + compile of the 6-layer encoder graph (batch 1, seq 128;
/// weights not included) and, separately, loading its weights.
fn compile_time(dir: &Path, cfg: &BertConfig) -> Result<(BenchResult, Duration), Error> {
    let quick = BenchConfig {
        warmup: 1,
        min_runs: 5,
        min_time: Duration::from_millis(500),
    };
    let samples = time_iterations(&quick, || -> Result<(), Error> {
        let g = encoder_graph(cfg, 1, 128)?.graph;
        Session::new(Device::Cpu).try_compile(g)?;
        Ok(())
    })?;
    let mut enc = BertEncoder::from_dir(dir, Device::Cpu)?;
    let t = Instant::now();
    enc.compiled(1, 128)?;
    let with_weights = t.elapsed();
    Ok((
        BenchResult::from_samples("minilm_l6 compile", 0.0, samples),
        with_weights,
    ))
}

/// The sentences of the RSS probes: `bert_embed`'s defaults (batch 3 x
/// seq 10) and two long ones (batch 2 x seq 128).
fn probe_sentences(long: bool) -> Vec<String> {
    if long {
        let words: Vec<String> = (1..=40).map(|i| format!("word{i} is here")).collect();
        let text = words.join(" ");
        vec![text.clone(), format!("{text} short")]
    } else {
        [
            "The cat sits on the mat.",
            "A kitten is resting on a rug.",
            "Stock markets fell sharply on Monday.",
        ]
        .map(String::from)
        .to_vec()
    }
}

/// The child side of the RSS row (`compare --rss-probe short|long`): what
/// `bert_embed` does — tokenize, build + compile + load, embed — then
/// prints `params_bytes arena_bytes peak_rss_bytes` (peak: `VmHWM`).
pub fn rss_probe(which: &str) -> Result<(), Error> {
    let (dir, _) = paths(None)?;
    let sentences = probe_sentences(which == "long");
    let refs: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let tokenizer = rlx_models::tokenize::WordPieceTokenizer::from_dir(&dir)?;
    let mut encoder = BertEncoder::from_dir(&dir, Device::Cpu)?;
    let toks = tokenizer.encode(&refs)?;
    let compiled = encoder.compiled(toks.batch, toks.seq)?;
    let params: usize = compiled
        .param_shapes()
        .iter()
        .map(|(_, s)| s.size_bytes().unwrap_or(0))
        .sum();
    let arena = compiled.lir().plan.arena_bytes;
    encoder.embed(&toks)?;
    let status = std::fs::read_to_string("/proc/self/status")?;
    let hwm_kib: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or("no VmHWM in /proc/self/status")?;
    println!("{params} {arena} {}", hwm_kib * 1024);
    Ok(())
}

/// Runs the two RSS probes in child processes and prints each peak as a
/// multiple of params + planned arena (target <= 1.3), after the table.
pub fn rss_rows(paths: &Result<(PathBuf, PathBuf), String>) -> Result<(), Error> {
    if let Err(why) = paths {
        eprintln!("MiniLM peak RSS skipped: {why}");
        return Ok(());
    }
    if !cfg!(target_os = "linux") {
        eprintln!("MiniLM peak RSS skipped: reads /proc/self/status (Linux)");
        return Ok(());
    }
    for (which, shape) in [("short", "batch 3 x seq 10"), ("long", "batch 2 x seq 128")] {
        let out = std::process::Command::new(std::env::current_exe()?)
            .args(["--rss-probe", which])
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Vec<f64> = text
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        if !out.status.success() || v.len() != 3 {
            eprintln!(
                "minilm_l6 peak RSS ({shape}): probe failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            continue;
        }
        println!(
            "minilm_l6 peak RSS ({shape}, bert_embed's work): {:.1} MB = {:.2} x (params {:.2} MB + planned arena {:.2} MB); target <= 1.3",
            v[2] / 1e6,
            v[2] / (v[0] + v[1]),
            v[0] / 1e6,
            v[1] / 1e6
        );
    }
    Ok(())
}

/// Prints the MiniLM rows (those `wanted` selects) at each thread count.
pub fn rows(
    paths: Result<(PathBuf, PathBuf), String>,
    threads: &[usize],
    cfg: &BenchConfig,
    rounds: super::rounds::Plan,
    wanted: &dyn Fn(&str) -> bool,
    reference: &mut Reference,
    row: Row,
) -> Result<(), Error> {
    let (dir, onnx) = match paths {
        Ok(p) => p,
        Err(why) => {
            eprintln!("MiniLM rows skipped: {why}");
            return Ok(());
        }
    };
    let config = BertConfig::from_file(&dir.join("config.json"))?;
    if wanted("minilm_l6 compile") {
        let (r, with_weights) = compile_time(&dir, &config)?;
        let r = super::rounds::Rounds {
            ours: r,
            theirs: None,
            paired: None,
        };
        row("minilm_l6 compile (build + compile, b1 s128)", 1, &r);
        eprintln!(
            "minilm_l6: build + compile + load weights (first compile, b1 s128): {:.1} ms",
            with_weights.as_secs_f64() * 1e3
        );
    }
    for &t in threads {
        rlx_ir::env::set("RLX_NUM_THREADS", &t.to_string());
        let mut encoder = BertEncoder::from_dir(&dir, Device::Cpu)?;
        let mut imported = OnnxModel::load(&onnx, Device::Cpu)?;
        for (b, s) in SHAPES {
            let id = pattern_id(b, s);
            let toks = tokens(b, s);
            let inputs: Vec<(&str, HostTensor)> = toks.tensors()?.into_iter().collect();
            let feed: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, x)| (*n, x)).collect();
            let fl = flops(&config, b, s);
            let graph_label = format!("{id} (graph API)");
            if wanted(&graph_label) {
                let compiled = encoder.compiled(b, s)?;
                let r = super::rounds::alternate(
                    rounds,
                    || {
                        time_iterations(cfg, || compiled.try_run_typed(&feed).map(drop))
                            .map(|samples| BenchResult::from_samples(&id, fl, samples))
                    },
                    || reference(&id, t),
                )?;
                row(&graph_label, t, &r);
            }
            let onnx_label = format!("{id} (ONNX import)");
            if wanted(&onnx_label) {
                let r = super::rounds::alternate(
                    rounds,
                    || {
                        time_iterations(cfg, || imported.run(&feed).map(drop))
                            .map(|samples| BenchResult::from_samples(&id, fl, samples))
                    },
                    || reference(&id, t),
                )?;
                row(&onnx_label, t, &r);
            }
        }
    }
    Ok(())
}
