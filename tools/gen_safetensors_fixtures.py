#!/usr/bin/env python3
"""Write the safetensors fixtures of crates/rlx-runtime (tests/weights.rs).

Run (from the repository root; env made by /work/shared/ref/setup_torch.sh: torch + safetensors):
    ~/.cache/rlx-ref/torchenv/bin/python tools/gen_safetensors_fixtures.py

Writes into crates/rlx-runtime/tests/fixtures/safetensors/ (a few KB):
  dtypes.safetensors  safetensors.torch.save_file: one tensor per dtype RLX loads
                      (f32, f64, f16, bf16, i8, i16, i32, i64, u8, u16, bool; 0-d to 3-d, one empty)
                      and __metadata__ {"format": "pt", "origin": "rlx-fixture"}. (The other storage
                      dtypes: tools/gen_safetensors_dtype_fixtures.py.)
  dtypes.json         per tensor: dtype, shape, values (torch .double().flatten(): the stored
                      values exactly, bf16/f16 widened) -- what `get` must return.
  mlp.safetensors     a 2-layer MLP's weights, as torch.nn.Linear stores them: fc1.weight f16
                      [5, 4], fc1.bias bf16 [5], fc2.weight f32 [3, 5], fc2.bias f32 [3].
  mlp.json            x [2, 4] and y = fc2(relu(fc1(x))) computed by torch in float32 from the
                      stored (f16 / bf16) weights widened to f32: the graph, with params set by
                      set_params_from (f16 / bf16 -> f32), must reproduce it.
"""
import json
import os

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "rlx-runtime", "tests", "fixtures", "safetensors")


def main():
    os.makedirs(OUT, exist_ok=True)
    g = torch.Generator().manual_seed(20261202)
    t = {
        "f32.matrix": torch.randn(2, 3, generator=g),
        "f64.vector": torch.randn(4, generator=g, dtype=torch.float64),
        "f16.cube": (torch.randn(2, 2, 3, generator=g) * 100).half(),
        "bf16.vector": (torch.randn(5, generator=g) * 1e3).bfloat16(),
        "i8.vector": torch.tensor([-128, -1, 0, 127], dtype=torch.int8),
        "i16.vector": torch.tensor([-32768, 7, 32767], dtype=torch.int16),
        "i32.scalar": torch.tensor(-123456, dtype=torch.int32),
        "i64.vector": torch.tensor([-(2 ** 40), 2 ** 40 + 1], dtype=torch.int64),
        "u8.vector": torch.tensor([0, 1, 255], dtype=torch.uint8),
        "bool.vector": torch.tensor([True, False, True]),
        "f32.empty": torch.zeros(0, 3),
        "u16.vector": torch.tensor([1, 2, 65535], dtype=torch.uint16),
    }
    save_file(t, os.path.join(OUT, "dtypes.safetensors"), metadata={"format": "pt", "origin": "rlx-fixture"})
    exp = {}
    for k, v in t.items():
        exp[k] = {"dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape),
                  "values": v.double().flatten().tolist()}
    with open(os.path.join(OUT, "dtypes.json"), "w") as f:
        json.dump(exp, f, indent=1)

    w = {
        "fc1.weight": (torch.randn(5, 4, generator=g) * 0.5).half(),
        "fc1.bias": (torch.randn(5, generator=g) * 0.1).bfloat16(),
        "fc2.weight": torch.randn(3, 5, generator=g) * 0.5,
        "fc2.bias": torch.randn(3, generator=g) * 0.1,
    }
    save_file(w, os.path.join(OUT, "mlp.safetensors"))
    x = torch.randn(2, 4, generator=g)
    f = {k: v.float() for k, v in w.items()}
    h = torch.relu(x @ f["fc1.weight"].T + f["fc1.bias"])
    y = h @ f["fc2.weight"].T + f["fc2.bias"]
    with open(os.path.join(OUT, "mlp.json"), "w") as fh:
        json.dump({"x": x.flatten().tolist(), "y": y.flatten().tolist()}, fh, indent=1)
    print("wrote", sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
