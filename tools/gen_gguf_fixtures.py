#!/usr/bin/env python3
"""Write the GGUF test fixtures of crates/rlx-gguf from the reference implementations.

Setup (once; outside every git repo):
    python3 -m venv ~/.cache/rlx-ref/gguf
    ~/.cache/rlx-ref/gguf/bin/pip install numpy gguf==0.19.0
    # only for --with-ggml (ggml's C reference quantizers):
    ~/.cache/rlx-ref/gguf/bin/pip install cmake scikit-build-core

Run (from the repository root):
    ~/.cache/rlx-ref/gguf/bin/python tools/gen_gguf_fixtures.py [--with-ggml]

Writes into crates/rlx-gguf/tests/fixtures/ (all small; < 1 MB in total):
  codecs.gguf      written by gguf-py. `input` (F32 [4, 256]: normal, uniform+outliers, special
                   blocks, llama.cpp's 0.1 + 2cos(i)); for every type gguf-py can quantize,
                   `q.<T>` = gguf.quants.quantize(input) and `dq.<T>` = gguf.quants.dequantize(q.<T>);
                   for every type gguf-py can dequantize, `rand.<T>` = random blocks (with sane
                   f16 scales) and `rand_dq.<T>` = their gguf-py dequantization.
  metadata.gguf    written by gguf-py: a key of every value type, arrays of every scalar type,
                   arrays of strings, nested arrays (3 levels, mixed inner types),
                   general.alignment = 64, and tensors of every plain type (F32, F16, BF16, F64,
                   I8, I16, I32, I64; 1-D to 4-D; one empty). The Rust test spells out the same
                   values (keep the two in step).
  split-0000{1,2,3}-of-00003.gguf  gguf-py's GGUFWriter(split_max_tensors=2) with 5 tensors.
  v1.gguf          GGUF v1 (u32 counts/lengths/dims), packed by hand with struct: gguf-py
                   cannot write v1 (nor read it).
  v2.gguf          metadata.gguf with its version field set to 2 (v2 and v3 share the layout).
  be.gguf          a big-endian file (gguf-py endianess=BIG): the reader must refuse it clearly.
  ggml_ref.gguf    (--with-ggml) ggml's own C reference, compiled from the ggml sources that the
                   llama-cpp-python sdist vendors (pip download, no build): `cq.<T>` =
                   quantize_row_<t>_ref(input) for every type with a reference quantizer, and
                   `cdq.<T>` = dequantize_row_<t>(cq.<T>) where ggml has it. gguf-py implements no
                   K-quant quantizer, so this is what pins ours byte for byte.
rust_written.gguf (produced by `cargo run -p rlx-gguf --example write_fixture`) is checked the
other way round by tools/check_gguf_roundtrip.py.
"""
import argparse
import ctypes
import os
import struct
import subprocess
import sys
import tarfile

import numpy as np
import gguf
from gguf import GGUFWriter, GGMLQuantizationType as Q, GGUFValueType as V
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import quantize, dequantize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "rlx-gguf", "tests", "fixtures")
LLAMA_CPP_PY = "llama-cpp-python==0.3.36"
SEED = 20240601


def make_input() -> np.ndarray:
    rng = np.random.default_rng(SEED)
    rows = np.zeros((4, 256), dtype=np.float32)
    rows[0] = rng.standard_normal(256)
    r1 = rng.uniform(-10, 10, 256)
    r1[[3, 77, 140, 200]] = [55.0, -61.0, 49.5, -48.25]
    rows[1] = r1
    special = [
        np.zeros(32),                                  # all-zero block
        np.full(32, 0.75),                             # constant block
        -np.abs(rng.standard_normal(32)) - 0.5,        # all negative
        rng.standard_normal(32) * 1e-6,                # tiny
        np.tile(np.arange(16) - 8.0, 2) * 0.25,        # exact grid values (rounding ties)
        rng.standard_normal(32) * 1000.0,              # large
        np.tile([1.0, -1.0], 16),                      # alternating, equal |max| both signs
        np.linspace(-3.0, 5.0, 32),                    # ramp
    ]
    rows[2] = np.concatenate(special)
    rows[3] = 0.1 + 2.0 * np.cos(np.arange(256, dtype=np.float32))
    return rows.astype(np.float32)


# Byte offsets of the f16 scale fields inside one block, per type.
F16_FIELDS = {
    Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0],
    Q.Q2_K: [80, 82], Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208],
    Q.IQ2_XXS: [0], Q.IQ2_XS: [0], Q.IQ2_S: [0], Q.IQ3_XXS: [0], Q.IQ3_S: [0], Q.IQ1_S: [0],
    Q.IQ4_NL: [0], Q.IQ4_XS: [0], Q.TQ1_0: [52], Q.TQ2_0: [64],
}


