#!/usr/bin/env python3
"""Fixtures of crates/rlx-cpu/tests/nchwc_chain.rs: a ResNet-style chain of
three 3x3 convs, and two MobileNetV2 inverted-residual blocks, that the CPU
executable keeps in the NCHWc blocked layout between convs, computed here
with numpy in float64.

    ~/.cache/rlx-ref/venv/bin/python tools/gen_nchwc_chain_fixtures.py

writes crates/rlx-cpu/tests/fixtures/conv_nchwc/chain.json,
crates/rlx-cpu/tests/fixtures/conv_nchwc/inverted_residual.json,
crates/rlx-cpu/tests/fixtures/conv_nchwc/resnet_like.json,
crates/rlx-cpu/tests/fixtures/conv_nchwc/layer1_like.json,
crates/rlx-cpu/tests/fixtures/conv_nchwc/transition.json,
crates/rlx-cpu/tests/fixtures/conv_nchwc/inverted_residual_partial.json
(`inverted_residual_partial`: block outputs of 24 / 40 channels),
crates/rlx-cpu/tests/fixtures/conv_nchwc/stem_stage.json,
crates/rlx-cpu/tests/fixtures/conv_nchwc/stem_pool_block.json,
crates/rlx-cpu/tests/fixtures/conv_nchwc/stem_pool_block_c1.json,
crates/rlx-cpu/tests/fixtures/conv_nchwc/stem_depthwise.json and
crates/rlx-cpu/tests/fixtures/conv_nchwc/stem_conv.json.

Inverted residual (relu6(v) = min(max(v, 0), 6); dw: depthwise 3x3, pad 1):

  x  [2, 24, 18, 18]                            (input)
  e1 = relu6(conv1x1(x, we1 [96, 24]) + be1)    (24 -> 96)
  d1 = relu6(dw(e1, wd1 [96, 1, 3, 3], stride 2) + bd1)   (18x18 -> 9x9)
  p1 = conv1x1(d1, wp1 [32, 96]) + bp1          (96 -> 32)
  e2 = relu6(conv1x1(p1, we2 [96, 32]) + be2)   (32 -> 96)
  d2 = relu6(dw(e2, wd2, stride 1) + bd2)
  y  = conv1x1(d2, wp2 [32, 96]) + bp2 + p1     (residual; graph output)

and the same on a [2, 24, 14, 14] input (9x9 -> 7x7 after the stride 2:
the 1x1 convs there are the packed-weight GEMM's shapes): keys "hw18" and
"hw14"; and on a [1, 24, 58, 58] input (key "hw58": both depthwise convs on
planes over 28 x 28, 58 x 58 stride 2 and 29 x 29 stride 1, which the
depthwise kernel runs blocked in bands of output rows).

Weights / biases are values(n, seed) (seeds 11.. in the order above, each
weight then its bias), x is values(.., 10) * 16.

  x  [2, 16, 9, 9], r [2, 16, 9, 9]          (inputs)
  y1 = relu(conv(x, w1) + b1)                 (graph output in case "two_outputs")
  y2 = relu(conv(y1, w2) + b2 + r)            (residual add, NCHW operand)
  y3 = conv(y2, w3) + b3                      (graph output)

ResNet-like blocks (resnet_like.json; conv3x3: 3x3, stride 1, padding 1;
maxpool pads with -inf; every conv 32 -> 32 but the first, 16 -> 32):

  x  [2, 16, 11, 13]                            (input, values(.., 30) * 16)
  a  = relu(conv3x3(x, w0 [32, 16]) + b0)       (stem: written blocked for the pool)
  m  = maxpool(a, 3x3, stride 2, pad 1)         (blocked input, odd sizes: 6 x 7)
  c1 = relu(conv3x3(m, w1) + b1)
  r1 = relu(conv3x3(c1, w2) + b2 + m)           (NCHW residual)
  c3 = relu(conv3x3(r1, w3) + b3)
  r2 = relu(conv3x3(c3, w4) + b4 + r1)          (blocked residual)
  g  = mean(r2, axes (2, 3))                    (graph output [2, 32, 1, 1])
  q  = maxpool(r2, 2x2, stride 2, pads (0, 1))  (ceil-mode style: 3 x 4; graph output)

and r2 itself (the test's variant with r2 also a graph output: written NCHW
while its residual r1 is read blocked).

Weights / biases values(n, seed), seeds 31.. (weight then bias, in order).

ResNet-18 layer-1-like blocks (layer1_like.json; every conv 64 -> 64 3x3,
stride 1, padding 1, on 34 x 34 maps: shapes Winograd takes, which run the
NCHWc kernel once the layout plan keeps a side blocked):

  x  [2, 64, 34, 34]                            (input, values(.., 50) * 16)
  c1 = relu(conv3x3(x, w1) + b1)
  r1 = relu(conv3x3(c1, w2) + b2 + x)           (NCHW residual)
  c3 = relu(conv3x3(r1, w3) + b3)
  r2 = relu(conv3x3(c3, w4) + b4 + r1)          (blocked residual)
  g  = mean(r2, axes (2, 3))                    (graph output [2, 64, 1, 1])
  q  = maxpool(r2, 4x4, stride 4)               (graph output [2, 64, 8, 8])

Weights / biases values(n, seed), seeds 51.. (weight then bias, in order).

A ResNet stage transition with its 1x1 stride-2 downsample (transition.json;
the stage input read blocked by both the 3x3 stride-2 conv and the
downsample, whose output the block's second conv reads as a blocked residual):

  x  [2, 32, 14, 14]                                (input, values(.., 70) * 16)
  a  = relu(conv3x3(x, w1 [32, 32]) + b1)           (the stage input)
  t  = relu(conv(a, w2 [64, 32, 3, 3], stride 2, pad 1) + b2)   (7 x 7)
  d  = conv(a, w3 [64, 32, 1, 1], stride 2) + b3    (downsample, 7 x 7)
  y  = relu(conv3x3(t, w4 [64, 64]) + b4 + d)
  g  = mean(y, axes (2, 3))                         (graph output [2, 64, 1, 1])
  q  = maxpool(y, 2x2, stride 2, pads (0, 1))       (graph output [2, 64, 4, 4])

Weights / biases values(n, seed), seeds 71.. (weight then bias, in order).

A ResNet-like start (stem_stage.json): the 3-channel 7x7 stride-2 stem
and its max pool, a residual block on the pool output, then
a stage transition on a 17 x 18 map (9 x 9 after the stride 2: more than 64
output pixels, so the 1x1 stride-2 downsample runs by rows, reading its
unpadded blocked image in place):

  x  [2, 3, 67, 71]                                 (input, values(.., 90) * 16)
  s  = relu(conv(x, w1 [32, 3, 7, 7], stride 2, pad 3) + b1)     (34 x 36)
  m  = maxpool(s, 3x3, stride 2, pads (1, 1))       (17 x 18)
  c1 = relu(conv3x3(m, w2 [32, 32]) + b2)
  r1 = relu(conv3x3(c1, w3 [32, 32]) + b3 + m)      (NCHW residual)
  t  = relu(conv(r1, w4 [64, 32, 3, 3], stride 2, pad 1) + b4)  (9 x 9)
  d  = conv(r1, w5 [64, 32, 1, 1], stride 2) + b5   (downsample, 9 x 9)
  y  = relu(conv3x3(t, w6 [64, 64]) + b6 + d)
  g  = mean(y, axes (2, 3))                         (graph output [2, 64, 1, 1])
  q  = maxpool(y, 2x2, stride 2, pads (0, 1))       (graph output [2, 64, 5, 5])

Weights / biases values(n, seed), seeds 91.. (weight then bias, in order).

ResNet-18's start at an odd size (stem_pool_block.json): a 3 -> 64 7x7
stride-2 stem, its 3x3 stride-2 max pool and a residual block on the pool
output, plus average pools of a 64 -> 128 1x1 conv of the stem output and
of the pool output (the test makes those graph outputs to keep the stem /
the pool writing NCHW):

  x  [2, 3, 37, 41]                                 (input, values(.., 110) * 16)
  s  = relu(conv(x, w1 [64, 3, 7, 7], stride 2, pad 3) + b1)     (19 x 21)
  m  = maxpool(s, 3x3, stride 2, pads (1, 1))       (10 x 11)
  c1 = relu(conv3x3(m, w2 [64, 64]) + b2)
  r1 = relu(conv3x3(c1, w3 [64, 64]) + b3 + m)
  g  = mean(r1, axes (2, 3))                        ([2, 64, 1, 1])
  q  = maxpool(r1, 2x2, stride 2, pads (0, 1))      ([2, 64, 5, 6])
  a  = avgpool(conv1x1(s, w4 [128, 64]) + b4, 4x4, stride 4)     ([2, 128, 4, 5])
  b  = avgpool(m, 2x2, stride 2)                    ([2, 64, 5, 5])

Weights / biases values(n, seed), seeds 111.. (weight then bias, in order).
stem_pool_block_c1.json: the same with a one-channel image, x [2, 1, 29, 33]
(s 15 x 17, m 8 x 9, q [2, 64, 4, 5], a [2, 128, 3, 4], b [2, 64, 4, 4]).

Every conv of the chain 16 -> 16, stride 1, padding 1. Values are float32 made by
`values(n, seed)` below (the test computes the same in Rust: each step one
correctly rounded float32 operation).
"""
import json
import os

