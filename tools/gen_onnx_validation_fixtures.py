#!/usr/bin/env python3
"""Write the load-time validation fixtures of rlx-onnx:
crates/rlx-onnx/tests/fixtures/validation (checked by tests/validation.rs).

    python3 -m venv /tmp/onnxenv && /tmp/onnxenv/bin/pip install onnx onnxruntime numpy
    /tmp/onnxenv/bin/python tools/gen_onnx_validation_fixtures.py

Each invalid model breaks one rule, built with onnx.helper; the script checks
that `onnx.checker.check_model(full_check=True)` and ONNX Runtime treat every
fixture as recorded in CASES (an assertion fails otherwise), and prints the
table. Recorded with onnx 1.23.2 (opset 28) / onnxruntime 1.32.0:

    fixture              onnx.checker   onnxruntime   rlx-onnx
    opset_missing        rejects        accepts (a)   OnnxError::Opset (no default-domain opset)
    opset_zero           rejects        rejects (b)   OnnxError::Opset (opset 0)
    opset_too_new        accepts (c)    rejects       OnnxError::Opset (opset 29)
    too_many_inputs      rejects        rejects       OnnxError::Node (Relu: 2 inputs, takes 1)
    too_few_inputs       rejects        rejects       OnnxError::Node (Add: 1 input, takes 2)
    too_many_outputs     rejects        rejects       OnnxError::Node (Relu: 2 outputs, takes 1)
    wrong_attr_type      rejects        rejects       OnnxError::Node (Concat axis INTS, expects INT)
    missing_attr         rejects        rejects       OnnxError::Node (Cast: required "to")
    op_too_new           rejects        rejects       OnnxError::Node (Gelu at opset 11)
    dynamic_dims         accepts        accepts       loads; outputs match onnxruntime

(a) onnxruntime runs a model with no default-domain import at the newest
opset it knows; rlx-onnx refuses, as onnx.checker does ("No opset import for
domain ''"), since the op semantics would be a guess. (b) onnxruntime warns
that only opsets >= 7 are guaranteed, then fails the node ("Relu with
domain_version of 0"). (c) onnx.checker does not bound the version from above
(it fails only for ops missing at that version); onnxruntime 1.32 refuses
opsets above 28 ("only *guarantees* support for ... official released onnx
opset versions"), as rlx-onnx does above the newest opset of its schema table.

`dynamic_dims` is the real-exporter style model: an input with a `-1`
dim_value, an input with two unnamed (`?`) dims that differ at run time, two
inputs whose batch dim is named differently ("batch_size" as torch.onnx
writes, "unk__7" as tf2onnx writes) and a `-1` in value_info / outputs. Its
inputs and onnxruntime's outputs are stored as TensorProto files in
test_data_set_0 and test_data_set_1 (two different shapes).
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "crates", "rlx-onnx", "tests", "fixtures", "validation"
)
F = TensorProto.FLOAT
TOP = onnx.defs.onnx_opset_version()


def vi(name, dims, elem=F):
    return helper.make_tensor_value_info(name, elem, dims)


def model(nodes, inputs, outputs, opset=17, opsets=None, value_info=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, value_info=list(value_info))
    imports = opsets if opsets is not None else [helper.make_opsetid("", opset)]
    m = helper.make_model(g, opset_imports=imports, producer_name="gen_onnx_validation_fixtures")
    m.ir_version = 8
    return m


def relu(opset=17, opsets=None):
    return model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [vi("x", [2, 3])],
        [vi("y", [2, 3])],
        opset=opset,
        opsets=opsets,
    )


def cases():
    yield "opset_missing", relu(opsets=[helper.make_opsetid("ai.onnx.ml", 3)])
    yield "opset_zero", relu(opset=0)
    yield "opset_too_new", relu(opset=TOP + 1)
    yield "too_many_inputs", model(
        [helper.make_node("Relu", ["x", "x"], ["y"], name="relu_two")], [vi("x", [2, 3])], [vi("y", [2, 3])]
    )
    # Unnamed: the error names it by index (#0).
    yield "too_few_inputs", model([helper.make_node("Add", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3])])
    yield "too_many_outputs", model(
        [helper.make_node("Relu", ["x"], ["y", "z"], name="relu_out2")],
        [vi("x", [2, 3])],
        [vi("y", [2, 3]), vi("z", [2, 3])],
    )
    cat = helper.make_node("Concat", ["x", "x"], ["y"], name="cat", axis=[0])  # INTS, not INT
    yield "wrong_attr_type", model([cat], [vi("x", [2, 3])], [vi("y", [4, 3])])
    yield "missing_attr", model(
        [helper.make_node("Cast", ["x"], ["y"], name="cast")], [vi("x", [2, 3])], [vi("y", [2, 3])]
    )
    yield "op_too_new", model(
        [helper.make_node("Gelu", ["x"], ["y"], name="gelu")], [vi("x", [2, 3])], [vi("y", [2, 3])], opset=11
    )
    nodes = [
        helper.make_node("MatMul", ["a", "b"], ["y"], name="mm"),
        helper.make_node("Add", ["c", "d"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["z"], name="relu"),
    ]
    ins = [vi("a", [-1, 3]), vi("b", [None, None]), vi("c", ["batch_size", 3]), vi("d", ["unk__7", 3])]
    outs = [vi("y", [-1, -1]), vi("z", ["batch_size", 3])]
    yield "dynamic_dims", model(nodes, ins, outs, value_info=[vi("s", [-1, 3])])


# name -> (onnx.checker accepts, onnxruntime accepts)
CASES = {
    "opset_missing": (False, True),  # onnxruntime assumes its newest opset
    "opset_zero": (False, False),
    "opset_too_new": (True, False),  # the checker only warns
    "too_many_inputs": (False, False),
    "too_few_inputs": (False, False),
    "too_many_outputs": (False, False),
    "wrong_attr_type": (False, False),
    "missing_attr": (False, False),
    "op_too_new": (False, False),
    "dynamic_dims": (True, True),
}


def accepts(f):
    try:
        f()
        return True, ""
    except Exception as e:  # noqa: BLE001 - any refusal counts
        return False, str(e).strip().splitlines()[0][:110]


def write_dataset(d, sess, feeds):
    os.makedirs(d, exist_ok=True)
    for i, (k, v) in enumerate(feeds.items()):
        open(os.path.join(d, f"input_{i}.pb"), "wb").write(numpy_helper.from_array(v, k).SerializeToString())
    outs = sess.run(None, feeds)
    for i, (o, v) in enumerate(zip(sess.get_outputs(), outs)):
        open(os.path.join(d, f"output_{i}.pb"), "wb").write(numpy_helper.from_array(v, o.name).SerializeToString())


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20240523)
    print(f"onnx {onnx.__version__} (opset {TOP}), onnxruntime {ort.__version__}")
    for name, m in cases():
        b = m.SerializeToString()
        ck, ck_msg = accepts(lambda: onnx.checker.check_model(m, full_check=True))
        rt, rt_msg = accepts(lambda: ort.InferenceSession(b, providers=["CPUExecutionProvider"]))
        print(f"{name:18} checker {'accepts' if ck else 'rejects'}: {ck_msg}")
        print(f"{'':18} ort     {'accepts' if rt else 'rejects'}: {rt_msg}")
        assert os.environ.get("RECORD") or (ck, rt) == CASES[name], (name, ck, rt)
        if name == "dynamic_dims":
            d = os.path.join(OUT, name)
            os.makedirs(d, exist_ok=True)
            open(os.path.join(d, "model.onnx"), "wb").write(b)
            sess = ort.InferenceSession(b, providers=["CPUExecutionProvider"])
            for k, (n, m2, bt) in enumerate([(2, 5, 4), (3, 1, 2)]):
                feeds = {
                    "a": rng.standard_normal((n, 3)).astype(np.float32),
                    "b": rng.standard_normal((3, m2)).astype(np.float32),
                    "c": rng.standard_normal((bt, 3)).astype(np.float32),
                    "d": rng.standard_normal((bt, 3)).astype(np.float32),
                }
                write_dataset(os.path.join(d, f"test_data_set_{k}"), sess, feeds)
        else:
            open(os.path.join(OUT, f"{name}.onnx"), "wb").write(b)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
