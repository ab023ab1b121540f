//! Reading and checking a llama model's tensors from a GGUF file.
//!
//! Matrices stay in their stored block format ([`WeightMode::Quantized`],
//! run by `Op::DequantMatMul` without dequantizing whole weights) or are
//! decoded to f32 once ([`WeightMode::F32`], the exact reference math).
//! Every tensor's shape is checked against the [`LlamaConfig`] first.

use crate::config::LlamaConfig;
use crate::error::{LlamaError, Result};
use rlx_gguf::{codecs, GgmlType, GgufReader};
use rlx_ir::quant::QuantScheme;
use rlx_ir::{DType, HostTensor};

/// How matrices are held and multiplied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightMode {
    /// As stored (Q4_1, Q8_0, ...): the native quantized matmul, which
    /// quantizes activations per block as ggml does (fast, small).
    #[default]
    Quantized,
    /// Decoded to f32 once at load: `x · dequant(W)ᵀ` in f32 without
    /// activation rounding (4 bytes per weight).
    F32,
}

/// One `[n, k]` matrix as `Op::DequantMatMul` takes it.
#[derive(Debug, Clone)]
pub struct MatWeight {
    /// Block format, or `None` for a plain float tensor `[n, k]`.
    pub scheme: Option<QuantScheme>,
    /// Output features.
    pub n: usize,
    /// Input features.
    pub k: usize,
    /// Block bytes (`U8`) or the plain `[n, k]` tensor.
    pub data: HostTensor,
}

/// Which projections [`LayerWeights::qkv`] stacks, in q, k, v order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stacked {
    /// Query, key and value.
    Qkv,
    /// Query and key (the value's format differs).
    Qk,
    /// Key and value (the query's format differs).
    Kv,
}

impl Stacked {
    /// The stacked projections as indices into `[q, k, v]`.
    pub fn parts(self) -> std::ops::Range<usize> {
        match self {
            Stacked::Qkv => 0..3,
            Stacked::Qk => 0..2,
            Stacked::Kv => 1..3,
        }
    }

    /// The stacked matrix's param name in a layer (`attn_qkv`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Stacked::Qkv => "attn_qkv",
            Stacked::Qk => "attn_qk",
            Stacked::Kv => "attn_kv",
        }
    }

    /// The widest stack of `[q, k, v]` that shares a format.
    pub fn of(q: &MatWeight, k: &MatWeight, v: &MatWeight) -> Option<(Stacked, MatWeight)> {
        let mats = [q, k, v];
        [Stacked::Qkv, Stacked::Qk, Stacked::Kv]
            .into_iter()
            .find_map(|s| concat_rows(&mats[s.parts()]).map(|m| (s, m)))
    }
}

/// The tensors of one transformer block.
#[derive(Debug, Clone)]
pub struct LayerWeights {
    /// RMSNorm gain before attention, `[dim]`.
    pub attn_norm: HostTensor,
    /// Query projection `[dim, dim]`.
    pub wq: MatWeight,
    /// Key projection `[kv_dim, dim]`.
    pub wk: MatWeight,
    /// Value projection `[kv_dim, dim]`.
    pub wv: MatWeight,
    /// The rows of the projections that share a format (all three, else
    /// q / k, else k / v) stacked into one matrix (a copy made at load):
    /// the step graph quantizes the normed rows once for them and runs one
    /// wide product (the `[kv_dim, dim]` ones alone split poorly over
    /// threads). `None` when no two neighbours share a format; clearing it
    /// gives the three-product graph.
    pub qkv: Option<(Stacked, MatWeight)>,
    /// Attention output projection `[dim, dim]`.
    pub wo: MatWeight,
    /// RMSNorm gain before the feed-forward, `[dim]`.
    pub ffn_norm: HostTensor,
    /// SwiGLU gate `[ffn_dim, dim]`.
    pub w_gate: MatWeight,
    /// SwiGLU up `[ffn_dim, dim]`.
    pub w_up: MatWeight,
    /// SwiGLU down `[dim, ffn_dim]`.
    pub w_down: MatWeight,
}

/// Every tensor of a llama model.
#[derive(Debug, Clone)]
pub struct LlamaWeights {
    /// Token embedding table as stored (`[vocab, dim]`, any block format).
    pub token_embd: MatWeight,
    /// The blocks.
    pub layers: Vec<LayerWeights>,
    /// Final RMSNorm gain `[dim]`.
    pub output_norm: HostTensor,
    /// LM head `[vocab, dim]` (`output.weight`, or the embedding when tied).
    pub output: MatWeight,
}