import numpy as np

N, C, HW = 2, 16, 9


def values(n, seed):
    """((i * 7919 + seed * 104729) % 1000) / 500 - 1, times 1/16, in float32."""
    k = (np.arange(n, dtype=np.int64) * 7919 + seed * 104729) % 1000
    v = k.astype(np.float32) / np.float32(500) - np.float32(1)
    return v * np.float32(0.0625)


def conv3x3(x, w, b):
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, w.shape[0], h, wd))
    for ky in range(3):
        for kx in range(3):
            patch = xp[:, :, ky:ky + h, kx:kx + wd]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx])
    return y + b[None, :, None, None]


def conv1x1(x, w, b):
    return np.einsum("nchw,oc->nohw", x, w) + b[None, :, None, None]


def depthwise3x3(x, w, b, stride):
    n, c, h, wd = x.shape
    oh, ow = (h - 1) // stride + 1, (wd - 1) // stride + 1
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, c, oh, ow))
    for ky in range(3):
        for kx in range(3):
            patch = xp[:, :, ky:ky + stride * (oh - 1) + 1:stride, kx:kx + stride * (ow - 1) + 1:stride]
            y += patch * w[None, :, 0, ky, kx, None, None]
    return y + b[None, :, None, None]


def inverted_residual(hw, n=2):
    return two_blocks(n, hw, (24, 96, 96, 32), (10, 11))


