//! The digits MLP trained on the wgpu device: forward, backward (reverse
//! mode autodiff) and the SGD update compiled as one graph, the params
//! updated on the device each step (`run_updating`), against the same
//! training on the CPU backend. The GPU run must reach the CPU run's test
//! accuracy (within one image in a hundred) and end with the same weights.

mod common;
#[path = "../examples/common/digits.rs"]
mod digits;

use common::gpu_or_skip;
use digits::{digits, train, PARAMS};

#[test]
fn digits_mlp_trains_on_the_gpu_like_on_the_cpu() {
    if !gpu_or_skip("digits_mlp_trains_on_the_gpu_like_on_the_cpu") {
        return;
    }
    let data = digits();
    let (cpu_acc, cpu_w) = train(&rlx_cpu::CpuBackend, &data);
    let (gpu_acc, gpu_w) = train(&rlx_wgpu::WgpuBackend, &data);
    println!("digits test accuracy: cpu {cpu_acc:.4}, gpu {gpu_acc:.4}");
    assert!(
        cpu_acc >= 0.9,
        "the CPU run itself did not learn: {cpu_acc}"
    );
    assert!(
        gpu_acc >= cpu_acc - 0.01,
        "gpu accuracy {gpu_acc} below the cpu's {cpu_acc}"
    );
    for ((name, c), g) in PARAMS.iter().zip(&cpu_w).zip(&gpu_w) {
        let (c, g) = (c.to_vec::<f32>().unwrap(), g.to_vec::<f32>().unwrap());
        let worst = c
            .iter()
            .zip(&g)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(
            worst < 1e-3,
            "{name}: weights after training differ by {worst}"
        );
    }
}
