//! `rlx pack IN OUT.rlxp`: write a `.rlxp` package from an ONNX model, a
//! text-IR graph with safetensors weights, a safetensors model directory
//! (BERT / MiniLM), a GGUF file or a safetensors file (weights only).

use super::inspect::parse_binding;
use crate::model::{read_text_ir, require_file, FileKind, OUTPUT_NAMES};
use crate::progress;
use anyhow::{bail, Context, Result};
use clap::Args;
use rlx::models::bert::{encoder_graph, graph_param, BertConfig};
use rlx::onnx::OnnxModel;
use rlx::pkg::{Package, PackageBuilder, Tier};
use rlx::runtime::BytesWeightLoader;
use rlx::{CompileOptions, Device};
use std::path::{Path, PathBuf};

/// `rlx pack` arguments.
#[derive(Args)]
pub struct PackArgs {
    /// The source: .onnx, .rlx (with --weights), a safetensors model
    /// directory (config.json + model.safetensors), .gguf or .safetensors.
    input: PathBuf,
    /// The package to write.
    output: PathBuf,
    /// Params of a .rlx graph, from a safetensors file.
    #[arg(long)]
    weights: Option<PathBuf>,
    /// Store a symbolic dim's size with the package, `name=N` (repeatable).
    #[arg(long, value_parser = parse_binding)]
    bind: Vec<(String, usize)>,
    /// Put this tensor in the warm (zstd) tier (repeatable).
    #[arg(long)]
    warm: Vec<String>,
    /// Batch size of the graph built for a model directory.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Sequence length of the graph built for a model directory.
    #[arg(long, default_value_t = 128)]
    seq: usize,
    /// ONNX constants of at least this many bytes become package tensors.
    #[arg(long, default_value_t = 1024)]
    lift_min_bytes: usize,
}

fn options(bind: &[(String, usize)]) -> CompileOptions {
    bind.iter()
        .fold(CompileOptions::default(), |o, (k, n)| o.bind_dim(k, *n))
}

/// A BERT / MiniLM directory: the encoder graph for `batch x seq`, its
/// weights as the graph holds them, the tokenizer.
fn model_dir(a: &PackArgs) -> Result<PackageBuilder> {
    let dir = &a.input;
    let cfg = BertConfig::from_file(&dir.join("config.json"))?;
    let eg = encoder_graph(&cfg, a.batch, a.seq)?;
    let st_path = dir.join("model.safetensors");
    require_file(&st_path)?;
    let st = BytesWeightLoader::open(&st_path).with_context(|| st_path.display().to_string())?;
    let mut b = Package::builder()
        .graph(eg.graph.clone())
        .metadata("source", &st_path.display().to_string())
        .metadata("source_format", "safetensors-dir")
        .metadata(
            OUTPUT_NAMES,
            r#"["last_hidden_state", "sentence_embedding"]"#,
        );
    let tok = dir.join("tokenizer.json");
    if tok.is_file() {
        b = b.tokenizer_json(
            &std::fs::read_to_string(&tok).with_context(|| tok.display().to_string())?,
        );
    }
    for (_, name, _) in eg.graph.params() {
        let t = graph_param(&st, name, &eg.transposed)
            .with_context(|| format!("{}: tensor \"{name}\"", st_path.display()))?;
        b = b.tensor(name, &t);
    }
    Ok(b)
}

fn builder(a: &PackArgs) -> Result<PackageBuilder> {
    if a.input.is_dir() {
        return model_dir(a);
    }
    require_file(&a.input)?;
    let kind = FileKind::of(&a.input)?;
    if a.weights.is_some() && kind != FileKind::TextIr {
        bail!("--weights is only for a .rlx text-IR graph");
    }
    let source = a.input.display().to_string();
    Ok(match kind {
        FileKind::Onnx => {
            let m = OnnxModel::load(&a.input, Device::Cpu).with_context(|| source.clone())?;
            let imported = m.import().with_context(|| source.clone())?;
            let names: Vec<String> = imported.outputs.iter().map(|o| o.name.clone()).collect();
            Package::builder()
                .graph_lifting_constants(&imported.graph, a.lift_min_bytes)
                .metadata(OUTPUT_NAMES, &serde_json::to_string(&names)?)
                .options(options(&a.bind))
                .metadata("source", &source)
                .metadata("source_format", "onnx")
        }
        FileKind::TextIr => {
            let g = read_text_ir(&a.input)?;
            let b = Package::builder()
                .graph(g)
                .options(options(&a.bind))
                .metadata("graph_source", &source);
            match &a.weights {
                Some(w) => {
                    require_file(w)?;
                    b.safetensors(w)
                }
                None => b,
            }
        }
        FileKind::Gguf => crate::llama::pack_gguf(&a.input)?,
        FileKind::Safetensors => Package::builder().safetensors(&a.input),
        FileKind::Rlxp => bail!("{source} is already a package"),
    })
}

/// Runs `rlx pack`.
pub fn run(a: PackArgs) -> Result<()> {
    let spin = progress::spinner(&format!("packing {}", a.input.display()));
    let result = (|| -> Result<()> {
        let mut b = builder(&a)?;
        for name in &a.warm {
            b = b.tier(name, Tier::Warm);
        }
        b.write(&a.output)
            .with_context(|| a.output.display().to_string())
    })();
    spin.finish_and_clear();
    result?;
    report(&a.output)
}

fn report(path: &Path) -> Result<()> {
    let p = Package::open(path).with_context(|| path.display().to_string())?;
    let bytes = std::fs::metadata(path)?.len();
    println!(
        "{}: {} tensors, {} bytes, graph: {}",
        path.display(),
        p.entries().len(),
        bytes,
        if p.has_graph() {
            "yes"
        } else {
            "no (weights only)"
        }
    );
    Ok(())
}
