//! The native quantized matmul against ggml's math.
//!
//! - `numpy_fixtures_*`: tools/gen_qmatmul_fixtures.py computes ggml's
//!   result (gguf-py dequantization, ggml's Q8 activation quantizers and
//!   vec_dot formula in numpy, f64) for every supported weight type and
//!   M = 1, 3, 7, odd N, K of several blocks; every instruction set this
//!   CPU runs, single- and multi-threaded, must match it to 1e-5 of the
//!   row's L1 magnitude `sum |W_i x_i|`.
//! - Against the unquantized product `dequant(W) · x` the tolerance is the
//!   activation rounding: Q8 quantization moves each `x_i` by at most half a
//!   step, `amax(block) / 254`, plus f16 rounding of the block scale
//!   (`amax / 2048`), so `|y - W·x| <= sum_i (|W_i| + |m_b|) * amax_b / 200`
//!   (`m_b`: Q4_1 / Q5_1's block min, whose `m * s` term carries Q8_1's
//!   f16 `s`).
//! - `rust_reference_*`: more shapes with weights quantized by rlx-gguf
//!   from smooth data, against `dequant(W) · dequant(q8(x))` in f64 built
//!   from rlx-gguf's codecs (themselves bit-identical to gguf-py / ggml).

#![allow(clippy::needless_range_loop)]

use rlx_cpu::kernels::quant_matmul::{QuantIsa, QuantMatMul};
use rlx_gguf::{codecs, GgmlType};
use rlx_ir::quant::QuantScheme;
use rlx_ir::DType;
use std::path::PathBuf;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qmatmul")
}

fn f64s(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The matmul problem of a ggml type name.
fn problem(ty: &str, n: usize, k: usize) -> QuantMatMul {
    let (scheme, w_dtype) = match ty {
        "F32" => (None, DType::F32),
        "F16" => (None, DType::F16),
        "BF16" => (None, DType::BF16),
        name => (Some(QuantScheme::from_name(name).unwrap()), DType::U8),
    };
    QuantMatMul {
        scheme,
        w_dtype,
        n,
        k,
    }
}

struct Case {
    ty: String,
    m: usize,
    n: usize,
    k: usize,
    x: Vec<f32>,
    w: Vec<u8>,
    y_ggml: Vec<f64>,
    y_plain: Vec<f64>,
    l1: Vec<f64>,
}

fn cases() -> Vec<Case> {
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture_dir().join("index.json")).unwrap())
            .unwrap();
    let mut out = Vec::new();
    for e in index.as_array().unwrap() {
        let get = |k: &str| e[k].as_u64().unwrap() as usize;
        let (m, n, k, wb) = (get("m"), get("n"), get("k"), get("w_bytes"));
        let bytes = std::fs::read(fixture_dir().join(e["file"].as_str().unwrap())).unwrap();
        let xb = m * k * 4;
        let mn = m * n * 8;
        assert_eq!(bytes.len(), xb + wb + 3 * mn);
        let x = bytes[..xb]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let r = &bytes[xb + wb..];
        out.push(Case {
            ty: e["type"].as_str().unwrap().to_string(),
            m,
            n,
            k,
            x,
            w: bytes[xb..xb + wb].to_vec(),
            y_ggml: f64s(&r[..mn]),
            y_plain: f64s(&r[mn..2 * mn]),
            l1: f64s(&r[2 * mn..]),
        });
    }
    out
}

fn run(mm: &QuantMatMul, isa: QuantIsa, threads: usize, w: &[u8], x: &[f32]) -> Vec<f32> {
    let mut y = vec![f32::NAN; x.len() / mm.k * mm.n];
    mm.run(isa, threads, w, x, &mut y).unwrap();
    y
}

