//! The storage dtypes (U16, U64, the 8-bit floats) against files and
//! conversions written by torch + the python `safetensors` package
//! (tools/gen_safetensors_dtype_fixtures.py): every stored value read back
//! exactly (as f32, f16, bf16), f32 / f64 rounded to each format bit for
//! bit as torch rounds, the CPU `Cast` both ways, torch's files written
//! back byte for byte, and the sub-byte floats refused by name.

use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use rlx_runtime::weights::convert_dtype;
use rlx_runtime::{
    save_safetensors, serialize_safetensors, BytesWeightLoader, Session, WeightError, WeightLoader,
};
use serde_json::Value;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/safetensors")
        .join(name)
}

fn expected() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(fixture("storage_dtypes.json")).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_object()
        .unwrap()
        .clone()
}

fn ints(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

fn dtype_of(st: &str) -> DType {
    match st {
        "U16" => DType::U16,
        "U64" => DType::U64,
        "F8_E4M3" => DType::F8E4M3,
        "F8_E5M2" => DType::F8E5M2,
        "F8_E8M0" => DType::F8E8M0,
        "F8_E4M3FNUZ" => DType::F8E4M3Fnuz,
        "F8_E5M2FNUZ" => DType::F8E5M2Fnuz,
        d => panic!("unexpected dtype {d}"),
    }
}

/// f32 values equal torch's bit patterns; a NaN matches any NaN.
fn same_f32(got: &[f32], want_bits: &[u64], what: &str) {
    assert_eq!(got.len(), want_bits.len(), "{what}");
    for (i, (g, &w)) in got.iter().zip(want_bits).enumerate() {
        let w = f32::from_bits(w as u32);
        assert!(
            g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
            "{what}[{i}]: {g} ({:#x}) vs torch {w} ({:#x})",
            g.to_bits(),
            w.to_bits()
        );
    }
}

/// 16-bit float bit patterns equal torch's; NaN (exponent all ones,
/// mantissa non-zero; `exp_mask` / `man_mask` of the format) matches any NaN.
fn same_bits16(got: &[u16], want: &[u64], exp: u16, man: u16, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    let nan = |b: u16| b & exp == exp && b & man != 0;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let w = w as u16;
        assert!(
            g == w || (nan(g) && nan(w)),
            "{what}[{i}]: {g:#x} vs torch {w:#x}"
        );
    }
}