def two_blocks(n, hw, chans, seeds):
    """Two inverted-residual blocks: x [n, c, hw, hw] (values(.., seeds[0]) *
    16) -> e1 (e1c channels) -> d1 (stride 2) -> p1 (p) -> e2 (e) -> d2 ->
    y = project + p1; weight / bias i values(.., seeds[1] + 2 i (+ 1))."""
    c, e1c, e, p = chans
    f64 = lambda a: a.astype(np.float64)
    relu6 = lambda v: np.minimum(np.maximum(v, 0), 6)
    x = f64(values(n * c * hw * hw, seeds[0])).reshape(n, c, hw, hw) * 16
    shapes = [(e1c, c), (e1c, 1, 3, 3), (p, e1c), (e, p), (e, 1, 3, 3), (p, e)]
    ws, bs = [], []
    for i, shape in enumerate(shapes):
        ws.append(f64(values(int(np.prod(shape)), seeds[1] + 2 * i)).reshape(shape))
        bs.append(f64(values(shape[0], seeds[1] + 1 + 2 * i)))
    e1 = relu6(conv1x1(x, ws[0], bs[0]))
    d1 = relu6(depthwise3x3(e1, ws[1], bs[1], 2))
    p1 = conv1x1(d1, ws[2], bs[2])
    e2 = relu6(conv1x1(p1, ws[3], bs[3]))
    d2 = relu6(depthwise3x3(e2, ws[4], bs[4], 1))
    y = conv1x1(d2, ws[5], bs[5]) + p1
    return {"shape": list(y.shape), "y": [float("%.8g" % v) for v in y.ravel()]}


