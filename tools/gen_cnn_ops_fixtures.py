#!/usr/bin/env python3
"""numpy reference outputs for the non-conv CNN kernels of rlx-cpu
(crates/rlx-cpu/src/kernels/pool.rs: 2-D max / average pooling;
kernels/conv_transpose.rs: transposed conv).

    ~/.cache/rlx-ref/venv/bin/python tools/gen_cnn_ops_fixtures.py

Writes crates/rlx-cpu/tests/fixtures/cnn_ops/{pool,conv_transpose}.json
(committed), read by those files' unit tests. Inputs are not stored: both
sides build them as x[i] = ((i * 7) % 23 - 11) / 8, w[i] = ((i * 5) % 17 - 8) / 16,
b[i] = (i % 5 - 2) / 4 over the flattened tensor, then set x[i] = NaN for i
in a case's "nan_at". The references are float64 loops over np.pad-ed input
(ONNX / PyTorch semantics), independent of RLX's code. NaN outputs are
written as null. Cases with "check": "sums" store, instead of every value,
sum(y) and sum(y * ((i * 31) % 17)) over the flattened output (large
outputs split over threads; any wrong element moves the second sum).
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "crates", "rlx-cpu", "tests", "fixtures", "cnn_ops")


def seq(n, a, m, scale):
    return (((np.arange(n) * a) % m) - m // 2) / scale


def pool(x, kind, k, s, pads, d, cip):
    """Max / avg pool of [N, C, H, W]; padding never wins a max, NaN propagates."""
    n, c, h, w = x.shape
    (pt, pb), (pl, pr) = pads
    oh = (h + pt + pb - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + pl + pr - d[1] * (k[1] - 1) - 1) // s[1] + 1
    y = np.zeros((n, c, oh, ow))
    for oy in range(oh):
        for ox in range(ow):
            vals, padded = [], 0
            for ky in range(k[0]):
                for kx in range(k[1]):
                    iy, ix = oy * s[0] + ky * d[0] - pt, ox * s[1] + kx * d[1] - pl
                    if 0 <= iy < h and 0 <= ix < w:
                        vals.append(x[:, :, iy, ix])
                    elif iy < h + pb and ix < w + pr:
                        padded += 1
            if kind == "max":
                y[:, :, oy, ox] = np.max(np.stack(vals), axis=0) if vals else -np.inf
            else:
                y[:, :, oy, ox] = np.sum(np.stack(vals), axis=0) / (len(vals) + (padded if cip else 0))
    return y


def conv_transpose(x, w, b, s, pads, d, out_pad, groups):
    """x [N, C, H, W], w [C, O/g, kh, kw] -> [N, O, OH, OW] (ONNX ConvTranspose)."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = c // groups
    full = [(h - 1) * s[0] + d[0] * (kh - 1) + out_pad[0] + 1,
            (wd - 1) * s[1] + d[1] * (kw - 1) + out_pad[1] + 1]
    yf = np.zeros((n, og * groups, full[0], full[1]))
    for ci in range(c):
        g = ci // cg
        for oc in range(og):
            for ky in range(kh):
                for kx in range(kw):
                    ys, xs = ky * d[0], kx * d[1]
                    yf[:, g * og + oc, ys: ys + s[0] * (h - 1) + 1: s[0],
                       xs: xs + s[1] * (wd - 1) + 1: s[1]] += w[ci, oc, ky, kx] * x[:, ci]
    (pt, pb), (pl, pr) = pads
    y = yf[:, :, pt: full[0] - pb, pl: full[1] - pr]
    if b is not None:
        y = y + b[None, :, None, None]
    return y


def inputs(xd, nan_at=()):
    x = seq(int(np.prod(xd)), 7, 23, 8)
    x[list(nan_at)] = np.nan
    return x.reshape(xd)


def values(y, check):
    flat = y.reshape(-1)
    if check == "sums":
        wts = (np.arange(flat.size) * 31) % 17
        return {"sum": float(flat.sum()), "weighted_sum": float((flat * wts).sum())}
    return {"y": [None if np.isnan(v) else float(v) for v in flat]}


