//! A random 2-layer llama GGUF (Q8_0 / Q4_1 / F16 / F32 tensors, GQA 4/2,
//! a trained ~330-token byte-level BPE) against numpy and HF `tokenizers`
//! references from `tools/gen_llama_fixtures.py`.

use rlx_gguf::{GgufReader, GgufWriter};
use rlx_llama::weights::Stacked;
use rlx_llama::{
    generate, GenerateOptions, KvCacheDtype, LlamaConfig, LlamaError, LlamaModel, LlamaOptions,
    LlamaWeights, SamplerConfig, Tokenizer, WeightMode,
};
use serde_json::Value as Json;

const GGUF: &[u8] = include_bytes!("fixtures/tiny_llama.gguf");

fn fixture() -> Json {
    serde_json::from_str(include_str!("fixtures/tiny_llama.json")).expect("fixture JSON")
}

fn ids(v: &Json) -> Vec<u32> {
    v.as_array()
        .expect("an id array")
        .iter()
        .map(|x| x.as_u64().expect("an id") as u32)
        .collect()
}

fn model(mode: WeightMode, prefill_chunk: usize) -> LlamaModel {
    model_with_context(mode, prefill_chunk, 64)
}

fn model_with_context(mode: WeightMode, prefill_chunk: usize, context: usize) -> LlamaModel {
    model_with(LlamaOptions {
        weights: mode,
        context,
        prefill_chunk,
        ..LlamaOptions::default()
    })
}

fn model_with(opts: LlamaOptions) -> LlamaModel {
    let r = GgufReader::new(GGUF).expect("tiny GGUF parses");
    LlamaModel::from_reader(&r, opts).expect("tiny model loads")
}

/// Max |a - b| over the rows, relative to the row's max |b|.
fn max_rel_err(got: &[f32], want: &Json, vocab: usize) -> f64 {
    let want: Vec<Vec<f64>> = want
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(got.len(), want.len() * vocab);
    let mut worst: f64 = 0.0;
    for (row, w) in got.chunks(vocab).zip(&want) {
        let scale = w.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        for (g, w) in row.iter().zip(w) {
            worst = worst.max((*g as f64 - w).abs() / scale);
        }
    }
    worst
}

fn greedy(m: &mut LlamaModel, prompt: &[u32], n: usize) -> Vec<u32> {
    let opts = GenerateOptions {
        max_tokens: n,
        ..GenerateOptions::default()
    };
    generate(m, prompt, &opts, |_| {})
        .expect("generates")
        .tokens
}

#[test]
fn config_from_metadata() {
    let r = GgufReader::new(GGUF).unwrap();
    let c = LlamaConfig::from_gguf(r.metadata()).unwrap();
    assert_eq!(
        (
            c.n_layers,
            c.dim,
            c.ffn_dim,
            c.n_heads,
            c.n_kv_heads,
            c.head_dim
        ),
        (2, 64, 128, 4, 2, 16)
    );
    assert_eq!(c.rope_base, 10000.0);
}

#[test]
fn f32_logits_and_greedy_match_numpy() {
    let fx = fixture();
    let prompt = ids(&fx["prompt"]);
    // Chunks of 3 cover a padded last chunk; 1 is the decode path throughout.
    for chunk in [1, 3, 16] {
        let mut m = model(WeightMode::F32, chunk);
        let vocab = m.config().vocab_size;
        let mut cache = m.new_cache();
        let logits = m.forward(&prompt, &mut cache).unwrap();
        let err = max_rel_err(&logits, &fx["exact"]["logits"], vocab);
        assert!(err < 1e-4, "chunk {chunk}: relative logit error {err}");
        assert_eq!(cache.len(), prompt.len());
        assert_eq!(
            greedy(&mut m, &prompt, 20),
            ids(&fx["exact"]["greedy"]),
            "chunk {chunk}"
        );
    }
}

