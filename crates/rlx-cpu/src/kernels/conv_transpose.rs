//! Transposed convolution over the spatial dims of `[N, C, *sp]`, any
//! number of spatial dims: per batch item and group one GEMM,
//! `col = W^T X` (`[O/g * prod(k), prod(sp_in)]`), then col2im by rows:
//! each (kernel tap, input row) of `col` adds along the last axis into
//! one output row at the stride, the output channels split over the
//! thread team. (U-Net's 2x2 stride-2 up-convs write every output once.)

use super::conv::{conv_geom, fill_bias, for_each_index, ConvGeom};
use super::conv_nchwc::BLOCK;
use super::conv_transpose_up2 as up2;
use super::gemm::{num_threads, GemmFloat, Strided};
use super::winograd::with_scratch;
use super::{KernelError, KernelResult, View, ViewMut};
use crate::{team, with_real};
use rlx_ir::op::Window;
use rlx_ir::{DType, Op};
use std::cell::Cell;
use std::ops::Range;

/// Output elements from which col2im splits its channels over the team.
const PARALLEL_GRAIN: usize = 1 << 15;

thread_local! {
    /// The calling thread's `col` matrix, reused by the next call (a fresh
    /// zeroed MB per call cost page faults; the GEMM overwrites it).
    static COL: Cell<Vec<f64>> = const { Cell::new(Vec::new()) };
}

/// One run of `col` that col2im adds into one output row.
struct RowMove {
    /// Row of `col` within a channel's block (kernel tap, row-major).
    tap: usize,
    /// First element of the input row within a `col` row.
    in_start: usize,
    /// First element of the output row within an output plane.
    out_start: usize,
    /// Input columns whose output column lies inside the output.
    cols: Range<usize>,
    /// Output column of input column `cols.start`.
    first_out: usize,
}

/// Where col2im moves each (tap, input row): every in-bounds pair, with
/// the in-bounds input columns of its last-axis tap.
fn row_moves(w: &Window, k: &[usize], sp_in: &[usize], sp_out: &[usize]) -> Vec<RowMove> {
    let last = sp_in.len() - 1;
    let (n_in, n_out, kl) = (sp_in[last], sp_out[last], k[last]);
    let (s, d, p) = (w.stride[last], w.dilation[last], w.padding[last].0);
    // Per last-axis tap: the input columns landing inside, and the first's output column.
    let spans: Vec<(Range<usize>, usize)> = (0..kl)
        .map(|kx| {
            let at = |i: usize| (i * s + kx * d).checked_sub(p).filter(|&o| o < n_out);
            let lo = (0..n_in).find(|&i| at(i).is_some());
            match lo {
                Some(lo) => {
                    let hi = (lo..n_in).find(|&i| at(i).is_none()).unwrap_or(n_in);
                    (lo..hi, at(lo).expect("in bounds"))
                }
                None => (0..0, 0),
            }
        })
        .collect();
    let outer: Vec<usize> = k[..last].iter().chain(&sp_in[..last]).copied().collect();
    let out_strides = rlx_ir::contiguous_strides(sp_out);
    let mut moves = Vec::new();
    for_each_index(&outer, |i| {
        let (kt, it) = i.split_at(last);
        let mut out_start = 0;
        for ax in 0..last {
            let at = (it[ax] * w.stride[ax] + kt[ax] * w.dilation[ax]).checked_sub(w.padding[ax].0);
            match at {
                Some(a) if a < sp_out[ax] => out_start += a * out_strides[ax],
                _ => return,
            }
        }
        // Row-major ranks of the outer tap and the outer input position.
        let rank =
            |idx: &[usize], dims: &[usize]| idx.iter().zip(dims).fold(0, |r, (&i, &n)| r * n + i);
        let (ko, io) = (rank(kt, &k[..last]), rank(it, &sp_in[..last]));
        for (kx, (cols, first_out)) in spans.iter().enumerate() {
            if !cols.is_empty() {
                moves.push(RowMove {
                    tap: ko * kl + kx,
                    in_start: io * n_in,
                    out_start,
                    cols: cols.clone(),
                    first_out: *first_out,
                });
            }
        }
    });
    moves
}

