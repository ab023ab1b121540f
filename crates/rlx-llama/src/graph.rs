//! The llama step graph: `S` new tokens attend to a KV cache of `C` slots
//! held as params (persistent state the caller extends in place with
//! `CompiledGraph::write_param_bytes`, one row per layer per token).
//!
//! Inputs (all f32): `x [S, dim]` (the token embeddings), `cos` / `sin`
//! `[S, head_dim/2]` (RoPE angles of the tokens' positions) and `mask
//! [S, C+S]` (an additive bias: 0 for a key the query sees, a large
//! negative number otherwise; columns `..C` are the cache slots, `C..` the
//! new tokens). Params: the weights, and per layer `k_cache.L` /
//! `v_cache.L` `[n_kv_heads, C, head_dim]` in the cache's dtype (f32 or
//! f16, widened to f32 before the attention products); a graph of `C = 0`
//! (a prompt's first chunk) has none and attends over its own tokens
//! only. Outputs: `logits`
//! (`[S, vocab]`, or `[1, vocab]` for the last row only with
//! [`LogitRows::Last`]), then per layer the new keys and values
//! `[n_kv_heads, S, head_dim]` (after RoPE, in the cache's dtype), which
//! the caller writes into its cache. Attention itself uses the new keys /
//! values as rounded to the cache's dtype, so a chunk sees exactly what
//! later steps read back from the cache.
//!
//! Per block: `x += Wo · attn(rope(Wq·n), rope(Wk·n), Wv·n)` with
//! `n = rmsnorm(x) * attn_norm`, grouped-query heads (query head `h` reads
//! kv head `h / (n_heads / n_kv_heads)`); `x += Wdown · (silu(Wgate·n2) *
//! (Wup·n2))` with `n2 = rmsnorm(x) * ffn_norm`; then `logits =
//! Wout · (rmsnorm(x) * output_norm)`. RoPE rotates adjacent pairs
//! (`x[2i], x[2i+1]`), llama.cpp's "normal" mode for GGUF llama weights.
//!
//! The projections whose weights share a format run as one product over
//! their stacked rows (`LayerWeights::qkv`: the normed rows quantized once,
//! one wide product that splits evenly over threads); its `[heads, S, hd]`
//! head split is sliced on the leading axis, which the memory planner
//! makes views.
//!
//! Attention never copies the cache: the scores against the cache params
//! and against the new keys are two batched products (`DotGeneral`, one
//! batch entry per kv head, its query heads stacked as rows), concatenated
//! (a few KB), masked and soft-maxed together, and the probabilities split
//! again for the two value products.

use crate::config::{KvCacheDtype, LlamaConfig};
use crate::weights::{LayerWeights, LlamaWeights, MatWeight};
use rlx_ir::op::DotDims;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};

/// The name of layer `l`'s cache param (`kind` is `"k"` or `"v"`).
pub fn cache_param(kind: &str, l: usize) -> String {
    format!("{kind}_cache.{l}")
}

/// Which rows' logits a step graph outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogitRows {
    /// Every row (`[S, vocab]`).
    All,
    /// The last row only (`[1, vocab]`): a prefill chunk whose last token
    /// is the last row skips the LM head for the others.
    Last,
}

/// Batched product over axis 0 contracting `lhs` axis 2 with `rhs` axis
/// `rhs_contract`.
fn batched(lhs_contract: usize, rhs_contract: usize) -> DotDims {
    DotDims {
        lhs_batch: vec![0],
        rhs_batch: vec![0],
        lhs_contract: vec![lhs_contract],
        rhs_contract: vec![rhs_contract],
    }
}

/// A step graph and the params it needs, by name.
pub struct StepGraph<'w> {
    /// The graph (see the module docs for its inputs and outputs).
    pub graph: Graph,
    /// `(param name, value)` for every param of `graph`.
    pub params: Vec<(String, &'w HostTensor)>,
}

struct Builder<'a, 'w> {
    g: Graph,
    params: Vec<(String, &'w HostTensor)>,
    cfg: &'a LlamaConfig,
}

impl<'w> Builder<'_, 'w> {
    fn param(&mut self, name: String, value: &'w HostTensor) -> NodeId {
        let id = self.g.param(&name, value.shape());
        self.params.push((name, value));
        id
    }