/// A prompt's first chunk runs in a graph without cache slots (it attends
/// over its own tokens only): the last row's logits of the 8-token prompt
/// in one such chunk (8), in two (4 + 4: the second over the cache the
/// first filled) and after it (2 + 2 + ... from chunk 2) are numpy's.
#[test]
fn first_chunk_without_cache_slots_matches_numpy() {
    let fx = fixture();
    let prompt = ids(&fx["prompt"]);
    let last = &fx["exact"]["logits"].as_array().unwrap()[prompt.len() - 1];
    for chunk in [8, 4, 2] {
        for mode in [WeightMode::F32, WeightMode::Quantized] {
            let mut m = model(mode, chunk);
            let vocab = m.config().vocab_size;
            let mut cache = m.new_cache();
            let logits = m.forward_last(&prompt, &mut cache).unwrap();
            assert_eq!(cache.len(), prompt.len());
            let err = max_rel_err(&logits, &Json::Array(vec![last.clone()]), vocab);
            // Quantized: ggml's activation rounding on top (see below).
            let tol = if mode == WeightMode::F32 { 1e-4 } else { 5e-2 };
            assert!(
                err < tol,
                "chunk {chunk} {mode:?}: relative logit error {err}"
            );
        }
    }
}

#[test]
fn quantized_logits_and_greedy_match_numpy_ggml_math() {
    let fx = fixture();
    let prompt = ids(&fx["prompt"]);
    let mut m = model(WeightMode::Quantized, 4);
    let vocab = m.config().vocab_size;
    let logits = m.forward(&prompt, &mut m.new_cache()).unwrap();
    let err = max_rel_err(&logits, &fx["q8"]["logits"], vocab);
    assert!(
        err < 1e-4,
        "relative logit error {err} against ggml's activation-quantized math"
    );
    // The exact reference differs by the activation rounding only.
    let err = max_rel_err(&logits, &fx["exact"]["logits"], vocab);
    assert!(err > 1e-6 && err < 5e-2, "quantized vs exact: {err}");
    assert_eq!(greedy(&mut m, &prompt, 20), ids(&fx["q8"]["greedy"]));
}

/// The f16 KV cache rounds only the stored keys / values (relative
/// 2^-11): against the numpy f64 forward (f32 weights) the logits stay
/// within 1e-3 of the row's largest, greedy generation is numpy's, and
/// against the f32 cache the logits move by less than 1e-2.
#[test]
fn f16_kv_cache_matches_numpy_and_the_f32_cache() {
    let fx = fixture();
    let prompt = ids(&fx["prompt"]);
    for chunk in [1, 3, 16] {
        let opts = LlamaOptions {
            weights: WeightMode::F32,
            context: 64,
            prefill_chunk: chunk,
            kv_cache: KvCacheDtype::F16,
            ..LlamaOptions::default()
        };
        let mut m = model_with(opts);
        let vocab = m.config().vocab_size;
        let mut cache = m.new_cache();
        assert_eq!(cache.dtype(), KvCacheDtype::F16);
        let logits = m.forward(&prompt, &mut cache).unwrap();
        let err = max_rel_err(&logits, &fx["exact"]["logits"], vocab);
        assert!(err < 1e-3, "chunk {chunk}: relative logit error {err}");
        assert_eq!(
            greedy(&mut m, &prompt, 20),
            ids(&fx["exact"]["greedy"]),
            "chunk {chunk}"
        );
        let mut f32_model = model(WeightMode::F32, chunk);
        let exact = f32_model
            .forward(&prompt, &mut f32_model.new_cache())
            .unwrap();
        let diff = worst_diff(&logits, &exact);
        assert!(
            diff > 0.0 && diff < 1e-2,
            "chunk {chunk}: f16 vs f32 cache {diff}"
        );
        // A cache of the other dtype is refused.
        assert!(matches!(
            m.forward(&[5], &mut f32_model.new_cache()),
            Err(LlamaError::BadSetting { name: "cache", .. })
        ));
    }
}

#[test]
fn kv_cache_decode_equals_full_recompute() {
    let fx = fixture();
    let mut seq = ids(&fx["prompt"]);
    seq.extend(ids(&fx["exact"]["greedy"]));
    let mut m = model(WeightMode::F32, 32);
    let vocab = m.config().vocab_size;
    let full = m.forward(&seq, &mut m.new_cache()).unwrap();
    let mut cache = m.new_cache();
    let mut stepwise = Vec::new();
    for &t in &seq {
        stepwise.extend(m.forward(&[t], &mut cache).unwrap());
    }
    assert_eq!(full.len(), seq.len() * vocab);
    let worst = full
        .iter()
        .zip(&stepwise)
        .fold(0f32, |a, (x, y)| a.max((x - y).abs()));
    assert!(worst < 1e-4, "decode vs recompute: {worst}");
    // And each position's argmax is the next greedy token of the reference.
    let prompt_len = ids(&fx["prompt"]).len();
    for (i, want) in ids(&fx["exact"]["greedy"]).iter().enumerate() {
        let row = &stepwise[(prompt_len - 1 + i) * vocab..][..vocab];
        assert_eq!(rlx_llama::sampler::argmax(row), *want, "position {i}");
    }
}

