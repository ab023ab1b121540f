//! Matmul and dot-general nodes as strided-batched GEMMs ([`GemmSpec`]).

use super::{GemmSpec, Kernel};
use crate::launch::broadcast;
use rlx_ir::op::DotDims;

/// numpy `matmul` as one strided-batched GEMM: rank-1 operands promoted,
/// and each operand's batch either the output's or absent / all ones.
pub(super) fn matmul(a: &[usize], b: &[usize], out: &[usize]) -> Result<Kernel, String> {
    let a2: Vec<usize> = if a.len() == 1 {
        vec![1, a[0]]
    } else {
        a.to_vec()
    };
    let b2: Vec<usize> = if b.len() == 1 {
        vec![b[0], 1]
    } else {
        b.to_vec()
    };
    if a2.len() < 2 || b2.len() < 2 {
        return Err("matmul of a scalar".into());
    }
    let (m, k) = (a2[a2.len() - 2], a2[a2.len() - 1]);
    let (k2, n) = (b2[b2.len() - 2], b2[b2.len() - 1]);
    if k != k2 {
        return Err(format!("matmul {a:?} @ {b:?}: contracted {k} vs {k2}"));
    }
    let (ab, bb) = (&a2[..a2.len() - 2], &b2[..b2.len() - 2]);
    let batch_dims = broadcast(ab, bb).map_err(|e| e.to_string())?.dims;
    let batch: usize = batch_dims.iter().product();
    // A whole batch (same dims after broadcasting) or none (all ones).
    let stride_of = |own: &[usize], size: usize| -> Result<usize, String> {
        match own.iter().product::<usize>() {
            1 => Ok(0),
            c if c == batch => Ok(size),
            _ => Err(format!(
                "matmul {a:?} @ {b:?}: a batch broadcast along some axes only (CUDA takes a whole batch or none)"
            )),
        }
    };
    let spec = GemmSpec {
        batch,
        m,
        k,
        n,
        trans_a: false,
        trans_b: false,
        stride_a: stride_of(ab, m * k)?,
        stride_b: stride_of(bb, k * n)?,
    };
    check_gemm_out(&spec, out)?;
    Ok(Kernel::Gemm(spec))
}

/// A dot-general whose batch axes lead both operands (in order) and which
/// contracts one axis of two-axis matrices: a GEMM with transposes.
pub(super) fn dot_general(
    dd: &DotDims,
    a: &[usize],
    b: &[usize],
    out: &[usize],
) -> Result<Kernel, String> {
    let nb = dd.lhs_batch.len();
    let leading: Vec<usize> = (0..nb).collect();
    let canonical = dd.lhs_batch == leading
        && dd.rhs_batch == leading
        && a.len() == nb + 2
        && b.len() == nb + 2
        && dd.lhs_contract.len() == 1
        && dd.rhs_contract.len() == 1;
    if !canonical {
        return Err(format!(
            "the CUDA dot-general takes leading batch axes and one contracted axis of [.., m, k] / [.., k, n] matrices, not {dd:?} of {a:?} and {b:?}"
        ));
    }
    let trans_a = dd.lhs_contract[0] == nb;
    let trans_b = dd.rhs_contract[0] == nb + 1;
    let (m, k) = if trans_a {
        (a[nb + 1], a[nb])
    } else {
        (a[nb], a[nb + 1])
    };
    let (k2, n) = if trans_b {
        (b[nb + 1], b[nb])
    } else {
        (b[nb], b[nb + 1])
    };
    if k != k2 || a[..nb] != b[..nb] {
        return Err(format!("dot-general {a:?} . {b:?} ({dd:?}) does not match"));
    }
    let batch: usize = a[..nb].iter().product();
    let spec = GemmSpec {
        batch,
        m,
        k,
        n,
        trans_a,
        trans_b,
        stride_a: m * k,
        stride_b: k * n,
    };
    check_gemm_out(&spec, out)?;
    Ok(Kernel::Gemm(spec))
}

fn check_gemm_out(s: &GemmSpec, out: &[usize]) -> Result<(), String> {
    let have: usize = out.iter().product();
    if have != s.batch * s.m * s.n {
        return Err(format!(
            "a GEMM of {} x [{}, {}] for an output of {out:?}",
            s.batch, s.m, s.n
        ));
    }
    if [s.m, s.k, s.n, s.batch]
        .iter()
        .any(|&d| d > i32::MAX as usize)
    {
        return Err("a GEMM dim beyond i32 (cuBLAS)".into());
    }
    Ok(())
}
