//! Reading files written by gguf-py (and a hand-packed v1 file): every
//! metadata value type, nested arrays, every plain tensor type, alignment,
//! versions 1-3, big-endian refusal and split models; plus rewriting each
//! with our writer gives the same bytes.

mod common;
use common::{assert_bytes_eq, fixture, open};
use rlx_gguf::{Array, GgmlType, GgufError, GgufReader, GgufSplit, GgufWriter, Value, ValueType};
use rlx_ir::{bf16, f16, DType};

fn arr(elem: ValueType, values: Vec<Value>) -> Value {
    Value::Array(Array::new(elem, values).unwrap())
}

fn ints(elem: ValueType, f: fn(i64) -> Value, v: &[i64]) -> Value {
    arr(elem, v.iter().map(|&x| f(x)).collect())
}

/// What tools/gen_gguf_fixtures.py puts in metadata.gguf, in file order.
fn expected_metadata() -> Vec<(&'static str, Value)> {
    use ValueType as T;
    let s = |x: &str| Value::String(x.into());
    vec![
        ("general.architecture", s("test")),
        ("general.alignment", Value::U32(64)),
        ("t.u8", Value::U8(200)),
        ("t.i8", Value::I8(-100)),
        ("t.u16", Value::U16(60000)),
        ("t.i16", Value::I16(-30000)),
        ("t.u32", Value::U32(4_000_000_000)),
        ("t.i32", Value::I32(-2_000_000_000)),
        ("t.f32", Value::F32(3.25)),
        ("t.bool_true", Value::Bool(true)),
        ("t.bool_false", Value::Bool(false)),
        ("t.string", s("h\u{e9}llo, w\u{f6}rld \u{2713}")),
        ("t.empty_string", s("")),
        ("t.u64", Value::U64(u64::MAX)),
        ("t.i64", Value::I64(i64::MIN)),
        ("t.f64", Value::F64(-1.0e300)),
        (
            "t.arr.u8",
            ints(T::U8, |x| Value::U8(x as u8), &[0, 1, 255]),
        ),
        (
            "t.arr.i8",
            ints(T::I8, |x| Value::I8(x as i8), &[-128, 0, 127]),
        ),
        (
            "t.arr.u16",
            ints(T::U16, |x| Value::U16(x as u16), &[0, 65535]),
        ),
        (
            "t.arr.i16",
            ints(T::I16, |x| Value::I16(x as i16), &[-32768, 32767]),
        ),
        (
            "t.arr.u32",
            ints(T::U32, |x| Value::U32(x as u32), &[0, 4294967295]),
        ),
        (
            "t.arr.i32",
            ints(
                T::I32,
                |x| Value::I32(x as i32),
                &[-2147483648, 5, 2147483647],
            ),
        ),
        (
            "t.arr.u64",
            arr(T::U64, vec![Value::U64(0), Value::U64(u64::MAX)]),
        ),
        ("t.arr.i64", ints(T::I64, Value::I64, &[i64::MIN, i64::MAX])),
        (
            "t.arr.f32",
            arr(
                T::F32,
                vec![Value::F32(0.5), Value::F32(-1.25), Value::F32(1.0e30)],
            ),
        ),
        (
            "t.arr.f64",
            arr(T::F64, vec![Value::F64(1.0e-300), Value::F64(-2.5)]),
        ),
        (
            "t.arr.bool",
            arr(
                T::Bool,
                vec![Value::Bool(true), Value::Bool(false), Value::Bool(true)],
            ),
        ),
        (
            "t.arr.str",
            arr(
                T::String,
                vec![s("a"), s(""), s("\u{fc}\u{2202}"), s("tokens with spaces")],
            ),
        ),
        (
            "t.nested",
            arr(
                T::Array,
                vec![
                    ints(T::I32, |x| Value::I32(x as i32), &[1, 2, 3]),
                    ints(T::I32, |x| Value::I32(x as i32), &[4]),
                ],
            ),
        ),
        (
            "t.nested_mixed",
            arr(
                T::Array,
                vec![
                    arr(T::String, vec![s("x"), s("y")]),
                    arr(T::F32, vec![Value::F32(1.5)]),
                    arr(T::Bool, vec![Value::Bool(true)]),
                ],
            ),
        ),
        (
            "t.deep",
            arr(
                T::Array,
                vec![
                    arr(
                        T::Array,
                        vec![
                            ints(T::I32, |x| Value::I32(x as i32), &[1]),
                            ints(T::I32, |x| Value::I32(x as i32), &[2, 3]),
                        ],
                    ),
                    arr(T::Array, vec![ints(T::I32, |x| Value::I32(x as i32), &[4])]),
                ],
            ),
        ),
    ]
}

