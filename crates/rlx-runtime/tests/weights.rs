//! safetensors loading: files written by the python `safetensors` package
//! (tools/gen_safetensors_fixtures.py) read back value for value, a torch
//! MLP reproduced from its stored f16 / bf16 weights, hostile files refused
//! with errors naming the tensor / offsets, and a seeded mutation run.

use rlx_driver::Device;
use rlx_ir::op::UnaryOp;
use rlx_ir::{DType, Graph, GraphExt, Shape};
use rlx_runtime::{serialize_safetensors, BytesWeightLoader, Session, WeightError, WeightLoader};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/safetensors")
        .join(name)
}

fn json(name: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap()
}

fn dtype_of(torch: &str) -> DType {
    match torch {
        "float32" => DType::F32,
        "float64" => DType::F64,
        "float16" => DType::F16,
        "bfloat16" => DType::BF16,
        "int8" => DType::I8,
        "int16" => DType::I16,
        "int32" => DType::I32,
        "int64" => DType::I64,
        "uint8" => DType::U8,
        "uint16" => DType::U16,
        "bool" => DType::Bool,
        d => panic!("unexpected dtype {d}"),
    }
}

fn check_dtypes(loader: &BytesWeightLoader) {
    let exp = json("dtypes.json");
    let exp = exp.as_object().unwrap();
    let mut want: Vec<String> = exp.keys().cloned().collect();
    want.sort();
    assert_eq!(loader.names(), want);
    for (name, e) in exp {
        let dtype = dtype_of(e["dtype"].as_str().unwrap());
        let dims: Vec<usize> = e["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        let meta = loader.meta(name).unwrap();
        assert_eq!((meta.dtype, &meta.dims), (dtype, &dims), "{name}");
        let t = loader.get(name).unwrap();
        assert_eq!((t.dtype(), t.dims()), (dtype, &dims[..]), "{name}");
        let values: Vec<f64> = e["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(t.to_f64_lossy(), values, "{name}");
        if dtype.is_float() {
            // f16 / bf16 / f64 -> f32 on load: every stored value is exact in f32
            // except f64's, which round to nearest.
            let f = loader.get_as(name, DType::F32).unwrap();
            let got = f.to_vec::<f32>().unwrap();
            let want: Vec<f32> = values.iter().map(|&v| v as f32).collect();
            assert_eq!(got, want, "{name} as f32");
        }
    }
    let e = loader.get("nope").unwrap_err().to_string();
    assert!(
        e.contains("no tensor \"nope\"") && e.contains("12 tensors"),
        "{e}"
    );
    let e = loader
        .get_as("i8.vector", DType::I32)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot convert i8 to i32"), "{e}");
    let u16s = loader.get_as("u16.vector", DType::F32).unwrap();
    assert_eq!(u16s.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 65535.0]);
    assert_eq!(loader.file_metadata().unwrap()["origin"], "rlx-fixture");
}

#[test]
fn every_dtype_reads_back_as_torch_wrote_it_mapped_and_owned() {
    check_dtypes(&BytesWeightLoader::open(fixture("dtypes.safetensors")).unwrap());
    let bytes = std::fs::read(fixture("dtypes.safetensors")).unwrap();
    check_dtypes(&BytesWeightLoader::from_bytes(bytes).unwrap());
}

/// `y = fc2(relu(fc1(x)))` with f32 params named as torch names them.
fn mlp() -> Graph {
    let mut g = Graph::new("mlp");
    let x = g.input("x", Shape::new(&[2, 4], DType::F32));
    let mut h = x;
    for (i, (o, k)) in [(5, 4), (3, 5)].into_iter().enumerate() {
        let w = g.param(
            &format!("fc{}.weight", i + 1),
            Shape::new(&[o, k], DType::F32),
        );
        let b = g.param(&format!("fc{}.bias", i + 1), Shape::new(&[o], DType::F32));
        let wt = g.transpose_(w, &[1, 0]);
        let y = g.mm(h, wt);
        h = g.add(y, b);
        if i == 0 {
            h = g.unary(UnaryOp::Relu, h);
        }
    }
    g.set_outputs(vec![h]);
    g
}

#[test]
fn set_params_from_reproduces_the_torch_mlp() {
    let loader = BytesWeightLoader::open(fixture("mlp.safetensors")).unwrap();
    let mut c = Session::new(Device::Cpu).try_compile(mlp()).unwrap();
    c.set_params_from(&loader).unwrap();
    runs_like_torch(&mut c);
}

/// Runs the MLP on torch's input, checks torch's output; returns it.
fn runs_like_torch(c: &mut rlx_runtime::CompiledGraph) -> Vec<f32> {
    let r = json("mlp.json");
    let f = |k: &str| -> Vec<f32> {
        r[k].as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect()
    };
    let y = c.try_run(&[("x", &f("x"))]).unwrap().remove(0);
    for (a, b) in y.iter().zip(f("y")) {
        assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} vs torch {b}");
    }
    y
}

