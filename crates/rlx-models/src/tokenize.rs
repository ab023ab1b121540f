//! WordPiece tokenization from a model's `tokenizer.json` (HF `tokenizers`).

use crate::bert::TokenBatch;
use crate::ModelError;
use std::path::Path;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer};

/// A `tokenizer.json` tokenizer that pads a batch to its longest sequence.
pub struct WordPieceTokenizer {
    inner: Tokenizer,
}

impl WordPieceTokenizer {
    /// Loads `dir/tokenizer.json`.
    pub fn from_dir(dir: &Path) -> Result<WordPieceTokenizer, ModelError> {
        WordPieceTokenizer::from_file(&dir.join("tokenizer.json"))
    }

    /// Loads a `tokenizer.json` file (its truncation settings are kept:
    /// all-MiniLM-L6-v2 truncates at 128 tokens).
    pub fn from_file(path: &Path) -> Result<WordPieceTokenizer, ModelError> {
        let mut inner = Tokenizer::from_file(path).map_err(|source| ModelError::TokenizerLib {
            context: format!("{}: ", path.display()),
            source,
        })?;
        let pad_id = inner.token_to_id("[PAD]").unwrap_or(0);
        inner.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_id,
            pad_token: "[PAD]".into(),
            ..PaddingParams::default()
        }));
        Ok(WordPieceTokenizer { inner })
    }

    /// Tokenizes `sentences` (with `[CLS]` / `[SEP]`), padded to the longest.
    pub fn encode(&self, sentences: &[&str]) -> Result<TokenBatch, ModelError> {
        if sentences.is_empty() {
            return Err(ModelError::Input("no sentences to encode".into()));
        }
        let enc = self
            .inner
            .encode_batch(sentences.to_vec(), true)
            .map_err(|source| ModelError::TokenizerLib {
                context: String::new(),
                source,
            })?;
        let seq = enc[0].get_ids().len();
        let widen = |v: &[u32]| v.iter().map(|&x| i64::from(x)).collect::<Vec<_>>();
        let mut batch = TokenBatch {
            batch: enc.len(),
            seq,
            ids: Vec::new(),
            mask: Vec::new(),
            type_ids: Vec::new(),
        };
        for e in &enc {
            batch.ids.extend(widen(e.get_ids()));
            batch.mask.extend(widen(e.get_attention_mask()));
            batch.type_ids.extend(widen(e.get_type_ids()));
        }
        Ok(batch)
    }
}
