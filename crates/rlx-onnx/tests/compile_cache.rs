//! The compiled-graph cache: a second load of the same model bytes with the
//! same options takes the first load's compiled graph (a cache hit) and
//! gives identical outputs, both within 1e-4 of ONNX Runtime's (fixture of
//! `tools/gen_tiny_cnn_fixture.py`); other options, or the cache switched
//! off, compile afresh. One test: the cache and its counters are
//! process-wide.

use rlx_ir::HostTensor;
use rlx_onnx::compile_cache::{cache_stats, cached_models, clear_compile_cache, CacheStats};
use rlx_onnx::{Device, OnnxModel, OnnxOptions};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cnn")
}

fn f32s(file: &str) -> Vec<f32> {
    let path = dir().join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

fn run(options: OnnxOptions, x: &HostTensor) -> Vec<f32> {
    let mut model =
        OnnxModel::load_with(dir().join("tiny_cnn.onnx"), Device::Cpu, options).unwrap();
    let out = model.run(&[("input", x)]).unwrap();
    out[0].to_vec().unwrap()
}

#[test]
fn second_load_hits_the_cache_with_identical_outputs() {
    clear_compile_cache();
    let x = HostTensor::from_vec(f32s("input.bin"), &[2, 3, 12, 12]).unwrap();
    let start = cache_stats();
    let delta = || {
        let now = cache_stats();
        (now.hits - start.hits, now.misses - start.misses)
    };

    let first = run(OnnxOptions::default(), &x);
    assert_eq!(delta(), (0, 1), "the first load compiles");
    assert_eq!(cached_models(), 1);
    let second = run(OnnxOptions::default(), &x);
    assert_eq!(delta(), (1, 1), "the second load hits the cache");
    assert_eq!(first, second, "a cached graph gives identical outputs");

    // The outputs are right, not only equal: ONNX Runtime's on this input.
    let want = f32s("output.bin");
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    assert!(scale > 0.1, "a degenerate fixture");
    for (i, (g, w)) in second.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-4 * scale, "element {i}: {g} vs ORT {w}");
    }

    // Other options are another specialisation; no cache is no lookup.
    run(OnnxOptions::default().decompose_composites(true), &x);
    assert_eq!(delta(), (1, 2), "other options compile afresh");
    run(OnnxOptions::default().compile_cache(false), &x);
    assert_eq!(delta(), (1, 2), "compile_cache(false) bypasses the cache");

    clear_compile_cache();
    assert_eq!(cached_models(), 0);
    run(OnnxOptions::default(), &x);
    assert_eq!(delta(), (1, 3), "a cleared cache compiles again");
    assert_eq!(
        cache_stats(),
        CacheStats {
            hits: start.hits + 1,
            misses: start.misses + 3
        }
    );
}
