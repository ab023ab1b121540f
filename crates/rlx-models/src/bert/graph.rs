//! The encoder graph and its params.

use super::BertConfig;
use crate::ModelError;
use rlx_ir::op::MaskKind;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::{CompiledGraph, WeightLoader};

/// A built encoder graph for one batch / sequence length.
///
/// Inputs (all `I64 [batch, seq]`): `input_ids`, `attention_mask` (1 keeps
/// a token, 0 is padding), `token_type_ids`. Outputs: `last_hidden_state`
/// `F32 [batch, seq, hidden]` and `sentence_embedding` `F32 [batch, hidden]`
/// (mean over the kept tokens, L2-normalised).
pub struct EncoderGraph {
    /// The graph; params carry the safetensors tensor names.
    pub graph: Graph,
    /// Params stored as torch `Linear` weights (`[out, in]`) that the graph
    /// holds transposed (`[in, out]`), so every matmul is a plain GEMM that
    /// the bias add fuses into.
    pub transposed: Vec<String>,
}

struct Builder<'c> {
    g: Graph,
    cfg: &'c BertConfig,
    transposed: Vec<String>,
}

impl Builder<'_> {
    fn param(&mut self, name: &str, dims: &[usize]) -> NodeId {
        self.g.param(name, Shape::new(dims, DType::F32))
    }
    /// `x @ W^T + b` of the torch `Linear` `prefix` (`x` `[rows, in]`).
    fn linear(&mut self, x: NodeId, prefix: &str, fan_in: usize, fan_out: usize) -> NodeId {
        let name = format!("{prefix}.weight");
        let w = self.param(&name, &[fan_in, fan_out]);
        self.transposed.push(name);
        let b = self.param(&format!("{prefix}.bias"), &[fan_out]);
        let y = self.g.mm(x, w);
        self.g.add(y, b)
    }
    fn layer_norm(&mut self, x: NodeId, prefix: &str) -> NodeId {
        let h = self.cfg.hidden_size;
        let gamma = self.param(&format!("{prefix}.weight"), &[h]);
        let beta = self.param(&format!("{prefix}.bias"), &[h]);
        self.g.ln(x, gamma, beta, self.cfg.layer_norm_eps)
    }
    /// `[b*s, hidden]` -> `[b, heads, s, head_dim]`.
    fn split_heads(&mut self, x: NodeId, b: usize, s: usize) -> NodeId {
        let (nh, dh) = (self.cfg.num_attention_heads, self.cfg.head_dim());
        let t = self
            .g
            .reshape_(x, &[b as i64, s as i64, nh as i64, dh as i64]);
        self.g.transpose_(t, &[0, 2, 1, 3])
    }
    /// One post-norm layer on `x` `[b*s, hidden]`.
    fn layer(&mut self, x: NodeId, bias: NodeId, l: usize, b: usize, s: usize) -> NodeId {
        let (h, inner) = (self.cfg.hidden_size, self.cfg.intermediate_size);
        let p = format!("encoder.layer.{l}");
        let [q, k, v] = ["query", "key", "value"].map(|which| {
            let t = self.linear(x, &format!("{p}.attention.self.{which}"), h, h);
            self.split_heads(t, b, s)
        });
        let a = self.g.attention_(q, k, v, MaskKind::Bias, Some(bias));
        let a = self.g.transpose_(a, &[0, 2, 1, 3]);
        let a = self.g.reshape_(a, &[(b * s) as i64, h as i64]);
        let a = self.linear(a, &format!("{p}.attention.output.dense"), h, h);
        let a = self.g.add(a, x);
        let x = self.layer_norm(a, &format!("{p}.attention.output.LayerNorm"));
        let f = self.linear(x, &format!("{p}.intermediate.dense"), h, inner);
        let f = self.g.gelu(f);
        let f = self.linear(f, &format!("{p}.output.dense"), inner, h);
        let f = self.g.add(f, x);
        self.layer_norm(f, &format!("{p}.output.LayerNorm"))
    }
}

