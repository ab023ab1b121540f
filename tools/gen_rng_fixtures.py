#!/usr/bin/env python3
"""Generate the bit-exact reference fixtures of ``crates/rlx-rng``.

numpy part (default): needs numpy only. Create the environment once::

    python3 -m venv ~/.cache/rlx-ref/np
    ~/.cache/rlx-ref/np/bin/pip install numpy

and run (from anywhere; paths are resolved relative to this file)::

    ~/.cache/rlx-ref/np/bin/python tools/gen_rng_fixtures.py

It writes

* ``crates/rlx-rng/tests/fixtures/numpy_random_state.json`` (legacy
  ``RandomState``), ``numpy_generator.json`` (``default_rng`` / PCG64,
  ``Generator(MT19937)``), ``numpy_generator_dist.json`` (the ``Generator``
  distributions beyond the basics: exponential, gamma, beta, poisson,
  binomial, shuffle along an axis, choice with ``p``) and
  ``numpy_seed_sequence.json``;
* ``crates/rlx-rng/src/ziggurat_tables.rs``: numpy's ziggurat tables
  (``ki/wi/fi_double``, ``ki/wi/fi_float``), read out of the compiled
  ``numpy/random/lib/libnpyrandom.a`` that numpy ships (an ``ar`` archive of
  ELF objects; the tables are its ``.rodata`` symbols). They cannot be
  rebuilt from their defining recurrence bit for bit: the float64 tables
  depend on the exp / log of the machine that first generated them.

torch part (``--torch``): needs PyTorch; the env of
``shared/ref/setup_torch.sh`` has it (``REF_RUN_REFS=0 bash
../shared/ref/setup_torch.sh`` creates ``~/.cache/rlx-ref/torchenv``)::

    ~/.cache/rlx-ref/torchenv/bin/python tools/gen_rng_fixtures.py --torch

It writes ``crates/rlx-rng/tests/fixtures/torch.json``. ``torch.randn`` of
16 or more float32 values takes a different code path per CPU capability
(AVX2: vectorised log / sincos; DEFAULT and AVX512: libm logf / cosf / sinf);
the script records both, re-running itself under
``ATEN_CPU_CAPABILITY=default`` (that run only for the calls of
``TORCH_CAPABILITY_OPS``). ``bernoulli_(p)`` / dropout on Intel CPUs
with MKL use MKL's own stream; the fixtures must come from a machine where
``torch`` reports a non-Intel vendor (checked, recorded as ``cpu_vendor``).

Format: every file holds ``cases``; a case names a seed and a ``program``: a
list of calls run in order on ONE generator made from that seed (so caches
and buffers carry from call to call, as in Python). Each call is
``{"op": name, ...arguments, "out": words}`` or ``..., "digest": hex}``:
``out`` is the result as space-separated hex words (float64 / float32 as
their IEEE bits, integers as 64-bit two's complement, bools 0 / 1), and for
long results ``digest`` is FNV-1a over those 64-bit words
(``h = 0xcbf29ce484222325; for w: h = ((h ^ w) * 0x100000001b3) mod 2^64``).
The test ``crates/rlx-rng/tests/bit_exact.rs`` replays every program.
"""

import argparse
import json
import os
import platform
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CRATE = os.path.join(HERE, "..", "crates", "rlx-rng")
FIX = os.path.join(CRATE, "tests", "fixtures")
DIGEST_AT = 1000  # results longer than this are stored as a digest

MASK64 = (1 << 64) - 1


def words(a):
    """The result as a list of 64-bit words (see the module docstring)."""
    a = np.asarray(a)
    if a.dtype == np.float64:
        return [int(w) for w in a.view(np.uint64).ravel()]
    if a.dtype == np.float32:
        return [int(w) for w in a.view(np.uint32).ravel()]
    if a.dtype == np.bool_:
        return [int(w) for w in a.astype(np.uint64).ravel()]
    if a.dtype == np.uint64:
        return [int(w) for w in a.ravel()]
    return [int(w) & MASK64 for w in a.astype(np.int64).ravel()]


def fnv(ws):
    h = 0xCBF29CE484222325
    for w in ws:
        h = ((h ^ w) * 0x100000001B3) & MASK64
    return h


def record(call, result):
    ws = words(result)
    if len(ws) > DIGEST_AT:
        call["digest"] = "%x" % fnv(ws)
        call["len"] = len(ws)
    else:
        call["out"] = " ".join("%x" % w for w in ws)
    return call


def seed_json(seed):
    """A seed for JSON: integers as decimal strings (Python ints exceed 64 bits)."""
    if isinstance(seed, dict):
        return {k: seed_json(v) for k, v in seed.items()}
    if isinstance(seed, list):
        return [str(v) for v in seed]
    return str(seed)