#[test]
fn set_params_from_changes_nothing_on_error() {
    // The MLP's file without fc2.bias (the last param): the error names it
    // and not even fc1.weight is set.
    let mlp_file = BytesWeightLoader::open(fixture("mlp.safetensors")).unwrap();
    let (mut header, mut data) = (Vec::new(), Vec::new());
    for name in ["fc1.weight", "fc1.bias", "fc2.weight"] {
        let (meta, bytes) = mlp_file.view(name).unwrap();
        let st = match meta.dtype {
            DType::F16 => "F16",
            DType::BF16 => "BF16",
            _ => "F32",
        };
        let (s, e) = (data.len(), data.len() + bytes.len());
        header.push(format!(
            r#""{name}":{{"dtype":"{st}","shape":{:?},"data_offsets":[{s},{e}]}}"#,
            meta.dims
        ));
        data.extend_from_slice(bytes);
    }
    let partial =
        BytesWeightLoader::from_bytes(file(&format!("{{{}}}", header.join(",")), &data)).unwrap();
    let mut c = Session::new(Device::Cpu).try_compile(mlp()).unwrap();
    let e = c.set_params_from(&partial).unwrap_err().to_string();
    assert!(
        e.contains("param \"fc2.bias\"") && e.contains("no tensor"),
        "{e}"
    );
    let e = c.try_run(&[("x", &[0f32; 8][..])]).unwrap_err().to_string();
    assert!(
        e.contains("\"fc1.weight\"") && e.contains("is not set"),
        "{e}"
    );

    let loader = BytesWeightLoader::open(fixture("dtypes.safetensors")).unwrap();

    // Wrong dims: named with both shapes.
    let mut g = Graph::new("g");
    let x = g.input("x", Shape::new(&[3], DType::F32));
    let w = g.param("bf16.vector", Shape::new(&[3], DType::F32));
    let y = g.add(x, w);
    g.set_outputs(vec![y]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let e = c.set_params_from(&loader).unwrap_err().to_string();
    assert!(e.contains("bf16.vector") && e.contains("[5]"), "{e}");
}

/// A safetensors file from a header JSON and a data section.
fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut f = (header.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(header.as_bytes());
    f.extend_from_slice(data);
    f
}

fn refused(bytes: Vec<u8>) -> String {
    let e = BytesWeightLoader::from_bytes(bytes).unwrap_err();
    assert!(matches!(e, WeightError::Malformed { .. }), "{e}");
    e.to_string()
}

#[test]
fn hostile_files_are_refused_naming_the_problem() {
    let ok = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I8","shape":[4],"data_offsets":[8,12]}}"#;
    assert!(BytesWeightLoader::from_bytes(file(ok, &[0; 12])).is_ok());

    let e = refused(vec![1, 2, 3, 4, 5]);
    assert!(
        e.contains("5 bytes, shorter than the 8-byte header length"),
        "{e}"
    );

    let mut past = file(ok, &[0; 12]);
    past[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let e = refused(past);
    assert!(
        e.contains("header length 1099511627776") && e.contains("runs past the end"),
        "{e}"
    );

    let mut truncated = file(ok, &[0; 12]);
    truncated.truncate(30);
    let e = refused(truncated);
    assert!(e.contains("runs past the end"), "{e}");

    let e = refused(file(ok, &[0; 10]));
    assert!(
        e.contains("tensor \"b\"") && e.contains("[8, 12] are out of range of the 10-byte"),
        "{e}"
    );

    let overlap = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I8","shape":[4],"data_offsets":[4,8]}}"#;
    let e = refused(file(overlap, &[0; 8]));
    assert!(
        e.contains("tensor \"b\"") && e.contains("overlaps the previous tensor"),
        "{e}"
    );

    let gap = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I8","shape":[4],"data_offsets":[10,14]}}"#;
    let e = refused(file(gap, &[0; 14]));
    assert!(e.contains("leaves a gap"), "{e}");

    let size = r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#;
    let e = refused(file(size, &[0; 8]));
    assert!(
        e.contains("tensor \"a\": F32 [3] needs 12 bytes") && e.contains("hold 8"),
        "{e}"
    );

    let unknown = r#"{"a":{"dtype":"Q9","shape":[2],"data_offsets":[0,8]}}"#;
    let e = refused(file(unknown, &[0; 8]));
    assert!(e.contains("tensor \"a\": unknown dtype \"Q9\""), "{e}");

    let huge = r#"{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}"#;
    let e = refused(file(huge, &[0; 8]));
    assert!(e.contains("tensor \"a\""), "{e}");

    // A name given twice: JSON parsers keep one silently (the safetensors
    // crate the last), so the file is refused naming it.
    let twice = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"I8","shape":[4],"data_offsets":[0,4]}}"#;
    let e = refused(file(twice, &[0; 8]));
    assert!(
        e.contains("tensor \"a\" is named twice in the header"),
        "{e}"
    );
    // The same name spelled with an escape is the same name.
    let escaped = r#"{"ab":{"dtype":"I8","shape":[4],"data_offsets":[0,4]},"a\u0062":{"dtype":"I8","shape":[4],"data_offsets":[4,8]}}"#;
    let e = refused(file(escaped, &[0; 8]));
    assert!(e.contains("tensor \"ab\" is named twice"), "{e}");
    let meta_twice = r#"{"__metadata__":{"k":"1"},"a":{"dtype":"I8","shape":[4],"data_offsets":[0,4]},"__metadata__":{"k":"2"}}"#;
    let e = refused(file(meta_twice, &[0; 4]));
    assert!(
        e.contains("\"__metadata__\" appears twice in the header"),
        "{e}"
    );
    let key_twice = r#"{"__metadata__":{"format":"pt","format":"np"},"a":{"dtype":"I8","shape":[4],"data_offsets":[0,4]}}"#;
    let e = refused(file(key_twice, &[0; 4]));
    assert!(
        e.contains("metadata key \"format\" appears twice in \"__metadata__\""),
        "{e}"
    );

    let e = refused(file("not json", &[]));
    assert!(e.contains("header (bytes 8..16)"), "{e}");

    let e = BytesWeightLoader::open("/nonexistent/weights.safetensors")
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/weights.safetensors"), "{e}");
}

