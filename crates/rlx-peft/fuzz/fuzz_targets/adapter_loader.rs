//! Fuzzes the PEFT adapter loader. The first byte picks what is fuzzed:
//! even, the rest is `adapter_model.safetensors` under the fixture LoRA /
//! DoRA / AdaLoRA / IA3 / OFT config; odd, the rest is `adapter_config.json`
//! for the fixture LoRA weights. Whatever loads is then run: forward, merge
//! and unmerge of every module on a base layer of the adapter's own shape.
//! Must never panic, nor allocate far beyond the input's size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rlx_ir::HostTensor;
use rlx_peft::{Adapter, AdapterSet, AnyAdapter, Linear};

const CONFIGS: [&str; 5] = [
    include_str!("../../tests/fixtures/lora/adapter_config.json"),
    include_str!("../../tests/fixtures/dora/adapter_config.json"),
    include_str!("../../tests/fixtures/adalora/adapter_config.json"),
    include_str!("../../tests/fixtures/ia3/adapter_config.json"),
    include_str!("../../tests/fixtures/oft/adapter_config.json"),
];
const LORA_WEIGHTS: &[u8] = include_bytes!("../../tests/fixtures/lora/adapter_model.safetensors");

/// A base layer `[out, in]` the adapter can wrap, when its tensors fix both sides.
fn base_for(a: &AnyAdapter) -> Option<Linear> {
    let (i, o) = match a {
        AnyAdapter::Lora(l) => (l.in_features(), l.out_features()),
        AnyAdapter::Dora(d) => (d.in_features(), d.out_features()),
        AnyAdapter::AdaLora(l) => (l.in_features(), l.out_features()),
        AnyAdapter::Oft(o) => (o.in_features(), 3),
        AnyAdapter::Ia3(l) => (l.features(), l.features()),
    };
    if i * o > 1 << 16 {
        return None;
    }
    let w = HostTensor::from_vec(vec![0.25f32; i * o], &[o, i]).ok()?;
    let b = HostTensor::from_vec(vec![0.5f32; o], &[o]).ok()?;
    Linear::new(w, Some(b)).ok()
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let loaded = if pick % 2 == 0 {
        AdapterSet::from_bytes(CONFIGS[(pick as usize / 2) % CONFIGS.len()], rest)
    } else {
        match std::str::from_utf8(rest) {
            Ok(text) => AdapterSet::from_bytes(text, LORA_WEIGHTS),
            Err(_) => return,
        }
    };
    let Ok(set) = loaded else {
        return;
    };
    for a in set.modules().values() {
        let Some(mut base) = base_for(a) else {
            continue;
        };
        let x = HostTensor::from_vec(vec![1.0f32; base.in_features()], &[1, base.in_features()]).unwrap();
        let _ = a.forward(&x, &base);
        if let Ok(m) = a.merge(&mut base) {
            let _ = a.unmerge(&mut base, &m);
        }
    }
});
