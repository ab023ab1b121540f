#!/usr/bin/env python3
"""Write the quantized-matmul fixtures of crates/rlx-cpu (ggml's math, in numpy).

Run (from the repository root; env made by /work/shared/ref/setup.sh: numpy + gguf-py):
    ~/.cache/rlx-ref/venv/bin/python tools/gen_qmatmul_fixtures.py

What it computes, for every weight type the native kernel runs (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, F32, F16, BF16) and three shapes (M, N, K) =
(1, 5, 512), (3, 7, 768), (7, 3, 256):
  - W: N rows of random block bytes whose f16 (Q8_K: f32) scales are overwritten with sane
    values (every bit pattern of the quants occurs), or random normal F32 / F16 / BF16 values;
  - Wd = gguf.quants.dequantize(W) (gguf-py, llama.cpp's numpy reference; not our decoder;
    Q8_K, which gguf-py lacks: d * q spelled out here);
  - x: random normal f32 [M, K] (one row scaled by 100, one with an outlier);
  - the activation quantization ggml pairs with the type (ggml's quantize_row_q8_0_ref /
    q8_1_ref / q8_K_ref, re-implemented here in float32 numpy: d = amax/127, q = roundf(x/d)
    with d and Q8_1's s = d*sum(q) stored as f16; Q8_K: iscale = -127/max, q = nearest_int,
    d = 1/iscale as f32);
  - y_ggml = ggml's vec_dot formula in float64: sum over blocks of d_x * sum_i Wd_i * q_x,i,
    except Q4_1 / Q5_1, where ggml's `d_w*d_x*sumi + m_w*s_x` uses the f16 `s` of Q8_1
    (computed here as (Wd - m) * d_x * q_x + m * s_x); F32 / F16 / BF16: y = Wd . x, no
    activation quantization;
  - y_plain = Wd . x in float64 (no activation quantization), and
    l1 = sum_i |Wd_i * x_i| (the row's L1 magnitude, the tolerance scale).
Files (crates/rlx-cpu/tests/fixtures/qmatmul/, ~250 KB): index.json (one entry per case: type,
m, n, k, file) and per case <type>_<m>x<n>x<k>.bin = x (f32 LE, M*K) | W bytes |
y_ggml, y_plain, l1 (f64 LE, M*N each).
"""
import json
import os

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "rlx-cpu", "tests", "fixtures", "qmatmul")
SHAPES = [(1, 5, 512), (3, 7, 768), (7, 3, 256)]
# type -> (block size, block bytes, f16 scale offsets, activation quantization)
BLOCKS = {
    "Q4_0": (32, 18, [0], "q8_0"),
    "Q4_1": (32, 20, [0, 2], "q8_1"),
    "Q5_0": (32, 22, [0], "q8_0"),
    "Q5_1": (32, 24, [0, 2], "q8_1"),
    "Q8_0": (32, 34, [0], "q8_0"),
    "Q2_K": (256, 84, [80, 82], "q8_k"),
    "Q3_K": (256, 110, [108], "q8_k"),
    "Q4_K": (256, 144, [0, 2], "q8_k"),
    "Q5_K": (256, 176, [0, 2], "q8_k"),
    "Q6_K": (256, 210, [208], "q8_k"),
    "Q8_K": (256, 292, [], "q8_k"),
}
PLAIN = {"F32": np.float32, "F16": np.float16}


def roundf(v: np.ndarray) -> np.ndarray:
    """C roundf: half away from zero (v is float32; exact in float64)."""
    v = v.astype(np.float64)
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def q8_legacy(x: np.ndarray, with_s: bool):
    """ggml quantize_row_q8_0_ref / q8_1_ref per 32 values: (q, d as the f16 value, s)."""
    xb = x.reshape(-1, 32).astype(np.float32)
    amax = np.abs(xb).max(axis=1)
    d = (amax / np.float32(127.0)).astype(np.float32)
    inv = np.where(d != 0, np.float32(1.0) / np.where(d != 0, d, 1), 0).astype(np.float32)
    q = roundf((xb * inv[:, None]).astype(np.float32)).astype(np.int64)
    d16 = d.astype(np.float16).astype(np.float64)
    s16 = (q.sum(axis=1).astype(np.float32) * d).astype(np.float16).astype(np.float64)
    return q, d16, (s16 if with_s else None)


