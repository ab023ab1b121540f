#!/usr/bin/env python3
"""Write ONNX's standard backend node test cases to a directory.

    ~/.cache/rlx-ref/venv/bin/python tools/gen_onnx_node_cases.py OUT_DIR

(env: the reference venv made by shared/ref/setup.sh; needs the `onnx` package.)

Layout, as in onnx/backend/test/data/node: OUT_DIR/<case>/model.onnx and
OUT_DIR/<case>/test_data_set_0/{input,output}_<i>.pb (serialized TensorProto),
plus OUT_DIR/<case>/tolerance.txt ("rtol atol", the case's own tolerances;
onnx's runner defaults to rtol 1e-3, atol 1e-7).

When the installed onnx ships the node data (onnx/backend/test/data/node) it
is copied; otherwise (PyPI wheels ship only the generators) each case is
produced from onnx.backend.test.case.node exactly as onnx's
`backend-test-tools generate-data` does for its own data directory.
"""
import os
import shutil
import sys
import warnings

import onnx
from onnx import numpy_helper


def write_tensor(path, value, name):
    with open(path, "wb") as f:
        if isinstance(value, onnx.TensorProto):
            f.write(value.SerializeToString())
        else:
            f.write(numpy_helper.from_array(value, name).SerializeToString())


def main(out):
    os.makedirs(out, exist_ok=True)
    packaged = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    if os.path.isdir(packaged):
        for case in sorted(os.listdir(packaged)):
            dst = os.path.join(out, case)
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(os.path.join(packaged, case), dst)
            with open(os.path.join(dst, "tolerance.txt"), "w") as f:
                f.write("0.001 1e-07\n")
        print(f"copied {len(os.listdir(packaged))} packaged cases to {out}")
        return
    import onnx.backend.test.case.node as node_cases

    warnings.simplefilter("ignore")
    cases = node_cases.collect_testcases(None)
    written = 0
    for case in cases:
        if not case.model or not case.data_sets:
            continue
        dst = os.path.join(out, case.name)
        shutil.rmtree(dst, ignore_errors=True)
        os.makedirs(dst)
        with open(os.path.join(dst, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        g = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(dst, f"test_data_set_{i}")
            os.makedirs(ds)
            try:
                for j, v in enumerate(inputs):
                    if not g.input[j].type.HasField("tensor_type"):
                        raise TypeError("non-tensor input")
                    write_tensor(os.path.join(ds, f"input_{j}.pb"), v, g.input[j].name)
                for j, v in enumerate(outputs):
                    if not g.output[j].type.HasField("tensor_type"):
                        raise TypeError("non-tensor output")
                    write_tensor(os.path.join(ds, f"output_{j}.pb"), v, g.output[j].name)
            except (TypeError, ValueError, AttributeError):
                # Sequence / optional / map values: not plain tensors; keep the
                # model so the harness reports the case as unsupported.
                shutil.rmtree(ds)
        with open(os.path.join(dst, "tolerance.txt"), "w") as f:
            f.write(f"{case.rtol} {case.atol}\n")
        written += 1
    print(f"generated {written} node cases with onnx {onnx.__version__} to {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