#[test]
fn numpy_fixtures_match_ggml_math_on_every_isa_and_thread_count() {
    let cases = cases();
    assert_eq!(cases.len(), 42, "14 weight types x 3 shapes");
    let isas = QuantIsa::available();
    eprintln!("instruction sets: {isas:?}");
    for c in &cases {
        let mm = problem(&c.ty, c.n, c.k);
        let single = run(&mm, QuantIsa::Scalar, 1, &c.w, &c.x);
        for &isa in &isas {
            for threads in [1, 3] {
                // Force threading on these small problems.
                let y = run(&mm, isa, threads, &c.w, &c.x);
                for i in 0..c.m * c.n {
                    let err = (f64::from(y[i]) - c.y_ggml[i]).abs();
                    assert!(
                        err <= 1e-5 * c.l1[i] + 1e-30,
                        "{} {}x{}x{} {isa:?} t={threads} out {i}: {} vs ggml {} (err {err:e}, l1 {})",
                        c.ty, c.m, c.n, c.k, y[i], c.y_ggml[i], c.l1[i]
                    );
                }
                if isa == QuantIsa::Scalar {
                    assert_eq!(y, single, "threads change no value");
                }
                // SIMD and scalar integer sums are exact; only the float
                // accumulation order differs.
                for i in 0..c.m * c.n {
                    let err = (f64::from(y[i]) - f64::from(single[i])).abs();
                    assert!(
                        err <= 1e-6 * c.l1[i],
                        "{} {isa:?} vs scalar, out {i}: {} vs {}",
                        c.ty,
                        y[i],
                        single[i]
                    );
                }
            }
        }
    }
}

