#!/usr/bin/env python3
"""Reference fixtures for crates/rlx-llama (numpy llama forward + HF `tokenizers`).

Run (from the repository root):
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ~/.cache/rlx-ref/venv/bin/python \
        tools/gen_llama_fixtures.py [--tiny-only] [--model PATH]
  env: ~/.cache/rlx-ref/venv (numpy, gguf, tokenizers; made by shared/ref/setup.sh).
  --model defaults to $RLX_MODELS/gguf/SmolLM2-135M-Instruct.Q4_1.gguf
  (RLX_MODELS defaults to ~/.cache/rlx-models; fetched by tools/fetch_models.sh).

Writes crates/rlx-llama/tests/fixtures/:
  tiny_llama.gguf   a random 2-layer llama (dim 64, 4 query / 2 kv heads, Q8_0 / Q4_1 / F16 /
                    F32 tensors, untied output.weight) with a byte-level BPE vocabulary of ~330 tokens
                    trained here by `tokenizers` (Digits + ByteLevel pre-tokenizer, as SmolLM2).
  tiny_llama.json   prompt ids; float64 reference logits of every prompt position (a) on the
                    dequantized weights ("exact") and (b) with ggml's activation quantization
                    (Q8_0 rows against Q8_0 weights, Q8_1 against Q4_1: "q8"); greedy
                    continuations of both; one sampled continuation (temperature / top-k / top-p,
                    numpy RandomState) on exact logits; tokenizer cases (text -> ids by `tokenizers`).
  smollm2.json      prompt ids of SmolLM2's vocabulary by `tokenizers` (BPE built from the GGUF's
                    tokens / merges) and the greedy continuation (40 tokens) of each prompt in both
                    modes, full recompute per token.

Reference math (float64): x = embd[ids]; per block x += Wo·attn(rope(Wq·n1), rope(Wk·n1), Wv·n1),
n1 = rmsnorm(x)*attn_norm, causal softmax(q k^T/sqrt(hd)), q head h reads kv head h // (nh/nkv);
x += Wdown·(silu(Wgate·n2) * (Wup·n2)); logits = (rmsnorm(x)*output_norm)·embd^T. RoPE rotates
adjacent pairs (x[2i], x[2i+1]) by pos*base^(-2i/hd) (llama.cpp "normal" mode).
"""
import argparse
import json
import os

import numpy as np
from gguf import GGMLQuantizationType as QT, GGUFReader, GGUFWriter
from gguf.quants import dequantize, quantize

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "crates", "rlx-llama", "tests", "fixtures")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


# ---------------------------------------------------------------- tokenizer (HF `tokenizers`)
def hf_tokenizer(tokens, merges, special_ids):
    from tokenizers import Tokenizer, AddedToken, models, pre_tokenizers, decoders
    vocab = {t: i for i, t in enumerate(tokens)}
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    tk = Tokenizer(models.BPE(vocab=vocab, merges=pairs, fuse_unk=False))
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False) for i in special_ids])
    return tk


def train_tiny_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    corpus = [
        "The capital of France is Paris. The capital of Italy is Rome.",
        "Hello world! hello there, how are you today?",
        "In 2024 there were 365 days; in 2023, 365 too.",
        "def add(a, b):\n    return a + b\n",
        "  leading spaces and\ttabs\n\nnew lines   end ",
        "Ünïcödé text: naïve café, 東京 and emoji 🙂.",
    ] * 4
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tr = trainers.BpeTrainer(vocab_size=330, special_tokens=SPECIALS,
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tk.train_from_iterator(corpus, tr)
    model = json.loads(tk.to_str())["model"]
    tokens = [t for t, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1])]
    assert [model["vocab"][t] for t in tokens] == list(range(len(tokens)))
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return tokens, merges


TOKENIZER_CASES = [
    "The capital of France is Paris.",
    "hello  world\n\n  x",
    "In 2024, 365 days",
    "<|im_start|>user\nHi there<|im_end|>\n",
    "naïve café 🙂 東京",
    "don't stop   ",
]


