//! Generates text with a GGUF llama model and prints prefill / decode speed.
//!
//! ```text
//! RLX_NUM_THREADS=2 cargo run --release -p rlx-llama --example generate -- \
//!     --prompt "The capital of France is" -n 64 [--chat | --no-chat] [--ignore-eos] [--temperature 0.7 --top-k 40 --top-p 0.9 --seed 1] \
//!     [--model PATH] [--f32] [--context 512] [--prefill-chunk 128] [--kv-f32]
//! ```
//! The KV cache is f16, as llama.cpp's and `rlx generate`'s default (half
//! the cache's memory and attention traffic; new keys / values rounded to
//! it); `--kv-f32` keeps it exact (`--kv-f16` is accepted too).
//! `--chat` (the default when the file has a `tokenizer.chat_template`)
//! renders the prompt as one user turn with that template, ending with the
//! assistant's header; `--no-chat` feeds the text as is.
//!
//! The model defaults to `$RLX_MODELS/gguf/SmolLM2-135M-Instruct.Q4_1.gguf`
//! (`RLX_MODELS` defaults to `~/.cache/rlx-models`; `tools/fetch_models.sh`
//! downloads it).

use rlx_gguf::GgufReader;
use rlx_llama::{
    generate, ChatMessage, ChatTemplate, GenerateOptions, KvCacheDtype, LlamaModel, LlamaOptions,
    SamplerConfig, Tokenizer, WeightMode,
};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

const USAGE: &str =
    "usage: generate [--model PATH] [--prompt TEXT] [-n N] [--chat | --no-chat] [--ignore-eos] \
[--temperature T] [--top-k K] [--top-p P] [--seed S] [--f32] [--context N] [--prefill-chunk N] \
[--kv-f32]";

struct Args {
    model: PathBuf,
    prompt: String,
    n: usize,
    /// `None`: on when the file has a template.
    chat: Option<bool>,
    ignore_eos: bool,
    sampler: SamplerConfig,
    opts: LlamaOptions,
}

fn default_model() -> PathBuf {
    let root = std::env::var_os("RLX_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_default();
            PathBuf::from(home).join(".cache/rlx-models")
        });
    root.join("gguf/SmolLM2-135M-Instruct.Q4_1.gguf")
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        model: default_model(),
        prompt: "The capital of France is".into(),
        n: 64,
        chat: None,
        ignore_eos: false,
        sampler: SamplerConfig::greedy(),
        opts: LlamaOptions {
            kv_cache: KvCacheDtype::F16,
            ..LlamaOptions::default()
        },
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let num = |v: String| v.parse::<f64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--model" => a.model = value()?.into(),
            "--prompt" => a.prompt = value()?,
            "-n" | "--tokens" => a.n = num(value()?)? as usize,
            "--chat" => a.chat = Some(true),
            "--no-chat" => a.chat = Some(false),
            "--ignore-eos" => a.ignore_eos = true,
            "--temperature" => a.sampler.temperature = num(value()?)?,
            "--top-k" => a.sampler.top_k = num(value()?)? as usize,
            "--top-p" => a.sampler.top_p = num(value()?)?,
            "--seed" => a.sampler.seed = num(value()?)? as u32,
            "--f32" => a.opts.weights = WeightMode::F32,
            "--kv-f16" => a.opts.kv_cache = KvCacheDtype::F16,
            "--kv-f32" => a.opts.kv_cache = KvCacheDtype::F32,
            "--context" => a.opts.context = num(value()?)? as usize,
            "--prefill-chunk" => a.opts.prefill_chunk = num(value()?)? as usize,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(a)
}

fn main() {
    let a = parse().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    if !a.model.exists() {
        eprintln!(
            "model file {} not found: run tools/fetch_models.sh (or pass --model)",
            a.model.display()
        );
        std::process::exit(1);
    }
    if let Err(e) = run(&a) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(a: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let t0 = Instant::now();
    let reader = GgufReader::open(&a.model)?;
    let tokenizer = Tokenizer::from_gguf(reader.metadata())?;
    let mut model = LlamaModel::from_reader(&reader, a.opts)?;
    eprintln!(
        "loaded {} ({} layers, dim {}, {:?} weights) and compiled in {:.2} s",
        a.model.display(),
        model.config().n_layers,
        model.config().dim,
        a.opts.weights,
        t0.elapsed().as_secs_f64()
    );
    let template = ChatTemplate::from_gguf(reader.metadata(), &tokenizer)?;
    let text = match (a.chat, &template) {
        (Some(false), _) | (None, None) => a.prompt.clone(),
        (_, Some(t)) => t.render(&[ChatMessage::new("user", a.prompt.as_str())], true)?,
        (Some(true), None) => return Err("--chat: the file has no tokenizer.chat_template".into()),
    };
    let prompt = tokenizer.encode(&text, true);
    let opts = GenerateOptions {
        max_tokens: a.n,
        sampler: a.sampler,
        stop: match a.ignore_eos {
            true => Vec::new(),
            false => tokenizer.eos().into_iter().collect(),
        },
    };
    // A chat answer starts on its own line after the question.
    let sep = if text == a.prompt { "" } else { "\n" };
    print!("{}{sep}", a.prompt);
    let mut out = Vec::new();
    let mut printed = 0;
    let g = generate(&mut model, &prompt, &opts, |t| {
        out.push(t);
        let bytes = tokenizer.decode_bytes(&out);
        let valid = match std::str::from_utf8(&bytes[printed..]) {
            Ok(s) => s.len(),
            Err(e) => e.valid_up_to(),
        };
        print!(
            "{}",
            String::from_utf8_lossy(&bytes[printed..printed + valid])
        );
        printed += valid;
        let _ = std::io::stdout().flush();
    })?;
    println!();
    eprintln!(
        "prefill: {} tokens in {:.3} s = {:.1} tokens/s",
        g.prompt_tokens,
        g.prefill_time.as_secs_f64(),
        g.prefill_tokens_per_s()
    );
    eprintln!(
        "decode: {} tokens in {:.3} s = {:.1} tokens/s",
        g.decode_steps,
        g.decode_time.as_secs_f64(),
        g.decode_tokens_per_s()
    );
    Ok(())
}
