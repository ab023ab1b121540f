#!/usr/bin/env python3
"""A tiny CNN and a tiny recurrent net in ONNX and ONNX Runtime's outputs
on them, for crates/rlx-onnx/tests/tiny_cnn.rs.

    ~/.cache/rlx-ref/venv/bin/python tools/gen_tiny_cnn_fixture.py

(env: the reference venv of shared/ref/setup.sh: onnx, onnxruntime, numpy.)
Writes crates/rlx-onnx/tests/fixtures/cnn/: tiny_cnn.onnx (opset 17, built with
tools/gen_cnn_bench_models.py's Net), input.bin [2,3,12,12] and output.bin
[2,4,12,12] (raw little-endian f32; input x[i] = ((i * 7919) % 1000) / 500 - 1).
The net has what the CNN benchmark models have, small: conv + BatchNormalization
(+ ReLU / ReLU6 / SiLU), a depthwise stride-2 conv, a 1x1 conv with a residual
add, max pool, ConvTranspose, nearest Resize and a concat skip.
Also tiny_rnn_b3.onnx / tiny_rnn_b1.onnx: on X [5, B, 4] (x[i] as above;
batch 3 and 1 step in different layouts), a bidirectional LSTM
(bias, initial h / c, peepholes), a bidirectional GRU (linear_before_reset)
and a bidirectional RNN whose directions differ in activation (Tanh / Relu),
hidden size 6; its 8 outputs (Y, Y_h, Y_c of the LSTM; Y, Y_h of the GRU and
the RNN; Y of a reverse LSTM) in rnn_b<B>_output_<i>.bin.
"""
import os
import sys

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_cnn_bench_models import Net  # noqa: E402

OUT = os.path.join(HERE, "..", "crates", "rlx-onnx", "tests", "fixtures", "cnn")


def tiny():
    n = Net(7)
    a = n.relu(n.bn(n.conv("input", 3, 8, 3), 8))                      # [2,8,12,12]
    d = n.relu6(n.bn(n.conv(a, 8, 8, 3, stride=2, group=8), 8))        # [2,8,6,6]
    p = n.bn(n.conv(d, 8, 8, 1), 8)
    r = n.op("Add", [p, d])
    m = n.op("MaxPool", [r], kernel_shape=[2, 2], strides=[2, 2])       # [2,8,3,3]
    w = n.rng.normal(0, 0.3, (8, 4, 2, 2)).astype(np.float32)
    up = n.op("ConvTranspose", [m, n.const("wt", w)], kernel_shape=[2, 2], strides=[2, 2])  # [2,4,6,6]
    scales = n.const("scales", np.array([1, 1, 2, 2], np.float32))
    big = n.op("Resize", [up, "", scales], mode="nearest")             # [2,4,12,12]
    cat = n.op("Concat", [big, a], axis=1)                              # [2,12,12,12]
    out = n.silu(n.bn(n.conv(cat, 12, 4, 3, bias=True), 4))
    return n.model("tiny_cnn", [2, 3, 12, 12], [(out, [2, 4, 12, 12])])


def recurrent(B):
    n = Net(11)
    S, I, H = 5, 4, 6

    def t(base, shape, scale=0.4):
        return n.const(base, n.rng.normal(0, scale, shape).astype(np.float32))

    lstm = n.op("LSTM", ["input", t("w", (2, 4 * H, I)), t("r", (2, 4 * H, H)), t("b", (2, 8 * H)), "",
                         t("h0", (2, B, H)), t("c0", (2, B, H)), t("p", (2, 3 * H))],
                n_out=3, hidden_size=H, direction="bidirectional")
    gru = n.op("GRU", ["input", t("w", (2, 3 * H, I)), t("r", (2, 3 * H, H)), t("b", (2, 6 * H))],
               n_out=2, hidden_size=H, direction="bidirectional", linear_before_reset=1)
    rnn = n.op("RNN", ["input", t("w", (2, H, I)), t("r", (2, H, H)), t("b", (2, 2 * H))],
               n_out=2, hidden_size=H, direction="bidirectional", activations=["Tanh", "Relu"])
    rev = n.op("LSTM", ["input", t("w", (1, 4 * H, I)), t("r", (1, 4 * H, H)), t("b", (1, 8 * H))],
               n_out=1, hidden_size=H, direction="reverse")
    outs = [(lstm[0], [S, 2, B, H]), (lstm[1], [2, B, H]), (lstm[2], [2, B, H]),
            (gru[0], [S, 2, B, H]), (gru[1], [2, B, H]),
            (rnn[0], [S, 2, B, H]), (rnn[1], [2, B, H]), (rev, [S, 1, B, H])]
    return n.model(f"tiny_rnn_b{B}", [S, B, I], outs)


def inputs(shape):
    return ((((np.arange(int(np.prod(shape))) * 7919) % 1000) / 500 - 1).astype(np.float32)).reshape(shape)


def write_recurrent(B):
    import onnx
    path = os.path.join(OUT, f"tiny_rnn_b{B}.onnx")
    onnx.save(recurrent(B), path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ys = sess.run(None, {"input": inputs((5, B, 4))})
    for i, y in enumerate(ys):
        y.astype(np.float32).tofile(os.path.join(OUT, f"rnn_b{B}_output_{i}.bin"))
    print(f"{path}: outputs {[y.shape for y in ys]}, max |y| {max(np.abs(y).max() for y in ys):.3f}")


def main():
    import onnx
    os.makedirs(OUT, exist_ok=True)
    write_recurrent(3)
    write_recurrent(1)
    m = tiny()
    path = os.path.join(OUT, "tiny_cnn.onnx")
    onnx.save(m, path)
    shape = (2, 3, 12, 12)
    x = inputs(shape)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"input": x})
    x.tofile(os.path.join(OUT, "input.bin"))
    y.astype(np.float32).tofile(os.path.join(OUT, "output.bin"))
    print(f"{path}: output {y.shape}, max |y| {np.abs(y).max():.3f}, onnxruntime {ort.__version__}")


if __name__ == "__main__":
    main()
