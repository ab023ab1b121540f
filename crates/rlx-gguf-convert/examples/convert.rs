//! Converts a `.safetensors` (or `.onnx`) file to GGUF and prints the report.
//!
//! ```text
//! cargo run -p rlx-gguf-convert --example convert -- \
//!     model.safetensors model.gguf --type Q4_K \
//!     --override token_embd.weight=Q8_0 --override '*.attn_v.weight=Q6_K' \
//!     [--meta general.name=my-model] [--alignment 64] [--no-keep-1d-f32]
//! ```
use rlx_gguf_convert::{parse_type, ConvertError, Converter, GgmlType};
use std::process::ExitCode;

const USAGE: &str = "usage: convert INPUT(.safetensors|.onnx) OUTPUT.gguf [--type TYPE] \
[--override NAME=TYPE]... [--meta KEY=VALUE]... [--alignment N] [--no-keep-1d-f32]";

fn run(args: &[String]) -> Result<(), String> {
    let mut positional = Vec::new();
    let mut ty = GgmlType::Q8_0;
    let mut overrides = Vec::new();
    let mut meta = Vec::new();
    let mut alignment = None;
    let mut keep_1d = true;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| it.next().cloned().ok_or(format!("{flag} needs a value"));
        match a.as_str() {
            "--type" => ty = parse_type(&value("--type")?).map_err(|e| e.to_string())?,
            "--override" => overrides.push(value("--override")?),
            "--meta" => meta.push(value("--meta")?),
            "--alignment" => {
                let v = value("--alignment")?;
                alignment = Some(
                    v.parse::<u32>()
                        .map_err(|e| format!("--alignment {v}: {e}"))?,
                );
            }
            "--no-keep-1d-f32" => keep_1d = false,
            "-h" | "--help" => return Err(USAGE.into()),
            flag if flag.starts_with("--") => return Err(format!("unknown flag {flag}\n{USAGE}")),
            _ => positional.push(a.clone()),
        }
    }
    let [input, output] = positional.as_slice() else {
        return Err(USAGE.into());
    };
    let mut conv = Converter::new(ty).keep_1d_f32(keep_1d);
    for spec in &overrides {
        conv = conv.override_spec(spec).map_err(|e| e.to_string())?;
    }
    for kv in &meta {
        let (k, v) = kv
            .split_once('=')
            .ok_or(format!("--meta {kv}: expected KEY=VALUE"))?;
        conv = conv.metadata(k, v);
    }
    if let Some(a) = alignment {
        conv = conv.alignment(a);
    }
    let report = conv
        .convert_file(input, output)
        .map_err(|e: ConvertError| e.to_string())?;
    print!("{report}");
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("{msg}");
            ExitCode::FAILURE
        }
    }
}
