#!/usr/bin/env python3
"""Generate numpy reference fixtures for every op of the RLX IR.

The fixtures are JSON files, one per op family, written to
``crates/rlx-runtime/tests/fixtures/``; the Rust harness
``crates/rlx-runtime/tests/op_matrix/`` (the op matrix) builds one graph per
case, runs it on every available backend and compares the outputs against
these values, then checks the transforms of the same graph.

Python environment (numpy + scipy, created once)::

    python3 -m venv ~/.cache/rlx-ref/np
    ~/.cache/rlx-ref/np/bin/pip install numpy scipy

Run it from anywhere (the output path is resolved relative to this file)::

    ~/.cache/rlx-ref/np/bin/python tools/gen_op_fixtures.py

The random seed is fixed, so re-running it reproduces the same files.

File format: ``{"cases": [case, ...]}`` where a case is::

    {"name": str, "op": str, "attrs": {...},
     "inputs":  [tensor, ...],   # graph inputs "x0", "x1", ...
     "outputs": [tensor, ...],   # graph outputs, in order
     "rtol": float, "atol": float}

and a tensor is ``{"dtype": numpy name, "shape": [...], "data": [...]}`` with
the data flattened row-major; NaN / infinities are the strings ``"nan"``,
``"inf"``, ``"-inf"``; complex64 data is flattened ``[re, im]`` pairs; bool
is 0 / 1; bfloat16 values are written as the (exactly representable)
numbers. The op ``"graph"`` chains several ops: ``attrs.steps`` is a list of
``{"op", "attrs", "args"}`` where each arg names a case input (``"x0"``) or
an earlier step (``"s0"``, ``"s1"``, ...); the last step is the output.

Reference values are computed in float64 (complex128) from the exact input
values and rounded to the output dtype once; bfloat16 rounding is
round-to-nearest-even on the top 16 bits of the float32 value.
"""

import json
import math
import os
import sys

import numpy as np
from scipy.special import erf

SEED = 20240611
rng = np.random.default_rng(SEED)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "..", "crates", "rlx-runtime", "tests", "fixtures")

F16, F32, F64 = np.float16, np.float32, np.float64
I8, I16, I32, I64 = np.int8, np.int16, np.int32, np.int64
U8, U32 = np.uint8, np.uint32
BOOL, C64 = np.bool_, np.complex64

SQRT2 = math.sqrt(2.0)
NAN, INF = float("nan"), float("inf")


# ── bfloat16 ────────────────────────────────────────────────────────────────


def bf16_round(x):
    """Round float values to bfloat16 (RNE on the top 16 bits), as float32."""
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    bias = ((u >> 16) & 1) + 0x7FFF
    r = (((u + bias) >> 16) << 16).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), r).astype(np.float32)


class BF16:
    """A bfloat16 tensor: float32 storage of bf16-representable values."""

    def __init__(self, arr):
        self.arr = bf16_round(arr)

    @property
    def shape(self):
        return self.arr.shape


# ── encoding ────────────────────────────────────────────────────────────────

FLOAT_DIGITS = {"float64": None, "float32": 9, "float16": 5, "bfloat16": 4}
DEFAULT_TOL = {
    "float64": (1e-10, 1e-12),
    "float32": (1e-5, 1e-6),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1e-2),
    "complex64": (1e-5, 1e-5),
}


def fnum(v, digits):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if digits is None:
        return v
    return float(f"{v:.{digits}g}")


def dtype_name(t):
    if isinstance(t, BF16):
        return "bfloat16"
    return np.asarray(t).dtype.name


def enc(t, exact):
    """Encode a tensor; inputs are exact, outputs rounded to their precision."""
    name = dtype_name(t)
    arr = t.arr if isinstance(t, BF16) else np.asarray(t)
    flat = arr.reshape(-1)
    if name in FLOAT_DIGITS:
        digits = None if exact else FLOAT_DIGITS[name]
        data = [fnum(v, digits) for v in flat]
    elif name == "complex64":
        digits = None if exact else 9
        data = []
        for v in flat:
            data.extend([fnum(v.real, digits), fnum(v.imag, digits)])
    elif name == "bool":
        data = [int(bool(v)) for v in flat]
    else:
        data = [int(v) for v in flat]
    return {"dtype": name, "shape": [int(d) for d in arr.shape], "data": data}


def case(name, op, attrs, inputs, outputs, rtol=None, atol=None):
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    rt, at = 0.0, 0.0
    for o in outputs:
        d = DEFAULT_TOL.get(dtype_name(o))
        if d:
            rt, at = max(rt, d[0]), max(at, d[1])
    return {
        "name": name,
        "op": op,
        "attrs": attrs,
        "inputs": [enc(t, True) for t in inputs],
        "outputs": [enc(t, False) for t in outputs],
        "rtol": rt if rtol is None else rtol,
        "atol": at if atol is None else atol,
    }


# ── data helpers ────────────────────────────────────────────────────────────


def grid(shape, lo=-4.0, hi=4.0, q=16, dtype=F32):
    """Random values on a 1/q grid in [lo, hi] (exact in f16 / f32 / f64)."""
    v = rng.integers(int(round(lo * q)), int(round(hi * q)) + 1, size=shape) / q
    return np.asarray(v).astype(dtype)


def randn(shape, dtype=F32, q=256):
    v = np.round(rng.standard_normal(shape) * q) / q
    return np.asarray(v).astype(dtype)


def ints(shape, lo, hi, dtype=I32):
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def f64(t):
    if isinstance(t, BF16):
        return t.arr.astype(F64)
    t = np.asarray(t)
    if t.dtype == C64:
        return t.astype(np.complex128)
    return t.astype(F64)


def like(ref, t):
    """Round a float64 result to the dtype of tensor t."""
    if isinstance(t, BF16):
        return BF16(np.asarray(ref, dtype=F64).astype(F32))
    return np.asarray(ref).astype(np.asarray(t).dtype)


def to_dtype(ref, name):
    if name == "bfloat16":
        return BF16(np.asarray(ref, dtype=F64).astype(F32))
    return np.asarray(ref).astype(name)


def sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


# ── elementwise: unary ──────────────────────────────────────────────────────

UNARY = {
    "neg": np.negative,
    "abs": np.abs,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "reciprocal": lambda x: 1.0 / x,
    "tanh": np.tanh,
    "sigmoid": sigmoid,
    "relu": lambda x: np.maximum(x, 0),
    "gelu": lambda x: 0.5 * x * (1.0 + erf(x / SQRT2)),
    "gelu_approx": lambda x: 0.5
    * x
    * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
    "silu": lambda x: x * sigmoid(x),
    "sin": np.sin,
    "cos": np.cos,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
    "sign": np.sign,
    "erf": erf,
    "softplus": lambda x: np.logaddexp(0.0, x),
}

POSITIVE_DOMAIN = {"log", "sqrt", "rsqrt"}

SPECIAL = {
    "neg": [NAN, INF, -INF, 0.0, -0.0, 3.5],
    "abs": [NAN, INF, -INF, 0.0, -0.0, -3.5],
    "exp": [NAN, INF, -INF, 0.0, 80.0, -100.0],
    "log": [NAN, INF, 0.0, -0.0, -1.0, 1.0],
    "sqrt": [NAN, INF, 0.0, -0.0, -1.0, 4.0],
    "rsqrt": [NAN, INF, 0.0, -1.0, 0.25],
    "reciprocal": [NAN, INF, -INF, 0.0, -0.0, 4.0],
    "tanh": [NAN, INF, -INF, 0.0, 20.0, -20.0],
    "sigmoid": [NAN, INF, -INF, 0.0, 100.0, -100.0],
    "relu": [NAN, INF, -INF, 0.0, -0.0, -1.0],
    "gelu": [NAN, INF, 0.0, 10.0, -10.0, -30.0],
    "gelu_approx": [NAN, INF, 0.0, 10.0, -10.0, -30.0],
    "silu": [NAN, INF, 0.0, 30.0, -30.0, -100.0],
    "sin": [NAN, INF, -INF, 0.0, -0.0],
    "cos": [NAN, INF, -INF, 0.0],
    "floor": [NAN, INF, -INF, -0.0, 0.5, -0.5, 1.5, -1.5, 8388609.0, -8388609.0],
    "ceil": [NAN, INF, -INF, -0.0, 0.5, -0.5, 1.5, -1.5, 8388609.0, -8388609.0],
    "round": [NAN, INF, -INF, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5, 0.49999997, 8388609.0],
    "sign": [NAN, INF, -INF, 0.0, -0.0, -3.0, 2.0],
    "erf": [NAN, INF, -INF, 0.0, 6.0, -6.0],
    "softplus": [NAN, INF, -INF, 0.0, 100.0, -100.0, 20.0],
}


def unary_cases():
    cases = []
    for fn, ref in UNARY.items():
        for dt in (F32, F64, F16):
            if fn in POSITIVE_DOMAIN:
                x = grid((3, 5), 1 / 16, 8.0, dtype=dt)
            elif fn == "reciprocal":
                x = grid((3, 5), 0.25, 4.0, dtype=dt) * np.where(
                    rng.random((3, 5)) < 0.5, -1, 1
                ).astype(dt)
            elif fn == "round":
                x = np.concatenate(
                    [grid((11,), -4, 4, q=4, dtype=dt), np.array([0.5, 1.5, 2.5, -0.5, -2.5], dt)]
                ).reshape(4, 4)
            else:
                x = grid((3, 5), dtype=dt)
            with np.errstate(all="ignore"):
                y = like(ref(f64(x)), x)
            cases.append(case(f"{fn}_{dtype_name(x)}", "unary", {"fn": fn}, [x], y))
        x = np.array(SPECIAL[fn], dtype=F32)
        with np.errstate(all="ignore"):
            y = like(ref(f64(x)), x)
        cases.append(case(f"{fn}_float32_special", "unary", {"fn": fn}, [x], y))
    for fn in ("exp", "tanh", "gelu", "silu", "sigmoid", "sqrt"):
        x = BF16(grid((2, 4), 1 / 16 if fn == "sqrt" else -3, 3))
        with np.errstate(all="ignore"):
            y = like(UNARY[fn](f64(x)), x)
        cases.append(case(f"{fn}_bfloat16", "unary", {"fn": fn}, [x], y))
    # longer vectors (vectorised loops and their tails)
    for fn in ("exp", "gelu", "tanh", "sigmoid"):
        x = grid((257,), -6, 6, q=32)
        cases.append(case(f"{fn}_float32_257", "unary", {"fn": fn}, [x], like(UNARY[fn](f64(x)), x)))
    # rank-0 and empty inputs
    x = np.array(0.75, F32)
    cases.append(case("exp_float32_scalar", "unary", {"fn": "exp"}, [x], like(np.exp(f64(x)), x)))
    x = np.zeros((0, 3), F32)
    cases.append(case("tanh_float32_empty", "unary", {"fn": "tanh"}, [x], x.copy()))
    # integer ops (numpy wrapping semantics)
    int_inputs = {
        "int32": np.array([-7, -1, 0, 1, 5, 2147483647, -2147483647], I32),
        "int8": np.array([-128, -127, -3, 0, 3, 127], I8),
        "int64": np.array([-(2**62), -5, 0, 9, 2**62], I64),
        "int16": np.array([-32768, -4, 0, 4, 32767], I16),
    }
    for fn in ("neg", "abs", "relu", "sign", "floor", "ceil", "round"):
        for name, x in int_inputs.items():
            if fn in ("floor", "ceil", "round") and name != "int32":
                continue
            if fn == "relu" and name in ("int64", "int16"):
                continue
            with np.errstate(all="ignore"):
                y = UNARY[fn](x)
            y = np.asarray(y).astype(x.dtype)
            cases.append(case(f"{fn}_{name}", "unary", {"fn": fn}, [x], y))
    x = np.array([0, 1, 5, 250, 255], U8)
    cases.append(case("neg_uint8_wraps", "unary", {"fn": "neg"}, [x], np.negative(x)))
    cases.append(case("abs_uint8", "unary", {"fn": "abs"}, [x], np.abs(x)))
    x = np.array([[True, False, True], [False, False, True]])
    cases.append(case("not_bool", "unary", {"fn": "not"}, [x], np.logical_not(x)))
    return cases


# ── elementwise: binary ─────────────────────────────────────────────────────

FLOAT_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "pow": np.power,
    "max": np.maximum,
    "min": np.minimum,
    "mod": np.mod,
    "atan2": np.arctan2,
}

INT_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.floor_divide,
    "pow": np.power,
    "max": np.maximum,
    "min": np.minimum,
    "mod": np.mod,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}

BOOL_BINARY = {
    "add": np.logical_or,
    "mul": np.logical_and,
    "max": np.logical_or,
    "min": np.logical_and,
    "and": np.logical_and,
    "or": np.logical_or,
    "xor": np.logical_xor,
}

