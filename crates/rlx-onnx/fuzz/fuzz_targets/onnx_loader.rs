//! Any bytes through the ONNX loader and importer (and the TensorProto
//! reader): errors are fine, panics / hangs / allocation bombs are not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rlx_onnx::{Device, OnnxModel};

fuzz_target!(|data: &[u8]| {
    let _ = rlx_onnx::tensor_from_proto_bytes(data);
    if let Ok(m) = OnnxModel::from_bytes(data, Device::Cpu) {
        let _ = m.import();
    }
});
