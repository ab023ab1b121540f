"""Fixtures of the `rlx` command-line tests (crates/rlx-cli/tests/fixtures/).

Writes, with a fixed seed:
- tiny.onnx: inputs x f32[batch, 4], k i64[batch], d f64[3], i i32[2]; outputs
  hidden = tanh(x @ W + b), probs = softmax(hidden, -1), k3 = k * 3 + 1,
  d2 = d * d, i2 = i + i (W, b are initializers). Its inputs as .npy
  (x.npy, k.npy, d.npy, i.npy) and onnxruntime's outputs (ort_<name>.npy).
- tiny.rlx: an RLX text-IR graph y = (x @ w + b) * 0.5 with x f32[n, 4] (n
  symbolic) and params w f32[4, 32], b f32[32]; tiny.safetensors holds w and b;
  x_ir.npy an input (n = 3) and ref_y.npy numpy's output.
- convert_ref.json: the values of w and b (for `rlx convert` to GGUF f32).

Re-run (from the repository root):
    ~/.cache/rlx-ref/venv/bin/python tools/gen_cli_fixtures.py
"""
import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import save_file

OUT = Path(__file__).resolve().parent.parent / "crates" / "rlx-cli" / "tests" / "fixtures"


def tiny_onnx(rng):
    W = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["xw"]),
        helper.make_node("Add", ["xw", "b"], ["xwb"]),
        helper.make_node("Tanh", ["xwb"], ["hidden"]),
        helper.make_node("Softmax", ["hidden"], ["probs"], axis=-1),
        helper.make_node("Mul", ["k", "three"], ["k_3"]),
        helper.make_node("Add", ["k_3", "one"], ["k3"]),
        helper.make_node("Mul", ["d", "d"], ["d2"]),
        helper.make_node("Add", ["i", "i"], ["i2"]),
    ]
    inits = [
        numpy_helper.from_array(W, "W"),
        numpy_helper.from_array(b, "b"),
        numpy_helper.from_array(np.array(3, np.int64), "three"),
        numpy_helper.from_array(np.array(1, np.int64), "one"),
    ]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
        helper.make_tensor_value_info("k", TensorProto.INT64, ["batch"]),
        helper.make_tensor_value_info("d", TensorProto.DOUBLE, [3]),
        helper.make_tensor_value_info("i", TensorProto.INT32, [2]),
    ]
    outputs = [
        helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", 3]),
        helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 3]),
        helper.make_tensor_value_info("k3", TensorProto.INT64, ["batch"]),
        helper.make_tensor_value_info("d2", TensorProto.DOUBLE, [3]),
        helper.make_tensor_value_info("i2", TensorProto.INT32, [2]),
    ]
    graph = helper.make_graph(nodes, "tiny", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="gen_cli_fixtures")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, OUT / "tiny.onnx")

    feed = {
        "x": rng.standard_normal((2, 4)).astype(np.float32),
        "k": np.array([-7, 40000000000], np.int64),
        "d": np.array([1.5, -2.25, 1e-3], np.float64),
        "i": np.array([-5, 123456], np.int32),
    }
    for name, v in feed.items():
        np.save(OUT / f"{name}.npy", v)
    sess = ort.InferenceSession(str(OUT / "tiny.onnx"), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    for name, v in zip(names, sess.run(names, feed)):
        np.save(OUT / f"ort_{name}.npy", v)


def tiny_ir(rng):
    w = rng.standard_normal((4, 32)).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    (OUT / "tiny.rlx").write_text("""graph "tiny_ir" {
  %0 = input "x" : f32[n,4]
  %1 = param "w" : f32[4,32]
  %2 = param "b" : f32[32]
  %3 = matmul %0, %1 : f32[n,32]
  %4 = add %3, %2 : f32[n,32]
  %5 = constant [0.5] : f32[]
  %6 = mul %4, %5 : f32[n,32]
  return %6
}
""")
    save_file({"w": w, "b": b}, OUT / "tiny.safetensors")
    x = rng.standard_normal((3, 4)).astype(np.float32)
    np.save(OUT / "x_ir.npy", x)
    y = ((x.astype(np.float64) @ w.astype(np.float64) + b) * 0.5).astype(np.float32)
    np.save(OUT / "ref_y.npy", y)
    ref = {"w": {"dims": list(w.shape), "values": w.ravel().tolist()},
           "b": {"dims": list(b.shape), "values": b.ravel().tolist()}}
    (OUT / "convert_ref.json").write_text(json.dumps(ref) + "\n")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(24)
    tiny_onnx(rng)
    tiny_ir(rng)


if __name__ == "__main__":
    main()