# ---------------------------------------------------------------- llama reference
def rmsnorm(x, g, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def rope(x, base):
    S, H, D = x.shape
    i = np.arange(D // 2, dtype=np.float64)
    th = np.arange(S, dtype=np.float64)[:, None] * base ** (-2.0 * i / D)
    c, s = np.cos(th)[:, None, :], np.sin(th)[:, None, :]
    out = x.copy()
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out


def roundf(v):
    return np.trunc(v + np.copysign(np.float32(0.5), v)).astype(np.float32)


def q8_rows(x, with_sum):
    """ggml's quantize_row_q8_0/q8_1_ref on f32 rows: (d as f16->f64 [R,B], q [R,B,32], s [R,B])."""
    xb = x.astype(np.float32).reshape(x.shape[0], -1, 32)
    amax = np.abs(xb).max(-1)
    d = (amax / np.float32(127)).astype(np.float32)
    inv = np.where(d != 0, np.float32(1) / np.where(d != 0, d, 1), 0).astype(np.float32)
    q = roundf(xb * inv[..., None])
    s = (d * q.sum(-1).astype(np.float32)).astype(np.float16).astype(np.float64) if with_sum else None
    return d.astype(np.float16).astype(np.float64), q.astype(np.float64), s


def block_dots(dw, dx, qw, qx):
    """sum_b dw[n,b] * dx[r,b] * (qw[n,b,:] . qx[r,b,:]): ggml's per-block integer dots."""
    ints = np.matmul(qx.transpose(1, 0, 2), qw.transpose(1, 2, 0))   # [b, r, n], exact in f64
    return np.einsum("brn,nb,rb->rn", ints, dw, dx)


class Mat:
    """One [n, k] matrix: raw bytes + type, dequantized f64 values."""

    def __init__(self, t):
        self.qt = QT(t.tensor_type)
        self.raw = np.asarray(t.data)
        if self.qt in (QT.F32, QT.F16):
            self.w = self.raw.astype(np.float64)
        else:
            self.w = dequantize(self.raw, self.qt).astype(np.float64)
        self.n, self.k = self.w.shape

    def matmul(self, x, act_quant):
        if not act_quant or self.qt in (QT.F32, QT.F16):
            return x @ self.w.T
        raw = self.raw.reshape(self.n, -1)
        if self.qt == QT.Q8_0:
            blk = raw.reshape(self.n, -1, 34)
            dw = blk[..., :2].copy().view(np.float16)[..., 0].astype(np.float64)
            qw = blk[..., 2:].copy().view(np.int8).astype(np.float64)
            dx, qx, _ = q8_rows(x, False)
            return block_dots(dw, dx, qw, qx)
        if self.qt == QT.Q4_1:
            blk = raw.reshape(self.n, -1, 20)
            dw = blk[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float64)
            mw = blk[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float64)
            qs = blk[..., 4:]
            qw = np.concatenate([qs & 0xF, qs >> 4], -1).astype(np.float64)
            dx, qx, sx = q8_rows(x, True)
            return block_dots(dw, dx, qw, qx) + sx @ mw.T
        raise SystemExit(f"no activation-quantized reference for {self.qt.name}")


def load_model(path):
    r = GGUFReader(path)
    kv = {k: f.contents() for k, f in r.fields.items() if not k.startswith("tokenizer.ggml.")}
    T = {t.name: t for t in r.tensors}
    a = kv["general.architecture"]
    cfg = dict(nl=kv[f"{a}.block_count"], nh=kv[f"{a}.attention.head_count"],
               nkv=kv[f"{a}.attention.head_count_kv"], E=kv[f"{a}.embedding_length"],
               eps=kv[f"{a}.attention.layer_norm_rms_epsilon"], base=kv[f"{a}.rope.freq_base"])
    M = {n: Mat(t) for n, t in T.items() if len(t.shape) == 2}
    V = {n: np.asarray(t.data).astype(np.float64) for n, t in T.items() if len(t.shape) == 1}
    return r, cfg, M, V


def forward(cfg, M, V, ids, act_quant):
    nh, nkv, E, eps = cfg["nh"], cfg["nkv"], cfg["E"], cfg["eps"]
    hd = E // nh
    S = len(ids)
    emb = M["token_embd.weight"]
    x = emb.w[np.asarray(ids)]
    causal = np.triu(np.full((S, S), -np.inf), 1)
    mm = lambda name, h: M[name].matmul(h, act_quant)  # noqa: E731
    for L in range(cfg["nl"]):
        p = f"blk.{L}."
        h = rmsnorm(x, V[p + "attn_norm.weight"], eps)
        q = rope(mm(p + "attn_q.weight", h).reshape(S, nh, hd), cfg["base"])
        k = rope(mm(p + "attn_k.weight", h).reshape(S, nkv, hd), cfg["base"])
        v = mm(p + "attn_v.weight", h).reshape(S, nkv, hd)
        k, v = np.repeat(k, nh // nkv, axis=1), np.repeat(v, nh // nkv, axis=1)
        sc = np.einsum("shd,thd->hst", q, k) / np.sqrt(hd) + causal
        sc = np.exp(sc - sc.max(-1, keepdims=True))
        sc /= sc.sum(-1, keepdims=True)
        o = np.einsum("hst,thd->shd", sc, v).reshape(S, E)
        x = x + mm(p + "attn_output.weight", o)
        h = rmsnorm(x, V[p + "ffn_norm.weight"], eps)
        g, u = mm(p + "ffn_gate.weight", h), mm(p + "ffn_up.weight", h)
        x = x + mm(p + "ffn_down.weight", (g / (1.0 + np.exp(-g))) * u)
    x = rmsnorm(x, V["output_norm.weight"], eps)
    out = M["output.weight"] if "output.weight" in M else emb
    return out.matmul(x, act_quant)


def sample(logits, temperature, top_k, top_p, rs):
    """The sampler of crates/rlx-llama/src/sampler.rs."""
    if temperature == 0 or top_k == 1:
        return int(np.argmax(logits))
    sc = logits.astype(np.float64) / temperature
    order = np.argsort(-sc, kind="stable")
    if top_k > 0:
        order = order[:top_k]
    p = np.exp(sc[order] - sc[order[0]])
    p = p / np.cumsum(p)[-1]
    if top_p < 1:
        c = np.cumsum(p)
        hit = np.nonzero(c >= top_p)[0]
        keep = hit[0] + 1 if len(hit) else len(p)
        p = p[:keep]
        p = p / np.cumsum(p)[-1]
    u = rs.random_sample()
    c = np.cumsum(p)
    hit = np.nonzero(u < c)[0]
    return int(order[hit[0] if len(hit) else len(p) - 1])


def continue_ids(cfg, M, V, ids, n, act_quant, pick):
    ids, out, gaps = list(ids), [], []
    for _ in range(n):
        last = forward(cfg, M, V, ids, act_quant)[-1]
        top2 = np.sort(last)[-2:]
        gaps.append(float(top2[1] - top2[0]))
        t = pick(last)
        out.append(t)
        ids.append(t)
    return out, min(gaps)


# ---------------------------------------------------------------- tiny model
def write_tiny(path, tokens, merges):
    rng = np.random.default_rng(1234)
    nl, E, nh, nkv, F = 2, 64, 4, 2, 128
    hd = E // nh
    V_ = len(tokens)
    w = GGUFWriter(path, "llama")
    w.add_block_count(nl)
    w.add_context_length(256)
    w.add_embedding_length(E)
    w.add_feed_forward_length(F)
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_rope_freq_base(10000.0)
    w.add_rope_dimension_count(hd)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(V_)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types([3 if t in SPECIALS else 1 for t in tokens])
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)

    def mat(name, n, k, qt, scale):
        a = (rng.standard_normal((n, k)) * scale).astype(np.float32)
        if qt == QT.F32:
            w.add_tensor(name, a)
        elif qt == QT.F16:
            w.add_tensor(name, a.astype(np.float16))
        else:
            w.add_tensor(name, quantize(a, qt), raw_dtype=qt)

    def vec(name, n):
        w.add_tensor(name, (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float32))

    mat("token_embd.weight", V_, E, QT.Q8_0, 1.0)
    types = [
        dict(q=QT.Q4_1, k=QT.Q8_0, v=QT.F32, o=QT.Q4_1, g=QT.Q4_1, u=QT.Q8_0, d=QT.Q4_1),
        dict(q=QT.Q8_0, k=QT.Q4_1, v=QT.Q4_1, o=QT.F16, g=QT.Q8_0, u=QT.Q4_1, d=QT.Q8_0),
    ]
    for L, ty in enumerate(types):
        p = f"blk.{L}."
        vec(p + "attn_norm.weight", E)
        mat(p + "attn_q.weight", E, E, ty["q"], 1.5 / np.sqrt(E))
        mat(p + "attn_k.weight", nkv * hd, E, ty["k"], 1.5 / np.sqrt(E))
        mat(p + "attn_v.weight", nkv * hd, E, ty["v"], 1.0 / np.sqrt(E))
        mat(p + "attn_output.weight", E, E, ty["o"], 1.0 / np.sqrt(E))
        vec(p + "ffn_norm.weight", E)
        mat(p + "ffn_gate.weight", F, E, ty["g"], 1.0 / np.sqrt(E))
        mat(p + "ffn_up.weight", F, E, ty["u"], 1.0 / np.sqrt(E))
        mat(p + "ffn_down.weight", E, F, ty["d"], 1.0 / np.sqrt(F))
    vec("output_norm.weight", E)
    # An untied head: with tied embeddings a random model only repeats its last token.
    mat("output.weight", V_, E, QT.Q8_0, 1.0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tiny():
    tokens, merges = train_tiny_tokenizer()
    path = os.path.join(FIX, "tiny_llama.gguf")
    write_tiny(path, tokens, merges)
    r, cfg, M, V = load_model(path)
    tk = hf_tokenizer(tokens, merges, [tokens.index(s) for s in SPECIALS])
    cases = [{"text": t, "ids": tk.encode(t).ids} for t in TOKENIZER_CASES]
    prompt = tk.encode("The capital of France is").ids
    out = {"prompt": prompt, "tokenizer_cases": cases}
    for mode, aq in (("exact", False), ("q8", True)):
        logits = forward(cfg, M, V, prompt, aq)
        greedy, gap = continue_ids(cfg, M, V, prompt, 20, aq, lambda l: int(np.argmax(l)))
        out[mode] = {"logits": logits.astype(np.float32).round(7).tolist(), "greedy": greedy,
                     "min_top2_gap": gap}
    rs = np.random.RandomState(42)
    samp = dict(temperature=0.8, top_k=40, top_p=0.9, seed=42)
    sampled, _ = continue_ids(cfg, M, V, prompt, 20, False,
                              lambda l: sample(l, samp["temperature"], samp["top_k"], samp["top_p"], rs))
    out["sampled"] = dict(samp, tokens=sampled)
    with open(os.path.join(FIX, "tiny_llama.json"), "w") as f:
        json.dump(out, f)
    print("tiny:", os.path.getsize(path), "bytes;", {m: out[m]["min_top2_gap"] for m in ("exact", "q8")})


# ---------------------------------------------------------------- SmolLM2
PROMPTS = [
    "The capital of France is",
    "<|im_start|>user\nWhat is 12 + 30?<|im_end|>\n<|im_start|>assistant\n",
    "def fibonacci(n):",
]


def smollm2(path, n_new):
    r, cfg, M, V = load_model(path)
    tokens = list(r.fields["tokenizer.ggml.tokens"].contents())
    merges = list(r.fields["tokenizer.ggml.merges"].contents())
    types = list(r.fields["tokenizer.ggml.token_type"].contents())
    tk = hf_tokenizer(tokens, merges, [i for i, t in enumerate(types) if t in (3, 4)])
    out = {"gguf": os.path.basename(path), "n_new": n_new, "prompts": []}
    for text in PROMPTS:
        ids = tk.encode(text).ids
        entry = {"text": text, "ids": ids}
        for mode, aq in (("exact", False), ("q8", True)):
            greedy, gap = continue_ids(cfg, M, V, ids, n_new, aq, lambda l: int(np.argmax(l)))
            entry[mode] = {"greedy": greedy, "min_top2_gap": gap, "text": tk.decode(greedy)}
            print(mode, repr(text), "->", repr(entry[mode]["text"]), "gap", gap, flush=True)
        out["prompts"].append(entry)
    with open(os.path.join(FIX, "smollm2.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    models = os.environ.get("RLX_MODELS", os.path.expanduser("~/.cache/rlx-models"))
    ap.add_argument("--model", default=os.path.join(models, "gguf", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--tiny-only", action="store_true")
    ap.add_argument("--n-new", type=int, default=40)
    a = ap.parse_args()
    os.makedirs(FIX, exist_ok=True)
    tiny()
    if not a.tiny_only:
        smollm2(a.model, a.n_new)