/// Largest |a - b|.
fn worst_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).fold(0f32, |w, (x, y)| w.max((x - y).abs()))
}

/// Decode steps through the 64 / 128 / 256-slot cache buckets, and a cache
/// truncated and re-run (the graphs' cache params re-synced from the host
/// copy), give the logits of one chunked full-context recompute.
#[test]
fn decode_buckets_and_rewinds_equal_full_recompute() {
    let fx = fixture();
    let mut seq = ids(&fx["prompt"]);
    seq.extend(ids(&fx["exact"]["greedy"]));
    while seq.len() < 150 {
        seq.extend_from_within(..20);
    }
    seq.truncate(150);
    let mut m = model_with_context(WeightMode::F32, 16, 256);
    let vocab = m.config().vocab_size;
    let full = m.forward(&seq, &mut m.new_cache()).unwrap();
    let mut cache = m.new_cache();
    let mut stepwise = m.forward(&seq[..10], &mut cache).unwrap();
    for &t in &seq[10..] {
        stepwise.extend(m.forward(&[t], &mut cache).unwrap());
    }
    let worst = worst_diff(&full, &stepwise);
    assert!(worst < 1e-4, "bucketed decode vs recompute: {worst}");
    // Rewind into the first bucket and decode again, on a clone too.
    cache.truncate(40);
    let mut copy = cache.clone();
    let mut again = Vec::new();
    for &t in &seq[40..] {
        again.extend(m.forward(&[t], &mut cache).unwrap());
    }
    let worst = worst_diff(&full[40 * vocab..], &again);
    assert!(worst < 1e-4, "rewound decode vs recompute: {worst}");
    let last = m.forward_last(&seq[40..], &mut copy).unwrap();
    let worst = worst_diff(&full[149 * vocab..], &last);
    assert!(worst < 1e-4, "prefill on a clone vs recompute: {worst}");
}

#[test]
fn sampling_matches_numpy() {
    let fx = fixture();
    let s = &fx["sampled"];
    let prompt = ids(&fx["prompt"]);
    let mut m = model(WeightMode::F32, 8);
    let opts = GenerateOptions {
        max_tokens: 20,
        sampler: SamplerConfig {
            temperature: s["temperature"].as_f64().unwrap(),
            top_k: s["top_k"].as_u64().unwrap() as usize,
            top_p: s["top_p"].as_f64().unwrap(),
            seed: s["seed"].as_u64().unwrap() as u32,
        },
        stop: vec![],
    };
    let got = generate(&mut m, &prompt, &opts, |_| {}).unwrap();
    assert_eq!(got.tokens, ids(&s["tokens"]));
}

#[test]
fn tokenizer_matches_hf_tokenizers() {
    let r = GgufReader::new(GGUF).unwrap();
    let tk = Tokenizer::from_gguf(r.metadata()).unwrap();
    for case in fixture()["tokenizer_cases"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let want = ids(&case["ids"]);
        assert_eq!(tk.encode(text, true), want, "{text:?}");
        assert_eq!(tk.decode(&want), text);
    }
    assert_eq!(tk.eos(), Some(2));
    // Without special parsing, "<|im_end|>" is plain text.
    assert_ne!(tk.encode("<|im_end|>", false), vec![2]);
}

/// The tiny file rewritten with `edit` applied to its metadata and tensors.
fn rewritten(edit: impl Fn(&str, &mut Vec<u64>) -> bool, drop_key: Option<&str>) -> Vec<u8> {
    let r = GgufReader::new(GGUF).unwrap();
    let mut w = GgufWriter::new();
    for (k, v) in r.metadata().iter() {
        if Some(k) != drop_key && k != "general.alignment" {
            w.add_metadata(k, v.clone()).unwrap();
        }
    }
    for t in r.tensors() {
        let mut dims = t.dims().to_vec();
        if !edit(t.name(), &mut dims) {
            continue;
        }
        let data = r.tensor_data(t.name()).unwrap().to_vec();
        let data = if dims == t.dims() {
            data
        } else {
            let ty = t.ggml_type();
            let n: u64 = dims.iter().product();
            let bytes = (n as usize / ty.block_size()) * ty.type_size();
            vec![0u8; bytes]
        };
        w.add_tensor_bytes(t.name(), &dims, t.ggml_type(), data)
            .unwrap();
    }
    w.to_bytes().unwrap()
}