/// Folds `src` into every `stride`-th element of `dst` from its first:
/// `*v = f(*v, a)`. Runs of a constant stride as whole chunks, which
/// vectorise (a `step_by` loop stays a scalar iterator: U-Net's 2x2
/// stride-2 up-convs spent more in col2im than in their GEMM).
fn fold_strided<T: Copy>(dst: &mut [T], src: &[T], stride: usize, f: &impl Fn(&mut T, T)) {
    if stride == 1 {
        dst.iter_mut().zip(src).for_each(|(v, &a)| f(v, a));
        return;
    }
    let whole = (dst.len() / stride).min(src.len());
    let (head, tail) = dst.split_at_mut(whole * stride);
    if stride == 2 {
        for (v, &a) in head.chunks_exact_mut(2).zip(src) {
            f(&mut v[0], a);
        }
    } else {
        for (v, &a) in head.chunks_exact_mut(stride).zip(src) {
            f(&mut v[0], a);
        }
    }
    if let (Some(v), Some(&a)) = (tail.first_mut(), src.get(whole)) {
        f(v, a);
    }
}

/// Folds channel `o`'s block of `col` (`kn` rows of `pin`) into its
/// output plane with `f` (an add, or with every output written once the
/// bias plus the value).
fn col2im_channel<T: GemmFloat>(
    moves: &[RowMove],
    stride: usize,
    col: &[T],
    (kn, pin): (usize, usize),
    y: &mut [T],
    f: &impl Fn(&mut T, T),
) {
    for m in moves {
        let src = &col[m.tap * pin + m.in_start..][m.cols.clone()];
        fold_strided(&mut y[m.out_start + m.first_out..], src, stride, f);
    }
    debug_assert!(col.len() == kn * pin);
}

fn conv_transpose_real<T: GemmFloat>(
    g: &ConvGeom,
    moves: &[RowMove],
    (stride, once): (usize, bool),
    ins: &[View],
    out: &mut ViewMut,
) {
    let (x, wt) = (ins[0].slice::<T>(), ins[1].slice::<T>());
    let y = out.slice::<T>();
    let bias = ins.get(2).map(|b| b.slice::<T>());
    if !once || g.pin == 0 {
        fill_bias(y, bias, g.o, g.pout);
    }
    if g.pout == 0 || g.pin == 0 {
        return;
    }
    let (cg, og) = (g.c / g.groups, g.o / g.groups);
    let rows = og * g.kn;
    with_scratch(&COL, rows * g.pin, |col: &mut [T]| {
        let parts = if og * g.pout >= PARALLEL_GRAIN && og > 1 {
            team::threads()
        } else {
            1
        };
        for n in 0..g.batch {
            for gi in 0..g.groups {
                let xg = &x[(n * g.c + gi * cg) * g.pin..][..cg * g.pin];
                // The group's weight is [cg, og * kn]; col = its transpose times x.
                let wg = &wt[gi * cg * rows..][..cg * rows];
                let a = Strided {
                    data: wg,
                    offset: 0,
                    rows,
                    cols: cg,
                    row_stride: 1,
                    col_stride: rows,
                };
                T::gemm(a, Strided::row_major(xg, 0, cg, g.pin), col, num_threads());
                let yg = &mut y[(n * g.o + gi * og) * g.pout..][..og * g.pout];
                let block = g.kn * g.pin;
                let channel = |o: usize, yo: &mut [T]| {
                    let b = bias.map_or(T::ZERO, |b| b[gi * og + o]);
                    let (cb, kp) = (&col[o * block..][..block], (g.kn, g.pin));
                    if once {
                        // Same bits as the bias fill then the add: b + a.
                        col2im_channel(moves, stride, cb, kp, yo, &|v, a| *v = b + a)
                    } else {
                        col2im_channel(moves, stride, cb, kp, yo, &|v, a| *v = *v + a)
                    }
                };
                if parts <= 1 {
                    yg.chunks_exact_mut(g.pout)
                        .enumerate()
                        .for_each(|(o, yo)| channel(o, yo));
                    continue;
                }
                let ranges = team::split(og, parts, 1);
                let planes = team::Disjoint::new(yg);
                team::parallel_for(ranges.len(), |part| {
                    for o in ranges[part].clone() {
                        // SAFETY: each output channel's plane is written by one part.
                        channel(o, unsafe { planes.range(o * g.pout..(o + 1) * g.pout) });
                    }
                });
            }
        }
    });
}