def run_program(make, program, apply):
    obj = make()
    return [record(dict(call), apply(obj, call)) for call in program]


# ----------------------------------------------------------------------------------------------
# numpy RandomState (legacy)

P5 = [0.1, 0.2, 0.3, 0.15, 0.25]
P6 = [0.05, 0.3, 0.0, 0.25, 0.3, 0.1]

RS_PROGRAM = [
    {"op": "raw_u32", "n": 8},
    {"op": "random_sample", "n": 17},
    {"op": "randn", "n": 1},
    {"op": "randn", "n": 2},
    {"op": "random_sample", "n": 2},
    {"op": "randn", "n": 15},
    {"op": "standard_normal", "n": 16},
    {"op": "randn", "n": 17},
    {"op": "randint", "low": 0, "high": 100, "n": 33, "dtype": "int64"},
    {"op": "randint", "low": -5, "high": 5, "n": 7, "dtype": "int64"},
    {"op": "randint", "low": 0, "high": 2**31, "n": 9, "dtype": "int64"},
    {"op": "randint", "low": 0, "high": 2**32, "n": 3, "dtype": "int64"},
    {"op": "randint", "low": 0, "high": 2**40, "n": 5, "dtype": "int64"},
    {"op": "randint", "low": -(2**63), "high": 2**63 - 1, "n": 3, "dtype": "int64"},
    {"op": "randint", "low": 0, "high": 10, "n": 17, "dtype": "int32"},
    {"op": "randint", "low": -1000, "high": 1000, "n": 9, "dtype": "int16"},
    {"op": "randint", "low": 0, "high": 256, "n": 7, "dtype": "uint8"},
    {"op": "randint", "low": 0, "high": 200, "n": 17, "dtype": "uint8"},
    {"op": "randint", "low": -128, "high": 100, "n": 5, "dtype": "int8"},
    {"op": "randint", "low": 0, "high": 65536, "n": 5, "dtype": "uint16"},
    {"op": "randint", "low": 0, "high": 2**32, "n": 5, "dtype": "uint32"},
    {"op": "randint", "low": 0, "high": 2, "n": 40, "dtype": "bool"},
    {"op": "uniform", "low": -1.0, "high": 1.0, "n": 5},
    {"op": "uniform", "low": 2.5, "high": 7.25, "n": 15},
    {"op": "normal", "loc": 1.0, "scale": 2.0, "n": 7},
    {"op": "normal", "loc": 0.0, "scale": 0.5, "n": 16},
    {"op": "choice", "a": 10, "size": 5, "replace": True, "p": None},
    {"op": "choice", "a": 10, "size": 5, "replace": False, "p": None},
    {"op": "choice", "a": 1000, "size": 20, "replace": False, "p": None},
    {"op": "choice", "a": 5, "size": 7, "replace": True, "p": P5},
    {"op": "choice", "a": 6, "size": 3, "replace": False, "p": P6},
    {"op": "permutation", "n": 1},
    {"op": "permutation", "n": 2},
    {"op": "permutation", "n": 10},
    {"op": "permutation", "n": 100},
    {"op": "shuffle", "n": 17},
    {"op": "randn", "n": 3},
    {"op": "random_sample", "n": 100000},
    {"op": "randn", "n": 100001},
    {"op": "randint", "low": 0, "high": 1000, "n": 100000, "dtype": "int64"},
    {"op": "randint", "low": 0, "high": 2**40, "n": 10000, "dtype": "int64"},
    {"op": "randint", "low": 0, "high": 200, "n": 10001, "dtype": "uint8"},
    {"op": "permutation", "n": 5000},
    {"op": "normal", "loc": -3.0, "scale": 0.25, "n": 10001},
]

RS_SEEDS = [{"int": s} for s in [0, 1, 42, 1234, 12345, 2**31, 2**32 - 1]] + [
    {"array": a} for a in [[0], [1, 2, 3], [2**32 - 1, 0, 7], list(range(700))]
]


def rs_apply(rs, c):
    op = c["op"]
    if op == "raw_u32":
        return rs._bit_generator.random_raw(c["n"]).astype(np.uint32)
    if op == "random_sample":
        return rs.random_sample(c["n"])
    if op == "randn":
        return rs.randn(c["n"])
    if op == "standard_normal":
        return rs.standard_normal(c["n"])
    if op == "randint":
        return rs.randint(c["low"], c["high"], size=c["n"], dtype=c["dtype"])
    if op == "uniform":
        return rs.uniform(c["low"], c["high"], c["n"])
    if op == "normal":
        return rs.normal(c["loc"], c["scale"], c["n"])
    if op == "choice":
        return rs.choice(c["a"], c["size"], replace=c["replace"], p=c["p"])
    if op == "permutation":
        return rs.permutation(c["n"])
    if op == "shuffle":
        x = np.arange(c["n"])
        rs.shuffle(x)
        return x
    raise KeyError(op)


