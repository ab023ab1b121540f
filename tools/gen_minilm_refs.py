#!/usr/bin/env python3
"""Reference token ids and sentence embeddings of all-MiniLM-L6-v2 for
crates/rlx-models/tests/minilm_parity.rs.

Run:
    ~/.cache/rlx-ref/venv/bin/python tools/gen_minilm_refs.py \
        [--model-dir $RLX_MODELS/all-MiniLM-L6-v2] \
        [--onnx ~/.cache/rlx-ref/models/onnx/all-MiniLM-L6-v2-fp32.onnx]
Env: ~/.cache/rlx-ref/venv (onnxruntime, tokenizers, numpy), made by shared/ref/setup.sh.

The fp32 ONNX graph is built from the same model.safetensors (no torch):
tools/fetch_models.sh writes $RLX_MODELS/onnx/all-MiniLM-L6-v2-fp32.onnx with
tools/export_minilm_onnx.py (used by default when present); the reference env's copy
~/.cache/rlx-ref/models/onnx/all-MiniLM-L6-v2-fp32.onnx was made by
    ~/.cache/rlx-ref/venv/bin/python shared/ref/export_minilm_onnx.py \
        --model-dir $RLX_MODELS/all-MiniLM-L6-v2 --out ~/.cache/rlx-ref/models/onnx/all-MiniLM-L6-v2-fp32.onnx
(HF BertModel eval math + mean pooling + L2 normalisation in plain opset-17 ops).

Writes crates/rlx-models/tests/fixtures/minilm_refs.json:
  sentences            the inputs (one is long enough to be truncated to 128 tokens)
  ids[i]               the HF `tokenizers` ids of sentence i (tokenizer.json's own
                       truncation at 128; no padding)
  embeddings[i]        ONNX Runtime's sentence_embedding of sentence i run alone
  batch_embeddings[i]  ONNX Runtime's sentence_embedding of sentence i inside one
                       batch padded to the longest (exercises the attention mask)
"""
import argparse
import json
import os

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

HOME = os.path.expanduser("~")
SENTENCES = [
    "The cat sits on the mat.",
    "A kitten is resting on a rug.",
    "Stock markets fell sharply on Monday, dragging the index to a two-year low.",
    "Héllo, WORLD! Tokenizers split naïve café-style words into ##pieces.",
    # Long enough that the tokenizer truncates it to 128 tokens.
    " ".join(["Sentence embeddings map whole paragraphs of text to fixed-size vectors"] * 14),
]


def main():
    ap = argparse.ArgumentParser()
    models = os.environ.get("RLX_MODELS", os.path.join(HOME, ".cache/rlx-models"))
    ap.add_argument("--model-dir", default=os.path.join(models, "all-MiniLM-L6-v2"))
    fetched = os.path.join(models, "onnx/all-MiniLM-L6-v2-fp32.onnx")
    ap.add_argument("--onnx", default=fetched if os.path.isfile(fetched) else
                    os.path.join(HOME, ".cache/rlx-ref/models/onnx/all-MiniLM-L6-v2-fp32.onnx"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "../crates/rlx-models/tests/fixtures/minilm_refs.json"))
    a = ap.parse_args()

    tok = Tokenizer.from_file(os.path.join(a.model_dir, "tokenizer.json"))
    tok.no_padding()
    ids = [tok.encode(s).ids for s in SENTENCES]
    assert max(map(len, ids)) == 128, "the long sentence must be truncated to 128 tokens"
    sess = ort.InferenceSession(a.onnx, providers=["CPUExecutionProvider"])

    def run(rows):
        seq = max(map(len, rows))
        x = np.zeros((len(rows), seq), np.int64)
        m = np.zeros_like(x)
        for r, row in enumerate(rows):
            x[r, :len(row)] = row
            m[r, :len(row)] = 1
        feed = {"input_ids": x, "attention_mask": m, "token_type_ids": np.zeros_like(x)}
        return sess.run(["sentence_embedding"], feed)[0]

    single = [run([r])[0] for r in ids]
    batched = run(ids)
    out = {
        "generator": "tools/gen_minilm_refs.py",
        "onnxruntime": ort.__version__,
        "sentences": SENTENCES,
        "ids": ids,
        "embeddings": [[float(v) for v in e] for e in single],
        "batch_embeddings": [[float(v) for v in e] for e in batched],
    }
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f)
    print(f"wrote {a.out} ({os.path.getsize(a.out)} bytes); lengths {[len(r) for r in ids]}")


if __name__ == "__main__":
    main()
