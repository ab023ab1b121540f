#!/usr/bin/env python3
"""Write the storage-dtype safetensors fixtures of crates/rlx-runtime (tests/storage_dtypes.rs).

Run (from the repository root; env made by /work/shared/ref/setup_torch.sh: torch + safetensors):
    ~/.cache/rlx-ref/torchenv/bin/python tools/gen_safetensors_dtype_fixtures.py

Writes into crates/rlx-runtime/tests/fixtures/safetensors/ (about 10 KB):
  <dtype>.safetensors  safetensors.torch.save_file, __metadata__ {"format": "pt"}, one file per
                       dtype safetensors defines beyond RLX's compute dtypes:
                         U16, U64:  "values" [2, 4] (0, 1, max, ...), "rounded" [8] (torch .to())
                         F8_*:      "codes" [16, 16] (every byte 0..255, viewed as the format),
                                    "rounded" [N] (the f32 probe converted by torch's .to())
  storage_dtypes.json  per safetensors dtype name:
    file, torch (dtype name), shape of each tensor;
    codes / values: f32_bits / f16_bits / bf16_bits = torch .to(float32 / float16 / bfloat16) of
      each stored element, as integer bit patterns (exact, NaNs included): what get / get_as must give;
    probe_f32_bits: the f32 values converted TO the dtype; rounded_bits: torch's bytes (f8) or
      values (ints) for them (what convert_dtype F32 -> dtype must give, torch's rounding);
    probe_f64: f64 values (as hex floats, exact), torch_bits: torch's f64 -> dtype bytes (torch
      rounds through f32; what convert_dtype F64 -> dtype and the CPU Cast must give).
  The rounding is torch's, which is not ml_dtypes' everywhere: torch saturates float8_e4m3fn
  (inf and every overflow -> +-448, ml_dtypes gives NaN), maps 0 and negatives to 2^-127.. in
  float8_e8m0fnu (ml_dtypes: NaN) and rounds f64 through f32 (ml_dtypes rounds once).
  F4 / F6_E2M3 / F6_E3M2 are not written: torch cannot convert float4_e2m1fn_x2 and has no 6-bit
  type, so no reference defines the values of a packed byte (see rlx-runtime/src/weights.rs).
"""
import json
import os

import numpy as np
import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "rlx-runtime", "tests", "fixtures", "safetensors")

F8 = {
    "F8_E4M3": (torch.float8_e4m3fn, 448.0),
    "F8_E5M2": (torch.float8_e5m2, 57344.0),
    "F8_E8M0": (torch.float8_e8m0fnu, 2.0 ** 127),
    "F8_E4M3FNUZ": (torch.float8_e4m3fnuz, 240.0),
    "F8_E5M2FNUZ": (torch.float8_e5m2fnuz, 57344.0),
}


def bits(t, dt, view):
    """The bit patterns of t converted to dt, as a list of ints."""
    return t.to(dt).view(view).flatten().tolist()


def decoded(t):
    return {
        "f32_bits": [b & 0xFFFFFFFF for b in bits(t, torch.float32, torch.int32)],
        "f16_bits": [b & 0xFFFF for b in bits(t, torch.float16, torch.int16)],
        "bf16_bits": [b & 0xFFFF for b in bits(t, torch.bfloat16, torch.int16)],
    }


def f32_probe(mx, g):
    """Values that round in every interesting way for a format whose max finite value is mx."""
    f = np.float32
    v = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.3, -0.3, 1.0625, 1.1875, 1.5, 1.4999,
         3.0, 0.75, mx, -mx, mx * 1.03, mx * 1.0624, mx * 1.0626, mx * 1.07, mx * 1.1, mx * 1.5,
         mx * 2, 1e30, -1e30, 1e-30, -1e-30, 2.0 ** -126, 2.0 ** -127, 2.0 ** -130, 2.0 ** -149]
    # Subnormal and tie neighbourhoods of the 8-bit formats (min subnormals 2^-9 .. 2^-17).
    for e in range(-20, -5):
        for m in (1.0, 1.5, 0.5, 0.75, 1.25, 1.125, 1.0625):
            v.append(m * 2.0 ** e)
            v.append(-m * 2.0 ** e)
    # Log-uniform randoms over the whole range, both signs.
    r = g.uniform(-40, 40, 96)
    s = g.choice([-1.0, 1.0], 96)
    v += list(s * 2.0 ** r)
    return np.array([f(x) for x in v], dtype=np.float32)


def f64_probe():
    """f64 values that round differently once (f64 -> f8) and twice (f64 -> f32 -> f8)."""
    v = []
    for base in (1.0625, 1.03125, 1.125, 1.25, 1.5, 2.0 ** -8 * 1.5, 3.0):
        for d in (2.0 ** -40, -(2.0 ** -40), 0.0):
            v.append(base + d * base)
    v += [0.1, -0.1, 1e-300, 1e300, 2.0 ** -1074, 448.0000001, 463.99999999999, 464.0000000001]
    return np.array(v, dtype=np.float64)


def main():
    os.makedirs(OUT, exist_ok=True)
    g = np.random.default_rng(20261204)
    exp = {}
    for name, (tdt, mx) in F8.items():
        codes = torch.arange(256, dtype=torch.uint8).view(tdt).reshape(16, 16)
        probe = f32_probe(mx, g)
        rounded = torch.from_numpy(probe).to(tdt)
        fname = name.lower() + ".safetensors"
        save_file({"codes": codes, "rounded": rounded}, os.path.join(OUT, fname), metadata={"format": "pt"})
        p64 = f64_probe()
        exp[name] = {
            "file": fname, "torch": str(tdt).replace("torch.", ""),
            "codes_shape": [16, 16], **decoded(codes),
            "probe_f32_bits": probe.view(np.uint32).tolist(),
            "rounded_bits": rounded.view(torch.uint8).tolist(),
            "probe_f64": [float(x).hex() for x in p64],
            "torch_bits": torch.from_numpy(p64).to(tdt).view(torch.uint8).tolist(),
        }
    for name, tdt, npdt in (("U16", torch.uint16, np.uint16), ("U64", torch.uint64, np.uint64)):
        mx = int(np.iinfo(npdt).max)
        vals = [0, 1, mx, mx - 1, 255, 256, 2 ** 15 + 3, 2 ** 13 - 1] if name == "U16" else \
            [0, 1, mx, mx - 1, 2 ** 53 + 1, 2 ** 63, 2 ** 24 + 1, 2 ** 40 + 7]
        values = torch.tensor(np.array(vals, dtype=npdt)).reshape(2, 4)
        probe = np.array([0.0, 1.0, 2.5, 3.5, 255.9, 65535.0, 1e4, 7.0], dtype=np.float32)
        rounded = torch.from_numpy(probe).to(tdt)
        fname = name.lower() + ".safetensors"
        save_file({"values": values, "rounded": rounded}, os.path.join(OUT, fname), metadata={"format": "pt"})
        exp[name] = {
            "file": fname, "torch": str(tdt).replace("torch.", ""),
            "values_shape": [2, 4], "values": vals, **decoded(values),
            "probe_f32_bits": probe.view(np.uint32).tolist(),
            "rounded_values": [int(x) for x in rounded.tolist()],
        }
    with open(os.path.join(OUT, "storage_dtypes.json"), "w") as f:
        json.dump(exp, f, separators=(",", ":"))
    print("wrote", sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
