//! SmolLM2-135M-Instruct (Q4_1 GGUF) against `tools/gen_llama_fixtures.py`:
//! prompt ids by HF `tokenizers`, greedy continuations by a float64 numpy
//! forward on the dequantized weights ("exact") and with ggml's activation
//! quantization ("q8"). Needs the model file: `tools/fetch_models.sh`.

use rlx_gguf::GgufReader;
use rlx_llama::{
    generate, GenerateOptions, KvCacheDtype, LlamaModel, LlamaOptions, Tokenizer, WeightMode,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn models_dir() -> PathBuf {
    let Some(root) = std::env::var_os("RLX_MODELS") else {
        panic!(
            "RLX_MODELS is not set: run tools/fetch_models.sh and export RLX_MODELS=<the directory \
             it prints> (tools/test.sh does both); the test reads \
             $RLX_MODELS/gguf/SmolLM2-135M-Instruct.Q4_1.gguf"
        )
    };
    PathBuf::from(root).join("gguf")
}

fn model_path() -> PathBuf {
    let path = models_dir().join("SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        path.exists(),
        "model file {} is missing: run tools/fetch_models.sh",
        path.display()
    );
    path
}

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/smollm2.json")).expect("fixture JSON")
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn tokenizer_ids_match_hf_tokenizers() {
    let r = GgufReader::open(model_path()).unwrap();
    let tk = Tokenizer::from_gguf(r.metadata()).unwrap();
    for p in fixture()["prompts"].as_array().unwrap() {
        let text = p["text"].as_str().unwrap();
        assert_eq!(tk.encode(text, true), ids(&p["ids"]), "{text:?}");
        assert_eq!(tk.decode(&ids(&p["ids"])), text);
    }
    // llama.cpp's ids for the first prompt (shared/ref/smollm2_ref.py).
    assert_eq!(
        tk.encode("The capital of France is", true),
        [504, 3575, 282, 4649, 314]
    );
}

/// The model with a 128-token context and prefill chunks of 16.
fn load(weights: WeightMode) -> LlamaModel {
    load_file(&model_path(), weights, KvCacheDtype::F32, 16)
}

fn load_file(
    path: &Path,
    weights: WeightMode,
    kv_cache: KvCacheDtype,
    prefill_chunk: usize,
) -> LlamaModel {
    let r = GgufReader::open(path).unwrap();
    let opts = LlamaOptions {
        weights,
        context: 128,
        prefill_chunk,
        kv_cache,
        ..LlamaOptions::default()
    };
    LlamaModel::from_reader(&r, opts).unwrap()
}

/// Greedy continuations of every fixture prompt, and the reference ones.
fn greedy_runs(mode: WeightMode, key: &str) -> Vec<(String, Vec<u32>, Vec<u32>)> {
    let mut m = load(mode);
    let fx = fixture();
    let mut runs = Vec::new();
    for p in fx["prompts"].as_array().unwrap() {
        let want = ids(&p[key]["greedy"]);
        assert!(want.len() >= 32);
        let opts = GenerateOptions {
            max_tokens: want.len(),
            ..GenerateOptions::default()
        };
        let got = generate(&mut m, &ids(&p["ids"]), &opts, |_| {}).unwrap();
        runs.push((p["text"].as_str().unwrap().to_string(), got.tokens, want));
    }
    runs
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn greedy_f32_weights_matches_numpy() {
    for (text, got, want) in greedy_runs(WeightMode::F32, "exact") {
        assert_eq!(got, want, "continuation of {text:?}");
    }
}

/// The quantized model (activations rounded per block as ggml does) fed the
/// reference continuation (teacher forcing): at each position its top token
/// should be the reference's next token, and always among its top 5.
///
/// Free-running greedy decoding is not compared token for token: on this
/// model ggml's activation-quantized math is chaotic at the 0.1-0.4 logit
/// level. Scaling the embedding table by `1 + 1e-7 * noise` moves the numpy
/// q8 reference's last-position logits of the chat prompt "What is the
/// capital of France?" by up to 0.4 and swaps its top two tokens ("The" /
/// "L"), while the exact (f64, unquantized activations) logits do not move in
/// the fourth decimal. RLX's own f32 summation order (chunked prefill vs
/// token by token) shifts them the same way. The exact path is checked
/// token for token by `greedy_f32_weights_matches_numpy`.
#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn quantized_predicts_the_ggml_math_continuation() {
    let mut m = load(WeightMode::Quantized);
    let vocab = m.config().vocab_size;
    for p in fixture()["prompts"].as_array().unwrap() {
        let prompt = ids(&p["ids"]);
        let want = ids(&p["q8"]["greedy"]);
        let mut seq = prompt.clone();
        seq.extend(&want[..want.len() - 1]);
        let logits = m.forward(&seq, &mut m.new_cache()).unwrap();
        let (mut top1, mut top5) = (0, 0);
        for (i, &t) in want.iter().enumerate() {
            let row = &logits[(prompt.len() - 1 + i) * vocab..][..vocab];
            let above = row.iter().filter(|&&v| v > row[t as usize]).count();
            top1 += (above == 0) as usize;
            top5 += (above < 5) as usize;
        }
        eprintln!(
            "{:?}: top-1 {top1}, top-5 {top5} of {}",
            p["text"],
            want.len()
        );
        assert_eq!(top5, want.len(), "{:?}", p["text"]);
        // Observed: 33-34 of 36 (x86-64 with AVX-512 VNNI); the bound leaves
        // room for other summation orders.
        assert!(top1 * 10 >= want.len() * 8, "{:?}: top-1 {top1}", p["text"]);
    }
}

/// `(GGUF file, llama.cpp fixture)`: the fetched Q4_1 file, and the Q8_0 /
/// Q4_K_M files `tools/quantize_smollm2.py` makes from it with llama.cpp's
/// quantizer (skipped with a note when absent).
fn llamacpp_cases() -> Vec<(PathBuf, Value)> {
    let fixtures = [
        ("Q4_1", include_str!("fixtures/smollm2_llamacpp.json")),
        ("Q8_0", include_str!("fixtures/smollm2_llamacpp.Q8_0.json")),
        (
            "Q4_K_M",
            include_str!("fixtures/smollm2_llamacpp.Q4_K_M.json"),
        ),
    ];
    let mut out = vec![];
    for (quant, json) in fixtures {
        let fx: Value = serde_json::from_str(json).expect("fixture JSON");
        let path = models_dir().join(fx["gguf"].as_str().expect("the fixture's file name"));
        if quant == "Q4_1" {
            assert!(
                path.exists(),
                "{} is missing: tools/fetch_models.sh",
                path.display()
            );
        } else if !path.exists() {
            eprintln!(
                "skipping {quant}: {} is missing (tools/quantize_smollm2.py makes it)",
                path.display()
            );
            continue;
        }
        out.push((path, fx));
    }
    out
}

/// RLX's quantized model against llama.cpp itself (llama-cpp-python 0.3.36
/// on the same GGUF, `tools/gen_llamacpp_refs.py`), 40 tokens per prompt,
/// for the Q4_1 file and, when present, its Q8_0 / Q4_K_M requantizations.
///
/// RLX runs with an f16 KV cache, as llama.cpp does (with the f32 cache
/// the Q4_1 file's first prompt parts from llama.cpp at a 0.33 gap after 5
/// tokens; with f16, after 40).
/// Exact equality of the whole continuation is not expected: both quantize
/// activations as ggml does, but llama.cpp sums in another order, which
/// moves logits by up to ~1.3 here (observed
/// worst over llama.cpp's top-5 tokens: 0.5-1.25 on the three files), and this model's
/// greedy path flips wherever the top two logits are nearly tied. So:
/// - free-running greedy matches llama.cpp token for token up to its first
///   near tie (top-1 / top-2 gap < `NEAR_TIE`), or up to the first position
///   where the teacher-forced top-1 below differs, if earlier (a gap under
///   the logit distance: the Q4_K_M file's first prompt has a 0.285 gap at
///   position 11, which the summation order decides; observed prefixes on
///   Q4_1: 40, 40, 13 with first near ties at 14, 0, 13; Q8_0: 19, 11 or
///   21, 33 or 40; Q4_K_M: 40 or 11, 11 or 40, 40, the second of each
///   pair with the default chunk's pieces of 8 rows). `NEAR_TIE` is 0.35:
///   with AVX-512 VNNI the prefill GEMMs sum each block's products as
///   ggml does (`gemm16` / `gemm16k`) and the decode GEMVs lane-wise, and
///   two gaps of the Q4_K_M fixture lie within that distance: 0.285 at
///   position 11 of the first prompt (the teacher-forced forward takes
///   llama.cpp's token, free-running does not) and 0.317 at position 0 of
///   the second (its 20-token prompt runs pieces through `gemm16k`, and
///   free-running takes llama.cpp's second token); teacher-forced, RLX's
///   logits of llama.cpp's top five lie up to ~1.8 from llama.cpp's on
///   that prompt with either summation;
/// - teacher-forced on llama.cpp's continuation, RLX's top-1 is llama.cpp's
///   at >= 95% of positions (observed 39, 39, 38 of 40) and at every
///   position whose gap exceeds `SURE` (observed: every gap > 0.5);
/// - RLX's logits of llama.cpp's five best tokens are within `TOL`.
#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn quantized_matches_llama_cpp() {
    for (path, fx) in llamacpp_cases() {
        eprintln!("{}:", path.display());
        // llama.cpp keeps its KV cache in f16: so does RLX here. The
        // default chunk (128): the prompts run in its pieces of 32 / 8.
        let chunk = LlamaOptions::default().prefill_chunk;
        let m = load_file(&path, WeightMode::Quantized, KvCacheDtype::F16, chunk);
        matches_llama_cpp_on(m, &fx);
    }
}