def rs_make(seed):
    # a list, not an ndarray: numpy squeezes a one-element ndarray into an integer seed
    return lambda: np.random.RandomState(seed["int"] if "int" in seed else list(seed["array"]))


# ----------------------------------------------------------------------------------------------
# numpy Generator

GEN_PROGRAM = [
    {"op": "random_raw", "n": 8},
    {"op": "random", "n": 17},
    {"op": "random_f32", "n": 15},
    {"op": "random", "n": 2},
    {"op": "random_f32", "n": 3},
    {"op": "standard_normal", "n": 17},
    {"op": "standard_normal_f32", "n": 33},
    {"op": "normal", "loc": 1.0, "scale": 2.0, "n": 7},
    {"op": "integers", "low": 0, "high": 100, "n": 33, "dtype": "int64", "endpoint": False},
    {"op": "integers", "low": -5, "high": 5, "n": 7, "dtype": "int64", "endpoint": False},
    {"op": "integers", "low": 0, "high": 10, "n": 9, "dtype": "int64", "endpoint": True},
    {"op": "integers", "low": 0, "high": 2**40, "n": 5, "dtype": "int64", "endpoint": False},
    {"op": "integers", "low": 0, "high": 2**32, "n": 4, "dtype": "int64", "endpoint": False},
    {"op": "integers", "low": -(2**63), "high": 2**63 - 1, "n": 3, "dtype": "int64", "endpoint": False},
    {"op": "integers", "low": -(2**63), "high": 2**63 - 1, "n": 3, "dtype": "int64", "endpoint": True},
    {"op": "integers", "low": 0, "high": 2**64 - 1, "n": 3, "dtype": "uint64", "endpoint": False},
    {"op": "integers", "low": 0, "high": 10, "n": 17, "dtype": "int32", "endpoint": False},
    {"op": "integers", "low": -(2**31), "high": 2**31 - 1, "n": 5, "dtype": "int32", "endpoint": True},
    {"op": "integers", "low": 0, "high": 256, "n": 17, "dtype": "uint8", "endpoint": False},
    {"op": "integers", "low": 0, "high": 200, "n": 17, "dtype": "uint8", "endpoint": False},
    {"op": "integers", "low": -128, "high": 100, "n": 9, "dtype": "int8", "endpoint": False},
    {"op": "integers", "low": -1000, "high": 1000, "n": 9, "dtype": "int16", "endpoint": False},
    {"op": "integers", "low": 0, "high": 65536, "n": 5, "dtype": "uint16", "endpoint": False},
    {"op": "integers", "low": 0, "high": 2, "n": 40, "dtype": "bool", "endpoint": False},
    {"op": "random_f32", "n": 1},
    {"op": "uniform", "low": -1.0, "high": 1.0, "n": 5},
    {"op": "permutation", "n": 1},
    {"op": "permutation", "n": 2},
    {"op": "permutation", "n": 10},
    {"op": "permutation", "n": 100},
    {"op": "shuffle", "n": 17},
    {"op": "choice", "a": 10, "size": 5, "replace": True, "p": None, "shuffle": True},
    {"op": "choice", "a": 10, "size": 5, "replace": False, "p": None, "shuffle": True},
    {"op": "choice", "a": 10, "size": 5, "replace": False, "p": None, "shuffle": False},
    {"op": "choice", "a": 20000, "size": 100, "replace": False, "p": None, "shuffle": True},
    {"op": "choice", "a": 20000, "size": 500, "replace": False, "p": None, "shuffle": True},
    {"op": "choice", "a": 20000, "size": 500, "replace": False, "p": None, "shuffle": False},
    {"op": "choice", "a": 5, "size": 7, "replace": True, "p": P5, "shuffle": True},
    {"op": "choice", "a": 6, "size": 3, "replace": False, "p": P6, "shuffle": True},
    {"op": "random", "n": 100000},
    {"op": "random_f32", "n": 100001},
    {"op": "standard_normal", "n": 100001},
    {"op": "standard_normal_f32", "n": 100001},
    {"op": "integers", "low": 0, "high": 1000, "n": 100001, "dtype": "int64", "endpoint": False},
    {"op": "integers", "low": 0, "high": 2**40, "n": 10000, "dtype": "int64", "endpoint": False},
    {"op": "integers", "low": 0, "high": 200, "n": 10001, "dtype": "uint8", "endpoint": False},
    {"op": "integers", "low": -3, "high": 3000, "n": 10001, "dtype": "int16", "endpoint": False},
    {"op": "permutation", "n": 5000},
    {"op": "normal", "loc": -3.0, "scale": 0.25, "n": 10001},
]

