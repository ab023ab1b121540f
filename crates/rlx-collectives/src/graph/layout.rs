//! Moving chunks along an axis to and from the rank-major order the host
//! collectives use (chunk `j` contiguous).

/// `(outer, len, inner)`: the element counts before, along and after `axis`.
pub(crate) fn around(dims: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = dims[..axis].iter().product();
    let inner = dims[axis + 1..].iter().product();
    (outer, dims[axis], inner)
}

/// `[outer][n * c][inner]` to `[n][outer][c][inner]`: the `n` chunks along
/// the middle axis, each made contiguous.
pub(crate) fn split_blocks<T: Copy>(
    x: &[T],
    outer: usize,
    n: usize,
    c: usize,
    inner: usize,
) -> Vec<T> {
    let run = c * inner;
    let mut out = Vec::with_capacity(x.len());
    for j in 0..n {
        for o in 0..outer {
            let at = (o * n + j) * run;
            out.extend_from_slice(&x[at..at + run]);
        }
    }
    out
}

/// The inverse of [`split_blocks`]: `[n][outer][c][inner]` to `[outer][n * c][inner]`.
pub(crate) fn join_blocks<T: Copy>(
    x: &[T],
    outer: usize,
    n: usize,
    c: usize,
    inner: usize,
) -> Vec<T> {
    let run = c * inner;
    let mut out = Vec::with_capacity(x.len());
    for o in 0..outer {
        for j in 0..n {
            let at = (j * outer + o) * run;
            out.extend_from_slice(&x[at..at + run]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_then_join_is_the_identity_and_orders_chunks() {
        // [2][3 * 2][1]: chunk j holds columns 2j, 2j+1 of each row.
        let x: Vec<i32> = (0..12).collect();
        let s = split_blocks(&x, 2, 3, 2, 1);
        assert_eq!(s, vec![0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11]);
        assert_eq!(join_blocks(&s, 2, 3, 2, 1), x);
        assert_eq!(around(&[2, 6, 5], 1), (2, 6, 5));
    }
}
