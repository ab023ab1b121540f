//! Float matmul / dot_general kernels on large and odd shapes, layouts that
//! are read in place (transposed, batch not leading) and ones that are copied,
//! at one and two threads, against a naive f64 loop computed here.

use half::{bf16, f16};
use rlx_cpu::kernels::linalg::{dot_general, matmul};
use rlx_cpu::kernels::{Pod, View, ViewMut};
use rlx_ir::op::DotDims;
use rlx_ir::DType;

/// Deterministic values in [-1, 1) (a splitmix64 hash of the index).
fn data(len: usize, seed: u64) -> Vec<f64> {
    (0..len as u64)
        .map(|i| {
            let mut z = (i ^ (seed << 40)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 31)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

fn bytes<T: Pod>(v: &[T]) -> Vec<u8> {
    // SAFETY: Pod values are plain bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
        .to_vec()
}

fn as_bytes(v: &[u64]) -> &[u8] {
    // SAFETY: u64 has no padding; u8 has alignment 1.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 8) }
}

fn as_bytes_mut(v: &mut [u64]) -> &mut [u8] {
    // SAFETY: as above, with a unique borrow; any byte pattern is a valid u64.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, v.len() * 8) }
}

fn aligned(b: &[u8]) -> Vec<u64> {
    let mut v = vec![0u64; b.len().div_ceil(8)];
    as_bytes_mut(&mut v)[..b.len()].copy_from_slice(b);
    v
}

/// Row-major multi-index of flat `i`.
fn unravel(mut i: usize, dims: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; dims.len()];
    for ax in (0..dims.len()).rev() {
        idx[ax] = i % dims[ax];
        i /= dims[ax];
    }
    idx
}

fn ravel(idx: &[usize], dims: &[usize]) -> usize {
    idx.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// Naive dot_general in f64: (value, sum of |products|) per output element.
fn naive_dot_general(d: &DotDims, a: &[f64], ad: &[usize], b: &[f64], bd: &[usize]) -> Expected {
    let free = |rank: usize, batch: &[usize], con: &[usize]| -> Vec<usize> {
        (0..rank)
            .filter(|i| !batch.contains(i) && !con.contains(i))
            .collect()
    };
    let fa = free(ad.len(), &d.lhs_batch, &d.lhs_contract);
    let fb = free(bd.len(), &d.rhs_batch, &d.rhs_contract);
    let pick = |ax: &[usize], dims: &[usize]| ax.iter().map(|&i| dims[i]).collect::<Vec<_>>();
    let (bdims, adims_f, bdims_f, cdims) = (
        pick(&d.lhs_batch, ad),
        pick(&fa, ad),
        pick(&fb, bd),
        pick(&d.lhs_contract, ad),
    );
    let out_dims: Vec<usize> = [bdims.clone(), adims_f.clone(), bdims_f.clone()].concat();
    let nout: usize = out_dims.iter().product();
    let ncon: usize = cdims.iter().product();
    let out = (0..nout)
        .map(|o| {
            let oi = unravel(o, &out_dims);
            let (bi, rest) = oi.split_at(bdims.len());
            let (ai_f, bi_f) = rest.split_at(adims_f.len());
            let (mut ia, mut ib) = (vec![0; ad.len()], vec![0; bd.len()]);
            for (j, &v) in bi.iter().enumerate() {
                ia[d.lhs_batch[j]] = v;
                ib[d.rhs_batch[j]] = v;
            }
            fa.iter().zip(ai_f).for_each(|(&ax, &v)| ia[ax] = v);
            fb.iter().zip(bi_f).for_each(|(&ax, &v)| ib[ax] = v);
            let (mut s, mut abs) = (0.0, 0.0);
            for c in 0..ncon {
                let ci = unravel(c, &cdims);
                for (j, &v) in ci.iter().enumerate() {
                    ia[d.lhs_contract[j]] = v;
                    ib[d.rhs_contract[j]] = v;
                }
                let p = a[ravel(&ia, ad)] * b[ravel(&ib, bd)];
                s += p;
                abs += p.abs();
            }
            (s, abs)
        })
        .collect();
    (out_dims, out)
}

/// numpy matmul operand dims as matrices (1-D promoted) left-padded with
/// 1s to one rank, and the number of batch axes.
fn padded(ad: &[usize], bd: &[usize]) -> (Vec<usize>, Vec<usize>, usize) {
    let ad2 = if ad.len() == 1 {
        vec![1, ad[0]]
    } else {
        ad.to_vec()
    };
    let bd2 = if bd.len() == 1 {
        vec![bd[0], 1]
    } else {
        bd.to_vec()
    };
    let rank = ad2.len().max(bd2.len()) - 2;
    let pad = |d: &[usize]| [vec![1; rank + 2 - d.len()], d.to_vec()].concat();
    (pad(&ad2), pad(&bd2), rank)
}

/// numpy matmul semantics as a dot_general on broadcast-expanded operands.
fn naive_matmul(a: &[f64], ad: &[usize], b: &[f64], bd: &[usize]) -> Vec<(f64, f64)> {
    let (pa, pb, rank) = padded(ad, bd);
    let batch: Vec<usize> = (0..rank).map(|i| pa[i].max(pb[i])).collect();
    let expand = |x: &[f64], d: &[usize]| -> (Vec<f64>, Vec<usize>) {
        let full: Vec<usize> = batch.iter().chain(&d[rank..]).copied().collect();
        let n: usize = full.iter().product();
        let v = (0..n)
            .map(|i| {
                let idx = unravel(i, &full);
                let src: Vec<usize> = idx
                    .iter()
                    .zip(d)
                    .map(|(&j, &dd)| if dd == 1 { 0 } else { j })
                    .collect();
                x[ravel(&src, d)]
            })
            .collect();
        (v, full)
    };
    let ((ea, ead), (eb, ebd)) = (expand(a, &pa), expand(b, &pb));
    let dims = DotDims {
        lhs_batch: (0..rank).collect(),
        rhs_batch: (0..rank).collect(),
        lhs_contract: vec![rank + 1],
        rhs_contract: vec![rank],
    };
    naive_dot_general(&dims, &ea, &ead, &eb, &ebd).1
}

#[derive(Clone, Copy, Debug)]
enum Prec {
    F32,
    F64,
    F16,
    Bf16,
}

impl Prec {
    fn dtype(self) -> DType {
        match self {
            Prec::F32 => DType::F32,
            Prec::F64 => DType::F64,
            Prec::F16 => DType::F16,
            Prec::Bf16 => DType::BF16,
        }
    }
    /// Values as this dtype's bytes, and the values it actually holds.
    fn encode(self, v: &[f64]) -> (Vec<u8>, Vec<f64>) {
        match self {
            Prec::F32 => {
                let x: Vec<f32> = v.iter().map(|&x| x as f32).collect();
                (bytes(&x), x.iter().map(|&x| x as f64).collect())
            }
            Prec::F64 => (bytes(v), v.to_vec()),
            Prec::F16 => {
                let x: Vec<f16> = v.iter().map(|&x| f16::from_f64(x)).collect();
                (bytes(&x), x.iter().map(|x| x.to_f64()).collect())
            }
            Prec::Bf16 => {
                let x: Vec<bf16> = v.iter().map(|&x| bf16::from_f64(x)).collect();
                (bytes(&x), x.iter().map(|x| x.to_f64()).collect())
            }
        }
    }
    fn decode(self, b: &[u8]) -> Vec<f64> {
        let w = self.dtype().size_bytes();
        b.chunks(w)
            .map(|c| match self {
                Prec::F32 => f32::from_le_bytes(c.try_into().unwrap()) as f64,
                Prec::F64 => f64::from_le_bytes(c.try_into().unwrap()),
                Prec::F16 => f16::from_le_bytes(c.try_into().unwrap()).to_f64(),
                Prec::Bf16 => bf16::from_le_bytes(c.try_into().unwrap()).to_f64(),
            })
            .collect()
    }
    /// Relative error allowed per accumulated product.
    fn eps(self) -> f64 {
        match self {
            Prec::F64 => 1e-15,
            Prec::F32 => 2e-7,
            // accumulated in f32; the result is rounded to 8 / 11 bits
            Prec::F16 => 1e-3,
            Prec::Bf16 => 8e-3,
        }
    }
}

/// A kernel under test.
type Kernel<'a> = dyn Fn(&[View], &mut ViewMut) -> rlx_cpu::kernels::KernelResult + 'a;
/// Output dims and (value, sum of |products|) per element.
type Expected = (Vec<usize>, Vec<(f64, f64)>);
/// The f64 reference of a kernel, from the operands' values.
type Reference<'a> = dyn Fn(&[f64], &[f64]) -> Expected + 'a;

/// Runs `kernel` on random operands of `ad` / `bd` at 1 and 2 threads and
/// checks every element against `reference` within `k * eps * sum|a*b|`.
fn check(
    what: &str,
    prec: Prec,
    ad: &[usize],
    bd: &[usize],
    k: usize,
    kernel: &Kernel<'_>,
    reference: &Reference<'_>,
) {
    let (na, nb) = (ad.iter().product(), bd.iter().product());
    let (ab, av) = prec.encode(&data(na, 1));
    let (bb, bv) = prec.encode(&data(nb, 2));
    let (out_dims, want) = reference(&av, &bv);
    for threads in ["1", "2"] {
        rlx_ir::env::set("RLX_NUM_THREADS", threads);
        let dt = prec.dtype();
        // 8-byte aligned copies: the kernels view bytes as typed slices.
        let (a64, b64) = (aligned(&ab), aligned(&bb));
        let olen = want.len() * dt.size_bytes();
        let mut o64 = vec![u64::MAX; olen.div_ceil(8)];
        let (abuf, bbuf) = (&as_bytes(&a64)[..ab.len()], &as_bytes(&b64)[..bb.len()]);
        let obuf = &mut as_bytes_mut(&mut o64)[..olen];
        let ins = [
            View {
                dims: ad,
                dtype: dt,
                bytes: abuf,
            },
            View {
                dims: bd,
                dtype: dt,
                bytes: bbuf,
            },
        ];
        let mut out = ViewMut {
            dims: &out_dims,
            dtype: dt,
            bytes: obuf,
        };
        kernel(&ins, &mut out).unwrap();
        let got = prec.decode(out.bytes);
        for (i, (&g, &(w, abs))) in got.iter().zip(&want).enumerate() {
            let tol = (k.max(1) as f64) * prec.eps() * abs + prec.eps() * w.abs() + 1e-30;
            assert!(
                (g - w).abs() <= tol,
                "{what} {prec:?} {ad:?}x{bd:?} threads {threads} element {i}: {g} vs {w} (tol {tol})"
            );
        }
    }
    rlx_ir::env::clear_override("RLX_NUM_THREADS");
}

fn check_matmul(prec: Prec, ad: &[usize], bd: &[usize]) {
    let k = *ad.last().unwrap();
    let (pa, pb, rank) = padded(ad, bd);
    let mut out_dims: Vec<usize> = (0..rank).map(|i| pa[i].max(pb[i])).collect();
    if ad.len() > 1 {
        out_dims.push(pa[rank]);
    }
    if bd.len() > 1 {
        out_dims.push(pb[rank + 1]);
    }
    check(
        "matmul",
        prec,
        ad,
        bd,
        k,
        &|ins, out| matmul(ins, out),
        &|a, b| (out_dims.clone(), naive_matmul(a, ad, b, bd)),
    );
}

#[test]
fn matmul_f32_odd_and_large_shapes() {
    for (ad, bd) in [
        (vec![1, 1], vec![1, 1]),
        (vec![3, 5], vec![5, 7]),
        (vec![67, 129], vec![129, 33]),
        (vec![257, 300], vec![300, 513]), // above the threading grain
        (vec![1, 1000], vec![1000, 700]), // GEMV, split over threads
        (vec![1, 31], vec![31, 17]),      // GEMV tails
        (vec![1000], vec![1000, 9]),      // vector @ matrix
        (vec![45, 77], vec![77]),         // matrix @ vector
        (vec![16, 64, 64], vec![16, 64, 64]), // batches split over threads
        (vec![3, 1, 20, 30], vec![2, 30, 10]), // broadcast batch
        (vec![5, 40, 70], vec![70, 90]),  // rhs shared: one folded GEMM
        (vec![40, 70], vec![5, 70, 90]),  // lhs shared
        (vec![0, 4], vec![4, 3]),         // empty output
        (vec![2, 0], vec![0, 3]),         // empty contraction: zeros
    ] {
        check_matmul(Prec::F32, &ad, &bd);
    }
}

#[test]
fn matmul_f64_f16_bf16() {
    for (ad, bd) in [
        (vec![129, 257], vec![257, 65]),
        (vec![1, 300], vec![300, 200]),
        (vec![4, 9, 31], vec![4, 31, 5]),
    ] {
        check_matmul(Prec::F64, &ad, &bd);
        check_matmul(Prec::F16, &ad, &bd);
        check_matmul(Prec::Bf16, &ad, &bd);
    }
}

fn check_dot(prec: Prec, d: DotDims, ad: &[usize], bd: &[usize]) {
    let k: usize = d.lhs_contract.iter().map(|&i| ad[i]).product();
    check(
        "dot_general",
        prec,
        ad,
        bd,
        k,
        &|ins, out| dot_general(&d, ins, out),
        &|a, b| naive_dot_general(&d, a, ad, b, bd),
    );
}

fn dims(lb: &[usize], rb: &[usize], lc: &[usize], rc: &[usize]) -> DotDims {
    DotDims {
        lhs_batch: lb.to_vec(),
        rhs_batch: rb.to_vec(),
        lhs_contract: lc.to_vec(),
        rhs_contract: rc.to_vec(),
    }
}

#[test]
fn dot_general_strided_and_copied_layouts() {
    for prec in [Prec::F32, Prec::F64] {
        // x @ W.T (rhs read transposed), GEMV and GEMM sizes
        check_dot(prec, dims(&[], &[], &[1], &[1]), &[1, 513], &[301, 513]);
        check_dot(prec, dims(&[], &[], &[1], &[1]), &[70, 129], &[65, 129]);
        // A.T @ B (lhs transposed), as in weight gradients
        check_dot(prec, dims(&[], &[], &[0], &[0]), &[200, 33], &[200, 47]);
        // batch axis not leading: [m, b, k] x [b, k, n]
        check_dot(
            prec,
            dims(&[1], &[0], &[2], &[1]),
            &[11, 3, 17],
            &[3, 17, 6],
        );
        // two contracted axes that collapse, plus two free axes each side
        check_dot(
            prec,
            dims(&[0], &[0], &[2, 3], &[1, 2]),
            &[2, 5, 6, 7],
            &[2, 6, 7, 4],
        );
        // contracted axes in scattered order: copied first
        check_dot(
            prec,
            dims(&[], &[], &[3, 1], &[0, 1]),
            &[2, 3, 4, 5],
            &[5, 3, 6],
        );
        // attention-shaped: q k^T per (batch, head)
        check_dot(
            prec,
            dims(&[0, 1], &[0, 1], &[3], &[3]),
            &[2, 4, 33, 16],
            &[2, 4, 40, 16],
        );
    }
}

/// dot_general of an f32 operand with an f16 one into f32 (a cast the
/// executor folds into its readers, `widen_on_read`): the decode
/// attention layouts (scores over keys `[kv, n, k]`, values `[kv, k, n]`) at
/// 1 to 4 rows (the small-row kernels widening as they load, with column
/// and depth tails), more rows and one row (the f16 operand widened first),
/// and the f16 operand on the left; 1 and 2 threads. Each element within
/// f32 rounding of the f64 product of the values the operands hold, and
/// bit for bit the f32 product of the widened operand.
#[test]
fn dot_general_f32_with_f16_operand() {
    let scores = dims(&[0], &[0], &[2], &[2]);
    let values = dims(&[0], &[0], &[2], &[1]);
    let f16_lhs = dims(&[0], &[0], &[1], &[2]);
    let cases = [
        (&scores, [3, 3, 64], [3, 256, 64], Prec::F16),
        (&scores, [2, 4, 37], [2, 45, 37], Prec::F16),
        (&scores, [3, 2, 64], [3, 13, 64], Prec::F16),
        (&values, [3, 3, 256], [3, 256, 64], Prec::F16),
        (&values, [2, 4, 45], [2, 45, 37], Prec::F16),
        (&scores, [3, 1, 64], [3, 40, 64], Prec::F16),
        (&scores, [3, 24, 64], [3, 40, 64], Prec::F16),
        (&values, [3, 24, 40], [3, 40, 64], Prec::F16),
        // The f16 operand on the left: [kv, k, m] (contract 1) x [kv, n, k].
        (&f16_lhs, [2, 33, 3], [2, 20, 33], Prec::F32),
    ];
    for (d, ad, bd, b_prec) in cases {
        let a_prec = match b_prec {
            Prec::F16 => Prec::F32,
            _ => Prec::F16,
        };
        let (na, nb): (usize, usize) = (ad.iter().product(), bd.iter().product());
        let ((ab, av), (bb, bv)) = (a_prec.encode(&data(na, 3)), b_prec.encode(&data(nb, 4)));
        // The f32 operands of the same values: the product to match bit for bit.
        let ((ab32, _), (bb32, _)) = (Prec::F32.encode(&av), Prec::F32.encode(&bv));
        let (out_dims, want) = naive_dot_general(d, &av, &ad, &bv, &bd);
        let k: usize = d.lhs_contract.iter().map(|&i| ad[i]).product();
        let run = |a: &[u8], adt: DType, b: &[u8], bdt: DType| -> Vec<u8> {
            let (a64, b64) = (aligned(a), aligned(b));
            let olen = want.len() * 4;
            let mut o64 = vec![u64::MAX; olen.div_ceil(8)];
            let ins = [
                View {
                    dims: &ad,
                    dtype: adt,
                    bytes: &as_bytes(&a64)[..a.len()],
                },
                View {
                    dims: &bd,
                    dtype: bdt,
                    bytes: &as_bytes(&b64)[..b.len()],
                },
            ];
            let mut out = ViewMut {
                dims: &out_dims,
                dtype: DType::F32,
                bytes: &mut as_bytes_mut(&mut o64)[..olen],
            };
            dot_general(d, &ins, &mut out).unwrap();
            out.bytes.to_vec()
        };
        for threads in ["1", "2"] {
            rlx_ir::env::set("RLX_NUM_THREADS", threads);
            let mixed = run(&ab, a_prec.dtype(), &bb, b_prec.dtype());
            let exact = run(&ab32, DType::F32, &bb32, DType::F32);
            let what = format!("{ad:?} x {bd:?}, threads {threads}");
            assert_eq!(mixed, exact, "{what}: not the f32 product's bits");
            for (i, (g, &(w, abs))) in Prec::F32.decode(&mixed).iter().zip(&want).enumerate() {
                let tol = k as f64 * Prec::F32.eps() * abs + 1e-30;
                assert!((g - w).abs() <= tol, "{what} element {i}: {g} vs {w}");
            }
        }
        rlx_ir::env::clear_override("RLX_NUM_THREADS");
    }
}
