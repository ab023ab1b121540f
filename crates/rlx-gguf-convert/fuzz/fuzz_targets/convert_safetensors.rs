//! Fuzzes safetensors -> GGUF conversion: arbitrary bytes as a safetensors
//! file, converted with a K-quant default; must never panic, and whatever
//! converts must be a GGUF file the reader accepts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rlx_gguf::{GgmlType, GgufReader};
use rlx_gguf_convert::Converter;

fuzz_target!(|data: &[u8]| {
    let c = Converter::new(GgmlType::Q4_K).override_pattern("*.b*", GgmlType::Q8_0);
    if let Ok(conv) = c.convert_safetensors_bytes(data) {
        let bytes = conv.to_bytes().expect("a converted model writes");
        let r = GgufReader::new(&bytes[..]).expect("our output parses");
        assert_eq!(r.tensors().len(), conv.report.tensors.len());
    }
});
