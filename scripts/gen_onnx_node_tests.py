#!/usr/bin/env python3
"""Writes the ONNX node conformance cases of the installed `onnx` package
(pip's onnx ships the case generators and its reference outputs, not the data
files) as backend test directories: OUT/<case>/model.onnx +
test_data_set_N/{input,output}_K.pb, the layout `onyx test` reads. This is how
the newest release's node tests are run; Debian's libonnx-testdata is older.

Usage: gen_onnx_node_tests.py OUT"""
import os
import shutil
import sys
import warnings

from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node


def proto_for(value, type_proto, name):
    if isinstance(value, TensorProto):
        return value
    if type_proto.HasField("sequence_type"):
        return numpy_helper.from_list(value, name)
    if type_proto.HasField("optional_type"):
        return numpy_helper.from_optional(value, name)
    if type_proto.HasField("map_type"):
        return numpy_helper.from_dict(value, name)
    return numpy_helper.from_array(value, name)


def main():
    out = sys.argv[1]
    warnings.simplefilter("ignore")
    cases = node.collect_testcases(None)
    written = 0
    for case in cases:
        d = os.path.join(out, case.name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        g = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(ds)
            for kind, values, infos in (("input", inputs, g.input), ("output", outputs, g.output)):
                for j, v in enumerate(values):
                    with open(os.path.join(ds, f"{kind}_{j}.pb"), "wb") as f:
                        f.write(proto_for(v, infos[j].type, infos[j].name).SerializeToString())
        written += 1
    print(f"{written} node cases written to {out}")


if __name__ == "__main__":
    main()
