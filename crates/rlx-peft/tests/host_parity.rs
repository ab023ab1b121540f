//! Host arithmetic against HF PEFT 0.21: every adapter type is loaded from
//! the directory PEFT's `save_pretrained` wrote, then its forward pass,
//! delta weight / rotation, merged and unmerged weights are compared with
//! PEFT's at 1e-6.

mod common;
use common::{assert_close, base_linear, fixture, fixtures, tanh, tensor, vals, values, MODULES};
use rlx_peft::{Adapter, AdapterSet, AnyAdapter, Linear};
use serde_json::Value;

const CASES: [&str; 8] = [
    "lora",
    "lora_rslora",
    "dora",
    "ia3",
    "adalora",
    "oft",
    "oft_exact",
    "oft_shared",
];

fn model_forward(set: &AdapterSet, case: &Value, x: &rlx_ir::HostTensor) -> Vec<f64> {
    let h = set
        .get("0")
        .unwrap()
        .forward(x, &base_linear(case, "0"))
        .unwrap();
    let y = set
        .get("2")
        .unwrap()
        .forward(&tanh(&h), &base_linear(case, "2"))
        .unwrap();
    vals(&y)
}

#[test]
fn saved_adapters_load_with_peft_tensors_and_give_peft_outputs() {
    for name in CASES {
        let case = fixture(name);
        let set = AdapterSet::load(fixtures().join(name)).unwrap();
        assert_eq!(
            set.modules().keys().collect::<Vec<_>>(),
            MODULES,
            "{name}: modules"
        );
        let saved = case["tensors"].as_object().unwrap();
        assert_eq!(set.tensors().len(), saved.len(), "{name}: tensor count");
        for (key, t) in set.tensors() {
            // DoRA's magnitude is saved without the module parameter's `.weight`
            let want = saved
                .get(key)
                .or_else(|| saved.get(&format!("{key}.weight")));
            let want = want.unwrap_or_else(|| panic!("{name}: {key} not in PEFT's tensors"));
            assert_eq!(t, &tensor(want), "{name}: {key} bytes");
        }
        let x = tensor(&case["x"]);
        let err = assert_close(
            &format!("{name} y"),
            &model_forward(&set, &case, &x),
            &values(&case["y"]),
        );
        println!("{name:12} forward max |diff| {err:.2e}");
    }
}

#[test]
fn merge_and_unmerge_match_peft() {
    for name in CASES {
        let case = fixture(name);
        let set = AdapterSet::load(fixtures().join(name)).unwrap();
        let mut merged: Vec<Linear> = Vec::new();
        for m in MODULES {
            let rec = &case["modules"][m];
            let adapter = set.get(m).unwrap();
            let mut base = base_linear(&case, m);
            let record = adapter.merge(&mut base).unwrap();
            let w = vals(base.weight());
            let b = vals(base.bias().unwrap());
            assert_close(
                &format!("{name}.{m} merged weight"),
                &w,
                &values(&rec["merged_weight"]),
            );
            assert_close(
                &format!("{name}.{m} merged bias"),
                &b,
                &values(&rec["merged_bias"]),
            );
            merged.push(base.clone());
            adapter.unmerge(&mut base, &record).unwrap();
            let w = vals(base.weight());
            let b = vals(base.bias().unwrap());
            assert_close(
                &format!("{name}.{m} unmerged weight"),
                &w,
                &values(&rec["unmerged_weight"]),
            );
            assert_close(
                &format!("{name}.{m} unmerged bias"),
                &b,
                &values(&rec["unmerged_bias"]),
            );
        }
        let x = tensor(&case["x"]);
        let h = merged[0].forward(&x).unwrap();
        let y = vals(&merged[1].forward(&tanh(&h)).unwrap());
        assert_close(&format!("{name} y_merged"), &y, &values(&case["y_merged"]));
    }
}

