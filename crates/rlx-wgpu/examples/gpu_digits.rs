//! Trains the digits MLP (SGD; forward, backward and update one graph,
//! params updated on the device) on the chosen device and prints the test
//! accuracy.
//!
//! ```text
//! cargo run --release -p rlx-wgpu --example gpu_digits -- --device gpu
//! ```

#[path = "common/digits.rs"]
mod digits;

use rlx_driver::{parse_device, Backend, Device};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let device = match args.iter().position(|a| a == "--device") {
        Some(i) => parse_device(args.get(i + 1).ok_or("--device needs a value")?)?,
        None => Device::Gpu,
    };
    let backend: Box<dyn Backend> = match device {
        Device::Cpu => Box::new(rlx_cpu::CpuBackend),
        Device::Gpu => {
            let ctx = rlx_wgpu::context()?;
            println!("adapter: {}", ctx.describe());
            Box::new(rlx_wgpu::WgpuBackend)
        }
        other => return Err(format!("this example runs on cpu or gpu, not {other}").into()),
    };
    let data = digits::digits();
    let start = Instant::now();
    let (acc, _) = digits::train(backend.as_ref(), &data);
    println!(
        "digits on {device}: test accuracy {:.2}% after training ({:.1}s)",
        acc * 100.0,
        start.elapsed().as_secs_f32()
    );
    Ok(())
}
