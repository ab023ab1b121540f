//! AdaLoRA's rank allocator against PEFT's `RankAllocator`, replaying the
//! parameters and gradients PEFT's own training run recorded
//! (tools/gen_peft_fixtures.py: 10 SGD steps, init_r 3 -> target_r 2 over
//! two modules, tinit 1, tfinal 3, deltaT 1): per step the budget, the
//! importance EMAs, the rank pattern and the masked `lora_E`.

mod common;
use common::{assert_close, fixture, values, MODULES};
use rlx_peft::{AllocatorConfig, RankAllocator, TripletMut, KEY_PREFIX};
use serde_json::Value;
use std::collections::BTreeMap;

fn f32s(v: &Value) -> Vec<f32> {
    values(v).into_iter().map(|x| x as f32).collect()
}

fn widen(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| f64::from(x)).collect()
}

#[test]
fn rank_allocation_replays_peft_step_by_step() {
    let case = fixture("adalora");
    let alloc = &case["allocation"];
    let c = &alloc["config"];
    let u = |k: &str| c[k].as_u64().unwrap() as usize;
    let config = AllocatorConfig {
        target_r: u("target_r"),
        tinit: u("tinit"),
        tfinal: u("tfinal"),
        delta_t: u("deltaT"),
        beta1: c["beta1"].as_f64().unwrap(),
        beta2: c["beta2"].as_f64().unwrap(),
        total_step: u("total_step"),
    };
    let init_r = u("init_r");
    let modules: Vec<(String, usize)> = MODULES.iter().map(|m| (m.to_string(), init_r)).collect();
    let mut ra = RankAllocator::new(config, &modules).unwrap();
    assert_eq!(ra.init_budget() as u64, alloc["init_bgt"].as_u64().unwrap());
    assert_eq!(
        ra.target_budget() as u64,
        alloc["target_bgt"].as_u64().unwrap()
    );

    let steps = alloc["steps"].as_array().unwrap();
    let mut masks_seen = 0;
    for s in steps {
        let step = s["step"].as_u64().unwrap() as usize;
        let (budget, mask) = ra.budget_schedule(step);
        assert_eq!(
            budget as u64,
            s["budget"].as_u64().unwrap(),
            "step {step} budget"
        );
        assert_eq!(
            mask,
            s["mask_ind"].as_bool().unwrap(),
            "step {step} mask flag"
        );

        let key = |m: &str, t: &str| format!("{KEY_PREFIX}{m}.{t}");
        let p = &s["params_seen"];
        let gr = &s["grads"];
        let mut owned: BTreeMap<&str, [Vec<f32>; 6]> = BTreeMap::new();
        for m in MODULES {
            owned.insert(
                m,
                ["lora_A", "lora_E", "lora_B"]
                    .into_iter()
                    .flat_map(|t| [f32s(&p[key(m, t)]), f32s(&gr[key(m, t)])])
                    .collect::<Vec<_>>()
                    .try_into()
                    .unwrap(),
            );
        }
        let mut triplets: BTreeMap<String, TripletMut> = owned
            .iter_mut()
            .map(|(m, [a, ga, e, ge, b, gb])| {
                let t = TripletMut {
                    lora_a: a,
                    grad_a: ga,
                    lora_e: e,
                    grad_e: ge,
                    lora_b: b,
                    grad_b: gb,
                };
                (m.to_string(), t)
            })
            .collect();
        ra.update_and_allocate(step, &mut triplets).unwrap();
        drop(triplets);

        let state = &s["state_after"];
        let peft_has_state = !state["ipt"].as_object().unwrap().is_empty();
        assert_eq!(
            !ra.importance().is_empty(),
            peft_has_state,
            "step {step}: state kept"
        );
        for (m, imp) in ra.importance() {
            for (t, i) in [("lora_A", &imp.a), ("lora_E", &imp.e), ("lora_B", &imp.b)] {
                let k = format!("{m}.{t}");
                let what = format!("step {step} {k}");
                assert_close(
                    &format!("{what} ipt"),
                    &widen(&i.ipt),
                    &values(&state["ipt"][&k]),
                );
                let (ea, eu) = (&state["exp_avg_ipt"][&k], &state["exp_avg_unc"][&k]);
                assert_close(
                    &format!("{what} exp_avg_ipt"),
                    &widen(&i.exp_avg_ipt),
                    &values(ea),
                );
                assert_close(
                    &format!("{what} exp_avg_unc"),
                    &widen(&i.exp_avg_unc),
                    &values(eu),
                );
            }
        }

        let peft_pattern = s["rank_pattern"].as_object().unwrap();
        match ra.rank_pattern() {
            None => assert!(peft_pattern.is_empty(), "step {step}: PEFT has a pattern"),
            Some(p) => {
                masks_seen += 1;
                for m in MODULES {
                    let want: Vec<bool> = peft_pattern[&format!("{m}.lora_E")]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|b| b.as_bool().unwrap())
                        .collect();
                    assert_eq!(p[m], want, "step {step} module {m} rank pattern");
                }
            }
        }
        for m in MODULES {
            let e = &owned[m][2];
            assert_eq!(
                e,
                &f32s(&s["lora_E_after"][m]),
                "step {step} module {m} lora_E after"
            );
        }
    }
    assert!(masks_seen >= 5, "the replay must exercise masking");
    let last = steps.last().unwrap();
    let kept: usize = MODULES
        .iter()
        .map(|m| {
            f32s(&last["lora_E_after"][*m])
                .iter()
                .filter(|&&e| e != 0.0)
                .count()
        })
        .sum();
    assert_eq!(kept, ra.target_budget(), "final budget reached");
}

#[test]
fn bad_schedules_are_errors() {
    let ok = AllocatorConfig {
        target_r: 2,
        tinit: 1,
        tfinal: 3,
        delta_t: 1,
        beta1: 0.85,
        beta2: 0.85,
        total_step: 10,
    };
    let mods = vec![("m".to_string(), 3)];
    assert!(RankAllocator::new(ok, &mods).is_ok());
    for bad in [
        AllocatorConfig { beta1: 1.0, ..ok },
        AllocatorConfig { beta2: 0.0, ..ok },
        AllocatorConfig {
            tinit: 5,
            tfinal: 5,
            ..ok
        },
        AllocatorConfig { delta_t: 0, ..ok },
    ] {
        let e = RankAllocator::new(bad, &mods).unwrap_err();
        assert!(e.to_string().starts_with("invalid"), "{e}");
    }
    // gradients that do not fit the module's rank
    let mut ra = RankAllocator::new(ok, &mods).unwrap();
    let (a, b, g) = (vec![0.0f32; 6], vec![0.0f32; 6], vec![0.0f32; 5]);
    let mut e = vec![0.0f32; 3];
    let mut t = BTreeMap::new();
    t.insert(
        "m".to_string(),
        TripletMut {
            lora_a: &a,
            grad_a: &g,
            lora_e: &mut e,
            grad_e: &b[..3],
            lora_b: &b,
            grad_b: &b,
        },
    );
    let err = ra.update_and_allocate(0, &mut t).unwrap_err().to_string();
    assert!(err.contains("m.lora_A"), "{err}");
}
