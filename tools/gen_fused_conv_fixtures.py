#!/usr/bin/env python3
"""numpy reference outputs for rlx-cpu's fused conv epilogue (`Op::FusedConv`:
conv + bias, then an elementwise epilogue applied block by block inside each
conv path: depthwise, 1x1, im2col, Winograd F(2,3), the N-d path).

    ~/.cache/rlx-ref/venv/bin/python tools/gen_fused_conv_fixtures.py

Writes crates/rlx-cpu/tests/fixtures/fused_conv/cases.json (committed), read by
the unit tests of crates/rlx-cpu/src/kernels/conv_epilogue.rs, and
crates/rlx-cpu/tests/fixtures/conv_direct/cases.json (DIRECT_CASES: shapes of
the direct few-channel kernel, read by kernels/conv_direct.rs's tests) and
crates/rlx-cpu/tests/fixtures/conv_pointwise/cases.json (POINTWISE_CASES: 1x1
convs of the NCHW pointwise kernel, read by kernels/conv_pointwise.rs's tests) and
crates/rlx-cpu/tests/fixtures/conv_pointwise/blocked_cases.json (POINTWISE_BLOCKED_CASES:
1x1 convs of the blocked 1x1 kernel, read by kernels/conv_pointwise_blocked.rs's tests) and
crates/rlx-cpu/tests/fixtures/conv_nchwc/cases.json (NCHWC_CASES: dense convs of the
16-channel-blocked kernel, read by kernels/conv_nchwc.rs's tests) and
crates/rlx-cpu/tests/fixtures/conv_nchwc/in_place_cases.json (IN_PLACE_CASES: the
same kernel reading a blocked image in place, padding included) and
crates/rlx-cpu/tests/fixtures/conv_depthwise/cases.json (DEPTHWISE_CASES: 3x3
depthwise convs, read by kernels/conv_depthwise3x3.rs's and
conv_depthwise_small.rs's tests) and
crates/rlx-cpu/tests/fixtures/conv_stem/cases.json (STEM_CASES: 3-channel stems of
the stem kernel, read by kernels/conv_stem.rs's tests); these two written compact,
8 significant digits, to stay a few hundred KB. Inputs are not
stored: both sides build them over the flattened tensor as
x[i] = ((i * 7) % 23 - 11) / 8, w[i] = ((i * 5) % 17 - 8) / 16,
b[i] = (i % 5 - 2) / 4, residual r[i] = ((i * 3) % 13 - 6) / 4,
per-channel scale s[i] = ((i * 2) % 7 - 3) / 2.
The conv is a float64 loop over the np.pad-ed input (cross-correlation,
PyTorch / ONNX semantics), independent of RLX's code; the epilogues are
written out in numpy (relu6 = clip(0, 6), clip_half_one = clip(-0.5, 1), silu = x * sigmoid(x),
leaky = max(x, 0.1 x), relu, residual + relu, residual + silu, per-channel scale + residual,
residual add).
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "crates", "rlx-cpu", "tests", "fixtures", "fused_conv", "cases.json")
OUT_DIRECT = os.path.join(HERE, "..", "crates", "rlx-cpu", "tests", "fixtures", "conv_direct", "cases.json")


def seq(n, a, m, scale):
    return (((np.arange(n) * a) % m) - m // 2) / scale


def conv(x, w, b, stride, pads, dil, groups):
    """N-d cross-correlation (1 or 2 spatial dims) in float64 loops."""
    sd = x.ndim - 2
    if sd == 1:
        y = conv(x[:, :, None, :], w[:, :, None, :], b, (1,) + tuple(stride),
                 ((0, 0),) + tuple(pads), (1,) + tuple(dil), groups)
        return y[:, :, 0, :]
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


def epilogue(name, y, res_dims):
    """The epilogue and the dims of the extra tensor it reads (if any)."""
    if name == "relu6":
        return np.clip(y, 0.0, 6.0)
    if name == "clip_half_one":
        return np.clip(y, -0.5, 1.0)
    if name == "relu":
        return np.maximum(y, 0.0)
    if name == "silu":
        return y / (1.0 + np.exp(-y))
    if name == "silu_residual":
        r = seq(int(np.prod(res_dims)), 3, 13, 4).reshape(res_dims)
        return r + y / (1.0 + np.exp(-y))
    if name == "leaky":
        return np.maximum(y, 0.1 * y)
    if name == "residual_relu":
        r = seq(int(np.prod(res_dims)), 3, 13, 4).reshape(res_dims)
        return np.maximum(y + r, 0.0)
    if name == "residual":
        r = seq(int(np.prod(res_dims)), 3, 13, 4).reshape(res_dims)
        return y + r
    if name == "scale_residual":
        o = y.shape[1]
        s = seq(o, 2, 7, 2).reshape((o,) + (1,) * (y.ndim - 2))
        r = seq(int(np.prod(res_dims)), 3, 13, 4).reshape(res_dims)
        return y * s + r
    raise ValueError(name)


# name, x dims, O, kernel, stride, pads, dilation, groups, bias, epilogue, residual dims
# (None: the output's own dims)
CASES = [
    ("depthwise_3x3_relu6_batch2", (2, 6, 9, 11), 6, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 6, True, "relu6", None),
    ("depthwise_3x3_s2_silu", (1, 5, 15, 13), 5, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 5, False, "silu", None),
    ("pointwise_1x1_residual_relu_batch2", (2, 8, 7, 7), 6, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "residual_relu", None),
    ("dense_3x3_s2_leaky", (1, 3, 9, 7), 4, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1, True, "leaky", None),
    ("winograd_3x3_scale_residual_batch2", (2, 16, 16, 16), 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "scale_residual", "one_image"),
    ("grouped_3x3_residual_relu", (1, 8, 6, 6), 6, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 2, False, "residual_relu", None),
    # 16 input channels, 2 outputs: im2col in two tiles of output rows.
    ("dense_3x3_two_row_tiles_relu6", (1, 16, 24, 20), 2, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "relu6", None),
    ("pointwise_1x1_silu_residual", (1, 8, 5, 6), 4, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "silu_residual", None),
    # 1x1 with bias + ReLU6 (MobileNetV2's expand), 20 outputs: a narrow last panel
    # on the packed-weight GEMM, batch 2.
    ("pointwise_1x1_bias_relu6_batch2", (2, 24, 7, 7), 20, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "relu6", None),
    ("conv1d_residual_relu_batch2", (2, 4, 9), 3, (3,), (1,), ((1, 1),), (1,), 1, True, "residual_relu", None),
]

# Convs the direct kernel (kernels/conv_direct.rs) computes: output channels a
# multiple of 8, C = 3 / 4 / 5 / 8 / 16 / 32 / 40, odd sizes, stride 1 and 2,
# rows of 27 / 11 / 9 / 5 outputs (full and partial vectors), a 5x5 kernel and
# asymmetric padding.
DIRECT_CASES = [
    ("direct_c3_o16_relu", (1, 3, 13, 27), 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "relu", None),
    ("direct_c8_o8_s2_silu", (1, 8, 15, 17), 8, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1, False, "silu", None),
    ("direct_c16_o16_residual_relu_batch2", (2, 16, 9, 11), 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "residual_relu", None),
    ("direct_c32_o8_silu_residual", (1, 32, 7, 9), 8, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "silu_residual", None),
    ("direct_c40_o24_s2_leaky_batch2", (2, 40, 11, 9), 24, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1, True, "leaky", None),
    ("direct_c5_o8_5x5_relu6", (1, 5, 9, 10), 8, (5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1), 1, True, "relu6", None),
    # 32x32 outputs: conv's own dispatch picks the direct kernel.
    ("direct_c9_o8_dispatch_relu", (1, 9, 32, 32), 8, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "relu", None),
    ("direct_c4_o8_asym_pad_scale_residual", (1, 4, 10, 12), 8, (3, 3), (1, 1), ((0, 1), (1, 0)), (1, 1), 1, False, "scale_residual", "one_image"),
]

# 1x1 convs of the NCHW pointwise kernel (kernels/conv_pointwise.rs): output
# channels not a multiple of the register tile's 6 / 8 rows, pixel counts not a
# multiple of its 16 / 32 columns, 300 input channels (two pixel blocks per
# image), batch 2 / 3; epilogues it runs on each tile (relu6, residual add,
# per-channel scale + residual, relu) and ones it runs per image (silu +
# residual, leaky: they read the conv result twice).
POINTWISE_CASES = [
    ("pointwise_c24_o20_relu6_batch2", (2, 24, 9, 13), 20, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "relu6", None),
    ("pointwise_c7_o13_residual", (1, 7, 17, 19), 13, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "residual", None),
    ("pointwise_c300_o9_scale_residual_batch2", (2, 300, 11, 17), 9, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "scale_residual", "one_image"),
    ("pointwise_c5_o33_silu_residual", (1, 5, 8, 9), 33, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "silu_residual", None),
    ("pointwise_c16_o8_leaky", (1, 16, 6, 6), 8, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "leaky", None),
    ("pointwise_c12_o16_relu_nobias_batch3", (3, 12, 5, 7), 16, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, False, "relu", None),
    # Batch 1 projects on more pixels than output channels: split by pixel ranges
    # at 2 / 3 threads (ranges across the kernel's 160-pixel blocks at 300 channels).
    ("pointwise_c300_o24_residual_pixels", (1, 300, 23, 23), 24, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "residual", None),
    ("pointwise_c40_o24_relu6_pixels", (1, 40, 19, 21), 24, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "relu6", None),
]
# Depthwise 3x3 convs of kernels/conv_depthwise3x3.rs (no padded copy): rows of
# 37 / 70 outputs (two vectors and a partial one of 16 lanes), stride 2 on odd and
# even widths, no padding, padding past the kernel (columns with no tap inside),
# asymmetric padding, a plane narrower than the kernel, a channel multiplier,
# batch 2; ReLU6 (clamped in registers), relu / residual / per-channel scale +
# residual (row chain per plane), leaky / silu (per block of planes).
DEPTHWISE_CASES = [
    ("dw_s1_w37_relu6_batch2", (2, 3, 5, 37), 3, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 3, True, "relu6", None),
    ("dw_s2_w45_relu6", (1, 4, 9, 45), 4, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 4, True, "relu6", None),
    ("dw_s2_w40_scale_residual", (1, 3, 8, 40), 3, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 3, True, "scale_residual", "one_image"),
    ("dw_s1_w20_nopad_residual", (1, 2, 6, 20), 2, (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 2, False, "residual", None),
    ("dw_s1_w7_pad2_relu6", (1, 2, 4, 7), 2, (3, 3), (1, 1), ((2, 2), (2, 2)), (1, 1), 2, True, "relu6", None),
    ("dw_s2_asym_pad_w33_relu6", (1, 3, 7, 33), 3, (3, 3), (2, 2), ((0, 1), (1, 0)), (1, 1), 3, True, "relu6", None),
    ("dw_s1_w2_relu6", (1, 2, 3, 2), 2, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 2, True, "relu6", None),
    ("dw_s1_w70_relu_nobias", (1, 2, 3, 70), 2, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 2, False, "relu", None),
    ("dw_mult2_s2_w18_leaky", (1, 3, 6, 18), 6, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 3, True, "leaky", None),
    ("dw_s1_w17_silu_batch2", (2, 3, 4, 17), 3, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 3, True, "silu", None),
    # Small planes for the 16-channels-in-lanes kernel (conv_depthwise_small.rs):
    # channel counts off a multiple of 16, MobileNet's 14x14 / 7x7, stride 2 on odd
    # sizes and with TF-style (0, 1) padding, padding past the kernel, row-chain and
    # whole-plane epilogues.
    ("dw_small_c18_14x14_relu6", (1, 18, 14, 14), 18, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 18, True, "relu6", None),
    ("dw_small_c17_7x7_residual_batch2", (2, 17, 7, 7), 17, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 17, True, "residual", None),
    ("dw_small_c20_s2_13x15_relu6", (1, 20, 13, 15), 20, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 20, True, "relu6", None),
    ("dw_small_c33_s2_14x14_tfpad_scale_residual", (1, 33, 14, 14), 33, (3, 3), (2, 2), ((0, 1), (0, 1)), (1, 1), 33, True, "scale_residual", "one_image"),
    ("dw_small_c16_5x3_pad2_relu", (1, 16, 5, 3), 16, (3, 3), (1, 1), ((2, 2), (2, 2)), (1, 1), 16, True, "relu", None),
    ("dw_small_c19_6x9_silu_nobias", (1, 19, 6, 9), 19, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 19, False, "silu", None),
    # Whole 16-channel groups: also run with blocked tensors (conv_depthwise_small.rs).
    ("dwb_c32_10x10_relu6_batch2", (2, 32, 10, 10), 32, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 32, True, "relu6", None),
    ("dwb_c48_s2_13x11_residual", (1, 48, 13, 11), 48, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 48, True, "residual", None),
    # Planes just over 28 x 28 (MobileNetV2's 56 / 112 stages, smaller): with a blocked
    # side the kernel runs them by bands of output rows (one band each at these widths;
    # several on the wide planes of conv_depthwise_small.rs's band test): stride 1 and
    # 2, TF-style (0, 1) padding, two groups, batch 2, ReLU6 and residual row chains.
    ("dwb_c16_s1_28x29_relu6", (1, 16, 28, 29), 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 16, True, "relu6", None),
    ("dwb_c32_s2_29x28_residual", (1, 32, 29, 28), 32, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 32, True, "residual", None),
    ("dwb_c16_s2_tfpad_29x28_scale_residual_batch2", (2, 16, 29, 28), 16, (3, 3), (2, 2), ((0, 1), (0, 1)), (1, 1), 16, True, "scale_residual", "one_image"),
    # A whole-plane epilogue (SiLU) on a banded plane: taken with a blocked image
    # and an NCHW output only (the epilogue then runs on the group's planes).
    ("dwb_c16_s2_29x28_silu", (1, 16, 29, 28), 16, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 16, True, "silu", None),
    # Blocked images read in place (conv_depthwise_in_place.rs: no padded tile):
    # padding on every edge in turn, 2 wide (a padding tap column on both sides
    # of an edge output), a plane narrower than the kernel (no interior column),
    # odd sizes at stride 2, a banded plane.
    ("dwb_c16_s2_11x9_pad_top2_right2_relu6", (1, 16, 11, 9), 16, (3, 3), (2, 2), ((2, 0), (0, 2)), (1, 1), 16, True, "relu6", None),
    ("dwb_c32_s1_3x2_pad_every_edge_residual_batch2", (2, 32, 3, 2), 32, (3, 3), (1, 1), ((1, 2), (2, 1)), (1, 1), 32, True, "residual", None),
    ("dwb_c16_s2_29x31_pad_bottom2_left2_relu6", (1, 16, 29, 31), 16, (3, 3), (2, 2), ((0, 2), (2, 0)), (1, 1), 16, True, "relu6", None),
]
OUT_DEPTHWISE = os.path.join(HERE, "..", "crates", "rlx-cpu", "tests", "fixtures", "conv_depthwise", "cases.json")

OUT_POINTWISE = os.path.join(HERE, "..", "crates", "rlx-cpu", "tests", "fixtures", "conv_pointwise", "cases.json")

# Dense convs for the NCHWc kernel (16-channel blocks): C and O off a multiple of 16
# (40 and 80 output channels: groups of 3 and 4 + 1 blocks), rows wider than one
# register tile with a remainder, stride 2 with asymmetric padding, 5x5 dilated,
# 1x1 stride 2, 7x7 stride 2, row-chain and whole-plane epilogues, batch 2; the
# sixth is a shape conv itself routes to the kernel.
NCHWC_CASES = [
    ("nchwc_c20_o40_relu_batch2", (2, 20, 3, 27), 40, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "relu", None),
    ("nchwc_c17_o80_s2_residual_relu", (1, 17, 9, 13), 80, (3, 3), (2, 2), ((1, 0), (1, 1)), (1, 1), 1, True, "residual_relu", None),
    ("nchwc_c5_o20_5x5_dilated_silu", (1, 5, 10, 12), 20, (5, 5), (1, 1), ((2, 2), (2, 2)), (2, 1), 1, False, "silu", None),
    ("nchwc_c33_o48_1x1_s2_scale_residual_batch2", (2, 33, 8, 8), 48, (1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), 1, True, "scale_residual", "one_image"),
    ("nchwc_c16_o32_wide_relu6", (1, 16, 2, 61), 32, (3, 3), (1, 1), ((1, 1), (0, 2)), (1, 1), 1, True, "relu6", None),
    ("nchwc_c24_o16_dispatch_residual", (1, 24, 12, 12), 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "residual", None),
    ("nchwc_c8_o64_7x7_s2_leaky", (1, 8, 13, 14), 64, (7, 7), (2, 2), ((3, 3), (3, 3)), (1, 1), 1, True, "leaky", None),
    # 3 channels: one block, its reorder split by rows over the team; a SiLU
    # epilogue with a residual after it.
    ("nchwc_c3_o16_thin_reorder_silu_residual", (1, 3, 16, 16), 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "silu_residual", None),
    # ResNet's stem class (3 input channels, 7x7 stride 2, >= 64 outputs: routed here since cnn15), odd sizes.
    ("nchwc_c3_o64_7x7_s2_relu_stem", (1, 3, 21, 19), 64, (7, 7), (2, 2), ((3, 3), (3, 3)), (1, 1), 1, True, "relu", None),
    ("nchwc_c3_o80_7x7_s2_residual_relu_batch2", (2, 3, 23, 17), 80, (7, 7), (2, 2), ((3, 3), (3, 3)), (1, 1), 1, True, "residual_relu", None),
    # Maps of <= 64 pixels run flattened over the batch (ResNet's 7x7 class):
    # tiles across rows and images, 3- / 4- / 1-block groups, input channels
    # off a block and several channel chunks, runs of > 16 tiles, stride 2.
    ("nchwc_c32_o48_7x7_flat_residual_relu_batch2", (2, 32, 7, 7), 48, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "residual_relu", None),
    ("nchwc_c40_o72_s2_flat_relu_batch3", (3, 40, 13, 11), 72, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1, True, "relu", None),
    ("nchwc_c16_o16_8x8_flat_silu", (1, 16, 8, 8), 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, False, "silu", None),
    ("nchwc_c64_o64_5x5_flat_scale_residual_batch4", (4, 64, 5, 5), 64, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "scale_residual", "one_image"),
    # 1x1 stride 2 (ResNet's downsamples, run here once the layout plan keeps
    # a side blocked): odd sizes, flattened (<= 64 output pixels) and by rows.
    ("nchwc_c32_o64_1x1_s2_flat_residual_relu_batch3", (3, 32, 13, 11), 64, (1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), 1, True, "residual_relu", None),
    ("nchwc_c48_o32_1x1_s2_rows_residual_batch2", (2, 48, 21, 19), 32, (1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), 1, True, "residual", None),
    # Rows in MLAS's order (cnn27): four input-channel chunks over every tile
    # of a part's rows, rows of 17 (6 + 6 + 5), batch 2, residual + ReLU.
    ("nchwc_c64_o64_rows_chunks_residual_relu_batch2", (2, 64, 9, 17), 64, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "residual_relu", None),
    # Kernel rows that read only padding are skipped (cnn30): CRNN's 4-row
    # maps with 256 input channels (16 chunks), 3 rows of 25 (2 x 12 + 1
    # tiles), output rows of padding only (bias alone), a dilated 2-row map.
    ("nchwc_c256_o64_4x32_crnn_relu", (1, 256, 4, 32), 64, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "relu", None),
    ("nchwc_c48_o32_3x25_rows_residual", (1, 48, 3, 25), 32, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "residual", None),
    ("nchwc_c16_o16_padding_only_rows_relu", (1, 16, 2, 40), 16, (3, 3), (1, 1), ((3, 3), (1, 1)), (1, 1), 1, True, "relu", None),
    ("nchwc_c32_o32_2x40_dilated_relu", (1, 32, 2, 40), 32, (3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2), 1, False, "relu", None),
]
# 1x1 convs of the blocked 1x1 kernel (kernels/conv_pointwise_blocked.rs):
# 16-channel output blocks, input channels a multiple of 16 (the
# blocked-input cases) or not, pixel counts off the 6-pixel tile and the
# 96-pixel chunk, register tiles of 1-4 output blocks.
POINTWISE_BLOCKED_CASES = [
    ("pw_blocked_c32_o48_relu6_batch2", (2, 32, 9, 11), 48, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "relu6", None),
    ("pw_blocked_c48_o80_residual", (1, 48, 11, 9), 80, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "residual", None),
    ("pw_blocked_c20_o64_silu_residual", (1, 20, 10, 10), 64, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "silu_residual", None),
    ("pw_blocked_c16_o16_relu_nobias_batch3", (3, 16, 5, 7), 16, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, False, "relu", None),
    ("pw_blocked_c96_o32_scale_residual_batch2", (2, 96, 10, 10), 32, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "scale_residual", "one_image"),
    # Batch 1, more pixels than output channels: split by 16-aligned pixel ranges
    # at 2 / 3 threads (ranges inside one 96-pixel chunk and across two).
    ("pw_blocked_c64_o32_residual_pixels", (1, 64, 15, 15), 32, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "residual", None),
    ("pw_blocked_c32_o96_relu6_pixels", (1, 32, 13, 17), 96, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "relu6", None),
    # Outputs off whole blocks (MobileNetV2's projects to 24 channels; NCHW
    # output only, the last block's pad lanes never stored): 24 / 40 outputs,
    # a residual / per-channel scale read for the live lanes only, batch 2 / 3,
    # odd maps, a whole-plane (SiLU) epilogue on 56 outputs (8 live planes last).
    ("pw_blocked_c48_o24_residual_batch2", (2, 48, 7, 9), 24, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "residual", None),
    ("pw_blocked_c32_o40_scale_residual_batch3", (3, 32, 5, 11), 40, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "scale_residual", "one_image"),
    ("pw_blocked_c96_o24_relu6_pixels", (1, 96, 13, 15), 24, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, False, "relu6", None),
    ("pw_blocked_c16_o56_silu", (1, 16, 9, 7), 56, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "silu", None),
    # More input channels than one 128-channel run (partial sums resumed from
    # the output): 288 (2 runs + 32) on 7 x 7 maps, batch 2; 200 (NCHW input
    # only: 128 + 72) with a residual.
    ("pw_blocked_c288_o80_relu6_7x7_batch2", (2, 288, 7, 7), 80, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "relu6", None),
    ("pw_blocked_c200_o48_residual", (1, 200, 5, 9), 48, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "residual", None),
    # ReLU6 clamped in the tile's registers as the last 128-channel run
    # stores (never a partial sum): 144 = 128 + 16 channels on odd maps, 40
    # outputs (NCHW, a partial block) and 48 (blocked or NCHW) at batch 3
    # under a clip to [-0.5, 1] (both bounds bind; ReLU6's 6 never does here).
    ("pw_blocked_c144_o40_relu6_runs", (1, 144, 5, 7), 40, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "relu6", None),
    ("pw_blocked_c144_o48_clip_runs_batch3", (3, 144, 3, 5), 48, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, True, "clip_half_one", None),
]
OUT_POINTWISE_BLOCKED = os.path.join(HERE, "..", "crates", "rlx-cpu", "tests", "fixtures", "conv_pointwise", "blocked_cases.json")

OUT_NCHWC = os.path.join(HERE, "..", "crates", "rlx-cpu", "tests", "fixtures", "conv_nchwc", "cases.json")

# Blocked images the NCHWc kernel reads in place (no padded copy: the kernel
# rows on padding rows skipped, the tiles whose taps reach a padding column
# reading zero there): 16 / 32 / 48 channels, stride 1 and 2, padding 0 / 1 /
# 2 and asymmetric (a left edge only, a right edge only), a 5x5 and a dilated
# 3x3, rows of 29 (a 24-pixel edge tile, then a 5-pixel one), a map narrower
# than one tile (5 columns), a map of one column, batch 2, 1- to 4-block
# output groups; each over 64 output pixels (smaller maps run flattened on a
# padded copy).
IN_PLACE_CASES = [
    ("in_place_c16_o16_pad1_relu", (1, 16, 5, 29), 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "relu", None),
    ("in_place_c32_o48_s2_left_pad_only_residual_relu", (1, 32, 13, 23), 48, (3, 3), (2, 2), ((1, 0), (1, 0)), (1, 1), 1, True, "residual_relu", None),
    ("in_place_c48_o32_5x5_pad2_residual", (1, 48, 6, 13), 32, (5, 5), (1, 1), ((2, 2), (2, 1)), (1, 1), 1, True, "residual", None),
    ("in_place_c16_o32_one_column_relu6", (1, 16, 66, 1), 32, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "relu6", None),
    ("in_place_c32_o16_narrow_silu_batch2", (2, 32, 14, 5), 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "silu", None),
    ("in_place_c16_o64_s2_pad2_relu", (1, 16, 17, 14), 64, (3, 3), (2, 2), ((2, 1), (2, 2)), (1, 1), 1, True, "relu", None),
    ("in_place_c32_o16_unpadded_nobias_relu", (1, 32, 10, 12), 16, (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, False, "relu", None),
    ("in_place_c16_o16_dilated_pad2_residual", (1, 16, 6, 20), 16, (3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2), 1, True, "residual", None),
    ("in_place_c48_o32_right_pad_only_leaky", (1, 48, 4, 26), 32, (3, 3), (1, 1), ((0, 1), (0, 2)), (1, 1), 1, True, "leaky", None),
]
OUT_NCHWC_IN_PLACE = os.path.join(HERE, "..", "crates", "rlx-cpu", "tests", "fixtures", "conv_nchwc", "in_place_cases.json")

# Stems of the 3-channel stem kernel (kernels/conv_stem.rs): 3x3 stride 2 with
# 16 / 24 / 32 / 64 outputs (1, 3, 4, 8 blocks of 8), 3x3 stride 1, 7x7 stride 2
# with padding 3 and asymmetric padding, rows of 18 / 50 / 56 pixels (a 48-pixel
# tile, then a partial vector), row-chain (ReLU6, ReLU, residual, scale +
# residual) and whole-plane (SiLU) epilogues, no bias, batch 2 / 3; the last is
# a map conv itself routes to the kernel (16 x 16 outputs).
STEM_CASES = [
    ("stem_c3_o32_3x3_s2_relu6_batch2", (2, 3, 7, 35), 32, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1, True, "relu6", None),
    ("stem_c3_o16_3x3_s2_wide_silu", (1, 3, 5, 111), 16, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1, True, "silu", None),
    ("stem_c3_o64_7x7_s2_pad3_residual_relu_batch3", (3, 3, 7, 23), 64, (7, 7), (2, 2), ((3, 3), (3, 3)), (1, 1), 1, True, "residual_relu", None),
    ("stem_c3_o24_3x3_s1_scale_residual", (1, 3, 5, 50), 24, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "scale_residual", "one_image"),
    ("stem_c3_o16_7x7_s2_asym_pad_nobias_relu", (1, 3, 20, 37), 16, (7, 7), (2, 2), ((3, 2), (2, 3)), (1, 1), 1, False, "relu", None),
    ("stem_c3_o32_3x3_s2_dispatch_residual", (1, 3, 32, 32), 32, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1, True, "residual", None),
    ("stem_c3_o16_3x3_s1_odd_silu_batch2", (2, 3, 11, 19), 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, "silu", None),
]
OUT_STEM = os.path.join(HERE, "..", "crates", "rlx-cpu", "tests", "fixtures", "conv_stem", "cases.json")


def write(cases_in, out, compact=False):
    cases = []
    for name, xd, o, k, stride, pads, dil, groups, bias, epi, res in cases_in:
        c = xd[1]
        wd = (o, c // groups) + tuple(k)
        x = seq(int(np.prod(xd)), 7, 23, 8).reshape(xd)
        w = seq(int(np.prod(wd)), 5, 17, 16).reshape(wd)
        b = (np.arange(o) % 5 - 2) / 4 if bias else np.zeros(o)
        y = conv(x, w, b, stride, pads, dil, groups)
        res_dims = list(y.shape) if res is None else [1] + list(y.shape[1:])
        y = epilogue(epi, y, tuple(res_dims))
        cases.append({
            "name": name,
            "x": list(xd),
            "w": list(wd),
            "y_dims": list(y.shape),
            "stride": list(stride),
            "pads": [list(p) for p in pads],
            "dilation": list(dil),
            "groups": groups,
            "bias": bias,
            "epilogue": epi,
            "res_dims": res_dims,
            "y": [float(f"{v:.8g}" if compact else f"{v:.9g}") for v in y.ravel()],
        })
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"cases": cases}, f, separators=(",", ":") if compact else None)
    print(f"wrote {len(cases)} cases to {out}")


def main():
    write(CASES, OUT)
    write(DIRECT_CASES, OUT_DIRECT)
    write(POINTWISE_CASES, OUT_POINTWISE)
    write(POINTWISE_BLOCKED_CASES, OUT_POINTWISE_BLOCKED)
    write(NCHWC_CASES, OUT_NCHWC)
    write(IN_PLACE_CASES, OUT_NCHWC_IN_PLACE)
    write(DEPTHWISE_CASES, OUT_DEPTHWISE, compact=True)
    write(STEM_CASES, OUT_STEM, compact=True)


if __name__ == "__main__":
    main()