def random_blocks(qt: Q, n_elems: int, rng) -> np.ndarray:
    bs, ts = GGML_QUANT_SIZES[qt]
    nb = n_elems // bs
    blocks = rng.integers(0, 256, size=(nb, ts), dtype=np.uint8)
    def sane_f16(k):
        v = (rng.uniform(0.01, 1.0, k) * rng.choice([-1.0, 1.0], k)).astype(np.float16)
        return v.view(np.uint8).reshape(k, 2)
    for off in F16_FIELDS.get(qt, []):
        blocks[:, off:off + 2] = sane_f16(nb)
    if qt == Q.MXFP4:
        blocks[:, 0] = rng.integers(110, 140, nb)
    if qt == Q.IQ1_M:
        h = sane_f16(nb).view(np.uint16).reshape(nb)
        for k in range(4):
            nib = ((h >> (4 * k)) & 0xF).astype(np.uint8)
            blocks[:, 48 + 2 * k + 1] = (blocks[:, 48 + 2 * k + 1] & 0x0F) | (nib << 4)
    return blocks.reshape(4, -1)


def write_codecs(inp: np.ndarray):
    rng = np.random.default_rng(SEED + 1)
    w = GGUFWriter(os.path.join(OUT, "codecs.gguf"), "codec-fixture")
    w.add_tensor("input", inp)
    quantizable, dequantizable = [], []
    for qt in Q:
        if qt in (Q.F32, Q.I8, Q.I16, Q.I32, Q.I64, Q.F64, Q.Q8_1):
            continue  # plain types are covered by metadata.gguf; gguf-py's Q8_1 size is stale
        try:
            q = quantize(inp, qt)
        except (NotImplementedError, gguf.quants.QuantError):
            q = None
        if q is not None:
            dq = dequantize(q, qt).astype(np.float32)
            if qt == Q.F16:
                w.add_tensor("q.F16", q)
            else:
                w.add_tensor(f"q.{qt.name}", q, raw_dtype=qt)
            w.add_tensor(f"dq.{qt.name}", dq)
            quantizable.append(qt.name)
        if qt in (Q.F16, Q.BF16):
            continue
        raw = random_blocks(qt, inp.size, rng)
        try:
            rdq = dequantize(raw, qt).astype(np.float32)
        except NotImplementedError:
            continue
        w.add_tensor(f"rand.{qt.name}", raw, raw_dtype=qt)
        w.add_tensor(f"rand_dq.{qt.name}", rdq)
        dequantizable.append(qt.name)
    w.add_array("fixture.quantized_by_gguf_py", quantizable)
    w.add_array("fixture.dequantized_by_gguf_py", dequantizable)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("codecs.gguf: quantize", quantizable)
    print("codecs.gguf: dequantize", dequantizable)


def bf16_bytes(x: np.ndarray) -> np.ndarray:
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)