def q8_k(x: np.ndarray):
    """ggml quantize_row_q8_K_ref per 256 values: (q, d)."""
    xb = x.reshape(-1, 256).astype(np.float32)
    idx = np.abs(xb).argmax(axis=1)  # first maximum, as ggml's strict `<`
    mx = xb[np.arange(len(xb)), idx]
    q = np.zeros(xb.shape, np.int64)
    d = np.zeros(len(xb), np.float64)
    for b in range(len(xb)):
        if mx[b] == 0:
            continue
        iscale = np.float32(-127.0) / mx[b]
        v = (iscale * xb[b]).astype(np.float32)
        q[b] = np.minimum(np.rint(v), 127).astype(np.int64)  # nearest_int: half to even
        d[b] = float(np.float32(1.0) / iscale)
    return q, d


def random_weight(rng, ty: str, n: int, k: int) -> bytes:
    if ty in PLAIN:
        return rng.normal(0, 0.5, (n, k)).astype(PLAIN[ty]).tobytes()
    if ty == "BF16":
        f = rng.normal(0, 0.5, (n, k)).astype(np.float32)
        return (f.view(np.uint32) >> 16).astype(np.uint16).tobytes()  # truncation: any bf16 will do
    bs, bb, offs, _ = BLOCKS[ty]
    raw = rng.integers(0, 256, (n * k // bs, bb), dtype=np.uint8)
    for o in offs:
        v = (rng.uniform(0.002, 0.02, len(raw)) * rng.choice([-1, 1], len(raw))).astype(np.float16)
        raw[:, o:o + 2] = v.view(np.uint8).reshape(-1, 2)
    if ty == "Q8_K":
        raw[:, 0:4] = rng.uniform(0.002, 0.02, len(raw)).astype(np.float32).view(np.uint8).reshape(-1, 4)
    return raw.tobytes()


def dequant(w: bytes, ty: str, n: int) -> np.ndarray:
    """gguf-py's dequantization; Q8_K (which gguf-py lacks) spelled out: d (f32) * qs (i8)."""
    raw = np.frombuffer(w, np.uint8)
    if ty == "Q8_K":
        b = raw.reshape(-1, 292)
        d = b[:, 0:4].copy().view(np.float32).astype(np.float64)
        return (d * b[:, 4:260].view(np.int8)).reshape(n, -1)
    return dequantize(raw.reshape(n, -1), T[ty]).astype(np.float64)


def main():
    rng = np.random.default_rng(20261202)
    os.makedirs(OUT, exist_ok=True)
    index = []
    xs = {}
    for (m, n, k) in SHAPES:
        x = rng.normal(0, 1, (m, k)).astype(np.float32)
        if m >= 3:
            x[1] *= 100.0
            x[2, 7] = 40.0
        xs[(m, n, k)] = x
    for ty in list(BLOCKS) + ["F32", "F16", "BF16"]:
        for (m, n, k) in SHAPES:
            x = xs[(m, n, k)]
            w = random_weight(rng, ty, n, k)
            wd = dequant(w, ty, n)
            assert wd.shape == (n, k), (ty, wd.shape)
            x64 = x.astype(np.float64)
            y_plain = x64 @ wd.T
            l1 = np.abs(x64) @ np.abs(wd).T
            if ty in BLOCKS:
                bs, bb, _, act = BLOCKS[ty]
                y = np.zeros((m, n))
                for i in range(m):
                    if act == "q8_k":
                        q, d = q8_k(x[i])
                        xq = (q * d[:, None]).reshape(-1)
                        y[i] = wd @ xq
                    else:
                        q, d, s = q8_legacy(x[i], act == "q8_1")
                        if s is None:
                            y[i] = wd @ (q * d[:, None]).reshape(-1)
                        else:
                            # ggml: d_w*d_x*sum(q_w*q_x) + m_w*s_x, m_w = the block's f16 min
                            blocks = np.frombuffer(w, np.uint8).reshape(-1, bb)
                            mw = blocks[:, 2:4].copy().view(np.float16).astype(np.float64).reshape(n, -1)
                            wq = wd - np.repeat(mw, 32, axis=1)
                            y[i] = wq @ (q * d[:, None]).reshape(-1) + mw @ s
            else:
                y = y_plain
            name = f"{ty}_{m}x{n}x{k}.bin"
            with open(os.path.join(OUT, name), "wb") as f:
                f.write(x.astype("<f4").tobytes())
                f.write(w)
                for a in (y, y_plain, l1):
                    f.write(np.asarray(a, "<f8").tobytes())
            index.append({"type": ty, "m": m, "n": n, "k": k, "file": name, "w_bytes": len(w)})
    with open(os.path.join(OUT, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
    total = sum(os.path.getsize(os.path.join(OUT, e["file"])) for e in index)
    print(f"{len(index)} cases, {total} bytes in {OUT}")


if __name__ == "__main__":
    main()