def inverted_residual_partial(hw, n, p, e):
    """A MobileNetV2 56 x 56-stage-like pair of blocks whose block outputs
    have `p` channels, not whole 16-channel blocks (24 / 40):

      x  [n, 16, hw, hw]                              (input, values(.., 40) * 16)
      e1 = relu6(conv1x1(x, [96, 16]) + b)            (16 -> 96)
      d1 = relu6(dw(e1, [96, 1, 3, 3], stride 2) + b)
      p1 = conv1x1(d1, [p, 96]) + b                   (96 -> p)
      e2 = relu6(conv1x1(p1, [e, p]) + b)             (p -> e)
      d2 = relu6(dw(e2, [e, 1, 3, 3], stride 1) + b)
      y  = conv1x1(d2, [p, e]) + b + p1               (residual; graph output)

    weights / biases values(.., 41..) in that order (weight then bias)."""
    return two_blocks(n, hw, (16, 96, e, p), (40, 41))


def maxpool(x, k, s, pads):
    """pads: ((top, bottom), (left, right)), -inf padding (never wins)."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0)) + pads, constant_values=-np.inf)
    oh, ow = (xp.shape[2] - k) // s + 1, (xp.shape[3] - k) // s + 1
    y = np.full((n, c, oh, ow), -np.inf)
    for ky in range(k):
        for kx in range(k):
            y = np.maximum(y, xp[:, :, ky:ky + s * (oh - 1) + 1:s, kx:kx + s * (ow - 1) + 1:s])
    return y


def resnet_like():
    f64 = lambda a: a.astype(np.float64)
    relu = lambda v: np.maximum(v, 0)
    x = f64(values(2 * 16 * 11 * 13, 30)).reshape(2, 16, 11, 13) * 16
    ws, bs = [], []
    for i, c in enumerate([16, 32, 32, 32, 32]):
        ws.append(f64(values(32 * c * 9, 31 + 2 * i)).reshape(32, c, 3, 3))
        bs.append(f64(values(32, 32 + 2 * i)))
    a = relu(conv3x3(x, ws[0], bs[0]))
    m = maxpool(a, 3, 2, ((1, 1), (1, 1)))
    c1 = relu(conv3x3(m, ws[1], bs[1]))
    r1 = relu(conv3x3(c1, ws[2], bs[2]) + m)
    c3 = relu(conv3x3(r1, ws[3], bs[3]))
    r2 = relu(conv3x3(c3, ws[4], bs[4]) + r1)
    g = r2.mean(axis=(2, 3), keepdims=True)
    q = maxpool(r2, 2, 2, ((0, 1), (0, 1)))
    enc = lambda v: [float("%.8g" % e) for e in v.ravel()]
    return {"g": enc(g), "q_shape": list(q.shape), "q": enc(q), "r2": enc(r2)}


def conv_strided(x, w, b, stride, pad):
    n, c, h, wd = x.shape
    k = w.shape[2]
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = np.zeros((n, w.shape[0], oh, ow))
    for ky in range(k):
        for kx in range(k):
            patch = xp[:, :, ky:ky + stride * (oh - 1) + 1:stride, kx:kx + stride * (ow - 1) + 1:stride]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx])
    return y + b[None, :, None, None]


def transition():
    f64 = lambda a: a.astype(np.float64)
    relu = lambda v: np.maximum(v, 0)
    x = f64(values(2 * 32 * 14 * 14, 70)).reshape(2, 32, 14, 14) * 16
    shapes = [(32, 32, 3, 3), (64, 32, 3, 3), (64, 32, 1, 1), (64, 64, 3, 3)]
    ws, bs = [], []
    for i, shape in enumerate(shapes):
        ws.append(f64(values(int(np.prod(shape)), 71 + 2 * i)).reshape(shape))
        bs.append(f64(values(shape[0], 72 + 2 * i)))
    a = relu(conv3x3(x, ws[0], bs[0]))
    t = relu(conv_strided(a, ws[1], bs[1], 2, 1))
    d = conv_strided(a, ws[2], bs[2], 2, 0)
    y = relu(conv3x3(t, ws[3], bs[3]) + d)
    g = y.mean(axis=(2, 3), keepdims=True)
    q = maxpool(y, 2, 2, ((0, 1), (0, 1)))
    enc = lambda v: [float("%.8g" % e) for e in v.ravel()]
    return {"g": enc(g), "q": enc(q)}


def layer1_like():
    f64 = lambda a: a.astype(np.float64)
    relu = lambda v: np.maximum(v, 0)
    x = f64(values(2 * 64 * 34 * 34, 50)).reshape(2, 64, 34, 34) * 16
    ws = [f64(values(64 * 64 * 9, 51 + 2 * i)).reshape(64, 64, 3, 3) for i in range(4)]
    bs = [f64(values(64, 52 + 2 * i)) for i in range(4)]
    c1 = relu(conv3x3(x, ws[0], bs[0]))
    r1 = relu(conv3x3(c1, ws[1], bs[1]) + x)
    c3 = relu(conv3x3(r1, ws[2], bs[2]))
    r2 = relu(conv3x3(c3, ws[3], bs[3]) + r1)
    g = r2.mean(axis=(2, 3), keepdims=True)
    q = maxpool(r2, 4, 4, ((0, 0), (0, 0)))
    enc = lambda v: [float("%.8g" % e) for e in v.ravel()]
    return {"g": enc(g), "q_shape": list(q.shape), "q": enc(q)}


def stem_stage():
    f64 = lambda a: a.astype(np.float64)
    relu = lambda v: np.maximum(v, 0)
    x = f64(values(2 * 3 * 67 * 71, 90)).reshape(2, 3, 67, 71) * 16
    shapes = [(32, 3, 7, 7), (32, 32, 3, 3), (32, 32, 3, 3), (64, 32, 3, 3), (64, 32, 1, 1),
              (64, 64, 3, 3)]
    ws, bs = [], []
    for i, shape in enumerate(shapes):
        ws.append(f64(values(int(np.prod(shape)), 91 + 2 * i)).reshape(shape))
        bs.append(f64(values(shape[0], 92 + 2 * i)))
    s = relu(conv_strided(x, ws[0], bs[0], 2, 3))
    m = maxpool(s, 3, 2, ((1, 1), (1, 1)))
    c1 = relu(conv3x3(m, ws[1], bs[1]))
    r1 = relu(conv3x3(c1, ws[2], bs[2]) + m)
    t = relu(conv_strided(r1, ws[3], bs[3], 2, 1))
    d = conv_strided(r1, ws[4], bs[4], 2, 0)
    y = relu(conv3x3(t, ws[5], bs[5]) + d)
    g = y.mean(axis=(2, 3), keepdims=True)
    q = maxpool(y, 2, 2, ((0, 1), (0, 1)))
    enc = lambda v: [float("%.8g" % e) for e in v.ravel()]
    return {"g": enc(g), "q_shape": list(q.shape), "q": enc(q)}


def avgpool(x, k, s):
    """No padding: the mean of each k x k window."""
    n, c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    y = np.zeros((n, c, oh, ow))
    for ky in range(k):
        for kx in range(k):
            y += x[:, :, ky:ky + s * (oh - 1) + 1:s, kx:kx + s * (ow - 1) + 1:s]
    return y / (k * k)


def stem_pool_block(c=3, h=37, w=41):
    f64 = lambda a: a.astype(np.float64)
    relu = lambda v: np.maximum(v, 0)
    x = f64(values(2 * c * h * w, 110)).reshape(2, c, h, w) * 16
    shapes = [(64, c, 7, 7), (64, 64, 3, 3), (64, 64, 3, 3), (128, 64, 1, 1)]
    ws, bs = [], []
    for i, shape in enumerate(shapes):
        ws.append(f64(values(int(np.prod(shape)), 111 + 2 * i)).reshape(shape))
        bs.append(f64(values(shape[0], 112 + 2 * i)))
    s = relu(conv_strided(x, ws[0], bs[0], 2, 3))
    m = maxpool(s, 3, 2, ((1, 1), (1, 1)))
    c1 = relu(conv3x3(m, ws[1], bs[1]))
    r1 = relu(conv3x3(c1, ws[2], bs[2]) + m)
    g = r1.mean(axis=(2, 3), keepdims=True)
    q = maxpool(r1, 2, 2, ((0, 1), (0, 1)))
    enc = lambda v: [float("%.8g" % e) for e in v.ravel()]
    a = avgpool(conv1x1(s, ws[3][:, :, 0, 0], bs[3]), 4, 4)
    return {"g": enc(g), "q": enc(q), "a": enc(a), "b": enc(avgpool(m, 2, 2))}


def stem_depthwise(n, h, w):
    """MobileNetV2's start (stem_depthwise.json, key "n{n}_{h}x{w}"): x
    [n, 3, h, w] = values(.., 130) * 16, s = relu6(3 -> 32 3x3 stride 2,
    pad 1), d = relu6(depthwise 3x3 of s, pad 1), y = 32 -> 16 1x1 of d
    (the graph output); weights / biases values(.., 131..136)."""
    f64 = lambda a: a.astype(np.float64)
    relu6 = lambda v: np.minimum(np.maximum(v, 0), 6)
    x = f64(values(n * 3 * h * w, 130)).reshape(n, 3, h, w) * 16
    ws = f64(values(32 * 3 * 9, 131)).reshape(32, 3, 3, 3)
    wd = f64(values(32 * 9, 133)).reshape(32, 1, 3, 3)
    wp = f64(values(16 * 32, 135)).reshape(16, 32)
    s = relu6(conv_strided(x, ws, f64(values(32, 132)), 2, 1))
    d = relu6(depthwise3x3(s, wd, f64(values(32, 134)), 1))
    y = conv1x1(d, wp, f64(values(16, 136)))
    return {"shape": list(y.shape), "y": [float("%.7g" % e) for e in y.ravel()]}


def stem_conv(n, h, w, stride):
    """The YOLO-style start (stem_conv.json, key "n{n}_{h}x{w}_s{stride}"):
    x [n, 3, h, w] = values(.., 140) * 16, s = silu(3 -> 16 3x3, pad 1,
    `stride`), y = silu(16 -> 32 3x3 stride 2, pad 1) of s (the graph
    output); weights / biases values(.., 141..144)."""
    f64 = lambda a: a.astype(np.float64)
    silu = lambda v: v / (1 + np.exp(-v))
    x = f64(values(n * 3 * h * w, 140)).reshape(n, 3, h, w) * 16
    ws = f64(values(16 * 3 * 9, 141)).reshape(16, 3, 3, 3)
    wc = f64(values(32 * 16 * 9, 143)).reshape(32, 16, 3, 3)
    s = silu(conv_strided(x, ws, f64(values(16, 142)), stride, 1))
    y = silu(conv_strided(s, wc, f64(values(32, 144)), 2, 1))
    return {"shape": list(y.shape), "y": [float("%.7g" % e) for e in y.ravel()]}


def main():
    f64 = lambda a: a.astype(np.float64)
    x = f64(values(N * C * HW * HW, 1)).reshape(N, C, HW, HW) * 16
    r = f64(values(N * C * HW * HW, 2)).reshape(N, C, HW, HW) * 16
    ws = [f64(values(C * C * 9, 3 + i)).reshape(C, C, 3, 3) for i in range(3)]
    bs = [f64(values(C, 6 + i)) for i in range(3)]
    y1 = np.maximum(conv3x3(x, ws[0], bs[0]), 0)
    y2 = np.maximum(conv3x3(y1, ws[1], bs[1]) + r, 0)
    y3 = conv3x3(y2, ws[2], bs[2])
    out = {
        "shape": [N, C, HW, HW],
        "y1": [float("%.8g" % v) for v in y1.ravel()],
        "y3": [float("%.8g" % v) for v in y3.ravel()],
    }
    path = os.path.join(os.path.dirname(__file__), "..", "crates", "rlx-cpu", "tests",
                        "fixtures", "conv_nchwc", "chain.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(os.path.dirname(path), "inverted_residual.json"), "w") as f:
        json.dump({"hw18": inverted_residual(18), "hw14": inverted_residual(14),
                   "hw58": inverted_residual(58, 1)}, f,
                  separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(os.path.dirname(path), "resnet_like.json"), "w") as f:
        json.dump(resnet_like(), f, separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(os.path.dirname(path), "layer1_like.json"), "w") as f:
        json.dump(layer1_like(), f, separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(os.path.dirname(path), "transition.json"), "w") as f:
        json.dump(transition(), f, separators=(",", ":"))
        f.write("\n")
    # Block outputs of 24 / 40 channels: 57 x 57 -> 29 x 29 (both depthwise
    # planes over 28 x 28: row bands), batch 2; 23 x 23 -> 12 x 12, batch 3.
    with open(os.path.join(os.path.dirname(path), "inverted_residual_partial.json"), "w") as f:
        json.dump({"p24_hw57": inverted_residual_partial(57, 2, 24, 144),
                   "p40_hw23": inverted_residual_partial(23, 3, 40, 240)}, f,
                  separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(os.path.dirname(path), "stem_stage.json"), "w") as f:
        json.dump(stem_stage(), f, separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(os.path.dirname(path), "stem_pool_block.json"), "w") as f:
        json.dump(stem_pool_block(), f, separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(os.path.dirname(path), "stem_pool_block_c1.json"), "w") as f:
        json.dump(stem_pool_block(1, 29, 33), f, separators=(",", ":"))
        f.write("\n")
    # MobileNetV2's stem -> depthwise -> project: an 18 x 17 stem output
    # (batch 2; the stem kernel takes maps of >= 256 pixels) and a 29 x 30
    # one (the depthwise's row bands).
    with open(os.path.join(os.path.dirname(path), "stem_depthwise.json"), "w") as f:
        json.dump({"n2_35x33": stem_depthwise(2, 35, 33), "n1_57x59": stem_depthwise(1, 57, 59)},
                  f, separators=(",", ":"))
        f.write("\n")
    # YOLO's stem -> 16 -> 32 stride-2 conv: stride 2 on 37 x 35 (19 x 18
    # stem output, a partial vector) and stride 1 on 9 x 35 (a 48-pixel
    # tile, its last vector partial), batch 2.
    with open(os.path.join(os.path.dirname(path), "stem_conv.json"), "w") as f:
        json.dump({"n2_37x35_s2": stem_conv(2, 37, 35, 2), "n2_9x35_s1": stem_conv(2, 9, 35, 1)},
                  f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
