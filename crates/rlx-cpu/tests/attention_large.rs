//! The GEMM-based attention kernel on a size that splits heads over
//! threads (grouped-query heads, causal mask with more keys than queries),
//! at one and two threads, against a naive f64 loop written here.

use rlx_cpu::kernels::attention::attention;
use rlx_cpu::kernels::{f32_bytes, f32_bytes_mut, View, ViewMut};
use rlx_ir::op::{AttentionLayout, MaskKind};
use rlx_ir::DType;

fn data(len: usize, seed: u64) -> Vec<f32> {
    (0..len as u64)
        .map(|i| {
            let z = (i + 1).wrapping_mul(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
            ((z >> 33) % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

/// softmax(q kᵀ / sqrt(d), keys j <= i + sk - sq) v per head, heads grouped.
#[allow(clippy::too_many_arguments)]
fn naive(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    hq: usize,
    hkv: usize,
    sq: usize,
    sk: usize,
    d: usize,
) -> Vec<f64> {
    let mut out = vec![0.0; hq * sq * d];
    for h in 0..hq {
        let kh = h / (hq / hkv);
        for i in 0..sq {
            let last = i + sk - sq;
            let s: Vec<f64> = (0..=last)
                .map(|j| {
                    (0..d)
                        .map(|c| q[(h * sq + i) * d + c] as f64 * k[(kh * sk + j) * d + c] as f64)
                        .sum::<f64>()
                        / (d as f64).sqrt()
                })
                .collect();
            let max = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = s.iter().map(|x| (x - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            for c in 0..d {
                out[(h * sq + i) * d + c] = e
                    .iter()
                    .enumerate()
                    .map(|(j, p)| p / sum * v[(kh * sk + j) * d + c] as f64)
                    .sum::<f64>();
            }
        }
    }
    out
}

#[test]
fn causal_grouped_attention_matches_f64_loop() {
    let (b, hq, hkv, sq, sk, d) = (2, 4, 2, 70, 90, 40);
    let (qd, kd) = ([b, hq, sq, d], [b, hkv, sk, d]);
    let q = data(b * hq * sq * d, 1);
    let k = data(b * hkv * sk * d, 2);
    let v = data(b * hkv * sk * d, 3);
    let mut want = Vec::new();
    for bi in 0..b {
        let (qo, ko) = (bi * hq * sq * d, bi * hkv * sk * d);
        want.extend(naive(
            &q[qo..qo + hq * sq * d],
            &k[ko..ko + hkv * sk * d],
            &v[ko..ko + hkv * sk * d],
            hq,
            hkv,
            sq,
            sk,
            d,
        ));
    }
    for threads in ["1", "2"] {
        rlx_ir::env::set("RLX_NUM_THREADS", threads);
        let mut o = vec![f32::NAN; want.len()];
        let ins = [
            View {
                dims: &qd,
                dtype: DType::F32,
                bytes: f32_bytes(&q),
            },
            View {
                dims: &kd,
                dtype: DType::F32,
                bytes: f32_bytes(&k),
            },
            View {
                dims: &kd,
                dtype: DType::F32,
                bytes: f32_bytes(&v),
            },
        ];
        let mut out = ViewMut {
            dims: &qd,
            dtype: DType::F32,
            bytes: f32_bytes_mut(&mut o),
        };
        attention(
            MaskKind::Causal,
            None,
            None,
            AttentionLayout::HeadsMajor,
            &ins,
            &mut out,
        )
        .unwrap();
        for (i, (&g, &w)) in o.iter().zip(&want).enumerate() {
            assert!(
                (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "threads {threads} [{i}]: {g} vs {w}"
            );
        }
    }
    rlx_ir::env::clear_override("RLX_NUM_THREADS");
}