fn bits16(t: &HostTensor) -> Vec<u16> {
    t.bytes()
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

/// The stored tensor ("codes" for the 8-bit floats, "values" for U16 /
/// U64), read and converted, against torch's conversions.
fn check_stored(loader: &BytesWeightLoader, st: &str, e: &Value) {
    let dtype = dtype_of(st);
    let (name, shape) = if dtype.is_f8() {
        ("codes", "codes_shape")
    } else {
        ("values", "values_shape")
    };
    let dims: Vec<usize> = ints(&e[shape]).into_iter().map(|d| d as usize).collect();
    let meta = loader.meta(name).unwrap();
    assert_eq!((meta.dtype, &meta.dims), (dtype, &dims), "{st}");
    let t = loader.get(name).unwrap();
    assert_eq!((t.dtype(), t.dims()), (dtype, &dims[..]), "{st}");
    if dtype.is_f8() {
        // Every byte 0..=255, in order.
        assert_eq!(t.bytes(), (0..=255u8).collect::<Vec<_>>(), "{st}");
    } else {
        let want = ints(&e["values"]);
        let got: Vec<u64> = match dtype {
            DType::U16 => t
                .to_vec::<u16>()
                .unwrap()
                .into_iter()
                .map(u64::from)
                .collect(),
            _ => t.to_vec::<u64>().unwrap(),
        };
        assert_eq!(got, want, "{st}");
    }
    let f = loader.get_as(name, DType::F32).unwrap();
    same_f32(
        &f.to_vec::<f32>().unwrap(),
        &ints(&e["f32_bits"]),
        &format!("{st} as f32"),
    );
    let d = loader
        .get_as(name, DType::F64)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    let as_f32: Vec<f32> = d.iter().map(|&v| v as f32).collect();
    if dtype.is_f8() {
        // f64 holds the same exact values.
        same_f32(&as_f32, &ints(&e["f32_bits"]), &format!("{st} as f64"));
    }
    let h = loader.get_as(name, DType::F16).unwrap();
    same_bits16(
        &bits16(&h),
        &ints(&e["f16_bits"]),
        0x7C00,
        0x03FF,
        &format!("{st} as f16"),
    );
    let b = loader.get_as(name, DType::BF16).unwrap();
    same_bits16(
        &bits16(&b),
        &ints(&e["bf16_bits"]),
        0x7F80,
        0x007F,
        &format!("{st} as bf16"),
    );
}

#[test]
fn every_storage_dtype_reads_back_as_torch_wrote_it() {
    let exp = expected();
    assert_eq!(exp.len(), 7);
    for (st, e) in &exp {
        let file = fixture(e["file"].as_str().unwrap());
        check_stored(&BytesWeightLoader::open(&file).unwrap(), st, e);
        let owned = BytesWeightLoader::from_bytes(std::fs::read(&file).unwrap()).unwrap();
        check_stored(&owned, st, e);
    }
}

fn probe_f32(e: &Value) -> HostTensor {
    let v: Vec<f32> = ints(&e["probe_f32_bits"])
        .into_iter()
        .map(|b| f32::from_bits(b as u32))
        .collect();
    let n = v.len();
    HostTensor::from_vec(v, &[n]).unwrap()
}

fn probe_f64(e: &Value) -> HostTensor {
    let v: Vec<f64> = e["probe_f64"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| parse_hex_f64(x.as_str().unwrap()))
        .collect();
    let n = v.len();
    HostTensor::from_vec(v, &[n]).unwrap()
}

/// Python's `float.hex()` text (`-0x1.8000000000000p-3`, `inf`, `nan`).
fn parse_hex_f64(s: &str) -> f64 {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let v = match s {
        "inf" => f64::INFINITY,
        "nan" => f64::NAN,
        _ => {
            let s = s.strip_prefix("0x").unwrap();
            let (mant, exp) = s.split_once('p').unwrap();
            let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
            let mut bits: u64 = u64::from_str_radix(int, 16).unwrap();
            for c in frac.chars() {
                bits = bits * 16 + c.to_digit(16).unwrap() as u64;
            }
            let e: i32 = exp.parse::<i32>().unwrap() - 4 * frac.len() as i32;
            // bits < 2^53 and each half power is a normal f64: exact.
            bits as f64 * 2f64.powi(e / 2) * 2f64.powi(e - e / 2)
        }
    };
    if neg {
        -v
    } else {
        v
    }
}

#[test]
fn f32_and_f64_round_to_each_8_bit_float_as_torch_does() {
    for (st, e) in &expected() {
        let dtype = dtype_of(st);
        let loader = BytesWeightLoader::open(fixture(e["file"].as_str().unwrap())).unwrap();
        if !dtype.is_f8() {
            // torch's f32 -> u16 / u64 (truncation) is in the file; RLX's
            // loader converts only to floats.
            let r = loader.get("rounded").unwrap();
            let got: Vec<u64> = r.to_f64_lossy().into_iter().map(|v| v as u64).collect();
            assert_eq!(got, ints(&e["rounded_values"]), "{st}");
            let err = convert_dtype("p", probe_f32(e), dtype).unwrap_err();
            assert!(
                err.to_string()
                    .contains(&format!("cannot convert f32 to {dtype}")),
                "{err}"
            );
            continue;
        }
        let want = ints(&e["rounded_bits"]);
        let want: Vec<u8> = want.into_iter().map(|b| b as u8).collect();
        let got = convert_dtype("p", probe_f32(e), dtype).unwrap();
        assert_eq!(got.dtype(), dtype);
        for (i, (g, w)) in got.bytes().iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{st} f32 probe[{i}]");
        }
        // torch wrote the same bytes into the file.
        assert_eq!(loader.get("rounded").unwrap().bytes(), &want[..], "{st}");
        let want64: Vec<u8> = ints(&e["torch_bits"])
            .into_iter()
            .map(|b| b as u8)
            .collect();
        let got = convert_dtype("p", probe_f64(e), dtype).unwrap();
        assert_eq!(got.bytes(), &want64[..], "{st} f64 probe");
    }
}

