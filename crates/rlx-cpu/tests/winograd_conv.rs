//! Conv weights prepared once by the CPU executable: a 3x3 stride-1 conv
//! whose weight and bias are constants (as an ONNX initializer), with ReLU
//! after it (fused into the conv), matches a float64 loop written here, on
//! two runs: at a size that runs Winograd F(2,3) on AVX2 and AVX-512 hosts
//! alike (48 -> 64 channels at 18x18, batch 2: `kernels::winograd`'s
//! `runs_winograd` test pins the dispatch), and at one that runs the NCHWc
//! kernel on AVX-512 hosts (24 -> 40: its weight packed into 16-channel
//! blocks at build; `Conv2d::nchwc_wins`), and a 1x1 conv of the NCHW
//! 1x1 kernel (its weight packed as the tiles' left operand at build,
//! `Prepared::Pointwise`; 18x18 is past the few-pixel packed GEMM).

use rlx_compile::{lower, LowerOptions};
use rlx_cpu::CpuBackend;
use rlx_driver::Backend;
use rlx_ir::op::Window;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};

const BATCH: usize = 2;
const HW: usize = 18;

fn values(n: usize, seed: u64) -> Vec<f32> {
    (0..n as u64)
        .map(|i| {
            let z = (i + 1).wrapping_mul(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
            ((z >> 33) % 2001) as f32 / 2000.0 - 0.5
        })
        .collect()
}

/// `relu(conv(x, w) + b)` with a `k` x `k` kernel, stride 1, zero
/// padding `k / 2`, in float64.
fn conv_relu_f64(
    x: &[f32],
    w: &[f32],
    b: &[f32],
    (cin, cout, k): (usize, usize, usize),
) -> Vec<f64> {
    let pad = k / 2;
    let mut y = vec![0.0; BATCH * cout * HW * HW];
    for n in 0..BATCH {
        for oc in 0..cout {
            for oy in 0..HW {
                for ox in 0..HW {
                    let mut acc = b[oc] as f64;
                    for c in 0..cin {
                        for ky in 0..k {
                            for kx in 0..k {
                                let (iy, ix) =
                                    ((oy + ky).wrapping_sub(pad), (ox + kx).wrapping_sub(pad));
                                if iy >= HW || ix >= HW {
                                    continue;
                                }
                                let xv = x[((n * cin + c) * HW + iy) * HW + ix];
                                let wv = w[((oc * cin + c) * k + ky) * k + kx];
                                acc += xv as f64 * wv as f64;
                            }
                        }
                    }
                    y[((n * cout + oc) * HW + oy) * HW + ox] = acc.max(0.0);
                }
            }
        }
    }
    y
}

#[test]
fn constant_weight_winograd_conv_matches_f64() {
    check_constant_weight_conv(48, 64, 3);
}

#[test]
fn constant_weight_nchwc_conv_matches_f64() {
    check_constant_weight_conv(24, 40, 3);
}

#[test]
fn constant_weight_pointwise_conv_matches_f64() {
    check_constant_weight_conv(24, 40, 1);
}

fn check_constant_weight_conv(cin: usize, cout: usize, k: usize) {
    let (w, b) = (values(cout * cin * k * k, 2), values(cout, 3));
    let mut g = Graph::new("winograd");
    let x = g.input("x", Shape::new(&[BATCH, cin, HW, HW], DType::F32));
    let wc = g.constant_tensor(&HostTensor::from_slice(&w, &[cout, cin, k, k]).unwrap());
    let bc = g.constant_tensor(&HostTensor::from_slice(&b, &[cout]).unwrap());
    let window = Window {
        kernel: vec![],
        stride: vec![1, 1],
        padding: vec![(k / 2, k / 2); 2],
        dilation: vec![1, 1],
    };
    let conv = g.conv(x, wc, Some(bc), window, 1);
    let y = g.relu(conv);
    g.set_outputs(vec![y]);
    let backend = CpuBackend;
    let lir = lower(&g, &|op| backend.claims(op), &LowerOptions::default()).unwrap();
    let mut exe = backend.compile(lir).unwrap();
    let xv = values(BATCH * cin * HW * HW, 1);
    let xt = HostTensor::from_slice(&xv, &[BATCH, cin, HW, HW]).unwrap();
    let want = conv_relu_f64(&xv, &w, &b, (cin, cout, k));
    for run in 0..2 {
        let got = exe.run(&[&xt]).unwrap()[0].to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want.len());
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "run {run} [{i}]: {g} vs {w}"
            );
        }
    }
}