    fn matmul(&mut self, x: NodeId, name: String, w: &'w MatWeight) -> NodeId {
        let wid = self.param(name, &w.data);
        self.g.dequant_matmul(x, wid, w.scheme, w.n, w.k)
    }

    fn rms_norm(&mut self, x: NodeId, name: String, gain: &'w HostTensor) -> NodeId {
        let gid = self.param(name, gain);
        self.g.rms_norm(x, gid, self.cfg.rms_eps)
    }

    /// Grouped-query attention of `q [nh, S, hd]` over the cache params
    /// (`[nkv, C, hd]`; `None` for a graph without cache slots) and the new
    /// `k`, `v` (`[nkv, S, hd]`).
    #[allow(clippy::too_many_arguments)]
    fn attention(
        &mut self,
        q: NodeId,
        k: NodeId,
        v: NodeId,
        cache: Option<(NodeId, NodeId)>,
        mask: NodeId,
        seq: usize,
        ctx: usize,
    ) -> NodeId {
        let (hd, nh, nkv) = (self.cfg.head_dim, self.cfg.n_heads, self.cfg.n_kv_heads);
        let group = nh / nkv;
        let g = &mut self.g;
        let q = g.mul(q, (1.0 / (hd as f64).sqrt()) as f32);
        // Query head h = kv * group + i: rows (i, s) of kv head `kv`.
        let q = g.reshape_(q, &[nkv as i64, (group * seq) as i64, hd as i64]);
        let s_new = g.dot_general(q, k, batched(2, 2));
        let scores = match cache {
            Some((k_cache, _)) => {
                let s_cache = g.dot_general(q, k_cache, batched(2, 2));
                g.concat_(&[s_cache, s_new], 2)
            }
            None => s_new,
        };
        let width = (ctx + seq) as i64;
        let scores = g.reshape_(scores, &[nkv as i64, group as i64, seq as i64, width]);
        let scores = g.add(scores, mask);
        let p = g.sm(scores, 3);
        let p = g.reshape_(p, &[nkv as i64, (group * seq) as i64, width]);
        let o = match cache {
            Some((_, v_cache)) => {
                let p_cache = g.narrow_(p, 2, 0, ctx);
                let p_new = g.narrow_(p, 2, ctx, seq);
                let o_cache = g.dot_general(p_cache, v_cache, batched(2, 1));
                let o_new = g.dot_general(p_new, v, batched(2, 1));
                g.add(o_cache, o_new)
            }
            None => g.dot_general(p, v, batched(2, 1)),
        };
        let o = g.reshape_(o, &[nh as i64, seq as i64, hd as i64]);
        let o = g.transpose_(o, &[1, 0, 2]);
        g.reshape_(o, &[seq as i64, self.cfg.dim as i64])
    }

    /// Layer `l`'s queries, keys and values of the normed rows `h`, as
    /// `[heads, S, hd]`: the stacked ones ([`LayerWeights::qkv`]) from one
    /// product and one head split, sliced on the leading axis (views, no
    /// copy), the others from their own products.
    fn projections(
        &mut self,
        h: NodeId,
        l: usize,
        lw: &'w LayerWeights,
        seq: usize,
    ) -> (NodeId, NodeId, NodeId) {
        let (nh, nkv) = (self.cfg.n_heads, self.cfg.n_kv_heads);
        let heads = [nh, nkv, nkv];
        let mut out: [Option<NodeId>; 3] = [None; 3];
        if let Some((stacked, w)) = &lw.qkv {
            let parts = stacked.parts();
            let y = self.matmul(h, format!("blk.{l}.{}", stacked.name()), w);
            let y = self.split_heads(y, seq, heads[parts.clone()].iter().sum());
            let mut at = 0;
            for i in parts {
                out[i] = Some(self.g.narrow_(y, 0, at, heads[i]));
                at += heads[i];
            }
        }
        let mats = [("attn_q", &lw.wq), ("attn_k", &lw.wk), ("attn_v", &lw.wv)];
        let mut get = |i: usize| match out[i] {
            Some(y) => y,
            None => {
                let y = self.matmul(h, format!("blk.{l}.{}", mats[i].0), mats[i].1);
                self.split_heads(y, seq, heads[i])
            }
        };
        (get(0), get(1), get(2))
    }