impl LlamaWeights {
    /// Reads and checks every tensor `config` implies.
    pub fn from_gguf<D: AsRef<[u8]>>(
        r: &GgufReader<D>,
        config: &LlamaConfig,
        mode: WeightMode,
    ) -> Result<LlamaWeights> {
        let (d, f, kv, v) = (
            config.dim,
            config.ffn_dim,
            config.kv_dim(),
            config.vocab_size,
        );
        // The embedding is looked up row by row on the host, so it keeps its
        // stored format whatever the mode.
        let token_embd = matrix(r, "token_embd.weight", v, d, WeightMode::Quantized)?;
        let output = if r.tensor_info("output.weight").is_some() {
            matrix(r, "output.weight", v, d, mode)?
        } else {
            matrix(r, "token_embd.weight", v, d, mode)?
        };
        let layers = (0..config.n_layers)
            .map(|l| {
                let name = |t: &str| format!("blk.{l}.{t}.weight");
                let wq = matrix(r, &name("attn_q"), d, d, mode)?;
                let wk = matrix(r, &name("attn_k"), kv, d, mode)?;
                let wv = matrix(r, &name("attn_v"), kv, d, mode)?;
                let qkv = Stacked::of(&wq, &wk, &wv);
                Ok(LayerWeights {
                    attn_norm: vector(r, &name("attn_norm"), d)?,
                    wq,
                    wk,
                    wv,
                    qkv,
                    wo: matrix(r, &name("attn_output"), d, d, mode)?,
                    ffn_norm: vector(r, &name("ffn_norm"), d)?,
                    w_gate: matrix(r, &name("ffn_gate"), f, d, mode)?,
                    w_up: matrix(r, &name("ffn_up"), f, d, mode)?,
                    w_down: matrix(r, &name("ffn_down"), d, f, mode)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(LlamaWeights {
            token_embd,
            layers,
            output_norm: vector(r, "output_norm.weight", d)?,
            output,
        })
    }

    /// The f32 embedding of token `id` written into `out` (`dim` values).
    pub fn embed_into(&self, id: u32, out: &mut [f32]) -> Result<()> {
        embed_into(&self.token_embd, id, out)
    }
}

/// Row `id` of the embedding table `e` decoded into `out` (`e.k` values).
pub fn embed_into(e: &MatWeight, id: u32, out: &mut [f32]) -> Result<()> {
    if id as usize >= e.n {
        return Err(LlamaError::TokenOutOfRange { id, vocab: e.n });
    }
    let row = e.data.bytes().len() / e.n;
    let bytes = &e.data.bytes()[id as usize * row..][..row];
    let ty = match e.scheme {
        Some(s) => GgmlType::from(s),
        None => match e.data.dtype() {
            DType::F16 => GgmlType::F16,
            DType::BF16 => GgmlType::BF16,
            _ => GgmlType::F32,
        },
    };
    codecs::dequantize_into(ty, bytes, out)?;
    Ok(())
}

/// The rows of `parts` stacked into one matrix, when they share a format
/// and `K` (rows of a block format are whole blocks, so their bytes just
/// follow each other).
pub fn concat_rows(parts: &[&MatWeight]) -> Option<MatWeight> {
    let first = parts.first()?;
    let same = |m: &&MatWeight| {
        m.scheme == first.scheme && m.k == first.k && m.data.dtype() == first.data.dtype()
    };
    if !parts.iter().all(same) {
        return None;
    }
    let n = parts.iter().map(|m| m.n).sum();
    let bytes: Vec<u8> = parts
        .iter()
        .flat_map(|m| m.data.bytes().iter().copied())
        .collect();
    let dims = match first.scheme {
        Some(_) => vec![bytes.len()],
        None => vec![n, first.k],
    };
    let data = HostTensor::from_bytes(first.data.dtype(), &dims, bytes).ok()?;
    Some(MatWeight {
        scheme: first.scheme,
        n,
        k: first.k,
        data,
    })
}

fn info<'a, D: AsRef<[u8]>>(r: &'a GgufReader<D>, name: &str) -> Result<&'a rlx_gguf::TensorInfo> {
    r.tensor_info(name)
        .ok_or_else(|| LlamaError::MissingTensor {
            name: name.to_string(),
        })
}

fn check_shape(name: &str, expected: &[usize], given: Vec<usize>) -> Result<()> {
    if given != expected {
        return Err(LlamaError::TensorShape {
            name: name.to_string(),
            expected: expected.to_vec(),
            given,
        });
    }
    Ok(())
}

/// A `[n]` gain vector as f32.
fn vector<D: AsRef<[u8]>>(r: &GgufReader<D>, name: &str, n: usize) -> Result<HostTensor> {
    check_shape(name, &[n], info(r, name)?.shape())?;
    Ok(r.dequantize(name)?)
}

/// An `[n, k]` matrix in the form `mode` asks for.
fn matrix<D: AsRef<[u8]>>(
    r: &GgufReader<D>,
    name: &str,
    n: usize,
    k: usize,
    mode: WeightMode,
) -> Result<MatWeight> {
    let t = info(r, name)?;
    check_shape(name, &[n, k], t.shape())?;
    let ty = t.ggml_type();
    let type_error = |why: &str| LlamaError::TensorType {
        name: name.to_string(),
        ty: ty.name().to_string(),
        why: why.to_string(),
    };
    if mode == WeightMode::F32 {
        let values = r.dequantize(name)?;
        return Ok(MatWeight {
            scheme: None,
            n,
            k,
            data: values,
        });
    }
    let (scheme, data) = match ty {
        GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => (None, r.tensor(name)?),
        _ => {
            let scheme = ty
                .quant_scheme()
                .ok_or_else(|| type_error("is not a block format a matmul can take"))?;
            let bytes = r.tensor_data(name)?.to_vec();
            let len = bytes.len();
            (
                Some(scheme),
                HostTensor::from_bytes(DType::U8, &[len], bytes)?,
            )
        }
    };
    Ok(MatWeight { scheme, n, k, data })
}