BROADCAST_SHAPES = [
    ("same", (2, 3), (2, 3)),
    ("scalar_rhs", (2, 3), ()),
    ("scalar_lhs", (), (3,)),
    ("both_scalar", (), ()),
    ("rank_mismatch", (4,), (2, 3, 4)),
    ("size1_dims", (2, 1, 4), (3, 1)),
    ("size1_both", (1, 3), (2, 1)),
    ("empty_dim", (0, 3), (3,)),
    ("empty_vs_1", (2, 0), (2, 1)),
    ("empty_bcast", (1, 0), (3, 1)),
]


def float_operands(fn, sa, sb, dt):
    if fn == "pow":
        return grid(sa, 0.25, 3.0, dtype=dt), grid(sb, -2.0, 2.0, q=4, dtype=dt)
    a = grid(sa, dtype=dt)
    b = grid(sb, dtype=dt)
    if fn in ("div", "mod"):
        b = np.where(b == 0, dt(1.5), b).astype(dt)
    return a, b


def binary_ref(fn, a, b, table):
    with np.errstate(all="ignore"):
        if isinstance(a, BF16) or np.asarray(a).dtype.kind in "fc":
            return like(table[fn](f64(a), f64(b)), a)
        return np.asarray(table[fn](a, b)).astype(a.dtype)


def binary_cases():
    cases = []
    # every float op over every broadcast pattern, f32
    for fn in FLOAT_BINARY:
        for tag, sa, sb in BROADCAST_SHAPES:
            a, b = float_operands(fn, sa, sb, F32)
            cases.append(
                case(f"{fn}_float32_{tag}", "binary", {"fn": fn}, [a, b], binary_ref(fn, a, b, FLOAT_BINARY))
            )
        for dt in (F64, F16):
            a, b = float_operands(fn, (2, 1, 3), (4, 3), dt)
            cases.append(
                case(f"{fn}_{dt.__name__}_bcast", "binary", {"fn": fn}, [a, b], binary_ref(fn, a, b, FLOAT_BINARY))
            )
    for fn in ("add", "mul", "sub", "max"):
        a, b = float_operands(fn, (5, 1, 33), (7, 1), F32)
        cases.append(case(f"{fn}_float32_large_bcast", "binary", {"fn": fn}, [a, b], binary_ref(fn, a, b, FLOAT_BINARY)))
    for fn in ("add", "mul", "div", "max"):
        a, b = float_operands(fn, (2, 3), (3,), F32)
        a, b = BF16(a), BF16(b)
        cases.append(case(f"{fn}_bfloat16", "binary", {"fn": fn}, [a, b], binary_ref(fn, a, b, FLOAT_BINARY)))
    # float special values
    special = {
        "add": ([INF, -INF, INF, NAN, 1.0, -0.0], [-INF, -INF, 1.0, 1.0, NAN, 0.0]),
        "div": ([1.0, -1.0, 0.0, NAN, INF, 3.0, -0.0], [0.0, 0.0, 0.0, 1.0, INF, -0.0, 2.0]),
        "pow": (
            [-2.0, -2.0, 0.0, 0.0, NAN, 1.0, -8.0, 2.0, 4.0, -1.0],
            [3.0, 0.5, 0.0, -1.0, 0.0, NAN, 1 / 3, -2.0, 0.5, 2.0],
        ),
        "max": ([NAN, 1.0, NAN, -INF, 2.0, -0.0], [1.0, NAN, NAN, 3.0, INF, 1.0]),
        "min": ([NAN, 1.0, NAN, -INF, 2.0, 5.0], [1.0, NAN, NAN, 3.0, INF, -1.0]),
        "mod": (
            [5.5, -5.5, 5.5, -5.5, 3.0, -3.0, 0.0, 7.0, NAN, 1.0],
            [2.0, 2.0, -2.0, -2.0, 1.5, 1.5, 3.0, 0.0, 2.0, NAN],
        ),
        "atan2": (
            [0.0, 0.0, -0.0, 1.0, -1.0, INF, NAN, 3.0, -3.0],
            [0.0, -0.0, -0.0, 0.0, 0.0, INF, 1.0, -4.0, -4.0],
        ),
        "sub": ([INF, INF, NAN, 1.0], [INF, -INF, 1.0, 1.0]),
        "mul": ([INF, 0.0, -INF, NAN, -0.0], [0.0, INF, -2.0, 1.0, 5.0]),
    }
    for fn, (a, b) in special.items():
        a, b = np.array(a, F32), np.array(b, F32)
        cases.append(case(f"{fn}_float32_special", "binary", {"fn": fn}, [a, b], binary_ref(fn, a, b, FLOAT_BINARY)))
    # complex64
    for fn in ("add", "sub", "mul", "div"):
        a = (grid((2, 3)) + 1j * grid((2, 3))).astype(C64)
        b = (grid((3,), 0.5, 2) + 1j * grid((3,))).astype(C64)
        with np.errstate(all="ignore"):
            y = FLOAT_BINARY[fn](f64(a), f64(b)).astype(C64)
        cases.append(case(f"{fn}_complex64", "binary", {"fn": fn}, [a, b], y))
    # integers: int32 incl. negative operands, zero divisors, broadcasting
    a32 = np.array([[7, -7, 7, -7, 0, 5, -5, 2147483647, -2147483648, 9]], I32)
    b32 = np.array([[2, 2, -2, -2, 3, 0, 0, 1, -1, -4]], I32)
    for fn in INT_BINARY:
        if fn == "pow":
            a = np.array([2, -3, 0, 0, 5, 10, -1, 7, 3, 1], I32)
            b = np.array([10, 3, 0, 2, 1, 10, 7, 0, 19, 30], I32)
        else:
            a, b = a32, b32
        cases.append(case(f"{fn}_int32", "binary", {"fn": fn}, [a, b], binary_ref(fn, a, b, INT_BINARY)))
    # int32 broadcasting
    a, b = ints((2, 1, 3), -9, 9), ints((4, 1), -4, 4)
    b = np.where(b == 0, 3, b).astype(I32)
    for fn in ("add", "div", "mod", "max", "and"):
        cases.append(case(f"{fn}_int32_bcast", "binary", {"fn": fn}, [a, b], binary_ref(fn, a, b, INT_BINARY)))
    # int8: wrapping overflow and INT_MIN edge cases
    a8 = np.array([127, -128, 100, -100, -128, -128, 7, -7], I8)
    b8 = np.array([1, -1, 100, 100, -1, 2, 0, 3], I8)
    for fn in ("add", "sub", "mul", "div", "mod", "max", "xor"):
        cases.append(case(f"{fn}_int8_wrap", "binary", {"fn": fn}, [a8, b8], binary_ref(fn, a8, b8, INT_BINARY)))
    # int16
    a16 = np.array([32767, -32768, 300, -7, 12], I16)
    b16 = np.array([1, -1, 300, 2, -5], I16)
    for fn in ("add", "mul", "div", "mod"):
        cases.append(case(f"{fn}_int16", "binary", {"fn": fn}, [a16, b16], binary_ref(fn, a16, b16, INT_BINARY)))
    # int64 with large magnitudes
    a64 = np.array([2**62, -(2**62), 9007199254740993, -7, 2**63 - 1, 13], I64)
    b64 = np.array([4, 3, 2, 2, 1, -5], I64)
    for fn in ("add", "sub", "mul", "div", "mod", "or"):
        cases.append(case(f"{fn}_int64", "binary", {"fn": fn}, [a64, b64], binary_ref(fn, a64, b64, INT_BINARY)))
    # unsigned
    au8 = np.array([3, 250, 255, 10, 7, 0], U8)
    bu8 = np.array([5, 10, 255, 3, 0, 4], U8)
    for fn in ("add", "sub", "mul", "div", "mod", "max", "min", "and"):
        cases.append(case(f"{fn}_uint8", "binary", {"fn": fn}, [au8, bu8], binary_ref(fn, au8, bu8, INT_BINARY)))
    au32 = np.array([3, 4000000000, 4294967295, 100, 9], U32)
    bu32 = np.array([5, 2, 2, 7, 0], U32)
    for fn in ("add", "sub", "mul", "div", "mod"):
        cases.append(case(f"{fn}_uint32", "binary", {"fn": fn}, [au32, bu32], binary_ref(fn, au32, bu32, INT_BINARY)))
    # bool
    ab = np.array([[True, True, False, False]])
    bb = np.array([[True], [False]])
    for fn, ref in BOOL_BINARY.items():
        y = np.asarray(ref(ab, bb))
        cases.append(case(f"{fn}_bool", "binary", {"fn": fn}, [ab, bb], y))
    return cases


# ── compare / select ────────────────────────────────────────────────────────

COMPARE = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


def compare_cases():
    cases = []
    for fn, ref in COMPARE.items():
        a = grid((2, 4), -2, 2, q=2)
        b = grid((4,), -2, 2, q=2)
        cases.append(case(f"{fn}_float32_bcast", "compare", {"fn": fn}, [a, b], ref(a, b)))
        a = np.array([NAN, NAN, 1.0, INF, -INF, 0.0, -0.0], F32)
        b = np.array([NAN, 1.0, NAN, INF, INF, -0.0, 0.0], F32)
        cases.append(case(f"{fn}_float32_special", "compare", {"fn": fn}, [a, b], ref(a, b)))
        a, b = ints((3, 1), -3, 3), ints((1, 4), -3, 3)
        cases.append(case(f"{fn}_int32_bcast", "compare", {"fn": fn}, [a, b], ref(a, b)))
    a = np.array([0, 200, 255], U8)
    b = np.array([1, 100, 255], U8)
    cases.append(case("lt_uint8", "compare", {"fn": "lt"}, [a, b], np.less(a, b)))
    a = np.array([-(2**62), 2**62, 5], I64)
    b = np.array([2**62, 2**62, -5], I64)
    cases.append(case("ge_int64", "compare", {"fn": "ge"}, [a, b], np.greater_equal(a, b)))
    a = grid((5,), -2, 2, q=2, dtype=F16)
    b = grid((5,), -2, 2, q=2, dtype=F16)
    cases.append(case("le_float16", "compare", {"fn": "le"}, [a, b], np.less_equal(a, b)))
    a = grid((5,), -2, 2, q=2, dtype=F64)
    cases.append(case("gt_float64", "compare", {"fn": "gt"}, [a, a[::-1].copy()], np.greater(a, a[::-1])))
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    cases.append(case("eq_bool", "compare", {"fn": "eq"}, [a, b], np.equal(a, b)))
    a = np.array([1 + 2j, 3 - 1j, 0j], C64)
    b = np.array([1 + 2j, 3 + 1j, 0j], C64)
    cases.append(case("eq_complex64", "compare", {"fn": "eq"}, [a, b], np.equal(a, b)))
    cases.append(case("ne_complex64", "compare", {"fn": "ne"}, [a, b], np.not_equal(a, b)))
    # where
    c = rng.random((2, 3)) < 0.5
    a, b = grid((2, 3)), grid((2, 3))
    cases.append(case("where_float32", "select", {}, [c, a, b], np.where(c, a, b)))
    c = rng.random((3, 1)) < 0.5
    a, b = grid((1, 4)), grid(())
    cases.append(case("where_float32_bcast", "select", {}, [c, a, b], np.where(c, a, b)))
    c = np.array(True)
    a, b = grid((2, 2)), grid((2,))
    cases.append(case("where_scalar_cond", "select", {}, [c, a, b], np.where(c, a, b)))
    c = rng.random((2, 1, 3)) < 0.5
    a, b = ints((4, 1), -9, 9), ints((3,), -9, 9)
    cases.append(case("where_int32_bcast", "select", {}, [c, a, b], np.where(c, a, b)))
    c = np.array([True, False, True])
    a = np.array([NAN, 1.0, INF], F32)
    b = np.array([2.0, NAN, -INF], F32)
    cases.append(case("where_float32_nan", "select", {}, [c, a, b], np.where(c, a, b)))
    c = np.array([[True, False]])
    a, b = np.array([[True], [False]]), np.array([False, False])
    cases.append(case("where_bool", "select", {}, [c, a, b], np.where(c, a, b)))
    c = np.zeros((0, 2), bool)
    a, b = grid((2,)), grid((0, 1))
    cases.append(case("where_empty", "select", {}, [c, a, b], np.where(c, a, b)))
    return cases


# ── cast ────────────────────────────────────────────────────────────────────