# the distributions beyond the basics (numpy_generator_dist.json): each parameter set is
# followed by a uniform draw so that a sampler consuming one draw too many or too few shows
GEN_DIST_PARAMS = (
    [{"op": "standard_exponential", "n": n} for n in [1, 7, 1001]]
    + [{"op": "exponential", "scale": s, "n": 9} for s in [1.0, 0.5, 3.25, 0.0]]
    + [{"op": "standard_gamma", "shape": k, "n": 9} for k in [1.0, 0.0, 0.3, 0.999, 1.5, 2.0, 7.5, 250.0]]
    + [{"op": "gamma", "shape": k, "scale": s, "n": 9} for k, s in [(0.5, 2.0), (1.0, 0.5), (3.0, 1.5), (0.05, 1.0)]]
    + [{"op": "standard_gamma", "shape": 0.01, "n": 1001}, {"op": "standard_gamma", "shape": 2.5, "n": 1001}]
    + [{"op": "beta", "a": a, "b": b, "n": 9} for a, b in [(0.5, 0.5), (0.1, 0.9), (1.0, 1.0), (0.01, 0.02),
                                                           (2.0, 3.0), (0.5, 4.0), (5.0, 0.3), (1.0, 2.0),
                                                           (1e-110, 2e-110), (1e-104, 0.5), (2e-103, 1e-200)]]
    + [{"op": "beta", "a": 0.001, "b": 0.001, "n": 1001}, {"op": "beta", "a": 1.5, "b": 0.7, "n": 1001}]
    + [{"op": "poisson", "lam": lam, "n": 9} for lam in [0.0, 1e-3, 0.5, 3.0, 9.999, 10.0, 12.5, 100.0, 1e4, 1e9]]
    + [{"op": "poisson", "lam": 4.0, "n": 1001}, {"op": "poisson", "lam": 30.0, "n": 1001}]
    + [{"op": "binomial", "trials": t, "p": p, "n": 9} for t, p in [(0, 0.5), (10, 0.0), (10, 1.0), (1, 0.5), (10, 0.3),
                                                                    (60, 0.5), (61, 0.5), (100, 0.9), (100, 0.2),
                                                                    (1000, 0.05), (1000, 0.5), (10**6, 0.3),
                                                                    (10**9, 0.999), (50, 0.7)]]
    + [{"op": "binomial", "trials": 20, "p": 0.4, "n": 1001}, {"op": "binomial", "trials": 500, "p": 0.35, "n": 1001}]
    + [{"op": "permutation", "n": n} for n in [0, 3, 257]]
    + [{"op": "shuffle_axis", "rows": r, "cols": c, "axis": a} for r, c, a in [(5, 3, 0), (5, 3, 1), (1, 4, 0), (6, 7, 1)]]
    + [{"op": "choice", "a": a, "size": k, "replace": r, "p": p, "shuffle": True}
       for a, k, r, p in [(5, 20, True, P5), (6, 4, False, P6), (6, 5, False, P6), (4, 9, True, [0.0, 0.0, 1.0, 0.0]),
                          (3, 1, False, [0.0, 1.0, 0.0]), (7, 7, True, [1 / 7] * 7)]]
)
GEN_DIST_PROGRAM = [c for call in GEN_DIST_PARAMS for c in (call, {"op": "random", "n": 1})]
GEN_DIST_SEEDS = [{"int": s} for s in [0, 7, 2**64 - 1, 987654321]] + [{"array": [3, 1, 4]}]

GEN_SEEDS = [{"int": s} for s in [0, 1, 42, 2**32 - 1, 2**32, 2**64 - 1, 2**100 + 7, 123456789]] + [
    {"array": a} for a in [[1, 2, 3], [0, 0], [2**32 - 1, 2**40]]
]

MT_GEN_SEEDS = [{"int": s} for s in [0, 42, 2**32 - 1]]


def gen_apply(g, c):
    op = c["op"]
    if op == "random_raw":  # 64-bit words for PCG64, 32-bit for MT19937
        return g.bit_generator.random_raw(c["n"]).astype(np.uint64)
    if op == "random":
        return g.random(c["n"])
    if op == "random_f32":
        return g.random(c["n"], dtype=np.float32)
    if op == "standard_normal":
        return g.standard_normal(c["n"])
    if op == "standard_normal_f32":
        return g.standard_normal(c["n"], dtype=np.float32)
    if op == "normal":
        return g.normal(c["loc"], c["scale"], c["n"])
    if op == "integers":
        return g.integers(c["low"], c["high"], size=c["n"], dtype=c["dtype"], endpoint=c["endpoint"])
    if op == "uniform":
        return g.uniform(c["low"], c["high"], c["n"])
    if op == "permutation":
        return g.permutation(c["n"])
    if op == "shuffle":
        x = np.arange(c["n"])
        g.shuffle(x)
        return x
    if op == "choice":
        return g.choice(c["a"], c["size"], replace=c["replace"], p=c["p"], shuffle=c["shuffle"])
    if op == "standard_exponential":
        return g.standard_exponential(c["n"])
    if op == "exponential":
        return g.exponential(c["scale"], c["n"])
    if op == "standard_gamma":
        return g.standard_gamma(c["shape"], c["n"])
    if op == "gamma":
        return g.gamma(c["shape"], c["scale"], c["n"])
    if op == "beta":
        return g.beta(c["a"], c["b"], c["n"])
    if op == "poisson":
        return g.poisson(c["lam"], c["n"])
    if op == "binomial":
        return g.binomial(c["trials"], c["p"], c["n"])
    if op == "shuffle_axis":  # an (rows, cols) arange, shuffled along `axis`, flattened
        x = np.arange(c["rows"] * c["cols"]).reshape(c["rows"], c["cols"])
        g.shuffle(x, axis=c["axis"])
        return x
    raise KeyError(op)


