#!/usr/bin/env python3
"""Check that gguf-py reads a file written by rlx-gguf with the metadata and tensors we meant.

Setup: a venv with numpy + gguf==0.19.0 (~/.cache/rlx-ref/venv, or see tools/gen_gguf_fixtures.py).
Run (from the repository root):
    cargo run -p rlx-gguf --example write_fixture        # (re)writes the committed fixture
    ~/.cache/rlx-ref/venv/bin/python tools/check_gguf_roundtrip.py \
        [crates/rlx-gguf/tests/fixtures/rust_written.gguf]

On success it records what it checked next to the file, in <file>.gguf_py_check.txt (size and
FNV-1a 64 of the file, key and tensor counts, the types whose bytes / dequantization matched);
crates/rlx-gguf/tests/writer.rs asserts that record describes the committed file.

The expected content mirrors crates/rlx-gguf/tests/common/rust_fixture.rs. Checks:
  - every metadata key, its GGUF value type (incl. nested array element types) and value;
  - alignment 128 and every tensor's type, shape (ne order) and data;
  - plain tensors equal the source values (cast with numpy: f16, bf16 by bit pattern, f64, ints);
  - q.<T>: where gguf-py can quantize T, its bytes equal gguf.quants.quantize(source);
    where gguf-py can dequantize T, gguf.quants.dequantize(q.<T>) equals our dq.<T> bit for bit.
Exits non-zero on the first mismatch.
"""
import math
import sys

import numpy as np
from gguf import GGUFReader, GGMLQuantizationType as Q, GGUFValueType as V
from gguf.quants import quantize, dequantize

PATH = sys.argv[1] if len(sys.argv) > 1 else "crates/rlx-gguf/tests/fixtures/rust_written.gguf"


def source(n):
    i = np.arange(n)
    return (((i * 37) % 101).astype(np.float32) / 16.0 - np.float32(50.0 / 16.0)).astype(np.float32)


EXPECTED_KV = {
    "general.architecture": ([V.STRING], "rlx-test"),
    "general.alignment": ([V.UINT32], 128),
    "r.u8": ([V.UINT8], 250), "r.i8": ([V.INT8], -7), "r.u16": ([V.UINT16], 65535),
    "r.i16": ([V.INT16], -1234), "r.u32": ([V.UINT32], 123456789), "r.i32": ([V.INT32], -123456789),
    "r.f32": ([V.FLOAT32], -0.375), "r.bool": ([V.BOOL], True),
    "r.string": ([V.STRING], "RLX \u2192 gguf \U0001f980"),
    "r.u64": ([V.UINT64], 1 << 60), "r.i64": ([V.INT64], -(1 << 60)), "r.f64": ([V.FLOAT64], math.pi),
    "r.arr.u8": ([V.ARRAY, V.UINT8], [1, 2]), "r.arr.i16": ([V.ARRAY, V.INT16], [-3, 4]),
    "r.arr.u32": ([V.ARRAY, V.UINT32], []), "r.arr.i64": ([V.ARRAY, V.INT64], [2**63 - 1]),
    "r.arr.f32": ([V.ARRAY, V.FLOAT32], [0.25, -8.0]), "r.arr.f64": ([V.ARRAY, V.FLOAT64], [1e-10]),
    "r.arr.bool": ([V.ARRAY, V.BOOL], [False, True]),
    "r.arr.str": ([V.ARRAY, V.STRING], ["<s>", "", "\u00e9"]),
}
# gguf-py's ReaderField keeps only the first inner element type of a nested array and its
# contents() does not descend into nested arrays, so r.nested is checked from the raw parts.
NESTED_KEY = "r.nested"
QUANTIZED = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K",
             "TQ1_0", "TQ2_0", "MXFP4", "Q1_0"]


def fail(msg):
    print("MISMATCH:", msg)
    sys.exit(1)


def check_nested(field):
    # parts: key length, key, value type (ARRAY), elem type (ARRAY), count, then for each inner
    # array: elem type, count, items (a string is two parts: length, bytes).
    parts = [np.asarray(p) for p in field.parts]
    flat = parts[3:]
    def take():
        nonlocal flat
        p = flat[0]
        flat = flat[1:]
        return p
    assert int(take()[0]) == V.ARRAY, "outer elem type"
    n = int(take()[0])
    got = []
    for _ in range(n):
        got.append(read_array(take))
    want = [("STRING", ["a", "b"]), ("INT32", [-1]), ("ARRAY", [("FLOAT64", [2.5])])]
    if got != want:
        fail(f"{NESTED_KEY}: {got} != {want}")


def read_array(take):
    t = V(int(take()[0]))
    n = int(take()[0])
    items = []
    for _ in range(n):
        if t == V.STRING:
            take()  # length
            items.append(bytes(take()).decode())
        elif t == V.ARRAY:
            items.append(read_array(take))
        else:
            items.append(take()[0].item())
    return (t.name, items)


