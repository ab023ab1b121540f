//! Movement family: reshape, transpose, slice, concat, pad, broadcast.
//! All are dtype-agnostic: they move elements of the dtype's width.

use super::scalar::Pod;
use super::{broadcast_strides, for_each_strided, KernelResult, View, ViewMut};
use crate::team;
use rlx_ir::op::{PadMode, SliceSpec};
use rlx_ir::{contiguous_strides, scalar_constant_bytes};

/// Elements from which a row-wise copy splits over the thread team (64
/// KiB of f32 take ~5 us; MiniLM's q / k / v head transposes, 48 K values
/// each, went 0.32 -> 0.25 ms per s128 run at 2 threads when split).
const PARALLEL_GRAIN: usize = 1 << 14;

fn gather_strided<T: Pod>(x: &View, out: &mut ViewMut, strides: &[isize], base: isize) {
    let src = x.slice::<T>();
    let dims = out.dims;
    let o = out.slice::<T>();
    let r = dims.len();
    if r > 1 && strides[r - 1] == 1 && dims[r - 1] > 1 {
        // The inner axis is contiguous in the source: copy whole rows.
        let inner = dims[r - 1];
        let rows = o.len() / inner;
        if o.len() >= PARALLEL_GRAIN && rows > 1 && team::threads() > 1 {
            // Blocks of rows over the team, each row's source offset
            // computed from its index.
            let ranges = team::split(rows, team::threads(), 1);
            let out = team::Disjoint::new(o);
            team::parallel_for(ranges.len(), |part| {
                for row in ranges[part].clone() {
                    let (mut rest, mut p) = (row, base);
                    for ax in (0..r - 1).rev() {
                        p += (rest % dims[ax]) as isize * strides[ax];
                        rest /= dims[ax];
                    }
                    let p = p as usize;
                    // SAFETY: each row is written by one part.
                    let dst = unsafe { out.range(row * inner..(row + 1) * inner) };
                    dst.copy_from_slice(&src[p..p + inner]);
                }
            });
            return;
        }
        for_each_strided(&dims[..r - 1], &strides[..r - 1], base, |i, p| {
            let p = p as usize;
            o[i * inner..(i + 1) * inner].copy_from_slice(&src[p..p + inner]);
        });
        return;
    }
    for_each_strided(dims, strides, base, |i, p| o[i] = src[p as usize]);
}

/// Same bytes, new dims.
pub(crate) fn reshape(ins: &[View], out: &mut ViewMut) -> KernelResult {
    out.bytes.copy_from_slice(ins[0].bytes);
    Ok(())
}

/// Permutes the axes of `ins[0]` into `out`: output axis `i` is input axis
/// `perm[i]` (numpy `transpose`). Any dtype; never fails.
pub fn transpose(perm: &[usize], ins: &[View], out: &mut ViewMut) -> KernelResult {
    let x = &ins[0];
    let cs = contiguous_strides(x.dims);
    let strides: Vec<isize> = perm.iter().map(|&p| cs[p] as isize).collect();
    by_width!(x.dtype, T => gather_strided::<T>(x, out, &strides, 0));
    Ok(())
}

/// Strided slice (negative steps walk backwards).
pub(crate) fn slice(spec: &SliceSpec, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let x = &ins[0];
    let cs = contiguous_strides(x.dims);
    let strides: Vec<isize> = cs
        .iter()
        .zip(&spec.steps)
        .map(|(&c, &s)| c as isize * s as isize)
        .collect();
    let base: isize = cs
        .iter()
        .zip(&spec.starts)
        .map(|(&c, &s)| (c * s) as isize)
        .sum();
    if out.numel() == 0 {
        return Ok(());
    }
    by_width!(x.dtype, T => gather_strided::<T>(x, out, &strides, base));
    Ok(())
}

/// numpy `broadcast_to`.
pub(crate) fn broadcast(ins: &[View], out: &mut ViewMut) -> KernelResult {
    let x = &ins[0];
    let strides = broadcast_strides(x.dims, out.dims);
    by_width!(x.dtype, T => gather_strided::<T>(x, out, &strides, 0));
    Ok(())
}

/// Bytes of output from which a concat with at least as many outer rows
/// (images, for a channel concat) as threads splits them over the team.
/// Whole images only: a split inside an image (cnn16, U-Net b1) made the
/// convs reading it slower than the copy gained, each reading half its
/// channels from the other core's cache; at batch >= threads the readers
/// split by images too.
const CONCAT_GRAIN: usize = 1 << 20;