def cast_cases():
    cases = []
    fvals = np.array([-2.75, -2.5, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.5, 2.5, 3.75, 100.0], F64)
    uvals = np.array([0.0, 0.25, 0.5, 1.5, 2.75, 100.0, 200.5, 255.0], F64)

    def add(src, dst, x, name=None):
        x = np.asarray(x).astype(src) if src != "bfloat16" else BF16(x)
        xs = f64(x) if src == "bfloat16" else x
        if dst == "bfloat16":
            y = BF16(np.asarray(xs).astype(F32))
        elif isinstance(xs, np.ndarray) and xs.dtype.kind == "f" and np.dtype(dst).kind in "iu":
            y = np.trunc(xs).astype(dst)
        else:
            y = np.asarray(xs).astype(dst)
        nm = name or f"{dtype_name(x)}_to_{dst if isinstance(dst, str) else np.dtype(dst).name}"
        cases.append(case(nm, "cast", {"dtype": dtype_name(y)}, [x], y))

    for src in (F32, F64, F16):
        for dst in (I32, I64, I8, I16):
            add(src, dst, fvals)
        add(src, U8, uvals)
        add(src, U32, uvals)
        add(src, BOOL, np.array([0.0, -0.0, 0.5, -3.0, NAN, INF]))
    for src, dst in [(F32, F64), (F64, F32), (F32, F16), (F16, F32), (F16, F64), (F64, F16)]:
        add(src, dst, np.array([-2.75, 0.1, 1 / 3, 1000.5, 65504.0, -1e-3, NAN, INF, -INF]))
    # rounding to nearest-even when narrowing
    add(F64, F32, np.array([1 + 2**-24, 1 + 3 * 2**-24, 1 - 2**-25, 16777217.0]), "float64_to_float32_rne")
    add(F32, F16, np.array([1 + 2**-11, 1 + 3 * 2**-11, 2049.0, 2051.0, 70000.0, 6e-8]), "float32_to_float16_rne")
    add(F32, "bfloat16", np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, 3.14159, -2.71828, 1e30, NAN]))
    add("bfloat16", F32, np.array([1.0, 1.5, -2.75, 3.140625, 1e30]))
    add("bfloat16", F64, np.array([1.0, 1.5, -2.75, 3.140625]))
    ivals = np.array([-100, -7, -1, 0, 1, 7, 100], I64)
    for src in (I8, I16, I32, I64):
        for dst in (F32, F64, F16, BOOL):
            add(src, dst, ivals)
    for src, dst in [(I32, I64), (I64, I32), (I8, I32), (I32, I8), (I16, I64), (I32, I16)]:
        add(src, dst, ivals)
    add(U8, I32, np.array([0, 1, 128, 255]))
    add(U8, F32, np.array([0, 1, 128, 255]))
    add(U32, I64, np.array([0, 1, 4000000000, 4294967295]))
    add(U32, F64, np.array([0, 1, 4000000000, 4294967295]))
    add(I32, U8, np.array([0, 1, 200, 255]))
    add(I32, U32, np.array([0, 1, 2147483647]))
    # integer narrowing wraps (two's complement, as numpy / Rust `as`)
    add(I32, I8, np.array([300, -129, 128, 255, -1]), "int32_to_int8_wrap")
    add(I32, U8, np.array([-1, 256, 257, -255]), "int32_to_uint8_wrap")
    add(I64, I32, np.array([2**32 + 5, -(2**31) - 1, 2**31]), "int64_to_int32_wrap")
    add(I64, F32, np.array([16777217, 2**40 + 1, -(2**53) - 1]), "int64_to_float32_round")
    for dst in (F32, I32, I64, U8, F16):
        add(BOOL, dst, np.array([True, False, True]))
    add(F32, C64, np.array([1.5, -2.0, 0.0]))
    add(I32, I32, np.array([1, -2, 3]), "int32_to_int32_identity")
    add(F32, F32, np.array([1.5, NAN]), "float32_to_float32_identity")
    return cases


# ── linear algebra ──────────────────────────────────────────────────────────


def linalg_cases():
    cases = []
    shapes = [
        ("2d", (3, 4), (4, 5)),
        ("batched", (2, 3, 4), (2, 4, 5)),
        ("bcast_batch", (2, 1, 3, 4), (3, 4, 2)),
        ("bcast_lhs_2d", (3, 4), (2, 4, 2)),
        ("vec_mat", (4,), (4, 5)),
        ("mat_vec", (3, 4), (4,)),
        ("vec_vec", (4,), (4,)),
        ("batched_vec", (2, 3, 4), (4,)),
        ("vec_batched", (4,), (2, 4, 3)),
        ("k0", (2, 0), (0, 3)),
        ("m0", (0, 4), (4, 3)),
        ("n1_k1", (5, 1), (1, 1)),
        ("larger", (9, 17), (17, 11)),
        ("large", (37, 70), (70, 29)),
        ("large_batched_bcast", (3, 1, 9, 40), (2, 40, 13)),
    ]
    for tag, sa, sb in shapes:
        a, b = randn(sa), randn(sb)
        cases.append(case(f"matmul_float32_{tag}", "matmul", {}, [a, b], like(f64(a) @ f64(b), a), 1e-5, 1e-5))
    for dt, tol in ((F64, (1e-10, 1e-12)), (F16, (5e-3, 5e-3))):
        a, b = grid((2, 3, 4), -2, 2, dtype=dt), grid((4, 3), -2, 2, dtype=dt)
        cases.append(case(f"matmul_{dt.__name__}", "matmul", {}, [a, b], like(f64(a) @ f64(b), a), *tol))
    a, b = BF16(grid((3, 4), -2, 2)), BF16(grid((4, 2), -2, 2))
    cases.append(case("matmul_bfloat16", "matmul", {}, [a, b], like(f64(a) @ f64(b), a), 2e-2, 2e-2))
    for dt in (I32, I64):
        a, b = ints((2, 3, 4), -9, 9, dt), ints((4, 2), -9, 9, dt)
        cases.append(case(f"matmul_{dt.__name__}", "matmul", {}, [a, b], (a @ b).astype(dt)))
    a, b = ints((2, 3), 0, 20, U8), ints((3, 2), 0, 20, U8)
    cases.append(case("matmul_uint8_wraps", "matmul", {}, [a, b], (a @ b).astype(U8)))
    # matmul of a transposed (non-contiguous) operand
    a, b = randn((4, 3)), randn((4, 5))
    steps = [
        {"op": "transpose", "attrs": {"perm": [1, 0]}, "args": ["x0"]},
        {"op": "matmul", "attrs": {}, "args": ["s0", "x1"]},
    ]
    cases.append(case("matmul_transposed_lhs", "graph", {"steps": steps}, [a, b], like(f64(a).T @ f64(b), a), 1e-5, 1e-5))
    a, b = randn((2, 5, 3)), randn((2, 4, 5))
    steps = [
        {"op": "transpose", "attrs": {"perm": [0, 2, 1]}, "args": ["x0"]},
        {"op": "transpose", "attrs": {"perm": [0, 2, 1]}, "args": ["x1"]},
        {"op": "matmul", "attrs": {}, "args": ["s0", "s1"]},
    ]
    y = f64(a).transpose(0, 2, 1) @ f64(b).transpose(0, 2, 1)
    cases.append(case("matmul_both_transposed_batched", "graph", {"steps": steps}, [a, b], like(y, a), 1e-5, 1e-5))

    # dot_general (XLA dims): result = batch, lhs free, rhs free
    def dg(tag, sa, sb, lb, rb, lc, rc, dt=F32):
        a, b = randn(sa, dt), randn(sb, dt)
        la = "abcdefgh"[: len(sa)]
        lbl = list("ijklmnop"[: len(sb)])
        for x, y in zip(lb + lc, rb + rc):
            lbl[y] = la[x]
        lbs = "".join(lbl)
        out = "".join(la[i] for i in lb)
        out += "".join(la[i] for i in range(len(sa)) if i not in lb + lc)
        out += "".join(lbs[j] for j in range(len(sb)) if j not in rb + rc)
        y = np.einsum(f"{la},{lbs}->{out}", f64(a), f64(b))
        attrs = {"lhs_batch": lb, "rhs_batch": rb, "lhs_contract": lc, "rhs_contract": rc}
        cases.append(case(f"dot_general_{tag}", "dot_general", attrs, [a, b], like(y, a), 1e-5, 1e-5))

    dg("bmk_bkn", (2, 3, 4), (2, 4, 5), [0], [0], [2], [1])
    dg("km_nk", (4, 3), (5, 4), [], [], [0], [1])
    dg("two_contract", (3, 2, 4), (4, 2, 5), [], [], [1, 2], [1, 0])
    dg("outer", (3,), (4,), [], [], [], [])
    dg("batch_middle", (3, 2, 4), (4, 2, 5), [1], [1], [2], [0])
    dg("two_batch", (2, 3, 4, 2), (3, 2, 2, 5), [0, 1], [1, 0], [3], [2])
    dg("full_contract", (3, 4), (3, 4), [], [], [0, 1], [0, 1])
    dg("float64", (2, 3, 4), (2, 4, 3), [0], [0], [2], [1], F64)
    return cases


# ── reductions ──────────────────────────────────────────────────────────────

REDUCE = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}


def reduce_ref(fn, x, axes, keep):
    ax = tuple(axes)
    xs = f64(x) if (isinstance(x, BF16) or x.dtype.kind in "fc") else x
    if xs.size == 0 or 0 in [xs.shape[a] for a in ax]:
        # identities: sum 0, prod 1, max -inf / type min, min +inf / type max, mean nan
        shape = list(xs.shape)
        for a in sorted([a % xs.ndim for a in ax], reverse=True):
            if keep:
                shape[a] = 1
            else:
                shape.pop(a)
        if fn in ("max", "min"):
            if xs.dtype.kind == "f":
                v = -np.inf if fn == "max" else np.inf
            else:
                info = np.iinfo(x.dtype)
                v = info.min if fn == "max" else info.max
        else:
            v = {"sum": 0, "prod": 1, "mean": np.nan}[fn]
        return np.full(shape, v)
    if xs.dtype.kind in "iub" and fn in ("sum", "prod"):
        dt = I64 if xs.dtype == BOOL else xs.dtype
        return REDUCE[fn](xs, axis=ax, keepdims=keep, dtype=dt)
    if xs.dtype.kind in "iub" and fn == "mean":
        return np.mean(xs.astype(F64), axis=ax, keepdims=keep)
    return REDUCE[fn](xs, axis=ax, keepdims=keep)


def reduce_out_dtype(fn, name):
    if name == "bool" and fn in ("sum", "prod"):
        return "int64"
    if fn == "mean" and name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint32"):
        return "float32"
    return name