/// `x -> cast(x, to)` compiled for the CPU.
fn cast_graph(from: DType, to: DType, n: usize) -> rlx_runtime::CompiledGraph {
    let mut g = Graph::new("cast");
    let x = g.input("x", Shape::new(&[n], from));
    let y = g.cast(x, to);
    g.set_outputs(vec![y]);
    Session::new(Device::Cpu).try_compile(g).unwrap()
}

fn cast(t: &HostTensor, to: DType) -> HostTensor {
    let mut c = cast_graph(t.dtype(), to, t.numel());
    c.try_run_typed(&[("x", t)]).unwrap().remove(0)
}

#[test]
fn cpu_cast_to_and_from_storage_dtypes_matches_torch() {
    for (st, e) in &expected() {
        let dtype = dtype_of(st);
        let loader = BytesWeightLoader::open(fixture(e["file"].as_str().unwrap())).unwrap();
        let stored = loader
            .get(if dtype.is_f8() { "codes" } else { "values" })
            .unwrap();
        let stored = stored.clone().reshape(&[stored.numel()]).unwrap();
        let f = cast(&stored, DType::F32);
        same_f32(
            &f.to_vec::<f32>().unwrap(),
            &ints(&e["f32_bits"]),
            &format!("cast {st} -> f32"),
        );
        let h = cast(&stored, DType::F16);
        same_bits16(
            &bits16(&h),
            &ints(&e["f16_bits"]),
            0x7C00,
            0x03FF,
            &format!("cast {st} -> f16"),
        );
        let b = cast(&stored, DType::BF16);
        same_bits16(
            &bits16(&b),
            &ints(&e["bf16_bits"]),
            0x7F80,
            0x007F,
            &format!("cast {st} -> bf16"),
        );
        let back = cast(&f, dtype);
        if dtype.is_f8() {
            // Every code through f32 and back: itself, or (NaN) a NaN.
            for (i, (&g, w)) in back.bytes().iter().zip(0..=255u8).enumerate() {
                let nan = |b: u8| rlx_ir::f8::decode(dtype, b).unwrap().is_nan();
                assert!(g == w || (nan(g) && nan(w)), "{st} code {i}: {g:#x}");
            }
            let want: Vec<u8> = ints(&e["rounded_bits"])
                .into_iter()
                .map(|b| b as u8)
                .collect();
            assert_eq!(
                cast(&probe_f32(e), dtype).bytes(),
                &want[..],
                "cast f32 -> {st}"
            );
            let want: Vec<u8> = ints(&e["torch_bits"])
                .into_iter()
                .map(|b| b as u8)
                .collect();
            assert_eq!(
                cast(&probe_f64(e), dtype).bytes(),
                &want[..],
                "cast f64 -> {st}"
            );
        } else {
            let got: Vec<u64> = cast(&probe_f32(e), dtype)
                .to_f64_lossy()
                .into_iter()
                .map(|v| v as u64)
                .collect();
            assert_eq!(got, ints(&e["rounded_values"]), "cast f32 -> {st}");
            // Values below 2^24 survive f32: they come back exactly.
            let small: Vec<bool> = ints(&e["values"]).iter().map(|&v| v < 1 << 24).collect();
            let again = back.to_f64_lossy();
            for ((a, s), v) in again.iter().zip(small).zip(ints(&e["values"])) {
                if s {
                    assert_eq!(*a as u64, v, "{st}");
                }
            }
        }
    }
}