/// Builds the encoder for `batch` sequences of `seq` tokens.
pub fn encoder_graph(
    cfg: &BertConfig,
    batch: usize,
    seq: usize,
) -> Result<EncoderGraph, ModelError> {
    if batch == 0 || seq == 0 || seq > cfg.max_position_embeddings {
        return Err(ModelError::Input(format!(
            "batch {batch} x seq {seq}: both must be positive and seq at most \
             max_position_embeddings = {}",
            cfg.max_position_embeddings
        )));
    }
    let h = cfg.hidden_size;
    let mut bl = Builder {
        g: Graph::new("bert_encoder"),
        cfg,
        transposed: Vec::new(),
    };
    let ids_shape = Shape::new(&[batch, seq], DType::I64);
    let ids = bl.g.input("input_ids", ids_shape.clone());
    let mask = bl.g.input("attention_mask", ids_shape.clone());
    let types = bl.g.input("token_type_ids", ids_shape);

    let words = bl.param("embeddings.word_embeddings.weight", &[cfg.vocab_size, h]);
    let positions = bl.param(
        "embeddings.position_embeddings.weight",
        &[cfg.max_position_embeddings, h],
    );
    let type_table = bl.param(
        "embeddings.token_type_embeddings.weight",
        &[cfg.type_vocab_size, h],
    );
    let g = &mut bl.g;
    let x = g.gather_(words, ids, 0);
    let pos = g.narrow_(positions, 0, 0, seq);
    let x = g.add(x, pos);
    let t = g.gather_(type_table, types, 0);
    let x = g.add(x, t);
    let x = g.reshape_(x, &[(batch * seq) as i64, h as i64]);
    let mut x = bl.layer_norm(x, "embeddings.LayerNorm");

    // Additive attention bias [b, 1, 1, s]: 0 keeps a key, f32::MIN drops it (as HF does).
    let g = &mut bl.g;
    let keep = g.cast(mask, DType::F32);
    let dropped = g.sub(g.constant(1.0, DType::F32), keep);
    let bias = g.mul(dropped, g.constant(f32::MIN as f64, DType::F32));
    let bias = g.reshape_(bias, &[batch as i64, 1, 1, seq as i64]);
    for l in 0..cfg.num_hidden_layers {
        x = bl.layer(x, bias, l, batch, seq);
    }

    // Mean over the kept tokens, then L2 normalisation (sentence-transformers).
    let g = &mut bl.g;
    let hidden = g.reshape_(x, &[batch as i64, seq as i64, h as i64]);
    let keep3 = g.reshape_(keep, &[batch as i64, seq as i64, 1]);
    let kept = g.mul(hidden, keep3);
    let summed = g.sum(kept, &[1], false);
    let count = g.sum(keep3, &[1], false);
    let count = g.maximum(count, g.constant(1e-9, DType::F32));
    let mean = g.div(summed, count);
    let sq = g.mul(mean, mean);
    let norm = g.sum(sq, &[-1], true);
    let norm = g.sqrt(norm);
    let norm = g.maximum(norm, g.constant(1e-12, DType::F32));
    let emb = g.div(mean, norm);
    g.set_outputs(vec![hidden, emb]);
    Ok(EncoderGraph {
        graph: bl.g,
        transposed: bl.transposed,
    })
}

/// Sets every param of `compiled` (built by [`encoder_graph`]) from
/// `loader`, transposing the `transposed` Linear weights from torch's
/// `[out, in]`. Every tensor's dims and dtype are checked (from the
/// loader's metadata) before any param is set; then the tensors are set one
/// at a time, the others copied in place piece by piece
/// ([`CompiledGraph::set_param_from`]), so at most one Linear weight's host
/// copy is alive besides the params (peak memory stays near weights +
/// arena, not weights + the 47 MB word embeddings).
pub fn load_params(
    compiled: &mut CompiledGraph,
    loader: &dyn WeightLoader,
    transposed: &[String],
) -> Result<(), ModelError> {
    let params = compiled.param_shapes();
    for (name, shape) in &params {
        let meta = loader.meta(name)?;
        let is_t = transposed.contains(name);
        let dims = match (is_t, meta.dims.as_slice()) {
            (true, &[r, c]) => vec![c, r],
            _ => meta.dims.clone(),
        };
        let convertible = !matches!(meta.dtype, DType::C64);
        if shape.static_dims().as_deref() != Some(dims.as_slice()) || !convertible {
            return Err(ModelError::Input(format!(
                "weight \"{name}\": the graph expects {shape}, the file holds {} dims {:?}{}",
                meta.dtype,
                meta.dims,
                if is_t { " (transposed on load)" } else { "" }
            )));
        }
    }
    // Every buffer first, so none sits among the loader's short-lived copies.
    compiled.reserve_params()?;
    for (name, _) in &params {
        if transposed.contains(name) {
            let t = loader.get_as(name, DType::F32)?;
            compiled.set_param_typed(name, &transpose_2d(name, &t)?)?;
        } else {
            compiled.set_param_from(name, loader, name)?;
        }
    }
    Ok(())
}

/// Param `name` of a graph built by [`encoder_graph`] as a host tensor,
/// read from `loader` (f32; a `transposed` Linear weight turned from
/// torch's `[out, in]` to the graph's `[in, out]`): what a package of the
/// graph stores.
pub fn graph_param(
    loader: &dyn WeightLoader,
    name: &str,
    transposed: &[String],
) -> Result<HostTensor, ModelError> {
    let t = loader.get_as(name, DType::F32)?;
    if transposed.iter().any(|n| n == name) {
        transpose_2d(name, &t)
    } else {
        Ok(t)
    }
}

/// `[r, c]` -> `[c, r]` of an f32 tensor, moving its bytes into one new
/// buffer (no f32 staging copies: loading keeps little garbage behind).
fn transpose_2d(name: &str, t: &HostTensor) -> Result<HostTensor, ModelError> {
    let (&[r, c], DType::F32) = (t.dims(), t.dtype()) else {
        return Err(ModelError::Input(format!(
            "weight \"{name}\": a Linear weight must be 2-d f32, it is {} dims {:?}",
            t.dtype(),
            t.dims()
        )));
    };
    let src = t.bytes();
    let mut out = vec![0u8; src.len()];
    for (i, row) in src.chunks_exact(c * 4).enumerate() {
        for (j, v) in row.chunks_exact(4).enumerate() {
            out[(j * r + i) * 4..][..4].copy_from_slice(v);
        }
    }
    HostTensor::from_bytes(DType::F32, &[c, r], out)
        .map_err(|e| ModelError::Input(format!("weight \"{name}\": {e}")))
}
