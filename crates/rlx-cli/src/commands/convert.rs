//! `rlx convert IN OUT.gguf`: safetensors / ONNX weights to GGUF.

use crate::model::require_file;
use crate::progress;
use anyhow::{Context, Result};
use clap::Args;
use rlx::gguf_convert::{parse_type, Converter};
use std::path::PathBuf;

/// `rlx convert` arguments.
#[derive(Args)]
pub struct ConvertArgs {
    /// The source (.safetensors or .onnx).
    input: PathBuf,
    /// The GGUF file to write.
    output: PathBuf,
    /// The type of 2-D and larger tensors: f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, ...
    #[arg(long = "type", default_value = "f16")]
    ty: String,
    /// Per-tensor overrides: `pattern=type` (glob on the name), repeatable.
    #[arg(long = "override")]
    overrides: Vec<String>,
    /// Print the per-tensor report.
    #[arg(long)]
    report: bool,
}

/// Runs `rlx convert`.
pub fn run(a: ConvertArgs) -> Result<()> {
    require_file(&a.input)?;
    let ty = parse_type(&a.ty).with_context(|| format!("--type {}", a.ty))?;
    let mut conv = Converter::new(ty);
    for o in &a.overrides {
        conv = conv
            .override_spec(o)
            .with_context(|| format!("--override {o}"))?;
    }
    let spin = progress::spinner(&format!("converting {}", a.input.display()));
    let report = conv.convert_file(&a.input, &a.output);
    spin.finish_and_clear();
    let report = report.with_context(|| a.input.display().to_string())?;
    if a.report {
        println!("{report}");
    }
    println!(
        "{} -> {}: {} tensors, {} -> {} bytes ({:.2}x), min cosine {:.6}",
        a.input.display(),
        a.output.display(),
        report.tensors.len(),
        report.bytes_before(),
        report.bytes_after(),
        report.compression_ratio(),
        report.min_cosine()
    );
    Ok(())
}