    /// `[S, heads * hd] -> [heads, S, hd]`.
    fn split_heads(&mut self, x: NodeId, s: usize, heads: usize) -> NodeId {
        let hd = self.cfg.head_dim as i64;
        let r = self.g.reshape_(x, &[s as i64, heads as i64, hd]);
        self.g.transpose_(r, &[1, 0, 2])
    }
}

/// Builds the step graph for `seq` new tokens and a cache of `ctx` slots
/// (0: no cache params) of `kv` elements. The cache params are not in
/// [`StepGraph::params`] (the caller sets and extends them).
pub fn build_step_graph<'w>(
    cfg: &LlamaConfig,
    w: &'w LlamaWeights,
    seq: usize,
    ctx: usize,
    rows: LogitRows,
    kv: KvCacheDtype,
) -> StepGraph<'w> {
    let mut b = Builder {
        g: Graph::new(format!("llama_step_s{seq}_c{ctx}")),
        params: Vec::new(),
        cfg,
    };
    let (hd, nkv) = (cfg.head_dim, cfg.n_kv_heads);
    let f32s = |dims: &[usize]| Shape::new(dims, DType::F32);
    let mut x = b.g.input("x", f32s(&[seq, cfg.dim]));
    let cos = b.g.input("cos", f32s(&[seq, hd / 2]));
    let sin = b.g.input("sin", f32s(&[seq, hd / 2]));
    let mask = b.g.input("mask", f32s(&[seq, ctx + seq]));
    let mut kv_out = Vec::with_capacity(2 * cfg.n_layers);
    for (l, lw) in w.layers.iter().enumerate() {
        let p = |t: &str| format!("blk.{l}.{t}");
        // No cache params without slots (a prompt's first chunk).
        let cache = (ctx > 0).then(|| {
            let cache_shape = Shape::new(&[nkv, ctx, hd], kv.dtype());
            let k_cache = b.g.param(&cache_param("k", l), cache_shape.clone());
            let v_cache = b.g.param(&cache_param("v", l), cache_shape);
            (b.g.cast(k_cache, DType::F32), b.g.cast(v_cache, DType::F32))
        });
        let h = b.rms_norm(x, p("attn_norm"), &lw.attn_norm);
        let (q, k, v) = b.projections(h, l, lw, seq);
        let q = b.g.rope_interleaved(q, cos, sin);
        let k = b.g.rope_interleaved(k, cos, sin);
        // Rounded to the cache's dtype (no node for f32) and back.
        let (k, v) = (b.g.cast(k, kv.dtype()), b.g.cast(v, kv.dtype()));
        kv_out.extend([k, v]);
        let (k, v) = (b.g.cast(k, DType::F32), b.g.cast(v, DType::F32));
        let a = b.attention(q, k, v, cache, mask, seq, ctx);
        let o = b.matmul(a, p("attn_output"), &lw.wo);
        x = b.g.add(x, o);
        let h = b.rms_norm(x, p("ffn_norm"), &lw.ffn_norm);
        let gate = b.matmul(h, p("ffn_gate"), &lw.w_gate);
        let up = b.matmul(h, p("ffn_up"), &lw.w_up);
        let gate = b.g.silu(gate);
        let act = b.g.mul(gate, up);
        let down = b.matmul(act, p("ffn_down"), &lw.w_down);
        x = b.g.add(x, down);
    }
    if rows == LogitRows::Last {
        x = b.g.narrow_(x, 0, seq - 1, 1);
    }
    let h = b.rms_norm(x, "output_norm".into(), &w.output_norm);
    let logits = b.matmul(h, "output".into(), &w.output);
    let mut outputs = vec![logits];
    outputs.extend(kv_out);
    b.g.set_outputs(outputs);
    StepGraph {
        graph: b.g,
        params: b.params,
    }
}
