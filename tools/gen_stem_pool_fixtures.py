#!/usr/bin/env python3
"""Fixtures of crates/rlx-cpu/tests/stem_pool.rs: a 3-channel 7x7 stride-2
stem conv (padding 3) + ReLU and its 3x3 stride-2 max pool (padding 1,
-inf: padding never wins), which the CPU executable runs as one step in
bands of pool rows (kernels/stem_pool.rs), in numpy float64.

    ~/.cache/rlx-ref/venv/bin/python tools/gen_stem_pool_fixtures.py

writes crates/rlx-cpu/tests/fixtures/stem_pool/cases.json: a list of cases

  x  [n, 3, h, w]                         values(.., 60 + i) * 16
  s  = relu(conv7x7s2p3(x, w [o, 3, 7, 7]) + b)   w = values(.., 70 + i), b = values(o, 80 + i)
  m  = maxpool(s, 3x3, stride 2, pad 1)   (key "m", NCHW)

for case i of (n, h, w, o): odd and even maps, 16 / 32 / 64 outputs,
batch 1 and 2, pool maps of 8 to 13 rows (bands of 4 rows and a partial
one). values / conv / max pool as tools/gen_nchwc_chain_fixtures.py's.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_nchwc_chain_fixtures import conv_strided, maxpool, values  # noqa: E402

# (batch, h, w, outputs); the stem's output has >= 16 x 16 pixels, the
# stem kernel's shapes (`Conv2d::stem_wins`).
CASES = [(2, 37, 29, 16), (1, 32, 32, 32), (2, 32, 32, 16), (1, 37, 29, 32), (1, 49, 41, 64)]


def case(i, n, h, w, o):
    f64 = lambda a: a.astype(np.float64)
    x = f64(values(n * 3 * h * w, 60 + i)).reshape(n, 3, h, w) * 16
    wt = f64(values(o * 3 * 49, 70 + i)).reshape(o, 3, 7, 7)
    b = f64(values(o, 80 + i))
    s = np.maximum(conv_strided(x, wt, b, 2, 3), 0)
    m = maxpool(s, 3, 2, ((1, 1), (1, 1)))
    return {
        "n": n,
        "h": h,
        "w": w,
        "o": o,
        "m_shape": list(m.shape),
        "m": [float("%.8g" % v) for v in m.ravel()],
    }


def main():
    out = [case(i, *c) for i, c in enumerate(CASES)]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "rlx-cpu",
                        "tests", "fixtures", "stem_pool", "cases.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