# name, kind, x dims, kernel, stride, pads ((top, bottom), (left, right)), dilation,
# count_include_pad, nan_at, check
POOL_CASES = [
    ("sppf_max_5x5_s1_p2", "max", (1, 3, 9, 9), (5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1), False, (), "all"),
    ("unet_max_2x2_s2_odd", "max", (2, 3, 7, 9), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), False, (), "all"),
    ("crnn_max_2x1_s21", "max", (2, 2, 6, 5), (2, 1), (2, 1), ((0, 0), (0, 0)), (1, 1), False, (), "all"),
    ("max_3x3_s23_dilated_asym_pads", "max", (2, 2, 9, 10), (3, 3), (2, 3), ((1, 2), (2, 0)), (2, 1), False, (), "all"),
    ("max_3x3_s1_dilated_separable", "max", (1, 2, 9, 10), (3, 3), (1, 1), ((2, 1), (1, 2)), (2, 1), False, (), "all"),
    ("max_nan_propagates", "max", (1, 2, 6, 7), (3, 3), (1, 2), ((1, 1), (1, 1)), (1, 1), False, (4, 23, 60), "all"),
    ("avg_3x2_s12_dilated_pads", "avg", (1, 2, 8, 9), (3, 2), (1, 2), ((2, 1), (0, 2)), (2, 1), False, (), "all"),
    ("avg_3x2_s12_dilated_pads_cip", "avg", (1, 2, 8, 9), (3, 2), (1, 2), ((2, 1), (0, 2)), (2, 1), True, (), "all"),
    ("avg_2x2_s1_edge_pads", "avg", (1, 1, 3, 4), (2, 2), (1, 1), ((1, 1), (1, 0)), (1, 1), False, (), "all"),
    ("max_threaded_3x3_s2_p1", "max", (2, 8, 48, 48), (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), False, (), "sums"),
    ("avg_threaded_2x2_s2", "avg", (1, 16, 48, 48), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), False, (), "sums"),
    # A small input under a wide window (YOLO's SPPF): split by the reads.
    ("sppf_threaded_5x5_s1_p2", "max", (1, 16, 24, 24), (5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1), False, (), "sums"),
    # ResNet's 3x3 stride-2 max-pool (the paired stride-2 row fold) on odd planes, a NaN in an even and an odd column.
    ("max_3x3_s2_p1_odd_nan", "max", (1, 3, 13, 11), (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), False, (5, 40, 200), "all"),
    ("max_3x3_s2_p1_even_batch2", "max", (2, 2, 12, 34), (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), False, (), "all"),
    # Windows that tile the input (one pass per output row): NaNs in either row and
    # column of a window, odd sizes (the last row / column left out), kh 3 / kw 1.
    ("tiled_max_2x2_s2_odd_nan", "max", (2, 3, 9, 11), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), False, (0, 13, 30, 112), "all"),
    ("tiled_avg_2x2_s2_odd", "avg", (1, 2, 7, 35), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), False, (), "all"),
    ("tiled_max_3x2_s32", "max", (1, 2, 10, 9), (3, 2), (3, 2), ((0, 0), (0, 0)), (1, 1), False, (25,), "all"),
    ("tiled_max_3x1_s31_odd", "max", (2, 2, 11, 7), (3, 1), (3, 1), ((0, 0), (0, 0)), (1, 1), False, (), "all"),
    # Tiling window with a trailing pad (ceil mode): the general path.
    ("max_2x2_s2_ceil_pad", "max", (1, 2, 7, 9), (2, 2), (2, 2), ((0, 1), (0, 1)), (1, 1), False, (), "all"),
    ("tiled_max_threaded_2x2_s2", "max", (1, 16, 64, 66), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), False, (), "sums"),
    # Whole 16-channel blocks, which pool_blocked.rs's unit test also runs blocked (its
    # separable AVX-512 form: row maxima kept while later output rows read them): ResNet's
    # 3x3 stride 2 on odd planes with NaNs, dilated asymmetric windows, SPPF's 5x5 stride 1,
    # 2x2 stride 2 on odd planes, and a 4-block batch of 2 split over threads.
    ("blocked_max_3x3_s2_p1_odd_nan", "max", (1, 16, 13, 11), (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), False, (5, 300, 1201, 2000), "all"),
    ("blocked_max_3x3_s23_dilated_asym", "max", (2, 16, 11, 10), (3, 3), (2, 3), ((1, 2), (2, 0)), (2, 1), False, (), "sums"),
    ("blocked_max_5x5_s1_p2", "max", (1, 32, 9, 11), (5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1), False, (), "sums"),
    ("blocked_max_2x2_s2_odd", "max", (2, 16, 9, 13), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), False, (), "sums"),
    ("blocked_max_3x3_s2_p1_threaded", "max", (2, 64, 23, 26), (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), False, (), "sums"),
]

