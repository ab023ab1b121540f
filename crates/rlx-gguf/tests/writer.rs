//! The writer: the committed Rust-written fixture stays in step, files
//! round-trip through the reader for every version, and bad input is refused.

mod common;
#[path = "common/rust_fixture.rs"]
mod rust_fixture;
use common::{assert_bytes_eq, fixture};
use rlx_gguf::{codecs, GgmlType, GgufError, GgufReader, GgufWriter, Value};
use rlx_ir::HostTensor;

#[test]
fn committed_rust_fixture_matches_the_writer() {
    // tools/check_gguf_roundtrip.py checks this file with gguf-py; if the
    // writer changes, rerun `cargo run -p rlx-gguf --example write_fixture`.
    let bytes = rust_fixture::build().to_bytes().unwrap();
    let committed = std::fs::read(fixture("rust_written.gguf")).unwrap();
    assert_bytes_eq("rust_written.gguf", &bytes, &committed);
}

fn fnv1a64(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// tools/check_gguf_roundtrip.py records, after gguf-py read the file with
/// the metadata and tensors we meant, which file it checked and what
/// matched: that record must describe the committed file (which the writer
/// reproduces, above), and every block type gguf-py can quantize (listed by
/// gguf-py in codecs.gguf) must be among those whose bytes matched.
#[test]
fn gguf_py_checked_the_committed_rust_fixture() {
    let committed = std::fs::read(fixture("rust_written.gguf")).unwrap();
    let record = std::fs::read_to_string(fixture("rust_written.gguf_py_check.txt")).unwrap();
    let field = |key: &str| -> &str {
        record
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("{key} missing from the gguf-py record"))
    };
    assert_eq!(field("bytes"), committed.len().to_string());
    assert_eq!(field("fnv1a64"), format!("{:016x}", fnv1a64(&committed)));
    let r = GgufReader::new(&committed[..]).unwrap();
    assert_eq!(field("keys"), r.metadata().len().to_string());
    assert_eq!(field("tensors"), r.tensors().len().to_string());
    let quantized: Vec<&str> = field("quantized_equal").split(',').collect();
    let dequantized: Vec<&str> = field("dequantized_equal").split(',').collect();
    let gguf_py = common::open("codecs.gguf");
    let listed = |key: &str| -> Vec<String> {
        let a = gguf_py.metadata().get_array(key).unwrap();
        a.as_strings()
            .unwrap()
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    for ty in listed("fixture.quantized_by_gguf_py") {
        let block = GgmlType::from_name(&ty).unwrap().block_size() > 1;
        assert!(
            !block || quantized.contains(&ty.as_str()),
            "{ty} not checked by gguf-py"
        );
    }
    for ty in listed("fixture.dequantized_by_gguf_py") {
        let ours = r.tensor_info(&format!("q.{ty}")).is_some();
        assert!(
            !ours || dequantized.contains(&ty.as_str()),
            "{ty} not dequantized by gguf-py"
        );
    }
}

#[test]
fn written_files_read_back_identically_in_every_version() {
    let w = rust_fixture::build();
    let dir = std::env::temp_dir().join(format!("rlx-gguf-writer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for version in 1..=3 {
        let mut w = w.clone();
        w.set_version(version).unwrap();
        let path = dir.join(format!("v{version}.gguf"));
        w.write_file(&path).unwrap();
        let r = GgufReader::open(&path).unwrap();
        assert_eq!(r.version(), version);
        assert_eq!(r.alignment(), 128);
        assert_eq!(r.metadata(), w.metadata(), "v{version}");
        assert_eq!(r.tensors().len(), w.tensor_count());
        let x = rust_fixture::source_values(512);
        for ty in rust_fixture::quantized_types() {
            let q = r.tensor_data(&format!("q.{ty}")).unwrap();
            assert_eq!(q, codecs::quantize(ty, &x).unwrap(), "{ty}");
            let dq = r.tensor(&format!("dq.{ty}")).unwrap();
            assert_eq!(r.dequantize(&format!("q.{ty}")).unwrap(), dq, "{ty}");
        }
        let f32s = r.tensor("plain.f32").unwrap();
        assert_eq!(f32s.dims(), [4, 64]);
        assert_eq!(
            f32s.to_vec::<f32>().unwrap(),
            rust_fixture::source_values(256)
        );
        assert_eq!(
            r.tensor("plain.i64").unwrap().to_vec::<i64>().unwrap(),
            [i64::MIN, 42, i64::MAX]
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn writer_refuses_bad_input_with_named_errors() {
    let mut w = GgufWriter::new();
    w.add_metadata("k", 1u32).unwrap();
    assert!(matches!(
        w.add_metadata("k", 2u32),
        Err(GgufError::DuplicateKey { .. })
    ));
    let e = w
        .add_metadata("general.alignment", Value::U64(32))
        .unwrap_err();
    assert!(matches!(e, GgufError::BadAlignment { .. }), "{e}");
    assert!(w.set_alignment(48).is_err());
    assert!(w.set_version(4).is_err());

    w.add_tensor_bytes("t", &[32], GgmlType::Q8_0, vec![0; 34])
        .unwrap();
    let e = w
        .add_tensor_bytes("t", &[32], GgmlType::Q8_0, vec![0; 34])
        .unwrap_err();
    assert!(matches!(e, GgufError::DuplicateTensor { .. }), "{e}");
    let e = w
        .add_tensor_bytes("u", &[32], GgmlType::Q8_0, vec![0; 33])
        .unwrap_err();
    assert!(
        e.to_string().contains("'u'") && e.to_string().contains("34"),
        "{e}"
    );
    let e = w
        .add_tensor_bytes("u", &[16], GgmlType::Q8_0, vec![0; 17])
        .unwrap_err();
    assert!(e.to_string().contains("block size 32"), "{e}");
    let e = w
        .add_tensor_bytes("u", &[1, 1, 1, 1, 1], GgmlType::F32, vec![0; 4])
        .unwrap_err();
    assert!(e.to_string().contains("5 dims"), "{e}");
    let e = w
        .add_quantized("u", &[256], &[0.0; 256], GgmlType::IQ2_XS)
        .unwrap_err();
    assert!(e.to_string().contains("IQ2_XS"), "{e}");
    let e = w
        .add_quantized("u", &[2, 256], &[0.0; 256], GgmlType::Q4_K)
        .unwrap_err();
    assert!(matches!(e, GgufError::DataLength { .. }), "{e}");
    let u8s = HostTensor::from_vec(vec![1u8, 2], &[2]).unwrap();
    let e = w.add_host_tensor("u", &u8s).unwrap_err();
    assert!(e.to_string().contains("u8"), "{e}");
    // Nothing refused was added.
    assert_eq!(w.tensor_count(), 1);
    let r = GgufReader::new(w.to_bytes().unwrap()).unwrap();
    assert_eq!(r.tensors().len(), 1);
    assert_eq!(r.metadata().len(), 1);
}

#[test]
fn custom_alignment_pads_every_tensor() {
    let mut w = GgufWriter::new();
    w.set_alignment(256).unwrap();
    for i in 0..3 {
        let t = HostTensor::from_vec(vec![i as f32; 3 + i], &[3 + i]).unwrap();
        w.add_host_tensor(&format!("t{i}"), &t).unwrap();
    }
    let bytes = w.to_bytes().unwrap();
    assert_eq!(bytes.len() % 256, 0);
    let r = GgufReader::new(&bytes[..]).unwrap();
    assert_eq!(r.alignment(), 256);
    for (i, t) in r.tensors().iter().enumerate() {
        assert_eq!(t.file_offset() % 256, 0);
        assert_eq!(
            r.tensor(t.name()).unwrap().to_vec::<f32>().unwrap(),
            vec![i as f32; 3 + i]
        );
    }
}
