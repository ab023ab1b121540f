#!/usr/bin/env python3
"""SmolLM2-135M-Instruct in Q8_0 and Q4_K_M, made from the Q4_1 file by llama.cpp's own quantizer.

Run (from the repository root, after tools/fetch_models.sh):
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ~/.cache/rlx-ref/venv/bin/python \
        tools/quantize_smollm2.py [--source PATH] [--out-dir DIR] [--threads 2]
  env: ~/.cache/rlx-ref/venv with llama-cpp-python 0.3.36 (CPU build).
  --source defaults to $RLX_MODELS/gguf/SmolLM2-135M-Instruct.Q4_1.gguf and --out-dir to
  $RLX_MODELS/gguf (RLX_MODELS defaults to ~/.cache/rlx-models). The files are not committed.

Writes SmolLM2-135M-Instruct.Q8_0.gguf and SmolLM2-135M-Instruct.Q4_K_M.gguf through
llama_cpp.llama_model_quantize with allow_requantize (the Q4_1 weights are dequantized and
quantized again, as `llama-quantize --allow-requantize` does; no imatrix). The result is
deterministic for a given llama.cpp build, so tests/fixtures made from these files
(tools/gen_llamacpp_refs.py --model ...) stay valid when the files are made again.
Prints each file's tensor types (gguf-py) so the mix can be checked (Q4_K_M keeps some
tensors in Q6_K / Q5_0 / Q8_0, as llama.cpp chooses).
"""
import argparse
import collections
import os

import llama_cpp
from gguf import GGUFReader

TARGETS = {
    "Q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0,
    "Q4_K_M": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M,
}


def models_dir():
    return os.path.join(os.environ.get("RLX_MODELS", os.path.expanduser("~/.cache/rlx-models")), "gguf")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default=os.path.join(models_dir(), "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--out-dir", default=models_dir())
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    for name, ftype in TARGETS.items():
        out = os.path.join(a.out_dir, f"SmolLM2-135M-Instruct.{name}.gguf")
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = ftype
        params.allow_requantize = True
        params.nthread = a.threads
        rc = llama_cpp.llama_model_quantize(a.source.encode(), out.encode(), params)
        if rc != 0:
            raise SystemExit(f"llama_model_quantize({name}) failed with {rc}")
        types = collections.Counter(t.tensor_type.name for t in GGUFReader(out).tensors)
        print(f"wrote {out} ({os.path.getsize(out) / 1e6:.1f} MB): tensor types {dict(types)}")


if __name__ == "__main__":
    main()
