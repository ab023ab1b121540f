//! A 3-channel stem conv (`conv_stem.rs`, writing blocked rows) and the
//! max pool that is its only reader, run as one step in bands of pool
//! output rows (ResNet's 7x7 stride-2 3 -> 64 + ReLU and its 3x3
//! stride-2 max pool): per image and band of [`BAND_ROWS`] pool rows, the
//! stem computes the rows the band's windows read into a per-thread band
//! buffer (`[O/16][rows][ow][16]`, kept across calls: 9 stem rows of 112
//! pixels x 64 channels, 258 KB, sits in L2), then the pool
//! (`pool_blocked.rs`'s separable rows, [`MaxPoolRows`]) writes the
//! band's rows blocked. The stem's output (3.2 MB an image at 224 x 224)
//! is never stored to or read back from memory; a row two bands share is
//! carried to the front of the buffer, not recomputed.
//!
//! Each stem row is the stem kernel's (same tiles, FMA order and row
//! chain) and each pool row the blocked pool's, so the bits equal the
//! two ops run one after the other (`tests/stem_pool.rs`). The executor
//! pairs the nodes (`winograd_weights.rs`: [`fuses`] and an arena check)
//! and runs this at the pool's place with the conv's inputs. Threads:
//! each image's pool rows split over the team, a part's first band
//! computing the row it shares with the part before.

use super::conv2d::Conv2d;
use super::conv_epilogue::ConvEpilogue;
use super::conv_stem::StemImage;
use super::pool_blocked::MaxPoolRows;
use super::{KernelResult, View, ViewMut};
use crate::team;
use rlx_ir::op::{ChainStep, Window};
use rlx_ir::ops::conv::window_out_len;
use rlx_ir::{DType, Op};
use std::cell::Cell;
use std::ops::Range;

/// Channels per block.
const LANES: usize = 16;

/// Pool output rows per band: their 2 x 4 + 1 stem rows at ResNet's 112
/// pixels are 258 KB, which stays in Zen 4's 1 MB L2 next to the padded
/// image's rows the band reads.
const BAND_ROWS: usize = 4;

thread_local! {
    /// The calling thread's band of stem rows, reused by the next call.
    static BAND: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
}

/// The stem conv `conv` (a `Conv` or a `FusedConv` whose epilogue reads
/// no extra and is a row chain) with its geometry and epilogue steps.
struct Stem<'a> {
    g: Conv2d,
    steps: &'a [ChainStep],
}

impl<'a> Stem<'a> {
    /// `conv` of an `x` / `w` of these dims giving `s`, when the stem
    /// kernel writes it blocked ([`Conv2d::stem_writes_blocked`]) and
    /// its epilogue runs on rows; `arity`: the conv's inputs.
    fn new(conv: &'a Op, arity: usize, (x, w, s): (&[usize], &[usize], &[usize])) -> Option<Self> {
        let (window, groups, bias, steps): (&Window, _, _, &[ChainStep]) = match conv {
            Op::Conv { window, groups } => (window, *groups, arity == 3, &[]),
            Op::FusedConv {
                window,
                groups,
                bias,
                epilogue,
            } => (window, *groups, *bias, epilogue),
            _ => return None,
        };
        if arity != rlx_ir::ops::fused_conv::conv_arity(bias) || !(2..=3).contains(&arity) {
            return None;
        }
        let g = super::conv_packed::geometry(window, groups, x, w, s)?;
        let fits = |ax: usize, (k, st, d)| {
            window_out_len(x[2 + ax], k, st, window.padding[ax], d) == Some(s[2 + ax])
        };
        let shapes = x[..2] == [g.batch, g.c]
            && w == [g.o, g.c, g.kh, g.kw]
            && s[..2] == [g.batch, g.o]
            && fits(0, (g.kh, g.s.0, g.d.0))
            && fits(1, (g.kw, g.s.1, g.d.1));
        let rows = ConvEpilogue::new(steps, &[], s, DType::F32).is_some_and(|e| e.rows().is_some());
        (shapes && g.stem_writes_blocked() && (steps.is_empty() || rows))
            .then_some(Stem { g, steps })
    }
}