#[test]
fn delta_weights_rotations_and_norms_match_peft() {
    for name in CASES {
        let case = fixture(name);
        let set = AdapterSet::load(fixtures().join(name)).unwrap();
        for m in MODULES {
            let d = &case["derived"][m];
            let what = format!("{name}.{m}");
            match set.get(m).unwrap() {
                AnyAdapter::Lora(a) => {
                    assert_eq!(
                        a.config().scaling() as f32,
                        d["scaling"].as_f64().unwrap() as f32
                    );
                    let got = vals(&a.delta_weight());
                    assert_close(&format!("{what} delta"), &got, &values(&d["delta_weight"]));
                }
                AnyAdapter::Dora(a) => {
                    let got = vals(&a.lora().delta_weight());
                    assert_close(&format!("{what} delta"), &got, &values(&d["delta_weight"]));
                    let norm = a.weight_norm(&base_linear(&case, m)).unwrap();
                    let norm: Vec<f64> = norm.iter().map(|&v| f64::from(v)).collect();
                    assert_close(
                        &format!("{what} weight norm"),
                        &norm,
                        &values(&d["weight_norm"]),
                    );
                }
                AnyAdapter::AdaLora(a) => {
                    assert_eq!(a.config().ranknum, d["ranknum"].as_f64().unwrap());
                    assert_eq!(a.config().scaling(), d["scaling"].as_f64().unwrap());
                    let got = vals(&a.delta_weight());
                    assert_close(&format!("{what} delta"), &got, &values(&d["delta_weight"]));
                }
                AnyAdapter::Oft(a) => {
                    assert_eq!(a.config().r as u64, d["r"].as_u64().unwrap());
                    assert_eq!(
                        a.config().block_size as u64,
                        d["block_size"].as_u64().unwrap()
                    );
                    let got = vals(&a.rotation().unwrap());
                    assert_close(&format!("{what} rotation"), &got, &values(&d["rotation"]));
                }
                AnyAdapter::Ia3(a) => {
                    assert_eq!(
                        a.is_feedforward(),
                        d["is_feedforward"].as_bool().unwrap(),
                        "{what}"
                    );
                }
            }
        }
    }
}

#[test]
fn adapters_change_the_output() {
    // Guards the fixtures themselves: an identity adapter would make every
    // parity check above vacuous.
    for name in CASES {
        let case = fixture(name);
        let (y, y0) = (values(&case["y"]), values(&case["y_base"]));
        let moved = y
            .iter()
            .zip(&y0)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(
            moved > 0.05,
            "{name}: adapter moves the output by only {moved}"
        );
    }
}

#[test]
fn adalora_adapter_cut_by_rank_allocation_loads_like_peft() {
    // PEFT saves only the kept triplets (rank_pattern in the config) and keeps
    // ranknum at init_r when it loads them back.
    let case = fixture("adalora");
    let alloc = &case["allocation"];
    let set = AdapterSet::load(fixtures().join("adalora_masked")).unwrap();
    for m in MODULES {
        let AnyAdapter::AdaLora(a) = set.get(m).unwrap() else {
            panic!("module {m} is not AdaLoRA");
        };
        let want_ranknum = alloc["masked_ranknum_after_load"][m].as_f64().unwrap();
        assert_eq!(a.config().ranknum, want_ranknum, "module {m} ranknum");
        let kept = alloc["masked_saved_config"]["rank_pattern"][format!("{m}.lora_E")]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b.as_bool().unwrap())
            .count();
        assert_eq!(a.config().r, kept, "module {m} rank");
    }
    let y = model_forward(&set, &case, &tensor(&case["x"]));
    assert_close(
        "adalora_masked y",
        &y,
        &values(&alloc["masked_y_after_load"]),
    );
}

#[test]
fn trained_values_round_trip_through_the_peft_format() {
    let set = AdapterSet::load(fixtures().join("dora")).unwrap();
    // new values for one tensor, as a training loop would produce
    let mut tensors = set.tensors().clone();
    let key = "base_model.model.0.lora_B.weight";
    let t = &tensors[key];
    let moved: Vec<f32> = t
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|v| v * 1.5 + 0.125)
        .collect();
    tensors.insert(
        key.into(),
        rlx_ir::HostTensor::from_vec(moved, t.dims()).unwrap(),
    );
    let trained = AdapterSet::from_tensors(set.config_json(), tensors.clone()).unwrap();
    let dir = std::env::temp_dir().join(format!("rlx_peft_roundtrip_{}", std::process::id()));
    trained.save(&dir).unwrap();
    let back = AdapterSet::load(&dir).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(back.tensors(), &tensors);
    assert_eq!(back.config(), set.config());
    assert_eq!(back.modules(), trained.modules());
    assert_ne!(back.modules(), set.modules());
}