/// xorshift64 (no rand dependency).
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// A bounded, seeded fuzz run in the normal suite (the cargo-fuzz target in
/// fuzz/ explores further: tools/fuzz_safetensors.sh): mutations of a valid
/// file, loaded and, when they load, every tensor read and converted.
#[test]
fn five_thousand_mutations_never_panic() {
    let base = std::fs::read(fixture("dtypes.safetensors")).unwrap();
    let header_end = 8 + u64::from_le_bytes(base[..8].try_into().unwrap()) as usize;
    let mut rng = Rng(0x5eed_cafe);
    let mut loaded = 0;
    for _ in 0..5000 {
        let mut b = base.clone();
        for _ in 0..1 + rng.below(3) {
            let span = if rng.below(4) == 0 {
                b.len()
            } else {
                header_end.min(b.len())
            };
            let at = rng.below(span as u64) as usize;
            match rng.below(4) {
                0 => b[at] ^= 1 << rng.below(8),
                1 => b[at] = b"0123456789[],:\"{}"[rng.below(17) as usize],
                2 => b.truncate(at),
                _ => {
                    b.remove(at);
                }
            }
            if b.is_empty() {
                break;
            }
        }
        if let Ok(l) = BytesWeightLoader::from_bytes(b) {
            loaded += 1;
            let mut read = Vec::new();
            for name in l.names() {
                if let Ok(t) = l.get(&name) {
                    assert_eq!(t.dims(), &l.meta(&name).unwrap().dims[..]);
                    let _ = l.get_as(&name, DType::F32);
                    read.push((name, t));
                }
            }
            // What loaded writes back and loads again the same.
            let rows = read.iter().map(|(n, t)| (n.as_str(), t));
            let again = serialize_safetensors(rows, l.file_metadata()).unwrap();
            let back = BytesWeightLoader::from_bytes(again).unwrap();
            assert_eq!(back.file_metadata(), l.file_metadata());
            assert_eq!(back.names().len(), read.len());
            for (name, t) in &read {
                assert_eq!(&back.get(name).unwrap(), t);
            }
        }
    }
    assert!(loaded > 0, "some mutants (e.g. data-byte flips) still load");
}