def metadata_writer(path, **kw) -> GGUFWriter:
    w = GGUFWriter(path, "test", **kw)
    w.add_custom_alignment(64)
    kv = [
        ("t.u8", 200, V.UINT8), ("t.i8", -100, V.INT8), ("t.u16", 60000, V.UINT16),
        ("t.i16", -30000, V.INT16), ("t.u32", 4000000000, V.UINT32), ("t.i32", -2000000000, V.INT32),
        ("t.f32", 3.25, V.FLOAT32), ("t.bool_true", True, V.BOOL), ("t.bool_false", False, V.BOOL),
        ("t.string", "h\u00e9llo, w\u00f6rld \u2713", V.STRING), ("t.empty_string", "", V.STRING),
        ("t.u64", 2**64 - 1, V.UINT64), ("t.i64", -2**63, V.INT64), ("t.f64", -1.0e300, V.FLOAT64),
    ]
    for k, v, t in kv:
        w.add_key_value(k, v, t)
    arrays = [
        ("t.arr.u8", [0, 1, 255], V.UINT8), ("t.arr.i8", [-128, 0, 127], V.INT8),
        ("t.arr.u16", [0, 65535], V.UINT16), ("t.arr.i16", [-32768, 32767], V.INT16),
        ("t.arr.u32", [0, 4294967295], V.UINT32), ("t.arr.i32", [-2147483648, 5, 2147483647], V.INT32),
        ("t.arr.u64", [0, 2**64 - 1], V.UINT64), ("t.arr.i64", [-2**63, 2**63 - 1], V.INT64),
        ("t.arr.f32", [0.5, -1.25, 1.0e30], V.FLOAT32), ("t.arr.f64", [1.0e-300, -2.5], V.FLOAT64),
        ("t.arr.bool", [True, False, True], V.BOOL),
        ("t.arr.str", ["a", "", "\u00fc\u2202", "tokens with spaces"], V.STRING),
        ("t.nested", [[1, 2, 3], [4]], V.ARRAY),
        ("t.nested_mixed", [["x", "y"], [1.5], [True]], V.ARRAY),
        ("t.deep", [[[1], [2, 3]], [[4]]], V.ARRAY),
    ]
    for k, v, sub in arrays:
        w.add_key_value(k, v, V.ARRAY, sub_type=sub)
    w.add_tensor("f32.vec", np.arange(7, dtype=np.float32) * 0.5 - 1.0)
    w.add_tensor("f16.mat", (np.arange(15, dtype=np.float32) / 4 - 2).astype(np.float16).reshape(3, 5))
    w.add_tensor("bf16.mat", bf16_bytes(np.arange(8, dtype=np.float32) * 1.5 - 3.0).reshape(2, 8),
                 raw_dtype=Q.BF16)
    w.add_tensor("f64.mat", (np.arange(4, dtype=np.float64) * 0.1).reshape(2, 2))
    w.add_tensor("i8.vec", np.array([-128, -1, 0, 1, 127], dtype=np.int8))
    w.add_tensor("i16.mat", np.array([-32768, -1, 0, 1, 2, 32767], dtype=np.int16).reshape(2, 3))
    w.add_tensor("i32.vec", np.array([-2**31, 0, 7, 2**31 - 1], dtype=np.int32))
    w.add_tensor("i64.vec", np.array([-2**63, 0, 2**63 - 1], dtype=np.int64))
    w.add_tensor("f32.4d", np.arange(12, dtype=np.float32).reshape(2, 1, 3, 2))
    w.add_tensor("f32.empty", np.zeros((0, 4), dtype=np.float32))
    return w


def finish(w: GGUFWriter):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_metadata():
    path = os.path.join(OUT, "metadata.gguf")
    finish(metadata_writer(path))
    data = bytearray(open(path, "rb").read())
    data[4:8] = struct.pack("<I", 2)
    open(os.path.join(OUT, "v2.gguf"), "wb").write(bytes(data))


def write_split():
    w = GGUFWriter(os.path.join(OUT, "split.gguf"), "test", split_max_tensors=2)
    w.add_key_value("t.name", "split fixture", V.STRING)
    for i in range(5):
        w.add_tensor(f"s.{i}", np.arange(3, dtype=np.float32) + 10.0 * i)
    finish(w)


def write_v1():
    """GGUF v1: like v3 but every count, length and dim is u32."""
    def s(x: str) -> bytes:
        b = x.encode()
        return struct.pack("<I", len(b)) + b
    kv = b""
    kv += s("general.architecture") + struct.pack("<I", V.STRING) + s("v1test")
    kv += s("v1.u32") + struct.pack("<II", V.UINT32, 7)
    kv += s("v1.arr") + struct.pack("<III", V.ARRAY, V.STRING, 2) + s("one") + s("two")
    kv += s("v1.empty") + struct.pack("<III", V.ARRAY, V.UINT32, 0)
    kv += s("v1.nested") + struct.pack("<III", V.ARRAY, V.ARRAY, 1) + struct.pack("<IIhh", V.INT16, 2, -5, 6)
    a = (np.arange(8, dtype=np.float32) - 3.5)
    b = quantize(np.linspace(-1, 1, 32, dtype=np.float32), Q.Q8_0).reshape(-1)
    ti = s("a") + struct.pack("<III", 2, 4, 2) + struct.pack("<IQ", Q.F32, 0)
    ti += s("b") + struct.pack("<II", 1, 32) + struct.pack("<IQ", Q.Q8_0, 32)
    head = b"GGUF" + struct.pack("<III", 1, 2, 5) + kv + ti
    pad = lambda n: b"\0" * ((-n) % 32)
    data = head + pad(len(head)) + a.tobytes() + b.tobytes() + pad(len(b))
    open(os.path.join(OUT, "v1.gguf"), "wb").write(data)


def write_be():
    w = GGUFWriter(os.path.join(OUT, "be.gguf"), "test", endianess=gguf.GGUFEndian.BIG)
    w.add_tensor("x", np.arange(4, dtype=np.float32))
    finish(w)


# ------------------------------------------------------------------ ggml's C reference

