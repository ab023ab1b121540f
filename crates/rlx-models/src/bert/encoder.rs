//! A loaded encoder: config + weights, compiled per input shape.

use super::{encoder_graph, load_params, BertConfig};
use crate::ModelError;
use rlx_ir::HostTensor;
use rlx_runtime::{BytesWeightLoader, CompiledGraph, Device, Session, WeightLoader};
use std::collections::HashMap;
use std::path::Path;

/// Token ids of `batch` sequences padded to one length `seq` (row-major).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenBatch {
    /// Sequences.
    pub batch: usize,
    /// Tokens per sequence (after padding).
    pub seq: usize,
    /// Token ids, `batch * seq`.
    pub ids: Vec<i64>,
    /// 1 for a real token, 0 for padding, `batch * seq`.
    pub mask: Vec<i64>,
    /// Segment ids, `batch * seq`.
    pub type_ids: Vec<i64>,
}

impl TokenBatch {
    /// The three input tensors, named as the encoder graph's inputs.
    pub fn tensors(&self) -> Result<[(&'static str, HostTensor); 3], ModelError> {
        let n = self.batch * self.seq;
        let mut out = Vec::with_capacity(3);
        for (name, v) in [
            ("input_ids", &self.ids),
            ("attention_mask", &self.mask),
            ("token_type_ids", &self.type_ids),
        ] {
            if v.len() != n {
                return Err(ModelError::Input(format!(
                    "{name} has {} values, batch {} x seq {} needs {n}",
                    v.len(),
                    self.batch,
                    self.seq
                )));
            }
            let t = HostTensor::from_slice(v, &[self.batch, self.seq])
                .map_err(|e| ModelError::Input(format!("{name}: {e}")))?;
            out.push((name, t));
        }
        Ok(out.try_into().expect("three tensors"))
    }
}

/// What one run returns.
#[derive(Clone, Debug)]
pub struct BertOutput {
    /// `F32 [batch, seq, hidden]`.
    pub last_hidden_state: HostTensor,
    /// `F32 [batch, hidden]`, unit rows.
    pub sentence_embedding: HostTensor,
}

/// A BERT encoder with its weights, compiled once per (batch, seq).
pub struct BertEncoder {
    config: BertConfig,
    weights: Box<dyn WeightLoader>,
    device: Device,
    compiled: HashMap<(usize, usize), CompiledGraph>,
}

impl BertEncoder {
    /// Loads `config.json` and memory-maps `model.safetensors` from `dir`.
    pub fn from_dir(dir: &Path, device: Device) -> Result<BertEncoder, ModelError> {
        let config = BertConfig::from_file(&dir.join("config.json"))?;
        let weights = BytesWeightLoader::open(dir.join("model.safetensors"))?;
        Ok(BertEncoder::new(config, Box::new(weights), device))
    }

    /// An encoder over any weight source (tensors named as HF's `BertModel`).
    pub fn new(config: BertConfig, weights: Box<dyn WeightLoader>, device: Device) -> BertEncoder {
        BertEncoder {
            config,
            weights,
            device,
            compiled: HashMap::new(),
        }
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &BertConfig {
        &self.config
    }

    /// The compiled graph for `batch x seq`, building, compiling and
    /// loading its params on first use.
    pub fn compiled(&mut self, batch: usize, seq: usize) -> Result<&mut CompiledGraph, ModelError> {
        if !self.compiled.contains_key(&(batch, seq)) {
            let built = encoder_graph(&self.config, batch, seq)?;
            let mut c = Session::new(self.device).try_compile(built.graph)?;
            load_params(&mut c, self.weights.as_ref(), &built.transposed)?;
            self.compiled.insert((batch, seq), c);
        }
        Ok(self
            .compiled
            .get_mut(&(batch, seq))
            .expect("inserted above"))
    }

    /// Runs the encoder; token and segment ids are checked against the
    /// embedding tables first.
    pub fn run(&mut self, tokens: &TokenBatch) -> Result<BertOutput, ModelError> {
        let inputs = tokens.tensors()?;
        for (what, v, rows) in [
            ("token id", &tokens.ids, self.config.vocab_size),
            (
                "token type id",
                &tokens.type_ids,
                self.config.type_vocab_size,
            ),
        ] {
            if let Some((i, bad)) = v
                .iter()
                .enumerate()
                .find(|(_, &x)| x < 0 || x as usize >= rows)
            {
                return Err(ModelError::Input(format!(
                    "{what} {bad} at position {i} is outside 0..{rows}"
                )));
            }
        }
        let c = self.compiled(tokens.batch, tokens.seq)?;
        let feed: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (*n, t)).collect();
        let mut outs = c.try_run_typed(&feed)?.into_iter();
        let (Some(last_hidden_state), Some(sentence_embedding)) = (outs.next(), outs.next()) else {
            return Err(ModelError::Input(
                "the encoder returned fewer than two outputs".into(),
            ));
        };
        Ok(BertOutput {
            last_hidden_state,
            sentence_embedding,
        })
    }

    /// Mean-pooled, L2-normalised sentence embeddings, one row per sequence.
    pub fn embed(&mut self, tokens: &TokenBatch) -> Result<Vec<Vec<f32>>, ModelError> {
        let e = self.run(tokens)?.sentence_embedding;
        let v = e
            .to_vec::<f32>()
            .map_err(|err| ModelError::Input(format!("sentence_embedding: {err}")))?;
        Ok(v.chunks(self.config.hidden_size)
            .map(<[f32]>::to_vec)
            .collect())
    }
}