/// True when the window tiles the output (kernel = stride, no padding,
/// dilation or output padding): each output is written once, so no bias
/// fill first. (The weight's dims `wk` are the kernel; the window's may be
/// left empty.)
fn tiles_output(w: &Window, output_padding: &[usize], wk: &[usize]) -> bool {
    wk == w.stride.as_slice()
        && w.dilation.iter().all(|&d| d == 1)
        && w.padding.iter().all(|&p| p == (0, 0))
        && output_padding.iter().all(|&p| p == 0)
}

/// True when `conv_transpose_up2.rs` runs this call: f32, one group, a
/// 2x2 kernel (`wk`) at stride 2 with no padding, on AVX-512.
fn takes_up2(
    w: &Window,
    output_padding: &[usize],
    groups: usize,
    wk: &[usize],
    dtype: DType,
) -> bool {
    dtype == DType::F32
        && groups == 1
        && wk == [2, 2]
        && tiles_output(w, output_padding, wk)
        && up2::available()
}

/// True when ConvTranspose `op` on `x` / weight `wd` can write its output
/// `y` in the NCHWc blocked layout (`nchwc_layout.rs`): it runs the up2
/// kernel and `y` has whole 16-channel blocks.
pub(crate) fn writes_blocked(
    op: &Op,
    x: &[usize],
    wd: &[usize],
    y: &[usize],
    dtype: DType,
) -> bool {
    let Op::ConvTranspose {
        window,
        output_padding,
        groups,
    } = op
    else {
        return false;
    };
    x.len() == 4
        && wd.len() == 4
        && y.len() == 4
        && x[1] > 0
        && y[1].is_multiple_of(BLOCK)
        && takes_up2(window, output_padding, *groups, &wd[2..], dtype)
}

/// ConvTranspose `op` writing its output blocked `[N][O/16][2H][2W][16]`
/// (only where [`writes_blocked`] holds on these views).
pub(crate) fn conv_transpose_blocked(op: &Op, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let Op::ConvTranspose {
        window,
        output_padding,
        groups,
    } = op
    else {
        return Err(KernelError::Message(
            "blocked ConvTranspose of another op".into(),
        ));
    };
    if ins.len() < 2 || !writes_blocked(op, ins[0].dims, ins[1].dims, out.dims, ins[0].dtype) {
        return Err(KernelError::Message(
            "blocked ConvTranspose off its 2x2 stride-2 kernel".into(),
        ));
    }
    let g = conv_geom(window, Some(output_padding), *groups, ins, out)?;
    run_up2(&g, &ins[0].dims[2..], true, ins, out);
    Ok(())
}

/// Runs `conv_transpose_up2.rs` on checked views (NCHW or `blocked` output).
fn run_up2(g: &ConvGeom, sp_in: &[usize], blocked: bool, ins: &[View], out: &mut ViewMut) {
    let g = up2::Up2 {
        n: g.batch,
        c: g.c,
        o: g.o,
        h: sp_in[0],
        w: sp_in[1],
        blocked,
    };
    let bias = ins.get(2).map(|b| b.slice::<f32>());
    up2::run(g, ins[0].slice(), ins[1].slice(), bias, out.slice());
}

