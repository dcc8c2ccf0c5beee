#!/usr/bin/python3
"""Writes a ResNet-50 (v1.5 geometry, batch 1, 224x224) with BatchNorm
already folded into the convolutions and seeded random weights: the graph
ONNX Runtime and `onnxscope optimize` produce from a trained export, without
needing one. Usage: gen_resnet50.py OUT.onnx"""
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

rng = np.random.default_rng(1)
nodes, inits = [], []
cnt = [0]


def name(p):
    cnt[0] += 1
    return f"{p}{cnt[0]}"


def conv(x, cin, cout, k, s=1, relu=True):
    w, b, y = name("w"), name("b"), name("conv")
    fan = cin * k * k
    inits.append(numpy_helper.from_array(
        (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / fan)).astype(np.float32), w))
    inits.append(numpy_helper.from_array((rng.standard_normal(cout) * 0.01).astype(np.float32), b))
    p = k // 2
    nodes.append(helper.make_node("Conv", [x, w, b], [y], kernel_shape=[k, k], strides=[s, s],
                                  pads=[p, p, p, p]))
    if not relu:
        return y
    r = name("relu")
    nodes.append(helper.make_node("Relu", [y], [r]))
    return r


def bottleneck(x, cin, mid, cout, s):
    a = conv(x, cin, mid, 1)
    a = conv(a, mid, mid, 3, s)
    a = conv(a, mid, cout, 1, relu=False)
    sc = conv(x, cin, cout, 1, s, relu=False) if (s != 1 or cin != cout) else x
    o, r = name("add"), name("relu")
    nodes.append(helper.make_node("Add", [a, sc], [o]))
    nodes.append(helper.make_node("Relu", [o], [r]))
    return r


x = conv("input", 3, 64, 7, 2)
mp = name("pool")
nodes.append(helper.make_node("MaxPool", [x], [mp], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1]))
x, cin = mp, 64
for mid, n, s in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
    for i in range(n):
        x = bottleneck(x, cin, mid, mid * 4, s if i == 0 else 1)
        cin = mid * 4
gp, fl = name("gap"), name("flat")
nodes.append(helper.make_node("GlobalAveragePool", [x], [gp]))
nodes.append(helper.make_node("Flatten", [gp], [fl], axis=1))
inits.append(numpy_helper.from_array((rng.standard_normal((1000, 2048)) * 0.02).astype(np.float32), "fc_w"))
inits.append(numpy_helper.from_array(np.zeros(1000, np.float32), "fc_b"))
nodes.append(helper.make_node("Gemm", [fl, "fc_w", "fc_b"], ["logits"], transB=1))
g = helper.make_graph(nodes, "resnet50_folded",
                      [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])],
                      [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="onnxscope bench")
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
