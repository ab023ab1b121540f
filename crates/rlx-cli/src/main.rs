//! `rlx`: inspect, run, benchmark, convert and pack models; generate text;
//! train the digits classifier. `rlx --help` lists the commands.

mod commands;
mod isa;
mod llama;
mod model;
mod plot;
mod progress;

use clap::error::ErrorKind;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// RLX: an ML compiler and runtime, from the command line.
#[derive(Parser)]
#[command(name = "rlx", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Version, enabled features, CPU instruction sets and devices.
    Info(commands::info::InfoArgs),
    /// Inputs, outputs, params, op histogram and fusion report of a model file.
    Inspect(commands::inspect::InspectArgs),
    /// Run a model on .npy inputs and write its outputs as .npy files.
    Run(commands::run::RunArgs),
    /// Latency percentiles of a model per device.
    Bench(commands::bench::BenchArgs),
    /// Convert safetensors / ONNX weights to GGUF (optionally quantized).
    Convert(commands::convert::ConvertArgs),
    /// Write a .rlxp package from ONNX, a text-IR graph + weights, a
    /// safetensors model directory or a GGUF file.
    Pack(commands::pack::PackArgs),
    /// Generate text with a llama-family GGUF model, streaming tokens.
    Generate(commands::generate::GenerateArgs),
    /// Train a model (the README's main job).
    Train(commands::train::TrainArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let result = match cli.command {
        Command::Info(a) => commands::info::run(a),
        Command::Inspect(a) => commands::inspect::run(a),
        Command::Run(a) => commands::run::run(a),
        Command::Bench(a) => commands::bench::run(a),
        Command::Convert(a) => commands::convert::run(a),
        Command::Pack(a) => commands::pack::run(a),
        Command::Generate(a) => commands::generate::run(a),
        Command::Train(a) => commands::train::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: the error and its causes.
            let msg = format!("{e:#}").replace('\n', " ");
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// `--help` / `--version` print and succeed; a bad argument prints one
/// line (clap's message and where to look) and exits 2, as clap does.
fn usage_error(e: clap::Error) -> ExitCode {
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    // clap's message is the text before its usage block, possibly over
    // several lines (a list of missing arguments): join it into one.
    let text = e.render().to_string();
    let message = text.split("\nUsage:").next().unwrap_or_default();
    let message = message
        .split("\nFor more information")
        .next()
        .unwrap_or_default();
    let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    eprintln!("error: {message} (see `rlx --help`)");
    ExitCode::from(2)
}
