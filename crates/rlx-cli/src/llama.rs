//! llama-family GGUF models as `rlx run` / `rlx bench` models: `input_ids`
//! in, every position's `logits` out. A GGUF file runs directly; `rlx pack`
//! keeps its metadata (as a tensor-less GGUF blob) beside its blocks so the
//! package runs the same way.

use anyhow::{bail, Context, Result};
use rlx::gguf::{GgmlType, GgufReader, GgufWriter};
use rlx::llama::{LlamaConfig, LlamaModel, LlamaOptions};
use rlx::pkg::{Package, PackageBuilder};
use rlx::{DType, HostTensor};
use std::path::Path;

/// Package blob holding the source GGUF's metadata (a GGUF file without tensors).
pub const METADATA_BLOB: &str = "gguf_metadata";

/// The input a llama model takes.
pub const INPUT: &str = "input_ids";

/// True when the GGUF's metadata describes a llama-family model.
pub fn is_llama(r: &GgufReader<impl AsRef<[u8]>>) -> bool {
    LlamaConfig::from_gguf(r.metadata()).is_ok()
}

/// A GGUF file holding only `r`'s metadata.
fn metadata_only(r: &GgufReader<impl AsRef<[u8]>>) -> Result<Vec<u8>> {
    let mut w = GgufWriter::new();
    w.set_alignment(r.alignment() as u32)?;
    for (k, v) in r.metadata().iter() {
        if k != "general.alignment" {
            w.add_metadata(k, v.clone())?;
        }
    }
    Ok(w.to_bytes()?)
}

/// Packs the GGUF at `path`: its tensors (quantized blocks as they are),
/// and for a llama model its metadata blob, so the package runs.
pub fn pack_gguf(path: &Path) -> Result<PackageBuilder> {
    let r = GgufReader::open(path).with_context(|| path.display().to_string())?;
    let b = Package::builder().gguf(path);
    Ok(if is_llama(&r) {
        b.blob(METADATA_BLOB, metadata_only(&r)?)
            .metadata("model", "llama")
            .metadata(crate::model::OUTPUT_NAMES, r#"["logits"]"#)
    } else {
        b
    })
}

/// The GGUF file a llama package was packed from, rebuilt in memory.
pub fn gguf_of_package(p: &Package) -> Result<GgufReader<Vec<u8>>> {
    let meta = GgufReader::new(p.blob(METADATA_BLOB)?)?;
    let mut w = GgufWriter::new();
    w.set_alignment(meta.alignment() as u32)?;
    for (k, v) in meta.metadata().iter() {
        if k != "general.alignment" {
            w.add_metadata(k, v.clone())?;
        }
    }
    for e in p.entries() {
        let t = p.tensor(&e.name)?;
        match &e.quant {
            Some(q) => {
                let dims: Vec<u64> = q.dims.iter().rev().map(|&d| d as u64).collect();
                w.add_tensor_bytes(&e.name, &dims, GgmlType::from(q.scheme), t.into_bytes())?
            }
            None => w.add_host_tensor(&e.name, &t)?,
        };
    }
    Ok(GgufReader::new(w.to_bytes()?)?)
}

/// A loaded llama model that runs `input_ids` to logits.
pub struct LlamaRunner {
    model: LlamaModel,
}

impl LlamaRunner {
    /// Loads the model of `r` for prompts of up to `tokens` tokens.
    pub fn new(r: &GgufReader<impl AsRef<[u8]>>, tokens: usize) -> Result<LlamaRunner> {
        // Room for the prompt, at least one cache bucket, within the model's context.
        let max = LlamaConfig::from_gguf(r.metadata())?.context_length;
        let opts = LlamaOptions {
            context: tokens.max(64).min(max),
            ..LlamaOptions::default()
        };
        Ok(LlamaRunner {
            model: LlamaModel::from_reader(r, opts)?,
        })
    }

    /// `logits [n, vocab]` of every position of `ids` (i32 / i64, `[n]` or `[1, n]`).
    pub fn run(&mut self, ids: &HostTensor) -> Result<HostTensor> {
        let tokens = token_ids(ids, self.model.config().vocab_size)?;
        let mut cache = self.model.new_cache();
        let logits = self.model.forward(&tokens, &mut cache)?;
        let vocab = self.model.config().vocab_size;
        Ok(HostTensor::from_vec(logits, &[tokens.len(), vocab])?)
    }
}

/// The token ids of `t`, each checked against the vocabulary.
pub fn token_ids(t: &HostTensor, vocab: usize) -> Result<Vec<u32>> {
    let ids: Vec<i64> = match t.dtype() {
        DType::I64 => t.to_vec::<i64>()?,
        DType::I32 => t.to_vec::<i32>()?.into_iter().map(i64::from).collect(),
        d => bail!("{INPUT} must be int32 or int64, got {d:?}"),
    };
    if !(t.dims().len() == 1 || (t.dims().len() == 2 && t.dims()[0] == 1)) || ids.is_empty() {
        bail!(
            "{INPUT} must be [n] or [1, n] with n > 0, got dims {:?}",
            t.dims()
        );
    }
    ids.iter()
        .map(|&i| {
            u32::try_from(i)
                .ok()
                .filter(|&u| (u as usize) < vocab)
                .with_context(|| {
                    format!("{INPUT}: token id {i} is outside the vocabulary of {vocab}")
                })
        })
        .collect()
}
