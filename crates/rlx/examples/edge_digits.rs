//! The digits CNN from training to the edge, in one run: train it in RLX
//! (float, CPU), quantize it to INT8 (`rlx-quant-int8`), run the integer
//! reference on the host, emit the Cortex-M firmware weights and the RTL
//! (`rlx::fpga` through `ExportSession`), run the firmware on QEMU's
//! `mps2-an386` (`tools/test_cortexm_qemu.sh`) and the RTL in iverilog when
//! those tools are installed, and print one table.
//!
//! `cargo run -p rlx --example edge_digits --features cortexm,optim,fpga`
//!
//! The firmware embeds the committed model; the QEMU column is filled when
//! the freshly trained model is that model (training is deterministic).
#[allow(dead_code)]
#[path = "cortexm_digits.rs"]
mod cortexm_digits;

use cortexm_digits::digits::{load_digits, Rng};
use cortexm_digits::{accuracy, argmax, float_predictions, predict_graph, train};
use rlx::fpga::sim::{simulate_iverilog, tool_available};
use rlx::prelude::*;
use rlx_quant_int8::{emit_model_weights, float_model_from_graph, quantize, QLayer};
use std::path::Path;
use std::process::Command;

/// Held-out images the firmware and the RTL testbench run.
const EDGE_IMAGES: usize = 64;

/// What the QEMU script reported.
struct Firmware {
    predictions: Vec<usize>,
    ticks_per_inference: u64,
    sizes: String,
}

/// `tools/test_cortexm_qemu.sh`: builds the firmware, runs it in QEMU and
/// checks its predictions against the host int8 model.
fn run_qemu(root: &Path) -> rlx::Result<Option<Firmware>> {
    if !tool_available("qemu-system-arm") {
        println!("QEMU: qemu-system-arm not installed; column left empty");
        return Ok(None);
    }
    let out = Command::new("tools/test_cortexm_qemu.sh")
        .current_dir(root)
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    anyhow::ensure!(
        out.status.success(),
        "tools/test_cortexm_qemu.sh failed:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if text.contains("SKIP:") {
        println!(
            "QEMU: {}",
            text.lines().find(|l| l.contains("SKIP")).unwrap_or("")
        );
        return Ok(None);
    }
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    let reports = root.join(target).join("cortexm-qemu");
    let preds = std::fs::read_to_string(reports.join("firmware.txt"))?;
    let predictions = preds
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.parse().ok())
        .collect();
    let qemu = std::fs::read_to_string(reports.join("qemu.txt"))?;
    let ticks: u64 = qemu
        .lines()
        .find_map(|l| {
            l.strip_prefix("systick ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0);
    let sizes = text
        .lines()
        .find(|l| l.starts_with("flash "))
        .unwrap_or("sizes unknown")
        .split(" (+")
        .next()
        .unwrap_or("")
        .to_string();
    Ok(Some(Firmware {
        predictions,
        ticks_per_inference: ticks / EDGE_IMAGES as u64,
        sizes,
    }))
}

pub fn main() -> rlx::Result<()> {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let out_dir = std::env::temp_dir().join("rlx-edge-digits");
    let mut data = load_digits()?;
    let mut rng = Rng(2026);
    rng.shuffle(&mut data);
    let (train_set, test) = data.split_at(data.len() * 4 / 5);
    println!("training the digits CNN on {} images ...", train_set.len());
    let params = train(train_set, &mut rng)?;
    let float_pred = float_predictions(&params, test)?;

    let float_model = float_model_from_graph(&predict_graph(1), &params)?;
    let calibration: Vec<Vec<f32>> = train_set.iter().take(256).map(|(p, _)| p.clone()).collect();
    let model = quantize(&float_model, &calibration)?;
    let images: Vec<Vec<i8>> = test.iter().map(|(p, _)| model.quantize_input(p)).collect();
    let host: Vec<Vec<i8>> = images
        .iter()
        .map(|im| model.run_reference(im))
        .collect::<Result<_, _>>()?;
    let int8_pred: Vec<usize> = host.iter().map(|v| argmax(v)).collect();
    let edge = &test[..EDGE_IMAGES];

    // Firmware weights and RTL.
    std::fs::create_dir_all(&out_dir)?;
    let weights = out_dir.join("model_weights.rs");
    std::fs::write(&weights, emit_model_weights(&model, &images[..EDGE_IMAGES]))?;
    let arts = ExportSession::fpga(out_dir.join("rtl"))
        .hw_target(HwTarget::Generic)
        .testbench_images(images[..EDGE_IMAGES].to_vec())
        .export_model(&model)?;
    println!(
        "wrote {} and {} files of RTL under {}",
        weights.display(),
        arts.files.len(),
        arts.dir.display()
    );

    let rtl_pred = if tool_available("iverilog") {
        let sim = simulate_iverilog(&arts)?;
        for (i, r) in sim.iter().enumerate() {
            anyhow::ensure!(
                r.logits == host[i],
                "RTL logits differ from host int8 on image {i}"
            );
            anyhow::ensure!(
                r.cycles == arts.latency_cycles,
                "RTL latency differs on image {i}"
            );
        }
        Some(sim.iter().map(|r| r.class).collect::<Vec<_>>())
    } else {
        println!("RTL: iverilog not installed; column left empty");
        None
    };

    let firmware = if model == rlx::fpga::tinyconv_mnist_from_cortexm() {
        run_qemu(root)?
    } else {
        println!("QEMU: the trained model differs from the committed firmware model; run `cortexm_digits -- --write` first");
        None
    };
    if let Some(fw) = &firmware {
        anyhow::ensure!(
            fw.predictions == int8_pred[..EDGE_IMAGES],
            "firmware differs from host int8"
        );
    }

    let pct = |p: &[usize]| format!("{:.2}%", accuracy(p, &edge[..p.len()]));
    let na = || "n/a (tool missing)".to_string();
    let r = arts.resources;
    println!();
    println!(
        "| run (first {EDGE_IMAGES} held-out images) | accuracy | held-out ({}) | cycles / inference | size |",
        test.len()
    );
    println!("|---|---|---|---|---|");
    println!(
        "| float32, RLX CPU | {} | {:.2}% | - | - |",
        pct(&float_pred[..EDGE_IMAGES]),
        accuracy(&float_pred, test)
    );
    let weight_bytes: usize = model
        .layers
        .iter()
        .map(|l| match l {
            QLayer::Conv2d { params, .. } | QLayer::Dense { params, .. } => {
                params.weights.len() + 4 * params.bias.len()
            }
            _ => 0,
        })
        .sum();
    println!(
        "| int8 integer reference, host | {} | {:.2}% | - | {weight_bytes} B int8 weights + int32 biases |",
        pct(&int8_pred[..EDGE_IMAGES]),
        accuracy(&int8_pred, test),
    );
    match &firmware {
        Some(fw) => println!(
            "| Cortex-M4, QEMU mps2-an386 | {} | - | {} (SysTick, -icount) | {} |",
            pct(&fw.predictions),
            fw.ticks_per_inference,
            fw.sizes
        ),
        None => println!("| Cortex-M4, QEMU mps2-an386 | {} | - | - | - |", na()),
    }
    match &rtl_pred {
        Some(p) => println!(
            "| RTL, iverilog | {} | - | {} (1 MAC / cycle) | {} DSP, {} memory bits, ~{} LUT (estimate) |",
            pct(p),
            arts.latency_cycles,
            r.dsps,
            r.bram_bits,
            r.luts
        ),
        None => println!("| RTL, iverilog | {} | - | {} (computed) | - |", na(), arts.latency_cycles),
    }
    Ok(())
}
