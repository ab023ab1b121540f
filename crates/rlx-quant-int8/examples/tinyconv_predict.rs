//! Prints the host int8 predictions of the committed digits CNN
//! (`tinyconv_mnist_from_cortexm`) for the first N held-out images, one
//! `pred <image> <class>` line each: the lines the firmware prints in QEMU.
//!
//! `cargo run -p rlx-quant-int8 --example tinyconv_predict -- 64`
//!
//! `-- 64 --write-firmware PATH` also writes the firmware's
//! `model_weights.rs` (the model and those N images) to PATH.
use rlx_quant_int8::{emit_model_weights, tinyconv_mnist_from_cortexm, tinyconv_test_set};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map_or(Ok(64), |a| a.parse())?;
    let model = tinyconv_mnist_from_cortexm();
    let set = tinyconv_test_set();
    if n > set.images.len() {
        return Err(format!("only {} test images are stored", set.images.len()).into());
    }
    if let Some(i) = args.iter().position(|a| a == "--write-firmware") {
        let path = args.get(i + 1).ok_or("--write-firmware needs a path")?;
        std::fs::write(path, emit_model_weights(&model, &set.images[..n]))?;
    }
    for (i, image) in set.images.iter().take(n).enumerate() {
        let out = model.run_reference(image)?;
        let mut best = 0;
        for (c, &v) in out.iter().enumerate() {
            if v > out[best] {
                best = c;
            }
        }
        println!("pred {i} {best}");
    }
    Ok(())
}
