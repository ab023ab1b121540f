//! The host harness itself (`common::host_kernels`: the real `.cu`
//! sources compiled by g++ and run on the CPU): its 16-bit conversions
//! (the one piece of `common.cuh` it replaces, PTX `cvt` there) bit-exact
//! against the `half` crate over every f16 / bf16 pattern and the rounding
//! edge cases, a block reduction longer than a block against a plain sum,
//! and a launch whose arguments do not fit its kernel a typed error.

mod common;

use common::host_kernels::{host_kernels, HostKernels};
use rlx_cuda::step_launch::{KernelArg, KernelLaunch};

fn launch(hk: &HostKernels, module: &'static str, entry: &str, args: Vec<KernelArg>, n: usize) {
    let k = KernelLaunch {
        module,
        entry: entry.into(),
        args,
        grid: (n.div_ceil(256).max(1) as u32, 1, 1),
        block: (256, 1, 1),
    };
    hk.launch(&k).unwrap();
}

fn cast<I, O: Default + Clone>(hk: &HostKernels, entry: &str, x: &[I]) -> Vec<O> {
    let mut y = vec![O::default(); x.len()];
    let args = vec![
        KernelArg::Ptr(x.as_ptr() as u64),
        KernelArg::Ptr(y.as_mut_ptr() as u64),
        KernelArg::I64(x.len() as i64),
    ];
    launch(hk, "cast", entry, args, x.len());
    y
}

/// f32 values around every rounding edge of f16 and bf16.
fn edge_floats() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        65504.0,
        65519.99,
        65520.0,
        1e9,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE,
        5.960_464_5e-8, // the least f16 subnormal
        2.980_232_2e-8, // half of it: ties to zero
        2.980_233e-8,
        6.097_555e-5, // f16 subnormal / normal boundary
        3.4e38,
    ];
    // Every f16 value and the midpoints to its neighbours, both signs.
    for bits in 0u16..0x7c00 {
        let a = half::f16::from_bits(bits).to_f32();
        let b = half::f16::from_bits(bits + 1).to_f32();
        v.extend([a, (a + b) / 2.0, -a, -(a + b) / 2.0]);
    }
    // A spread of f32 patterns for bf16 (halfway points included).
    v.extend((0u32..20_000).map(|i| f32::from_bits(i.wrapping_mul(214_013) | 0x8000)));
    v.extend((0u32..20_000).map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761))));
    v.retain(|a| !a.is_nan());
    v
}

#[test]
fn f16_and_bf16_conversions_are_those_of_the_half_crate() {
    let Some(hk) = host_kernels() else { return };
    let x = edge_floats();
    let h: Vec<u16> = cast(hk, "rlx_cast_f32_f16", &x);
    let b: Vec<u16> = cast(hk, "rlx_cast_f32_bf16", &x);
    for (k, a) in x.iter().enumerate() {
        assert_eq!(h[k], half::f16::from_f32(*a).to_bits(), "f16 of {a:e}");
        assert_eq!(b[k], half::bf16::from_f32(*a).to_bits(), "bf16 of {a:e}");
    }
    let all: Vec<u16> = (0..=u16::MAX).collect();
    let hf: Vec<f32> = cast(hk, "rlx_cast_f16_f32", &all);
    let bf: Vec<f32> = cast(hk, "rlx_cast_bf16_f32", &all);
    for (k, bits) in all.iter().enumerate() {
        let (want_h, want_b) = (
            half::f16::from_bits(*bits).to_f32(),
            half::bf16::from_bits(*bits).to_f32(),
        );
        if want_h.is_nan() {
            assert!(hf[k].is_nan(), "f16 {bits:#06x}");
        } else {
            assert_eq!(hf[k].to_bits(), want_h.to_bits(), "f16 {bits:#06x}");
        }
        if want_b.is_nan() {
            assert!(bf[k].is_nan(), "bf16 {bits:#06x}");
        } else {
            assert_eq!(bf[k].to_bits(), want_b.to_bits(), "bf16 {bits:#06x}");
        }
    }
}

/// A row's expected reduction.
type RowFold = fn(&[f32]) -> f32;

#[test]
fn a_block_reduction_over_more_than_a_block_sums_every_element() {
    let Some(hk) = host_kernels() else { return };
    // Rows of 1000 integers: 256 threads each take several, then meet in
    // block_sum's shuffles and barriers; integer sums are exact in f32.
    let (rows, n) = (3usize, 1000usize);
    let x: Vec<f32> = (0..rows * n).map(|i| (i % 97) as f32 - 40.0).collect();
    let cases: [(i32, RowFold); 3] = [
        (0, |r: &[f32]| r.iter().sum::<f32>()),
        (2, |r: &[f32]| r.iter().copied().fold(f32::MIN, f32::max)),
        (3, |r: &[f32]| r.iter().copied().fold(f32::MAX, f32::min)),
    ];
    for (op, want) in cases {
        let mut y = vec![0f32; rows];
        let args = vec![
            KernelArg::Ptr(x.as_ptr() as u64),
            KernelArg::Ptr(y.as_mut_ptr() as u64),
            KernelArg::I64(rows as i64),
            KernelArg::I64(n as i64),
            KernelArg::I64(1),
            KernelArg::I32(op),
        ];
        let k = KernelLaunch {
            module: "reduce",
            entry: "rlx_reduce_f32".into(),
            args,
            grid: (rows as u32, 1, 1),
            block: (256, 1, 1),
        };
        hk.launch(&k).unwrap();
        for r in 0..rows {
            assert_eq!(y[r], want(&x[r * n..(r + 1) * n]), "op {op}, row {r}");
        }
    }
}

#[test]
fn arguments_that_do_not_fit_the_kernel_are_an_error() {
    let Some(hk) = host_kernels() else { return };
    let x = [1f32; 4];
    // rlx_unary_f32(const float*, float*, i64, int): one argument short,
    // then an f32 where the i64 goes.
    for args in [
        vec![KernelArg::Ptr(x.as_ptr() as u64); 2],
        vec![
            KernelArg::Ptr(x.as_ptr() as u64),
            KernelArg::Ptr(x.as_ptr() as u64),
            KernelArg::F32(4.0),
            KernelArg::I32(0),
        ],
    ] {
        let k = KernelLaunch {
            module: "elementwise",
            entry: "rlx_unary_f32".into(),
            args,
            grid: (1, 1, 1),
            block: (4, 1, 1),
        };
        let err = hk.launch(&k).unwrap_err();
        assert!(err.contains("do not match its parameters"), "{err}");
    }
    let k = KernelLaunch {
        module: "elementwise",
        entry: "rlx_no_such_kernel".into(),
        args: vec![],
        grid: (1, 1, 1),
        block: (1, 1, 1),
    };
    assert!(hk.launch(&k).unwrap_err().contains("no entry"));
}