fn matches_llama_cpp_on(mut m: LlamaModel, fx: &Value) {
    const NEAR_TIE: f64 = 0.35;
    const SURE: f64 = 1.0;
    const TOL: f64 = 2.0;
    let vocab = m.config().vocab_size;
    for p in fx["prompts"].as_array().unwrap() {
        let text = p["text"].as_str().unwrap();
        let prompt = ids(&p["ids"]);
        let want = ids(&p["greedy"]);
        let margins: Vec<f64> = p["margin"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let go = GenerateOptions {
            max_tokens: want.len(),
            ..GenerateOptions::default()
        };
        let got = generate(&mut m, &prompt, &go, |_| {}).unwrap().tokens;
        let prefix = got.iter().zip(&want).take_while(|(a, b)| a == b).count();
        let first_tie = margins
            .iter()
            .position(|&g| g < NEAR_TIE)
            .unwrap_or(want.len());

        let mut seq = prompt.clone();
        seq.extend(&want[..want.len() - 1]);
        let logits = m.forward(&seq, &mut m.new_cache()).unwrap();
        let (mut worst, mut top1, mut first_differ) = (0f64, 0, want.len());
        for (i, top5) in p["top5"].as_array().unwrap().iter().enumerate() {
            let row = &logits[(prompt.len() - 1 + i) * vocab..][..vocab];
            for pair in top5.as_array().unwrap() {
                let (id, logit) = (pair[0].as_u64().unwrap(), pair[1].as_f64().unwrap());
                worst = worst.max((row[id as usize] as f64 - logit).abs());
            }
            let best = (0..vocab)
                .max_by(|&a, &b| row[a].total_cmp(&row[b]))
                .unwrap();
            top1 += (best == want[i] as usize) as usize;
            if best != want[i] as usize {
                first_differ = first_differ.min(i);
            }
            assert!(
                best == want[i] as usize || margins[i] <= SURE,
                "{text:?} position {i}: top-1 {best}, llama.cpp {} with a gap of {}",
                want[i],
                margins[i]
            );
        }
        eprintln!(
            "{text:?}: greedy prefix {prefix} of {} (first near tie at {first_tie}, first \
             teacher-forced difference at {first_differ}), \
             teacher-forced top-1 {top1} of {}, worst top-5 logit difference {worst:.3}",
            want.len(),
            want.len(),
        );
        // Where the teacher-forced top-1 differs (allowed above: a gap
        // within the two implementations' logit distance) the free-running
        // continuations may part too.
        let first_tie = first_tie.min(first_differ);
        assert!(
            prefix >= first_tie,
            "{text:?}: greedy prefix {prefix} < {first_tie}"
        );
        assert!(top1 * 100 >= want.len() * 95, "{text:?}: top-1 {top1}");
        assert!(worst < TOL, "{text:?}: logit difference {worst}");
    }
}

/// The f16 KV cache against the f32 one with f32 weights (unquantized
/// activations: with ggml's activation quantization the logits are
/// chaotic at the 0.1-1 level, see above, and a rounded cache moves them
/// by up to ~1.6), on every fixture prompt: teacher-forced over the f32
/// run's greedy continuation, logits within `TOL`; free-running greedy
/// tokens equal up to the f32 run's first near tie (top-1 / top-2 gap <
/// `NEAR_TIE`).
#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn f16_kv_cache_matches_the_f32_cache() {
    const NEAR_TIE: f32 = 0.05;
    const TOL: f32 = 5e-2;
    let path = model_path();
    let mut f32_cache = load_file(&path, WeightMode::F32, KvCacheDtype::F32, 16);
    let mut f16_cache = load_file(&path, WeightMode::F32, KvCacheDtype::F16, 16);
    let vocab = f32_cache.config().vocab_size;
    for p in fixture()["prompts"].as_array().unwrap() {
        let prompt = ids(&p["ids"]);
        let go = GenerateOptions {
            max_tokens: 32,
            ..GenerateOptions::default()
        };
        let want = generate(&mut f32_cache, &prompt, &go, |_| {})
            .unwrap()
            .tokens;
        let got = generate(&mut f16_cache, &prompt, &go, |_| {})
            .unwrap()
            .tokens;
        let mut seq = prompt.clone();
        seq.extend(&want[..want.len() - 1]);
        let a = f32_cache.forward(&seq, &mut f32_cache.new_cache()).unwrap();
        let b = f16_cache.forward(&seq, &mut f16_cache.new_cache()).unwrap();
        let worst = a
            .iter()
            .zip(&b)
            .fold(0f32, |w, (x, y)| w.max((x - y).abs()));
        let first_tie = (0..want.len())
            .position(|i| {
                let mut row = a[(prompt.len() - 1 + i) * vocab..][..vocab].to_vec();
                row.sort_by(|x, y| y.total_cmp(x));
                row[0] - row[1] < NEAR_TIE
            })
            .unwrap_or(want.len());
        let prefix = got.iter().zip(&want).take_while(|(x, y)| x == y).count();
        eprintln!(
            "{:?}: f16 vs f32 cache: worst logit difference {worst:e}, greedy prefix {prefix} \
             (first near tie at {first_tie})",
            p["text"]
        );
        assert!(worst > 0.0 && worst < TOL, "{:?}: {worst}", p["text"]);
        assert!(prefix >= first_tie, "{:?}: {got:?} vs {want:?}", p["text"]);
    }
}