#[test]
fn torch_files_write_back_byte_for_byte() {
    let dir = std::env::temp_dir().join(format!("rlx-st-dtypes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files: Vec<String> = expected()
        .values()
        .map(|e| e["file"].as_str().unwrap().to_string())
        .collect();
    files.push("dtypes.safetensors".into());
    files.push("mlp.safetensors".into());
    for name in files {
        let original = std::fs::read(fixture(&name)).unwrap();
        let loader = BytesWeightLoader::from_bytes(original.clone()).unwrap();
        let names = loader.names();
        let tensors: Vec<HostTensor> = names.iter().map(|n| loader.get(n).unwrap()).collect();
        let rows = names.iter().map(String::as_str).zip(&tensors);
        let bytes = serialize_safetensors(rows.clone(), loader.file_metadata()).unwrap();
        assert!(
            bytes == original,
            "{name}: written bytes differ from torch's file"
        );
        let path = dir.join(&name);
        save_safetensors(&path, rows, loader.file_metadata()).unwrap();
        let back = BytesWeightLoader::open(&path).unwrap();
        assert_eq!(back.names(), names, "{name}");
        for (n, t) in names.iter().zip(&tensors) {
            assert_eq!(&back.get(n).unwrap(), t, "{name}: {n}");
        }
        assert_eq!(back.file_metadata(), loader.file_metadata(), "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn writing_refuses_ambiguous_names_and_keeps_metadata_sorted() {
    let a = HostTensor::from_vec(vec![1u64, u64::MAX], &[2]).unwrap();
    let b = HostTensor::from_vec(vec![7u16], &[1]).unwrap();
    let e = serialize_safetensors([("a", &a), ("b", &b), ("a", &b)], None)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "<bytes>: cannot write safetensors: tensor \"a\" is given twice"
    );
    let e = serialize_safetensors([("__metadata__", &a)], None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot be named \"__metadata__\""), "{e}");
    let path = std::env::temp_dir().join(format!("rlx-st-refused-{}", std::process::id()));
    let e = save_safetensors(&path, [("x", &a), ("x", &a)], None).unwrap_err();
    assert!(matches!(e, WeightError::Write { .. }), "{e}");
    assert!(!path.exists(), "nothing written");
    let meta = [("z", "1"), ("a", "2"), ("m", "3")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let bytes = serialize_safetensors([("b", &b), ("a", &a)], Some(&meta)).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    assert_eq!(n % 8, 0);
    let header = std::str::from_utf8(&bytes[8..8 + n]).unwrap().trim_end();
    // Metadata keys sorted; U64 (8-byte alignment) before U16.
    assert_eq!(
        header,
        r#"{"__metadata__":{"a":"2","m":"3","z":"1"},"a":{"dtype":"U64","shape":[2],"data_offsets":[0,16]},"b":{"dtype":"U16","shape":[1],"data_offsets":[16,18]}}"#
    );
}

/// A safetensors file from a header JSON and a data section.
fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut f = (header.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(header.as_bytes());
    f.extend_from_slice(data);
    f
}

#[test]
fn packed_sub_byte_floats_are_refused_naming_tensor_and_dtype() {
    // torch writes float4_e2m1fn_x2 [1, 2] as F4 [1, 4] in 2 bytes.
    for (dtype, dims, len) in [
        ("F4", "[1,4]", 2),
        ("F6_E2M3", "[4]", 3),
        ("F6_E3M2", "[8]", 6),
    ] {
        let header = format!(
            r#"{{"ok":{{"dtype":"U16","shape":[1],"data_offsets":[0,2]}},"p":{{"dtype":"{dtype}","shape":{dims},"data_offsets":[2,{}]}}}}"#,
            2 + len
        );
        let loader = BytesWeightLoader::from_bytes(file(&header, &vec![0x21; 2 + len])).unwrap();
        assert_eq!(loader.names(), vec!["ok".to_string(), "p".to_string()]);
        assert_eq!(
            loader.get("ok").unwrap().to_vec::<u16>().unwrap(),
            vec![0x2121]
        );
        let e = loader.get("p").unwrap_err();
        assert!(matches!(e, WeightError::UnsupportedDType { .. }), "{e}");
        let bits = if dtype == "F4" { 4 } else { 6 };
        assert_eq!(
            e.to_string(),
            format!(
                "<bytes>: tensor \"p\" has dtype {dtype}, which RLX does not load: a packed \
                 {bits}-bit float whose order of elements within a byte neither the safetensors \
                 format nor torch defines"
            )
        );
        assert!(loader.meta("p").is_err() && loader.get_as("p", DType::F32).is_err());
    }
}

#[test]
fn computing_on_a_storage_dtype_is_a_compile_error_naming_op_and_dtype() {
    for d in DType::STORAGE {
        let mut g = Graph::new("g");
        let x = g.input("x", Shape::new(&[2], d));
        let y = g.input("y", Shape::new(&[2], d));
        let s = g.add(x, y);
        g.set_outputs(vec![s]);
        let Err(e) = Session::new(Device::Cpu).try_compile(g) else {
            panic!("{d}: add compiled")
        };
        let e = e.to_string();
        assert!(
            e.contains(&format!(
                "add does not compute on {d}, a storage-only dtype"
            )),
            "{e}"
        );
    }
    // A cast in and out is fine: f32 -> f8 -> f32 rounds like torch.
    let mut g = Graph::new("g");
    let x = g.input("x", Shape::new(&[3], DType::F32));
    let q = g.cast(x, DType::F8E4M3);
    let y = g.cast(q, DType::F32);
    g.set_outputs(vec![y]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let out = c.try_run(&[("x", &[0.3f32, 500.0, -1e-3][..])]).unwrap();
    assert_eq!(out[0], vec![0.3125, 448.0, -0.001953125]);
}

#[test]
fn casts_fused_with_arithmetic_still_run_and_arithmetic_on_storage_is_refused() {
    use rlx_ir::f8::F8E4M3;
    // f8 -> f32, * 2, -> f8: elementwise fusion puts the casts and the mul
    // in one region; only the mul computes, on f32.
    let mut g = Graph::new("g");
    let x = g.input("x", Shape::new(&[4], DType::F8E4M3));
    let f = g.cast(x, DType::F32);
    let y = g.mul(f, 2.0);
    let q = g.cast(y, DType::F8E4M3);
    g.set_outputs(vec![q, y]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let codes: Vec<F8E4M3> = [0.5f32, -1.5, 448.0, 2f32.powi(-9)]
        .into_iter()
        .map(F8E4M3::from_f32)
        .collect();
    let out = c
        .try_run_typed(&[("x", &HostTensor::from_vec(codes, &[4]).unwrap())])
        .unwrap();
    assert_eq!(
        out[1].to_vec::<f32>().unwrap(),
        vec![1.0, -3.0, 896.0, 2f32.powi(-8)]
    );
    // 896 saturates to 448 (torch's float8_e4m3fn); the others are exact.
    assert_eq!(out[0].bytes(), &[0x38, 0xC4, 0x7E, 0x02]);
    // A u16 -> u16 chain fused the same way is refused at its add.
    let mut g = Graph::new("g");
    let x = g.input("x", Shape::new(&[4], DType::F32));
    let u = g.cast(x, DType::U16);
    let v = g.add(u, u);
    let w = g.cast(v, DType::F32);
    g.set_outputs(vec![w]);
    let Err(e) = Session::new(Device::Cpu).try_compile(g) else {
        panic!("add on u16 compiled")
    };
    assert!(e.to_string().contains("add does not compute on u16"), "{e}");
}

#[test]
fn a_matmul_with_an_8_bit_fake_quant_epilogue_runs() {
    // (x @ w + b) through float8_e5m2 and back: matmul epilogue fusion
    // takes the add and both casts; only the add computes, on f32.
    let mut g = Graph::new("g");
    let x = g.input("x", Shape::new(&[2, 3], DType::F32));
    let w = g.param("w", Shape::new(&[3, 2], DType::F32));
    let b = g.param("b", Shape::new(&[2], DType::F32));
    let y = g.mm(x, w);
    let y = g.add(y, b);
    let q = g.cast(y, DType::F8E5M2);
    let d = g.cast(q, DType::F32);
    g.set_outputs(vec![d]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    c.set_param("w", &[1.0, 0.0, 1.0, 1.0, 2.0, 1.0]);
    c.set_param("b", &[0.25, 0.0]);
    let out = c
        .try_run(&[("x", &[1.0, 2.0, 0.0, 0.5, 1.0, 1.0][..])])
        .unwrap();
    // [[3.25, 2], [3.75, 2]]: 3.25 ties to 3 (even mantissa), 3.75 to 4.
    assert_eq!(out[0], vec![3.0, 2.0, 4.0, 2.0]);

    // An add on the float8 value inside the fused epilogue is refused at
    // compile time, naming the step.
    let mut g = Graph::new("g");
    let x = g.input("x", Shape::new(&[2, 3], DType::F32));
    let w = g.param("w", Shape::new(&[3, 2], DType::F32));
    let y = g.mm(x, w);
    let q = g.cast(y, DType::F8E5M2);
    let s = g.add(q, q);
    let d = g.cast(s, DType::F32);
    g.set_outputs(vec![d]);
    let Err(e) = Session::new(Device::Cpu).try_compile(g) else {
        panic!("add on f8e5m2 compiled")
    };
    let e = e.to_string();
    assert!(
        e.contains("matmul+epilogue") && e.contains("add does not compute on f8e5m2"),
        "{e}"
    );
}