/// Weight rows of the seven plane formats are dotted straight from their
/// block bytes for any number of activation rows (tiles of 4 rows), and
/// every instruction set forms the same lanes in the same order as the
/// portable path: identical bits, at M = 1, 3 (GEMV) and 7 (GEMM).
#[test]
fn gemv_plane_kernels_are_bit_identical_to_scalar() {
    let plane = ["Q4_0", "Q4_1", "Q5_0", "Q8_0", "Q4_K", "Q5_K", "Q6_K"];
    let mut checked = 0;
    for c in cases().iter().filter(|c| plane.contains(&c.ty.as_str())) {
        let mm = problem(&c.ty, c.n, c.k);
        let scalar = run(&mm, QuantIsa::Scalar, 1, &c.w, &c.x);
        for isa in QuantIsa::available() {
            let scheme = mm.scheme.expect("a block format");
            if runs_gemm16(isa, scheme, c.m) {
                continue; // (the panel test below holds it)
            }
            let y = run(&mm, isa, 2, &c.w, &c.x);
            let same = y
                .iter()
                .zip(&scalar)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(
                same,
                "{} {}x{}x{} {isa:?}: {y:?} vs scalar {scalar:?}",
                c.ty, c.m, c.n, c.k
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 21, "7 types x M = 1, 3, 7");
}

/// Whether `gemm16` / `gemm16k` (ggml's per-block sums, not the lane-wise
/// bits) run the product: AVX-512 VNNI, and for the 32-weight formats more
/// than `gemv512::MAX_ROWS` = 32 activation rows, for the K-quants at
/// least `gemm16k::MIN_ROWS` = 4.
fn runs_gemm16(isa: QuantIsa, scheme: QuantScheme, m: usize) -> bool {
    let rows = if scheme.block_size() == 32 {
        m > 32
    } else {
        m >= 4
    };
    isa == QuantIsa::Avx512Vnni && rows
}

/// The prefill GEMM (activation rows in tiles of 4, weight blocks unpacked
/// once per tile) at M = 2, 5, 16, 33 (whole tiles and every remainder): on
/// every instruction set and thread count it matches the f64 reference
/// `dequant(W) · dequant(q8(x))` to 1e-5 of the L1 magnitude, is the same
/// bits as the portable path, and each row is the same bits as that row
/// run alone (M = 1, the decode GEMV): tiling changes no value. (Where
/// `gemm16` runs, only the reference bound applies here; the panel test
/// below holds its other checks.)
#[test]
fn prefill_gemm_tiles_are_bit_identical_to_scalar_and_to_single_rows() {
    use QuantScheme::*;
    let schemes = [
        GgufQ4_0, GgufQ4_1, GgufQ5_0, GgufQ8_0, GgufQ4K, GgufQ5K, GgufQ6K,
    ];
    for (si, &scheme) in schemes.iter().enumerate() {
        let (n, k) = (7, 512);
        let wf = values(n * k, 300 + si as u64, 2.0);
        let w = codecs::quantize(GgmlType::from(scheme), &wf).unwrap();
        let mm = problem(scheme.name(), n, k);
        for m in [2, 5, 16, 33] {
            let x = values(m * k, 40 + m as u64, 3.0);
            let (want, l1) = rust_reference(scheme, &w, &x, n, k);
            let scalar = run(&mm, QuantIsa::Scalar, 1, &w, &x);
            for isa in QuantIsa::available() {
                for threads in [1, 3] {
                    let y = run(&mm, isa, threads, &w, &x);
                    for o in 0..m * n {
                        let err = (f64::from(y[o]) - want[o]).abs();
                        assert!(
                            err <= 1e-5 * l1[o],
                            "{scheme} M={m} {isa:?} t={threads} out {o}: {} vs {} (err {err:e})",
                            y[o],
                            want[o]
                        );
                        if !runs_gemm16(isa, scheme, m) {
                            assert_eq!(
                                y[o].to_bits(),
                                scalar[o].to_bits(),
                                "{scheme} M={m} {isa:?} t={threads} out {o} vs scalar"
                            );
                        }
                    }
                }
                if runs_gemm16(isa, scheme, m) {
                    continue;
                }
                let tiled = run(&mm, isa, 1, &w, &x);
                for i in 0..m {
                    let alone = run(&mm, isa, 1, &w, &x[i * k..(i + 1) * k]);
                    assert_eq!(
                        alone.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        tiled[i * n..(i + 1) * n]
                            .iter()
                            .map(|v| v.to_bits())
                            .collect::<Vec<_>>(),
                        "{scheme} M={m} {isa:?} row {i} alone vs in a tile"
                    );
                }
            }
        }
    }
}

/// The 512-bit GEMMs of several activation rows on AVX-512 VNNI (Q4_0 /
/// Q4_1 / Q5_0 / Q8_0: `gemv512`'s tiles of 4 / 2 / 1 rows up to 32 rows,
/// `gemm16.rs` above; K-quants: `gemm16k.rs` from 4 rows) against the same
/// checks: an odd block count (a trailing block in a pair's low half), odd
/// weight-row counts (a single-row tile; panels of 16 rows with a masked
/// tail), token remainders after whole tiles, every thread split (and
/// several parts a thread where there are rows enough); each value within
/// 1e-5 of the L1 magnitude of the f64 reference, and
/// - the lane-wise kernels: the portable path's bits and the single-row
///   GEMV's bits;
/// - `gemm16` / `gemm16k` (ggml's per-block sums, 16 weight rows in the
///   lanes): within 1e-6 of the L1 magnitude of the portable path, and the
///   same bits for every thread split.
#[test]
fn panel_gemm_matches_scalar_and_single_rows() {
    use QuantScheme::*;
    // 301 / 260 weight rows: several parts per thread, of uneven sizes.
    let legacy = [(5, 288), (6, 576), (3, 32), (301, 64)];
    // K-quants: one, two (a whole pair), three (a half pair) and six blocks.
    let k_shapes = [(5, 256), (6, 512), (3, 768), (4, 1536), (260, 256)];
    let schemes = [
        GgufQ4_0, GgufQ4_1, GgufQ5_0, GgufQ8_0, GgufQ4K, GgufQ5K, GgufQ6K,
    ];
    for (si, &scheme) in schemes.iter().enumerate() {
        let shapes = if scheme.block_size() == 256 {
            &k_shapes[..]
        } else {
            &legacy[..]
        };
        for &(n, k) in shapes {
            let wf = values(n * k, 500 + si as u64, 2.0);
            let w = codecs::quantize(GgmlType::from(scheme), &wf).unwrap();
            let mm = problem(scheme.name(), n, k);
            for m in [2, 3, 4, 8, 13, 23, 32, 33, 45, 130] {
                let x = values(m * k, 60 + m as u64, 3.0);
                let (want, l1) = rust_reference(scheme, &w, &x, n, k);
                let scalar = run(&mm, QuantIsa::Scalar, 1, &w, &x);
                for isa in QuantIsa::available() {
                    let per_block = runs_gemm16(isa, scheme, m);
                    let first = run(&mm, isa, 1, &w, &x);
                    for threads in [1, 2, 3] {
                        let y = run(&mm, isa, threads, &w, &x);
                        for o in 0..m * n {
                            let err = (f64::from(y[o]) - want[o]).abs();
                            assert!(
                                err <= 1e-5 * l1[o],
                                "{scheme} {m}x{n}x{k} {isa:?} t={threads} out {o}: {} vs {} (err {err:e})",
                                y[o],
                                want[o]
                            );
                            if per_block {
                                let off = (f64::from(y[o]) - f64::from(scalar[o])).abs();
                                assert!(
                                    off <= 1e-6 * l1[o],
                                    "{scheme} {m}x{n}x{k} t={threads} out {o}: {} vs scalar {} (l1 {})",
                                    y[o],
                                    scalar[o],
                                    l1[o]
                                );
                                assert_eq!(
                                    y[o].to_bits(),
                                    first[o].to_bits(),
                                    "{scheme} {m}x{n}x{k} out {o}: t={threads} vs 1 thread"
                                );
                            } else {
                                assert_eq!(
                                    y[o].to_bits(),
                                    scalar[o].to_bits(),
                                    "{scheme} {m}x{n}x{k} {isa:?} t={threads} out {o} vs scalar"
                                );
                            }
                        }
                    }
                    if per_block {
                        continue;
                    }
                    let tiled = run(&mm, isa, 1, &w, &x);
                    for i in 0..m {
                        let alone = run(&mm, isa, 1, &w, &x[i * k..(i + 1) * k]);
                        for j in 0..n {
                            assert_eq!(
                                alone[j].to_bits(),
                                tiled[i * n + j].to_bits(),
                                "{scheme} {m}x{n}x{k} {isa:?} row {i} out {j} alone vs in a panel tile"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Decode's GEMV (one activation row; on AVX-512 VNNI `gemv512.rs` for
/// Q4_0 / Q4_1 / Q5_0 / Q8_0: two blocks a 512-bit step, two weight rows at
/// once): block counts 1-48 (a trailing odd block, rows of one pair), weight
/// row counts 1-7 (a single row after the pairs), 1-3 threads (parts of odd
/// length); each value the portable path's bits and within 1e-5 of the L1
/// magnitude of the f64 reference.
#[test]
fn decode_gemv_is_bit_identical_to_scalar() {
    use QuantScheme::*;
    let schemes = [
        GgufQ4_0, GgufQ4_1, GgufQ5_0, GgufQ8_0, GgufQ4K, GgufQ5K, GgufQ6K,
    ];
    for (si, &scheme) in schemes.iter().enumerate() {
        let blocks: &[usize] = if scheme.block_size() == 256 {
            &[1, 2, 3, 6]
        } else {
            &[1, 2, 3, 5, 18, 48]
        };
        for &nb in blocks {
            let k = nb * scheme.block_size();
            for n in [1, 2, 3, 7] {
                let wf = values(n * k, 900 + si as u64 + n as u64, 2.0);
                let w = codecs::quantize(GgmlType::from(scheme), &wf).unwrap();
                let x = values(k, 70 + nb as u64, 3.0);
                let (want, l1) = rust_reference(scheme, &w, &x, n, k);
                let mm = problem(scheme.name(), n, k);
                let scalar = run(&mm, QuantIsa::Scalar, 1, &w, &x);
                for isa in QuantIsa::available() {
                    for threads in [1, 2, 3] {
                        let y = run(&mm, isa, threads, &w, &x);
                        for o in 0..n {
                            let err = (f64::from(y[o]) - want[o]).abs();
                            assert!(
                                err <= 1e-5 * l1[o],
                                "{scheme} 1x{n}x{k} {isa:?} t={threads} out {o}: {} vs {} (err {err:e})",
                                y[o],
                                want[o]
                            );
                            assert_eq!(
                                y[o].to_bits(),
                                scalar[o].to_bits(),
                                "{scheme} 1x{n}x{k} {isa:?} t={threads} out {o} vs scalar"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// `(|W_i| + |m_b|) * amax_b / 200` summed over a row (see the module docs).
fn activation_rounding_bound(c: &Case, wd: &[f32], mins: &[f32], i: usize, j: usize) -> f64 {
    let k = c.k;
    let block = match c.ty.as_str() {
        "F32" | "F16" | "BF16" => return 1e-6 * c.l1[i * c.n + j],
        t if t.ends_with("_K") => 256,
        _ => 32,
    };
    let xr = &c.x[i * k..(i + 1) * k];
    let mut bound = 0f64;
    for (b, xb) in xr.chunks(block).enumerate() {
        let amax = xb.iter().fold(0f32, |a, v| a.max(v.abs())) as f64;
        let wsum: f64 = wd[j * k + b * block..j * k + (b + 1) * block]
            .iter()
            .map(|v| f64::from(v.abs()))
            .sum();
        let m = mins
            .get(j * (k / block) + b)
            .map_or(0.0, |v| f64::from(v.abs()));
        bound += (wsum + m * block as f64) * amax / 200.0;
    }
    bound
}

#[test]
fn numpy_fixtures_are_close_to_the_unquantized_product() {
    for c in cases() {
        let mm = problem(&c.ty, c.n, c.k);
        let y = run(&mm, QuantIsa::best(), 1, &c.w, &c.x);
        let ty = GgmlType::from_name(&c.ty).unwrap();
        let wd = codecs::dequantize(ty, &c.w, c.n * c.k).unwrap();
        let mins: Vec<f32> = if matches!(c.ty.as_str(), "Q4_1" | "Q5_1") {
            let bb = ty.type_size();
            c.w.chunks_exact(bb)
                .map(|b| half::f16::from_le_bytes([b[2], b[3]]).to_f32())
                .collect()
        } else {
            vec![]
        };
        for i in 0..c.m {
            for j in 0..c.n {
                let o = i * c.n + j;
                let err = (f64::from(y[o]) - c.y_plain[o]).abs();
                let bound = activation_rounding_bound(&c, &wd, &mins, i, j);
                assert!(
                    err <= bound,
                    "{} {}x{}x{} out {o}: {} vs W·x {} (err {err:e} > bound {bound:e})",
                    c.ty,
                    c.m,
                    c.n,
                    c.k,
                    y[o],
                    c.y_plain[o]
                );
            }
        }
    }
}

/// `dequant(W) · dequant(q8(x))` in f64 from rlx-gguf's codecs (ggml's
/// `m * s` for Q4_1 / Q5_1), and the row L1 magnitudes.
fn rust_reference(
    scheme: QuantScheme,
    w: &[u8],
    x: &[f32],
    n: usize,
    k: usize,
) -> (Vec<f64>, Vec<f64>) {
    let ty = GgmlType::from(scheme);
    let wd = codecs::dequantize(ty, w, n * k).unwrap();
    let (act, legacy_min) = match scheme {
        QuantScheme::GgufQ4_1 | QuantScheme::GgufQ5_1 => (GgmlType::Q8_1, true),
        QuantScheme::GgufQ4_0 | QuantScheme::GgufQ5_0 | QuantScheme::GgufQ8_0 => {
            (GgmlType::Q8_0, false)
        }
        _ => (GgmlType::Q8_K, false),
    };
    let xq = codecs::quantize(act, x).unwrap();
    let xd = codecs::dequantize(act, &xq, x.len()).unwrap();
    let m = x.len() / k;
    let (mut y, mut l1) = (vec![0f64; m * n], vec![0f64; m * n]);
    for i in 0..m {
        for j in 0..n {
            let (wr, xr) = (&wd[j * k..(j + 1) * k], &xd[i * k..(i + 1) * k]);
            let mut acc = 0f64;
            for b in 0..k / 32 {
                let mut part: f64 = (b * 32..(b + 1) * 32)
                    .map(|t| f64::from(wr[t]) * f64::from(xr[t]))
                    .sum();
                if legacy_min {
                    // ggml: d_w*d_x*sumi + m_w*s_x, with Q8_1's stored f16 s.
                    let wb = &w[(j * (k / 32) + b) * ty.type_size()..];
                    let mw = f64::from(half::f16::from_le_bytes([wb[2], wb[3]]).to_f32());
                    let xb = &xq[(i * (k / 32) + b) * 36..];
                    let s = f64::from(half::f16::from_le_bytes([xb[2], xb[3]]).to_f32());
                    let dxsum: f64 = xr[b * 32..(b + 1) * 32].iter().map(|&v| f64::from(v)).sum();
                    part += mw * (s - dxsum);
                }
                acc += part;
            }
            y[i * n + j] = acc;
            l1[i * n + j] = wr
                .iter()
                .zip(xr)
                .map(|(a, b)| f64::from((a * b).abs()))
                .sum();
        }
    }
    (y, l1)
}

/// Smooth pseudo-random values: a sine plus xorshift noise (no rand dependency).
fn values(len: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed | 1;
    let mut noise = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    (0..len)
        .map(|i| scale * (noise() + 0.3 * (i as f32 * 0.37).sin()))
        .collect()
}

#[test]
fn rust_reference_odd_shapes_every_scheme_every_isa() {
    use QuantScheme::*;
    let schemes = [
        GgufQ4_0, GgufQ4_1, GgufQ5_0, GgufQ5_1, GgufQ8_0, GgufQ2K, GgufQ3K, GgufQ4K, GgufQ5K,
        GgufQ6K, GgufQ8K,
    ];
    for (si, &scheme) in schemes.iter().enumerate() {
        for (m, n, blocks) in [(1, 1, 1), (3, 9, 2), (7, 5, 3)] {
            let k = 256 * blocks;
            let wf = values(n * k, 100 + si as u64, 2.0);
            let w = codecs::quantize(GgmlType::from(scheme), &wf).unwrap();
            let x = values(m * k, 7 + si as u64, 3.0);
            let (want, l1) = rust_reference(scheme, &w, &x, n, k);
            let mm = problem(scheme.name(), n, k);
            for isa in QuantIsa::available() {
                let y = run(&mm, isa, 2, &w, &x);
                for o in 0..m * n {
                    let err = (f64::from(y[o]) - want[o]).abs();
                    assert!(
                        err <= 1e-5 * l1[o],
                        "{scheme} {m}x{n}x{k} {isa:?} out {o}: {} vs {} (err {err:e}, l1 {})",
                        y[o],
                        want[o],
                        l1[o]
                    );
                }
            }
        }
    }
}

#[test]
fn bad_problems_are_named_errors() {
    let x = vec![0f32; 256];
    let mut y = vec![0f32; 2];
    let mm = problem("Q4_K", 2, 256);
    let e = mm
        .run(QuantIsa::Scalar, 1, &[0u8; 100], &x, &mut y)
        .unwrap_err()
        .to_string();
    assert!(e.contains("given 100 bytes") && e.contains("288"), "{e}");
    let e = problem("Q4_K", 2, 200)
        .run(QuantIsa::Scalar, 1, &[0u8; 288], &x[..200], &mut y)
        .unwrap_err()
        .to_string();
    assert!(e.contains("block size 256"), "{e}");
    let e = problem("IQ2_XXS", 2, 256)
        .run(QuantIsa::Scalar, 1, &[0u8; 132], &x, &mut y)
        .unwrap_err()
        .to_string();
    assert!(e.contains("IQ2_XXS"), "{e}");
    let e = mm
        .run(QuantIsa::Scalar, 1, &[0u8; 288], &x[..255], &mut y)
        .unwrap_err()
        .to_string();
    assert!(e.contains("K = 256"), "{e}");
}