def seed_value(seed):
    return seed["int"] if "int" in seed else seed["array"]


def gen_make(seed, bitgen):
    return lambda: np.random.Generator(bitgen(seed_value(seed)))


# ----------------------------------------------------------------------------------------------
# SeedSequence and PCG64 state


def seed_sequence_cases():
    cases = []
    entropies = [0, 1, 42, 2**32 - 1, 2**32, 2**64 - 1, 2**100 + 7, 2**128 - 1,
                 [1, 2, 3], [0, 0], [2**32 - 1, 2**40], list(range(10))]
    for e in entropies:
        ss = np.random.SeedSequence(e)
        pcg = np.random.PCG64(ss).state["state"]
        mt = np.random.MT19937(np.random.SeedSequence(e))
        case = {
            "entropy": seed_json(e),
            "pool": [int(v) for v in ss.pool],
            "state_u32_9": [int(v) for v in ss.generate_state(9, np.uint32)],
            "state_u64_5": ["%x" % int(v) for v in ss.generate_state(5, np.uint64)],
            "pcg64_state": "%x" % pcg["state"],
            "pcg64_inc": "%x" % pcg["inc"],
            "mt19937_raw_u32": [int(v) for v in mt.random_raw(630)[[0, 1, 2, 622, 623, 624, 629]]],
        }
        kids = np.random.SeedSequence(e).spawn(2)
        case["spawn2_state_u32_4"] = [[int(v) for v in k.generate_state(4, np.uint32)] for k in kids]
        grand = kids[1].spawn(1)[0]
        case["spawn_1_0_state_u32_4"] = [int(v) for v in grand.generate_state(4, np.uint32)]
        bg = np.random.PCG64(e)
        bg.random_raw(3)
        g = np.random.Generator(bg)
        g.integers(0, 10, 1)  # leaves a buffered half
        bg.advance(12345)
        case["advance_12345_then_u32"] = [int(v) for v in g.integers(0, 2**32, 3, dtype=np.uint32)]
        cases.append(case)
    return cases


# ----------------------------------------------------------------------------------------------
# ziggurat tables out of numpy's compiled library


def elf_symbols(data):
    """{name: bytes} of the sized symbols of a little-endian ELF64 relocatable object."""
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not an ELF64 LE object"
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    out = {}
    for (_, typ, _, _, off, size, link, _, _, entsize) in secs:
        if typ != 2:  # SHT_SYMTAB
            continue
        stroff = secs[link][4]
        for j in range(size // entsize):
            st_name, _, _, shndx, value, st_size = struct.unpack_from("<IBBHQQ", data, off + j * entsize)
            if st_size and shndx < len(secs):
                end = data.index(b"\0", stroff + st_name)
                base = secs[shndx][4] + value
                out[data[stroff + st_name:end].decode()] = data[base:base + st_size]
    return out


def ar_members(data):
    assert data[:8] == b"!<arch>\n", "not an ar archive"
    pos = 8
    while pos + 60 <= len(data):
        hdr = data[pos:pos + 60]
        size = int(hdr[48:58].decode().strip())
        yield hdr[:16].decode().strip(), data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)


def ziggurat_tables():
    lib = os.path.join(os.path.dirname(np.random.__file__), "lib", "libnpyrandom.a")
    for _, member in ar_members(open(lib, "rb").read()):
        if member[:4] != b"\x7fELF":
            continue
        syms = elf_symbols(member)
        if "ki_double" in syms:
            return syms
    raise RuntimeError("no ziggurat tables in " + lib)


