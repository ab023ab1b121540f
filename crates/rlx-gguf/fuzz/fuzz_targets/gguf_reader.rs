//! Fuzzes the GGUF reader: parse arbitrary bytes; when they parse, read and
//! dequantize every tensor and walk the metadata. Must never panic, and
//! (with libFuzzer's RSS / malloc limits) never allocate far beyond the
//! input's size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rlx_gguf::{codecs, GgufReader};

fuzz_target!(|data: &[u8]| {
    let Ok(r) = GgufReader::new(data) else {
        return;
    };
    for (_, v) in r.metadata().iter() {
        let _ = (
            v.as_u64(),
            v.as_f64(),
            v.as_str(),
            v.as_array().map(|a| a.len()),
        );
    }
    for t in r.tensors() {
        let bytes = r.tensor_data(t.name()).expect("listed tensors exist");
        assert_eq!(bytes.len() as u64, t.n_bytes());
        let _ = r.tensor(t.name());
        let _ = r.dequantize(t.name());
        // Re-quantizing what was read exercises the quantizers on odd values.
        if let Ok(values) = r.dequantize_f32(t.name()) {
            if codecs::can_quantize(t.ggml_type()) {
                let q = codecs::quantize(t.ggml_type(), &values).expect("sizes already valid");
                assert_eq!(q.len(), bytes.len());
            }
        }
    }
});
