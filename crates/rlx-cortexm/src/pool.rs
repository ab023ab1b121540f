//! Max / average pooling over NHWC int8 tensors (TFLite reference
//! semantics: padded cells are skipped, the average divides by the number
//! of valid cells, rounding half away from zero). Pooling keeps the input's
//! scale and zero point.

use crate::conv::Conv2dGeometry;
use crate::error::{check_len, KernelError};

/// Pooling window geometry: a [`Conv2dGeometry`] with `out_c == in_c`.
pub type PoolGeometry = Conv2dGeometry;

fn pool(
    input: &[i8],
    batch: usize,
    g: &PoolGeometry,
    activation: (i8, i8),
    output: &mut [i8],
    reduce: impl Fn(&mut dyn Iterator<Item = i8>) -> i32,
) -> Result<(), KernelError> {
    g.validate()?;
    if g.out_c != g.in_c {
        return Err(KernelError::Geometry("pooling needs out_c == in_c"));
    }
    if activation.0 > activation.1 {
        return Err(KernelError::QParam("activation_min > activation_max"));
    }
    check_len("input", batch * g.input_len(), input.len())?;
    check_len("output", batch * g.output_len(), output.len())?;
    let (out_h, out_w) = (g.out_h(), g.out_w());
    for (image, out_image) in input
        .chunks_exact(g.input_len())
        .zip(output.chunks_exact_mut(g.output_len()))
    {
        for oy in 0..out_h {
            let (kys, iy0) = g.rows(oy);
            for ox in 0..out_w {
                let (kxs, ix0) = g.cols(ox);
                for c in 0..g.in_c {
                    let mut cells = kys.clone().flat_map(|ky| {
                        let iy = (iy0 + ky as isize) as usize;
                        kxs.clone().map(move |kx| {
                            let ix = (ix0 + kx as isize) as usize;
                            image[(iy * g.in_w + ix) * g.in_c + c]
                        })
                    });
                    let v = reduce(&mut cells);
                    out_image[(oy * out_w + ox) * g.in_c + c] =
                        v.clamp(activation.0 as i32, activation.1 as i32) as i8;
                }
            }
        }
    }
    Ok(())
}

/// Max pooling of `batch` NHWC images, clamped to `[activation_min, activation_max]`.
pub fn maxpool(
    input: &[i8],
    batch: usize,
    g: &PoolGeometry,
    activation_min: i8,
    activation_max: i8,
    output: &mut [i8],
) -> Result<(), KernelError> {
    pool(
        input,
        batch,
        g,
        (activation_min, activation_max),
        output,
        |cells| cells.map(i32::from).max().unwrap_or(i8::MIN as i32),
    )
}

/// Average pooling of `batch` NHWC images, clamped to `[activation_min, activation_max]`.
pub fn avgpool(
    input: &[i8],
    batch: usize,
    g: &PoolGeometry,
    activation_min: i8,
    activation_max: i8,
    output: &mut [i8],
) -> Result<(), KernelError> {
    pool(
        input,
        batch,
        g,
        (activation_min, activation_max),
        output,
        |cells| {
            let (sum, count) = cells.fold((0i32, 0i32), |(s, n), v| (s + v as i32, n + 1));
            // validate() leaves every window at least one valid cell.
            if sum > 0 {
                (sum + count / 2) / count
            } else {
                (sum - count / 2) / count
            }
        },
    )
}
