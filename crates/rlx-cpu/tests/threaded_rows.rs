//! Kernels that split rows or element ranges over the thread team (fused
//! elementwise regions with broadcast inputs, matmul epilogues, tall matmuls
//! with their epilogue per block of rows, add + layer norm, in place too) on sizes above their thread grain and with odd
//! lengths, at one, two and three threads, against naive f64 loops here.

use rlx_cpu::kernels::fused::{add_norm, add_norm_in_place, fused_matmul};
use rlx_cpu::kernels::region::{epilogue, region};
use rlx_cpu::kernels::{f32_bytes, f32_bytes_mut, View, ViewMut};
use rlx_ir::op::{BinaryOp, ChainOperand, ChainStep, UnaryOp};
use rlx_ir::DType;

fn data(len: usize, seed: u64) -> Vec<f32> {
    (0..len as u64)
        .map(|i| {
            let z = (i + 1).wrapping_mul(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
            ((z >> 33) % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

fn view<'a>(dims: &'a [usize], v: &'a [f32]) -> View<'a> {
    View {
        dims,
        dtype: DType::F32,
        bytes: f32_bytes(v),
    }
}

fn view_mut<'a>(dims: &'a [usize], v: &'a mut [f32]) -> ViewMut<'a> {
    ViewMut {
        dims,
        dtype: DType::F32,
        bytes: f32_bytes_mut(v),
    }
}

fn close(got: &[f32], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: element {i}: {g} vs {w}"
        );
    }
}

fn at_threads(f: impl Fn(&str)) {
    for t in ["1", "2", "3"] {
        rlx_ir::env::set("RLX_NUM_THREADS", t);
        f(t);
    }
    rlx_ir::env::clear_override("RLX_NUM_THREADS");
}

/// Exact GELU in f64 through libm's erfc (musl's), which keeps its
/// relative accuracy in the negative tail.
fn erf_gelu(x: f64) -> f64 {
    0.5 * x * libm::erfc(-x / std::f64::consts::SQRT_2)
}

#[test]
fn region_with_gathered_and_repeated_inputs() {
    // [7, 91, 67] = 42679 elements: above the split grain, not a multiple
    // of the tile, a column input [7, 91, 1] gathered element by element.
    let dims = [7usize, 91, 67];
    let n: usize = dims.iter().product();
    let x = data(n, 3);
    let col = data(7 * 91, 5);
    let col_dims = [7usize, 91, 1];
    let steps = [
        ChainStep::Binary(
            BinaryOp::Mul,
            ChainOperand::Input(0),
            ChainOperand::Input(1),
        ),
        ChainStep::Unary(UnaryOp::Tanh, ChainOperand::Step(0)),
    ];
    let want: Vec<f64> = (0..n)
        .map(|i| (x[i] as f64 * col[i / 67] as f64).tanh())
        .collect();
    at_threads(|t| {
        let mut out = vec![0f32; n];
        region(
            &steps,
            &[view(&dims, &x), view(&col_dims, &col)],
            &mut view_mut(&dims, &mut out),
        )
        .unwrap();
        close(&out, &want, 1e-5, &format!("region, {t} threads"));
    });
}

#[test]
fn gelu_bias_epilogue_over_rows() {
    let (m, n) = (129usize, 1537usize);
    let acc = data(m * n, 7);
    let bias = data(n, 11);
    let dims = [m, n];
    let bias_dims = [n];
    let steps = [
        ChainStep::Binary(
            BinaryOp::Add,
            ChainOperand::Input(0),
            ChainOperand::Input(1),
        ),
        ChainStep::Unary(UnaryOp::Gelu, ChainOperand::Step(0)),
    ];
    let want: Vec<f64> = (0..m * n)
        .map(|i| erf_gelu(acc[i] as f64 + bias[i % n] as f64))
        .collect();
    at_threads(|t| {
        let mut out = acc.clone();
        epilogue(
            &steps,
            &[view(&bias_dims, &bias)],
            &mut view_mut(&dims, &mut out),
        )
        .unwrap();
        close(&out, &want, 1e-5, &format!("gelu epilogue, {t} threads"));
    });
}

fn naive_add_layer_norm(a: &[f32], b: &[f32], g: &[f32], be: &[f32], row: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(a.len());
    for r in 0..a.len() / row {
        let s: Vec<f64> = (0..row)
            .map(|j| a[r * row + j] as f64 + b[r * row + j] as f64)
            .collect();
        let mean = s.iter().sum::<f64>() / row as f64;
        let var = s.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / row as f64;
        let rstd = 1.0 / (var + 1e-12).sqrt();
        out.extend((0..row).map(|j| (s[j] - mean) * rstd * g[j] as f64 + be[j] as f64));
    }
    out
}

#[test]
fn add_layer_norm_rows_split() {
    let (rows, row) = (257usize, 389usize);
    let (a, b) = (data(rows * row, 13), data(rows * row, 17));
    let (g, be) = (data(row, 19), data(row, 23));
    let dims = [rows, row];
    let pdims = [row];
    let want = naive_add_layer_norm(&a, &b, &g, &be, row);
    let sum: Vec<f64> = a
        .iter()
        .zip(&b)
        .map(|(&x, &y)| x as f64 + y as f64)
        .collect();
    at_threads(|t| {
        let ins = [
            view(&dims, &a),
            view(&dims, &b),
            view(&pdims, &g),
            view(&pdims, &be),
        ];
        let mut out = vec![0f32; rows * row];
        add_norm(1, 1e-12, false, false, &ins, &mut view_mut(&dims, &mut out)).unwrap();
        close(&out, &want, 1e-5, &format!("add_norm, {t} threads"));

        // keep_sum: the [2, ..] stack of the sum and the norm.
        let kdims = [2, rows, row];
        let mut kept = vec![0f32; 2 * rows * row];
        add_norm(
            1,
            1e-12,
            false,
            true,
            &ins,
            &mut view_mut(&kdims, &mut kept),
        )
        .unwrap();
        close(
            &kept[..rows * row],
            &sum,
            1e-6,
            &format!("kept sum, {t} threads"),
        );
        close(
            &kept[rows * row..],
            &want,
            1e-5,
            &format!("kept norm, {t} threads"),
        );

        // In place: operand 0 is the output's current value.
        let mut inplace = a.clone();
        let ins = [
            None,
            Some(view(&dims, &b)),
            Some(view(&pdims, &g)),
            Some(view(&pdims, &be)),
        ];
        add_norm_in_place(
            1,
            1e-12,
            false,
            false,
            &ins,
            &mut view_mut(&dims, &mut inplace),
        )
        .unwrap();
        close(
            &inplace,
            &want,
            1e-5,
            &format!("add_norm in place, {t} threads"),
        );
    });
}

#[test]
fn tall_fused_matmul_runs_epilogue_per_row_block() {
    // [3, 333, 64] @ [64, 96] + bias [96] + residual [3, 333, 96], then GELU:
    // tall enough to split by rows, 999 rows not a multiple of the block.
    let (b, s, k, n) = (3usize, 333usize, 64usize, 96usize);
    let m = b * s;
    let (x, w) = (data(m * k, 29), data(k * n, 31));
    let (bias, res) = (data(n, 37), data(m * n, 41));
    let (xd, wd, od, bd) = ([b, s, k], [k, n], [b, s, n], [1, n]);
    let steps = [
        ChainStep::Binary(
            BinaryOp::Add,
            ChainOperand::Input(0),
            ChainOperand::Input(1),
        ),
        ChainStep::Binary(BinaryOp::Add, ChainOperand::Step(0), ChainOperand::Input(2)),
        ChainStep::Unary(UnaryOp::Gelu, ChainOperand::Step(1)),
    ];
    let want: Vec<f64> = (0..m * n)
        .map(|e| {
            let (i, j) = (e / n, e % n);
            let dot: f64 = (0..k)
                .map(|p| x[i * k + p] as f64 * w[p * n + j] as f64)
                .sum();
            erf_gelu(dot + bias[j] as f64 + res[e] as f64)
        })
        .collect();
    at_threads(|t| {
        let mut out = vec![f32::NAN; m * n];
        let ins = [
            view(&xd, &x),
            view(&wd, &w),
            view(&bd, &bias),
            view(&od, &res),
        ];
        fused_matmul(&steps, &ins, &mut view_mut(&od, &mut out)).unwrap();
        close(&out, &want, 2e-5, &format!("fused matmul, {t} threads"));
    });
}

#[test]
fn large_transpose_copies_rows_in_parallel() {
    // [3, 50, 40, 17] -> perm [0, 2, 1, 3]: 102,000 elements, inner axis kept.
    let dims = [3usize, 50, 40, 17];
    let perm = [0usize, 2, 1, 3];
    let x = data(dims.iter().product(), 43);
    let od = [3usize, 40, 50, 17];
    let want: Vec<f64> = (0..x.len())
        .map(|e| {
            let (a, rest) = (e / (40 * 50 * 17), e % (40 * 50 * 17));
            let (c, rest) = (rest / (50 * 17), rest % (50 * 17));
            let (b, d) = (rest / 17, rest % 17);
            x[((a * 50 + b) * 40 + c) * 17 + d] as f64
        })
        .collect();
    at_threads(|t| {
        let mut out = vec![f32::NAN; x.len()];
        rlx_cpu::kernels::movement::transpose(
            &perm,
            &[view(&dims, &x)],
            &mut view_mut(&od, &mut out),
        )
        .unwrap();
        close(&out, &want, 0.0, &format!("transpose, {t} threads"));
    });
}
