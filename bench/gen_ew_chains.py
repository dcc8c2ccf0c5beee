#!/usr/bin/env python3
"""Elementwise chains for bench/ew_fuse_bench.sh, as exporters write them.
   gen_ew_chains.py KIND ROWS COLS OUT.onnx
   KIND: gelu_tanh  GPT-2's 0.5*x*(1+tanh(0.79788*(x+0.044715*x^3)))
         bias_chain relu(x + b) * s + r  (a bias row, a scalar, a residual)
         ln_tail    (x - mean) / sqrt(var + eps) * gamma + beta, mean and
                    var from ReduceMean over the last axis (keepdims)"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

kind, rows, cols, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = np.random.default_rng(1)
nodes, inits = [], []
inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, cols])]


def const(name, v):
    inits.append(numpy_helper.from_array(np.asarray(v, dtype=np.float32), name))
    return name


def op(t, ins, outn, **kw):
    nodes.append(helper.make_node(t, ins, [outn], **kw))
    return outn


if kind == "gelu_tanh":
    c = op("Pow", ["x", const("three", 3.0)], "c")
    i = op("Add", ["x", op("Mul", [c, const("k", 0.044715)], "ck")], "i")
    t = op("Tanh", [op("Mul", [i, const("s2p", 0.7978846)], "is")], "t")
    y = op("Mul", [op("Mul", ["x", const("half", 0.5)], "xh"), op("Add", [t, const("one", 1.0)], "t1")], "y")
elif kind == "bias_chain":
    inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [rows, cols]))
    b = const("b", rng.standard_normal(cols))
    a = op("Relu", [op("Add", ["x", b], "xb")], "a")
    y = op("Add", [op("Mul", [a, const("s", 0.125)], "as"), "r"], "y")
elif kind == "ln_tail":
    m = op("ReduceMean", ["x"], "m", axes=[-1], keepdims=1)
    d = op("Sub", ["x", m], "d")
    v = op("ReduceMean", [op("Pow", [d, const("two", 2.0)], "d2")], "v", axes=[-1], keepdims=1)
    den = op("Sqrt", [op("Add", [v, const("eps", 1e-5)], "ve")], "den")
    g, be = const("g", rng.standard_normal(cols)), const("be", rng.standard_normal(cols))
    y = op("Add", [op("Mul", [op("Div", [d, den], "n"), g], "ng"), be], "y")
else:
    sys.exit(f"gen_ew_chains.py: unknown kind {kind}")
g = helper.make_graph(nodes, kind, inputs,
                      [helper.make_tensor_value_info(y, TensorProto.FLOAT, [rows, cols])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m, full_check=True)
onnx.save(m, out)