def ggml_sources() -> str:
    cache = os.path.expanduser("~/.cache/rlx-ref/ggml-src")
    ggml = os.path.join(cache, "ggml")
    if os.path.exists(os.path.join(ggml, "src", "ggml-quants.c")):
        return ggml
    os.makedirs(cache, exist_ok=True)
    # The sdist vendors llama.cpp; pip only downloads it (metadata needs cmake + scikit-build-core).
    subprocess.check_call([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                           "--no-build-isolation", LLAMA_CPP_PY, "-d", cache])
    sdist = [f for f in os.listdir(cache) if f.endswith(".tar.gz")][0]
    with tarfile.open(os.path.join(cache, sdist)) as tf:
        for m in tf.getmembers():
            parts = m.name.split("/")
            if "ggml" in parts and m.isfile() and m.name.endswith((".h", ".c")):
                i = parts.index("ggml")
                rel = parts[i + 1:]
                if rel[0] in ("include", "src") and (len(rel) == 2 or rel[1] == "ggml-cpu"):
                    m.name = "/".join(["ggml"] + rel)
                    tf.extract(m, cache)
    return ggml


STUB = r"""
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>
void ggml_abort(const char * file, int line, const char * fmt, ...) { fprintf(stderr, "abort %s:%d\n", file, line); abort(); }
void ggml_log_internal(int level, const char * fmt, ...) { (void)level; (void)fmt; }
size_t ggml_row_size(int type, int64_t ne) { (void)type; (void)ne; abort(); }
const char * ggml_type_name(int type) { (void)type; return "?"; }
size_t ggml_type_size(int type) { (void)type; abort(); }
"""

C_NAMES = {Q.Q4_0: "q4_0", Q.Q4_1: "q4_1", Q.Q5_0: "q5_0", Q.Q5_1: "q5_1", Q.Q8_0: "q8_0", Q.Q8_1: "q8_1",
           Q.Q2_K: "q2_K", Q.Q3_K: "q3_K", Q.Q4_K: "q4_K", Q.Q5_K: "q5_K", Q.Q6_K: "q6_K", Q.Q8_K: "q8_K",
           Q.TQ1_0: "tq1_0", Q.TQ2_0: "tq2_0", Q.MXFP4: "mxfp4", Q.Q1_0: "q1_0"}
# ggml's block bytes where gguf-py's table differs (Q8_1 is two f16 + 32 quants).
TYPE_SIZE = {Q.Q8_1: 36}


def write_ggml_ref(inp: np.ndarray):
    ggml = ggml_sources()
    build = os.path.expanduser("~/.cache/rlx-ref/ggml-build")
    os.makedirs(build, exist_ok=True)
    stub = os.path.join(build, "stub.c")
    open(stub, "w").write(STUB)
    lib = os.path.join(build, "libggml_quants_ref.so")
    # -ffp-contract=off: no fused multiply-add, the operation order ggml's C source spells out.
    subprocess.check_call(["cc", "-O2", "-fPIC", "-shared", "-ffp-contract=off",
                           f"-I{ggml}/include", f"-I{ggml}/src", "-o", lib,
                           os.path.join(ggml, "src", "ggml-quants.c"), stub, "-lm"])
    L = ctypes.CDLL(lib)
    w = GGUFWriter(os.path.join(OUT, "ggml_ref.gguf"), "ggml-ref-fixture")
    w.add_key_value("fixture.source", LLAMA_CPP_PY + " vendored ggml/src/ggml-quants.c", V.STRING)
    x = np.ascontiguousarray(inp.reshape(-1))
    done = []
    for qt, cname in C_NAMES.items():
        fq = getattr(L, f"quantize_row_{cname}_ref", None)
        if fq is None:
            continue
        bs = GGML_QUANT_SIZES[qt][0]
        ts = TYPE_SIZE.get(qt, GGML_QUANT_SIZES[qt][1])
        out = np.zeros(x.size // bs * ts, dtype=np.uint8)
        fq(x.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(x.size))
        # stored as I8 [4, row_bytes] (the raw bytes) so gguf-py's stale Q8_1 size does not matter
        w.add_tensor(f"cq.{qt.name}", out.view(np.int8).reshape(4, -1))
        fd = getattr(L, f"dequantize_row_{cname}", None)
        if fd is not None:
            y = np.zeros(x.size, dtype=np.float32)
            fd(out.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(x.size))
            w.add_tensor(f"cdq.{qt.name}", y.reshape(4, -1))
        done.append(qt.name)
    w.add_array("fixture.types", done)
    finish(w)
    print("ggml_ref.gguf:", done)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--with-ggml", action="store_true", help="also write ggml_ref.gguf (needs cc)")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    print("gguf-py", gguf.__file__, "numpy", np.__version__)
    inp = make_input()
    write_codecs(inp)
    write_metadata()
    write_split()
    write_v1()
    write_be()
    if a.with_ggml:
        write_ggml_ref(inp)
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"fixtures: {total} bytes in {OUT}")


if __name__ == "__main__":
    main()
