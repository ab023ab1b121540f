#!/usr/bin/env python3
"""The CNN benchmark set of issue 28: five ONNX models with random weights.

    ~/.cache/rlx-ref/venv/bin/python tools/gen_cnn_bench_models.py [OUT_DIR]

(env: the reference venv of shared/ref/setup.sh: onnx, numpy; no torch.)
OUT_DIR defaults to $RLX_MODELS/cnn (RLX_MODELS defaults to ~/.cache/rlx-models);
the models are not committed, this script is. Built with onnx.helper, opset 17,
float32, weights from numpy's default_rng(seed) (He-scaled so activations stay
O(1) through the depth). Each model is written once per batch size with a fixed
input shape: <name>_b<B>.onnx for B in 1 and 8, input "input", output(s) as below.

  resnet18     ResNet-18 (basic blocks, BN, ReLU, max pool, global avg pool, Gemm)
               [B,3,224,224] -> logits [B,1000]
  mobilenetv2  MobileNetV2 1.0 (inverted residuals, depthwise 3x3, ReLU6 = Clip)
               [B,3,224,224] -> logits [B,1000]
  unet         U-Net-style segmentation, 3 levels, base 16 channels
               (conv-BN-ReLU pairs, max pool, ConvTranspose 2x2 s2, concat skips)
               [B,3,128,128] -> [B,2,128,128]
  crnn         CRNN text recognizer: VGG-style conv stack, then a bidirectional
               LSTM (hidden 128) over the width, then a linear layer to 37 classes
               [B,1,32,128] -> [32,B,37]
  yolo         YOLO-style detector: conv-BN-SiLU, CSP-like blocks with concat,
               SPPF (max pools), nearest Resize x2 + concat (FPN), two 1x1 heads
               [B,3,256,256] -> [B,255,16,16], [B,255,32,32]

The rlx-bench `compare` example (its cnn rows) feeds every model the same
deterministic input as tools/bench_ref.py: x[i] = ((i * 7919) % 1000) / 500 - 1
over the flattened input.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
BATCHES = (1, 8)


class Net:
    """A graph under construction: nodes, initializers, fresh names."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, base):
        self.n += 1
        return f"{base}_{self.n}"

    def const(self, base, array):
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, n_out=1, **attrs):
        outs = [self.name(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def conv(self, x, cin, cout, k, stride=1, group=1, bias=False, pad=None):
        fan_in = cin // group * k * k
        w = self.rng.normal(0, np.sqrt(2.0 / fan_in), (cout, cin // group, k, k))
        inputs = [x, self.const("w", w.astype(np.float32))]
        if bias:
            inputs.append(self.const("b", self.rng.normal(0, 0.1, cout).astype(np.float32)))
        p = k // 2 if pad is None else pad
        return self.op("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride],
                       pads=[p, p, p, p], group=group)

    def bn(self, x, c):
        r = self.rng
        scale = r.uniform(0.5, 1.5, c).astype(np.float32)
        shift = r.normal(0, 0.1, c).astype(np.float32)
        mean = r.normal(0, 0.1, c).astype(np.float32)
        var = r.uniform(0.5, 1.5, c).astype(np.float32)
        return self.op("BatchNormalization", [x] + [self.const(n, v) for n, v in
                       (("scale", scale), ("shift", shift), ("mean", mean), ("var", var))],
                       epsilon=1e-5)

    def relu(self, x):
        return self.op("Relu", [x])

    def relu6(self, x):
        lo = self.const("lo", np.array(0.0, np.float32))
        hi = self.const("hi", np.array(6.0, np.float32))
        return self.op("Clip", [x, lo, hi])

    def silu(self, x):
        return self.op("Mul", [x, self.op("Sigmoid", [x])])

    def linear(self, x, fin, fout):
        w = self.rng.normal(0, np.sqrt(1.0 / fin), (fout, fin)).astype(np.float32)
        b = self.rng.normal(0, 0.1, fout).astype(np.float32)
        return self.op("Gemm", [x, self.const("fc_w", w), self.const("fc_b", b)], transB=1)

    def model(self, name, input_shape, outputs):
        """outputs: [(tensor name, shape)]; renames them output / output_<i>."""
        final = []
        for i, (t, shape) in enumerate(outputs):
            oname = "output" if len(outputs) == 1 else f"output_{i}"
            self.nodes.append(helper.make_node("Identity", [t], [oname]))
            final.append(helper.make_tensor_value_info(oname, TensorProto.FLOAT, shape))
        g = helper.make_graph(self.nodes, name,
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, input_shape)],
                              final, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="rlx tools/gen_cnn_bench_models.py")
        onnx.checker.check_model(m, full_check=True)
        return m


def resnet18(b):
    n = Net(18)
    x = n.relu(n.bn(n.conv("input", 3, 64, 7, stride=2), 64))
    x = n.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for block in range(2):
            s = stride if block == 0 else 1
            h = n.relu(n.bn(n.conv(x, cin, cout, 3, stride=s), cout))
            h = n.bn(n.conv(h, cout, cout, 3), cout)
            skip = x if (s == 1 and cin == cout) else n.bn(n.conv(x, cin, cout, 1, stride=s), cout)
            x = n.relu(n.op("Add", [h, skip]))
            cin = cout
    x = n.op("Flatten", [n.op("GlobalAveragePool", [x])], axis=1)
    return n.model("resnet18", [b, 3, 224, 224], [(n.linear(x, 512, 1000), [b, 1000])])


def mobilenetv2(b):
    n = Net(2)
    x = n.relu6(n.bn(n.conv("input", 3, 32, 3, stride=2), 32))
    cin = 32
    # (expansion t, channels c, repeats n, first stride s) of the paper's table 2.
    for t, c, reps, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                          (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(reps):
            stride = s if i == 0 else 1
            hidden = cin * t
            h = x
            if t != 1:
                h = n.relu6(n.bn(n.conv(h, cin, hidden, 1), hidden))
            h = n.relu6(n.bn(n.conv(h, hidden, hidden, 3, stride=stride, group=hidden), hidden))
            h = n.bn(n.conv(h, hidden, c, 1), c)
            x = n.op("Add", [x, h]) if stride == 1 and cin == c else h
            cin = c
    x = n.relu6(n.bn(n.conv(x, 320, 1280, 1), 1280))
    x = n.op("Flatten", [n.op("GlobalAveragePool", [x])], axis=1)
    return n.model("mobilenetv2", [b, 3, 224, 224], [(n.linear(x, 1280, 1000), [b, 1000])])


def unet(b):
    n = Net(3)

    def double(x, cin, cout):
        x = n.relu(n.bn(n.conv(x, cin, cout, 3), cout))
        return n.relu(n.bn(n.conv(x, cout, cout, 3), cout))

    skips, x, cin = [], "input", 3
    for c in (16, 32, 64):
        x = double(x, cin, c)
        skips.append((x, c))
        x = n.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
        cin = c
    x = double(x, 64, 128)
    cin = 128
    for skip, c in reversed(skips):
        w = n.rng.normal(0, np.sqrt(2.0 / (cin * 4)), (cin, c, 2, 2)).astype(np.float32)
        bias = n.rng.normal(0, 0.1, c).astype(np.float32)
        up = n.op("ConvTranspose", [x, n.const("wt", w), n.const("bt", bias)],
                  kernel_shape=[2, 2], strides=[2, 2])
        x = double(n.op("Concat", [up, skip], axis=1), 2 * c, c)
        cin = c
    out = n.conv(x, 16, 2, 1, bias=True)
    return n.model("unet", [b, 3, 128, 128], [(out, [b, 2, 128, 128])])


def crnn(b):
    n = Net(4)
    hidden, classes = 128, 37
    x, cin = "input", 1
    # (channels, pool (kh, kw) after the block or None)
    for c, pool in ((64, (2, 2)), (128, (2, 2)), (256, None), (256, (2, 1)),
                    (256, None), (256, (2, 1))):
        x = n.relu(n.bn(n.conv(x, cin, c, 3), c))
        if pool:
            x = n.op("MaxPool", [x], kernel_shape=list(pool), strides=list(pool))
        cin = c
    # [B, 256, 2, 32] -> mean over height -> [B, 256, 32] -> [32, B, 256]
    x = n.op("ReduceMean", [x], axes=[2], keepdims=0)  # axes an attribute before opset 18
    seq = n.op("Transpose", [x], perm=[2, 0, 1])
    rng = n.rng
    s = 1 / np.sqrt(hidden)
    w = rng.uniform(-s, s, (2, 4 * hidden, 256)).astype(np.float32)
    r = rng.uniform(-s, s, (2, 4 * hidden, hidden)).astype(np.float32)
    bias = rng.uniform(-s, s, (2, 8 * hidden)).astype(np.float32)
    y = n.op("LSTM", [seq, n.const("lstm_w", w), n.const("lstm_r", r), n.const("lstm_b", bias)],
             n_out=1, hidden_size=hidden, direction="bidirectional")
    # Y: [T, 2, B, H] -> [T, B, 2, H] -> [T, B, 2H]
    y = n.op("Transpose", [y], perm=[0, 2, 1, 3])
    y = n.op("Reshape", [y, n.const("shape", np.array([32, b, 2 * hidden], np.int64))])
    wfc = rng.normal(0, np.sqrt(1.0 / (2 * hidden)), (2 * hidden, classes)).astype(np.float32)
    bfc = rng.normal(0, 0.1, classes).astype(np.float32)
    out = n.op("Add", [n.op("MatMul", [y, n.const("fc_w", wfc)]), n.const("fc_b", bfc)])
    return n.model("crnn", [b, 1, 32, 128], [(out, [32, b, classes])])


def yolo(b):
    n = Net(5)

    def cbs(x, cin, cout, k=1, stride=1):
        return n.silu(n.bn(n.conv(x, cin, cout, k, stride=stride), cout))

    def csp(x, c, blocks):
        half = c // 2
        a = cbs(x, c, half)
        bb = cbs(x, c, half)
        for _ in range(blocks):
            a = n.op("Add", [a, cbs(cbs(a, half, half), half, half, 3)])
        return cbs(n.op("Concat", [a, bb], axis=1), c, c)

    x = cbs("input", 3, 16, 3, 2)           # 128
    x = csp(cbs(x, 16, 32, 3, 2), 32, 1)     # 64
    x = csp(cbs(x, 32, 64, 3, 2), 64, 2)     # 32
    p3 = x
    x = csp(cbs(x, 64, 128, 3, 2), 128, 2)   # 16
    # SPPF: three chained 5x5 max pools, concat.
    s = cbs(x, 128, 64)
    pools = [s]
    for _ in range(3):
        pools.append(n.op("MaxPool", [pools[-1]], kernel_shape=[5, 5], strides=[1, 1],
                          pads=[2, 2, 2, 2]))
    p4 = cbs(n.op("Concat", pools, axis=1), 256, 128)
    scales = n.const("scales", np.array([1, 1, 2, 2], np.float32))
    up = n.op("Resize", [cbs(p4, 128, 64), "", scales], mode="nearest")
    p3 = csp(cbs(n.op("Concat", [up, p3], axis=1), 128, 64), 64, 1)
    head4 = n.conv(p4, 128, 255, 1, bias=True)
    head3 = n.conv(p3, 64, 255, 1, bias=True)
    return n.model("yolo", [b, 3, 256, 256], [(head4, [b, 255, 16, 16]), (head3, [b, 255, 32, 32])])


MODELS = {"resnet18": resnet18, "mobilenetv2": mobilenetv2, "unet": unet, "crnn": crnn, "yolo": yolo}


def main():
    root = os.environ.get("RLX_MODELS", os.path.expanduser("~/.cache/rlx-models"))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "cnn")
    os.makedirs(out, exist_ok=True)
    for name, build in MODELS.items():
        for b in BATCHES:
            path = os.path.join(out, f"{name}_b{b}.onnx")
            onnx.save(build(b), path)
            print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
