//! [`LlamaModel`]: the compiled step graphs of a GGUF llama model and the
//! host-side work around them (embedding lookup, RoPE angles, masks, the
//! KV cache).

use crate::config::{KvCacheDtype, LlamaConfig};
use crate::error::{LlamaError, Result};
use crate::graph::{build_step_graph, cache_param, LogitRows};
use crate::kv_cache::KvCache;
use crate::weights::{embed_into, LlamaWeights, MatWeight, WeightMode};
use rlx_gguf::GgufReader;
use rlx_ir::HostTensor;
use rlx_runtime::{CompileOptions, CompiledGraph, Device, Session};
use std::path::Path;

/// A masked key's bias: finite, so a fully masked block never makes NaNs,
/// and small enough that `exp` of it is exactly 0 in f32.
const MASKED: f32 = -1.0e9;

/// The smallest cache bucket (slots).
const MIN_BUCKET: usize = 64;

/// The smallest prompt-piece graph below the quarter chunk: the remainder
/// of a prompt pads to a multiple of this at most.
const MIN_PIECE: usize = 8;

/// Loading options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LlamaOptions {
    /// How matrices are held and multiplied.
    pub weights: WeightMode,
    /// KV cache positions (prompt + generated tokens); at most the model's
    /// context length.
    pub context: usize,
    /// Tokens per prefill run (the prompt runs in chunks of this size, its
    /// remainder padded, or in pieces of a quarter chunk, a sixteenth, ...
    /// (at least 8 tokens below the quarter) where those pad less; after
    /// the chunks when the prompt fits two chunks, so the first chunk
    /// attends over the smallest cache bucket); 1 runs the prompt token by
    /// token. The default, 128, takes a typical prompt in one or two runs:
    /// each run streams every weight once and pays each product's fixed
    /// costs (activation layout, the threads' hand-off) once, so 136
    /// tokens as 128 + 8 prefill faster at 2 threads than as 8 + 4 x 32
    /// (BENCHMARKS.md).
    pub prefill_chunk: usize,
    /// The KV cache's element type.
    pub kv_cache: KvCacheDtype,
    /// One product for the query / key (/ value) projections where their
    /// weights share a format ([`LayerWeights::qkv`](crate::weights::LayerWeights::qkv));
    /// `false` runs three (the same values: each output is the same dot
    /// product either way).
    pub fuse_projections: bool,
}

impl Default for LlamaOptions {
    fn default() -> Self {
        LlamaOptions {
            weights: WeightMode::Quantized,
            context: 512,
            prefill_chunk: 128,
            kv_cache: KvCacheDtype::F32,
            fuse_projections: true,
        }
    }
}

/// One compiled step graph and how much of which cache its cache params
/// hold.
struct Step {
    seq: usize,
    /// Cache slots of its cache params.
    ctx: usize,
    graph: CompiledGraph,
    /// `(cache id, rows)`: rows `..rows` of that [`KvCache`] are copied in.
    synced: (u64, usize),
}

impl Step {
    /// Copies the rows of `cache` this graph has not seen into its params.
    /// Rows past its slots are left out: the graph runs only while the
    /// cache fills no more of them.
    fn sync(&mut self, cache: &KvCache, n_layers: usize) -> Result<()> {
        if self.synced.0 != cache.id() {
            self.synced = (cache.id(), 0);
        }
        let to = cache.len().min(self.ctx);
        let from = self.synced.1.min(to);
        if from == to {
            return Ok(());
        }
        for l in 0..n_layers {
            for (kind, t) in [("k", cache.keys(l)), ("v", cache.values(l))] {
                let name = cache_param(kind, l);
                for (r, offset) in cache.row_bytes(from, to, self.ctx) {
                    self.graph.write_param_bytes(&name, offset, &t.bytes()[r])?;
                }
            }
        }
        self.synced.1 = to;
        Ok(())
    }
}