def reduce_cases():
    cases = []
    axes_sets = [([1], False), ([-1], True), ([0, 2], False), ([-1, 0], True), ([0, 1, 2], False), ([0], True)]
    for fn in REDUCE:
        x = grid((2, 3, 4), 0.5, 1.5) if fn == "prod" else grid((2, 3, 4))
        for axes, keep in axes_sets:
            y = to_dtype(reduce_ref(fn, x, axes, keep), "float32")
            tag = "_".join(str(a).replace("-", "m") for a in axes)
            cases.append(
                case(f"{fn}_float32_axes_{tag}_keep{int(keep)}", "reduce", {"fn": fn, "axes": axes, "keep_dim": keep}, [x], y)
            )
        for dt in (F64, F16):
            x = grid((3, 5), 0.5, 1.5, dtype=dt) if fn == "prod" else grid((3, 5), dtype=dt)
            y = to_dtype(reduce_ref(fn, x, [1], False), dt.__name__)
            cases.append(case(f"{fn}_{dt.__name__}", "reduce", {"fn": fn, "axes": [1], "keep_dim": False}, [x], y))
        x = BF16(grid((3, 4), 0.5, 1.5) if fn == "prod" else grid((3, 4)))
        y = to_dtype(reduce_ref(fn, x, [0], False), "bfloat16")
        cases.append(case(f"{fn}_bfloat16", "reduce", {"fn": fn, "axes": [0], "keep_dim": False}, [x], y))
        for dt in (I32, I64, U8):
            lo, hi = (1, 3) if fn == "prod" else ((0, 60) if dt == U8 else (-50, 50))
            x = ints((3, 4), lo, hi, dt)
            out = reduce_out_dtype(fn, np.dtype(dt).name)
            y = to_dtype(reduce_ref(fn, x, [1], False), out)
            cases.append(case(f"{fn}_{np.dtype(dt).name}", "reduce", {"fn": fn, "axes": [1], "keep_dim": False}, [x], y))
        x = rng.random((3, 4)) < 0.5
        if fn in ("sum", "mean", "max", "min", "prod"):
            out = reduce_out_dtype(fn, "bool")
            y = to_dtype(reduce_ref(fn, x, [1], False), out)
            cases.append(case(f"{fn}_bool", "reduce", {"fn": fn, "axes": [1], "keep_dim": False}, [x], y))
        # empty reductions
        for shape, axes in (((0, 3), [0]), ((2, 0), [1]), ((2, 0), [0, 1])):
            x = np.zeros(shape, F32)
            y = to_dtype(reduce_ref(fn, x, axes, False), "float32")
            tag = "x".join(map(str, shape)) + "_axes_" + "_".join(map(str, axes))
            cases.append(case(f"{fn}_float32_empty_{tag}", "reduce", {"fn": fn, "axes": axes, "keep_dim": False}, [x], y))
        x = np.zeros((0, 3), I32)
        out = reduce_out_dtype(fn, "int32")
        y = to_dtype(reduce_ref(fn, x, [0], True), out)
        cases.append(case(f"{fn}_int32_empty_keep", "reduce", {"fn": fn, "axes": [0], "keep_dim": True}, [x], y))
        # NaN propagation
        x = np.array([[1.0, NAN, 3.0], [2.0, 0.5, -1.0], [-INF, 4.0, NAN]], F32)
        y = to_dtype(reduce_ref(fn, x, [1], False), "float32")
        cases.append(case(f"{fn}_float32_nan", "reduce", {"fn": fn, "axes": [1], "keep_dim": False}, [x], y))
    # complex sum / mean / prod
    x = (grid((2, 3)) + 1j * grid((2, 3))).astype(C64)
    for fn in ("sum", "mean", "prod"):
        y = REDUCE[fn](x.astype(np.complex128), axis=1).astype(C64)
        cases.append(case(f"{fn}_complex64", "reduce", {"fn": fn, "axes": [1], "keep_dim": False}, [x], y))
    # int32 sum wraps
    x = np.array([2147483647, 1, 5], I32)
    cases.append(case("sum_int32_wraps", "reduce", {"fn": "sum", "axes": [0], "keep_dim": False}, [x], np.sum(x, dtype=I32)))
    # rank-1 full reduction and no-axis reduction
    x = grid((7,))
    cases.append(case("sum_float32_rank1", "reduce", {"fn": "sum", "axes": [0], "keep_dim": False}, [x], like(np.sum(f64(x)), x)))
    x = grid((2, 3))
    cases.append(case("sum_float32_no_axes", "reduce", {"fn": "sum", "axes": [], "keep_dim": False}, [x], x.copy()))
    x = randn((4, 300))
    cases.append(case("sum_float32_long_row", "reduce", {"fn": "sum", "axes": [1], "keep_dim": False}, [x], like(np.sum(f64(x), 1), x), 1e-5, 1e-4))
    cases.append(case("mean_float32_long_row", "reduce", {"fn": "mean", "axes": [1], "keep_dim": True}, [x], like(np.mean(f64(x), 1, keepdims=True), x), 1e-5, 1e-5))
    # reduction of a transposed (non-contiguous) input
    x = grid((3, 4, 2))
    steps = [
        {"op": "transpose", "attrs": {"perm": [2, 0, 1]}, "args": ["x0"]},
        {"op": "reduce", "attrs": {"fn": "max", "axes": [-1], "keep_dim": False}, "args": ["s0"]},
    ]
    cases.append(case("max_after_transpose", "graph", {"steps": steps}, [x], np.max(x.transpose(2, 0, 1), -1)))

    # argmax / argmin
    for fn, ref in (("argmax", np.argmax), ("argmin", np.argmin)):
        x = grid((3, 6), -2, 2, q=1)  # many ties
        for axis, keep in ((1, False), (0, False), (-1, True), (-2, True)):
            y = ref(x, axis=axis, keepdims=keep).astype(I64)
            cases.append(case(f"{fn}_float32_axis{axis}_keep{int(keep)}".replace("-", "m"), fn, {"axis": axis, "keep_dim": keep}, [x], y))
        x = np.array([[1.0, NAN, 3.0, NAN], [2.0, 5.0, 5.0, -1.0], [-INF, -INF, INF, INF]], F32)
        cases.append(case(f"{fn}_float32_nan_ties", fn, {"axis": 1, "keep_dim": False}, [x], ref(x, axis=1).astype(I64)))
        for dt in (I32, I64, U8, F64, F16):
            x = ints((4, 5), 0, 3, dt) if np.dtype(dt).kind in "iu" else grid((4, 5), -2, 2, q=1, dtype=dt)
            cases.append(case(f"{fn}_{np.dtype(dt).name}", fn, {"axis": 0, "keep_dim": False}, [x], ref(x, axis=0).astype(I64)))
        x = np.array([False, True, True, False])
        cases.append(case(f"{fn}_bool", fn, {"axis": 0, "keep_dim": False}, [x], np.asarray(ref(x, axis=0)).astype(I64)))
        x = grid((2, 3, 4), -2, 2, q=2)
        cases.append(case(f"{fn}_float32_3d_middle", fn, {"axis": 1, "keep_dim": False}, [x], ref(x, axis=1).astype(I64)))

    # cumsum
    def cumsum_ref(x, axis, exclusive, reverse):
        xs = f64(x) if x.dtype.kind == "f" else x
        if reverse:
            xs = np.flip(xs, axis)
        c = np.cumsum(xs, axis=axis, dtype=xs.dtype)
        if exclusive:
            c = c - xs
        if reverse:
            c = np.flip(c, axis)
        return c.astype(x.dtype)

    for dt in (F32, I32):
        x = grid((3, 5), dtype=F32) if dt == F32 else ints((3, 5), -9, 9)
        for axis in (1, 0, -1):
            for excl in (False, True):
                for rev in (False, True):
                    if axis == -1 and (excl or rev):
                        continue
                    y = cumsum_ref(x, axis, excl, rev)
                    nm = f"cumsum_{np.dtype(dt).name}_axis{axis}_excl{int(excl)}_rev{int(rev)}".replace("-", "m")
                    cases.append(case(nm, "cumsum", {"axis": axis, "exclusive": excl, "reverse": rev}, [x], y))
    for dt in (F64, F16, I64):
        x = grid((2, 6), -2, 2, dtype=dt) if np.dtype(dt).kind == "f" else ints((2, 6), -9, 9, dt)
        cases.append(case(f"cumsum_{np.dtype(dt).name}", "cumsum", {"axis": 1, "exclusive": False, "reverse": False}, [x], cumsum_ref(x, 1, False, False)))
    x = grid((2, 3, 4))
    cases.append(case("cumsum_float32_3d_middle_rev", "cumsum", {"axis": 1, "exclusive": False, "reverse": True}, [x], cumsum_ref(x, 1, False, True)))
    x = np.zeros((0, 3), F32)
    cases.append(case("cumsum_float32_empty", "cumsum", {"axis": 0, "exclusive": False, "reverse": False}, [x], x.copy()))
    x = np.array([127, 1, 1], I8)
    cases.append(case("cumsum_int8_wraps", "cumsum", {"axis": 0, "exclusive": False, "reverse": False}, [x], np.cumsum(x, dtype=I8)))
    return cases


# ── movement ────────────────────────────────────────────────────────────────


def python_slice_len(n, start, end, step):
    return len(range(*slice(start, end, step).indices(n)))


def movement_cases():
    cases = []
    # reshape
    for tag, src, dims, dt in [
        ("infer_last", (2, 3, 4), [4, -1], F32),
        ("infer_first", (2, 3, 4), [-1, 2, 3], F32),
        ("flatten", (2, 3), [-1], F32),
        ("to_scalar", (1,), [], F32),
        ("from_scalar", (), [1, 1], F32),
        ("add_unit_dims", (6,), [1, 2, 1, 3], I32),
        ("empty", (0, 3), [3, 0], F32),
        ("bool", (2, 2), [4], BOOL),
        ("int64", (3, 2), [2, 3], I64),
        ("float16", (4,), [2, 2], F16),
    ]:
        x = (rng.random(src) < 0.5) if dt == BOOL else (ints(src, -99, 99, dt) if np.dtype(dt).kind == "i" else grid(src, dtype=dt))
        x = np.asarray(x)
        y = x.reshape([d for d in dims] if dims else ())
        cases.append(case(f"reshape_{tag}", "reshape", {"shape": dims}, [x], y))
    # transpose
    for tag, shape, perm, dt in [
        ("2d", (2, 3), [1, 0], F32),
        ("3d_201", (2, 3, 4), [2, 0, 1], F32),
        ("3d_120", (2, 3, 4), [1, 2, 0], F32),
        ("3d_021", (2, 3, 4), [0, 2, 1], F32),
        ("4d", (2, 3, 4, 5), [3, 1, 0, 2], F32),
        ("unit_dims", (1, 3, 1, 2), [3, 2, 1, 0], F32),
        ("identity", (2, 3), [0, 1], F32),
        ("int64", (2, 3, 2), [2, 1, 0], I64),
        ("float16", (3, 4), [1, 0], F16),
        ("bool", (2, 3), [1, 0], BOOL),
        ("uint8", (2, 5), [1, 0], U8),
        ("complex64", (2, 3), [1, 0], C64),
        ("empty", (0, 2, 3), [2, 0, 1], F32),
    ]:
        if dt == BOOL:
            x = rng.random(shape) < 0.5
        elif dt == C64:
            x = (grid(shape) + 1j * grid(shape)).astype(C64)
        elif np.dtype(dt).kind in "iu":
            x = ints(shape, 0, 99, dt)
        else:
            x = grid(shape, dtype=dt)
        cases.append(case(f"transpose_{tag}", "transpose", {"perm": perm}, [x], np.transpose(x, perm)))
    # python-style slices on one axis
    x = grid((5, 6))
    for tag, axis, start, end, step in [
        ("rows_1_4", 0, 1, 4, 1),
        ("cols_step2", 1, 0, 6, 2),
        ("reverse", 1, -1, -100, -1),
        ("rev_step2", 0, 4, 0, -2),
        ("neg_start", 1, -3, 100, 1),
        ("clamp_end", 0, 2, 100, 1),
        ("empty", 1, 3, 3, 1),
        ("empty_backwards", 0, 1, 4, -1),
        ("step3", 1, 1, 6, 3),
        ("rev_from_mid", 1, 3, -100, -2),
    ]:
        sl = [slice(None)] * 2
        sl[axis] = slice(start, end, step)
        y = x[tuple(sl)]
        assert y.shape[axis] == python_slice_len(x.shape[axis], start, end, step)
        cases.append(case(f"slice_{tag}", "slice", {"axis": axis, "start": start, "end": end, "step": step}, [x], y))
    x = ints((3, 4, 5), -9, 9, I64)
    cases.append(case("slice_int64_3d", "slice", {"axis": 2, "start": 4, "end": 0, "step": -3}, [x], x[:, :, 4:0:-3]))
    x = grid((4, 6))
    cases.append(case("narrow_cols", "narrow", {"axis": 1, "start": 2, "len": 3}, [x], x[:, 2:5]))
    cases.append(case("narrow_neg_axis", "narrow", {"axis": -2, "start": 1, "len": 2}, [x], x[1:3]))
    cases.append(case("narrow_len0", "narrow", {"axis": 0, "start": 4, "len": 0}, [x], x[4:4]))
    # chains through non-contiguous views
    x = grid((3, 4, 5))
    steps = [
        {"op": "transpose", "attrs": {"perm": [2, 0, 1]}, "args": ["x0"]},
        {"op": "slice", "attrs": {"axis": 0, "start": -1, "end": -100, "step": -2}, "args": ["s0"]},
        {"op": "slice", "attrs": {"axis": 2, "start": 1, "end": 4, "step": 2}, "args": ["s1"]},
        {"op": "reshape", "attrs": {"shape": [-1]}, "args": ["s2"]},
    ]
    y = x.transpose(2, 0, 1)[::-2][:, :, 1:4:2].reshape(-1)
    cases.append(case("transpose_slice_reshape", "graph", {"steps": steps}, [x], y))
    x, b = grid((4, 3)), grid((2, 4))
    steps = [
        {"op": "transpose", "attrs": {"perm": [1, 0]}, "args": ["x0"]},
        {"op": "slice", "attrs": {"axis": 0, "start": 0, "end": 3, "step": 2}, "args": ["s0"]},
        {"op": "binary", "attrs": {"fn": "mul"}, "args": ["s1", "x1"]},
    ]
    y = x.T[0:3:2] * b
    cases.append(case("transpose_slice_mul", "graph", {"steps": steps}, [x, b], y))
    x = grid((2, 3, 4))
    steps = [
        {"op": "transpose", "attrs": {"perm": [0, 2, 1]}, "args": ["x0"]},
        {"op": "cumsum", "attrs": {"axis": 1, "exclusive": False, "reverse": False}, "args": ["s0"]},
    ]
    y = like(np.cumsum(f64(x).transpose(0, 2, 1), 1), x)
    cases.append(case("transpose_cumsum", "graph", {"steps": steps}, [x], y))
    x = grid((3, 4))
    steps = [
        {"op": "slice", "attrs": {"axis": 1, "start": -1, "end": -100, "step": -1}, "args": ["x0"]},
        {"op": "unary", "attrs": {"fn": "exp"}, "args": ["s0"]},
    ]
    cases.append(case("reversed_exp", "graph", {"steps": steps}, [x], like(np.exp(f64(x)[:, ::-1]), x)))
    a, b = grid((3, 2)), grid((2, 4))
    steps = [
        {"op": "transpose", "attrs": {"perm": [1, 0]}, "args": ["x0"]},
        {"op": "concat", "attrs": {"axis": 1}, "args": ["s0", "x1"]},
        {"op": "pad", "attrs": {"pads": [[1, 0], [0, 2]], "mode": "reflect"}, "args": ["s1"]},
    ]
    y = np.pad(np.concatenate([a.T, b], 1), [(1, 0), (0, 2)], mode="reflect")
    cases.append(case("transpose_concat_pad", "graph", {"steps": steps}, [a, b], y, 0.0, 0.0))
    x = grid((3, 5, 7, 9))
    cases.append(case("transpose_large_4d", "transpose", {"perm": [2, 0, 3, 1]}, [x], np.transpose(x, (2, 0, 3, 1))))
    # concat
    a, b, c = grid((2, 3)), grid((1, 3)), grid((3, 3))
    cases.append(case("concat_axis0_3", "concat", {"axis": 0}, [a, b, c], np.concatenate([a, b, c], 0)))
    a, b, c = grid((2, 1)), grid((2, 0)), grid((2, 2))
    cases.append(case("concat_axis1_with_empty", "concat", {"axis": 1}, [a, b, c], np.concatenate([a, b, c], 1)))
    a, b = grid((2, 3, 2)), grid((2, 3, 1))
    cases.append(case("concat_neg_axis", "concat", {"axis": -1}, [a, b], np.concatenate([a, b], -1)))
    a, b = grid((2, 1, 2)), grid((2, 2, 2))
    cases.append(case("concat_middle_axis", "concat", {"axis": 1}, [a, b], np.concatenate([a, b], 1)))
    a, b = ints((3,), 0, 9), ints((4,), 0, 9)
    cases.append(case("concat_int32_rank1", "concat", {"axis": 0}, [a, b], np.concatenate([a, b])))
    a, b = rng.random((2, 2)) < 0.5, rng.random((2, 1)) < 0.5
    cases.append(case("concat_bool", "concat", {"axis": 1}, [a, b], np.concatenate([a, b], 1)))
    a = grid((2, 2))
    cases.append(case("concat_single", "concat", {"axis": 0}, [a], a.copy()))
    a, b = grid((1, 2), dtype=F16), grid((2, 2), dtype=F16)
    cases.append(case("concat_float16", "concat", {"axis": 0}, [a, b], np.concatenate([a, b])))
    # pad
    for tag, shape, pads, mode, value, dt in [
        ("constant_zero", (2, 3), [[1, 2], [0, 1]], "constant", 0.0, F32),
        ("constant_value", (2, 3), [[0, 0], [2, 1]], "constant", -1.5, F32),
        ("reflect", (4, 5), [[1, 2], [3, 1]], "reflect", None, F32),
        ("reflect_rank1", (5,), [[4, 2]], "reflect", None, F32),
        ("edge", (3, 4), [[2, 1], [1, 3]], "edge", None, F32),
        ("edge_rank1", (2,), [[3, 0]], "edge", None, F32),
        ("constant_3d", (2, 2, 3), [[0, 0], [1, 0], [0, 2]], "constant", 2.0, F32),
        ("int32_constant", (2, 2), [[1, 1], [1, 1]], "constant", 7.0, I32),
        ("int32_edge", (2, 3), [[1, 0], [0, 2]], "edge", None, I32),
        ("float64_reflect", (3, 3), [[2, 2], [1, 1]], "reflect", None, F64),
        ("empty_constant", (0, 2), [[1, 1], [0, 0]], "constant", 3.0, F32),
        ("no_pad", (2, 2), [[0, 0], [0, 0]], "constant", 1.0, F32),
    ]:
        x = ints(shape, -9, 9, dt) if np.dtype(dt).kind == "i" else grid(shape, dtype=dt)
        kw = {"constant_values": value} if mode == "constant" else {}
        y = np.pad(x, [tuple(p) for p in pads], mode=mode, **kw)
        attrs = {"pads": pads, "mode": mode}
        if mode == "constant":
            attrs["value"] = value
        cases.append(case(f"pad_{tag}", "pad", attrs, [x], y))
    # broadcast_to
    for tag, shape, target, dt in [
        ("col_to_3d", (3, 1), [2, 3, 4], F32),
        ("scalar", (), [2, 2], F32),
        ("to_empty", (1, 3), [0, 3], F32),
        ("row", (4,), [2, 4], F32),
        ("same", (2, 3), [2, 3], F32),
        ("bool", (1, 2), [3, 2], BOOL),
        ("int64", (2, 1, 1), [2, 2, 3], I64),
    ]:
        x = (rng.random(shape) < 0.5) if dt == BOOL else (ints(shape, -9, 9, dt) if np.dtype(dt).kind == "i" else grid(shape))
        x = np.asarray(x)
        cases.append(case(f"broadcast_{tag}", "broadcast", {"shape": target}, [x], np.broadcast_to(x, target).copy()))
    return cases