/// Concatenation along `axis`.
pub(crate) fn concat(axis: usize, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let es = out.dtype.size_bytes();
    let outer: usize = out.dims[..axis].iter().product();
    let inner: usize = out.dims[axis + 1..].iter().product::<usize>() * es;
    let row = out.dims[axis] * inner;
    // Output row `o` (all inputs' chunks of it) into `dst`.
    let fill_row = |o: usize, dst: &mut [u8]| {
        let mut col = 0;
        for x in ins {
            let chunk = x.dims[axis] * inner;
            dst[col..col + chunk].copy_from_slice(&x.bytes[o * chunk..(o + 1) * chunk]);
            col += chunk;
        }
    };
    let threads = team::threads();
    if threads > 1 && outer >= threads && out.bytes.len() >= CONCAT_GRAIN {
        let ranges = team::split(outer, threads, 1);
        let dst = team::Disjoint::new(&mut out.bytes[..outer * row]);
        team::parallel_for(ranges.len(), |part| {
            for o in ranges[part].clone() {
                // SAFETY: each output row is written by one part.
                fill_row(o, unsafe { dst.range(o * row..(o + 1) * row) });
            }
        });
        return Ok(());
    }
    if row > 0 {
        for (o, dst) in out.bytes.chunks_exact_mut(row).take(outer).enumerate() {
            fill_row(o, dst);
        }
    }
    Ok(())
}

/// Source index along one axis for output index `i`, or `None` for the constant fill.
fn pad_source(i: usize, lo: usize, n: usize, mode: &PadMode) -> Option<usize> {
    let j = i as isize - lo as isize;
    let n = n as isize;
    if (0..n).contains(&j) {
        return Some(j as usize);
    }
    match mode {
        PadMode::Constant(_) => None,
        PadMode::Edge => Some(j.clamp(0, n - 1) as usize),
        PadMode::Reflect => {
            if n == 1 {
                return Some(0);
            }
            let period = 2 * (n - 1);
            let mut k = j.rem_euclid(period);
            if k >= n {
                k = period - k;
            }
            Some(k as usize)
        }
    }
}

fn pad_typed<T: Pod>(
    pads: &[(usize, usize)],
    mode: &PadMode,
    x: &View,
    out: &mut ViewMut,
    fill: T,
) {
    let src = x.slice::<T>();
    let in_strides = contiguous_strides(x.dims);
    let dims = out.dims.to_vec();
    let o = out.slice::<T>();
    let r = dims.len();
    let mut idx = vec![0usize; r];
    for v in o.iter_mut() {
        let mut off = 0usize;
        let mut inside = true;
        for a in 0..r {
            match pad_source(idx[a], pads[a].0, x.dims[a], mode) {
                Some(s) => off += s * in_strides[a],
                None => {
                    inside = false;
                    break;
                }
            }
        }
        *v = if inside { src[off] } else { fill };
        for a in (0..r).rev() {
            idx[a] += 1;
            if idx[a] < dims[a] {
                break;
            }
            idx[a] = 0;
        }
    }
}

/// Constant / reflect / edge padding.
pub(crate) fn pad(
    pads: &[(usize, usize)],
    mode: &PadMode,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let x = &ins[0];
    let value = match mode {
        PadMode::Constant(v) => *v,
        _ => 0.0,
    };
    let fill_bytes = scalar_constant_bytes(value, x.dtype);
    by_width!(x.dtype, T => {
        // SAFETY-free decode of the fill value from its little-endian bytes.
        let mut buf = [0u8; 8];
        buf[..fill_bytes.len()].copy_from_slice(&fill_bytes);
        let fill: T = T::from_le_bytes(buf[..std::mem::size_of::<T>()].try_into().unwrap());
        pad_typed::<T>(pads, mode, x, out, fill)
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::conv::tests::run;

    /// A channel concat of two NCHW tensors against the element formula
    /// (`out[n][c][p]` is input 0's `[n][c][p]` below its 2 channels, else
    /// input 1's `[n][c - 2][p]`), on 1 to 3 threads: 4 images of 1.3 MB in
    /// all split by images over the team, 1 image (fewer images than
    /// threads) copied serially.
    #[test]
    fn channel_concat_matches_formula() {
        let value = |k: usize, n: usize, c: usize, p: usize| {
            (k * 1_000_000 + n * 10_000 + c * 1_000 + p % 997) as f32
        };
        for batch in [4, 1] {
            let plane = 128 * 128;
            let dims = |c: usize| vec![batch, c, 128, 128];
            let input = |k: usize, cs: usize| -> Vec<f32> {
                (0..batch * cs * plane)
                    .map(|i| value(k, i / (cs * plane), i / plane % cs, i % plane))
                    .collect()
            };
            let (x0, x1) = (input(0, 2), input(1, 3));
            let (d0, d1) = (dims(2), dims(3));
            let want: Vec<f32> = (0..batch * 5 * plane)
                .map(|i| {
                    let (n, c, p) = (i / (5 * plane), i / plane % 5, i % plane);
                    if c < 2 {
                        value(0, n, c, p)
                    } else {
                        value(1, n, c - 2, p)
                    }
                })
                .collect();
            for threads in [1, 2, 3] {
                let got = crate::threads::with_limit(Some(threads), || {
                    run(|i, o| concat(1, i, o), &[(&d0, &x0), (&d1, &x1)], &dims(5)).unwrap()
                });
                assert!(got == want, "batch {batch}, {threads} threads");
            }
        }
    }
}