/// The prompt-chunk graphs (`prefill_chunk` > 1).
struct Prefill {
    /// A chunk with last-row logits into an empty cache: no cache slots,
    /// so the prompt's first chunk attends over its own tokens only (over
    /// the smallest bucket, half its score columns were masked slots).
    first: Step,
    /// Chunks with last-row logits, by cache bucket (those of at least a
    /// chunk's slots).
    last: Vec<Step>,
    /// The same for pieces of a quarter chunk, a sixteenth, ... (largest
    /// first; the quarter when it is 2 tokens or more, smaller ones of
    /// [`MIN_PIECE`] tokens or more), over the smallest cache bucket that
    /// holds two chunks (else the whole context): the remainder of a
    /// prompt runs in these rather than in a chunk of mostly padding (after
    /// the chunks when the whole prompt fits their cache, else before
    /// them).
    small: Vec<Step>,
    /// Chunks with every row's logits, over the whole context.
    all: Step,
}

impl Prefill {
    /// Tokens of the next run for `len` tokens to go after `filled` cache
    /// rows: whole chunks and the remainder (a run is padded at the front,
    /// so the last token always ends the last run), in pieces when `rows`
    /// is `Last`, they fit their cache and that computes fewer padded rows
    /// ([`run_length`] says in which order); a single token runs in a
    /// decode graph.
    fn next_run(&self, len: usize, filled: usize, rows: LogitRows) -> usize {
        let pieces: Vec<usize> = match rows {
            LogitRows::Last => self.small.iter().map(|s| s.seq).collect(),
            LogitRows::All => Vec::new(),
        };
        let piece_ctx = self.small.first().map_or(0, |s| s.ctx);
        run_length(len, filled, self.all.seq, &pieces, piece_ctx)
    }

    /// The piece graph (index into `small`) for a run of `n` tokens that
    /// needs `need` cache slots: the smallest piece of at least `n`
    /// tokens, if its cache holds `need`.
    fn piece(&self, n: usize, need: usize) -> Option<usize> {
        self.small
            .iter()
            .rposition(|s| s.seq >= n)
            .filter(|&i| need <= self.small[i].ctx)
    }
}

/// A llama model compiled for the CPU: graphs for single-token decode
/// steps and for prompt chunks (and pieces of them) with last-row logits
/// (generation), one per cache bucket (64, 128, ... slots up to the
/// context, so a step attends over at most about twice the filled
/// length; a prompt's first chunk in one without cache slots), and one for
/// chunks with every row's logits ([`LlamaModel::forward`]), each compiled
/// once. The graphs share one copy of the weights; each keeps its own KV
/// cache params, extended in place row by row.
pub struct LlamaModel {
    config: LlamaConfig,
    /// The embedding table, looked up on the host.
    embedding: MatWeight,
    context: usize,
    kv_cache: KvCacheDtype,
    /// Decode graphs by growing cache size, the last one the whole context.
    decode: Vec<Step>,
    /// The prompt-chunk graphs.
    prefill: Option<Prefill>,
}

impl LlamaModel {
    /// Opens (memory-maps) a GGUF file and loads the model.
    pub fn open(path: impl AsRef<Path>, opts: LlamaOptions) -> Result<LlamaModel> {
        let r = GgufReader::open(path)?;
        LlamaModel::from_reader(&r, opts)
    }

