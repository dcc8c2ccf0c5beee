#!/usr/bin/python3
"""Writes one-node attention models for bench/attention_bench.sh: ONNX
Attention (opset 23, 4-D Q/K/V [1, H, S, 64], causal or with a boolean
[S, S] mask given as an input) and com.microsoft Attention (packed QKV
projection of [1, S, 64*H], 0/1 mask_index [1, S]).
Usage: gen_attention.py KIND S H OUT.onnx   (KIND: causal | boolmask | ms)"""
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

kind, S, H, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
hs, F = 64, TensorProto.FLOAT
if kind in ("causal", "boolmask"):
    ins = [helper.make_tensor_value_info(n, F, [1, H, S, hs]) for n in "qkv"]
    names = ["q", "k", "v"]
    attrs = {}
    if kind == "boolmask":
        ins.append(helper.make_tensor_value_info("mask", TensorProto.BOOL, [S, S]))
        names.append("mask")
    else:
        attrs["is_causal"] = 1
    node = helper.make_node("Attention", names, ["y"], **attrs)
    y = helper.make_tensor_value_info("y", F, [1, H, S, hs])
    g = helper.make_graph([node], "attention", ins, [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
else:
    D = H * hs
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array((rng.standard_normal((D, 3 * D)) / np.sqrt(D)).astype(np.float32), "w")
    b = numpy_helper.from_array((rng.standard_normal(3 * D) * 0.01).astype(np.float32), "b")
    x = helper.make_tensor_value_info("x", F, [1, S, D])
    mi = helper.make_tensor_value_info("mask", TensorProto.INT32, [1, S])
    node = helper.make_node("Attention", ["x", "w", "b", "mask"], ["y"], domain="com.microsoft",
                            num_heads=H)
    y = helper.make_tensor_value_info("y", F, [1, S, D])
    g = helper.make_graph([node], "ms_attention", [x, mi], [y], initializer=[w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                             helper.make_opsetid("com.microsoft", 1)])
m.ir_version = 10
onnx.save(m, out)