#[test]
fn set_param_from_reproduces_the_torch_mlp_piece_by_piece() {
    // Reserved buffers still count as unset; each param then set from the
    // file (f32 ones copied in place, the others converted).
    let loader = BytesWeightLoader::open(fixture("mlp.safetensors")).unwrap();
    let mut c = Session::new(Device::Cpu).try_compile(mlp()).unwrap();
    c.reserve_params().unwrap();
    let e = c.try_run(&[("x", &[0f32; 8][..])]).unwrap_err().to_string();
    assert!(e.contains("is not set"), "{e}");
    for name in c.param_names() {
        c.set_param_from(&name, &loader, &name).unwrap();
    }
    let y = runs_like_torch(&mut c);
    // Wrong dims: an error naming both, and the param keeps its value.
    let e = c
        .set_param_from("fc1.bias", &loader, "fc2.bias")
        .unwrap_err()
        .to_string();
    assert!(e.contains("fc1.bias") && e.contains("[3]"), "{e}");
    assert_eq!(runs_like_torch(&mut c), y);
}

/// `y = x + w` over `n` f32 values.
fn add_param(n: usize) -> Graph {
    let mut g = Graph::new("add");
    let x = g.input("x", Shape::new(&[n], DType::F32));
    let w = g.param("w", Shape::new(&[n], DType::F32));
    let y = g.add(x, w);
    g.set_outputs(vec![y]);
    g
}

#[test]
fn a_tensor_larger_than_a_piece_lands_whole() {
    // 1.2 MB: more than one piece of the mapped file.
    let n = 300_000;
    let w: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5 - 7.0).collect();
    let data: Vec<u8> = w.iter().flat_map(|v| v.to_le_bytes()).collect();
    let header = format!(
        r#"{{"w":{{"dtype":"F32","shape":[{n}],"data_offsets":[0,{}]}}}}"#,
        data.len()
    );
    let loader = BytesWeightLoader::from_bytes(file(&header, &data)).unwrap();
    let mut c = Session::new(Device::Cpu).try_compile(add_param(n)).unwrap();
    c.set_param_from("w", &loader, "w").unwrap();
    let x = vec![1.0f32; n];
    let y = c.try_run(&[("x", &x)]).unwrap().remove(0);
    let want: Vec<f32> = w.iter().map(|v| v + 1.0).collect();
    assert_eq!(y, want);
}

/// A loader whose pieces stop short: after `good` bytes it fails, or
/// (with `fail` false) it just stops.
struct ShortLoader {
    good: usize,
    fail: bool,
}

impl WeightLoader for ShortLoader {
    fn names(&self) -> Vec<String> {
        vec!["w".into()]
    }
    fn meta(&self, name: &str) -> Result<rlx_runtime::TensorMeta, WeightError> {
        Ok(rlx_runtime::TensorMeta {
            name: name.into(),
            dtype: DType::F32,
            dims: vec![4],
        })
    }
    fn get(&self, _: &str) -> Result<rlx_ir::HostTensor, WeightError> {
        Ok(rlx_ir::HostTensor::from_slice(&[9f32; 4], &[4]).unwrap())
    }
    fn read_pieces(&self, _: &str, sink: rlx_runtime::PieceSink<'_>) -> rlx_runtime::Result<()> {
        sink(0, &vec![0u8; self.good])?;
        if self.fail {
            return Err(WeightError::Io {
                source_name: "short".into(),
                source: rlx_ir::ErrorSource::new(std::io::Error::other("read failed")),
            }
            .into());
        }
        Ok(())
    }
}

#[test]
fn a_loader_failing_midway_leaves_the_param_unset() {
    for fail in [true, false] {
        let mut c = Session::new(Device::Cpu).try_compile(add_param(4)).unwrap();
        c.set_param("w", &[1.0; 4]);
        let e = c
            .set_param_from("w", &ShortLoader { good: 8, fail }, "w")
            .unwrap_err()
            .to_string();
        let why = if fail { "read failed" } else { "8 bytes" };
        assert!(e.contains(why), "{e}");
        let e = c.try_run(&[("x", &[0f32; 4][..])]).unwrap_err().to_string();
        assert!(e.contains("\"w\"") && e.contains("is not set"), "{e}");
        // The default read_pieces (one piece from `get`: nines) sets it again.
        c.set_param_from("w", &Whole(ShortLoader { good: 0, fail }), "w")
            .unwrap();
        assert_eq!(c.run(&[("x", &[1f32; 4][..])]), vec![vec![10.0; 4]]);
    }
}

/// [`ShortLoader`] with the default `read_pieces`.
struct Whole(ShortLoader);

impl WeightLoader for Whole {
    fn names(&self) -> Vec<String> {
        self.0.names()
    }
    fn meta(&self, name: &str) -> Result<rlx_runtime::TensorMeta, WeightError> {
        self.0.meta(name)
    }
    fn get(&self, name: &str) -> Result<rlx_ir::HostTensor, WeightError> {
        self.0.get(name)
    }
}
