//! Fuzzes the safetensors loader: load arbitrary bytes; when they load,
//! list, read and convert every tensor, and write them back
//! (`serialize_safetensors`): that file loads to the same tensors and
//! metadata. Must never panic, and (with libFuzzer's RSS / malloc limits)
//! never allocate far beyond the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rlx_ir::DType;
use rlx_runtime::{serialize_safetensors, BytesWeightLoader, WeightLoader};

fuzz_target!(|data: &[u8]| {
    let Ok(l) = BytesWeightLoader::from_bytes(data.to_vec()) else {
        return;
    };
    let mut read = Vec::new();
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
        read.push((name, t));
    }
    let rows = read.iter().map(|(n, t)| (n.as_str(), t));
    let bytes = serialize_safetensors(rows, l.file_metadata()).expect("loaded names are unique");
    let back = BytesWeightLoader::from_bytes(bytes).expect("a written file loads");
    assert_eq!(back.file_metadata(), l.file_metadata());
    assert_eq!(back.names().len(), read.len());
    for (name, t) in &read {
        assert_eq!(&back.get(name).expect("written tensor reads"), t);
    }
});