def write_ziggurat_rs(path):
    syms = ziggurat_tables()
    spec = [("KI_DOUBLE", "ki_double", "u64", "Q"), ("WI_DOUBLE", "wi_double", "u64", "Q"),
            ("FI_DOUBLE", "fi_double", "u64", "Q"), ("KI_FLOAT", "ki_float", "u32", "I"),
            ("KE_DOUBLE", "ke_double", "u64", "Q"), ("WE_DOUBLE", "we_double", "u64", "Q"),
            ("FE_DOUBLE", "fe_double", "u64", "Q"),
            ("WI_FLOAT", "wi_float", "u32", "I"), ("FI_FLOAT", "fi_float", "u32", "I")]
    lines = ["// @generated by tools/gen_rng_fixtures.py from numpy %s's libnpyrandom.a: do not edit." % np.__version__,
             "//! numpy's normal and exponential ziggurat tables (`ziggurat_constants.h`), as raw bits: float",
             "//! tables hold `f64::to_bits` / `f32::to_bits` values.", ""]
    for const, sym, ty, fmt in spec:
        vals = struct.unpack("<256" + fmt, syms[sym])
        width = 16 if ty == "u64" else 8
        lines.append("/// numpy's `%s`." % sym)
        lines.append("#[rustfmt::skip]")
        lines.append("pub(crate) const %s: [%s; 256] = [" % (const, ty))
        per = 4 if ty == "u64" else 8
        for i in range(0, 256, per):
            lines.append("    " + " ".join("0x%0*x," % (width, v) for v in vals[i:i + per]))
        lines.append("];")
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


# ----------------------------------------------------------------------------------------------
# torch


TORCH_SEEDS = [0, 1, 42, 1234, 2**32 - 1, 2**32 + 5, 2**63 + 11]
TORCH_PROGRAM = (
    [{"op": "rand", "n": n} for n in [1, 2, 15, 16, 17, 33]]
    + [{"op": "rand_f64", "n": n} for n in [1, 8, 17]]
    + [{"op": "randn", "n": n} for n in [1, 2, 3, 8, 15, 16, 17, 31, 32, 33, 100]]
    + [{"op": "randn_f64", "n": n} for n in [1, 8, 15, 16, 17, 33]]
    + [{"op": "randn", "n": 1}, {"op": "randn", "n": 1}, {"op": "randn", "n": 3}, {"op": "rand", "n": 3},
       {"op": "randn", "n": 17}, {"op": "randn", "n": 1}, {"op": "randn_f64", "n": 1},
       {"op": "randn_f64", "n": 1}, {"op": "randn", "n": 1}]
    + [{"op": "randint", "low": 0, "high": 100, "n": 8}, {"op": "randint", "low": -5, "high": 5, "n": 17},
       {"op": "randint", "low": 0, "high": 2**32, "n": 3}, {"op": "randint", "low": 0, "high": 2**32 - 1, "n": 3},
       {"op": "randint", "low": 0, "high": 2**40, "n": 4},
       {"op": "randint", "low": -(2**62), "high": 2**62, "n": 3}]
    + [{"op": "randperm", "n": n} for n in [1, 2, 5, 10, 100, 1000]]
    + [{"op": "normal", "mean": 2.0, "std": 3.0, "n": n} for n in [8, 16, 33]]
    + [{"op": "normal_f64", "mean": 2.0, "std": 3.0, "n": n} for n in [8, 17]]
    + [{"op": "uniform", "low": -1.0, "high": 1.0, "n": 8}, {"op": "uniform", "low": -0.3, "high": 0.7, "n": 17}]
    + [{"op": "bernoulli", "p": p, "n": n} for p, n in [(0.5, 16), (0.3, 17), (0.0, 4), (1.0, 4)]]
    + [{"op": "bernoulli_scalar", "p": p, "n": n} for p, n in [(0.5, 16), (0.3, 17)]]
    + [{"op": "dropout", "p": p, "n": n} for p, n in [(0.5, 16), (0.1, 17), (0.9, 100), (0.0, 4), (1.0, 4), (0.3, 33)]]
    + [{"op": "linear", "in_features": i, "out_features": o, "bias": b} for i, o, b in [(4, 3, True), (17, 5, True), (64, 16, True),
                                                                       (5, 3, False), (1, 1, True)]]
    + [{"op": "randn", "n": 100000}, {"op": "rand", "n": 100000}, {"op": "randn_f64", "n": 10001},
       {"op": "randperm", "n": 10000}, {"op": "randint", "low": 0, "high": 1000, "n": 10000},
       {"op": "dropout", "p": 0.2, "n": 10000}, {"op": "normal", "mean": -1.0, "std": 0.5, "n": 10001}]
    # exponential_, multinomial (fast path: no replacement or one sample; inverse-CDF path:
    # replacement), normal with tensor mean / std
    + [{"op": "exponential", "lambd": l, "n": n} for l, n in [(1.0, 9), (2.5, 17), (0.25, 3)]]
    + [{"op": "exponential_f64", "lambd": l, "n": n} for l, n in [(1.0, 9), (7.0, 5)]]
    + [{"op": "multinomial", "dtype": dt, "probs": p, "rows": r, "num_samples": k, "replacement": rep}
       for dt, p, r, k, rep in [
           ("f32", [0.1, 0.2, 0.3, 0.4], 1, 1, False),
           ("f32", [0.1, 0.2, 0.3, 0.4], 1, 1, True),
           ("f32", [0.1, 0.2, 0.3, 0.4], 1, 4, False),
           ("f32", [0.1, 0.2, 0.3, 0.4], 1, 12, True),
           ("f32", [3.0, 0.0, 1.0, 0.5, 0.0, 2.0], 1, 3, False),
           ("f32", [3.0, 0.0, 1.0, 0.5, 0.0, 2.0], 1, 40, True),
           ("f32", [1.0, 2.0, 3.0, 0.5, 0.5, 0.0, 4.0, 1e-3, 7.0], 3, 2, False),
           ("f32", [1.0, 2.0, 3.0, 0.5, 0.5, 0.0, 4.0, 1e-3, 7.0], 3, 5, True),
           ("f32", [1e-30, 1.0, 1e-30, 1e-30], 1, 2, False),
           ("f64", [0.25, 0.25, 0.5, 1e-9, 0.0], 1, 3, False),
           ("f64", [0.25, 0.25, 0.5, 1e-9, 0.0], 1, 25, True),
           ("f64", [2.0, 1.0, 0.0, 3.0], 2, 1, True),
       ]]
    + [{"op": "normal_tensor", "dtype": dt, "mean": [(-1.0) ** i * 0.37 * i for i in range(n)],
        "std": [0.05 + 0.11 * i for i in range(n)]} for dt, n in [("f32", 5), ("f32", 33), ("f64", 7), ("f64", 20)]]
    + [{"op": "normal_mean_tensor", "dtype": "f32", "mean": [0.5 * i - 3.0 for i in range(n)], "std": 0.7}
       for n in [6, 18]]
    + [{"op": "normal_std_tensor", "dtype": "f32", "mean": 1.5, "std": [0.1 * i for i in range(n)]}
       for n in [4, 16]]
)