fn load_err(bytes: &[u8]) -> LlamaError {
    let r = GgufReader::new(bytes).unwrap();
    let opts = LlamaOptions {
        context: 64,
        ..LlamaOptions::default()
    };
    match LlamaModel::from_reader(&r, opts) {
        Ok(_) => panic!("a broken model loaded"),
        Err(e) => e,
    }
}

#[test]
fn missing_metadata_names_the_key() {
    let e = load_err(&rewritten(|_, _| true, Some("llama.block_count")));
    assert!(e.to_string().contains("llama.block_count"), "{e}");
    let bytes = rewritten(|_, _| true, Some("tokenizer.ggml.merges"));
    let r = GgufReader::new(&bytes[..]).unwrap();
    let e = Tokenizer::from_gguf(r.metadata()).unwrap_err();
    assert!(e.to_string().contains("tokenizer.ggml.merges"), "{e}");
}

#[test]
fn bad_tensors_name_the_tensor_and_shapes() {
    let e = load_err(&rewritten(|n, _| n != "blk.1.ffn_up.weight", None));
    assert!(
        matches!(&e, LlamaError::MissingTensor { name } if name == "blk.1.ffn_up.weight"),
        "{e}"
    );
    let e = load_err(&rewritten(
        |n, dims| {
            if n == "blk.0.attn_k.weight" {
                dims[1] = 64; // [32, 64] -> [64, 64]
            }
            true
        },
        None,
    ));
    match &e {
        LlamaError::TensorShape {
            name,
            expected,
            given,
        } => {
            assert_eq!(name, "blk.0.attn_k.weight");
            assert_eq!(
                (expected.as_slice(), given.as_slice()),
                (&[32, 64][..], &[64, 64][..])
            );
        }
        other => panic!("{other}"),
    }
    let msg = e.to_string();
    assert!(
        msg.contains("[32, 64]") && msg.contains("[64, 64]"),
        "{msg}"
    );
}

#[test]
fn bad_settings_and_ids_are_errors() {
    let r = GgufReader::new(GGUF).unwrap();
    let too_long = LlamaOptions {
        context: 100_000,
        ..LlamaOptions::default()
    };
    assert!(matches!(
        LlamaModel::from_reader(&r, too_long),
        Err(LlamaError::BadSetting {
            name: "context",
            ..
        })
    ));
    let mut m = model(WeightMode::Quantized, 4);
    let mut cache = m.new_cache();
    assert!(matches!(
        m.forward(&[5, 100_000], &mut cache),
        Err(LlamaError::TokenOutOfRange { id: 100_000, .. })
    ));
    assert!(cache.is_empty(), "a failed forward changed the cache");
    let foreign = model_with_context(WeightMode::Quantized, 4, 128).new_cache();
    assert!(matches!(
        m.forward(&[5], &mut foreign.clone()),
        Err(LlamaError::BadSetting { name: "cache", .. })
    ));
    let long = vec![5u32; 65];
    assert!(matches!(
        m.forward(&long, &mut cache),
        Err(LlamaError::ContextFull { capacity: 64, .. })
    ));
    let bad = SamplerConfig {
        top_p: 0.0,
        ..SamplerConfig::greedy()
    };
    assert!(rlx_llama::Sampler::new(bad).is_err());
}

/// A prompt's last-row logits do not depend on how its runs are cut:
/// chunks of 16 (the remainder in quarter chunks of 4, a single token in a
/// decode graph, or one padded chunk when quarters would not save rows),
/// after an empty or a partly filled cache, equal token-by-token decoding.
#[test]
fn prompt_remainders_in_quarter_chunks_equal_decoding() {
    let fx = fixture();
    let mut seq = ids(&fx["prompt"]);
    while seq.len() < 56 {
        seq.extend_from_within(..seq.len().min(56 - seq.len()));
    }
    let mut chunked = model(WeightMode::F32, 16);
    let mut stepwise = model(WeightMode::F32, 1);
    for (filled, len) in [
        (0, 1),
        (0, 5),
        (0, 9),
        (0, 13),
        (0, 15),
        (0, 37),
        (20, 9),
        (40, 9),
    ] {
        let (mut a, mut b) = (chunked.new_cache(), stepwise.new_cache());
        chunked.forward(&seq[..filled], &mut a).unwrap();
        stepwise.forward(&seq[..filled], &mut b).unwrap();
        let prompt = &seq[filled..][..len];
        let want = stepwise.forward_last(prompt, &mut b).unwrap();
        let got = chunked.forward_last(prompt, &mut a).unwrap();
        assert_eq!(a.len(), filled + len);
        let worst = worst_diff(&got, &want);
        assert!(worst < 1e-4, "filled {filled}, {len} tokens: {worst}");
    }
}

