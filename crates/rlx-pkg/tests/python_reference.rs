//! The package `tools/gen_rlxp_hostile.py` writes from `docs/rlxp.md` alone
//! (Python struct / json / xxhash / zstandard): Rust reads every tensor
//! byte for byte, in every materialize mode, and its graph computes what
//! numpy computes.

use rlx_pkg::{
    compile_rlxp, load_rlxp_graph, load_rlxp_placement, tensors_for_rank, weight_names_for_rank,
    MaterializeMode, Package, Tier,
};
use rlx_runtime::{Device, Session};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rlxp")
        .join(name)
}

fn reference() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("reference.json")).unwrap()).unwrap()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn every_tensor_reads_back_byte_for_byte_in_every_mode() {
    let r = reference();
    for mode in [
        MaterializeMode::Mmap,
        MaterializeMode::Copy,
        MaterializeMode::Lazy,
    ] {
        let p = Package::open_with(fixture("reference.rlxp"), mode).unwrap();
        assert_eq!(p.version(), (1, 0));
        p.verify().unwrap();
        let tensors = r["tensors"].as_object().unwrap();
        assert_eq!(p.tensor_names().len(), tensors.len());
        for (name, want) in tensors {
            let t = p.tensor(name).unwrap();
            assert_eq!(
                t.dtype().short_name(),
                want["dtype"].as_str().unwrap(),
                "{name}"
            );
            let dims: Vec<usize> = want["dims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap() as usize)
                .collect();
            assert_eq!(t.dims(), &dims[..], "{name}");
            assert_eq!(
                t.bytes(),
                &unhex(want["hex"].as_str().unwrap())[..],
                "{name} ({mode:?})"
            );
            let tier = match r["tiers"][name].as_str().unwrap() {
                "hot" => Tier::Hot,
                "warm" => Tier::Warm,
                _ => Tier::Cold,
            };
            assert_eq!(p.entry(name).unwrap().tier, tier);
        }
        // Hot tensors are handed out in place when the file is mapped or copied.
        let view = p.view("w").unwrap();
        assert_eq!(view.is_some(), mode != MaterializeMode::Lazy, "{mode:?}");
        if mode == MaterializeMode::Mmap {
            // Zero-copy: the same bytes at the same address every time, on a
            // 64-byte boundary (the map is page aligned, spans 64-aligned).
            let (a, b) = (view.unwrap(), p.view("w").unwrap().unwrap());
            assert_eq!(a.as_ptr(), b.as_ptr());
            assert_eq!(a.as_ptr() as usize % 64, 0);
            assert_eq!(a, p.tensor("w").unwrap().bytes());
        }
        assert!(
            p.view("emb").unwrap().is_none(),
            "a zstd tensor is not in place"
        );
        // Byte-shuffled zstd blocks (one kept raw in cold_table) decode too.
        assert!(p.entry("emb").unwrap().shuffle && p.entry("cold_table").unwrap().shuffle);
        assert!(!p.entry("b").unwrap().shuffle);
        let q = p.entry("q").unwrap().quant.clone().unwrap();
        assert_eq!((q.scheme.name(), q.dims), ("Q8_0", vec![2, 32]));
        assert_eq!(
            p.tokenizer_json().unwrap().unwrap(),
            r["tokenizer_json"].as_str().unwrap()
        );
        assert_eq!(p.metadata()["writer"], "python reference");
    }
}

#[test]
fn rank_subsets_are_exactly_the_placement() {
    let r = reference();
    let p = Package::open(fixture("reference.rlxp")).unwrap();
    let placement = load_rlxp_placement(fixture("reference.rlxp")).unwrap();
    assert_eq!(&placement, p.placement());
    for (rank, names) in r["ranks"].as_object().unwrap() {
        let rank: u32 = rank.parse().unwrap();
        let want: Vec<String> = names
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect();
        assert_eq!(weight_names_for_rank(&p, rank).unwrap(), want);
        let got = tensors_for_rank(&p, rank).unwrap();
        assert_eq!(got.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(), want);
        for (name, t) in got {
            let hex = r["tensors"][&name]["hex"].as_str().unwrap();
            assert_eq!(t.bytes(), &unhex(hex)[..], "{name}");
        }
    }
    let e = tensors_for_rank(&p, 7).unwrap_err();
    assert_eq!(e.kind(), "UnknownRank");
    assert!(e.to_string().contains("rank 7"), "{e}");
}

#[test]
fn the_stored_graph_computes_what_numpy_computes() {
    let r = reference();
    let g = load_rlxp_graph(fixture("reference.rlxp")).unwrap();
    assert_eq!(g.params().len(), 2);
    let mut c = compile_rlxp(&Session::new(Device::Cpu), fixture("reference.rlxp")).unwrap();
    let x: Vec<f32> = r["x"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect();
    let y = c.run(&[("x", &x)]);
    let want: Vec<f64> = r["y"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(y[0].len(), want.len());
    for (a, b) in y[0].iter().zip(&want) {
        assert!(
            (*a as f64 - b).abs() <= 1e-6 * (1.0 + b.abs()),
            "{a} vs numpy {b}"
        );
    }
}
