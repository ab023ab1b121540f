//! The conv roofline table (issue 28: "conv-heavy layers within 1.2x of
//! the GEMM roofline"): per dense conv of ResNet-18 (b1 / b8) and the
//! YOLO-style net (b1), the path conv takes with its weight prepared as the
//! executor prepares a constant, its time and GFLOP/s, next to this crate's
//! own f32 GEMM at the matching M = O, N = batch * oh * ow, K = C * kh * kw
//! (both operands plain, packing included). Before each timed call a 64 MB
//! buffer is read and then the input, so the weights come from memory and
//! the activations from cache as in a model run (the CNN set's weights do
//! not stay in cache between layers; the previous layer wrote `x`). Run with
//! `chrt -f 10 cargo test --release -p rlx-cpu --lib conv_roofline --
//! --ignored --nocapture`; prints, asserts nothing.

use super::conv2d::Conv2d;
use super::gemm::{GemmFloat, Strided};
use super::{conv_nchwc, conv_packed, conv_pointwise, winograd};
use rlx_ir::op::Window;

/// (model, batch, c, o, input side (h, w), k, stride); padding k / 2.
type Layer = (
    &'static str,
    usize,
    usize,
    usize,
    (usize, usize),
    usize,
    usize,
);

#[rustfmt::skip]
const LAYERS: &[Layer] = &[
    ("resnet18", 1, 3, 64, (224, 224), 7, 2), ("resnet18", 1, 64, 64, (56, 56), 3, 1),
    ("resnet18", 1, 64, 128, (56, 56), 3, 2), ("resnet18", 1, 128, 128, (28, 28), 3, 1),
    ("resnet18", 1, 128, 256, (28, 28), 3, 2), ("resnet18", 1, 256, 256, (14, 14), 3, 1),
    ("resnet18", 1, 256, 512, (14, 14), 3, 2), ("resnet18", 1, 512, 512, (7, 7), 3, 1),
    ("resnet18", 1, 64, 128, (56, 56), 1, 2), ("resnet18", 1, 128, 256, (28, 28), 1, 2),
    ("resnet18", 1, 256, 512, (14, 14), 1, 2),
    ("resnet18", 8, 3, 64, (224, 224), 7, 2), ("resnet18", 8, 64, 64, (56, 56), 3, 1),
    ("resnet18", 8, 64, 128, (56, 56), 3, 2), ("resnet18", 8, 128, 128, (28, 28), 3, 1),
    ("resnet18", 8, 128, 256, (28, 28), 3, 2), ("resnet18", 8, 256, 256, (14, 14), 3, 1),
    ("resnet18", 8, 256, 512, (14, 14), 3, 2), ("resnet18", 8, 512, 512, (7, 7), 3, 1),
    ("resnet18", 8, 64, 128, (56, 56), 1, 2), ("resnet18", 8, 128, 256, (28, 28), 1, 2),
    ("resnet18", 8, 256, 512, (14, 14), 1, 2),
    ("yolo", 1, 3, 16, (256, 256), 3, 2), ("yolo", 1, 16, 32, (128, 128), 3, 2),
    ("yolo", 1, 32, 64, (64, 64), 3, 2), ("yolo", 1, 64, 128, (32, 32), 3, 2),
    ("yolo", 1, 16, 16, (64, 64), 3, 1), ("yolo", 1, 32, 32, (32, 32), 3, 1),
    ("yolo", 1, 64, 64, (16, 16), 3, 1), ("yolo", 1, 64, 255, (32, 32), 1, 1),
    ("yolo", 1, 64, 32, (32, 32), 1, 1), ("yolo", 1, 32, 16, (64, 64), 1, 1),
    ("yolo", 1, 64, 64, (32, 32), 1, 1), ("yolo", 1, 128, 64, (16, 16), 1, 1),
    ("yolo", 1, 128, 64, (32, 32), 1, 1), ("yolo", 1, 256, 128, (16, 16), 1, 1),
    ("yolo", 1, 128, 255, (16, 16), 1, 1),
    ("mobilenetv2", 1, 3, 32, (224, 224), 3, 2), ("mobilenetv2", 8, 3, 32, (224, 224), 3, 2),
    ("yolo", 8, 3, 16, (256, 256), 3, 2), ("unet", 1, 3, 16, (128, 128), 3, 1),
];

