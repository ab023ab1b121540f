//! Conv weights packed once by the CPU executable (`rlx_cpu` packs an f32
//! conv weight param into the packed-panel GEMM's layout on the first run
//! after it is set; a constant when the executable is built): a 3x3 conv
//! at 7x7 and a 1x1 conv with bias + ReLU, batch 2, match a float64 loop
//! written here, and setting the weight again re-packs (the numbers follow
//! the new weight).

use rlx_compile::{lower, LowerOptions};
use rlx_cpu::CpuBackend;
use rlx_driver::{Backend, Executable};
use rlx_ir::op::Window;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};

const BATCH: usize = 2;
// Fewer than 16 input channels: on AVX-512 the NCHWc kernel's flattened
// tile takes 3x3 convs of >= 16 at 7x7 (`Conv2d::flat`).
const C: usize = 12;
// 7x7 outputs: the executable picks the packed path (at most 64 pixels).
const HW: usize = 7;
// Not a multiple of any panel width: the last panel is narrow.
const O: usize = 20;

fn values(n: usize, seed: u64) -> Vec<f32> {
    (0..n as u64)
        .map(|i| {
            let z = (i + 1).wrapping_mul(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
            ((z >> 33) % 2001) as f32 / 2000.0 - 0.5
        })
        .collect()
}

/// Cross-correlation of `x` `[BATCH, C, HW, HW]` with `w` `[o, C, k, k]`,
/// stride 1, zero padding `k / 2`, plus `b`, in float64.
fn conv_f64(x: &[f32], w: &[f32], b: &[f32], o: usize, k: usize) -> Vec<f64> {
    let pad = (k / 2) as isize;
    let mut y = vec![0.0; BATCH * o * HW * HW];
    for n in 0..BATCH {
        for oc in 0..o {
            for oy in 0..HW {
                for ox in 0..HW {
                    let mut acc = b[oc] as f64;
                    for c in 0..C {
                        for ky in 0..k {
                            for kx in 0..k {
                                let iy = oy as isize + ky as isize - pad;
                                let ix = ox as isize + kx as isize - pad;
                                if !(0..HW as isize).contains(&iy)
                                    || !(0..HW as isize).contains(&ix)
                                {
                                    continue;
                                }
                                let xv = x[((n * C + c) * HW + iy as usize) * HW + ix as usize];
                                let wv = w[((oc * C + c) * k + ky) * k + kx];
                                acc += xv as f64 * wv as f64;
                            }
                        }
                    }
                    y[((n * o + oc) * HW + oy) * HW + ox] = acc;
                }
            }
        }
    }
    y
}

fn assert_close(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "{what} [{i}]: {g} vs {w}"
        );
    }
}

fn window(pad: usize) -> Window {
    Window {
        kernel: vec![],
        stride: vec![1, 1],
        padding: vec![(pad, pad); 2],
        dilation: vec![1, 1],
    }
}

/// `conv3x3(x, w3) + b3` and `relu(conv1x1(x, w1) + b1)`, weights and
/// biases params `0..4` in that order.
fn convs() -> Box<dyn Executable> {
    let f32s = |d: &[usize]| Shape::new(d, DType::F32);
    let mut g = Graph::new("convs");
    let x = g.input("x", f32s(&[BATCH, C, HW, HW]));
    let w3 = g.param("w3", f32s(&[O, C, 3, 3]));
    let b3 = g.param("b3", f32s(&[O]));
    let w1 = g.param("w1", f32s(&[O, C, 1, 1]));
    let b1 = g.param("b1", f32s(&[O]));
    let y3 = g.conv(x, w3, Some(b3), window(1), 1);
    let p = g.conv(x, w1, Some(b1), window(0), 1);
    let y1 = g.relu(p);
    g.set_outputs(vec![y3, y1]);
    let backend = CpuBackend;
    let lir = lower(&g, &|op| backend.claims(op), &LowerOptions::default()).unwrap();
    backend.compile(lir).unwrap()
}

fn tensor(v: &[f32], dims: &[usize]) -> HostTensor {
    HostTensor::from_slice(v, dims).unwrap()
}

/// Sets the four params, runs twice (the first run packs, the second reads
/// what it packed) and checks both outputs each time.
fn set_run_check(exe: &mut dyn Executable, x: &[f32], w3: &[f32], w1: &[f32], what: &str) {
    let (b3, b1) = (values(O, 13), values(O, 14));
    exe.set_param(0, &tensor(w3, &[O, C, 3, 3])).unwrap();
    exe.set_param(1, &tensor(&b3, &[O])).unwrap();
    exe.set_param(2, &tensor(w1, &[O, C, 1, 1])).unwrap();
    exe.set_param(3, &tensor(&b1, &[O])).unwrap();
    let want3 = conv_f64(x, w3, &b3, O, 3);
    let want1: Vec<f64> = conv_f64(x, w1, &b1, O, 1)
        .iter()
        .map(|v| v.max(0.0))
        .collect();
    let xt = tensor(x, &[BATCH, C, HW, HW]);
    for run in 0..2 {
        let out = exe.run(&[&xt]).unwrap();
        let got3 = out[0].to_vec::<f32>().unwrap();
        let got1 = out[1].to_vec::<f32>().unwrap();
        assert_close(&got3, &want3, &format!("{what}: 3x3 conv, run {run}"));
        assert_close(&got1, &want1, &format!("{what}: relu(1x1 conv), run {run}"));
    }
}

#[test]
fn packed_conv_weights_match_f64_and_follow_set_param() {
    let mut exe = convs();
    let x = values(BATCH * C * HW * HW, 1);
    let (w3, w1) = (values(O * C * 9, 2), values(O * C, 3));
    set_run_check(exe.as_mut(), &x, &w3, &w1, "first weights");
    // New weights: re-packed before the next run, not the old panels.
    let (w3b, w1b) = (values(O * C * 9, 4), values(O * C, 5));
    set_run_check(exe.as_mut(), &x, &w3b, &w1b, "after set_param");
}
