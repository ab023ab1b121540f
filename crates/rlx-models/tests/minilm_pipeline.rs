//! all-MiniLM-L6-v2 as a 2-stage pipeline: the encoder graph cut in half
//! (`pipeline_stages` before layer 3), each half shipped to its own rank
//! (`run_pipeline` -> `ship_stage`) and served with `serve_stage`, on loopback threads and over
//! TCP. The pipeline's outputs equal the one-process encoder's within 1e-5
//! and its sentence embeddings match ONNX Runtime's
//! (`tests/fixtures/minilm_refs.json`, `tools/gen_minilm_refs.py`) with
//! cosine >= 0.99999.
//!
//! Needs the model files (`tools/fetch_models.sh`, dir `$RLX_MODELS`).

mod common;
use common::{cosine, model_dir};
#[path = "../../rlx-runtime/tests/dist_common/mod.rs"]
mod dist_common;

use dist_common::{on_world, with_deadline, Transport};
use rlx_collectives::ProcessGroup;
use rlx_ir::HostTensor;
use rlx_models::bert::{encoder_graph, graph_param, BertConfig, BertEncoder};
use rlx_models::tokenize::WordPieceTokenizer;
use rlx_runtime::dist::{
    pipeline_stages, run_pipeline, serve_stage, uri_resolver, DistError, StageSpec, WeightCache,
    WeightRef,
};
use rlx_runtime::{BytesWeightLoader, Device};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The first two (short) reference sentences and ONNX Runtime's embeddings.
fn refs() -> (Vec<String>, Vec<Vec<f64>>) {
    let v: Value = serde_json::from_str(include_str!("fixtures/minilm_refs.json")).unwrap();
    let sentences = v["sentences"].as_array().unwrap()[..2]
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    let embeddings = v["embeddings"].as_array().unwrap()[..2]
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect();
    (sentences, embeddings)
}

fn max_abs_diff(a: &HostTensor, b: &HostTensor) -> f64 {
    assert_eq!(a.dims(), b.dims());
    let (a, b) = (a.to_f64_lossy(), b.to_f64_lossy());
    a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// The encoder for the padded batch cut before layer `layers / 2`
/// (stage 0 on rank 1, stage 1 on rank 2), weights inline (Linear weights
/// already transposed as the graph holds them).
fn two_stages(dir: &std::path::Path, batch: usize, seq: usize) -> Vec<StageSpec> {
    let cfg = BertConfig::from_file(&dir.join("config.json")).unwrap();
    let built = encoder_graph(&cfg, batch, seq).unwrap();
    let first_of_half = format!(
        "encoder.layer.{}.attention.self.query.weight",
        cfg.num_hidden_layers / 2
    );
    let params = built.graph.params();
    let cut = params
        .iter()
        .find(|(_, n, _)| *n == first_of_half)
        .map(|(id, _, _)| *id)
        .expect("the half-way layer's first param");
    let loader = BytesWeightLoader::open(dir.join("model.safetensors")).unwrap();
    let weights: Vec<(String, WeightRef)> = params
        .iter()
        .map(|(_, name, _)| {
            let t = graph_param(&loader, name, &built.transposed).unwrap();
            (name.to_string(), WeightRef::Inline(t))
        })
        .collect();
    let stages = pipeline_stages(&built.graph, &weights, &[cut]).unwrap();
    assert_eq!(stages.len(), 2);
    stages
}

fn pipeline_matches_one_process(transport: Transport) {
    let dir = model_dir();
    let (sentences, want) = refs();
    let tok = WordPieceTokenizer::from_dir(&dir).unwrap();
    let texts: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let tokens = tok.encode(&texts).unwrap();
    let one = BertEncoder::from_dir(&dir, Device::Cpu)
        .unwrap()
        .run(&tokens)
        .unwrap();
    let specs = two_stages(&dir, tokens.batch, tokens.seq);
    let feed: Vec<HostTensor> = tokens
        .tensors()
        .unwrap()
        .into_iter()
        .map(|(_, t)| t)
        .collect();

    let outs = with_deadline(240, move || {
        on_world(
            transport,
            3,
            Duration::from_secs(60),
            move |pg: Arc<dyn ProcessGroup>| {
                if pg.rank() != 0 {
                    let cache = Arc::new(WeightCache::new());
                    return serve_stage(&*pg, 0, &*uri_resolver(cache)).map(|_| None);
                }
                let y = run_pipeline(&*pg, &specs, &feed)?;
                Ok::<_, DistError>(Some(y))
            },
        )
    });
    let mut outs = outs.into_iter();
    let y = outs
        .next()
        .unwrap()
        .unwrap_or_else(|e| panic!("rank 0: {e}"))
        .expect("rank 0 got the outputs");
    for (r, o) in outs.enumerate() {
        o.unwrap_or_else(|e| panic!("rank {}: {e}", r + 1));
    }
    assert_eq!(y.len(), 2, "last_hidden_state and sentence_embedding");
    let d_hidden = max_abs_diff(&y[0], &one.last_hidden_state);
    let d_emb = max_abs_diff(&y[1], &one.sentence_embedding);
    eprintln!(
        "{transport:?}: pipeline vs one process: max abs hidden {d_hidden:e}, embedding {d_emb:e}"
    );
    assert!(
        d_hidden <= 1e-5 && d_emb <= 1e-5,
        "pipeline vs one process: hidden {d_hidden:e}, embedding {d_emb:e}"
    );
    let emb = y[1].to_vec::<f32>().unwrap();
    let hidden = emb.len() / want.len();
    for (i, w) in want.iter().enumerate() {
        let c = cosine(&emb[i * hidden..(i + 1) * hidden], w);
        eprintln!("{transport:?}: sentence {i}: cosine {c:.8} with ONNX Runtime");
        assert!(c >= 0.99999, "sentence {i}: cosine {c} with ONNX Runtime");
    }
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn minilm_in_two_stages_loopback() {
    pipeline_matches_one_process(Transport::Loopback);
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn minilm_in_two_stages_tcp() {
    pipeline_matches_one_process(Transport::Tcp);
}
