//! `rlx run FILE --input name=x.npy ...`: run a model on `.npy` inputs.

use crate::model::Model;
use anyhow::{Context, Result};
use clap::Args;
use rlx::{parse_device, Device, HostTensor};
use rlx_cli::npy::{read_npy, write_npy};
use std::path::PathBuf;

/// Parses `name=path`.
pub fn parse_input(s: &str) -> std::result::Result<(String, PathBuf), String> {
    let (k, v) = s
        .split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .ok_or_else(|| format!("expected name=path.npy, got \"{s}\""))?;
    Ok((k.to_string(), PathBuf::from(v)))
}

/// Parses a device (`cpu`, `cuda:0`, ...).
pub fn parse_device_arg(s: &str) -> std::result::Result<Device, String> {
    parse_device(s).map_err(|e| e.to_string())
}

/// `rlx run` arguments.
#[derive(Args)]
pub struct RunArgs {
    /// The model (.onnx, .rlxp, or a .rlx text-IR graph with --weights).
    file: PathBuf,
    /// An input as name=path.npy (repeat for each input).
    #[arg(long = "input", short = 'i', value_parser = parse_input)]
    inputs: Vec<(String, PathBuf)>,
    /// Params of a .rlx graph, from a safetensors file.
    #[arg(long)]
    weights: Option<PathBuf>,
    /// The device to run on.
    #[arg(long, default_value = "cpu", value_parser = parse_device_arg)]
    device: Device,
    /// Directory for the outputs (one NAME.npy per output); created if missing.
    #[arg(long, default_value = ".")]
    out: PathBuf,
}

/// Reads every `name=path.npy`.
pub fn read_inputs(inputs: &[(String, PathBuf)]) -> Result<Vec<(String, HostTensor)>> {
    inputs
        .iter()
        .map(|(name, path)| Ok((name.clone(), read_npy(path)?)))
        .collect()
}

/// A file name made from an output name (path separators and odd characters replaced).
fn file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Runs `rlx run`.
pub fn run(a: RunArgs) -> Result<()> {
    let model = Model::load(&a.file, a.weights.as_deref())?;
    let inputs = read_inputs(&a.inputs)?;
    let missing: Vec<&str> = model
        .graph
        .inputs()
        .iter()
        .map(|(_, n, _)| *n)
        .filter(|n| !inputs.iter().any(|(i, _)| i == n))
        .collect();
    anyhow::ensure!(
        missing.is_empty(),
        "missing --input for {} (the model's inputs: {})",
        missing.join(", "),
        crate::model::input_list(&model.graph)
    );
    let spin = crate::progress::spinner(&format!("compiling and running on {}", a.device));
    let outputs = model
        .prepare(a.device.into(), &inputs)
        .and_then(|mut runner| runner.run(&inputs));
    spin.finish_and_clear();
    let outputs = outputs?;
    std::fs::create_dir_all(&a.out).with_context(|| a.out.display().to_string())?;
    for (name, t) in model.output_names.iter().zip(&outputs) {
        let path = a.out.join(format!("{}.npy", file_name(name)));
        write_npy(&path, t)?;
        println!(
            "{name}: {:?} {:?} -> {}",
            t.dtype(),
            t.dims(),
            path.display()
        );
    }
    Ok(())
}