def torch_apply_factory(torch):
    def apply(g, c):
        op = c["op"]
        f32, f64 = torch.float32, torch.float64
        if op == "rand":
            t = torch.rand(c["n"], generator=g)
        elif op == "rand_f64":
            t = torch.rand(c["n"], dtype=f64, generator=g)
        elif op == "randn":
            t = torch.randn(c["n"], generator=g)
        elif op == "randn_f64":
            t = torch.randn(c["n"], dtype=f64, generator=g)
        elif op == "randint":
            t = torch.randint(c["low"], c["high"], (c["n"],), generator=g)
        elif op == "randperm":
            t = torch.randperm(c["n"], generator=g)
        elif op == "normal":
            t = torch.normal(c["mean"], c["std"], size=(c["n"],), generator=g)
        elif op == "normal_f64":
            t = torch.normal(c["mean"], c["std"], size=(c["n"],), dtype=f64, generator=g)
        elif op == "uniform":
            t = torch.empty(c["n"]).uniform_(c["low"], c["high"], generator=g)
        elif op == "bernoulli":
            t = torch.bernoulli(torch.full((c["n"],), c["p"]), generator=g)
        elif op == "bernoulli_scalar":
            t = torch.empty(c["n"]).bernoulli_(c["p"], generator=g)
        elif op == "dropout":
            t = torch.nn.functional.dropout(torch.ones(c["n"]), p=c["p"], training=True)
        elif op in ("exponential", "exponential_f64"):
            dt = f64 if op == "exponential_f64" else f32
            t = torch.empty(c["n"], dtype=dt).exponential_(c["lambd"], generator=g)
        elif op == "multinomial":
            dt = f64 if c["dtype"] == "f64" else f32
            p = torch.tensor(c["probs"], dtype=dt)
            if c["rows"] > 1:
                p = p.reshape(c["rows"], -1)
            t = torch.multinomial(p, c["num_samples"], replacement=c["replacement"], generator=g).reshape(-1)
        elif op.startswith("normal_") and "tensor" in op:
            dt = f64 if c["dtype"] == "f64" else f32
            mean = torch.tensor(c["mean"], dtype=dt) if isinstance(c["mean"], list) else c["mean"]
            std = torch.tensor(c["std"], dtype=dt) if isinstance(c["std"], list) else c["std"]
            t = torch.normal(mean, std, generator=g)
        elif op == "linear":
            lin = torch.nn.Linear(c["in_features"], c["out_features"], bias=c["bias"])
            ws = lin.weight.detach().reshape(-1)
            t = torch.cat([ws, lin.bias.detach()]) if c["bias"] else ws
        else:
            raise KeyError(op)
        assert t.dtype in (f32, f64, torch.int64)
        return t.numpy()
    return apply