    /// Loads the model from a parsed GGUF file.
    pub fn from_reader<D: AsRef<[u8]>>(r: &GgufReader<D>, opts: LlamaOptions) -> Result<Self> {
        let config = LlamaConfig::from_gguf(r.metadata())?;
        if opts.context == 0 || opts.context > config.context_length {
            return Err(LlamaError::BadSetting {
                name: "context",
                expected: "1 ..= the model's context_length",
                given: format!(
                    "{} (context_length {})",
                    opts.context, config.context_length
                ),
            });
        }
        if opts.prefill_chunk == 0 {
            return Err(LlamaError::BadSetting {
                name: "prefill_chunk",
                expected: ">= 1",
                given: "0".into(),
            });
        }
        let mut weights = LlamaWeights::from_gguf(r, &config, opts.weights)?;
        if !opts.fuse_projections {
            weights.layers.iter_mut().for_each(|l| l.qkv = None);
        }
        let ctx = opts.context;
        let kv = opts.kv_cache;
        let full = compile(&config, &weights, 1, ctx, LogitRows::All, kv, None)?;
        let from = Some(&full.graph);
        let buckets = || {
            std::iter::successors(Some(MIN_BUCKET), |b| Some(b * 2)).take_while(move |&b| b < ctx)
        };
        let compile_buckets = |seq, rows| -> Result<Vec<Step>> {
            buckets()
                .filter(|&b| b >= seq)
                .map(|b| compile(&config, &weights, seq, b, rows, kv, from))
                .collect()
        };
        let mut decode = compile_buckets(1, LogitRows::All)?;
        let prefill = match opts.prefill_chunk {
            1 => None,
            p => {
                let last_rows = |seq| -> Result<Vec<Step>> {
                    let mut steps = compile_buckets(seq, LogitRows::Last)?;
                    steps.push(compile(
                        &config,
                        &weights,
                        seq,
                        ctx,
                        LogitRows::Last,
                        kv,
                        from,
                    )?);
                    Ok(steps)
                };
                // Two chunks' slots: a prompt of up to two chunks runs its
                // chunks first and the remainder in these.
                let piece_ctx = buckets().find(|&b| b >= 2 * p).unwrap_or(ctx);
                let sizes = std::iter::successors(Some(p / 4), |s| Some(s / 4))
                    .enumerate()
                    .take_while(|&(i, s)| s >= 2 && (i == 0 || s >= MIN_PIECE))
                    .map(|(_, s)| s);
                let small = sizes
                    .map(|s| compile(&config, &weights, s, piece_ctx, LogitRows::Last, kv, from))
                    .collect::<Result<Vec<_>>>()?;
                Some(Prefill {
                    first: compile(&config, &weights, p, 0, LogitRows::Last, kv, from)?,
                    last: last_rows(p)?,
                    small,
                    all: compile(&config, &weights, p, ctx, LogitRows::All, kv, from)?,
                })
            }
        };
        decode.push(full);
        Ok(LlamaModel {
            config,
            embedding: weights.token_embd,
            context: opts.context,
            kv_cache: kv,
            decode,
            prefill,
        })
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// An empty KV cache sized for this model's context.
    pub fn new_cache(&self) -> KvCache {
        KvCache::with_dtype(&self.config, self.context, self.kv_cache)
    }

    /// Runs `tokens` after the ones in `cache`, appends their keys / values
    /// to it and returns their logits, `tokens.len()` rows of `vocab_size`.
    ///
    /// Unknown ids and a full cache are rejected before anything runs; a
    /// runtime failure part-way keeps the chunks already run in `cache`.
    pub fn forward(&mut self, tokens: &[u32], cache: &mut KvCache) -> Result<Vec<f32>> {
        self.run(tokens, cache, LogitRows::All)
    }

    /// As [`Self::forward`], returning the last token's logits only
    /// (`vocab_size` values): a prompt's chunks skip the LM head for every
    /// other row.
    pub fn forward_last(&mut self, tokens: &[u32], cache: &mut KvCache) -> Result<Vec<f32>> {
        self.run(tokens, cache, LogitRows::Last)
    }

    fn run(&mut self, tokens: &[u32], cache: &mut KvCache, rows: LogitRows) -> Result<Vec<f32>> {
        if !cache.fits(&self.config, self.context, self.kv_cache) {
            return Err(LlamaError::BadSetting {
                name: "cache",
                expected: "a cache made by this model's new_cache",
                given: format!(
                    "a cache of {} {:?} positions",
                    cache.capacity(),
                    cache.dtype()
                ),
            });
        }
        cache.check_room(tokens.len())?;
        if let Some(&id) = tokens
            .iter()
            .find(|&&t| t as usize >= self.config.vocab_size)
        {
            return Err(LlamaError::TokenOutOfRange {
                id,
                vocab: self.config.vocab_size,
            });
        }
        if tokens.is_empty() && rows == LogitRows::Last {
            return Err(LlamaError::BadSetting {
                name: "tokens",
                expected: "at least one token",
                given: "no tokens".into(),
            });
        }
        let vocab = self.config.vocab_size;
        let mut logits = Vec::new();
        let mut rest = tokens;
        while !rest.is_empty() {
            let n = match &self.prefill {
                Some(p) => p.next_run(rest.len(), cache.len(), rows),
                None => 1,
            };
            let last = n == rest.len();
            let need = cache.len() + n;
            let step = match (&mut self.prefill, rows) {
                _ if n == 1 => bucket_for(&mut self.decode, need),
                (Some(p), LogitRows::Last) if cache.is_empty() && n == p.first.seq => &mut p.first,
                (Some(p), LogitRows::Last) => match p.piece(n, need) {
                    Some(i) => &mut p.small[i],
                    None => bucket_for(&mut p.last, need),
                },
                (Some(p), LogitRows::All) => &mut p.all,
                (None, _) => unreachable!("runs of several tokens only with prefill graphs"),
            };
            let out = step_run(&self.config, &self.embedding, step, &rest[..n], cache)?;
            match rows {
                LogitRows::All => logits.extend(&out[(out.len() - n * vocab)..]),
                LogitRows::Last if last => logits = out[out.len() - vocab..].to_vec(),
                LogitRows::Last => {}
            }
            rest = &rest[n..];
        }
        Ok(logits)
    }
}

/// [`Prefill::next_run`] over sizes: `len` tokens to go after `filled`
/// cache rows, chunks of `chunk`, pieces of `pieces` tokens (largest
/// first, each dividing the one before) over a cache of `piece_ctx` slots.
fn run_length(
    len: usize,
    filled: usize,
    chunk: usize,
    pieces: &[usize],
    piece_ctx: usize,
) -> usize {
    let r = len % chunk;
    let fewer_rows = |&&s: &&usize| r.div_ceil(s) * s < chunk;
    match pieces.last().filter(fewer_rows) {
        _ if r == 0 => chunk,
        // The whole prompt fits the pieces' cache: chunks first (the first
        // one attends over the smallest bucket), the remainder last.
        Some(_) if filled + len <= piece_ctx => match len >= chunk {
            true => chunk,
            false => pieces.iter().copied().find(|&b| b <= len).unwrap_or(len),
        },
        // Else the remainder first, while the cache is emptiest.
        Some(&s) if filled + r <= piece_ctx => match r % s {
            0 => pieces.iter().copied().find(|&b| b <= r).unwrap_or(s),
            q => q,
        },
        _ => r,
    }
}

/// The step with the smallest cache of at least `need` slots (`steps`
/// grow, the last one holds the whole context).
fn bucket_for(steps: &mut [Step], need: usize) -> &mut Step {
    let last = steps.len() - 1;
    let i = steps.iter().position(|s| s.ctx >= need).unwrap_or(last);
    &mut steps[i]
}

/// One run of `step`'s graph on `tokens` (at most `step.seq`; a shorter
/// chunk is padded at the front, so the tokens are the last rows): syncs
/// the cache params, runs, and appends the new keys / values to `cache`
/// and the graph. Returns the graph's logits.
fn step_run(
    cfg: &LlamaConfig,
    embedding: &MatWeight,
    step: &mut Step,
    tokens: &[u32],
    cache: &mut KvCache,
) -> Result<Vec<f32>> {
    let seq = step.seq;
    let pad = seq - tokens.len();
    let (dim, half, ctx, pos) = (cfg.dim, cfg.head_dim / 2, step.ctx, cache.len());
    let mut x = vec![0f32; seq * dim];
    for (i, &t) in tokens.iter().enumerate() {
        embed_into(embedding, t, &mut x[(pad + i) * dim..][..dim])?;
    }
    let (mut cos, mut sin) = (vec![0f32; seq * half], vec![0f32; seq * half]);
    for i in 0..tokens.len() {
        for j in 0..half {
            let freq = cfg.rope_base.powf(-2.0 * j as f64 / cfg.head_dim as f64);
            let angle = (pos + i) as f64 * freq;
            cos[(pad + i) * half + j] = angle.cos() as f32;
            sin[(pad + i) * half + j] = angle.sin() as f32;
        }
    }
    // Row r sees the filled cache slots and the new tokens up to itself; a
    // padding row sees only itself (its output is never used).
    let width = ctx + seq;
    let mut mask = vec![MASKED; seq * width];
    for r in 0..seq {
        let row = &mut mask[r * width..][..width];
        if r < pad {
            row[ctx + r] = 0.0;
        } else {
            row[..pos].fill(0.0);
            row[ctx + pad..=ctx + r].fill(0.0);
        }
    }
    let t = |v: Vec<f32>, dims: &[usize]| HostTensor::from_vec(v, dims);
    let named = [
        ("x", t(x, &[seq, dim])?),
        ("cos", t(cos, &[seq, half])?),
        ("sin", t(sin, &[seq, half])?),
        ("mask", t(mask, &[seq, width])?),
    ];
    let inputs: Vec<(&str, &HostTensor)> = named.iter().map(|(n, v)| (*n, v)).collect();
    step.sync(cache, cfg.n_layers)?;
    let outs = step.graph.try_run_typed(&inputs)?;
    for l in 0..cfg.n_layers {
        cache.write(l, &outs[1 + 2 * l], &outs[2 + 2 * l], pad, tokens.len());
    }
    cache.advance(tokens.len());
    step.sync(cache, cfg.n_layers)?;
    Ok(outs[0].to_vec::<f32>()?)
}

/// Builds, compiles and loads a `seq`-token step graph with zeroed cache
/// params; its weights are `share`'s when given (compiled from the same
/// weights), else uploaded.
fn compile(
    cfg: &LlamaConfig,
    w: &LlamaWeights,
    seq: usize,
    ctx: usize,
    rows: LogitRows,
    kv: KvCacheDtype,
    share: Option<&CompiledGraph>,
) -> Result<Step> {
    let step = build_step_graph(cfg, w, seq, ctx, rows, kv);
    // Nothing hoisted into a param prelude: the cache params change every
    // step, and a hoisted cast of an f16 cache would rerun over the whole
    // cache each time (the CPU backend folds that cast into the attention
    // products instead, which read the f16 cache in place).
    let opts = CompileOptions {
        hoist_params: false,
        ..CompileOptions::default()
    };
    let mut graph = Session::new(Device::Cpu).try_compile_with(step.graph, &opts)?;
    for (name, value) in step.params {
        match share {
            Some(other) => graph.share_param_from(&name, other, &name)?,
            None => graph.set_param_typed(&name, value)?,
        }
    }
    if ctx > 0 {
        let zeros = HostTensor::zeros(kv.dtype(), &[cfg.n_kv_heads, ctx, cfg.head_dim]);
        for l in 0..cfg.n_layers {
            for kind in ["k", "v"] {
                graph.set_param_typed(&cache_param(kind, l), &zeros)?;
            }
        }
    }
    Ok(Step {
        seq,
        ctx,
        graph,
        synced: (0, 0),
    })
}

#[cfg(test)]
mod tests {
    use super::run_length;

