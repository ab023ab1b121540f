//! Runs the native quantized matmul on every 2-d weight of a GGUF file
//! whose format it supports, against `dequant(W) · dequant(q8(x))` and
//! `dequant(W) · x` in f64 (rlx-gguf's codecs), and prints the worst errors
//! relative to each output's L1 magnitude.
//!
//!     cargo run --release -p rlx-cpu --example gguf_qmatmul_check -- model.gguf [M]

use rlx_cpu::kernels::quant_matmul::{QuantIsa, QuantMatMul};
use rlx_gguf::{codecs, GgmlType, GgufReader};
use rlx_ir::DType;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .expect("usage: gguf_qmatmul_check FILE.gguf [M]");
    let m: usize = args.get(2).map_or(3, |v| v.parse().expect("M"));
    let r = GgufReader::open(path).unwrap();
    let (mut worst_ggml, mut worst_plain, mut checked) = (0f64, 0f64, 0);
    for t in r.tensors() {
        let Some(scheme) = t.ggml_type().quant_scheme() else {
            continue;
        };
        // GGUF dims are ne[0] (K, contiguous) first.
        let (k, n) = match t.dims() {
            [k, n] => (*k as usize, *n as usize),
            _ => continue,
        };
        let mm = QuantMatMul {
            scheme: Some(scheme),
            w_dtype: DType::U8,
            n,
            k,
        };
        let w = r.tensor_data(t.name()).unwrap();
        let x: Vec<f32> = (0..m * k)
            .map(|i| ((i * 2654435761) % 2001) as f32 / 1000.0 - 1.0)
            .collect();
        let mut y = vec![0f32; m * n];
        if mm.run(QuantIsa::best(), 2, w, &x, &mut y).is_err() {
            continue; // a format without a native kernel
        }
        let ty = GgmlType::from(scheme);
        let wd = codecs::dequantize(ty, w, n * k).unwrap();
        let act = match scheme.name() {
            "Q4_1" | "Q5_1" => GgmlType::Q8_1,
            "Q4_0" | "Q5_0" | "Q8_0" => GgmlType::Q8_0,
            _ => GgmlType::Q8_K,
        };
        let xb = codecs::quantize(act, &x).unwrap();
        let xq = codecs::dequantize(act, &xb, m * k).unwrap();
        let f16 = |b: &[u8]| f64::from(rlx_ir::f16::from_le_bytes([b[0], b[1]]).to_f32());
        for i in 0..m {
            for j in 0..n {
                let (mut yq, mut yp, mut l1) = (0f64, 0f64, 0f64);
                for c in 0..k {
                    let wv = f64::from(wd[j * k + c]);
                    yq += wv * f64::from(xq[i * k + c]);
                    yp += wv * f64::from(x[i * k + c]);
                    l1 += (wv * f64::from(x[i * k + c])).abs();
                }
                if act == GgmlType::Q8_1 {
                    // ggml's `m_w * s_x` uses Q8_1's stored f16 `s`, not d * sum(q).
                    let bw = ty.type_size();
                    for b in 0..k / 32 {
                        let mw = f16(&w[(j * k / 32 + b) * bw + 2..]);
                        let s = f16(&xb[(i * k / 32 + b) * 36 + 2..]);
                        let dsum: f64 = xq[i * k + b * 32..i * k + b * 32 + 32]
                            .iter()
                            .map(|&v| f64::from(v))
                            .sum();
                        yq += mw * (s - dsum);
                    }
                }
                let got = f64::from(y[i * n + j]);
                worst_ggml = worst_ggml.max((got - yq).abs() / l1);
                worst_plain = worst_plain.max((got - yp).abs() / l1);
            }
        }
        checked += 1;
    }
    println!(
        "{checked} weights, M = {m}: worst |y - W·q8(x)| / L1 = {worst_ggml:.2e}, worst |y - W·x| / L1 = {worst_plain:.2e}"
    );
}