def main():
    r = GGUFReader(PATH)
    fields = {k: f for k, f in r.fields.items() if not k.startswith("GGUF.")}
    want_keys = list(EXPECTED_KV) + [NESTED_KEY]
    if list(fields) != want_keys:
        fail(f"keys {list(fields)} != {want_keys}")
    for k, (types, value) in EXPECTED_KV.items():
        f = fields[k]
        if value == [] and types[0] == V.ARRAY:
            # gguf-py takes element types from the first element; read an empty array's from its parts
            if f.types != [V.ARRAY] or int(f.parts[3][0]) != types[1] or int(f.parts[4][0]) != 0:
                fail(f"{k}: empty array of {types[1].name} read as {f.types}, {f.parts[3:5]}")
            continue
        if f.types != types:
            fail(f"{k}: types {f.types} != {types}")
        got = f.contents()
        if isinstance(value, float):
            ok = np.float32(got) == np.float32(value) if types[-1] == V.FLOAT32 else got == value
        else:
            ok = got == value
        if not ok:
            fail(f"{k}: {got!r} != {value!r}")
    check_nested(fields[NESTED_KEY])
    if r.alignment != 128:
        fail(f"alignment {r.alignment}")

    tensors = {t.name: t for t in r.tensors}
    x = source(256)
    plain = {
        "plain.f32": (Q.F32, [64, 4], x),
        "plain.f16": (Q.F16, [64, 4], x.astype(np.float16)),
        "plain.bf16": (Q.BF16, [64, 2, 2], (x.view(np.uint32) >> 16).astype(np.uint16)),
        "plain.f64": (Q.F64, [3, 2], x[:6].astype(np.float64)),
        "plain.i8": (Q.I8, [10], ((np.arange(10) * 29) % 256 - 128).astype(np.int8)),
        "plain.i16": (Q.I16, [2, 3], (np.arange(6) * 9001 - 20000).astype(np.int16)),
        "plain.i32": (Q.I32, [5], np.array([-2**31, -1, 0, 1, 2**31 - 1], dtype=np.int32)),
        "plain.i64": (Q.I64, [3, 1], np.array([-2**63, 42, 2**63 - 1], dtype=np.int64)),
    }
    for name, (qt, ne, want) in plain.items():
        t = tensors[name]
        if t.tensor_type != qt or [int(d) for d in t.shape] != ne:
            fail(f"{name}: {t.tensor_type.name} {list(t.shape)} != {qt.name} {ne}")
        got = np.asarray(t.data).reshape(-1)
        if qt == Q.BF16:
            got = got.view(np.uint16)
        if got.tobytes() != np.ascontiguousarray(want).reshape(-1).tobytes():
            fail(f"{name}: data differs")
    xq = source(512).reshape(2, 256)
    quant_equal, dequant_equal = [], []
    for name in QUANTIZED:
        qt = Q[name]
        t = tensors[f"q.{name}"]
        if t.tensor_type != qt or [int(d) for d in t.shape] != [256, 2]:
            fail(f"q.{name}: {t.tensor_type.name} {list(t.shape)}")
        raw = np.asarray(t.data)
        ours_dq = np.asarray(tensors[f"dq.{name}"].data).reshape(2, 256)
        try:
            ref_q = quantize(xq, qt)
        except NotImplementedError:
            ref_q = None
        if ref_q is not None:
            if ref_q.tobytes() != raw.tobytes():
                fail(f"q.{name}: our bytes differ from gguf.quants.quantize")
            quant_equal.append(name)
        try:
            ref_dq = dequantize(raw, qt).astype(np.float32).reshape(2, 256)
        except NotImplementedError:
            ref_dq = None
        if ref_dq is not None:
            if ref_dq.view(np.uint32).tobytes() != ours_dq.view(np.uint32).tobytes():
                fail(f"dq.{name}: gguf-py dequantizes our q.{name} differently")
            dequant_equal.append(name)
    if len(tensors) != len(plain) + 2 * len(QUANTIZED):
        fail(f"{len(tensors)} tensors")
    print(f"OK: {PATH}: {len(fields)} keys, {len(tensors)} tensors; quantized bytes equal gguf-py for "
          f"{len(quant_equal)} types, gguf-py dequantizes our blocks bit-identically for "
          f"{len(dequant_equal)} types")
    write_record(len(fields), len(tensors), quant_equal, dequant_equal)


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def write_record(n_keys, n_tensors, quant_equal, dequant_equal):
    data = open(PATH, "rb").read()
    lines = [f"bytes={len(data)}", f"fnv1a64={fnv1a64(data):016x}", f"keys={n_keys}",
             f"tensors={n_tensors}", f"quantized_equal={','.join(quant_equal)}",
             f"dequantized_equal={','.join(dequant_equal)}"]
    with open(PATH[:-len(".gguf")] + ".gguf_py_check.txt", "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
