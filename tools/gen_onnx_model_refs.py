#!/usr/bin/env python3
"""onnxruntime reference outputs of the real ONNX models under $RLX_MODELS/onnx.

    tools/fetch_models.sh   # the models (default RLX_MODELS=~/.cache/rlx-models)
    ~/.cache/rlx-ref/venv/bin/python tools/gen_onnx_model_refs.py [OUT_DIR]

(env: the reference venv of shared/ref/setup.sh: onnx, onnxruntime, numpy.)
OUT_DIR defaults to crates/rlx-onnx/tests/fixtures/models (committed; read by
crates/rlx-onnx/tests/real_models.rs). For each model and each
fixed case (token ids of a [2, 8] padded pair and a [1, 16] sequence) writes
<model>.<case>.json: {inputs: [{name, dtype, dims, file}], outputs: [...]},
with every tensor as raw little-endian bytes in <model>.<case>.<name>.bin.
`tests/real_models.rs` (and `cargo run --release -p rlx-onnx --example model_parity`)
compare RLX to them
(cosine similarity and max abs difference per output).
"""
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

MODELS = os.path.join(os.environ.get("RLX_MODELS", os.path.expanduser("~/.cache/rlx-models")), "onnx")
HERE = os.path.dirname(os.path.abspath(__file__))
CASES = {
    "pair_b2_s8": (
        np.array([[101, 7592, 2088, 999, 102, 0, 0, 0], [101, 2023, 2003, 2019, 2742, 6251, 2075, 102]], np.int64),
        np.array([[1, 1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]], np.int64),
    ),
    "seq_b1_s16": (
        np.concatenate([[101], np.random.RandomState(0).randint(1000, 30000, 14), [102]]).astype(np.int64)[None],
        np.ones((1, 16), np.int64),
    ),
}


def save(out, stem, name, a):
    safe = name.replace("/", "_").replace(":", "_")
    f = f"{stem}.{safe}.bin"
    np.ascontiguousarray(a).tofile(os.path.join(out, f))
    return {"name": name, "dtype": str(a.dtype), "dims": list(a.shape), "file": f}


def main(out):
    os.makedirs(out, exist_ok=True)
    for fname in sorted(os.listdir(MODELS)):
        if not fname.endswith(".onnx"):
            continue
        path = os.path.join(MODELS, fname)
        names = [i.name for i in onnx.load(path, load_external_data=False).graph.input]
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        for case, (ids, mask) in CASES.items():
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            feeds = {k: v for k, v in feeds.items() if k in names}
            outs = sess.run(None, feeds)
            stem = f"{fname[:-5]}.{case}"
            man = {
                "model": fname,
                "inputs": [save(out, stem, k, v) for k, v in feeds.items()],
                "outputs": [save(out, stem, o.name, v) for o, v in zip(sess.get_outputs(), outs)],
            }
            with open(os.path.join(out, stem + ".json"), "w") as f:
                json.dump(man, f, indent=1)
            print("wrote", stem)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "crates", "rlx-onnx", "tests", "fixtures", "models"))
