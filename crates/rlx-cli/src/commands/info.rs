//! `rlx info`: version, features, CPU ISA, devices and the configuration.

use crate::isa::cpu_isa;
use anyhow::Result;
use clap::Args;
use rlx::runtime::devices::unavailable_reason;
use rlx::{available_devices, device_label, is_available, CompileOptions, Device, EffectiveConfig};
use serde_json::json;

/// The `rlx` crate features this binary is built with (its Cargo.toml).
pub const FEATURES: &[&str] = &[
    "cpu",
    "onnx",
    "gguf",
    "gguf-convert",
    "models",
    "llama",
    "pkg",
    "optim",
];

/// `rlx info` arguments.
#[derive(Args)]
pub struct InfoArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// One device kind: available, or why not.
fn device_rows() -> Vec<(Device, bool, String)> {
    Device::KINDS
        .iter()
        .map(|&d| {
            if is_available(d) {
                (d, true, device_label(d))
            } else {
                (d, false, unavailable_reason(d))
            }
        })
        .collect()
}

/// Runs `rlx info`.
pub fn run(a: InfoArgs) -> Result<()> {
    let cfg = EffectiveConfig::of(&CompileOptions::default())?;
    let isa = cpu_isa();
    let devices = device_rows();
    let fastest = available_devices().first().map(|d| d.to_string());
    if a.json {
        let v = json!({
            "version": env!("CARGO_PKG_VERSION"),
            "features": FEATURES,
            "cpu": {
                "arch": std::env::consts::ARCH,
                "isa": isa,
                "threads": cfg.threads,
            },
            "devices": devices.iter().map(|(d, ok, why)| {
                let mut row = json!({"device": d.to_string(), "available": ok});
                row[if *ok { "label" } else { "reason" }] = json!(why);
                row
            }).collect::<Vec<_>>(),
            "fastest": fastest,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!("rlx {}", env!("CARGO_PKG_VERSION"));
    println!("features: {}", FEATURES.join(", "));
    println!(
        "cpu: {} ({}), {} threads",
        std::env::consts::ARCH,
        if isa.is_empty() {
            "no SIMD extensions detected".to_string()
        } else {
            isa.join(" ")
        },
        cfg.threads
    );
    println!("devices:");
    for (d, ok, why) in &devices {
        if *ok {
            println!("  {:<8} available ({why})", d.to_string());
        } else {
            println!("  {:<8} unavailable: {why}", d.to_string());
        }
    }
    if let Some(f) = fastest {
        println!("fastest: {f}");
    }
    println!("configuration:");
    for line in cfg.to_string().lines() {
        println!("  {line}");
    }
    Ok(())
}
