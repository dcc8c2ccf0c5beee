#!/usr/bin/env python3
"""More models in other exporters' styles (second round): spox-style opset
18-21 graphs, PyTorch 2 dynamo local functions at opset 18 (converted down
with their bodies), Scan/Loop/If corners, symbolic dims, odd names and
hostile-but-valid shapes. Same contract as exporter_models.py: each case
returns (ModelProto, {input: array}, [outputs]) with numpy references
computed here in float64. CONVERT lists, per case, the opsets
test_exporters2.py converts it to (the converted model must compute the
same references); REFUSE lists conversions that must be refused with one
line naming the reason."""
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exporter_models as EM  # noqa: E402

F = TensorProto.FLOAT
RNG = np.random.default_rng(11)
vi, init, model = EM.vi, EM.init, EM.model


def rnd(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def aref(name, ref, typ):
    a = onnx.AttributeProto()
    a.name, a.ref_attr_name, a.type = name, ref, typ
    return a


CASES = {}
CONVERT = {}     # case -> opsets to convert to (and run)
REFUSE = {}      # case -> {opset: text the one-line refusal must contain}
NO_ORT = {}
EXTERNAL = set()


def case(fn):
    CASES[fn.__name__] = fn
    return fn


@case
def dynamo_functions_opset18():
    """PyTorch 2 dynamo / onnxscript at opset 18: a function calling a
    function, each importing the default domain at 18 themselves; the
    bodies use opset-18 forms (ReduceMean axes as a Constant value_ints
    input, Split num_outputs) and a Constant whose value_float is the
    caller's attribute. `convert --opset 17/13` must convert the bodies
    too (before: the functions kept opset 18 and the converted model did
    not run); opset 11 lacks Constant value_float, which the body only
    knows from the caller, so that is refused."""
    o = [helper.make_opsetid("", 18), helper.make_opsetid("pkg.torch", 1)]
    eps = helper.make_node("Constant", [], ["eps"])
    eps.attribute.append(aref("value_float", "epsilon", onnx.AttributeProto.FLOAT))
    norm = helper.make_function("pkg.torch", "Norm", ["x"], ["y"], [
        helper.make_node("Constant", [], ["ax"], value_ints=[-1]),
        helper.make_node("ReduceMean", ["x", "ax"], ["mu"]),
        helper.make_node("Sub", ["x", "mu"], ["d"]),
        helper.make_node("Mul", ["d", "d"], ["d2"]),
        helper.make_node("ReduceMean", ["d2", "ax"], ["var"]),
        eps, helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["sd"]),
        helper.make_node("Div", ["d", "sd"], ["y"])], o, attributes=["epsilon"])
    halves = helper.make_function("pkg.torch", "Halves", ["x"], ["y"], [
        helper.make_node("Split", ["x"], ["a", "b"], axis=-1, num_outputs=2),
        helper.make_node("Norm", ["a"], ["an"], domain="pkg.torch", epsilon=1e-5),
        helper.make_node("Sigmoid", ["b"], ["bs"]),
        helper.make_node("Mul", ["an", "bs"], ["y"])], o)
    nodes = [helper.make_node("Halves", ["x"], ["h"], domain="pkg.torch"),
             helper.make_node("Norm", ["h"], ["y"], domain="pkg.torch", epsilon=1e-3)]
    g = helper.make_graph(nodes, "main_graph", [vi("x", ["batch", 3, 8])],
                          [vi("y", ["batch", 3, 4])])
    m = helper.make_model(g, opset_imports=o, functions=[norm, halves], producer_name="pytorch")
    m.ir_version = 8
    x = rnd(2, 3, 8)

    def nrm(v, e):
        mu = v.mean(-1, keepdims=True)
        return (v - mu) / np.sqrt(((v - mu) ** 2).mean(-1, keepdims=True) + e)
    x64 = x.astype(np.float64)
    h = nrm(x64[..., :4], 1e-5) / (1 + np.exp(-x64[..., 4:]))
    return m, {"x": x}, [nrm(h, 1e-3)]


CONVERT["dynamo_functions_opset18"] = (17, 13)
REFUSE["dynamo_functions_opset18"] = {11: "refers to the calling node's attribute"}


def write_case(name, folder):
    """As exporter_models.write_case, for this file's cases."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(name.encode()))
    m, feeds, refs = CASES[name]()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    onnx.save_model(m, path)
    ins = []
    for k, (nm, v) in enumerate(feeds.items()):
        p = os.path.join(folder, f"input_{k}.pb")
        with open(p, "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(v), nm).SerializeToString())
        ins.append((nm, p))
    return path, ins, feeds, refs, m


if __name__ == "__main__":
    d = sys.argv[1]
    for nm in CASES:
        write_case(nm, os.path.join(d, nm))
        print(nm)