/// The same with chunks of 128 (the default), whose remainder runs in
/// pieces of 32 and 8 tokens after the chunks (the whole prompt fits the
/// pieces' 256-slot cache): a remainder that is whole pieces, one below the
/// smallest piece (padded), one that pads to a whole chunk anyway; and
/// with chunks of 64 (pieces of 16 over 128 slots): a prompt too long for
/// the pieces' cache (its remainder first) and a remainder after a cache
/// too full for them (one padded chunk).
#[test]
fn prompt_pieces_of_a_default_chunk_equal_decoding() {
    let fx = fixture();
    let mut seq = ids(&fx["prompt"]);
    while seq.len() < 240 {
        seq.extend_from_within(..seq.len().min(240 - seq.len()));
    }
    let mut stepwise = model_with_context(WeightMode::F32, 1, 256);
    let cases = [
        (128, &[(0, 136), (0, 43), (0, 8), (0, 125), (100, 40)][..]),
        (64, &[(0, 200), (100, 40)][..]),
    ];
    for (chunk, runs) in cases {
        let mut chunked = model_with_context(WeightMode::F32, chunk, 256);
        for &(filled, len) in runs {
            let (mut a, mut b) = (chunked.new_cache(), stepwise.new_cache());
            chunked.forward(&seq[..filled], &mut a).unwrap();
            stepwise.forward(&seq[..filled], &mut b).unwrap();
            let prompt = &seq[filled..][..len];
            let want = stepwise.forward_last(prompt, &mut b).unwrap();
            let got = chunked.forward_last(prompt, &mut a).unwrap();
            assert_eq!(a.len(), filled + len);
            let worst = worst_diff(&got, &want);
            assert!(
                worst < 1e-4,
                "chunk {chunk}, filled {filled}, {len} tokens: {worst}"
            );
        }
    }
}

/// One product over the stacked query / key / value weight rows gives the
/// separate products' logits bit for bit (each output is the same dot
/// product of the same quantized row either way): quantized, layer 1
/// stacks k / v (Q4_1; its q is Q8_0) and layer 0 nothing; decoded to f32,
/// both stack all three. Prefill chunks (8 rows) and decode steps.
#[test]
fn fused_projections_equal_separate_products() {
    let fx = fixture();
    let prompt = ids(&fx["prompt"]);
    let r = GgufReader::new(GGUF).unwrap();
    let cfg = LlamaConfig::from_gguf(r.metadata()).unwrap();
    let stacks = |mode| {
        let w = LlamaWeights::from_gguf(&r, &cfg, mode).unwrap();
        w.layers
            .iter()
            .map(|l| l.qkv.as_ref().map(|q| q.0))
            .collect::<Vec<_>>()
    };
    assert_eq!(stacks(WeightMode::Quantized), [None, Some(Stacked::Kv)]);
    assert_eq!(stacks(WeightMode::F32), [Some(Stacked::Qkv); 2]);
    for mode in [WeightMode::Quantized, WeightMode::F32] {
        let run = |fuse: bool| {
            let mut m = model_with(LlamaOptions {
                weights: mode,
                context: 64,
                prefill_chunk: 8,
                fuse_projections: fuse,
                ..LlamaOptions::default()
            });
            let mut cache = m.new_cache();
            let mut logits = m.forward(&prompt, &mut cache).unwrap();
            logits.extend(m.forward(&[5, 17], &mut cache).unwrap());
            (logits, greedy(&mut m, &prompt, 12))
        };
        let (fused, unfused) = (run(true), run(false));
        assert_eq!(fused.0.len(), unfused.0.len());
        assert_eq!(worst_diff(&fused.0, &unfused.0), 0.0, "{mode:?}");
        assert_eq!(fused.1, unfused.1, "{mode:?}");
    }
}