/// True when [`run`] takes the stem conv `conv` (`arity` inputs: x, w
/// and maybe a bias, no epilogue extra) of an f32 `x` / `w` giving `s`,
/// then the pool `pool` of `s` giving `y`, blocked: a stem the stem
/// kernel writes blocked and a max pool the blocked pool writes.
pub(crate) fn fuses(
    conv: &Op,
    arity: usize,
    pool: &Op,
    (x, w, s, y): (&[usize], &[usize], &[usize], &[usize]),
) -> bool {
    let ranks = [x, w, s, y].iter().all(|d| d.len() == 4);
    ranks && Stem::new(conv, arity, (x, w, s)).is_some() && MaxPoolRows::new(pool, s, y).is_some()
}

/// The stem `conv` (its inputs `ins`: x, w, bias; `wp`: its weight packed
/// for the stem kernel, `conv_stem::prepared_weights`; `stem_dims`: its
/// output's dims) then the max pool `pool` into `out`, blocked
/// `[N][O/16][ph][pw][16]` ([`fuses`]).
pub(crate) fn run(
    conv: &Op,
    wp: &[f32],
    pool: &Op,
    stem_dims: &[usize],
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let f32s = ins.iter().all(|v| v.dtype == DType::F32) && out.dtype == DType::F32;
    let dims = |k: usize| ins.get(k).map_or(&[][..], |v| v.dims);
    let (x, w) = (dims(0), dims(1));
    let all = (x, w, stem_dims, out.dims);
    if !f32s || !fuses(conv, ins.len(), pool, all) {
        return Err(fail!(
            "stem + max pool: {} of {x:?}, {w:?} into {stem_dims:?}, then {} into {:?}, is not a blocked stem and max pool pair",
            conv.mnemonic(),
            pool.mnemonic(),
            out.dims
        ));
    }
    let stem = Stem::new(conv, ins.len(), (x, w, stem_dims)).expect("checked by fuses");
    let pool = MaxPoolRows::new(pool, stem_dims, out.dims).expect("checked by fuses");
    let g = &stem.g;
    let bias = ins.get(2).map(|b| b.slice::<f32>());
    let epi = ConvEpilogue::new(stem.steps, &[], stem_dims, DType::F32);
    let chain = epi.as_ref().and_then(|e| e.rows());
    let y = out.slice::<f32>();
    let ((ph, pw), blocks) = (pool.out_dims(), g.o / LANES);
    let per_image = blocks * ph * pw * LANES;
    if y.len() != g.batch * per_image {
        return Err(fail!("stem + max pool: buffer sizes do not match the dims"));
    }
    let parts = team::split(ph, team::threads(), BAND_ROWS);
    let x = ins[0].slice::<f32>();
    g.stem_images(x, wp, bias, chain, |img| {
        let yn = team::Disjoint::new(&mut y[img.n * per_image..][..per_image]);
        team::parallel_for(parts.len(), |part| {
            bands(img, &pool, parts[part].clone(), &yn)
        });
        Ok(())
    })
}