/// The path `conv` takes for `g` (the executor's preparation, then
/// `conv_real`'s order).
fn route(g: &Conv2d) -> &'static str {
    if g.is_depthwise() {
        "depthwise"
    } else if g.runs_winograd() {
        "winograd"
    } else if g.stem_wins() {
        "stem"
    } else if g.nchwc_wins() {
        "nchwc"
    } else if g.packed_weight_wins() {
        "packed"
    } else if g.pointwise_nchw_wins() {
        "pointwise"
    } else if g.direct_wins() {
        "direct"
    } else {
        "im2col"
    }
}

/// Median seconds of 5 calls of `f`, each after reading `flush`, then `warm`.
fn cold_median(flush: &[f32], warm: &[f32], mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..5)
        .map(|_| {
            std::hint::black_box(flush.iter().sum::<f32>());
            std::hint::black_box(warm.iter().sum::<f32>());
            let start = std::time::Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[2]
}

/// The conv of one [`Layer`] (padding k / 2): geometry and window.
fn layer_geom(
    n: usize,
    c: usize,
    o: usize,
    (h, w): (usize, usize),
    k: usize,
    s: usize,
) -> (Conv2d, Window) {
    let p = k / 2;
    let out = |len: usize| (len + 2 * p - k) / s + 1;
    let g = Conv2d {
        batch: n,
        c,
        o,
        groups: 1,
        h,
        w,
        oh: out(h),
        ow: out(w),
        kh: k,
        kw: k,
        s: (s, s),
        d: (1, 1),
        p: (p, p),
    };
    let win = Window {
        kernel: vec![],
        stride: vec![s, s],
        padding: vec![(p, p); 2],
        dilation: vec![1, 1],
    };
    (g, win)
}

#[test]
#[ignore = "timing; prints, asserts nothing"]
fn conv_roofline() {
    let flush = vec![1f32; 16 << 20];
    crate::threads::with_limit(Some(1), || {
        for &(model, n, c, o, (h, w), k, s) in LAYERS {
            let (g, win) = layer_geom(n, c, o, (h, w), k, s);
            let (oh, ow) = (g.oh, g.ow);
            let dims = (&[n, c, h, w][..], &[o, c, k, k][..], &[n, o, oh, ow][..]);
            let x: Vec<f32> = (0..n * c * h * w).map(|i| (i % 13) as f32 / 13.0).collect();
            let wt: Vec<f32> = (0..o * c * k * k).map(|i| (i % 7) as f32 / 7.0).collect();
            let mut y = vec![0f32; n * o * oh * ow];
            let name = route(&g);
            let t = match name {
                "winograd" => {
                    let u = winograd::prepared_weights(&win, 1, dims, &wt).unwrap();
                    cold_median(&flush, &x, || {
                        g.winograd_transformed(&x, &u, &mut y, None).unwrap()
                    })
                }
                "nchwc" => {
                    let wp = conv_nchwc::prepared_weights(&win, 1, dims, &wt).unwrap();
                    cold_median(&flush, &x, || {
                        g.nchwc_packed(&x, wp.f32s(), None, &mut y, None).unwrap()
                    })
                }
                "packed" => {
                    let d = [dims.0, dims.1, dims.2];
                    let (nr, wp) = conv_packed::packed_copy(&win, 1, d, &wt).unwrap();
                    cold_median(&flush, &x, || {
                        g.packed_gemm(&x, &wp, nr, &mut y, None).unwrap()
                    })
                }
                "pointwise" => {
                    let wp = conv_pointwise::prepared_weights(&win, 1, dims, &wt).unwrap();
                    cold_median(&flush, &x, || {
                        g.pointwise_packed(&x, &wp, None, &mut y, None).unwrap()
                    })
                }
                "stem" => cold_median(&flush, &x, || g.stem(&x, &wt, None, &mut y, None).unwrap()),
                "direct" => cold_median(&flush, &x, || g.direct(&x, &wt, &mut y, None).unwrap()),
                _ => cold_median(&flush, &x, || g.im2col_gemm(&x, &wt, &mut y, None).unwrap()),
            };
            let (m, nn, kk) = (o, n * oh * ow, c * k * k);
            let b: Vec<f32> = (0..kk * nn).map(|i| (i % 11) as f32 / 11.0).collect();
            let mut cm = vec![0f32; m * nn];
            let t_gemm = cold_median(&flush, &b, || {
                let a = Strided::row_major(&wt, 0, m, kk);
                f32::gemm(a, Strided::row_major(&b, 0, kk, nn), &mut cm, 1)
            });
            let flops = 2.0 * (m * nn * kk) as f64;
            println!(
                "| {model} b{n} | {c} -> {o}, {k}x{k} s{s}, {h}x{w} -> {oh}x{ow} | {m} x {nn} x {kk} | {name} | {:.3} | {:.1} | {:.1} | {:.2} |",
                t * 1e3,
                flops / t / 1e9,
                flops / t_gemm / 1e9,
                t / t_gemm,
            );
        }
    });
}

/// Warm tile efficiency: the NCHWc kernel (weight packed once) and the
/// packed-weight GEMM on convs of 64 output channels (one 4-block group,
/// so weight and image stay in L2 between calls), median of 21 warm calls,
/// GFLOP/s and the share of one core's FMA peak `RLX_FMA_PEAK` (GFLOP/s;
/// 206 on the 2-vCPU AVX-512 Xeon of 2026-12-06, from a register-only loop
/// of 24 independent 512-bit FMA chains). Run with `chrt -f 10 cargo test
/// --release -p rlx-cpu --lib conv_tile_warm -- --ignored --nocapture`.
#[test]
#[ignore = "timing; prints, asserts nothing"]
fn conv_tile_warm() {
    let peak: f64 = std::env::var("RLX_FMA_PEAK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(206.0);
    #[rustfmt::skip]
    let shapes = [
        (1, 512, 64, (7, 7), 3, 1), (8, 512, 64, (7, 7), 3, 1), (1, 256, 64, (14, 14), 3, 2),
        (1, 256, 64, (14, 14), 3, 1), (1, 128, 64, (28, 28), 3, 2), (1, 128, 64, (28, 28), 3, 1),
        (1, 64, 64, (56, 56), 3, 2), (1, 64, 64, (56, 56), 3, 1),
    ];
    crate::threads::with_limit(Some(1), || {
        for (n, c, o, hw, k, s) in shapes {
            let (g, win) = layer_geom(n, c, o, hw, k, s);
            let dims = [&[n, c, hw.0, hw.1][..], &[o, c, k, k], &[n, o, g.oh, g.ow]];
            let x: Vec<f32> = (0..n * c * hw.0 * hw.1)
                .map(|i| (i % 13) as f32 / 13.0)
                .collect();
            let wt: Vec<f32> = (0..o * c * k * k).map(|i| (i % 7) as f32 / 7.0).collect();
            let mut y = vec![0f32; n * o * g.oh * g.ow];
            let flops = 2.0 * (n * c * o * k * k * g.oh * g.ow) as f64;
            let warm = |f: &mut dyn FnMut()| {
                f();
                let mut t: Vec<f64> = (0..21)
                    .map(|_| {
                        let start = std::time::Instant::now();
                        f();
                        start.elapsed().as_secs_f64()
                    })
                    .collect();
                t.sort_by(f64::total_cmp);
                flops / t[10] / 1e9
            };
            let mut wp = Vec::new();
            conv_nchwc::pack(&wt, (o, c, k, k), &mut wp);
            let nchwc = warm(&mut || g.nchwc_packed(&x, &wp, None, &mut y, None).unwrap());
            let (nr, pw) = conv_packed::packed_copy(&win, 1, dims, &wt).unwrap();
            let packed = warm(&mut || g.packed_gemm(&x, &pw, nr, &mut y, None).unwrap());
            println!(
                "b{n} {c} -> {o} {}x{} k{k} s{s}: nchwc {nchwc:6.1} GFLOP/s ({:.0} % of peak), packed {packed:6.1} ({:.0} %)",
                hw.0,
                hw.1,
                100.0 * nchwc / peak,
                100.0 * packed / peak,
            );
        }
    });
}

/// ResNet-18's 3x3 convs (and CRNN's, on maps of 2-16 rows) on the
/// NCHWc kernel as the layout plan runs them inside a stage (image and output blocked, weight packed once,
/// from memory; no epilogue), 1 and 2 threads: ms per call (median of 5
/// cold calls) and GFLOP/s, next to ONNX Runtime's per-node time in the
/// model (`tools/ort_node_profile.py`). Run with `chrt -f 10 cargo test
/// --release -p rlx-cpu --lib nchwc_blocked_layers -- --ignored
/// --nocapture`.
#[test]
#[ignore = "timing; prints, asserts nothing"]
fn nchwc_blocked_layers() {
    let flush = vec![1f32; 16 << 20];
    #[rustfmt::skip]
    let shapes = [
        (1, 64, 64, (56, 56), 1), (1, 64, 128, (56, 56), 2), (1, 128, 128, (28, 28), 1),
        (1, 128, 256, (28, 28), 2), (1, 256, 256, (14, 14), 1), (1, 256, 512, (14, 14), 2),
        (1, 512, 512, (7, 7), 1), (8, 64, 64, (56, 56), 1), (8, 128, 128, (28, 28), 1),
        (8, 256, 256, (14, 14), 1), (8, 512, 512, (7, 7), 1),
        // CRNN's (Winograd takes its 8x32 and 16x64 ones), 2-row maps
        (1, 64, 128, (16, 64), 1), (1, 128, 256, (8, 32), 1), (1, 256, 256, (8, 32), 1),
        (1, 256, 256, (4, 32), 1), (8, 256, 256, (4, 32), 1), (1, 256, 256, (2, 30), 1),
    ];
    for threads in [1, 2] {
        crate::threads::with_limit(Some(threads), || {
            for (n, c, o, hw, s) in shapes {
                let (g, _) = layer_geom(n, c, o, hw, 3, s);
                let x: Vec<f32> = (0..n * c * hw.0 * hw.1)
                    .map(|i| (i % 13) as f32 / 13.0)
                    .collect();
                let wt: Vec<f32> = (0..o * c * 9).map(|i| (i % 7) as f32 / 7.0).collect();
                let mut y = vec![0f32; n * o * g.oh * g.ow];
                let mut wp = Vec::new();
                conv_nchwc::pack(&wt, (o, c, 3, 3), &mut wp);
                let io = conv_nchwc::BlockedIo {
                    input: true,
                    output: true,
                };
                let t = cold_median(&flush, &x, || {
                    g.nchwc_packed_io(&x, &wp, None, &mut y, None, io).unwrap()
                });
                let flops = 2.0 * (n * c * o * 9 * g.oh * g.ow) as f64;
                println!(
                    "t{threads} b{n} {c} -> {o} {}x{} s{s}: {:.3} ms, {:.1} GFLOP/s",
                    hw.0,
                    hw.1,
                    t * 1e3,
                    flops / t / 1e9
                );
            }
        });
    }
}