fn check_metadata_file(r: &GgufReader<Vec<u8>>) {
    assert_eq!(r.alignment(), 64);
    assert_eq!(r.content().data_offset() % 64, 0);
    let got: Vec<(&str, &Value)> = r.metadata().iter().collect();
    let want = expected_metadata();
    assert_eq!(got.len(), want.len());
    for ((gk, gv), (wk, wv)) in got.iter().zip(&want) {
        assert_eq!(gk, wk);
        assert_eq!(*gv, wv, "value of {wk}");
    }
    let m = r.metadata();
    assert_eq!(m.get_u64("t.u64").unwrap(), u64::MAX);
    assert_eq!(m.get_i64("t.i8").unwrap(), -100);
    assert_eq!(m.get_f64("t.f32").unwrap(), 3.25);
    assert!(m.get_bool("t.bool_true").unwrap());
    assert_eq!(
        m.get_array("t.arr.str").unwrap().as_strings().unwrap()[3],
        "tokens with spaces"
    );
    assert!(matches!(
        m.get_u64("t.string"),
        Err(GgufError::MetadataType { .. })
    ));

    let t = |name: &str, ty: GgmlType, shape: &[usize]| {
        let info = r.tensor_info(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(info.ggml_type(), ty, "{name}");
        assert_eq!(info.shape(), shape, "{name}");
        assert_eq!(info.offset() % 64, 0, "{name}");
        r.tensor(name).unwrap()
    };
    let v = t("f32.vec", GgmlType::F32, &[7]).to_vec::<f32>().unwrap();
    assert_eq!(v, (0..7).map(|i| i as f32 * 0.5 - 1.0).collect::<Vec<_>>());
    let v = t("f16.mat", GgmlType::F16, &[3, 5])
        .to_vec::<f16>()
        .unwrap();
    let want: Vec<f16> = (0..15)
        .map(|i| f16::from_f32(i as f32 / 4.0 - 2.0))
        .collect();
    assert_eq!(v, want);
    let v = t("bf16.mat", GgmlType::BF16, &[2, 4])
        .to_vec::<bf16>()
        .unwrap();
    let want: Vec<bf16> = (0..8)
        .map(|i| bf16::from_f32(i as f32 * 1.5 - 3.0))
        .collect();
    assert_eq!(v, want);
    let v = t("f64.mat", GgmlType::F64, &[2, 2])
        .to_vec::<f64>()
        .unwrap();
    assert_eq!(v, [0.0, 0.1, 0.2, 0.30000000000000004]);
    assert_eq!(
        t("i8.vec", GgmlType::I8, &[5]).to_vec::<i8>().unwrap(),
        [-128, -1, 0, 1, 127]
    );
    assert_eq!(
        t("i16.mat", GgmlType::I16, &[2, 3])
            .to_vec::<i16>()
            .unwrap(),
        [-32768, -1, 0, 1, 2, 32767]
    );
    assert_eq!(
        t("i32.vec", GgmlType::I32, &[4]).to_vec::<i32>().unwrap(),
        [i32::MIN, 0, 7, i32::MAX]
    );
    assert_eq!(
        t("i64.vec", GgmlType::I64, &[3]).to_vec::<i64>().unwrap(),
        [i64::MIN, 0, i64::MAX]
    );
    let v = t("f32.4d", GgmlType::F32, &[2, 1, 3, 2]);
    assert_eq!(r.tensor_info("f32.4d").unwrap().dims(), [2, 3, 1, 2]);
    assert_eq!(
        v.to_vec::<f32>().unwrap(),
        (0..12).map(|i| i as f32).collect::<Vec<_>>()
    );
    let e = t("f32.empty", GgmlType::F32, &[0, 4]);
    assert_eq!((e.numel(), e.dtype()), (0, DType::F32));
    // Float tensors also dequantize to F32; integers are refused by name.
    let d = r.dequantize("f16.mat").unwrap();
    assert_eq!(d.dims(), [3, 5]);
    assert_eq!(d.to_vec::<f32>().unwrap()[14], 1.5);
    let err = r.dequantize("i32.vec").unwrap_err().to_string();
    assert!(err.contains("I32"), "{err}");
}

#[test]
fn gguf_py_metadata_and_plain_tensors() {
    let r = open("metadata.gguf");
    assert_eq!(r.version(), 3);
    check_metadata_file(&r);
}

#[test]
fn memory_mapped_open_reads_the_same() {
    let r = GgufReader::open(fixture("metadata.gguf")).unwrap();
    assert_eq!(r.metadata(), open("metadata.gguf").metadata());
    assert_eq!(
        r.tensor("i64.vec").unwrap().to_vec::<i64>().unwrap()[2],
        i64::MAX
    );
    let e = GgufReader::open(fixture("nope.gguf"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("nope.gguf"), "{e}");
}

#[test]
fn version_2_reads_like_version_3() {
    let r = open("v2.gguf");
    assert_eq!(r.version(), 2);
    check_metadata_file(&r);
}

#[test]
fn version_1_has_u32_counts_lengths_and_dims() {
    let r = open("v1.gguf");
    assert_eq!(r.version(), 1);
    let m = r.metadata();
    assert_eq!(m.get_str("general.architecture").unwrap(), "v1test");
    assert_eq!(m.get("v1.u32"), Some(&Value::U32(7)));
    assert_eq!(
        m.get_array("v1.arr").unwrap().as_strings().unwrap(),
        ["one", "two"]
    );
    let empty = m.get_array("v1.empty").unwrap();
    assert_eq!((empty.elem_type(), empty.len()), (ValueType::U32, 0));
    let nested = m.get_array("v1.nested").unwrap();
    assert_eq!(
        nested.values()[0].as_array().unwrap().as_i64s().unwrap(),
        [-5, 6]
    );
    let a = r.tensor("a").unwrap();
    assert_eq!(a.dims(), [2, 4]);
    assert_eq!(
        a.to_vec::<f32>().unwrap(),
        (0..8).map(|i| i as f32 - 3.5).collect::<Vec<_>>()
    );
    let b = r.dequantize_f32("b").unwrap();
    assert!(b
        .iter()
        .enumerate()
        .all(|(i, v)| (v - (-1.0 + 2.0 * i as f32 / 31.0)).abs() < 0.01));
}

#[test]
fn big_endian_files_are_refused_by_name() {
    let e = GgufReader::read(fixture("be.gguf")).unwrap_err();
    assert!(matches!(e, GgufError::BigEndian { version: 3 }), "{e}");
    assert!(e.to_string().contains("big-endian"), "{e}");
}

/// A writer holding exactly what `r` holds, in the same order.
fn rewrite<D: AsRef<[u8]>>(r: &GgufReader<D>, skip: &[&str]) -> GgufWriter {
    let mut w = GgufWriter::new();
    w.set_version(r.version()).unwrap();
    for (k, v) in r.metadata().iter() {
        if !skip.contains(&k) {
            w.add_metadata(k, v.clone()).unwrap();
        }
    }
    for t in r.tensors() {
        let data = r.tensor_data(t.name()).unwrap().to_vec();
        w.add_tensor_bytes(t.name(), t.dims(), t.ggml_type(), data)
            .unwrap();
    }
    w
}

#[test]
fn our_writer_reproduces_gguf_py_files_byte_for_byte() {
    for name in [
        "metadata.gguf",
        "v2.gguf",
        "v1.gguf",
        "codecs.gguf",
        "ggml_ref.gguf",
    ] {
        let original = std::fs::read(fixture(name)).unwrap();
        let r = GgufReader::new(&original[..]).unwrap();
        let bytes = rewrite(&r, &[]).to_bytes().unwrap();
        assert_bytes_eq(name, &bytes, &original);
    }
}

#[test]
fn split_models_open_from_any_shard() {
    for shard in 1..=3 {
        let s = GgufSplit::open(fixture(&format!("split-{shard:05}-of-00003.gguf"))).unwrap();
        assert_eq!(s.shards().len(), 3);
        assert_eq!(s.tensor_count(), 5);
        assert_eq!(s.metadata().get_str("t.name").unwrap(), "split fixture");
        let names: Vec<&str> = s.tensors().map(|t| t.name()).collect();
        assert_eq!(names, ["s.0", "s.1", "s.2", "s.3", "s.4"]);
        for i in 0..5 {
            let v = s
                .tensor(&format!("s.{i}"))
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
            assert_eq!(
                v,
                [
                    10.0 * i as f32,
                    10.0 * i as f32 + 1.0,
                    10.0 * i as f32 + 2.0
                ]
            );
        }
        assert_eq!(s.tensor_info("s.4").unwrap().0, 2);
        assert!(matches!(
            s.tensor("s.5"),
            Err(GgufError::TensorNotFound { .. })
        ));
    }
}

#[test]
fn split_shards_must_fit_together() {
    let shard = |i: usize| open(&format!("split-{i:05}-of-00003.gguf"));
    // Missing shard.
    let e = GgufSplit::from_shards(vec![shard(1), shard(2)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("split.count is 3"), "{e}");
    // Wrong order.
    let e = GgufSplit::from_shards(vec![shard(1), shard(3), shard(2)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("split.no is 2, expected 1"), "{e}");
    // A lone shard of a split model opened as a plain file.
    let e = GgufSplit::from_shards(vec![shard(2)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("split.count"), "{e}");
    // A missing file names the path.
    let dir = std::env::temp_dir().join(format!("rlx-gguf-split-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        fixture("split-00001-of-00003.gguf"),
        dir.join("m-00001-of-00003.gguf"),
    )
    .unwrap();
    let e = GgufSplit::open(dir.join("m-00001-of-00003.gguf"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("m-00002-of-00003.gguf"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn our_split_writer_reproduces_gguf_py_shards() {
    let s = GgufSplit::open(fixture("split-00001-of-00003.gguf")).unwrap();
    let mut w = GgufWriter::new();
    for (k, v) in s.metadata().iter() {
        if !k.starts_with("split.") {
            w.add_metadata(k, v.clone()).unwrap();
        }
    }
    for t in s.tensors() {
        let data = s.tensor_data(t.name()).unwrap().to_vec();
        w.add_tensor_bytes(t.name(), t.dims(), t.ggml_type(), data)
            .unwrap();
    }
    let dir = std::env::temp_dir().join(format!("rlx-gguf-split-w-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let paths = w.write_split(dir.join("split.gguf"), 2).unwrap();
    assert_eq!(paths.len(), 3);
    for (i, p) in paths.iter().enumerate() {
        let name = format!("split-{:05}-of-00003.gguf", i + 1);
        assert_eq!(p.file_name().unwrap().to_str().unwrap(), name);
        assert_bytes_eq(
            &name,
            &std::fs::read(p).unwrap(),
            &std::fs::read(fixture(&name)).unwrap(),
        );
    }
    let back = GgufSplit::open(&paths[1]).unwrap();
    assert_eq!(back.tensor_count(), 5);
    std::fs::remove_dir_all(&dir).unwrap();
}