# ── indexing ────────────────────────────────────────────────────────────────


def gather_elements_ref(x, idx, axis):
    out = np.empty(idx.shape, x.dtype)
    for pos in np.ndindex(*idx.shape):
        src = list(pos)
        src[axis] = idx[pos]
        out[pos] = x[tuple(src)]
    return out


def scatter_add_ref(base, idx, upd, axis):
    out = base.copy()
    for pos in np.ndindex(*idx.shape):
        dst = list(pos)
        dst[axis] = idx[pos]
        out[tuple(dst)] += upd[pos]
    return out


def topk_ref(x, k, axis, largest):
    key = -f64(x) if largest else f64(x)
    order = np.argsort(key, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    vals = np.take_along_axis(x, idx, axis=axis)
    return vals, idx.astype(I64)


def indexing_cases():
    cases = []
    # gather = numpy take
    x = grid((4, 3))
    for tag, idx, axis in [
        ("axis0", np.array([2, 0, 3], I64), 0),
        ("axis0_negative", np.array([-1, 0, -4, 1], I64), 0),
        ("axis1_2d_idx", np.array([[0, 2], [1, 1]], I32), 1),
        ("axis_neg1", np.array([2, -3], I64), -1),
        ("scalar_idx", np.array(1, I64), 0),
        ("duplicates", np.array([1, 1, 1, 3, 3], I32), 0),
        ("empty_idx", np.zeros((0,), I64), 0),
    ]:
        cases.append(case(f"gather_{tag}", "gather", {"axis": axis}, [x, idx], np.take(x, idx, axis=axis)))
    x = ints((2, 5, 3), -9, 9, I32)
    idx = np.array([[4, 0], [-1, 2]], I64)
    cases.append(case("gather_int32_3d_middle", "gather", {"axis": 1}, [x, idx], np.take(x, idx, axis=1)))
    x = grid((6,), dtype=F16)
    idx = np.array([5, 0, 2], U8)
    cases.append(case("gather_float16_uint8_idx", "gather", {"axis": 0}, [x, idx], np.take(x, idx)))
    x = rng.random((3, 2)) < 0.5
    idx = np.array([2, 0], I64)
    cases.append(case("gather_bool", "gather", {"axis": 0}, [x, idx], np.take(x, idx, axis=0)))
    x = grid((10, 4))  # embedding lookup
    idx = ints((2, 3), 0, 9, I64)
    cases.append(case("gather_embedding", "gather", {"axis": 0}, [x, idx], np.take(x, idx, axis=0)))
    # gather_elements = take_along_axis (index dims may be smaller off the axis)
    x = grid((3, 4))
    for tag, idx, axis in [
        ("axis0", ints((3, 4), 0, 2, I64), 0),
        ("axis1", ints((3, 4), 0, 3, I64), 1),
        ("axis1_wider", ints((3, 6), 0, 3, I64), 1),
        ("smaller_off_axis", ints((2, 3), 0, 3, I64), 1),
        ("axis_neg1_int32_idx", ints((3, 2), 0, 3, I32), -1),
    ]:
        ax = axis % 2
        cases.append(case(f"gather_elements_{tag}", "gather_elements", {"axis": axis}, [x, idx], gather_elements_ref(x, idx, ax)))
    x = ints((2, 3, 4), -9, 9, I64)
    idx = ints((2, 2, 4), 0, 2, I64)
    cases.append(case("gather_elements_int64_3d", "gather_elements", {"axis": 1}, [x, idx], gather_elements_ref(x, idx, 1)))
    # scatter_add (torch semantics)
    for tag, bshape, ishape, axis, dt in [
        ("axis0_dups", (4, 3), (5, 3), 0, F32),
        ("axis1", (3, 4), (3, 2), 1, F32),
        ("smaller_off_axis", (4, 4), (2, 3), 0, F32),
        ("int32", (3, 3), (4, 3), 0, I32),
        ("3d_axis2", (2, 3, 4), (2, 3, 5), 2, F32),
        ("float64_neg_axis", (3, 4), (3, 6), -1, F64),
    ]:
        ax = axis % len(bshape)
        base = ints(bshape, -9, 9, dt) if dt == I32 else grid(bshape, dtype=dt)
        idx = ints(ishape, 0, bshape[ax] - 1, I64)
        upd = ints(ishape, -9, 9, dt) if dt == I32 else grid(ishape, dtype=dt)
        y = scatter_add_ref(base.astype(F64) if dt != I32 else base, idx, upd, ax).astype(dt)
        cases.append(case(f"scatter_add_{tag}", "scatter_add", {"axis": axis}, [base, idx, upd], y))
    # top-k
    for tag, x, k, axis, largest in [
        ("largest", grid((3, 6)), 3, -1, True),
        ("smallest", grid((3, 6)), 2, -1, False),
        ("ties_largest", grid((2, 8), -2, 2, q=1), 4, 1, True),
        ("ties_smallest", grid((2, 8), -2, 2, q=1), 5, 1, False),
        ("axis0", grid((5, 3)), 2, 0, True),
        ("k_eq_n", grid((2, 5), -2, 2, q=2), 5, 1, True),
        ("k1", grid((4, 7)), 1, 1, False),
        ("int32", ints((2, 6), -3, 3, I32), 3, 1, True),
        ("float64", grid((3, 4), dtype=F64), 2, 1, True),
        ("float16", grid((3, 4), dtype=F16), 2, 1, False),
        ("rank1", grid((9,), -2, 2, q=2), 4, 0, True),
        ("3d_middle", grid((2, 5, 3), -2, 2, q=2), 3, 1, True),
    ]:
        vals, idx = topk_ref(x, k, axis % x.ndim, largest)
        cases.append(case(f"topk_{tag}", "topk", {"k": k, "axis": axis, "largest": largest}, [x], [vals, idx]))
    # iota / arange
    for tag, shape, axis, start, step, dt in [
        ("float32_axis0", [3, 4], 0, 0.0, 1.0, F32),
        ("float32_axis1_frac", [2, 5], 1, -1.0, 0.25, F32),
        ("int64", [6], 0, 3.0, 2.0, I64),
        ("int32_neg_step", [2, 4], 1, 10.0, -3.0, I32),
        ("float64", [4], 0, 0.5, 0.1, F64),
        ("float16", [2, 3], 1, 0.0, 0.5, F16),
        ("uint8", [5], 0, 250.0, 1.0, U8),
        ("3d_middle", [2, 3, 2], 1, 1.0, 1.0, F32),
    ]:
        ramp = start + step * np.arange(shape[axis], dtype=F64)
        bshape = [1] * len(shape)
        bshape[axis] = shape[axis]
        y = np.broadcast_to(ramp.reshape(bshape), shape).astype(dt)
        cases.append(case(f"iota_{tag}", "iota", {"shape": shape, "axis": axis, "start": start, "step": step, "dtype": np.dtype(dt).name}, [], y))
    for tag, start, stop, step, dt in [
        ("int64", 0.0, 5.0, 1.0, I64),
        ("float32_frac", 0.0, 1.0, 0.25, F32),
        ("float32_neg", 2.0, -1.0, -0.5, F32),
        ("int32_step3", 1.0, 11.0, 3.0, I32),
        ("empty", 3.0, 3.0, 1.0, I64),
    ]:
        y = np.arange(start, stop, step, dtype=F64).astype(dt)
        cases.append(case(f"arange_{tag}", "arange", {"start": start, "stop": stop, "step": step, "dtype": np.dtype(dt).name}, [], y))
    return cases


# ── normalisation ───────────────────────────────────────────────────────────


def softmax_ref(x, axis, log=False):
    m = np.max(x, axis=axis, keepdims=True)
    s = x - m
    e = np.exp(s)
    d = np.sum(e, axis=axis, keepdims=True)
    return s - np.log(d) if log else e / d


def layer_norm_ref(x, axis, gamma, beta, eps):
    axes = tuple(range(axis, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y


def norm_cases():
    cases = []
    f16_tol = (1e-2, 1e-2)
    for op, log in (("softmax", False), ("log_softmax", True)):
        for tag, x, axis in [
            ("last", randn((3, 5)), -1),
            ("axis0", randn((4, 3)), 0),
            ("middle", randn((2, 3, 4)), 1),
            ("large_values", (randn((2, 4)) + np.float32(1000)).astype(F32), -1),
            ("with_neg_inf", np.array([[0.5, -INF, 1.0, -INF], [-INF, 2.0, -INF, -INF]], F32), -1),
            ("rank1", randn((7,)), 0),
            ("long_row", randn((2, 257)), -1),
            ("float64", randn((3, 5), F64), -1),
        ]:
            y = like(softmax_ref(f64(x), axis, log), x)
            tol = (1e-5, 1e-5) if x.dtype == F32 else (1e-10, 1e-12)
            cases.append(case(f"{op}_{tag}", op, {"axis": axis}, [x], y, *tol))
        x = randn((3, 6), F16, q=64)
        cases.append(case(f"{op}_float16", op, {"axis": -1}, [x], like(softmax_ref(f64(x), -1, log), x), *f16_tol))
        x = BF16(randn((2, 6), q=64))
        cases.append(case(f"{op}_bfloat16", op, {"axis": -1}, [x], like(softmax_ref(f64(x), -1, log), x), 3e-2, 3e-2))
    # layer norm
    for tag, shape, axis, affine, dt, eps in [
        ("affine", (4, 8), -1, "gb", F32, 1e-5),
        ("no_affine", (4, 8), -1, "", F32, 1e-5),
        ("gamma_only", (3, 6), -1, "g", F32, 1e-5),
        ("two_axes", (2, 3, 4), 1, "gb", F32, 1e-5),
        ("two_axes_no_affine", (2, 3, 4), 1, "", F32, 1e-6),
        ("all_axes", (3, 4), 0, "gb", F32, 1e-5),
        ("big_eps", (2, 5), -1, "", F32, 0.5),
        ("float64", (3, 8), -1, "gb", F64, 1e-5),
        ("float16", (3, 8), -1, "gb", F16, 1e-5),
        ("offset_mean", (2, 16), -1, "", F32, 1e-5),
    ]:
        x = randn(shape, dt, q=64)
        if tag == "offset_mean":
            x = (x + np.float32(100)).astype(dt)
        tail = shape[axis % len(shape):]
        gamma = (randn(tail, dt, q=64) + dt(1)).astype(dt) if "g" in affine else None
        beta = randn(tail, dt, q=64) if "b" in affine else None
        y = like(layer_norm_ref(f64(x), axis % len(shape), None if gamma is None else f64(gamma), None if beta is None else f64(beta), eps), x)
        ins = [x] + [t for t in (gamma, beta) if t is not None]
        tol = {F32: (1e-4, 1e-4), F64: (1e-10, 1e-10), F16: f16_tol}[dt]
        if tag == "offset_mean":
            tol = (2e-3, 2e-3)
        cases.append(case(f"layer_norm_{tag}", "layer_norm", {"axis": axis, "eps": eps}, ins, y, *tol))
    # rms norm
    for tag, shape, with_gamma, dt, eps in [
        ("gamma", (3, 8), True, F32, 1e-6),
        ("no_gamma", (3, 8), False, F32, 1e-6),
        ("3d", (2, 2, 6), True, F32, 1e-5),
        ("rank1", (5,), False, F32, 1e-6),
        ("big_eps", (2, 4), False, F32, 1.0),
        ("float64", (2, 8), True, F64, 1e-6),
        ("float16", (2, 8), True, F16, 1e-5),
    ]:
        x = randn(shape, dt, q=64)
        gamma = (randn(shape[-1:], dt, q=64) + dt(1)).astype(dt) if with_gamma else None
        xf = f64(x)
        y = xf / np.sqrt((xf * xf).mean(-1, keepdims=True) + eps)
        if gamma is not None:
            y = y * f64(gamma)
        ins = [x] + ([gamma] if gamma is not None else [])
        tol = {F32: (1e-4, 1e-4), F64: (1e-10, 1e-10), F16: f16_tol}[dt]
        cases.append(case(f"rms_norm_{tag}", "rms_norm", {"eps": eps}, ins, like(y, x), *tol))
    # group norm
    for tag, shape, groups, affine, dt in [
        ("affine", (2, 6, 3, 3), 3, True, F32),
        ("one_group", (2, 4, 2, 3), 1, True, F32),
        ("instance", (1, 4, 3, 3), 4, False, F32),
        ("no_affine", (2, 6, 2, 2), 2, False, F32),
        ("1d_spatial", (2, 4, 5), 2, True, F32),
        ("no_spatial", (3, 4), 2, True, F32),
        ("float64", (2, 4, 3), 2, True, F64),
    ]:
        eps = 1e-5
        x = randn(shape, dt, q=64)
        n, c = shape[:2]
        xf = f64(x).reshape(n, groups, -1)
        mu = xf.mean(-1, keepdims=True)
        var = ((xf - mu) ** 2).mean(-1, keepdims=True)
        y = ((xf - mu) / np.sqrt(var + eps)).reshape(shape)
        ins = [x]
        if affine:
            gamma = (randn((c,), dt, q=64) + dt(1)).astype(dt)
            beta = randn((c,), dt, q=64)
            pshape = (c,) + (1,) * (len(shape) - 2)
            y = y * f64(gamma).reshape(pshape) + f64(beta).reshape(pshape)
            ins += [gamma, beta]
        tol = (1e-4, 1e-4) if dt == F32 else (1e-10, 1e-10)
        cases.append(case(f"group_norm_{tag}", "group_norm", {"groups": groups, "eps": eps}, ins, like(y, x), *tol))
    return cases


# ── attention / rope ────────────────────────────────────────────────────────


def attention_ref(q, k, v, mask, window=None, extra=None, scale=None, softcap=None):
    q, k, v = f64(q), f64(k), f64(v)
    if q.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        k = np.repeat(k, rep, axis=-3)
        v = np.repeat(v, rep, axis=-3)
    d = q.shape[-1]
    s = q @ np.swapaxes(k, -1, -2)
    s = s * (1.0 / math.sqrt(d) if scale is None else scale)
    if softcap is not None:
        s = softcap * np.tanh(s / softcap)
    sq, sk = q.shape[-2], k.shape[-2]
    i = np.arange(sq)[:, None]
    j = np.arange(sk)[None, :]
    off = sk - sq
    keep = None
    if mask == "causal":
        keep = j <= i + off
    elif mask == "sliding_window":
        keep = (j <= i + off) & (j > i + off - window)
    elif mask == "custom":
        keep = extra
    if keep is not None:
        s = np.where(keep, s, -np.inf)
    if mask == "bias":
        s = s + f64(extra)
    return softmax_ref(s, -1) @ v


def attention_mask_input(mask, shape, dt):
    """The mask input of a custom (bool keep) or bias mask, else None."""
    if mask == "custom":
        keep = rng.random(shape) < 0.6
        keep[..., 0] = True  # no fully-masked row
        return keep
    if mask == "bias":
        return randn(shape, dt, q=64)
    return None


def attention_cases():
    cases = []
    for tag, qs, ks, vd, mask, window, extra_shape, scale, softcap, dt in [
        ("none", (1, 2, 4, 8), (1, 2, 4, 8), 8, "none", None, None, None, None, F32),
        ("none_cross_len", (2, 2, 3, 4), (2, 2, 5, 4), 6, "none", None, None, None, None, F32),
        ("causal_square", (1, 2, 5, 4), (1, 2, 5, 4), 4, "causal", None, None, None, None, F32),
        ("causal_kv_cache", (1, 2, 2, 4), (1, 2, 6, 4), 4, "causal", None, None, None, None, F32),
        ("causal_single_query", (2, 1, 1, 8), (2, 1, 7, 8), 8, "causal", None, None, None, None, F32),
        ("sliding_window_2", (1, 2, 6, 4), (1, 2, 6, 4), 4, "sliding_window", 2, None, None, None, F32),
        ("sliding_window_kv_cache", (1, 1, 3, 4), (1, 1, 7, 4), 4, "sliding_window", 3, None, None, None, F32),
        ("sliding_window_1", (1, 1, 4, 4), (1, 1, 4, 4), 4, "sliding_window", 1, None, None, None, F32),
        ("custom_2d_mask", (1, 2, 4, 4), (1, 2, 5, 4), 4, "custom", None, (4, 5), None, None, F32),
        ("custom_4d_mask", (2, 2, 3, 4), (2, 2, 3, 4), 4, "custom", None, (2, 1, 3, 3), None, None, F32),
        ("bias_3d", (1, 2, 4, 4), (1, 2, 4, 4), 4, "bias", None, (2, 4, 4), None, None, F32),
        ("bias_full", (2, 2, 3, 4), (2, 2, 5, 4), 4, "bias", None, (2, 2, 3, 5), None, None, F32),
        ("scale", (1, 2, 4, 8), (1, 2, 4, 8), 8, "none", None, None, 0.5, None, F32),
        ("softcap", (1, 2, 4, 8), (1, 2, 4, 8), 8, "none", None, None, 1.0, 2.0, F32),
        ("softcap_causal", (1, 2, 4, 8), (1, 2, 4, 8), 8, "causal", None, None, None, 1.5, F32),
        ("gqa", (1, 4, 3, 4), (1, 2, 3, 4), 4, "none", None, None, None, None, F32),
        ("gqa_causal", (2, 6, 4, 4), (2, 2, 4, 4), 4, "causal", None, None, None, None, F32),
        ("mqa_kv_cache", (1, 4, 2, 4), (1, 1, 5, 4), 6, "causal", None, None, None, None, F32),
        ("rank3", (2, 4, 4), (2, 4, 4), 4, "causal", None, None, None, None, F32),
        ("rank3_gqa", (4, 3, 4), (2, 3, 4), 4, "none", None, None, None, None, F32),
        ("rank2", (5, 4), (6, 4), 3, "none", None, None, None, None, F32),
        ("rank2_causal", (3, 4), (3, 4), 4, "causal", None, None, None, None, F32),
        ("float64", (1, 2, 4, 4), (1, 2, 4, 4), 4, "causal", None, None, None, None, F64),
        ("float16", (1, 2, 4, 8), (1, 2, 4, 8), 8, "causal", None, None, None, None, F16),
        ("long_kv", (1, 1, 2, 16), (1, 1, 40, 16), 16, "causal", None, None, None, None, F32),
        ("large_gqa_causal", (1, 4, 33, 32), (1, 2, 33, 32), 32, "causal", None, None, None, None, F32),
        ("large_sliding_window", (1, 2, 20, 16), (1, 2, 20, 16), 16, "sliding_window", 5, None, None, None, F32),
    ]:
        q = randn(qs, dt, q=64)
        k = randn(ks, dt, q=64)
        vs = ks[:-1] + (vd,)
        v = randn(vs, dt, q=64)
        extra = attention_mask_input(mask, extra_shape, dt)
        ins = [q, k, v] + ([] if extra is None else [extra])
        y = like(attention_ref(q, k, v, mask, window, extra, scale, softcap), q)
        attrs = {"mask": mask}
        if window is not None:
            attrs["window"] = window
        if scale is not None:
            attrs["scale"] = scale
        if softcap is not None:
            attrs["softcap"] = softcap
        tol = {F32: (1e-4, 1e-5), F64: (1e-10, 1e-12), F16: (1e-2, 1e-2)}[dt]
        cases.append(case(f"attention_{tag}", "attention", attrs, ins, y, *tol))
    # rope
    for tag, xs, interleaved, dt in [
        ("half_4d", (1, 2, 5, 8), False, F32),
        ("interleaved_4d", (1, 2, 5, 8), True, F32),
        ("half_rank2", (4, 6), False, F32),
        ("interleaved_rank2", (4, 6), True, F32),
        ("half_rank3", (3, 4, 4), False, F32),
        ("interleaved_rank3", (3, 4, 4), True, F32),
        ("half_float64", (2, 3, 4), False, F64),
        ("half_float16", (2, 3, 8), False, F16),
    ]:
        x = randn(xs, dt, q=64)
        s, d = xs[-2], xs[-1]
        inv = 1.0 / (10000.0 ** (np.arange(0, d, 2) / d))
        ang = np.arange(s)[:, None] * inv[None, :]
        cos = np.cos(ang).astype(dt)
        sin = np.sin(ang).astype(dt)
        xf, c, sn = f64(x), f64(cos), f64(sin)
        if interleaved:
            x1, x2 = xf[..., 0::2], xf[..., 1::2]
            y = np.empty_like(xf)
            y[..., 0::2] = x1 * c - x2 * sn
            y[..., 1::2] = x2 * c + x1 * sn
        else:
            x1, x2 = xf[..., : d // 2], xf[..., d // 2 :]
            y = np.concatenate([x1 * c - x2 * sn, x2 * c + x1 * sn], -1)
        tol = {F32: (1e-5, 1e-6), F64: (1e-10, 1e-12), F16: (1e-2, 1e-2)}[dt]
        cases.append(case(f"rope_{tag}", "rope", {"interleaved": interleaved}, [x, cos, sin], like(y, x), *tol))
    return cases + seq_major_attention_cases()


def seq_major_attention_cases():
    """Attention with layout=seq_major: q [.., Sq, H, D], k / v [.., Sk, Hkv, D],
    output [.., Sq, H, Dv]; the mask still broadcasts to the scores
    [.., H, Sq, Sk]. The reference swaps the sequence and heads axes around
    attention_ref. Drawn from their own generator so the cases above keep
    their values."""
    global rng
    saved, rng = rng, np.random.default_rng(SEED + 17)
    try:
        cases = []
        swap = lambda t: np.swapaxes(t, -3, -2)
        for tag, qs, ks, vd, mask, extra_shape, dt in [
            ("none", (1, 4, 2, 8), (1, 4, 2, 8), 8, "none", None, F32),
            ("cross_len", (2, 3, 2, 4), (2, 5, 2, 4), 6, "none", None, F32),
            ("causal_kv_cache", (1, 2, 2, 4), (1, 6, 2, 4), 4, "causal", None, F32),
            ("bias_padding", (2, 5, 3, 4), (2, 5, 3, 4), 4, "bias", (2, 1, 1, 5), F32),
            ("custom_mask", (1, 4, 2, 4), (1, 5, 2, 4), 4, "custom", (4, 5), F32),
            ("gqa", (1, 3, 4, 4), (1, 3, 2, 4), 4, "causal", None, F32),
            ("rank3", (4, 3, 4), (6, 3, 4), 5, "none", None, F32),
            ("float64", (1, 4, 2, 4), (1, 4, 2, 4), 4, "causal", None, F64),
            # Past the work from which the CPU splits heads over threads
            # (2 x 4 heads of 16 x 16 x 32), with a padding bias.
            ("threaded_heads", (2, 16, 4, 16), (2, 16, 4, 16), 16, "bias", (2, 1, 1, 16), F32),
        ]:
            q = randn(qs, dt, q=64)
            k = randn(ks, dt, q=64)
            v = randn(ks[:-1] + (vd,), dt, q=64)
            extra = attention_mask_input(mask, extra_shape, dt)
            ins = [q, k, v] + ([] if extra is None else [extra])
            y = swap(attention_ref(swap(q), swap(k), swap(v), mask, None, extra))
            tol = {F32: (1e-4, 1e-5), F64: (1e-10, 1e-12)}[dt]
            attrs = {"mask": mask, "layout": "seq_major"}
            cases.append(case(f"attention_seq_major_{tag}", "attention", attrs, ins, like(y, q), *tol))
        return cases
    finally:
        rng = saved


# ── convolution / pooling ───────────────────────────────────────────────────


def conv_ref(x, w, b, stride, padding, dilation, groups):
    x, w = f64(x), f64(w)
    nsp = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in padding])
    c, o = x.shape[1], w.shape[0]
    cg, og = c // groups, o // groups
    ks = w.shape[2:]
    osp = [(xp.shape[2 + i] - dilation[i] * (ks[i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]
    out = np.zeros((x.shape[0], o, *osp))
    for g in range(groups):
        xg = xp[:, g * cg : (g + 1) * cg]
        wg = w[g * og : (g + 1) * og]
        for kidx in np.ndindex(*ks):
            sl = tuple(
                slice(kidx[i] * dilation[i], kidx[i] * dilation[i] + stride[i] * (osp[i] - 1) + 1, stride[i])
                for i in range(nsp)
            )
            patch = xg[(slice(None), slice(None)) + sl]
            wk = wg[(slice(None), slice(None)) + kidx]
            out[:, g * og : (g + 1) * og] += np.einsum("nc...,oc->no...", patch, wk)
    if b is not None:
        out += f64(b).reshape((1, -1) + (1,) * nsp)
    return out


def conv_transpose_ref(x, w, b, stride, padding, dilation, output_padding, groups):
    x, w = f64(x), f64(w)
    nsp = x.ndim - 2
    n, c = x.shape[:2]
    og = w.shape[1]
    cg = c // groups
    o = og * groups
    ks = w.shape[2:]
    sp = x.shape[2:]
    full = [(sp[i] - 1) * stride[i] + dilation[i] * (ks[i] - 1) + output_padding[i] + 1 for i in range(nsp)]
    out = np.zeros((n, o, *full))
    for g in range(groups):
        xg = x[:, g * cg : (g + 1) * cg]
        for kidx in np.ndindex(*ks):
            contrib = np.einsum("nc...,co->no...", xg, w[(slice(g * cg, (g + 1) * cg), slice(None)) + kidx])
            sl = tuple(
                slice(kidx[i] * dilation[i], kidx[i] * dilation[i] + stride[i] * (sp[i] - 1) + 1, stride[i])
                for i in range(nsp)
            )
            out[(slice(None), slice(g * og, (g + 1) * og)) + sl] += contrib
    crop = tuple(slice(padding[i][0], full[i] - padding[i][1]) for i in range(nsp))
    out = out[(slice(None), slice(None)) + crop]
    if b is not None:
        out = out + f64(b).reshape((1, -1) + (1,) * nsp)
    return out


def pool_ref(x, kind, kernel, stride, padding, dilation, count_include_pad):
    is_float = x.dtype.kind == "f"
    xs = f64(x) if is_float else x.astype(np.int64)
    nsp = x.ndim - 2
    if kind == "max":
        fill = -np.inf if is_float else np.iinfo(x.dtype).min
    else:
        fill = 0.0
    pw = [(0, 0), (0, 0)] + [tuple(p) for p in padding]
    xp = np.pad(xs, pw, constant_values=fill)
    valid = np.pad(np.ones(x.shape), pw)
    osp = [(xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]
    acc = None
    cnt = np.zeros((x.shape[0], x.shape[1], *osp))
    for kidx in np.ndindex(*kernel):
        sl = (slice(None), slice(None)) + tuple(
            slice(kidx[i] * dilation[i], kidx[i] * dilation[i] + stride[i] * (osp[i] - 1) + 1, stride[i])
            for i in range(nsp)
        )
        patch = xp[sl]
        cnt += valid[sl]
        if acc is None:
            acc = patch.copy()
        elif kind == "max":
            acc = np.maximum(acc, patch)
        else:
            acc = acc + patch
    if kind == "avg":
        acc = acc / (float(np.prod(kernel)) if count_include_pad else cnt)
    return acc


def conv_cases():
    cases = []
    for tag, xs, ws, stride, padding, dilation, groups, bias, dt in [
        ("1d_basic", (2, 3, 10), (4, 3, 3), [1], [[0, 0]], [1], 1, False, F32),
        ("1d_stride2_pad1_bias", (1, 3, 9), (2, 3, 3), [2], [[1, 1]], [1], 1, True, F32),
        ("1d_dilation2", (1, 2, 11), (3, 2, 3), [1], [[2, 2]], [2], 1, False, F32),
        ("1d_groups3", (2, 3, 8), (6, 1, 3), [1], [[1, 1]], [1], 3, True, F32),
        ("1d_asym_pad_causal", (1, 2, 7), (2, 2, 3), [1], [[2, 0]], [1], 1, False, F32),
        ("1d_kernel1", (2, 4, 5), (3, 4, 1), [1], [[0, 0]], [1], 1, True, F32),
        ("1d_stride_gt_kernel", (1, 2, 12), (2, 2, 2), [3], [[0, 0]], [1], 1, False, F32),
        ("2d_pad1_bias", (1, 2, 6, 6), (3, 2, 3, 3), [1, 1], [[1, 1], [1, 1]], [1, 1], 1, True, F32),
        ("2d_stride2", (2, 3, 7, 7), (4, 3, 3, 3), [2, 2], [[0, 0], [0, 0]], [1, 1], 1, False, F32),
        ("2d_dilation2", (1, 2, 8, 8), (2, 2, 3, 3), [1, 1], [[2, 2], [2, 2]], [2, 2], 1, True, F32),
        ("2d_groups2", (1, 4, 5, 5), (4, 2, 3, 3), [1, 1], [[1, 1], [1, 1]], [1, 1], 2, False, F32),
        ("2d_depthwise", (2, 3, 5, 6), (3, 1, 3, 3), [1, 1], [[1, 1], [1, 1]], [1, 1], 3, True, F32),
        ("2d_depthwise_mult2", (1, 2, 4, 4), (4, 1, 2, 2), [1, 1], [[0, 0], [0, 0]], [1, 1], 2, False, F32),
        ("2d_rect_kernel_stride", (1, 3, 6, 7), (2, 3, 2, 3), [2, 1], [[1, 1], [0, 0]], [1, 1], 1, True, F32),
        ("2d_asym_padding", (1, 2, 5, 5), (2, 2, 3, 3), [1, 1], [[1, 0], [2, 1]], [1, 1], 1, False, F32),
        ("2d_mixed", (1, 4, 9, 8), (6, 2, 3, 2), [2, 3], [[1, 2], [0, 1]], [2, 1], 2, True, F32),
        ("2d_1x1", (2, 5, 3, 3), (4, 5, 1, 1), [1, 1], [[0, 0], [0, 0]], [1, 1], 1, True, F32),
        ("2d_float64", (1, 2, 5, 5), (3, 2, 3, 3), [1, 1], [[1, 1], [1, 1]], [1, 1], 1, True, F64),
        ("2d_float16", (1, 2, 5, 5), (2, 2, 3, 3), [1, 1], [[1, 1], [1, 1]], [1, 1], 1, False, F16),
        ("2d_large", (1, 8, 12, 12), (16, 8, 3, 3), [1, 1], [[1, 1], [1, 1]], [1, 1], 1, True, F32),
        ("3d", (1, 2, 4, 5, 4), (3, 2, 2, 3, 2), [1, 2, 1], [[1, 0], [1, 1], [0, 0]], [1, 1, 2], 1, True, F32),
    ]:
        x = randn(xs, dt, q=64)
        w = randn(ws, dt, q=64)
        b = randn((ws[0],), dt, q=64) if bias else None
        y = conv_ref(x, w, b, stride, padding, dilation, groups)
        ins = [x, w] + ([b] if bias else [])
        attrs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
        tol = {F32: (1e-4, 1e-4), F64: (1e-10, 1e-10), F16: (1e-2, 1e-2)}[dt]
        cases.append(case(f"conv{tag}", "conv", attrs, ins, like(y, x), *tol))
    for tag, xs, ws, stride, padding, dilation, out_pad, groups, bias in [
        ("2d_stride2_pad1_outpad1", (1, 2, 3, 3), (2, 3, 3, 3), [2, 2], [[1, 1], [1, 1]], [1, 1], [1, 1], 1, False),
        ("2d_stride1", (2, 2, 4, 4), (2, 3, 3, 3), [1, 1], [[0, 0], [0, 0]], [1, 1], [0, 0], 1, True),
        ("2d_stride2_k2", (1, 3, 3, 4), (3, 2, 2, 2), [2, 2], [[0, 0], [0, 0]], [1, 1], [0, 0], 1, True),
        ("2d_groups2", (1, 4, 3, 3), (4, 2, 3, 3), [2, 2], [[1, 1], [1, 1]], [1, 1], [0, 0], 2, True),
        ("2d_dilation2", (1, 2, 3, 3), (2, 2, 3, 3), [1, 1], [[1, 1], [1, 1]], [2, 2], [0, 0], 1, False),
        ("2d_rect", (1, 2, 3, 4), (2, 2, 3, 2), [2, 1], [[1, 1], [0, 0]], [1, 1], [1, 0], 1, False),
        ("2d_asym_padding", (1, 2, 4, 4), (2, 2, 3, 3), [2, 2], [[0, 1], [2, 1]], [1, 1], [0, 0], 1, False),
        ("1d_stride3", (2, 3, 5), (3, 2, 4), [3], [[1, 1]], [1], [2], 1, True),
        ("1d_groups3", (1, 3, 4), (3, 1, 3), [2], [[0, 0]], [1], [0], 3, False),
        ("3d", (1, 2, 2, 3, 2), (2, 2, 2, 2, 3), [2, 1, 2], [[0, 0], [1, 0], [1, 1]], [1, 1, 1], [1, 0, 1], 1, True),
    ]:
        x = randn(xs, F32, q=64)
        w = randn(ws, F32, q=64)
        o = ws[1] * groups
        b = randn((o,), F32, q=64) if bias else None
        y = conv_transpose_ref(x, w, b, stride, padding, dilation, out_pad, groups)
        ins = [x, w] + ([b] if bias else [])
        attrs = {"stride": stride, "padding": padding, "dilation": dilation, "output_padding": out_pad, "groups": groups}
        cases.append(case(f"conv_transpose{tag}", "conv_transpose", attrs, ins, like(y, x), 1e-4, 1e-4))
    for tag, xs, kind, kernel, stride, padding, dilation, cip, dt in [
        ("max_2x2_s2", (1, 2, 4, 6), "max", [2, 2], [2, 2], [[0, 0], [0, 0]], [1, 1], False, F32),
        ("max_3x3_s1_p1", (2, 2, 5, 5), "max", [3, 3], [1, 1], [[1, 1], [1, 1]], [1, 1], False, F32),
        ("max_3x3_s2_p1", (1, 3, 7, 6), "max", [3, 3], [2, 2], [[1, 1], [1, 1]], [1, 1], False, F32),
        ("max_dilation2", (1, 1, 7, 7), "max", [2, 2], [1, 1], [[0, 0], [0, 0]], [2, 2], False, F32),
        ("max_rect", (1, 2, 6, 5), "max", [3, 2], [2, 1], [[1, 0], [0, 1]], [1, 1], False, F32),
        ("max_negative_values_pad", (1, 1, 3, 3), "max", [2, 2], [2, 2], [[1, 1], [1, 1]], [1, 1], False, F32),
        ("max_1d", (2, 3, 9), "max", [3], [2], [[1, 1]], [1], False, F32),
        ("max_int32_pad", (1, 2, 4, 4), "max", [3, 3], [2, 2], [[1, 1], [1, 1]], [1, 1], False, I32),
        ("max_float16", (1, 2, 4, 4), "max", [2, 2], [2, 2], [[0, 0], [0, 0]], [1, 1], False, F16),
        ("avg_2x2_s2", (1, 2, 4, 6), "avg", [2, 2], [2, 2], [[0, 0], [0, 0]], [1, 1], False, F32),
        ("avg_3x3_s2_p1_excl_pad", (1, 2, 5, 6), "avg", [3, 3], [2, 2], [[1, 1], [1, 1]], [1, 1], False, F32),
        ("avg_3x3_s2_p1_incl_pad", (1, 2, 5, 6), "avg", [3, 3], [2, 2], [[1, 1], [1, 1]], [1, 1], True, F32),
        ("avg_3x3_s1_p1_excl_pad", (2, 1, 4, 4), "avg", [3, 3], [1, 1], [[1, 1], [1, 1]], [1, 1], False, F32),
        ("avg_rect_asym", (1, 2, 5, 7), "avg", [2, 3], [1, 2], [[1, 0], [0, 2]], [1, 1], False, F32),
        ("avg_global", (2, 3, 4, 5), "avg", [4, 5], [1, 1], [[0, 0], [0, 0]], [1, 1], False, F32),
        ("avg_1d_incl_pad", (1, 2, 7), "avg", [3], [2], [[1, 1]], [1], True, F32),
        ("avg_float64", (1, 2, 4, 4), "avg", [2, 2], [1, 1], [[1, 1], [1, 1]], [1, 1], False, F64),
        ("max_3d", (1, 2, 4, 4, 5), "max", [2, 2, 3], [2, 1, 2], [[0, 0], [1, 1], [1, 1]], [1, 1, 1], False, F32),
        ("avg_3d_excl_pad", (1, 1, 3, 4, 4), "avg", [2, 3, 3], [1, 2, 2], [[1, 0], [1, 1], [1, 1]], [1, 1, 1], False, F32),
    ]:
        if dt == I32:
            x = ints(xs, -50, -1, I32)  # all negative: a zero pad would win wrongly
        elif tag == "max_negative_values_pad":
            x = grid(xs, -4, -0.5)
        else:
            x = randn(xs, dt, q=64)
        y = pool_ref(x, kind, kernel, stride, padding, dilation, cip)
        attrs = {"kind": kind, "kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation, "count_include_pad": cip}
        cases.append(case(f"pool_{tag}", "pool", attrs, [x], np.asarray(y).astype(x.dtype)))
    return cases


# ── upsample ────────────────────────────────────────────────────────────────


def linear_weights(n_in, n_out, align_corners):
    """PyTorch's linear source indices / weights along one dim."""
    i0 = np.zeros(n_out, np.int64)
    i1 = np.zeros(n_out, np.int64)
    lam = np.zeros(n_out)
    for d in range(n_out):
        if align_corners:
            src = d * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            src = max((d + 0.5) * n_in / n_out - 0.5, 0.0)
        a = min(int(math.floor(src)), n_in - 1)
        i0[d] = a
        i1[d] = min(a + 1, n_in - 1)
        lam[d] = src - a
    return i0, i1, lam


def upsample_ref(x, size, mode, align_corners):
    y = f64(x)
    for i, n_out in enumerate(size):
        ax = 2 + i
        n_in = y.shape[ax]
        if mode == "nearest":
            src = np.array([(d * n_in) // n_out for d in range(n_out)])
            y = np.take(y, src, axis=ax)
        else:
            i0, i1, lam = linear_weights(n_in, n_out, align_corners)
            shp = [1] * y.ndim
            shp[ax] = n_out
            lam = lam.reshape(shp)
            y = np.take(y, i0, axis=ax) * (1 - lam) + np.take(y, i1, axis=ax) * lam
    return y


def upsample_cases():
    cases = []
    for tag, xs, size, mode, ac, dt in [
        ("nearest_2x", (1, 2, 3, 3), [6, 6], "nearest", False, F32),
        ("nearest_fractional", (1, 2, 3, 4), [7, 5], "nearest", False, F32),
        ("nearest_downscale", (2, 1, 5, 6), [3, 4], "nearest", False, F32),
        ("nearest_1d", (1, 3, 4), [9], "nearest", False, F32),
        ("nearest_float16", (1, 1, 2, 3), [4, 6], "nearest", False, F16),
        ("bilinear_2x", (1, 2, 3, 3), [6, 6], "linear", False, F32),
        ("bilinear_fractional", (1, 2, 3, 4), [7, 5], "linear", False, F32),
        ("bilinear_downscale", (1, 2, 6, 5), [4, 3], "linear", False, F32),
        ("bilinear_align_corners", (1, 2, 3, 4), [7, 5], "linear", True, F32),
        ("bilinear_align_corners_2x", (2, 1, 3, 3), [6, 6], "linear", True, F32),
        ("bilinear_align_corners_to_1", (1, 1, 3, 3), [1, 2], "linear", True, F32),
        ("bilinear_same_size", (1, 2, 3, 3), [3, 3], "linear", False, F32),
        ("linear_1d", (2, 2, 5), [8], "linear", False, F32),
        ("linear_1d_align_corners", (1, 2, 5), [8], "linear", True, F32),
        ("bilinear_float64", (1, 1, 3, 4), [5, 7], "linear", False, F64),
        ("nearest_3d", (1, 2, 2, 3, 2), [3, 5, 4], "nearest", False, F32),
        ("trilinear_3d", (1, 1, 2, 3, 3), [4, 5, 2], "linear", False, F32),
        ("trilinear_3d_align_corners", (1, 2, 3, 2, 2), [5, 3, 4], "linear", True, F32),
    ]:
        x = randn(xs, dt, q=64)
        y = like(upsample_ref(x, size, mode, ac), x)
        tol = {F32: (1e-5, 1e-5), F64: (1e-10, 1e-12), F16: (2e-3, 2e-3)}[dt]
        attrs = {"size": size, "mode": mode, "align_corners": ac}
        cases.append(case(f"upsample_{tag}", "upsample", attrs, [x], y, *tol))
    return cases


# ── fft ─────────────────────────────────────────────────────────────────────


def fft_cases():
    cases = []
    tol = (1e-4, 1e-4)
    for norm in ("backward", "ortho", "forward"):
        for shape in ((2, 8), (5,), (3, 6)):
            x = (randn(shape, q=64) + 1j * randn(shape, q=64)).astype(C64)
            tag = "x".join(map(str, shape))
            y = np.fft.fft(x.astype(np.complex128), norm=norm).astype(C64)
            cases.append(case(f"fft_{tag}_{norm}", "fft", {"kind": "fft", "norm": norm}, [x], y, *tol))
            y = np.fft.ifft(x.astype(np.complex128), norm=norm).astype(C64)
            cases.append(case(f"ifft_{tag}_{norm}", "fft", {"kind": "ifft", "norm": norm}, [x], y, *tol))
        for shape in ((3, 8), (7,), (2, 1)):
            x = randn(shape, q=64)
            tag = "x".join(map(str, shape))
            y = np.fft.rfft(f64(x), norm=norm).astype(C64)
            cases.append(case(f"rfft_{tag}_{norm}", "fft", {"kind": "rfft", "norm": norm}, [x], y, *tol))
        for lead, n in (((2,), 8), ((3,), 7), ((), 6), ((2,), 1)):
            m = n // 2 + 1
            shape = lead + (m,)
            spec = (randn(shape, q=64) + 1j * randn(shape, q=64)).astype(C64)
            y = np.fft.irfft(spec.astype(np.complex128), n=n, norm=norm).astype(F32)
            tag = "x".join(map(str, shape)) + f"_n{n}"
            cases.append(case(f"irfft_{tag}_{norm}", "fft", {"kind": "irfft", "norm": norm, "n": n}, [spec], y, *tol))
    for n in (97, 100, 12):
        x = (randn((n,), q=64) + 1j * randn((n,), q=64)).astype(C64)
        y = np.fft.fft(x.astype(np.complex128)).astype(C64)
        cases.append(case(f"fft_{n}_backward", "fft", {"kind": "fft", "norm": "backward"}, [x], y, 1e-4, 1e-3))
        y = np.fft.ifft(x.astype(np.complex128), norm="ortho").astype(C64)
        cases.append(case(f"ifft_{n}_ortho", "fft", {"kind": "ifft", "norm": "ortho"}, [x], y, 1e-4, 1e-4))
    for n in (128, 15, 97):
        x = randn((2, n), q=64)
        y = np.fft.rfft(f64(x)).astype(C64)
        cases.append(case(f"rfft_2x{n}_backward", "fft", {"kind": "rfft", "norm": "backward"}, [x], y, 1e-4, 1e-3))
        spec = (randn((n // 2 + 1,), q=64) + 1j * randn((n // 2 + 1,), q=64)).astype(C64)
        y = np.fft.irfft(spec.astype(np.complex128), n=n).astype(F32)
        cases.append(case(f"irfft_n{n}_backward", "fft", {"kind": "irfft", "norm": "backward", "n": n}, [spec], y, 1e-4, 1e-4))
    x = (randn((4, 3), q=64) + 1j * randn((4, 3), q=64)).astype(C64)
    steps = [
        {"op": "transpose", "attrs": {"perm": [1, 0]}, "args": ["x0"]},
        {"op": "fft", "attrs": {"kind": "fft", "norm": "backward"}, "args": ["s0"]},
    ]
    y = np.fft.fft(x.astype(np.complex128).T).astype(C64)
    cases.append(case("fft_of_transposed", "graph", {"steps": steps}, [x], y, 1e-4, 1e-4))
    # irfft of a genuine half spectrum (exact round trip)
    sig = randn((2, 10), q=64)
    spec = np.fft.rfft(f64(sig)).astype(C64)
    y = np.fft.irfft(spec.astype(np.complex128), n=10).astype(F32)
    cases.append(case("irfft_round_trip_n10", "fft", {"kind": "irfft", "norm": "backward", "n": 10}, [spec], y, *tol))
    x = (randn((64,), q=64) + 1j * randn((64,), q=64)).astype(C64)
    y = np.fft.fft(x.astype(np.complex128)).astype(C64)
    cases.append(case("fft_64_backward", "fft", {"kind": "fft", "norm": "backward"}, [x], y, 1e-4, 1e-3))
    x = randn((1, 30), q=64)
    steps = [
        {"op": "fft", "attrs": {"kind": "rfft", "norm": "ortho"}, "args": ["x0"]},
        {"op": "fft", "attrs": {"kind": "irfft", "norm": "ortho", "n": 30}, "args": ["s0"]},
    ]
    cases.append(case("rfft_irfft_round_trip_n30", "graph", {"steps": steps}, [x], x.copy(), 1e-5, 1e-5))
    return cases


# ── main ────────────────────────────────────────────────────────────────────

FAMILIES = [
    ("elementwise", unary_cases),
    ("binary", binary_cases),
    ("compare", compare_cases),
    ("cast", cast_cases),
    ("linalg", linalg_cases),
    ("reduce", reduce_cases),
    ("movement", movement_cases),
    ("indexing", indexing_cases),
    ("norm", norm_cases),
    ("attention", attention_cases),
    ("conv", conv_cases),
    ("upsample", upsample_cases),
    ("fft", fft_cases),
]


# Ops that only move or convert values: their outputs must match bit for bit
# (the rounded output text still parses back to the exact value of its dtype).
EXACT_OPS = {
    "cast", "reshape", "transpose", "slice", "narrow", "concat", "pad",
    "broadcast", "gather", "gather_elements", "topk", "select",
}


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    total_bytes, total_cases = 0, 0
    for family, gen in FAMILIES:
        with np.errstate(all="ignore"):
            cases = gen()
        for c in cases:
            if c["op"] in EXACT_OPS:
                c["rtol"], c["atol"] = 0.0, 0.0
        names = [c["name"] for c in cases]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            sys.exit(f"{family}: duplicate case names {sorted(dup)}")
        body = ",\n".join(json.dumps(c, separators=(",", ":"), allow_nan=False) for c in cases)
        text = '{"cases":[\n' + body + "\n]}\n"
        path = os.path.join(OUT_DIR, f"{family}.json")
        with open(path, "w") as f:
            f.write(text)
        total_bytes += len(text)
        total_cases += len(cases)
        print(f"{family:12s} {len(cases):4d} cases {len(text) / 1024:7.1f} KiB")
    print(f"{'total':12s} {total_cases:4d} cases {total_bytes / 1024:7.1f} KiB -> {os.path.normpath(OUT_DIR)}")


if __name__ == "__main__":
    main()