# name, x dims, O, kernel, stride, pads, dilation, output_padding, groups, bias, check
CT_CASES = [
    ("unet_2x2_s2_bias", (1, 6, 4, 5), 3, (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), (0, 0), 1, True, "all"),
    ("k3_s2_p1_outpad1_batch2", (2, 4, 3, 4), 5, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), (1, 1), 1, True, "all"),
    ("k3_s1_p1_same", (1, 3, 5, 6), 2, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), (0, 0), 1, False, "all"),
    ("grouped_dilated_asym", (1, 4, 2, 3), 2, (3, 2), (2, 3), ((1, 0), (0, 1)), (1, 2), (1, 2), 2, True, "all"),
    ("k2_s3_gaps", (1, 2, 3, 3), 2, (2, 2), (3, 3), ((0, 0), (1, 0)), (1, 1), (2, 0), 1, True, "all"),
    ("unet_2x2_s2_large", (2, 32, 16, 16), 16, (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), (0, 0), 1, True, "sums"),
    # Kernel = stride (each output written once, bias folded in): no bias, odd sizes,
    # stride 3, grouped; and kernel = stride with output padding (bias-filled gaps).
    ("once_2x2_s2_nobias_odd", (1, 5, 3, 7), 3, (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), (0, 0), 1, False, "all"),
    ("once_3x3_s3_bias", (2, 3, 3, 5), 4, (3, 3), (3, 3), ((0, 0), (0, 0)), (1, 1), (0, 0), 1, True, "all"),
    ("once_2x3_s23_grouped", (1, 4, 3, 4), 6, (2, 3), (2, 3), ((0, 0), (0, 0)), (1, 1), (0, 0), 2, True, "all"),
    ("k2_s2_outpad1_bias", (1, 3, 3, 4), 2, (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), (1, 1), 1, True, "all"),
    ("once_2x2_s2_threaded_odd", (1, 48, 17, 19), 32, (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), (0, 0), 1, True, "sums"),
    # The direct AVX-512 2x2 stride-2 kernel (conv_transpose_up2.rs): rows of 16 + 5 pixels
    # (a 10-lane interleaved tail), 5 channels (one 4-channel tile + 1); and, split over
    # threads by (image, row), 4 images of 12 rows of 16 + 11 pixels, 7 channels.
    ("up2_tail21_o5", (1, 3, 2, 21), 5, (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), (0, 0), 1, True, "all"),
    ("up2_threaded_batch4_o7", (4, 9, 12, 27), 7, (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), (0, 0), 1, True, "sums"),
    # Its blocked output (16 channels per vector; the unit test also runs the 16 / 32-output
    # cases above blocked): 2 images of rows of 7 pixels (a 4-pixel tile and a 3-pixel
    # tail), no bias.
    ("up2_blocked_nobias_batch2", (2, 5, 3, 7), 16, (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), (0, 0), 1, False, "all"),
]


def main():
    os.makedirs(OUT, exist_ok=True)
    cases = []
    for name, kind, xd, k, s, pads, d, cip, nan_at, check in POOL_CASES:
        y = pool(inputs(xd, nan_at), kind, k, s, pads, d, cip)
        cases.append({"name": name, "kind": kind, "x": list(xd), "kernel": list(k), "stride": list(s),
                      "pads": [list(p) for p in pads], "dilation": list(d), "count_include_pad": cip,
                      "nan_at": list(nan_at), "y_dims": list(y.shape), **values(y, check)})
    with open(os.path.join(OUT, "pool.json"), "w") as f:
        json.dump({"cases": cases}, f, separators=(",", ":"))
    cases = []
    for name, xd, o, k, s, pads, d, op, groups, bias, check in CT_CASES:
        wd = (xd[1], o // groups) + k
        w = seq(int(np.prod(wd)), 5, 17, 16).reshape(wd)
        b = (np.arange(o) % 5 - 2) / 4 if bias else None
        y = conv_transpose(inputs(xd), w, b, s, pads, d, op, groups)
        cases.append({"name": name, "x": list(xd), "w": list(wd), "stride": list(s),
                      "pads": [list(p) for p in pads], "dilation": list(d), "output_padding": list(op),
                      "groups": groups, "bias": bias, "y_dims": list(y.shape), **values(y, check)})
    with open(os.path.join(OUT, "conv_transpose.json"), "w") as f:
        json.dump({"cases": cases}, f, separators=(",", ":"))
    print(f"wrote {OUT}/pool.json, conv_transpose.json")


if __name__ == "__main__":
    main()
