//! The content of tests/fixtures/rust_written.gguf: built by our writer,
//! checked against gguf-py by tools/check_gguf_roundtrip.py (which spells out
//! the same values), and re-built by tests/writer.rs to keep the committed
//! file in step with the writer.

use rlx_gguf::{codecs, Array, GgmlType, GgufWriter, Value, ValueType};
use rlx_ir::{bf16, f16, HostTensor};

/// `((i * 37) % 101 - 50) / 16`: exact in f32, f16 and bf16, so Python can
/// recompute it bit for bit.
pub fn source_values(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 37) % 101) as f32 / 16.0 - 50.0 / 16.0)
        .collect()
}

/// Every type we quantize that gguf-py can also read (gguf-py's Q8_1 block
/// size is stale, so Q8_1 is left out).
pub fn quantized_types() -> Vec<GgmlType> {
    GgmlType::ALL
        .into_iter()
        .filter(|t| t.is_quantized() && codecs::can_quantize(*t) && *t != GgmlType::Q8_1)
        .collect()
}

pub fn build() -> GgufWriter {
    let mut w = GgufWriter::new();
    let s = |x: &str| Value::String(x.into());
    let a = |t: ValueType, v: Vec<Value>| Value::Array(Array::new(t, v).unwrap());
    w.add_metadata("general.architecture", "rlx-test").unwrap();
    w.set_alignment(128).unwrap();
    let kv: Vec<(&str, Value)> = vec![
        ("r.u8", Value::U8(250)),
        ("r.i8", Value::I8(-7)),
        ("r.u16", Value::U16(65535)),
        ("r.i16", Value::I16(-1234)),
        ("r.u32", Value::U32(123_456_789)),
        ("r.i32", Value::I32(-123_456_789)),
        ("r.f32", Value::F32(-0.375)),
        ("r.bool", Value::Bool(true)),
        ("r.string", s("RLX \u{2192} gguf \u{1f980}")),
        ("r.u64", Value::U64(1 << 60)),
        ("r.i64", Value::I64(-(1 << 60))),
        ("r.f64", Value::F64(std::f64::consts::PI)),
        (
            "r.arr.u8",
            a(ValueType::U8, vec![Value::U8(1), Value::U8(2)]),
        ),
        (
            "r.arr.i16",
            a(ValueType::I16, vec![Value::I16(-3), Value::I16(4)]),
        ),
        ("r.arr.u32", a(ValueType::U32, vec![])),
        ("r.arr.i64", a(ValueType::I64, vec![Value::I64(i64::MAX)])),
        (
            "r.arr.f32",
            a(ValueType::F32, vec![Value::F32(0.25), Value::F32(-8.0)]),
        ),
        ("r.arr.f64", a(ValueType::F64, vec![Value::F64(1e-10)])),
        (
            "r.arr.bool",
            a(ValueType::Bool, vec![Value::Bool(false), Value::Bool(true)]),
        ),
        (
            "r.arr.str",
            a(ValueType::String, vec![s("<s>"), s(""), s("\u{e9}")]),
        ),
        (
            "r.nested",
            a(
                ValueType::Array,
                vec![
                    a(ValueType::String, vec![s("a"), s("b")]),
                    a(ValueType::I32, vec![Value::I32(-1)]),
                    a(
                        ValueType::Array,
                        vec![a(ValueType::F64, vec![Value::F64(2.5)])],
                    ),
                ],
            ),
        ),
    ];
    for (k, v) in kv {
        w.add_metadata(k, v).unwrap();
    }
    let x = source_values(4 * 64);
    let t = |v: HostTensor| v;
    w.add_host_tensor(
        "plain.f32",
        &t(HostTensor::from_vec(x.clone(), &[4, 64]).unwrap()),
    )
    .unwrap();
    let h: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
    w.add_host_tensor("plain.f16", &HostTensor::from_vec(h, &[4, 64]).unwrap())
        .unwrap();
    let b: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
    w.add_host_tensor("plain.bf16", &HostTensor::from_vec(b, &[2, 2, 64]).unwrap())
        .unwrap();
    let d: Vec<f64> = x[..6].iter().map(|&v| f64::from(v)).collect();
    w.add_host_tensor("plain.f64", &HostTensor::from_vec(d, &[2, 3]).unwrap())
        .unwrap();
    let i8s: Vec<i8> = (0..10).map(|i| (i * 29 % 256 - 128) as i8).collect();
    w.add_host_tensor("plain.i8", &HostTensor::from_vec(i8s, &[10]).unwrap())
        .unwrap();
    let i16s: Vec<i16> = (0..6).map(|i| (i * 9001 - 20000) as i16).collect();
    w.add_host_tensor("plain.i16", &HostTensor::from_vec(i16s, &[3, 2]).unwrap())
        .unwrap();
    let i32s: Vec<i32> = vec![i32::MIN, -1, 0, 1, i32::MAX];
    w.add_host_tensor("plain.i32", &HostTensor::from_vec(i32s, &[5]).unwrap())
        .unwrap();
    let i64s: Vec<i64> = vec![i64::MIN, 42, i64::MAX];
    w.add_host_tensor("plain.i64", &HostTensor::from_vec(i64s, &[1, 3]).unwrap())
        .unwrap();
    let xq = source_values(2 * 256);
    for ty in quantized_types() {
        w.add_quantized(&format!("q.{ty}"), &[2, 256], &xq, ty)
            .unwrap();
        let bytes = codecs::quantize(ty, &xq).unwrap();
        let dq = codecs::dequantize(ty, &bytes, xq.len()).unwrap();
        w.add_host_tensor(
            &format!("dq.{ty}"),
            &HostTensor::from_vec(dq, &[2, 256]).unwrap(),
        )
        .unwrap();
    }
    w
}
