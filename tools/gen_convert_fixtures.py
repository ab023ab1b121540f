#!/usr/bin/env python3
"""Write the test fixtures of crates/rlx-gguf-convert from numpy, gguf-py and onnx.

Env: ~/.cache/rlx-ref/venv (numpy, gguf==0.19.0 (gguf-py), onnx; made by /work/shared/ref/setup.sh).
Run (from the repository root; needs cargo for the second half):
    ~/.cache/rlx-ref/venv/bin/python tools/gen_convert_fixtures.py

Writes into crates/rlx-gguf-convert/tests/fixtures/:
  source.safetensors  small model-like tensors (F32, F16, BF16, I64; 1-D and 2-D; rows of 256, 64
                      and 40 values; an all-zero tensor) with __metadata__, packed by hand from the
                      format spec (8-byte header length, JSON header, data).
  source.onnx         a tiny MatMul + Add model whose initializers are W [64, 8] f32, B [8] f32,
                      a [2] int64 shape and a [3, 32] f16 table, with metadata_props.
  cases.json          per conversion case (default type, NAME=TYPE overrides, predicate), the
                      expected per-tensor type (the rules spelled out again here: exact name,
                      first glob, predicate, 1-D -> F32, default; F16 when a row does not fill whole
                      blocks), bytes before / after from gguf-py's GGML_QUANT_SIZES, and, where
                      gguf-py can quantize the type, the cosine (float64 numpy) between the source
                      and gguf.quants.dequantize(gguf.quants.quantize(source)).
  gguf_py_<case>.bin  gguf-py's quantization of every tensor of that case whose type gguf-py
                      implements, concatenated (offsets in cases.json): the Rust bytes must be equal.
  rust_<case>.gguf    (second half) the file our CLI example writes for each case that has no
                      predicate: `cargo run -p rlx-gguf-convert --example convert -- ...`.
  gguf_py_readback.json  gguf-py's GGUFReader view of each rust_<case>.gguf: every metadata key
                      with its value type(s) and value, every tensor's type, ne, byte count, data
                      offset, and (float64) sum, sum of squares, dot with the source, max |error|
                      and cosine of gguf.quants.dequantize(our bytes); plus whether our bytes equal
                      gguf.quants.quantize(source) for types gguf-py implements. The Rust test
                      converts again, asserts the file is byte-identical to rust_<case>.gguf, and
                      checks our reader and report against this readback.
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from gguf import GGUFReader, GGMLQuantizationType as Q, GGUFValueType as V
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import quantize, dequantize

OUT = "crates/rlx-gguf-convert/tests/fixtures"
GGUF_PY_QUANTIZES = {"F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0",
                     "MXFP4"}
INT_TYPES = {"I8", "I16", "I32", "I64"}


def bf16_bits(x):
    """bf16 by round-to-nearest-even of the f32 bit pattern (values here are finite)."""
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def make_tensors():
    rng = np.random.default_rng(20261203)
    t = {}
    t["token_embd.weight"] = ("F32", rng.normal(0, 1, (16, 256)).astype(np.float32))
    q = rng.normal(0, 0.05, (32, 256)).astype(np.float32)
    q[3, 17] = 0.9  # an outlier in one block
    t["blk.0.attn_q.weight"] = ("F32", q)
    t["blk.0.attn_q.bias"] = ("F32", rng.normal(0, 0.1, (32,)).astype(np.float32))
    t["blk.0.attn_k.weight"] = ("F16", rng.normal(0, 0.5, (8, 256)).astype(np.float16))
    v = rng.uniform(-2, 2, (4, 256)).astype(np.float32)
    t["blk.0.attn_v.weight"] = ("BF16", bf16_bits(v))
    t["blk.0.attn_norm.weight"] = ("F32", (1 + rng.normal(0, 0.1, (256,))).astype(np.float32))
    i = np.arange(24 * 64, dtype=np.float32).reshape(24, 64)
    t["blk.0.ffn_up.weight"] = ("F32", (0.1 + 2 * np.cos(i)).astype(np.float32))
    t["blk.0.ffn_down.weight"] = ("F32", rng.normal(0, 1, (8, 40)).astype(np.float32))
    t["zeros.weight"] = ("F32", np.zeros((2, 32), np.float32))
    t["position_ids"] = ("I64", np.arange(8, dtype=np.int64).reshape(1, 8))
    return t


def as_f32(dtype, a):
    if dtype == "BF16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32)


def write_safetensors(path, tensors, metadata):
    header, blobs, off = {"__metadata__": metadata}, [], 0
    for name, (dtype, a) in tensors.items():
        raw = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def write_onnx(path):
    rng = np.random.default_rng(7)
    w = rng.normal(0, 1, (64, 8)).astype(np.float32)
    b = rng.normal(0, 1, (8,)).astype(np.float32)
    shape = np.array([1, 8], np.int64)
    table = rng.normal(0, 1, (3, 32)).astype(np.float16)
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B"),
             numpy_helper.from_array(shape, "shape"), numpy_helper.from_array(table, "table")]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "B"], ["y0"]),
             helper.make_node("Reshape", ["y0", "shape"], ["y"])]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="rlx-fixture")
    helper.set_model_props(m, {"author": "rlx", "purpose": "gguf-convert test"})
    onnx.checker.check_model(m)
    onnx.save(m, path)
    return {"W": ("F32", w), "B": ("F32", b), "shape": ("I64", shape), "table": ("F16", table)}


def glob_match(pat, name):
    import fnmatch
    return fnmatch.fnmatchcase(name, pat.replace("[", "[[]"))


def expected_type(case, name, dtype, shape):
    """The documented rules, spelled out independently of the Rust code."""
    if dtype in INT_TYPES:
        return dtype, dtype, "integer", False
    req, why = None, None
    for spec in case["overrides"]:
        n, t = spec.rsplit("=", 1)
        if "*" not in n and "?" not in n and n == name:
            req, why = t.upper(), "exact"
    if req is None:
        for spec in case["overrides"]:
            n, t = spec.rsplit("=", 1)
            if ("*" in n or "?" in n) and glob_match(n, name):
                req, why = t.upper(), "pattern"
                break
    if req is None and case.get("predicate") == "attn_rows_ge_32_q6_k":
        if "attn" in name and len(shape) >= 2 and shape[0] >= 32:
            req, why = "Q6_K", "predicate"
    if req is None and len(shape) < 2:
        req, why = "F32", "1d"
    if req is None:
        req, why = case["default"], "default"
    block = GGML_QUANT_SIZES[Q[req]][0]
    row = shape[-1] if shape else 1
    if row % block:
        return req, "F16", why, True
    return req, req, why, False


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    na, nb = np.dot(a, a), np.dot(b, b)
    if na == 0 and nb == 0:
        return 1.0
    if na == 0 or nb == 0:
        return 0.0
    return float(np.dot(a, b) / (np.sqrt(na) * np.sqrt(nb)))


def build_case(case, tensors):
    rows, blob = [], bytearray()
    for name, (dtype, a) in tensors.items():
        shape = list(a.shape)
        req, ty, why, fell_back = expected_type(case, name, dtype, shape)
        n = int(np.prod(shape)) if shape else 1
        before = a.nbytes
        row = {"name": name, "shape": shape, "source_dtype": dtype, "requested": req, "type": ty,
               "choice": why, "fell_back": fell_back, "bytes_before": before}
        if ty in INT_TYPES:
            row.update(bytes_after=before, cosine=1.0, gguf_py_offset=None)
        else:
            bs, ts = GGML_QUANT_SIZES[Q[ty]]
            row["bytes_after"] = n // bs * ts
            src = as_f32(dtype, a)
            if ty in GGUF_PY_QUANTIZES:
                qb = quantize(src, Q[ty])
                raw = np.ascontiguousarray(qb).view(np.uint8).tobytes()
                assert len(raw) == row["bytes_after"], (name, ty)
                dq = dequantize(qb, Q[ty]).astype(np.float32)
                row["cosine"] = cosine(src, dq)
                row["gguf_py_offset"] = len(blob)
                blob += raw
            else:
                row.update(cosine=None, gguf_py_offset=None)
        rows.append(row)
    with open(f"{OUT}/gguf_py_{case['name']}.bin", "wb") as f:
        f.write(bytes(blob))
    before = sum(r["bytes_before"] for r in rows)
    after = sum(r["bytes_after"] for r in rows)
    return dict(case, tensors=rows, bytes_before=before, bytes_after=after, ratio=before / after)


def cli_args(case, src, dst):
    args = [src, dst, "--type", case["default"]]
    for o in case["overrides"]:
        args += ["--override", o]
    for k, v in case.get("meta", {}).items():
        args += ["--meta", f"{k}={v}"]
    if "alignment" in case:
        args += ["--alignment", str(case["alignment"])]
    return args


def field_value(f):
    return [V(t).name for t in f.types], f.contents()


def readback(path, tensors):
    r = GGUFReader(path)
    meta = {}
    for k, f in r.fields.items():
        if k.startswith("GGUF."):
            continue
        meta[k] = field_value(f)
    out = []
    for t in r.tensors:
        ty = t.tensor_type.name
        dtype, a = tensors[t.name]
        raw = np.asarray(t.data).view(np.uint8).tobytes()
        row = {"name": t.name, "type": ty, "ne": [int(x) for x in t.shape], "n_bytes": int(t.n_bytes),
               "data_offset": int(t.data_offset)}
        if ty in INT_TYPES:
            row["ints_equal_source"] = bool(np.array_equal(np.asarray(t.data).reshape(a.shape), a))
        else:
            src = as_f32(dtype, a).astype(np.float64).ravel()
            dq = dequantize(np.asarray(t.data), t.tensor_type).astype(np.float64).ravel()
            row.update(sum=float(dq.sum()), sumsq=float(np.dot(dq, dq)), dot_source=float(np.dot(dq, src)),
                       max_abs_err=float(np.max(np.abs(dq - src))), cosine=cosine(src, dq))
            if ty in GGUF_PY_QUANTIZES:
                ours = quantize(as_f32(dtype, a), t.tensor_type)
                row["bytes_equal_gguf_py"] = raw == np.ascontiguousarray(ours).view(np.uint8).tobytes()
        out.append(row)
    return {"alignment": int(r.alignment), "data_offset": int(r.data_offset), "metadata": meta,
            "tensors": out}


CASES = [
    {"name": "q8_0", "default": "Q8_0", "overrides": []},
    {"name": "q4_0_overrides", "default": "Q4_0",
     "overrides": ["blk.0.attn_q.weight=Q8_0", "tok*=F16", "*.ffn_*=Q5_1", "blk.?.attn_norm.weight=BF16"],
     "meta": {"general.name": "rlx-convert-fixture"}},
    {"name": "q4_k", "default": "Q4_K", "overrides": ["*attn_v*=Q6_K", "zeros.weight=Q2_K"],
     "meta": {"general.name": "k-quants"}, "alignment": 64},
    {"name": "q4_k_predicate", "default": "Q4_K", "overrides": ["token_embd.weight=Q8_0"],
     "predicate": "attn_rows_ge_32_q6_k"},
]


def main():
    os.makedirs(OUT, exist_ok=True)
    tensors = make_tensors()
    src = f"{OUT}/source.safetensors"
    write_safetensors(src, tensors, {"format": "pt", "source": "rlx fixture"})
    onnx_tensors = write_onnx(f"{OUT}/source.onnx")
    onnx_case = {"name": "onnx_q8_0", "default": "Q8_0", "overrides": ["table=Q4_0"]}
    cases = [build_case(c, tensors) for c in CASES] + [build_case(onnx_case, onnx_tensors)]
    with open(f"{OUT}/cases.json", "w") as f:
        json.dump({"cases": cases}, f, indent=1)
    print("cases.json:", [c["name"] for c in cases])

    readbacks = {}
    for c in CASES:
        if "predicate" in c:
            continue
        dst = f"{OUT}/rust_{c['name']}.gguf"
        cmd = ["cargo", "run", "-q", "-p", "rlx-gguf-convert", "--example", "convert", "--"]
        subprocess.run(cmd + cli_args(c, src, dst), check=True, stdout=subprocess.DEVNULL)
        readbacks[c["name"]] = readback(dst, tensors)
        bad = [t["name"] for t in readbacks[c["name"]]["tensors"] if t.get("bytes_equal_gguf_py") is False]
        if bad:
            sys.exit(f"{c['name']}: our bytes differ from gguf-py for {bad}")
    with open(f"{OUT}/gguf_py_readback.json", "w") as f:
        json.dump(readbacks, f, indent=1)
    print("gguf_py_readback.json:", list(readbacks))


if __name__ == "__main__":
    main()
