#!/usr/bin/env python3
"""numpy reference outputs for the 2-D conv fast paths of rlx-cpu
(crates/rlx-cpu/src/kernels/conv2d.rs: depthwise, row-wise im2col, 1x1).

    ~/.cache/rlx-ref/venv/bin/python tools/gen_conv2d_fixtures.py

Writes crates/rlx-cpu/tests/fixtures/conv2d/cases.json (committed), read by the
unit tests of conv2d.rs. Inputs are not stored: both sides build them as
x[i] = ((i * 7) % 23 - 11) / 8, w[i] = ((i * 5) % 17 - 8) / 16, b[i] = (i % 5 - 2) / 4
over the flattened tensor. The reference is a float64 loop over np.pad-ed input
(cross-correlation, PyTorch / ONNX semantics), independent of RLX's code.
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "crates", "rlx-cpu", "tests", "fixtures", "conv2d", "cases.json")


def seq(n, a, m, scale):
    return (((np.arange(n) * a) % m) - m // 2) / scale


def conv(x, w, b, stride, pads, dil, groups):
    n, c, _, _ = x.shape
    o, cg, kh, kw = w.shape
    og = o // groups
    (pt, pb), (pl, pr) = pads
    xp = np.pad(x, [(0, 0), (0, 0), (pt, pb), (pl, pr)])
    oh = (xp.shape[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((n, o, oh, ow))
    for oc in range(o):
        g = oc // og
        y[:, oc] = b[oc]
        for ci in range(cg):
            for ky in range(kh):
                for kx in range(kw):
                    ys, xs = ky * dil[0], kx * dil[1]
                    patch = xp[:, g * cg + ci,
                               ys: ys + stride[0] * (oh - 1) + 1: stride[0],
                               xs: xs + stride[1] * (ow - 1) + 1: stride[1]]
                    y[:, oc] += w[oc, ci, ky, kx] * patch
    return y


# name, x dims, O, kernel, stride, pads ((top, bottom), (left, right)), dilation, groups, bias
CASES = [
    ("depthwise_3x3_s1_p1_batch2", (2, 5, 7, 9), 5, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 5, True),
    ("depthwise_3x3_s2_odd", (1, 4, 8, 7), 4, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 4, False),
    ("depthwise_multiplier2_dilation2", (1, 3, 9, 8), 6, (3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2), 3, True),
    ("depthwise_5x5_s2_asymmetric_pads", (2, 3, 10, 11), 3, (5, 5), (2, 2), ((0, 2), (1, 2)), (1, 1), 3, True),
    ("depthwise_pad_beyond_kernel", (1, 2, 3, 4), 2, (2, 2), (1, 1), ((3, 3), (3, 2)), (1, 1), 2, True),
    ("depthwise_stride_3_by_1", (1, 3, 10, 6), 3, (3, 2), (3, 1), ((1, 0), (0, 1)), (1, 2), 3, False),
    ("pointwise_1x1_batch2", (2, 6, 5, 5), 4, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True),
    ("pointwise_1x1_stride2", (1, 6, 7, 6), 5, (1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), 1, True),
    ("dense_3x3_s2_p1_batch2", (2, 3, 9, 7), 4, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1, True),
    ("dense_7x7_s2_p3_stem", (1, 3, 11, 10), 2, (7, 7), (2, 2), ((3, 3), (3, 3)), (1, 1), 1, False),
    ("grouped_3x3_dilation_2_1", (1, 6, 8, 9), 4, (3, 3), (1, 1), ((1, 1), (2, 2)), (2, 1), 2, True),
    ("dense_taller_kernel_than_input", (2, 2, 2, 5), 3, (3, 3), (1, 2), ((1, 1), (1, 1)), (1, 1), 1, True),
    ("grouped_odd_channels_s2", (1, 9, 7, 7), 6, (3, 3), (2, 2), ((1, 0), (0, 1)), (1, 1), 3, False),
    # 3x3 stride 1 (Winograd F(2,3)): odd output sizes (partial tiles), no / asymmetric
    # padding, groups, batch 2; the unit tests run these through the Winograd kernel
    # directly, and the fifth is large enough that conv itself picks Winograd.
    ("winograd_3x3_s1_p1_batch2", (2, 3, 7, 9), 4, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True),
    ("winograd_3x3_s1_p0_odd", (1, 5, 9, 8), 3, (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, False),
    ("winograd_3x3_s1_asymmetric_pads", (1, 4, 6, 7), 5, (3, 3), (1, 1), ((0, 2), (2, 1)), (1, 1), 1, True),
    ("winograd_3x3_s1_grouped", (1, 6, 7, 5), 4, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 2, True),
    ("winograd_3x3_s1_picked_by_conv", (1, 16, 16, 17), 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True),
    # Rows wide enough for the transforms' full vectors (16 f32 lanes) plus a
    # remainder; left padding odd and past one tile column, and even.
    ("winograd_3x3_s1_wide_odd_pads", (1, 3, 5, 70), 2, (3, 3), (1, 1), ((1, 2), (3, 2)), (1, 1), 1, True),
    ("winograd_3x3_s1_wide_even_pads", (2, 2, 6, 67), 3, (3, 3), (1, 1), ((2, 0), (2, 0)), (1, 1), 1, False),
    # 3x3 stride 1 at ResNet's 7x7 / 14x14 sizes (too few tiles for Winograd: the
    # packed-weight GEMM; 24 / 20 outputs leave a narrow last panel).
    ("packed_3x3_7x7", (1, 32, 7, 7), 24, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True),
    ("packed_3x3_14x14_batch2", (2, 16, 14, 14), 20, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True),
]


def main():
    cases = []
    for name, xd, o, k, s, pads, dil, groups, bias in CASES:
        c = xd[1]
        wd = (o, c // groups) + k
        x = seq(int(np.prod(xd)), 7, 23, 8).reshape(xd)
        w = seq(int(np.prod(wd)), 5, 17, 16).reshape(wd)
        b = ((np.arange(o) % 5) - 2) / 4 if bias else np.zeros(o)
        y = conv(x, w, b, s, pads, dil, groups)
        cases.append({
            "name": name, "x": list(xd), "w": list(wd), "bias": bias, "stride": list(s),
            "pads": [list(p) for p in pads], "dilation": list(dil), "groups": groups,
            "y_dims": list(y.shape), "y": [float(f"{v:.9g}") for v in y.ravel()],
        })
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"generator": "tools/gen_conv2d_fixtures.py", "cases": cases}, f)
    print(f"{OUT}: {len(cases)} cases")


if __name__ == "__main__":
    main()
