//! Fuzzes the safetensors loader: load arbitrary bytes; when they load,
//! list, read and convert every tensor. Must never panic, and (with
//! libFuzzer's RSS / malloc limits) never allocate far beyond the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rlx_ir::DType;
use rlx_runtime::{BytesWeightLoader, WeightLoader};

fuzz_target!(|data: &[u8]| {
    let Ok(l) = BytesWeightLoader::from_bytes(data.to_vec()) else {
        return;
    };
    for name in l.names() {
        let Ok(meta) = l.meta(&name) else {
            continue;
        };
        let (_, bytes) = l.view(&name).expect("meta succeeded");
        assert_eq!(
            bytes.len(),
            meta.dims.iter().product::<usize>() * meta.dtype.size_bytes()
        );
        let t = l
            .get(&name)
            .expect("a listed tensor of a known dtype reads");
        assert_eq!(t.dims(), &meta.dims[..]);
        let _ = l.get_as(&name, DType::F32);
    }
});