/// Pool output rows `rows` of image `img`, [`BAND_ROWS`] at a time: each
/// band's stem rows into the thread's band buffer, then its pool rows of
/// every block into `yn` (the image's `[O/16][ph][pw][16]`; the caller
/// gives each part its own rows).
fn bands(img: &StemImage, pool: &MaxPoolRows, rows: Range<usize>, yn: &team::Disjoint<f32>) {
    let g = img.conv();
    let ((ph, pw), blocks) = (pool.out_dims(), g.o / LANES);
    let row_len = g.ow * LANES;
    let band_of = |start: usize| start..(start + BAND_ROWS).min(rows.end);
    let starts = || rows.clone().step_by(BAND_ROWS);
    let cap = starts()
        .map(|r| pool.rows_read(band_of(r)).len())
        .max()
        .unwrap_or(0);
    let mut band = BAND.take();
    if band.len() < blocks * cap * row_len {
        band.resize(blocks * cap * row_len, 0.0);
    }
    // The stem rows the buffer holds, from its row 0.
    let mut have = 0..0;
    for start in starts() {
        let out = band_of(start);
        let need = pool.rows_read(out.clone());
        // Rows the last band computed that this one reads too: moved to
        // the front (bands go down the image, so they are its top rows).
        let kept = need.start.max(have.start)..have.end.min(need.end);
        // The first row not carried.
        let first = kept.end.max(need.start);
        for b in 0..blocks {
            let at = b * cap * row_len;
            if !kept.is_empty() {
                let from = at + (kept.start - have.start) * row_len;
                band.copy_within(from..from + kept.len() * row_len, at);
            }
            for oy in first..need.end {
                let row = &mut band[at + (oy - need.start) * row_len..][..row_len];
                img.blocked_row(b, oy, row);
            }
        }
        for b in 0..blocks {
            let src = &band[b * cap * row_len..][..need.len() * row_len];
            let at = (b * ph + out.start) * pw * LANES;
            // SAFETY: rows `out` of block `b`: inside this part's rows.
            let dst = unsafe { yn.range(at..at + out.len() * pw * LANES) };
            pool.block_rows(src, need.start, dst, out.clone());
        }
        have = need;
    }
    BAND.set(band);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::conv::tests::run;
    use crate::kernels::conv_direct::pack_weights;
    use crate::kernels::conv_nchwc::BlockedIo;
    use rlx_ir::op::{ChainOperand, PoolKind, UnaryOp};

    fn window(k: usize, s: usize, p: usize) -> Window {
        Window {
            kernel: vec![k, k],
            stride: vec![s, s],
            padding: vec![(p, p); 2],
            dilation: vec![1, 1],
        }
    }

    /// Values in [-1, 1) with NaNs at `nans` (a NaN sticks in the max).
    fn values(n: usize, seed: usize, nans: &[usize]) -> Vec<f32> {
        let mut v: Vec<f32> = (0..n)
            .map(|i| ((i * 7919 + seed * 104729) % 1000) as f32 / 500.0 - 1.0)
            .collect();
        for &i in nans.iter().filter(|&&i| i < n) {
            v[i] = f32::NAN;
        }
        v
    }

    /// The band step against the stem kernel writing its whole blocked
    /// output and then the blocked max pool on it, bit for bit: ResNet's
    /// 64-output stem on a 99 x 86 image (25 x 22 pool rows: six bands,
    /// the last partial), 16 / 32 outputs on odd maps, with and without a
    /// bias and the ReLU, NaNs in the image, batch 1 / 2, at 1-3 threads
    /// (parts that start mid-image recompute the row they share).
    #[test]
    fn bands_match_the_stem_then_the_pool() {
        if !crate::kernels::conv_nchwc::avx512() {
            return;
        }
        let relu = [ChainStep::Unary(UnaryOp::Relu, ChainOperand::Input(0))];
        // (batch, h, w, outputs, bias, relu)
        let cases = [
            (1, 99, 86, 64, true, true),
            (2, 37, 45, 16, false, true),
            (1, 41, 33, 32, true, false),
            (2, 64, 33, 64, false, false),
        ];
        for (k, &(n, h, w, o, bias, with_relu)) in cases.iter().enumerate() {
            let steps: &[ChainStep] = if with_relu { &relu } else { &[] };
            let conv = Op::FusedConv {
                window: window(7, 2, 3),
                groups: 1,
                bias,
                epilogue: steps.to_vec(),
            };
            let pool = Op::Pool {
                kind: PoolKind::Max,
                window: window(3, 2, 1),
                count_include_pad: false,
            };
            let (sh, sw) = ((h + 6 - 7) / 2 + 1, (w + 6 - 7) / 2 + 1);
            let (ph, pw) = ((sh + 2 - 3) / 2 + 1, (sw + 2 - 3) / 2 + 1);
            let (xd, wd, bd) = ([n, 3, h, w], [o, 3, 7, 7], [o]);
            let (sd, yd) = ([n, o, sh, sw], [n, o, ph, pw]);
            let x = values(n * 3 * h * w, k, &[5 * w + 7, 3 * h * w - 1]);
            let wt: Vec<f32> = values(o * 147, 10 + k, &[])
                .iter()
                .map(|v| v / 8.0)
                .collect();
            let b = values(o, 20 + k, &[]);
            let mut wp = Vec::new();
            pack_weights(&wt, o, 3, 49, &mut wp);
            let ins: Vec<(&[usize], &[f32])> = if bias {
                vec![(&xd, &x), (&wd, &wt), (&bd, &b)]
            } else {
                vec![(&xd, &x), (&wd, &wt)]
            };
            assert!(fuses(&conv, ins.len(), &pool, (&xd, &wd, &sd, &yd)));
            for threads in 1..=3 {
                let fused = crate::threads::with_limit(Some(threads), || {
                    run(|i, y| super::run(&conv, &wp, &pool, &sd, i, y), &ins, &yd)
                })
                .unwrap();
                let pair = crate::threads::with_limit(Some(threads), || {
                    let stem = run(
                        |i, s| {
                            let g = Stem::new(&conv, i.len(), (&xd, &wd, &sd)).unwrap().g;
                            let epi = ConvEpilogue::new(steps, &[], &sd, DType::F32);
                            let bias = i.get(2).map(|v| v.slice::<f32>());
                            g.stem_packed(i[0].slice(), &wp, bias, s.slice(), epi.as_ref(), true)
                        },
                        &ins,
                        &sd,
                    )
                    .unwrap();
                    let io = BlockedIo {
                        input: true,
                        output: true,
                    };
                    let f = |i: &[View], y: &mut ViewMut| {
                        super::super::pool_blocked::run(&pool, io, i, y)
                    };
                    run(f, &[(&sd, &stem)], &yd).unwrap()
                });
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert!(
                    bits(&fused) == bits(&pair),
                    "case {k} ({n} x 3 x {h} x {w} -> {o}), {threads} threads"
                );
                assert!(fused.iter().any(|v| v.is_nan()) && fused.iter().any(|v| !v.is_nan()));
            }
        }
    }

    /// Bad input is an error, not a panic: a pool that is not the stem's
    /// (an average pool), and an output of the wrong size.
    #[test]
    fn refuses_what_it_does_not_take() {
        if !crate::kernels::conv_nchwc::avx512() {
            return;
        }
        let conv = Op::Conv {
            window: window(7, 2, 3),
            groups: 1,
        };
        let (xd, wd, sd) = ([1, 3, 37, 37], [16, 3, 7, 7], [1, 16, 19, 19]);
        let (x, wt) = (values(3 * 37 * 37, 1, &[]), values(16 * 147, 2, &[]));
        let mut wp = Vec::new();
        pack_weights(&wt, 16, 3, 49, &mut wp);
        let ins: Vec<(&[usize], &[f32])> = vec![(&xd, &x), (&wd, &wt)];
        let avg = Op::Pool {
            kind: PoolKind::Avg,
            window: window(3, 2, 1),
            count_include_pad: false,
        };
        let max = Op::Pool {
            kind: PoolKind::Max,
            window: window(3, 2, 1),
            count_include_pad: false,
        };
        for (pool, yd) in [(&avg, [1, 16, 10, 10]), (&max, [1, 16, 9, 10])] {
            let err = run(|i, y| super::run(&conv, &wp, pool, &sd, i, y), &ins, &yd);
            assert!(err.unwrap_err().contains("stem + max pool"));
        }
    }
}
