#!/usr/bin/env python3
"""A conv whose weight is large (256x256x3x3 f32 = 2.36 MB) followed by a
BatchNormalization, and ONNX Runtime's output on it, for
crates/rlx-onnx/tests/tiny_cnn.rs: the importer folds the normalisation into
the conv, and a weight this large is folded into a huge-page mapping.

    ~/.cache/rlx-ref/venv/bin/python tools/gen_wide_conv_bn_fixture.py

(env: the reference venv of shared/ref/setup.sh: onnx, onnxruntime, numpy.)
The weight is computed inside the graph (Range -> Mul -> Sin -> Mul ->
Reshape, constant-folded on import) so the committed model stays a few KB.
Writes crates/rlx-onnx/tests/fixtures/cnn/: wide_conv_bn.onnx (opset 17),
wide_input.bin [1,256,3,3] and wide_output.bin [1,256,3,3] (raw
little-endian f32; input x[i] = ((i * 7919) % 1000) / 500 - 1).
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "rlx-onnx", "tests", "fixtures", "cnn")
C, K = 256, 3


def model():
    rng = np.random.default_rng(11)
    n = C * C * K * K
    inits = [
        numpy_helper.from_array(np.array(0.0, np.float32), "start"),
        numpy_helper.from_array(np.array(float(n), np.float32), "limit"),
        numpy_helper.from_array(np.array(1.0, np.float32), "delta"),
        numpy_helper.from_array(np.array(0.37, np.float32), "freq"),
        numpy_helper.from_array(np.array(0.05, np.float32), "amp"),
        numpy_helper.from_array(np.array([C, C, K, K], np.int64), "wshape"),
        numpy_helper.from_array(rng.normal(0, 0.1, C).astype(np.float32), "bias"),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, C).astype(np.float32), "scale"),
        numpy_helper.from_array(rng.normal(0, 0.2, C).astype(np.float32), "shift"),
        numpy_helper.from_array(rng.normal(0, 0.3, C).astype(np.float32), "mean"),
        numpy_helper.from_array(rng.uniform(0.5, 2.0, C).astype(np.float32), "var"),
    ]
    nodes = [
        helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
        helper.make_node("Mul", ["r", "freq"], ["rf"]),
        helper.make_node("Sin", ["rf"], ["s"]),
        helper.make_node("Mul", ["s", "amp"], ["sa"]),
        helper.make_node("Reshape", ["sa", "wshape"], ["w"]),
        helper.make_node("Conv", ["input", "w", "bias"], ["c"], kernel_shape=[K, K], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["output"], epsilon=1e-5),
    ]
    g = helper.make_graph(
        nodes,
        "wide_conv_bn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, C, 3, 3])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, C, 3, 3])],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    return m


def main():
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "wide_conv_bn.onnx")
    onnx.save(model(), path)
    shape = (1, C, 3, 3)
    x = ((((np.arange(int(np.prod(shape))) * 7919) % 1000) / 500 - 1).astype(np.float32)).reshape(shape)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"input": x})
    x.tofile(os.path.join(OUT, "wide_input.bin"))
    y.astype(np.float32).tofile(os.path.join(OUT, "wide_output.bin"))
    print(f"{path}: output {y.shape}, max |y| {np.abs(y).max():.3f}, onnxruntime {ort.__version__}")


if __name__ == "__main__":
    main()