/// N-d transposed convolution (PyTorch `conv_transpose`).
pub(crate) fn conv_transpose(
    w: &Window,
    output_padding: &[usize],
    groups: usize,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let g = conv_geom(w, Some(output_padding), groups, ins, out)?;
    let (sp_in, sp_out) = (&ins[0].dims[2..], &out.dims[2..]);
    let moves = row_moves(w, &ins[1].dims[2..], sp_in, sp_out);
    let stride = w.stride[sp_in.len() - 1];
    let wk = &ins[1].dims[2..];
    let once = tiles_output(w, output_padding, wk);
    if g.c > 0 && takes_up2(w, output_padding, groups, wk, ins[0].dtype) {
        run_up2(&g, sp_in, false, ins, out);
        return Ok(());
    }
    with_real!(ins[0].dtype, ins, out, |i, o| {
        conv_transpose_real::<T>(&g, &moves, (stride, once), i, o);
        Ok(())
    }; T)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::cnn_fixtures;
    use crate::kernels::conv::tests::{close, run, seq, win, Ins};

    /// The case's op (a ConvTranspose) and its x / weight / output dims.
    fn ct_op(case: &serde_json::Value) -> (Op, [Vec<usize>; 3]) {
        let op = Op::ConvTranspose {
            window: cnn_fixtures::window(case),
            output_padding: cnn_fixtures::dims(&case["output_padding"]),
            groups: case["groups"].as_u64().expect("groups") as usize,
        };
        let dims = ["x", "w", "y_dims"].map(|k| cnn_fixtures::dims(&case[k]));
        (op, dims)
    }

    /// Runs `kernel` on the case's inputs (the script's formulas).
    fn ct_run(
        case: &serde_json::Value,
        kernel: impl FnOnce(&[View], &mut ViewMut) -> KernelResult,
    ) -> Vec<f32> {
        let (_, [xd, wd, yd]) = ct_op(case);
        let x = cnn_fixtures::input(case);
        let wt = cnn_fixtures::seq(wd.iter().product(), 5, 17, 16.0);
        let b: Vec<f32> = (0..yd[1]).map(|i| ((i % 5) as f32 - 2.0) / 4.0).collect();
        let bd = [yd[1]];
        let mut ins: Vec<(&[usize], &[f32])> = vec![(&xd, &x), (&wd, &wt)];
        if case["bias"].as_bool().expect("bias") {
            ins.push((&bd, &b));
        }
        run(kernel, &ins, &yd).unwrap()
    }

    fn ct_case(case: &serde_json::Value) -> Vec<f32> {
        let Op::ConvTranspose {
            window,
            output_padding,
            groups,
        } = ct_op(case).0
        else {
            unreachable!("ct_op builds a ConvTranspose")
        };
        ct_run(case, |i, o| {
            conv_transpose(&window, &output_padding, groups, i, o)
        })
    }

    /// Every case of tools/gen_cnn_ops_fixtures.py's transposed convs
    /// (numpy, float64 scatter loops): U-Net's 2x2 stride 2, overlapping
    /// 3x3 taps with padding and output padding, stride 1, groups with
    /// dilation, a stride past the kernel (gaps), kernel = stride (each
    /// output written once: no bias, stride 3, grouped; with output
    /// padding the general path); 2x2 stride 2 on AVX-512 runs
    /// `conv_transpose_up2.rs` (row tails of 5 / 11 / 3 pixels, 4-channel
    /// tiles and leftovers, 4 images split by rows); the large ones at 1,
    /// 2 and 3 threads (channels or rows split), run twice (the reused
    /// `col` buffer).
    #[test]
    fn conv_transpose2d_matches_numpy() {
        let text = include_str!("../../tests/fixtures/cnn_ops/conv_transpose.json");
        let cases = cnn_fixtures::cases(text);
        assert_eq!(cases.len(), 14);
        for case in &cases {
            cnn_fixtures::check(case, &ct_case(case));
            if case.get("sum").is_some() {
                for threads in [2, 3, 2] {
                    let y = crate::threads::with_limit(Some(threads), || ct_case(case));
                    cnn_fixtures::check(case, &y);
                }
            }
        }
    }

    /// The fixture's 2x2 stride-2 cases with whole 16-channel blocks
    /// (16 outputs on rows of 16 and, no bias, 7 pixels at batch 2; 32 on
    /// 19 split over threads) written blocked by `conv_transpose_up2.rs`'s
    /// channel-lane tiles where AVX-512 runs it: unblocked, they match
    /// numpy and the NCHW path's bits (the same sums in the same order),
    /// at 1-3 threads, each run on a NaN-filled output (every pixel
    /// written).
    #[test]
    fn conv_transpose2d_blocked_matches_numpy() {
        let text = include_str!("../../tests/fixtures/cnn_ops/conv_transpose.json");
        let mut blocked_cases = 0;
        for case in &cnn_fixtures::cases(text) {
            let (op, [xd, wd, yd]) = ct_op(case);
            if !writes_blocked(&op, &xd, &wd, &yd, DType::F32) {
                continue;
            }
            blocked_cases += 1;
            let nchw = ct_case(case);
            for threads in 1..=3 {
                let y = crate::threads::with_limit(Some(threads), || {
                    ct_run(case, |i, o| conv_transpose_blocked(&op, i, o))
                });
                let y = unblock(&y, &yd);
                cnn_fixtures::check(case, &y);
                let same = y.iter().zip(&nchw).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{}: blocked bits differ from NCHW", case["name"]);
            }
        }
        assert_eq!(blocked_cases, if up2::available() { 3 } else { 0 });
    }

    /// `y` blocked `[n][o/16][h][w][16]` as NCHW `dims`.
    fn unblock(y: &[f32], dims: &[usize]) -> Vec<f32> {
        let (o, plane) = (dims[1], dims[2] * dims[3]);
        let mut out = vec![0.0; y.len()];
        for (i, v) in out.iter_mut().enumerate() {
            let (n, c, p) = (i / (o * plane), i / plane % o, i % plane);
            *v = y[((n * o / BLOCK + c / BLOCK) * plane + p) * BLOCK + c % BLOCK];
        }
        out
    }

    #[test]
    fn conv_transpose2d_stride_output_padding() {
        // x = seq(24,5,11).reshape(1,4,2,3); w = seq(24,7,13).reshape(4,1,3,2); b = seq(2,1,3)
        // s, lo, hi, dil, op, g = [2,3], [1,0], [0,1], [1,2], [1,2], 2
        // full = [(x.shape[2+i]-1)*s[i] + dil[i]*(w.shape[2+i]-1) + op[i] + 1 for i in range(2)]
        // yf = np.zeros((1, 2, *full))
        // for c, i0, i1, k0, k1 in np.ndindex(4, 2, 3, 3, 2):  # out channel c // 2 (one per group)
        //     yf[0, c // 2, i0*s[0] + k0*dil[0], i1*s[1] + k1*dil[1]] += x[0, c, i0, i1] * w[c, 0, k0, k1]
        // y = yf[:, :, lo[0]:full[0]-hi[0], lo[1]:full[1]-hi[1]] + b[None, :, None, None]
        let want = [
            0.9375, -0.25, 0.0625, 0.125, -0.25, -1.1875, -2.0625, -0.25, 1.0, -0.25, 1.9375,
            -0.25, -1.125, -1.75, -0.25, -0.875, 0.0625, -0.25, 0.0625, -0.25, 0.5625, -0.25,
            -1.625, -1.625, -0.25, 0.5625, 1.0, -0.25, -2.0625, -0.25, 0.25, -0.25, -1.9375,
            -1.3125, -0.25, 0.875, 0.5625, -0.25, -2.5, -0.25, -0.25, -0.25, -0.25, -0.25, -0.25,
            -0.25, -0.25, -0.25, -0.25, -0.25, -0.75, 0.0, 0.375, 0.8125, 0.0, -1.8125, -1.0625,
            0.0, 0.8125, 0.0, -0.75, 0.0, -1.5, 0.3125, 0.0, 0.3125, -1.375, 0.0, -0.625, 0.0, 0.5,
            0.0, -1.375, -1.375, 0.0, 1.25, 0.1875, 0.0, -0.9375, 0.0, 0.8125, 0.0, -1.0625,
            -1.8125, 0.0, 0.8125, 0.375, 0.0, -0.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
            0.0, 0.0,
        ];
        let (x, w, b) = (seq(24, 5, 11), seq(24, 7, 13), seq(2, 1, 3));
        let win = win(&[], &[2, 3], &[(1, 0), (0, 1)], &[1, 2]);
        let ins: &Ins = &[(&[1, 4, 2, 3], &x), (&[4, 1, 3, 2], &w), (&[2], &b)];
        let y = run(
            |i, o| conv_transpose(&win, &[1, 2], 2, i, o),
            ins,
            &[1, 2, 5, 10],
        )
        .unwrap();
        close(&y, &want);
        // A wrong output size is an error, not a panic.
        assert!(run(
            |i, o| conv_transpose(&win, &[1, 2], 2, i, o),
            ins,
            &[1, 2, 5, 9]
        )
        .is_err());
        assert!(run(
            |i, o| conv_transpose(&win, &[1], 2, i, o),
            ins,
            &[1, 2, 5, 10]
        )
        .is_err());
    }
}