    /// The runs `run_length` cuts `len` tokens into after `filled` rows.
    fn runs(
        mut len: usize,
        mut filled: usize,
        chunk: usize,
        pieces: &[usize],
        ctx: usize,
    ) -> Vec<usize> {
        let mut out = Vec::new();
        while len > 0 {
            let n = run_length(len, filled, chunk, pieces, ctx);
            out.push(n);
            (len, filled) = (len - n, filled + n);
        }
        out
    }

    /// Schedules worked out by hand: a prompt that fits the pieces' cache
    /// runs its chunks first, then the largest pieces, the rest padded
    /// into the smallest; a longer one its remainder first (below the
    /// smallest piece padded into it, then the largest pieces); one padded
    /// chunk where pieces would not save rows or not fit.
    #[test]
    fn prompts_cut_into_chunks_and_pieces() {
        let p = [32, 8];
        assert_eq!(runs(136, 0, 128, &p, 256), [128, 8]);
        assert_eq!(runs(43, 0, 128, &p, 256), [32, 8, 3]);
        assert_eq!(runs(100, 0, 128, &p, 256), [32, 32, 32, 4]);
        assert_eq!(runs(130, 0, 128, &p, 256), [128, 2]);
        assert_eq!(runs(256, 0, 128, &p, 256), [128, 128]);
        assert_eq!(runs(300, 0, 128, &p, 256), [4, 32, 8, 128, 128]);
        assert_eq!(runs(1, 0, 128, &p, 256), [1]);
        // 121..=127 tokens pad to 128 rows either way: one chunk.
        assert_eq!(runs(125, 0, 128, &p, 256), [125]);
        // After 100 filled rows the pieces' 128-slot cache is too small.
        assert_eq!(runs(40, 100, 128, &p, 128), [40]);
        // Whole-row logits take no pieces; chunks of 16 with quarters of 4.
        assert_eq!(runs(40, 0, 128, &[], 0), [40]);
        assert_eq!(runs(37, 0, 16, &[4], 64), [16, 16, 4, 1]);
        assert_eq!(runs(70, 0, 16, &[4], 64), [2, 4, 16, 16, 16, 16]);
    }
}
