//! Elementwise ReLU and the arg-max classifier head.

use crate::error::{check_len, KernelError};

/// In-place int8 ReLU: `max(x, zero_point)` (real zero is the zero point).
pub fn relu(data: &mut [i8], zero_point: i8) {
    for v in data {
        *v = (*v).max(zero_point);
    }
}

/// Index of the largest value of each row of `classes` values (the first
/// one on ties, as numpy's `argmax`), written to `out` (one per row).
pub fn argmax(input: &[i8], classes: usize, out: &mut [usize]) -> Result<(), KernelError> {
    if classes == 0 {
        return Err(KernelError::Geometry("argmax over zero classes"));
    }
    check_len("input", out.len() * classes, input.len())?;
    for (row, o) in input.chunks_exact(classes).zip(out.iter_mut()) {
        let mut best = 0;
        for (i, &v) in row.iter().enumerate() {
            if v > row[best] {
                best = i;
            }
        }
        *o = best;
    }
    Ok(())
}