# the kernels that differ between CPU builds (the DEFAULT run records only these)
TORCH_CAPABILITY_OPS = ("rand", "randn", "randn_f64", "normal", "normal_f64", "normal_tensor",
                        "normal_mean_tensor", "normal_std_tensor")


def torch_cases():
    import torch
    torch.set_num_threads(1)
    apply = torch_apply_factory(torch)
    program = TORCH_PROGRAM
    if torch.backends.cpu.get_cpu_capability() != "AVX2":
        program = [c for c in TORCH_PROGRAM if c["op"] in TORCH_CAPABILITY_OPS]
    cases = []
    for seed in TORCH_SEEDS:
        # dropout and nn.Linear have no generator argument: the program runs on the default generator
        def make(seed=seed):
            torch.manual_seed(seed)
            return torch.default_generator
        cases.append({"seed": str(seed), "program": run_program(make, program, apply)})
        # a separate torch.Generator gives the same streams
        g = torch.Generator().manual_seed(seed)
        assert torch.equal(torch.randn(33, generator=g), (torch.manual_seed(seed), torch.randn(33))[1])
    return cases


def torch_main():
    import torch
    if os.environ.get("RLX_RNG_TORCH_CHILD"):
        json.dump({"capability": torch.backends.cpu.get_cpu_capability(), "cases": torch_cases()}, sys.stdout)
        return
    vendor = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("vendor_id"):
                vendor = line.split(":")[1].strip()
                break
    except OSError:
        pass
    if vendor == "GenuineIntel" and torch.backends.mkl.is_available():
        sys.exit("bernoulli_(p) / dropout use MKL's stream on Intel CPUs: generate the torch fixtures on a non-Intel CPU")
    runs = []
    # "avx2" explicitly: on a CPU with AVX-512 torch would pick its AVX512 build, which is not
    # reproduced (see TorchCpuCapability)
    for cap in ["avx2", "default"]:
        env = dict(os.environ, RLX_RNG_TORCH_CHILD="1")
        if cap:
            env["ATEN_CPU_CAPABILITY"] = cap
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--torch"], env=env,
                             check=True, capture_output=True, text=True).stdout
        runs.append(json.loads(out))
    res = {"torch_version": torch.__version__, "python": platform.python_version(), "cpu_vendor": vendor,
           "runs": runs}
    path = os.path.join(FIX, "torch.json")
    with open(path, "w") as f:
        json.dump(res, f, separators=(",", ":"))
    print("wrote", path, os.path.getsize(path), "bytes; capabilities:", [r["capability"] for r in runs])


# ----------------------------------------------------------------------------------------------


def dump(name, obj):
    path = os.path.join(FIX, name)
    with open(path, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
    print("wrote", path, os.path.getsize(path), "bytes")


def numpy_main():
    os.makedirs(FIX, exist_ok=True)
    write_ziggurat_rs(os.path.join(CRATE, "src", "ziggurat_tables.rs"))
    print("wrote crates/rlx-rng/src/ziggurat_tables.rs")
    rs_cases = [{"seed": seed_json(s), "program": run_program(rs_make(s), RS_PROGRAM, rs_apply)} for s in RS_SEEDS]
    dump("numpy_random_state.json", {"numpy_version": np.__version__, "cases": rs_cases})
    gen_cases = [{"seed": seed_json(s), "bit_generator": "PCG64",
                  "program": run_program(gen_make(s, np.random.PCG64), GEN_PROGRAM, gen_apply)} for s in GEN_SEEDS]
    gen_cases += [{"seed": seed_json(s), "bit_generator": "MT19937",
                   "program": run_program(gen_make(s, np.random.MT19937), GEN_PROGRAM, gen_apply)}
                  for s in MT_GEN_SEEDS]
    dump("numpy_generator.json", {"numpy_version": np.__version__, "cases": gen_cases})
    dist_cases = [{"seed": seed_json(s), "bit_generator": "PCG64",
                   "program": run_program(gen_make(s, np.random.PCG64), GEN_DIST_PROGRAM, gen_apply)}
                  for s in GEN_DIST_SEEDS]
    dist_cases += [{"seed": seed_json(s), "bit_generator": "MT19937",
                    "program": run_program(gen_make(s, np.random.MT19937), GEN_DIST_PROGRAM, gen_apply)}
                   for s in [{"int": 42}]]
    dump("numpy_generator_dist.json", {"numpy_version": np.__version__, "cases": dist_cases})
    dump("numpy_seed_sequence.json", {"numpy_version": np.__version__, "cases": seed_sequence_cases()})


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--torch", action="store_true", help="write torch.json (needs PyTorch) instead of the numpy files")
    args = ap.parse_args()
    torch_main() if args.torch else numpy_main()
