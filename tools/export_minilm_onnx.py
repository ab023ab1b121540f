#!/usr/bin/env python3
"""Writes an fp32 ONNX graph of all-MiniLM-L6-v2 from its model.safetensors (no torch).

    python3 tools/export_minilm_onnx.py MODEL_DIR OUT.onnx

Needs numpy, onnx and safetensors (tools/fetch_models.sh makes a throwaway venv
with pinned versions and runs this; the real-model ONNX tests use the result).
The graph is HF BertModel (eval) + sentence-transformers mean pooling + L2
normalisation in plain opset-17 ops:
  inputs : input_ids, attention_mask, token_type_ids   int64 [batch, sequence]
  outputs: last_hidden_state float32 [batch, sequence, 384]
           sentence_embedding float32 [batch, 384]
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

# HF BertModel's additive mask value for padded positions.
MASK_MIN = float(np.finfo(np.float32).min)


class Builder:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def fresh(self, prefix):
        self.n += 1
        return f"{prefix}_{self.n}"

    def const(self, arr, name=None):
        name = name or self.fresh("c")
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def op(self, kind, ins, **attrs):
        out = self.fresh(kind.lower())
        self.nodes.append(helper.make_node(kind, ins, [out], name=out, **attrs))
        return out


def build(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    w = {k: (v.astype(np.float32) if v.dtype.kind == "f" else v)
         for k, v in load_file(os.path.join(model_dir, "model.safetensors")).items()}
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    head_dim = hidden // heads
    eps = float(cfg["layer_norm_eps"])
    b = Builder()

    def param(name):
        return b.const(w[name], name)

    def linear(x, prefix):
        wt = b.const(np.ascontiguousarray(w[prefix + ".weight"].T), prefix + ".weight_t")
        return b.op("Add", [b.op("MatMul", [x, wt]), param(prefix + ".bias")])

    def layer_norm(x, prefix):
        return b.op("LayerNormalization", [x, param(prefix + ".weight"), param(prefix + ".bias")],
                    axis=-1, epsilon=eps)

    seq = b.op("Gather", [b.op("Shape", ["input_ids"]), b.const(np.array(1, np.int64))], axis=0)
    positions = b.op("Range", [b.const(np.array(0, np.int64)), seq, b.const(np.array(1, np.int64))])
    x = b.op("Add", [b.op("Gather", [param("embeddings.word_embeddings.weight"), "input_ids"], axis=0),
                     b.op("Gather", [param("embeddings.position_embeddings.weight"), positions], axis=0)])
    x = b.op("Add", [x, b.op("Gather", [param("embeddings.token_type_embeddings.weight"), "token_type_ids"], axis=0)])
    x = layer_norm(x, "embeddings.LayerNorm")

    mask_f = b.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    additive = b.op("Mul", [b.op("Sub", [b.const(np.array(1.0, np.float32)), mask_f]),
                            b.const(np.array(MASK_MIN, np.float32))])
    additive = b.op("Unsqueeze", [additive, b.const(np.array([1, 2], np.int64))])
    split_shape = b.const(np.array([0, 0, heads, head_dim], np.int64), "split_heads")
    merge_shape = b.const(np.array([0, 0, hidden], np.int64), "merge_heads")
    scale = b.const(np.array(1.0 / np.sqrt(head_dim), np.float32), "attn_scale")
    rsqrt2 = b.const(np.array(1.0 / np.sqrt(2.0), np.float32), "rsqrt2")
    one = b.const(np.array(1.0, np.float32), "one")
    half = b.const(np.array(0.5, np.float32), "half")

    for layer in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."

        def heads_of(t, perm):
            return b.op("Transpose", [b.op("Reshape", [t, split_shape])], perm=perm)

        q = heads_of(linear(x, p + "attention.self.query"), [0, 2, 1, 3])
        kt = heads_of(linear(x, p + "attention.self.key"), [0, 2, 3, 1])
        v = heads_of(linear(x, p + "attention.self.value"), [0, 2, 1, 3])
        scores = b.op("Add", [b.op("Mul", [b.op("MatMul", [q, kt]), scale]), additive])
        probs = b.op("Softmax", [scores], axis=-1)
        ctx = b.op("Transpose", [b.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", [ctx, merge_shape])
        x = layer_norm(b.op("Add", [linear(ctx, p + "attention.output.dense"), x]),
                       p + "attention.output.LayerNorm")
        h = linear(x, p + "intermediate.dense")
        gelu = b.op("Mul", [b.op("Mul", [h, half]),
                            b.op("Add", [b.op("Erf", [b.op("Mul", [h, rsqrt2])]), one])])
        x = layer_norm(b.op("Add", [linear(gelu, p + "output.dense"), x]), p + "output.LayerNorm")

    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="out_hidden"))
    mask3 = b.op("Unsqueeze", [mask_f, b.const(np.array([2], np.int64))])
    axis1 = b.const(np.array([1], np.int64))
    summed = b.op("ReduceSum", [b.op("Mul", [x, mask3]), axis1], keepdims=0)
    count = b.op("Max", [b.op("ReduceSum", [mask3, axis1], keepdims=0), b.const(np.array(1e-9, np.float32))])
    mean = b.op("Div", [summed, count])
    norm = b.op("Max", [b.op("ReduceL2", [mean], axes=[-1], keepdims=1), b.const(np.array(1e-12, np.float32))])
    b.nodes.append(helper.make_node("Div", [mean, norm], ["sentence_embedding"], name="out_sentence"))

    dims = ["batch", "sequence"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, dims)
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, dims + [hidden]),
               helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])]
    graph = helper.make_graph(b.nodes, "all-MiniLM-L6-v2", inputs, outputs, b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="rlx tools/export_minilm_onnx.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    model_dir, out = sys.argv[1], sys.argv[2]
    onnx.save(build(model_dir), out)
    print(f"wrote {out} ({os.path.getsize(out)} bytes)")
