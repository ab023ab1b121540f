//! Writes the digits CNN's RTL, its testbench over N held-out images and
//! the target's build script into a directory, and prints the latency and
//! resource estimate.
//!
//! `cargo run -p rlx-fpga --example export_digits -- OUT_DIR [N] [generic|ecp5|ice40|xilinx7]`
use rlx_fpga::{emit_with_config, tinyconv_mnist_from_cortexm, FpgaExportConfig, HwTarget};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = args
        .get(1)
        .ok_or("usage: export_digits OUT_DIR [N] [TARGET]")?;
    let n: usize = args.get(2).map_or(Ok(64), |a| a.parse())?;
    let hw_target = match args.get(3).map(String::as_str) {
        None | Some("generic") => HwTarget::Generic,
        Some("ecp5") => HwTarget::Ecp5,
        Some("ice40") => HwTarget::Ice40,
        Some("xilinx7") => HwTarget::Xilinx7,
        Some(other) => return Err(format!("unknown target {other}").into()),
    };
    let images = rlx_quant_int8::tinyconv_test_set().images;
    let config = FpgaExportConfig {
        hw_target,
        testbench_images: images.into_iter().take(n).collect(),
        ..Default::default()
    };
    let arts = emit_with_config(&tinyconv_mnist_from_cortexm(), &config, dir)?;
    for f in &arts.files {
        println!("wrote {}", f.display());
    }
    println!(
        "{}: {} cycles per inference; {:?}",
        arts.top, arts.latency_cycles, arts.resources
    );
    Ok(())
}
