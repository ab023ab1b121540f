//! all-MiniLM-L6-v2 on RLX against the reference implementations: token
//! ids against HF `tokenizers` (Python), sentence embeddings against ONNX
//! Runtime on an fp32 export of the same weights. References:
//! `tools/gen_minilm_refs.py` -> `tests/fixtures/minilm_refs.json`.
//!
//! The model files come from `tools/fetch_models.sh` (dir `$RLX_MODELS`,
//! default `~/.cache/rlx-models`); `tools/test.sh` runs these with
//! `--include-ignored`.

mod common;
use common::{cosine, model_dir};
use rlx_models::bert::{BertEncoder, TokenBatch};
use rlx_models::tokenize::WordPieceTokenizer;
use rlx_runtime::Device;
use serde_json::Value;

const NEEDS: &str = "needs model files: tools/fetch_models.sh";

struct Refs {
    sentences: Vec<String>,
    ids: Vec<Vec<i64>>,
    embeddings: Vec<Vec<f64>>,
    batch_embeddings: Vec<Vec<f64>>,
}

fn refs() -> Refs {
    let text = include_str!("fixtures/minilm_refs.json");
    let v: Value = serde_json::from_str(text).expect("fixture JSON");
    let rows = |key: &str| -> Vec<Vec<f64>> {
        v[key]
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
            .collect()
    };
    Refs {
        sentences: v["sentences"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect(),
        ids: rows("ids")
            .into_iter()
            .map(|r| r.into_iter().map(|x| x as i64).collect())
            .collect(),
        embeddings: rows("embeddings"),
        batch_embeddings: rows("batch_embeddings"),
    }
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn token_ids_match_hf_tokenizers() {
    let r = refs();
    let tok = WordPieceTokenizer::from_dir(&model_dir()).expect(NEEDS);
    for (s, want) in r.sentences.iter().zip(&r.ids) {
        let got = tok.encode(&[s.as_str()]).unwrap();
        assert_eq!(&got.ids, want, "ids of {s:?}");
        assert!(got.mask.iter().all(|&m| m == 1) && got.type_ids.iter().all(|&t| t == 0));
    }
    assert_eq!(
        r.ids.iter().map(Vec::len).max(),
        Some(128),
        "a 128-token case"
    );
    // A padded batch: every row is its single ids then [PAD] = 0 with mask 0.
    let all: Vec<&str> = r.sentences.iter().map(String::as_str).collect();
    let b = tok.encode(&all).unwrap();
    assert_eq!((b.batch, b.seq), (r.sentences.len(), 128));
    for (i, want) in r.ids.iter().enumerate() {
        let row = &b.ids[i * 128..(i + 1) * 128];
        let mask = &b.mask[i * 128..(i + 1) * 128];
        assert_eq!(&row[..want.len()], want.as_slice());
        assert!(row[want.len()..].iter().all(|&x| x == 0));
        assert!(mask
            .iter()
            .enumerate()
            .all(|(j, &m)| m == i64::from(j < want.len())));
    }
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn embeddings_match_onnx_runtime() {
    let r = refs();
    let dir = model_dir();
    let tok = WordPieceTokenizer::from_dir(&dir).expect(NEEDS);
    let mut enc = BertEncoder::from_dir(&dir, Device::Cpu).expect(NEEDS);
    for (s, want) in r.sentences.iter().zip(&r.embeddings) {
        let tokens = tok.encode(&[s.as_str()]).unwrap();
        let e = enc.embed(&tokens).unwrap();
        let cos = cosine(&e[0], want);
        assert!(cos >= 0.99999, "{s:?}: cosine {cos} to onnxruntime");
        eprintln!("{} tokens: cosine {cos:.9}", tokens.seq);
        let norm: f32 = e[0].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{s:?}: norm {norm}");
    }
    // All sentences in one batch padded to 128: padding must not leak in.
    let all: Vec<&str> = r.sentences.iter().map(String::as_str).collect();
    let e = enc.embed(&tok.encode(&all).unwrap()).unwrap();
    for ((s, got), want) in all.iter().zip(&e).zip(&r.batch_embeddings) {
        let cos = cosine(got, want);
        assert!(
            cos >= 0.99999,
            "{s:?} in a padded batch: cosine {cos} to onnxruntime"
        );
    }
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn bad_ids_are_typed_errors() {
    let mut enc = BertEncoder::from_dir(&model_dir(), Device::Cpu).expect(NEEDS);
    let batch = |ids: Vec<i64>, n: usize| TokenBatch {
        batch: 1,
        seq: ids.len(),
        mask: vec![1; n],
        type_ids: vec![0; n],
        ids,
    };
    let e = enc.run(&batch(vec![101, 30522, 102], 3)).unwrap_err();
    assert!(e.to_string().contains("30522"), "{e}");
    let e = enc.run(&batch(vec![101, 102], 3)).unwrap_err();
    assert!(
        e.to_string().contains("has 3 values, batch 1 x seq 2"),
        "{e}"
    );
    let e = enc.run(&batch(vec![101; 513], 513)).unwrap_err();
    assert!(e.to_string().contains("max_position_embeddings"), "{e}");
}
