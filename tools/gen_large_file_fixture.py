#!/usr/bin/env python3
"""A model whose weights are stored in the file (168 KB) and ONNX Runtime's
output on it, for crates/rlx-onnx/tests/tiny_cnn.rs, which pads the file past
2 MiB with a field ONNX does not define: `OnnxModel::load` reads a file that
large into a huge-page mapping, and the weights are slices of it.

    ~/.cache/rlx-ref/venv/bin/python tools/gen_large_file_fixture.py

(env: the reference venv of shared/ref/setup.sh: onnx, onnxruntime, numpy.)
Writes crates/rlx-onnx/tests/fixtures/cnn/: large_file.onnx (opset 17,
built with tools/gen_cnn_bench_models.py's Net: conv 32->64 3x3 + BN +
ReLU, conv 64->32 3x3 + BN, a residual add of the input, conv 32->16 3x3
with bias; 73.7 KB + 73.7 KB + 18.4 KB of weights), large_input.bin
[1,32,8,8] and large_output.bin [1,16,8,8] (raw little-endian f32; input
x[i] = ((i * 7919) % 1000) / 500 - 1).
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_cnn_bench_models import Net  # noqa: E402
from gen_tiny_cnn_fixture import OUT, inputs  # noqa: E402

SHAPE = (1, 32, 8, 8)


def model():
    n = Net(23)
    a = n.relu(n.bn(n.conv("input", 32, 64, 3), 64))
    b = n.bn(n.conv(a, 64, 32, 3), 32)
    r = n.op("Add", [b, "input"])
    out = n.conv(r, 32, 16, 3, bias=True)
    return n.model("large_file", list(SHAPE), [(out, [1, 16, 8, 8])])


def main():
    path = os.path.join(OUT, "large_file.onnx")
    onnx.save(model(), path)
    x = inputs(SHAPE)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"input": x})
    x.tofile(os.path.join(OUT, "large_input.bin"))
    y.astype(np.float32).tofile(os.path.join(OUT, "large_output.bin"))
    size = os.path.getsize(path)
    print(f"{path}: {size} bytes, output {y.shape}, max |y| {np.abs(y).max():.3f}, onnxruntime {ort.__version__}")


if __name__ == "__main__":
    main()
