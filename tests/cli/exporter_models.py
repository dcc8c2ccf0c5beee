#!/usr/bin/env python3
"""Small models written the way other exporters write them (PyTorch 1.x
without folding, PyTorch 2 dynamo, Paddle2ONNX, TF2ONNX/Keras, IR < 4 tools),
with their inputs and a numpy reference for every output.

Each case is a function returning (ModelProto, {input: array}, [outputs]).
The references are computed here in float64 from the same numbers the model
holds, independently of onnxscope. test_exporters.py runs them through every
path; `python3 exporter_models.py DIR` just writes them (model.onnx,
input_K.pb, output_K.pb per case folder) for a look by hand."""
import math
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
RNG = np.random.default_rng(7)


def rnd(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


# ---------------------------------------------------------------- numpy ops
def np_conv(x, w, b=None, pads=(0, 0, 0, 0), strides=(1, 1), group=1, dil=(1, 1)):
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    ho = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
    wo = (wd + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, m, ho, wo))
    mg = m // group
    for g in range(group):
        for i in range(kh):
            for j in range(kw):
                r0, c0 = i * dil[0], j * dil[1]
                patch = xp[:, g * cg:(g + 1) * cg,
                           r0:r0 + strides[0] * (ho - 1) + 1:strides[0],
                           c0:c0 + strides[1] * (wo - 1) + 1:strides[1]]
                out[:, g * mg:(g + 1) * mg] += np.einsum(
                    "nchw,mc->nmhw", patch, w[g * mg:(g + 1) * mg, :, i, j])
    if b is not None:
        out += b.astype(np.float64).reshape(1, -1, 1, 1)
    return out


def np_bn(x, s, b, mean, var, eps=1e-5):
    sh = (1, -1) + (1,) * (x.ndim - 2)
    return (x - mean.reshape(sh)) / np.sqrt(var.reshape(sh).astype(np.float64) + eps) \
        * s.reshape(sh) + b.reshape(sh)


def relu(x):
    return np.maximum(x, 0)


def np_erf(x):
    return np.vectorize(math.erf)(x)


def np_gelu(x):
    return 0.5 * x * (1 + np_erf(x / math.sqrt(2)))


def np_ln(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


# ---------------------------------------------------------------- builders
def const(name, arr):
    """A Constant node holding arr (PyTorch 1.x without constant folding)."""
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.asarray(arr), name + "_v"))


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def vi(name, shape, et=F):
    return helper.make_tensor_value_info(name, et, shape)


def model(nodes, inputs, outputs, inits=(), opset=13, ir=None, extra_opsets=(),
          value_info=(), producer="exporter_models"):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits),
                          value_info=list(value_info))
    ops = [helper.make_opsetid("", opset)] + list(extra_opsets)
    m = helper.make_model(g, opset_imports=ops, producer_name=producer)
    if ir is None:
        ir = {7: 3, 8: 3, 9: 4, 10: 5, 11: 6, 12: 7, 13: 7, 14: 7, 15: 8, 16: 8,
              17: 8, 18: 8, 19: 9, 20: 9, 21: 10}[opset]
    m.ir_version = ir
    return m


def bn_params(c):
    return (rnd(c, lo=0.5, hi=1.5), rnd(c), rnd(c), rnd(c, lo=0.2, hi=2.0))


# ---------------------------------------------------------------- cases
CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def conv_bn_chain_nodes(pfx, x, c_in, c_out, weights_as, clip_from_const=True, opset=11,
                        store=None):
    """Conv+BN+Relu, Conv+BN+Clip(0,6): weights as Constant nodes or as
    names the caller provides (outer-scope initializers). Returns (nodes,
    out name, numpy function)."""
    w1, b1 = rnd(c_out, c_in, 3, 3, lo=-0.5, hi=0.5), rnd(c_out)
    w2 = rnd(c_out, c_out, 1, 1)
    bn1, bn2 = bn_params(c_out), bn_params(c_out)
    nodes = []
    names = {}
    tensors = {"w1": w1, "b1": b1, "w2": w2, "s1": bn1[0], "o1": bn1[1], "m1": bn1[2],
               "v1": bn1[3], "s2": bn2[0], "o2": bn2[1], "m2": bn2[2], "v2": bn2[3],
               "lo": np.array(0, np.float32), "hi": np.array(6, np.float32)}
    for k, v in tensors.items():
        nm = f"{pfx}{k}"
        names[k] = nm
        if weights_as == "const":
            nodes.append(const(nm, v))
        else:
            store.append(init(nm, v))
    nodes += [
        helper.make_node("Conv", [x, names["w1"], names["b1"]], [pfx + "c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", [pfx + "c1", names["s1"], names["o1"], names["m1"],
                                                names["v1"]], [pfx + "n1"], epsilon=1e-5),
        helper.make_node("Relu", [pfx + "n1"], [pfx + "r1"]),
        helper.make_node("Conv", [pfx + "r1", names["w2"]], [pfx + "c2"]),
        helper.make_node("BatchNormalization", [pfx + "c2", names["s2"], names["o2"], names["m2"],
                                                names["v2"]], [pfx + "n2"], epsilon=1e-5),
    ]
    if opset < 11:
        nodes.append(helper.make_node("Clip", [pfx + "n2"], [pfx + "out"], min=0.0, max=6.0))
    else:
        nodes.append(helper.make_node("Clip", [pfx + "n2", names["lo"], names["hi"]], [pfx + "out"]))

    def ref(xv):
        y = relu(np_bn(np_conv(xv, w1, b1, pads=(1, 1, 1, 1)), *bn1))
        y = np_bn(np_conv(y, w2), *bn2)
        return np.clip(y, 0, 6)
    return nodes, pfx + "out", ref


@case
def pt1_conv_bn_const_b2():
    """PyTorch 1.x, no constant folding: every weight, BN parameter and the
    Clip bounds are Constant nodes; batch 2."""
    nodes, out, ref = conv_bn_chain_nodes("", "input.1", 4, 8, "const")
    x = rnd(2, 4, 7, 7) * 3
    m = model(nodes, [vi("input.1", ["batch_size", 4, 7, 7])], [vi(out, ["batch_size", 8, 7, 7])],
              opset=11)
    return m, {"input.1": x}, [ref(x)]


@case
def pt1_conv_bn_opset9_b3():
    """The same chain at opset 9 (Clip bounds as attributes), batch 3."""
    nodes, out, ref = conv_bn_chain_nodes("", "x", 3, 6, "const", opset=9)
    x = rnd(3, 3, 6, 5) * 3
    m = model(nodes, [vi("x", [3, 3, 6, 5])], [vi(out, [3, 6, 6, 5])], opset=9)
    return m, {"x": x}, [ref(x)]


def _if_model(cond=True):
    """If whose branches run Conv chains on outer-scope initializers (the
    then branch) and on Constant nodes inside the branch (else); run with
    either condition."""
    store = []
    tn, tout, tref = conv_bn_chain_nodes("t_", "x", 4, 8, "init", store=store)
    en, eout, eref = conv_bn_chain_nodes("e_", "x", 4, 8, "const")
    then_g = helper.make_graph(tn, "then", [], [vi(tout, ["N", 8, 5, 5])])
    else_g = helper.make_graph(en, "else", [], [vi(eout, ["N", 8, 5, 5])])
    nodes = [helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)]
    x = rnd(2, 4, 5, 5) * 3
    m = model(nodes, [vi("x", ["N", 4, 5, 5]), vi("cond", [], TensorProto.BOOL)],
              [vi("y", ["N", 8, 5, 5])], inits=store, opset=13)
    return m, {"x": x, "cond": np.array(cond)}, [(tref if cond else eref)(x)]


CASES["if_then_outer_weights"] = lambda: _if_model(True)
CASES["if_else_const_weights"] = lambda: _if_model(False)


def _loop_model(unsorted):
    """Loop (3 trips) whose body runs Conv+BN+Relu on outer-scope weights and
    BN parameters, carrying the activation; `unsorted` writes the body's
    nodes out of topological order (ONNX requires the order, ONNX Runtime
    refuses such a body; we run it, as order-free tools write them)."""
    c = 4
    w, b = rnd(c, c, 3, 3, lo=-0.4, hi=0.4), rnd(c)
    bn = bn_params(c)
    store = [init("W", w), init("B", b), init("S", bn[0]), init("O", bn[1]),
             init("M", bn[2]), init("V", bn[3]), init("trip", np.array(3, np.int64))]
    body_nodes = [
        helper.make_node("Relu", ["n"], ["x_out"]),
        helper.make_node("BatchNormalization", ["cv", "S", "O", "M", "V"], ["n"]),
        helper.make_node("Conv", ["x_in", "W", "B"], ["cv"], pads=[1, 1, 1, 1]),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
    ]
    body = helper.make_graph(body_nodes, "body",
                             [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL),
                              vi("x_in", ["N", c, 5, 5])],
                             [vi("cond_out", [], TensorProto.BOOL), vi("x_out", ["N", c, 5, 5])])
    if not unsorted:
        body_nodes.reverse()
        body = helper.make_graph(body_nodes, "body", list(body.input), list(body.output))
    nodes = [helper.make_node("Loop", ["trip", "", "x"], ["y"], body=body)]
    x = rnd(3, c, 5, 5)
    m = model(nodes, [vi("x", ["N", c, 5, 5])], [vi("y", ["N", c, 5, 5])], inits=store, opset=13)
    y = x.astype(np.float64)
    for _ in range(3):
        y = relu(np_bn(np_conv(y, w, b, pads=(1, 1, 1, 1)), *bn))
    return m, {"x": x}, [y]


CASES["loop_body_outer_weights"] = lambda: _loop_model(False)
CASES["loop_body_unsorted"] = lambda: _loop_model(True)


@case
def bn_scale_is_input():
    """BatchNormalization whose scale is a graph input and a per-channel Mul
    whose multiplier is a graph input: neither may be folded into weights."""
    w = rnd(6, 3, 3, 3)
    bn = bn_params(6)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "scale", "bb", "mm", "vv"], ["n"]),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["c2"]),
             helper.make_node("Mul", ["c2", "k"], ["y"])]
    w2 = rnd(6, 6, 1, 1)
    x, s, k = rnd(2, 3, 6, 6), rnd(6, lo=0.5, hi=2), rnd(6, 1, 1)
    m = model(nodes, [vi("x", [2, 3, 6, 6]), vi("scale", [6]), vi("k", [6, 1, 1])],
              [vi("y", [2, 6, 6, 6])],
              inits=[init("w", w), init("bb", bn[1]), init("mm", bn[2]), init("vv", bn[3]),
                     init("w2", w2)], opset=13)
    r = relu(np_bn(np_conv(x, w, pads=(1, 1, 1, 1)), s, *bn[1:]))
    return m, {"x": x, "scale": s, "k": k}, [np_conv(r, w2) * k]


@case
def residual_operand_is_output():
    """Residual Add whose other operand is also a graph output and is read
    twice more (a second Conv, a Relu); the Add's output feeds a Relu."""
    c = 4
    w1, w2, w3 = rnd(c, c, 3, 3, lo=-.4, hi=.4), rnd(c, c, 1, 1), rnd(c, c, 1, 1)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "w2"], ["b"]),
             helper.make_node("Add", ["b", "a"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"]),
             helper.make_node("Conv", ["a", "w3"], ["d"]),
             helper.make_node("Relu", ["a"], ["ra"]),
             helper.make_node("Add", ["d", "ra"], ["z"])]
    x = rnd(2, c, 5, 5)
    m = model(nodes, [vi("x", ["N", c, 5, 5])],
              [vi("y", ["N", c, 5, 5]), vi("a", ["N", c, 5, 5]), vi("z", ["N", c, 5, 5])],
              inits=[init("w1", w1), init("w2", w2), init("w3", w3)], opset=13)
    a = np_conv(x, w1, pads=(1, 1, 1, 1))
    return m, {"x": x}, [relu(np_conv(a, w2) + a), a, np_conv(a, w3) + relu(a)]


@case
def residual_add_is_output_inplace():
    """Conv output that is a graph output and is then activated (an in-place
    epilogue must not clobber it); a residual Add whose sum is a graph output
    and read again by a Relu; a residual Add whose other operand is a graph
    input (the input must stay intact for the caller)."""
    c = 3
    w1, w2 = rnd(c, c, 3, 3), rnd(c, c, 3, 3)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["rs"]),
             helper.make_node("Add", ["x", "rs"], ["t"])]
    x = rnd(3, c, 4, 4)
    m = model(nodes, [vi("x", [3, c, 4, 4])],
              [vi("c1", [3, c, 4, 4]), vi("s", [3, c, 4, 4]), vi("t", [3, c, 4, 4]),
               vi("x", [3, c, 4, 4])],
              inits=[init("w1", w1), init("w2", w2)], opset=13)
    c1 = np_conv(x, w1, pads=(1, 1, 1, 1))
    s = np_conv(relu(c1), w2, pads=(1, 1, 1, 1)) + x
    return m, {"x": x}, [c1, s, x + relu(s), x]


@case
def clip_bound_variants():
    """Clip after Conv with min only, max only (empty-string optional
    input), bounds as runtime graph inputs, and min > 0."""
    c = 4
    w = rnd(c, 2, 3, 3)
    nodes = [const("lo", np.array(-0.25, np.float32)), const("hi", np.array(0.5, np.float32)),
             const("lo2", np.array(0.1, np.float32)),
             helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["c", "lo"], ["y_min"]),
             helper.make_node("Conv", ["x", "w"], ["c_b"], pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["c_b", "", "hi"], ["y_max"]),
             helper.make_node("Conv", ["x", "w"], ["c_c"], pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["c_c", "rlo", "rhi"], ["y_rt"]),
             helper.make_node("Conv", ["x", "w"], ["c_d"], pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["c_d", "lo2", "hi"], ["y_pos"]),
             helper.make_node("Conv", ["x", "w"], ["c_e"], pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["c_e"], ["y_none"])]
    x = rnd(2, 2, 5, 5) * 2
    m = model(nodes, [vi("x", ["N", 2, 5, 5]), vi("rlo", []), vi("rhi", [])],
              [vi(n, ["N", c, 5, 5]) for n in ("y_min", "y_max", "y_rt", "y_pos", "y_none")],
              inits=[init("w", w)], opset=13)
    cv = np_conv(x, w, pads=(1, 1, 1, 1))
    rlo, rhi = np.array(-0.3, np.float32), np.array(0.2, np.float32)
    return m, {"x": x, "rlo": rlo, "rhi": rhi}, [
        np.maximum(cv, -0.25), np.minimum(cv, 0.5), np.clip(cv, -0.3, 0.2),
        np.clip(cv, 0.1, 0.5), cv]


@case
def concat_input_is_output():
    """Channel Concat of two Conv outputs, one of which is also a graph
    output and read by another node; batch 3."""
    w1, w2, w3 = rnd(3, 2, 3, 3), rnd(5, 2, 1, 1), rnd(4, 8, 1, 1)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["ar"]),
             helper.make_node("Conv", ["x", "w2"], ["b"]),
             helper.make_node("Relu", ["b"], ["br"]),
             helper.make_node("Concat", ["ar", "br"], ["cat"], axis=1),
             helper.make_node("Conv", ["cat", "w3"], ["y"]),
             helper.make_node("Sigmoid", ["ar"], ["as"])]
    x = rnd(3, 2, 6, 6)
    m = model(nodes, [vi("x", [3, 2, 6, 6])],
              [vi("y", [3, 4, 6, 6]), vi("ar", [3, 3, 6, 6]), vi("as", [3, 3, 6, 6])],
              inits=[init("w1", w1), init("w2", w2), init("w3", w3)], opset=13)
    ar = relu(np_conv(x, w1, pads=(1, 1, 1, 1)))
    br = relu(np_conv(x, w2))
    cat = np.concatenate([ar, br], 1)
    return m, {"x": x}, [np_conv(cat, w3), ar, 1 / (1 + np.exp(-ar))]


@case
def conv_mul_add_last_axis():
    """Conv followed by Mul/Add constants: one per channel ([C,1,1]), one of
    shape [W] with W == C (broadcasts over width, NOT per channel), one full
    [1,C,H,W] (not per channel either), then Relu; batch 2."""
    c = 4
    w = rnd(c, 3, 3, 3)
    pc, lastax, full = rnd(c, 1, 1), rnd(c), rnd(1, c, 4, 4)
    nodes = [helper.make_node("Conv", ["x", "w"], ["cv"], pads=[1, 1, 1, 1]),
             helper.make_node("Mul", ["cv", "pc"], ["m1"]),
             helper.make_node("Add", ["m1", "la"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["y1"]),
             helper.make_node("Conv", ["x", "w"], ["cv2"], pads=[1, 1, 1, 1]),
             helper.make_node("Mul", ["cv2", "la"], ["m2"]),
             helper.make_node("Add", ["m2", "full"], ["y2"])]
    x = rnd(2, 3, 4, 4)
    m = model(nodes, [vi("x", [2, 3, 4, 4])], [vi("y1", [2, c, 4, 4]), vi("y2", [2, c, 4, 4])],
              inits=[init("w", w), init("pc", pc), init("la", lastax), init("full", full)],
              opset=13)
    cv = np_conv(x, w, pads=(1, 1, 1, 1))
    return m, {"x": x}, [relu(cv * pc + lastax), cv * lastax + full]


@case
def depthwise_relu6_b3():
    """MobileNet block from TF2ONNX/Keras: explicit asymmetric pads on a
    stride-2 depthwise Conv, BN, Clip(0,6) as Constant bounds, pointwise
    Conv, BN, residual-free; batch 3, NCHW with odd spatial size."""
    c = 6
    wd, wp = rnd(c, 1, 3, 3), rnd(8, c, 1, 1)
    bn1, bn2 = bn_params(c), bn_params(8)
    nodes = [const("zero", np.array(0, np.float32)), const("six", np.array(6, np.float32)),
             helper.make_node("Conv", ["x", "wd"], ["d"], group=c, strides=[2, 2],
                              pads=[0, 0, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("BatchNormalization", ["d", "s1", "o1", "m1", "v1"], ["dn"],
                              epsilon=1e-3),
             helper.make_node("Clip", ["dn", "zero", "six"], ["dr"]),
             helper.make_node("Conv", ["dr", "wp"], ["p"]),
             helper.make_node("BatchNormalization", ["p", "s2", "o2", "m2", "v2"], ["y"],
                              epsilon=1e-3)]
    inits = [init("wd", wd), init("wp", wp)] + [init(k, v) for k, v in zip(
        ("s1", "o1", "m1", "v1"), bn1)] + [init(k, v) for k, v in zip(("s2", "o2", "m2", "v2"), bn2)]
    x = rnd(3, c, 8, 8) * 4
    m = model(nodes, [vi("x", ["unk__0", c, 8, 8])], [vi("y", ["unk__0", 8, 4, 4])],
              inits=inits, opset=13, producer="tf2onnx")
    d = np.clip(np_bn(np_conv(x, wd, pads=(0, 0, 1, 1), strides=(2, 2), group=c), *bn1,
                      eps=1e-3), 0, 6)
    return m, {"x": x}, [np_bn(np_conv(d, wp), *bn2, eps=1e-3)]


@case
def gelu_paddle_tf():
    """GELU as Paddle2ONNX writes it (Div by sqrt2, Erf, Add 1, Mul x, Mul
    0.5 last) and the TF2ONNX tanh form with Pow(x, 3); the Erf form's inner
    value is also a graph output."""
    nodes = [
        const("sq2", np.array(1.4142135381698608, np.float32)),
        const("one", np.array(1.0, np.float32)), const("half", np.array(0.5, np.float32)),
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Div", ["h", "sq2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["h", "e1"], ["he"]),
        helper.make_node("Mul", ["he", "half"], ["g1"]),
        # tanh form: 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3)))
        const("three", np.array(3.0, np.float32)), const("c0", np.array(0.044715, np.float32)),
        const("c1", np.array(math.sqrt(2 / math.pi), np.float32)),
        helper.make_node("Pow", ["h", "three"], ["p3"]),
        helper.make_node("Mul", ["c0", "p3"], ["cp"]),
        helper.make_node("Add", ["h", "cp"], ["in"]),
        helper.make_node("Mul", ["in", "c1"], ["sc"]),
        helper.make_node("Tanh", ["sc"], ["t"]),
        helper.make_node("Add", ["one", "t"], ["t1"]),
        helper.make_node("Mul", ["half", "h"], ["hh"]),
        helper.make_node("Mul", ["hh", "t1"], ["g2"]),
    ]
    w = rnd(8, 16)
    x = rnd(2, 3, 8) * 2
    m = model(nodes, [vi("x", ["batch", "seq", 8])],
              [vi("g1", ["batch", "seq", 16]), vi("g2", ["batch", "seq", 16]),
               vi("e1", ["batch", "seq", 16])], inits=[init("w", w)], opset=13,
              producer="PaddlePaddle")
    h = x.astype(np.float64) @ w
    g2 = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))
    return m, {"x": x}, [np_gelu(h), g2, 1 + np_erf(h / math.sqrt(2))]


def layernorm_nodes(x, out, axes_input, pfx=""):
    eps = np.array(1e-5, np.float32)
    nodes = [const(pfx + "eps", eps), const(pfx + "two", np.array(2.0, np.float32))]
    if axes_input:
        nodes.append(const(pfx + "axes", np.array([-1], np.int64)))
        rm = lambda i, o: helper.make_node("ReduceMean", [i, pfx + "axes"], [o])  # noqa: E731
    else:
        rm = lambda i, o: helper.make_node("ReduceMean", [i], [o], axes=[-1])  # noqa: E731
    nodes += [rm(x, pfx + "mu"),
              helper.make_node("Sub", [x, pfx + "mu"], [pfx + "xc"]),
              helper.make_node("Pow", [pfx + "xc", pfx + "two"], [pfx + "sq"]),
              rm(pfx + "sq", pfx + "var"),
              helper.make_node("Add", [pfx + "var", pfx + "eps"], [pfx + "ve"]),
              helper.make_node("Sqrt", [pfx + "ve"], [pfx + "sd"]),
              helper.make_node("Div", [pfx + "xc", pfx + "sd"], [pfx + "nrm"]),
              helper.make_node("Mul", [pfx + "nrm", pfx + "gamma"], [pfx + "sc"]),
              helper.make_node("Add", [pfx + "sc", pfx + "beta"], [out])]
    return nodes


@case
def layernorm_opset13_attr():
    """LayerNorm decomposed (Pow 2, ReduceMean axes attribute, epsilon as a
    Constant node), symbolic batch and sequence, batch 3."""
    g, b = rnd(16), rnd(16)
    nodes = layernorm_nodes("x", "y", False)
    x = rnd(3, 5, 16) * 3
    m = model(nodes, [vi("x", ["batch", "seq", 16])], [vi("y", ["batch", "seq", 16])],
              inits=[init("gamma", g), init("beta", b)], opset=13)
    return m, {"x": x}, [np_ln(x.astype(np.float64), g, b, 1e-5)]


@case
def layernorm_opset18_axes_input():
    """The same at opset 18 (ReduceMean axes as an input), followed by a
    residual Add whose other operand is the LayerNorm's own input."""
    g, b = rnd(16), rnd(16)
    nodes = layernorm_nodes("x", "ln", True)
    nodes.append(helper.make_node("Add", ["x", "ln"], ["y"]))
    x = rnd(2, 4, 16)
    m = model(nodes, [vi("x", ["s0", "s1", 16])], [vi("y", ["s0", "s1", 16])],
              inits=[init("gamma", g), init("beta", b)], opset=18, producer="pytorch")
    return m, {"x": x}, [x + np_ln(x.astype(np.float64), g, b, 1e-5)]


@case
def attention_tf_style():
    """Self-attention as TF2ONNX/Paddle write it: MatMul+Add Q/K/V, Reshape
    with 0 and -1 ([0,0,H,-1]), Transpose, MatMul, Div by sqrt(d) from a
    Constant, additive mask input, Softmax, MatMul, Transpose, Reshape
    [0,0,-1]; symbolic batch and sequence, batch 2."""
    e, h = 16, 2
    d = e // h
    wq, wk, wv = rnd(e, e), rnd(e, e), rnd(e, e)
    bq, bk, bv = rnd(e), rnd(e), rnd(e)
    nodes = [const("sh4", np.array([0, 0, h, -1], np.int64)),
             const("sh3", np.array([0, 0, -1], np.int64)),
             const("scale", np.array(math.sqrt(d), np.float32))]
    for nm in ("q", "k", "v"):
        nodes += [helper.make_node("MatMul", ["x", "w" + nm], [nm + "m"]),
                  helper.make_node("Add", [nm + "m", "b" + nm], [nm + "a"]),
                  helper.make_node("Reshape", [nm + "a", "sh4"], [nm + "r"]),
                  helper.make_node("Transpose", [nm + "r"], [nm + "t"],
                                   perm=[0, 2, 3, 1] if nm == "k" else [0, 2, 1, 3])]
    nodes += [helper.make_node("MatMul", ["qt", "kt"], ["qk"]),
              helper.make_node("Div", ["qk", "scale"], ["qks"]),
              helper.make_node("Add", ["qks", "mask"], ["qkm"]),
              helper.make_node("Softmax", ["qkm"], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "vt"], ["ctx"]),
              helper.make_node("Transpose", ["ctx"], ["ct"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ct", "sh3"], ["y"])]
    bsz, s = 2, 5
    x = rnd(bsz, s, e)
    mask = np.zeros((bsz, 1, 1, s), np.float32)
    mask[1, 0, 0, 3:] = -10000.0
    m = model(nodes, [vi("x", ["batch", "seq", e]), vi("mask", ["batch", 1, 1, "seq"])],
              [vi("y", ["batch", "seq", e])],
              inits=[init("wq", wq), init("wk", wk), init("wv", wv), init("bq", bq),
                     init("bk", bk), init("bv", bv)], opset=13, producer="tf2onnx")
    xd = x.astype(np.float64)
    q = (xd @ wq + bq).reshape(bsz, s, h, d).transpose(0, 2, 1, 3)
    k = (xd @ wk + bk).reshape(bsz, s, h, d).transpose(0, 2, 3, 1)
    v = (xd @ wv + bv).reshape(bsz, s, h, d).transpose(0, 2, 1, 3)
    p = np_softmax(q @ k / math.sqrt(d) + mask)
    return m, {"x": x, "mask": mask}, [(p @ v).transpose(0, 2, 1, 3).reshape(bsz, s, e)]


@case
def matmul_shapes_b3():
    """MatMul with a symbolic batch at batch 3: [B,S,K]x[K,N], a GEMV row
    [B,1,K]x[K,N], [K]x[K,N] (1-D left), [B,S,K]x[K] (1-D right), and a
    batched [B,H,S,D]x[B,H,D,S]; then Gemm with transB and a 1-D C."""
    k, n = 12, 7
    w, wv = rnd(k, n), rnd(k)
    g_w, g_c = rnd(5, n), rnd(5)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y1"]),
             helper.make_node("MatMul", ["r", "w"], ["y2"]),
             helper.make_node("MatMul", ["v", "w"], ["y3"]),
             helper.make_node("MatMul", ["x", "wv"], ["y4"]),
             helper.make_node("MatMul", ["a", "b"], ["y5"]),
             helper.make_node("Gemm", ["g", "gw", "gc"], ["y6"], transB=1, alpha=0.5, beta=2.0)]
    bsz = 3
    x, r, v = rnd(bsz, 4, k), rnd(bsz, 1, k), rnd(k)
    a, b = rnd(bsz, 2, 4, 8), rnd(bsz, 2, 8, 4)
    g = rnd(bsz, n)
    m = model(nodes, [vi("x", ["B", 4, k]), vi("r", ["B", 1, k]), vi("v", [k]),
                      vi("a", ["B", 2, 4, 8]), vi("b", ["B", 2, 8, 4]), vi("g", ["B", n])],
              [vi("y1", ["B", 4, n]), vi("y2", ["B", 1, n]), vi("y3", [n]), vi("y4", ["B", 4]),
               vi("y5", ["B", 2, 4, 4]), vi("y6", ["B", 5])],
              inits=[init("w", w), init("wv", wv), init("gw", g_w), init("gc", g_c)], opset=13)
    f = lambda t: t.astype(np.float64)  # noqa: E731
    return m, {"x": x, "r": r, "v": v, "a": a, "b": b, "g": g}, [
        f(x) @ w, f(r) @ w, f(v) @ w, f(x) @ wv, f(a) @ b, 0.5 * f(g) @ g_w.T + 2.0 * g_c]


@case
def reshape_zero_minus1():
    """Reshape with 0 (copy the input's dim) and -1, Flatten, Gemm on the
    result (torchvision classifier head), then Reshape [0,-1,2]; batch 2."""
    w, c = rnd(10, 24), rnd(10)
    nodes = [const("s1", np.array([0, -1], np.int64)),
             const("s2", np.array([0, -1, 2], np.int64)),
             helper.make_node("Reshape", ["x", "s1"], ["f"]),
             helper.make_node("Gemm", ["f", "w", "c"], ["g"], transB=1),
             helper.make_node("Reshape", ["g", "s2"], ["y"]),
             helper.make_node("Flatten", ["x"], ["fl"], axis=2)]
    x = rnd(2, 6, 2, 2)
    m = model(nodes, [vi("x", ["n", 6, 2, 2])], [vi("y", ["n", 5, 2]), vi("fl", [None, 4])],
              inits=[init("w", w), init("c", c)], opset=13)
    g = x.reshape(2, -1).astype(np.float64) @ w.T + c
    return m, {"x": x}, [g.reshape(2, 5, 2), x.reshape(12, 4)]


@case
def opset7_ir3_style():
    """IR 3 / opset 7: every initializer also listed as a graph input, an
    unused initializer, one weight shared by two Convs, value names with odd
    characters, BatchNormalization-7 with `spatial`, Clip-6 attributes,
    Reshape with a shape initializer, and a graph output that is an
    intermediate value read again."""
    c = 4
    w, wb = rnd(c, c, 3, 3, lo=-.4, hi=.4), rnd(c)
    bn = bn_params(c)
    names = {"w": "conv/weight:0", "wb": "conv.bias", "s": "bn scale", "o": "bn/offset",
             "m": "bn:mean", "v": "bn-var", "sh": "shape#1", "u": "unused"}
    inits = [init(names["w"], w), init(names["wb"], wb), init(names["s"], bn[0]),
             init(names["o"], bn[1]), init(names["m"], bn[2]), init(names["v"], bn[3]),
             init(names["sh"], np.array([2, -1], np.int64)), init(names["u"], rnd(3))]
    nodes = [
        helper.make_node("Conv", ["in:0", names["w"], names["wb"]], ["conv1/out:0"],
                         pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv1/out:0", names["s"], names["o"], names["m"],
                                                names["v"]], ["bn 1"], spatial=1),
        helper.make_node("Relu", ["bn 1"], ["relu.1"]),
        helper.make_node("Conv", ["relu.1", names["w"], names["wb"]], ["conv2/out:0"],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["conv2/out:0"], ["clip:0"], min=-1.0, max=1.0),
        helper.make_node("Add", ["clip:0", "relu.1"], ["sum"]),
        helper.make_node("Reshape", ["sum", names["sh"]], ["flat"])]
    x = rnd(2, c, 4, 4) * 2
    ins = [vi("in:0", [2, c, 4, 4])] + [vi(t.name, list(t.dims), t.data_type) for t in inits]
    m = model(nodes, ins, [vi("flat", [2, c * 16]), vi("relu.1", [2, c, 4, 4])], inits=inits,
              opset=7, ir=3, producer="keras2onnx")
    r1 = relu(np_bn(np_conv(x, w, wb, pads=(1, 1, 1, 1)), *bn))
    s = np.clip(np_conv(r1, w, wb, pads=(1, 1, 1, 1)), -1, 1) + r1
    return m, {"in:0": x}, [s.reshape(2, -1), r1]


@case
def dynamo_opset18():
    """PyTorch 2 dynamo style: opset 18, a local function (Conv+Relu as
    `pkg.torch` function) called twice, ReduceMean with axes input for a
    global pool, Gemm head, p_-prefixed initializer names; batch 2."""
    fn = helper.make_function(
        "pkg.torch", "ConvRelu", ["inp", "weight"], ["out"],
        [helper.make_node("Conv", ["inp", "weight"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["out"])],
        [helper.make_opsetid("", 18)])
    w1, w2, fw, fb = rnd(4, 3, 3, 3), rnd(4, 4, 3, 3, lo=-.4, hi=.4), rnd(5, 4), rnd(5)
    nodes = [helper.make_node("ConvRelu", ["x", "p_conv1_weight"], ["r1"], domain="pkg.torch"),
             helper.make_node("ConvRelu", ["r1", "p_conv2_weight"], ["r2"], domain="pkg.torch"),
             helper.make_node("ReduceMean", ["r2", "ax"], ["gp"], keepdims=0),
             helper.make_node("Gemm", ["gp", "p_fc_weight", "p_fc_bias"], ["y"], transB=1)]
    x = rnd(2, 3, 5, 5)
    g = helper.make_graph(nodes, "main_graph", [vi("x", ["s0", 3, 5, 5])], [vi("y", ["s0", 5])],
                          initializer=[init("p_conv1_weight", w1), init("p_conv2_weight", w2),
                                       init("p_fc_weight", fw), init("p_fc_bias", fb),
                                       init("ax", np.array([2, 3], np.int64))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18),
                                            helper.make_opsetid("pkg.torch", 1)],
                          functions=[fn], producer_name="pytorch")
    m.ir_version = 8
    r2 = relu(np_conv(relu(np_conv(x, w1, pads=(1, 1, 1, 1))), w2, pads=(1, 1, 1, 1)))
    return m, {"x": x}, [r2.mean((2, 3)) @ fw.T + fb]


@case
def half_int8_tensors():
    """float16 input Cast to float, an int8 Constant weight dequantized
    (DequantizeLinear, per-tensor), a bfloat16 round trip, Conv, Cast back
    to float16 (mixed-precision exports)."""
    wq = RNG.integers(-100, 100, size=(4, 2, 3, 3)).astype(np.int8)
    scale = np.array(0.01, np.float32)
    nodes = [const("wq", wq), const("ws", scale), const("wz", np.array(0, np.int8)),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"]),
             helper.make_node("Cast", ["x16"], ["x"], to=F),
             helper.make_node("Cast", ["x"], ["xb"], to=TensorProto.BFLOAT16),
             helper.make_node("Cast", ["xb"], ["x2"], to=F),
             helper.make_node("Conv", ["x2", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT16)]
    # values exactly representable in bfloat16 (8 bits of mantissa)
    x = (RNG.integers(-64, 64, size=(2, 2, 4, 4)) / 32.0).astype(np.float16)
    m = model(nodes, [vi("x16", ["N", 2, 4, 4], TensorProto.FLOAT16)],
              [vi("y", ["N", 4, 4, 4], TensorProto.FLOAT16)], opset=13)
    w = wq.astype(np.float64) * 0.01
    return m, {"x16": x}, [relu(np_conv(x.astype(np.float64), w, pads=(1, 1, 1, 1)))]


@case
def sequence_split_concat():
    """Sequence types (Paddle2ONNX/TF2ONNX while-loop lowering): a Conv
    output split to a sequence along channels, one item taken, the rest
    concatenated back; batch 2."""
    w = rnd(6, 3, 1, 1)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("SplitToSequence", ["c", "sp"], ["seq"], axis=1),
             helper.make_node("SequenceAt", ["seq", "i1"], ["y1"]),
             helper.make_node("ConcatFromSequence", ["seq"], ["y2"], axis=0, new_axis=0),
             helper.make_node("SequenceLength", ["seq"], ["n"])]
    x = rnd(2, 3, 3, 3)
    m = model(nodes, [vi("x", [2, 3, 3, 3])],
              [vi("y1", [2, 2, 3, 3]), vi("y2", [6, 2, 3, 3]), vi("n", [], TensorProto.INT64)],
              inits=[init("w", w), init("sp", np.array([2, 2, 2], np.int64)),
                     init("i1", np.array(1, np.int64))], opset=13)
    c = np_conv(x, w)
    return m, {"x": x}, [c[:, 2:4], np.concatenate([c[:, 0:2], c[:, 2:4], c[:, 4:6]], 0),
                         np.array(3, np.int64)]


@case
def external_data_weights():
    """Weights in an external data file next to the model (large exports)."""
    w, w2 = rnd(16, 8, 3, 3), rnd(16, 16, 1, 1)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["y"])]
    x = rnd(2, 8, 4, 4)
    m = model(nodes, [vi("x", [2, 8, 4, 4])], [vi("y", [2, 16, 4, 4])],
              inits=[init("w", w), init("w2", w2)], opset=13)
    return m, {"x": x}, [np_conv(relu(np_conv(x, w, pads=(1, 1, 1, 1))), w2)]


@case
def residual_broadcast_not_sum():
    """Conv + Add where the other operand broadcasts ([1,C,1,1] from a
    Conv-free path, and [N,C,1,1] from a GlobalAveragePool): not a
    same-shape residual, so no sum post-op; squeeze-excite style Mul too."""
    c = 4
    w, w2 = rnd(c, c, 3, 3, lo=-.4, hi=.4), rnd(c, c, 1, 1)
    nodes = [helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["a"], ["gp"]),
             helper.make_node("Conv", ["gp", "w2"], ["se"]),
             helper.make_node("Sigmoid", ["se"], ["sg"]),
             helper.make_node("Mul", ["a", "sg"], ["am"]),
             helper.make_node("Conv", ["am", "w"], ["b"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["b", "gp"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    x = rnd(3, c, 5, 5)
    m = model(nodes, [vi("x", ["N", c, 5, 5])], [vi("y", ["N", c, 5, 5])],
              inits=[init("w", w), init("w2", w2)], opset=13)
    a = np_conv(x, w, pads=(1, 1, 1, 1))
    gp = a.mean((2, 3), keepdims=True)
    sg = 1 / (1 + np.exp(-np_conv(gp, w2)))
    b = np_conv(a * sg, w, pads=(1, 1, 1, 1))
    return m, {"x": x}, [relu(b + gp)]


@case
def conv_chain_nhwc_transpose():
    """Conv chain ending in a Transpose to NHWC and a Flatten (TF2ONNX
    keeps Keras' layout at the graph boundary), with auto_pad SAME_UPPER
    and a stride-2 Conv with an even input; batch 2."""
    w1, w2 = rnd(4, 3, 3, 3), rnd(6, 4, 3, 3, lo=-.4, hi=.4)
    nodes = [helper.make_node("Transpose", ["x"], ["xc"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["xc", "w1"], ["a"], auto_pad="SAME_UPPER"),
             helper.make_node("Relu", ["a"], ["ar"]),
             helper.make_node("Conv", ["ar", "w2"], ["b"], auto_pad="SAME_UPPER",
                              strides=[2, 2]),
             helper.make_node("Relu", ["b"], ["br"]),
             helper.make_node("Transpose", ["br"], ["y"], perm=[0, 2, 3, 1]),
             helper.make_node("Flatten", ["y"], ["f"])]
    x = rnd(2, 6, 6, 3)
    m = model(nodes, [vi("x", ["N", 6, 6, 3])], [vi("y", ["N", 3, 3, 6]), vi("f", ["N", 54])],
              inits=[init("w1", w1), init("w2", w2)], opset=13, producer="tf2onnx")
    xc = x.transpose(0, 3, 1, 2)
    ar = relu(np_conv(xc, w1, pads=(1, 1, 1, 1)))
    # SAME_UPPER, stride 2, 6 -> 3: total pad 1, the extra at the end
    br = relu(np_conv(ar, w2, pads=(0, 0, 1, 1), strides=(2, 2)))
    y = br.transpose(0, 2, 3, 1)
    return m, {"x": x}, [y, y.reshape(2, -1)]


@case
def gelu_chain_mid_output():
    """MatMul + bias + GELU (Erf form, PyTorch's order: Mul(x, 0.5) first)
    whose MatMul output is also a graph output, at batch 3 with a symbolic
    sequence."""
    w, b = rnd(8, 8), rnd(8)
    nodes = [const("sq2", np.array(1.4142135381698608, np.float32)),
             const("one", np.array(1.0, np.float32)), const("half", np.array(0.5, np.float32)),
             helper.make_node("MatMul", ["x", "w"], ["mm"]),
             helper.make_node("Add", ["b", "mm"], ["h"]),
             helper.make_node("Div", ["h", "sq2"], ["d"]),
             helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]),
             helper.make_node("Mul", ["h", "half"], ["hh"]),
             helper.make_node("Mul", ["hh", "e1"], ["y"])]
    x = rnd(3, 2, 8) * 2
    m = model(nodes, [vi("x", ["batch", "seq", 8])],
              [vi("y", ["batch", "seq", 8]), vi("h", ["batch", "seq", 8])],
              inits=[init("w", w), init("b", b)], opset=13, producer="pytorch")
    h = x.astype(np.float64) @ w + b
    return m, {"x": x}, [np_gelu(h), h]


@case
def shared_weight_bn_diverge():
    """One weight initializer shared by two Convs, each followed by its own
    BatchNormalization (folding into one must not change the other), and a
    Conv whose bias initializer is also a graph output's source via
    Identity."""
    c = 4
    w, b = rnd(c, c, 3, 3, lo=-.4, hi=.4), rnd(c)
    bn1, bn2 = bn_params(c), bn_params(c)
    inits = [init("w", w), init("b", b)] + [init(k, v) for k, v in zip(
        ("s1", "o1", "m1", "v1"), bn1)] + [init(k, v) for k, v in zip(("s2", "o2", "m2", "v2"), bn2)]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "s1", "o1", "m1", "v1"], ["y1"]),
             helper.make_node("Conv", ["x", "w", "b"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("BatchNormalization", ["c2", "s2", "o2", "m2", "v2"], ["n2"]),
             helper.make_node("Relu", ["n2"], ["y2"]),
             helper.make_node("Identity", ["b"], ["bias_out"])]
    x = rnd(2, c, 6, 6)
    m = model(nodes, [vi("x", [2, c, 6, 6])],
              [vi("y1", [2, c, 6, 6]), vi("y2", [2, c, 3, 3]), vi("bias_out", [c])],
              inits=inits, opset=13)
    y1 = np_bn(np_conv(x, w, b, pads=(1, 1, 1, 1)), *bn1)
    y2 = relu(np_bn(np_conv(x, w, b, pads=(1, 1, 1, 1), strides=(2, 2)), *bn2))
    return m, {"x": x}, [y1, y2, b]


@case
def scan_outer_weights():
    """Scan (opset 11+) over the sequence axis whose body reads an outer
    MatMul weight, with a running state; TF2ONNX RNN lowering."""
    e = 6
    w = rnd(e, e, lo=-.5, hi=.5)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["xt", "W"], ["xw"]),
         helper.make_node("Add", ["st", "xw"], ["s2"]),
         helper.make_node("Tanh", ["s2"], ["st_out"]),
         helper.make_node("Identity", ["st_out"], ["yt"])],
        "body", [vi("st", [2, e]), vi("xt", [2, e])], [vi("st_out", [2, e]), vi("yt", [2, e])])
    nodes = [helper.make_node("Scan", ["s0", "x"], ["sN", "ys"], body=body, num_scan_inputs=1,
                              scan_input_axes=[1], scan_output_axes=[1])]
    x, s0 = rnd(2, 4, e), rnd(2, e)
    m = model(nodes, [vi("s0", [2, e]), vi("x", [2, 4, e])],
              [vi("sN", [2, e]), vi("ys", [2, 4, e])], inits=[init("W", w)], opset=11)
    st = s0.astype(np.float64)
    ys = []
    for t in range(4):
        st = np.tanh(st + x[:, t] @ w)
        ys.append(st)
    return m, {"s0": s0, "x": x}, [st, np.stack(ys, 1)]


def _outer_read_model(cond):
    """Values in the middle of fusable chains read only from inside an If
    branch (outer-scope reads, no direct use in the main graph): the Conv
    output before its BN, the BN output before its Relu, the MatMul+bias
    before a GELU, a Conv output feeding the next Conv (channels-last
    edge) and a channel Concat input."""
    c = 4
    w1, w2, w3 = rnd(c, c, 3, 3, lo=-.4, hi=.4), rnd(c, c, 1, 1), rnd(c, 2 * c, 1, 1)
    bn = bn_params(c)
    mw, mb = rnd(5, 5), rnd(5)
    nodes = [const("sq2", np.array(1.4142135381698608, np.float32)),
             const("one", np.array(1.0, np.float32)), const("half", np.array(0.5, np.float32)),
             helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["a", "s", "o", "m", "v"], ["b"]),
             helper.make_node("Relu", ["b"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["c2"]),
             helper.make_node("Relu", ["c2"], ["c2r"]),
             helper.make_node("Concat", ["r", "c2r"], ["cat"], axis=1),
             helper.make_node("Conv", ["cat", "w3"], ["y"]),
             helper.make_node("MatMul", ["t", "mw"], ["mm"]),
             helper.make_node("Add", ["mm", "mb"], ["h"]),
             helper.make_node("Div", ["h", "sq2"], ["d"]),
             helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]),
             helper.make_node("Mul", ["h", "half"], ["hh"]),
             helper.make_node("Mul", ["hh", "e1"], ["g"])]
    then_g = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["ab"]),
         helper.make_node("ReduceSum", ["ab"], ["t1"], keepdims=0),
         helper.make_node("ReduceSum", ["c2"], ["t2"], keepdims=0),
         helper.make_node("ReduceSum", ["h"], ["t3"], keepdims=0),
         helper.make_node("Sum", ["t1", "t2", "t3"], ["out"])],
        "then", [], [vi("out", [])])
    else_g = helper.make_graph(
        [helper.make_node("ReduceSum", ["c2r"], ["u1"], keepdims=0),
         helper.make_node("ReduceSum", ["r"], ["u2"], keepdims=0),
         helper.make_node("Sub", ["u1", "u2"], ["out2"])],
        "else", [], [vi("out2", [])])
    nodes.append(helper.make_node("If", ["cond"], ["z"], then_branch=then_g, else_branch=else_g))
    x, t = rnd(2, c, 5, 5), rnd(3, 5)
    inits = [init("w1", w1), init("w2", w2), init("w3", w3), init("mw", mw), init("mb", mb)] + [
        init(k, val) for k, val in zip(("s", "o", "m", "v"), bn)]
    m = model(nodes, [vi("x", ["N", c, 5, 5]), vi("t", [3, 5]), vi("cond", [], TensorProto.BOOL)],
              [vi("y", ["N", c, 5, 5]), vi("g", [3, 5]), vi("z", [])], inits=inits, opset=13)
    a = np_conv(x, w1, pads=(1, 1, 1, 1))
    b = np_bn(a, *bn)
    r = relu(b)
    c2 = np_conv(r, w2)
    y = np_conv(np.concatenate([r, relu(c2)], 1), w3)
    h = t.astype(np.float64) @ mw + mb
    z = (a + b).sum() + c2.sum() + h.sum() if cond else relu(c2).sum() - r.sum()
    return m, {"x": x, "t": t, "cond": np.array(cond)}, [y, np_gelu(h),
                                                         np.array(z, np.float32)]


CASES["outer_read_then"] = lambda: _outer_read_model(True)
CASES["outer_read_else"] = lambda: _outer_read_model(False)


@case
def loop_reads_fused_values():
    """A Loop body reading, as outer-scope values, a Conv output whose only
    main-graph reader is a Clip (bounds from Constant nodes) and the
    residual Add's operand; the body accumulates their sums."""
    c = 4
    w1, w2 = rnd(c, c, 3, 3, lo=-.4, hi=.4), rnd(c, c, 3, 3, lo=-.4, hi=.4)
    body = helper.make_graph(
        [helper.make_node("ReduceSum", ["cv"], ["s1"], keepdims=0),
         helper.make_node("ReduceSum", ["c2"], ["s2"], keepdims=0),
         helper.make_node("Add", ["acc_in", "s1"], ["a1"]),
         helper.make_node("Add", ["a1", "s2"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL),
                 vi("acc_in", [])], [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [])])
    nodes = [const("lo", np.array(-0.5, np.float32)), const("hi", np.array(0.5, np.float32)),
             helper.make_node("Conv", ["x", "w1"], ["cv"], pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["cv", "lo", "hi"], ["cl"]),
             helper.make_node("Conv", ["cl", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "cl"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"]),
             helper.make_node("Loop", ["trip", "", "acc0"], ["acc"], body=body)]
    x = rnd(2, c, 4, 4) * 2
    m = model(nodes, [vi("x", [2, c, 4, 4])], [vi("y", [2, c, 4, 4]), vi("acc", [])],
              inits=[init("w1", w1), init("w2", w2), init("trip", np.array(2, np.int64)),
                     init("acc0", np.array(0, np.float32))], opset=13)
    cv = np_conv(x, w1, pads=(1, 1, 1, 1))
    cl = np.clip(cv, -0.5, 0.5)
    c2 = np_conv(cl, w2, pads=(1, 1, 1, 1))
    return m, {"x": x}, [relu(c2 + cl), np.array(2 * (cv.sum() + c2.sum()), np.float32)]


@case
def convtranspose_bn_groups():
    """ConvTranspose with group 2 (weights (C, M/group, k, k)) followed by
    BatchNormalization and a per-channel Mul (Keras Conv2DTranspose +
    BN); then a Conv1d + BN + Relu chain on a rank-3 input (audio
    front-ends); batch 2."""
    ci, co = 4, 6
    w = rnd(ci, co // 2, 3, 3, lo=-.5, hi=.5)
    bn = bn_params(co)
    k = rnd(co, 1, 1)
    w1 = rnd(5, 3, 3)
    bn1 = bn_params(5)
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["ct"], group=2, strides=[2, 2],
                              pads=[1, 1, 1, 1], output_padding=[1, 1]),
             helper.make_node("BatchNormalization", ["ct", "s", "o", "m", "v"], ["n"]),
             helper.make_node("Mul", ["n", "k"], ["y"]),
             helper.make_node("Conv", ["a", "w1"], ["c1"], pads=[1, 1]),
             helper.make_node("BatchNormalization", ["c1", "s1", "o1", "m1", "v1"], ["n1"]),
             helper.make_node("Relu", ["n1"], ["y1"])]
    b = rnd(co)
    x, a = rnd(2, ci, 3, 3), rnd(2, 3, 7)
    inits = [init("w", w), init("b", b), init("k", k), init("w1", w1)] + [
        init(nm, val) for nm, val in zip(("s", "o", "m", "v"), bn)] + [
        init(nm, val) for nm, val in zip(("s1", "o1", "m1", "v1"), bn1)]
    m = model(nodes, [vi("x", ["N", ci, 3, 3]), vi("a", ["N", 3, 7])],
              [vi("y", ["N", co, 6, 6]), vi("y1", ["N", 5, 7])], inits=inits, opset=13)
    # ConvTranspose by scattering: out[n, g*M+j, i*s+p-pad] += x[n, g*C+c, i] w[g*C+c, j, p]
    xd = x.astype(np.float64)
    full = np.zeros((2, co, 3 * 2 + 2 + 1, 3 * 2 + 2 + 1))
    cg, mg = ci // 2, co // 2
    for g in range(2):
        for c in range(cg):
            for j in range(mg):
                for i0 in range(3):
                    for i1 in range(3):
                        full[:, g * mg + j, i0 * 2:i0 * 2 + 3, i1 * 2:i1 * 2 + 3] += \
                            xd[:, g * cg + c, i0, i1][:, None, None] * w[g * cg + c, j]
    ct = full[:, :, 1:7, 1:7] + b.reshape(1, -1, 1, 1)
    y = np_bn(ct, *bn) * k
    c1 = np_conv(a[:, :, None, :], w1[:, :, None, :], pads=(0, 1, 0, 1))[:, :, 0, :]
    return m, {"x": x, "a": a}, [y, relu(np_bn(c1, *bn1))]


@case
def bn_before_padded_conv():
    """BatchNormalization feeding a padded Conv (folding it into the Conv
    would change the zero padding) and one feeding an unpadded grouped
    Conv; a non-zero constant Pad and a reflect Pad before Convs (not
    foldable into the Conv's pads); batch 2."""
    c = 4
    bn = bn_params(c)
    w, wg = rnd(c, c, 3, 3), rnd(c, 2, 1, 1)
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "o", "m", "v"], ["n"]),
             helper.make_node("Conv", ["n", "w"], ["y1"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["n", "wg"], ["y2"], group=2),
             helper.make_node("Pad", ["x", "pads", "pv"], ["p1"]),
             helper.make_node("Conv", ["p1", "w"], ["y3"]),
             helper.make_node("Pad", ["x", "pads"], ["p2"], mode="reflect"),
             helper.make_node("Conv", ["p2", "w"], ["y4"]),
             helper.make_node("Pad", ["x", "pads"], ["p3"]),
             helper.make_node("Conv", ["p3", "w"], ["y5"], pads=[0, 1, 0, 1])]
    pads = np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)
    inits = [init("w", w), init("wg", wg), init("pads", pads),
             init("pv", np.array(0.75, np.float32))] + [
        init(nm, val) for nm, val in zip(("s", "o", "m", "v"), bn)]
    x = rnd(2, c, 5, 5)
    m = model(nodes, [vi("x", ["N", c, 5, 5])],
              [vi("y1", ["N", c, 5, 5]), vi("y2", ["N", c, 5, 5]), vi("y3", ["N", c, 5, 5]),
               vi("y4", ["N", c, 5, 5]), vi("y5", ["N", c, 5, 7])], inits=inits, opset=13)
    n = np_bn(x.astype(np.float64), *bn)
    sp = ((0, 0), (0, 0), (1, 1), (1, 1))
    return m, {"x": x}, [np_conv(n, w, pads=(1, 1, 1, 1)), np_conv(n, wg, group=2),
                         np_conv(np.pad(x, sp, constant_values=0.75), w),
                         np_conv(np.pad(x, sp, mode="reflect"), w),
                         np_conv(x, w, pads=(1, 2, 1, 2))]


@case
def matmul_scale_rows_vs_cols():
    """MatMul by a square weight followed by a Mul with a per-row [M,1]
    constant (must not fold into the weights' columns), a Div by a
    per-column [N] constant, a scalar Mul, and MatMul+Add with a [M,1]
    column bias; M == N == K so shapes cannot tell rows from columns."""
    k = 6
    w = rnd(k, k)
    rows, cols = rnd(k, 1, lo=0.5, hi=2), rnd(k, lo=0.5, hi=2)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["a"]),
             helper.make_node("Mul", ["a", "rows"], ["y1"]),
             helper.make_node("MatMul", ["x", "w"], ["b"]),
             helper.make_node("Div", ["b", "cols"], ["y2"]),
             helper.make_node("MatMul", ["x", "w"], ["c"]),
             helper.make_node("Mul", ["sc", "c"], ["y3"]),
             helper.make_node("MatMul", ["x", "w"], ["d"]),
             helper.make_node("Add", ["d", "rows"], ["y4"]),
             helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]),
             helper.make_node("MatMul", ["xt", "w"], ["y5"])]
    x = rnd(k, k)
    m = model(nodes, [vi("x", [k, k])], [vi(f"y{i}", [k, k]) for i in range(1, 6)],
              inits=[init("w", w), init("rows", rows), init("cols", cols),
                     init("sc", np.array(1.5, np.float32))], opset=13)
    a = x.astype(np.float64) @ w
    return m, {"x": x}, [a * rows, a / cols, 1.5 * a, a + rows, x.T.astype(np.float64) @ w]


@case
def activation_lookalikes():
    """Patterns that look like fusable ones but are not: HardSigmoid-like
    clip(x*0.2+0.5, 0, 2), Relu before Clip(-1, 6) and after Clip(2, 8),
    relu6(x+3)/5, GELU with 0.4 instead of 0.5, x*Sigmoid(y) with y != x,
    ReduceMean keepdims=0 + Unsqueeze on another axis, Cast float->int32->
    float (lossy), Softmax then ArgMax on another axis."""
    nodes = [const("a", np.array(0.2, np.float32)), const("b", np.array(0.5, np.float32)),
             const("zero", np.array(0.0, np.float32)), const("two", np.array(2.0, np.float32)),
             const("m1", np.array(-1.0, np.float32)), const("six", np.array(6.0, np.float32)),
             const("eight", np.array(8.0, np.float32)), const("three", np.array(3.0, np.float32)),
             const("five", np.array(5.0, np.float32)), const("p4", np.array(0.4, np.float32)),
             const("one", np.array(1.0, np.float32)),
             const("sq2", np.array(1.4142135381698608, np.float32)),
             helper.make_node("Mul", ["x", "a"], ["xa"]),
             helper.make_node("Add", ["xa", "b"], ["xab"]),
             helper.make_node("Clip", ["xab", "zero", "two"], ["y1"]),
             helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Clip", ["r", "m1", "six"], ["y2"]),
             helper.make_node("Clip", ["x", "two", "eight"], ["c28"]),
             helper.make_node("Relu", ["c28"], ["y3"]),
             helper.make_node("Add", ["x", "three"], ["x3"]),
             helper.make_node("Clip", ["x3", "zero", "six"], ["r6"]),
             helper.make_node("Div", ["r6", "five"], ["y4"]),
             helper.make_node("Div", ["x", "sq2"], ["d"]),
             helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]),
             helper.make_node("Mul", ["x", "p4"], ["xh"]),
             helper.make_node("Mul", ["xh", "e1"], ["y5"]),
             helper.make_node("Sigmoid", ["x2"], ["sg"]),
             helper.make_node("Mul", ["x", "sg"], ["y6"]),
             helper.make_node("ReduceMean", ["x"], ["rm"], axes=[2], keepdims=0),
             helper.make_node("Unsqueeze", ["rm", "ax1"], ["y7"]),
             helper.make_node("Cast", ["x"], ["xi"], to=TensorProto.INT32),
             helper.make_node("Cast", ["xi"], ["y8"], to=F),
             helper.make_node("Softmax", ["x"], ["sm"], axis=2),
             helper.make_node("ArgMax", ["sm"], ["y9"], axis=1)]
    x, x2 = rnd(2, 3, 4) * 8, rnd(2, 3, 4) * 4
    outs = [vi(f"y{i}", [2, 3, 4]) for i in range(1, 7)] + [
        vi("y7", [2, 1, 3]), vi("y8", [2, 3, 4]), vi("y9", [2, 1, 4], TensorProto.INT64)]
    m = model(nodes, [vi("x", [2, 3, 4]), vi("x2", [2, 3, 4])], outs,
              inits=[init("ax1", np.array([1], np.int64))], opset=13)
    xd = x.astype(np.float64)
    sm = np_softmax(xd, 2)
    return m, {"x": x, "x2": x2}, [
        np.clip(xd * np.float32(0.2) + 0.5, 0, 2), np.clip(relu(xd), -1, 6),
        relu(np.clip(xd, 2, 8)), np.clip(xd + 3, 0, 6) / 5,
        0.4 * xd * (1 + np_erf(xd / 1.4142135381698608)), xd / (1 + np.exp(-x2)),
        xd.mean(2)[:, None, :], np.trunc(x).astype(np.int32).astype(np.float32),
        np.argmax(sm, 1)[:, None, :].astype(np.int64)]


@case
def old_opset_semantics_op11():
    """Opset-11 ops whose meaning changed at 13 (convert --opset 17 must
    keep them): Softmax/LogSoftmax on axis 1 of a rank-3 input (coerced to
    2-D), ReduceSum with an axes attribute, Squeeze/Unsqueeze axes
    attributes, Split with a split attribute, Pad with pads as input."""
    nodes = [helper.make_node("Softmax", ["x"], ["y1"], axis=1),
             helper.make_node("LogSoftmax", ["x"], ["y2"], axis=1),
             helper.make_node("ReduceSum", ["x"], ["rs"], axes=[2], keepdims=1),
             helper.make_node("Squeeze", ["rs"], ["y3"], axes=[2]),
             helper.make_node("Unsqueeze", ["y3"], ["y4"], axes=[0, 3]),
             helper.make_node("Split", ["x"], ["y5", "y6"], axis=2, split=[1, 3]),
             helper.make_node("Pad", ["x", "pads"], ["y7"], mode="edge"),
             helper.make_node("Hardmax", ["x"], ["y8"], axis=1)]
    x = rnd(2, 3, 4) * 3
    m = model(nodes, [vi("x", [2, 3, 4])],
              [vi("y1", [2, 3, 4]), vi("y2", [2, 3, 4]), vi("y3", [2, 3]),
               vi("y4", [1, 2, 3, 1]), vi("y5", [2, 3, 1]), vi("y6", [2, 3, 3]),
               vi("y7", [2, 3, 6]), vi("y8", [2, 3, 4])],
              inits=[init("pads", np.array([0, 0, 1, 0, 0, 1], np.int64))], opset=11)
    xd = x.astype(np.float64)
    flat = np_softmax(xd.reshape(2, 12), 1).reshape(2, 3, 4)
    hm = np.zeros((2, 12))
    hm[np.arange(2), xd.reshape(2, 12).argmax(1)] = 1
    return m, {"x": x}, [flat, np.log(flat), xd.sum(2), xd.sum(2)[None, :, :, None],
                         x[:, :, :1], x[:, :, 1:], np.pad(x, ((0, 0), (0, 0), (1, 1)), "edge"),
                         hm.reshape(2, 3, 4)]


@case
def old_opset_semantics_op9():
    """Opset 9: Upsample (nearest) with scales as input, Slice with
    attributes, Dropout with ratio, Flatten, Gemm with a [M,1] C, BN-9,
    Clip-6, Cast-9, MaxPool with a ceil_mode-free stride; batch 2."""
    c = 2
    bn = bn_params(c)
    nodes = [helper.make_node("Upsample", ["x", "sc"], ["u"], mode="nearest"),
             helper.make_node("Slice", ["u"], ["sl"], axes=[2, 3], starts=[1, 0], ends=[7, -1]),
             helper.make_node("BatchNormalization", ["sl", "s", "o", "m", "v"], ["bn"]),
             helper.make_node("Clip", ["bn"], ["cl"], min=-0.5, max=0.5),
             helper.make_node("MaxPool", ["cl"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Dropout", ["mp"], ["dr"], ratio=0.3),
             helper.make_node("Flatten", ["dr"], ["fl"]),
             helper.make_node("Gemm", ["fl", "gw", "gc"], ["y"])]
    x = rnd(2, c, 4, 4)
    gw, gc = rnd(c * 3 * 3, 3), rnd(2, 1)
    inits = [init("sc", np.array([1, 1, 2, 2], np.float32)), init("gw", gw), init("gc", gc)] + [
        init(nm, val) for nm, val in zip(("s", "o", "m", "v"), bn)]
    m = model(nodes, [vi("x", [2, c, 4, 4])], [vi("y", [2, 3])], inits=inits, opset=9)
    u = x.repeat(2, 2).repeat(2, 3).astype(np.float64)
    cl = np.clip(np_bn(u[:, :, 1:7, 0:7], *bn), -0.5, 0.5)
    mp = cl[:, :, :6, :6].reshape(2, c, 3, 2, 3, 2).max((3, 5))
    return m, {"x": x}, [mp.reshape(2, -1) @ gw + gc]


@case
def initializer_overridden():
    """Initializers that are also graph inputs (IR >= 4: a default the
    caller may replace), fed with other values: the Conv weight, a BN
    scale, a Clip bound and a MatMul weight. Plan-time folding must use
    the fed values, not the initializers."""
    c = 4
    w, bn = rnd(c, c, 3, 3, lo=-.4, hi=.4), bn_params(c)
    mw = rnd(5, 5)
    inits = [init("w", w), init("hi", np.array(6, np.float32)), init("mw", mw)] + [
        init(nm, val) for nm, val in zip(("s", "o", "m", "v"), bn)]
    nodes = [helper.make_node("Conv", ["x", "w"], ["cv"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["cv", "s", "o", "m", "v"], ["n"]),
             helper.make_node("Clip", ["n", "", "hi"], ["y"]),
             helper.make_node("MatMul", ["t", "mw"], ["y2"])]
    x, t = rnd(2, c, 4, 4) * 2, rnd(1, 5)
    w_fed, s_fed, hi_fed, mw_fed = rnd(c, c, 3, 3), rnd(c, lo=-2, hi=2), \
        np.array(0.25, np.float32), rnd(5, 5)
    m = model(nodes, [vi("x", [2, c, 4, 4]), vi("t", [1, 5]), vi("w", [c, c, 3, 3]), vi("s", [c]),
                      vi("hi", []), vi("mw", [5, 5])],
              [vi("y", [2, c, 4, 4]), vi("y2", [1, 5])], inits=inits, opset=13)
    y = np.minimum(np_bn(np_conv(x, w_fed, pads=(1, 1, 1, 1)), s_fed, *bn[1:]), 0.25)
    return m, {"x": x, "t": t, "w": w_fed, "s": s_fed, "hi": hi_fed, "mw": mw_fed}, [
        y, t.astype(np.float64) @ mw_fed]


@case
def constant_attr_forms():
    """Constant nodes with value_float / value_ints / value_int (spox and
    tf2onnx write them), initializers in typed fields (float_data,
    int64_data) instead of raw_data, empty-string optional inputs and
    outputs, and graph outputs that are an initializer and a Constant."""
    c = 3
    w = rnd(c, 2, 3, 3)
    wt = helper.make_tensor("w", F, w.shape, w.flatten().tolist())         # float_data
    sh = helper.make_tensor("shape", TensorProto.INT64, [2], [0, -1])      # int64_data
    nodes = [helper.make_node("Constant", [], ["lo"], value_float=-0.5),
             helper.make_node("Constant", [], ["hi"], value_float=0.75),
             helper.make_node("Constant", [], ["sh2"], value_ints=[0, 3, -1]),
             helper.make_node("Constant", [], ["kout"], value_int=7),
             helper.make_node("Conv", ["x", "w", ""], ["cv"], pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["cv", "lo", "hi"], ["cl"]),
             helper.make_node("MaxPool", ["cl"], ["mp", ""], kernel_shape=[2, 2]),
             helper.make_node("Reshape", ["mp", "shape"], ["y1"]),
             helper.make_node("Reshape", ["cl", "sh2"], ["y2"]),
             helper.make_node("Dropout", ["cl"], ["y3", ""])]
    x = rnd(2, 2, 4, 4) * 2
    m = model(nodes, [vi("x", [2, 2, 4, 4])],
              [vi("y1", [2, c * 9]), vi("y2", [2, c, 16]), vi("y3", [2, c, 4, 4]),
               vi("w", [c, 2, 3, 3]), vi("kout", [], TensorProto.INT64)],
              inits=[wt, sh], opset=13)
    cl = np.clip(np_conv(x, w, pads=(1, 1, 1, 1)), -0.5, 0.75)
    mp = np.maximum(np.maximum(cl[:, :, :-1, :-1], cl[:, :, 1:, :-1]),
                    np.maximum(cl[:, :, :-1, 1:], cl[:, :, 1:, 1:]))
    return m, {"x": x}, [mp.reshape(2, -1), cl.reshape(2, c, 16), cl, w,
                         np.array(7, np.int64)]


def _resnet_block(batch, c=32, hw=10, outer_read=False):
    """A ResNet/MobileNet-sized block (32 channels, so oneDNN picks blocked
    and channels-last layouts) as PyTorch 1.x writes it unfolded: Conv+BN+
    Relu, depthwise Conv+BN+Clip(0,6), pointwise Conv+BN + residual Add +
    Relu, a channel Concat with a parallel Conv, GlobalAveragePool, Flatten,
    Gemm. outer_read: an If branch also reads the block's middle values."""
    w1, wd, wp = rnd(c, c, 3, 3, lo=-.2, hi=.2), rnd(c, 1, 3, 3), rnd(c, c, 1, 1, lo=-.3, hi=.3)
    wq = rnd(16, c, 1, 1, lo=-.3, hi=.3)
    bns = [bn_params(c) for _ in range(3)]
    fw, fb = rnd(10, c + 16, lo=-.3, hi=.3), rnd(10)
    nodes = [const("zero", np.array(0, np.float32)), const("six", np.array(6, np.float32))]
    inits = [init("w1", w1), init("wd", wd), init("wp", wp), init("wq", wq), init("fw", fw),
             init("fb", fb)]
    for i, bn in enumerate(bns):
        for nm, val in zip("somv", bn):
            nodes.append(const(f"bn{i}_{nm}", val))
    bnn = lambda i, x, y: helper.make_node(  # noqa: E731
        "BatchNormalization", [x] + [f"bn{i}_{nm}" for nm in "somv"], [y])
    nodes += [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), bnn(0, "c1", "n1"),
              helper.make_node("Relu", ["n1"], ["r1"]),
              helper.make_node("Conv", ["r1", "wd"], ["c2"], pads=[1, 1, 1, 1], group=c),
              bnn(1, "c2", "n2"), helper.make_node("Clip", ["n2", "zero", "six"], ["r2"]),
              helper.make_node("Conv", ["r2", "wp"], ["c3"]), bnn(2, "c3", "n3"),
              helper.make_node("Add", ["n3", "r1"], ["s"]),
              helper.make_node("Relu", ["s"], ["r3"]),
              helper.make_node("Conv", ["r1", "wq"], ["q"]),
              helper.make_node("Relu", ["q"], ["qr"]),
              helper.make_node("Concat", ["r3", "qr"], ["cat"], axis=1),
              helper.make_node("GlobalAveragePool", ["cat"], ["gp"]),
              helper.make_node("Flatten", ["gp"], ["fl"]),
              helper.make_node("Gemm", ["fl", "fw", "fb"], ["y"], transB=1)]
    outs = [vi("y", ["batch", 10])]
    ins = [vi("x", ["batch", c, hw, hw])]
    if outer_read:
        br = helper.make_graph(
            [helper.make_node("ReduceSum", ["c2"], ["a1"], keepdims=0),
             helper.make_node("ReduceSum", ["r2"], ["a2"], keepdims=0),
             helper.make_node("ReduceSum", ["n3"], ["a3"], keepdims=0),
             helper.make_node("Sum", ["a1", "a2", "a3"], ["o"])], "br", [], [vi("o", [])])
        nodes.append(helper.make_node("If", ["cond"], ["z"], then_branch=br, else_branch=br))
        outs.append(vi("z", []))
        ins.append(vi("cond", [], TensorProto.BOOL))
    x = rnd(batch, c, hw, hw) * 2
    m = model(nodes, ins, outs, inits=inits, opset=11, producer="pytorch")
    r1 = relu(np_bn(np_conv(x, w1, pads=(1, 1, 1, 1)), *bns[0]))
    c2 = np_conv(r1, wd, pads=(1, 1, 1, 1), group=c)
    r2 = np.clip(np_bn(c2, *bns[1]), 0, 6)
    n3 = np_bn(np_conv(r2, wp), *bns[2])
    cat = np.concatenate([relu(n3 + r1), relu(np_conv(r1, wq))], 1)
    y = cat.mean((2, 3)) @ fw.T + fb
    feeds = {"x": x}
    refs = [y]
    if outer_read:
        feeds["cond"] = np.array(True)
        refs.append(np.array(c2.sum() + r2.sum() + n3.sum(), np.float32))
    return m, feeds, refs


CASES["block32_b1"] = lambda: _resnet_block(1)
CASES["block32_b3"] = lambda: _resnet_block(3)
CASES["block32_b2_outer_read"] = lambda: _resnet_block(2, outer_read=True)


def _attr_ref(name, ref, typ):
    a = onnx.AttributeProto()
    a.name, a.ref_attr_name, a.type = name, ref, typ
    return a


@case
def dynamo_functions_nested():
    """PyTorch 2 dynamo's local functions in depth: a function calling
    another, attribute references (LeakyRelu alpha and Transpose perm taken
    from the call), the same value names inside functions as in the main
    graph, a formal input passed straight out, and a call inside an If
    branch; batch 2."""
    leaky = helper.make_node("LeakyRelu", ["t"], ["out"])
    leaky.attribute.append(_attr_ref("alpha", "slope", onnx.AttributeProto.FLOAT))
    act = helper.make_function("pkg.torch", "Act", ["inp"], ["out"],
                               [helper.make_node("Identity", ["inp"], ["t"]), leaky],
                               [helper.make_opsetid("", 17)], attributes=["slope"])
    tr = helper.make_node("Transpose", ["x"], ["y"])
    tr.attribute.append(_attr_ref("perm", "order", onnx.AttributeProto.INTS))
    block = helper.make_function(
        "pkg.torch", "Block", ["x", "w"], ["z", "x_again"],
        [helper.make_node("MatMul", ["x", "w"], ["m"]),
         helper.make_node("Act", ["m"], ["a"], domain="pkg.torch", slope=0.25),
         tr, helper.make_node("Add", ["a", "y"], ["z"]),
         helper.make_node("Identity", ["x"], ["x_again"])],
        [helper.make_opsetid("", 17), helper.make_opsetid("pkg.torch", 1)],
        attributes=["order"])
    w = rnd(4, 4)
    then_g = helper.make_graph([helper.make_node("Act", ["x"], ["ta"], domain="pkg.torch",
                                                 slope=0.5)], "then", [], [vi("ta", [2, 4, 4])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["ea"])], "else", [],
                               [vi("ea", [2, 4, 4])])
    nodes = [helper.make_node("Block", ["x", "w"], ["m", "xa"], domain="pkg.torch",
                              order=[0, 2, 1]),
             helper.make_node("Block", ["m", "w"], ["z", ""], domain="pkg.torch",
                              order=[0, 2, 1], name="second"),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    g = helper.make_graph(nodes, "main_graph", [vi("x", [2, 4, 4]), vi("c", [], TensorProto.BOOL)],
                          [vi("z", [2, 4, 4]), vi("xa", [2, 4, 4]), vi("y", [2, 4, 4])],
                          initializer=[init("w", w)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("pkg.torch", 1)],
                          functions=[act, block], producer_name="pytorch")
    m.ir_version = 8
    x = rnd(2, 4, 4)
    lr = lambda v, a: np.where(v > 0, v, a * v)  # noqa: E731

    def blk(v):
        return lr(v.astype(np.float64) @ w, 0.25) + v.transpose(0, 2, 1)
    m1 = blk(x)
    return m, {"x": x, "c": np.array(True)}, [blk(m1), x, lr(x.astype(np.float64), 0.5)]


@case
def same_bytes_other_types():
    """Constants and initializers with identical bytes but another type or
    shape (int32 vs float32 zeros, [4] vs [2,2]): cse and dedup must not
    merge them; a Cast int32->float->int64 (lossy above 2^24, so not a
    removable widening) and a reversing Slice (same shape, step -1: no
    no-op)."""
    nodes = [helper.make_node("Constant", [], ["cf"], value=numpy_helper.from_array(
                 np.zeros(4, np.float32))),
             helper.make_node("Constant", [], ["ci"], value=numpy_helper.from_array(
                 np.zeros(4, np.int32))),
             helper.make_node("Constant", [], ["c22"], value=numpy_helper.from_array(
                 np.zeros((2, 2), np.float32))),
             helper.make_node("Add", ["xf", "cf"], ["y1"]),
             helper.make_node("Add", ["xi", "ci"], ["y2"]),
             helper.make_node("Add", ["x22", "c22"], ["y3"]),
             helper.make_node("Mul", ["xf", "if4"], ["y4"]),
             helper.make_node("Mul", ["xi", "ii4"], ["y5"]),
             helper.make_node("Mul", ["x22", "if22"], ["y6"]),
             helper.make_node("Cast", ["big"], ["bf"], to=F),
             helper.make_node("Cast", ["bf"], ["y7"], to=TensorProto.INT64),
             helper.make_node("Slice", ["xf", "st", "en", "ax", "sp"], ["y8"])]
    one_f = np.full(4, 3, np.float32)
    m = model(nodes, [vi("xf", [4]), vi("xi", [4], TensorProto.INT32), vi("x22", [2, 2]),
                      vi("big", [2], TensorProto.INT32)],
              [vi("y1", [4]), vi("y2", [4], TensorProto.INT32), vi("y3", [2, 2]), vi("y4", [4]),
               vi("y5", [4], TensorProto.INT32), vi("y6", [2, 2]),
               vi("y7", [2], TensorProto.INT64), vi("y8", [4])],
              inits=[init("if4", one_f), init("ii4", one_f.view(np.int32)),
                     init("if22", one_f.reshape(2, 2)),
                     init("st", np.array([-1], np.int64)),
                     init("en", np.array([-(2 ** 63) + 1], np.int64)),
                     init("ax", np.array([0], np.int64)), init("sp", np.array([-1], np.int64))],
              opset=13)
    xf, xi, x22 = rnd(4), np.arange(4, dtype=np.int32) - 1, rnd(2, 2)
    big = np.array([16777217, -16777219], np.int32)
    return m, {"xf": xf, "xi": xi, "x22": x22, "big": big}, [
        xf, xi, x22, xf * 3, xi * one_f.view(np.int32), x22 * 3,
        big.astype(np.float32).astype(np.int64), xf[::-1]]


@case
def norm_act_lookalikes():
    """Lookalikes of fusable patterns from Keras/TF2ONNX: LayerNorm with
    epsilon added after the Sqrt (x-m)/(sqrt(var)+eps) (not
    LayerNormalization), rows of constant value so epsilon matters; Keras
    hard_sigmoid (0.2x+0.5) times x (not HardSwish); x*Sigmoid(1.702x)
    (QuickGELU-like Swish with alpha); Relu6 via Clip max only then Relu."""
    eps = np.array(0.1, np.float32)
    nodes = [const("eps", eps), const("two", np.array(2.0, np.float32)),
             const("alpha", np.array(1.702, np.float32)),
             const("six", np.array(6.0, np.float32)),
             helper.make_node("ReduceMean", ["x"], ["mu"], axes=[-1]),
             helper.make_node("Sub", ["x", "mu"], ["xc"]),
             helper.make_node("Pow", ["xc", "two"], ["sq"]),
             helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1]),
             helper.make_node("Sqrt", ["var"], ["sd"]),
             helper.make_node("Add", ["sd", "eps"], ["sde"]),
             helper.make_node("Div", ["xc", "sde"], ["y1"]),
             helper.make_node("HardSigmoid", ["x"], ["hs"], alpha=0.2, beta=0.5),
             helper.make_node("Mul", ["x", "hs"], ["y2"]),
             helper.make_node("Mul", ["x", "alpha"], ["xa"]),
             helper.make_node("Sigmoid", ["xa"], ["sg"]),
             helper.make_node("Mul", ["x", "sg"], ["y3"]),
             helper.make_node("Clip", ["x", "", "six"], ["c6"]),
             helper.make_node("Relu", ["c6"], ["y4"])]
    x = rnd(3, 8) * 8
    x[1] = 0.5     # a constant row: variance 0, epsilon decides
    m = model(nodes, [vi("x", ["B", 8])], [vi(f"y{i}", ["B", 8]) for i in range(1, 5)], opset=13)
    xd = x.astype(np.float64)
    xc = xd - xd.mean(-1, keepdims=True)
    sd = np.sqrt((xc ** 2).mean(-1, keepdims=True))
    return m, {"x": x}, [xc / (sd + 0.1), xd * np.clip(0.2 * xd + 0.5, 0, 1),
                         xd / (1 + np.exp(-1.702 * xd)), np.clip(xd, 0, 6)]


@case
def matmul_broadcast_batches():
    """MatMul batch broadcasting that a batch-free 2-D product must not
    flatten wrongly: [3,4,K]x[1,K,N], [1,4,K]x[3,K,N], [2,1,4,K]x[3,K,N],
    [4,K]x[3,K,N], [3,1,K]x[3,K,N] (GEMV rows per batch) and a MatMul whose
    weight is a graph input (not a constant)."""
    k, n = 5, 3
    a1, b1 = rnd(3, 4, k), rnd(1, k, n)
    a2, b2 = rnd(1, 4, k), rnd(3, k, n)
    a3 = rnd(2, 1, 4, k)
    a4 = rnd(4, k)
    a5 = rnd(3, 1, k)
    wi = rnd(k, n)
    nodes = [helper.make_node("MatMul", ["a1", "b1"], ["y1"]),
             helper.make_node("MatMul", ["a2", "b2"], ["y2"]),
             helper.make_node("MatMul", ["a3", "b2"], ["y3"]),
             helper.make_node("MatMul", ["a4", "b2"], ["y4"]),
             helper.make_node("MatMul", ["a5", "b2"], ["y5"]),
             helper.make_node("MatMul", ["a1", "wi"], ["y6"])]
    m = model(nodes, [vi("a1", [3, 4, k]), vi("a2", [1, 4, k]), vi("a3", [2, 1, 4, k]),
                      vi("a4", [4, k]), vi("a5", [3, 1, k]), vi("wi", [k, n])],
              [vi("y1", [3, 4, n]), vi("y2", [3, 4, n]), vi("y3", [2, 3, 4, n]),
               vi("y4", [3, 4, n]), vi("y5", [3, 1, n]), vi("y6", [3, 4, n])],
              inits=[init("b1", b1), init("b2", b2)], opset=13)
    f = lambda t: t.astype(np.float64)  # noqa: E731
    return m, {"a1": a1, "a2": a2, "a3": a3, "a4": a4, "a5": a5, "wi": wi}, [
        f(a1) @ b1, f(a2) @ b2, f(a3) @ b2, f(a4) @ b2, f(a5) @ b2, f(a1) @ wi]


def _inplace_model(c):
    """Residual Add onto a Conv's own input (y = Conv(r) + r: a sum written
    in place on r would corrupt what the Conv reads), Concat of a value
    with itself and with a graph input, Concat of a Conv output with a
    constant."""
    w1, w2 = rnd(c, c, 3, 3, lo=-.2, hi=.2), rnd(c, c, 3, 3, lo=-.2, hi=.2)
    w3 = rnd(c, 3 * c, 1, 1, lo=-.2, hi=.2)
    kc = rnd(1, 2, 6, 6)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "r"], ["s"]),
             helper.make_node("Concat", ["s", "s", "x"], ["cat"], axis=1),
             helper.make_node("Conv", ["cat", "w3"], ["y"]),
             helper.make_node("Relu", ["y"], ["yr"]),
             helper.make_node("Expand", ["kc", "shp"], ["kce"]),
             helper.make_node("Concat", ["yr", "kce"], ["y2"], axis=1)]
    x = rnd(2, c, 6, 6)
    m = model(nodes, [vi("x", [2, c, 6, 6])], [vi("y2", [2, c + 2, 6, 6])],
              inits=[init("w1", w1), init("w2", w2), init("w3", w3), init("kc", kc),
                     init("shp", np.array([2, 2, 6, 6], np.int64))], opset=13)
    r = relu(np_conv(x, w1, pads=(1, 1, 1, 1)))
    s_ = np_conv(r, w2, pads=(1, 1, 1, 1)) + r
    yr = relu(np_conv(np.concatenate([s_, s_, x], 1), w3))
    return m, {"x": x}, [np.concatenate([yr, np.broadcast_to(kc, (2, 2, 6, 6))], 1)]


CASES["inplace_concat_c8"] = lambda: _inplace_model(8)
CASES["inplace_concat_c32"] = lambda: _inplace_model(32)


@case
def fp16_whole_model():
    """A float16 export end to end (Paddle/PyTorch .half()): Conv with a
    float16 bias, BatchNormalization, Relu, GlobalAveragePool, MatMul, Add,
    Softmax; batch 2. Reference in float64 from the same float16 numbers."""
    h = np.float16
    w, b = rnd(4, 3, 3, 3).astype(h), rnd(4).astype(h)
    bn = [t.astype(h) for t in bn_params(4)]
    mw, mb = rnd(4, 5).astype(h), rnd(5).astype(h)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "o", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["gp"]),
             helper.make_node("Flatten", ["gp"], ["fl"]),
             helper.make_node("MatMul", ["fl", "mw"], ["mm"]),
             helper.make_node("Add", ["mm", "mb"], ["lg"]),
             helper.make_node("Softmax", ["lg"], ["y"], axis=-1)]
    H = TensorProto.FLOAT16
    inits = [init("w", w), init("b", b), init("mw", mw), init("mb", mb)] + [
        init(nm, val) for nm, val in zip("somv", bn)]
    x = rnd(2, 3, 6, 6).astype(h)
    m = model(nodes, [vi("x", ["N", 3, 6, 6], H)], [vi("y", ["N", 5], H), vi("lg", ["N", 5], H)],
              inits=inits, opset=13)
    f = lambda t: t.astype(np.float64)  # noqa: E731
    r = relu(np_bn(np_conv(f(x), f(w), f(b), pads=(1, 1, 1, 1)), *[f(t) for t in bn]))
    lg = r.mean((2, 3)) @ f(mw) + f(mb)
    return m, {"x": x}, [np_softmax(lg).astype(h), lg.astype(h)]


@case
def qdq_conv_per_channel():
    """A QDQ export (PyTorch/TF quantization-aware): uint8 activations
    QuantizeLinear/DequantizeLinear around a Conv whose int8 weights are
    dequantized per output channel (axis 0), an int32 bias dequantized,
    Relu, then Q/DQ again; batch 2."""
    wq = RNG.integers(-127, 128, size=(4, 3, 3, 3)).astype(np.int8)
    ws = rnd(4, lo=0.002, hi=0.01)
    bq = RNG.integers(-500, 500, size=4).astype(np.int32)
    xs, xz = np.array(0.02, np.float32), np.array(128, np.uint8)
    ys, yz = np.array(0.05, np.float32), np.array(0, np.uint8)
    bs = (xs * ws).astype(np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["bd"], axis=0),
             helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["rq"]),
             helper.make_node("DequantizeLinear", ["rq", "ys", "yz"], ["y"])]
    inits = [init("wq", wq), init("ws", ws), init("wz", np.zeros(4, np.int8)), init("bq", bq),
             init("bs", bs), init("bz", np.zeros(4, np.int32)), init("xs", xs), init("xz", xz),
             init("ys", ys), init("yz", yz)]
    x = rnd(2, 3, 5, 5) * 2
    m = model(nodes, [vi("x", ["N", 3, 5, 5])], [vi("y", ["N", 4, 5, 5])], inits=inits,
              opset=13)
    q = lambda v, s_, z: np.clip(np.round(v / s_) + z, 0, 255)  # noqa: E731
    xd = (q(x.astype(np.float32), xs, 128) - 128) * xs
    wd = wq.astype(np.float64) * ws.reshape(4, 1, 1, 1)
    r = relu(np_conv(xd, wd, bq * bs, pads=(1, 1, 1, 1)))
    # the last rounding step can differ by one quantum where float32
    # arithmetic lands on a .5 boundary: compare in float32 like ORT
    y = q(r.astype(np.float32), ys, 0) * ys
    return m, {"x": x}, [y]


@case
def paddle_shape_chains():
    """Paddle2ONNX / PyTorch 1.x shape arithmetic on a symbolic batch
    (p2o.DynamicDimension names): Shape->Gather->Unsqueeze->Concat->
    Reshape (flatten), Shape->Slice->ReduceProd, ConstantOfShape of a
    Shape, Expand to another input's Shape, Cast int64->float of a dim,
    Where on a Shape comparison; opset 11, batch 3."""
    i64 = TensorProto.INT64
    nodes = [helper.make_node("Shape", ["x"], ["sh"]),
             const("zero", np.array(0, np.int64)),
             const("m1", np.array([-1], np.int64)),
             helper.make_node("Gather", ["sh", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n"], ["n1"], axes=[0]),
             helper.make_node("Concat", ["n1", "m1"], ["fshape"], axis=0),
             helper.make_node("Reshape", ["x", "fshape"], ["flat"]),
             helper.make_node("MatMul", ["flat", "w"], ["y1"]),
             const("s2", np.array([1], np.int64)), const("e2", np.array([4], np.int64)),
             helper.make_node("Slice", ["sh", "s2", "e2"], ["tail"]),
             helper.make_node("ReduceProd", ["tail"], ["y2"], keepdims=0),
             helper.make_node("ConstantOfShape", ["sh"], ["ones"],
                              value=numpy_helper.from_array(np.array([1.5], np.float32))),
             helper.make_node("Add", ["x", "ones"], ["y3"]),
             helper.make_node("Shape", ["t"], ["tsh"]),
             helper.make_node("Expand", ["bias", "tsh"], ["y4"]),
             helper.make_node("Cast", ["n"], ["nf"], to=F),
             helper.make_node("Div", ["t", "nf"], ["y5"]),
             helper.make_node("Equal", ["n", "three"], ["is3"]),
             helper.make_node("Where", ["is3", "t", "bias"], ["y6"])]
    w = rnd(24, 5)
    x, t, bias = rnd(3, 2, 3, 4), rnd(3, 6), rnd(6)
    d = "p2o.DynamicDimension.0"
    m = model(nodes, [vi("x", [d, 2, 3, 4]), vi("t", [d, 6])],
              [vi("y1", [d, 5]), vi("y2", [], i64), vi("y3", [d, 2, 3, 4]), vi("y4", [d, 6]),
               vi("y5", [d, 6]), vi("y6", [d, 6])],
              inits=[init("w", w), init("bias", bias), init("three", np.array(3, np.int64))],
              opset=11, producer="PaddlePaddle")
    xd = x.astype(np.float64)
    return m, {"x": x, "t": t}, [xd.reshape(3, -1) @ w, np.array(24, np.int64), xd + 1.5,
                                 np.broadcast_to(bias, (3, 6)), t / 3.0, t]


@case
def resize_exporter_modes():
    """Resize as exporters write it (opset 13: roi optional): PyTorch
    nearest upsample (empty-string roi, scales, asymmetric + floor), bilinear with
    align_corners (sizes given, scales empty), TF2ONNX half_pixel linear
    downsample by 2 (each output the mean of a 2x2 block), and
    pytorch_half_pixel to an output of size 1 (coordinate 0); batch 2."""
    nodes = [helper.make_node("Resize", ["x", "", "sc2"], ["y1"], mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
             helper.make_node("Resize", ["x", "", "", "sz"], ["y2"], mode="linear",
                              coordinate_transformation_mode="align_corners"),
             helper.make_node("Resize", ["x", "", "half"], ["y3"], mode="linear",
                              coordinate_transformation_mode="half_pixel"),
             helper.make_node("Resize", ["x", "", "", "sz1"], ["y4"], mode="linear",
                              coordinate_transformation_mode="pytorch_half_pixel")]
    x = rnd(2, 3, 4, 4)
    inits = [init("sc2", np.array([1, 1, 2, 2], np.float32)),
             init("sz", np.array([2, 3, 7, 7], np.int64)),
             init("half", np.array([1, 1, 0.5, 0.5], np.float32)),
             init("sz1", np.array([2, 3, 1, 4], np.int64))]
    m = model(nodes, [vi("x", [2, 3, 4, 4])],
              [vi("y1", [2, 3, 8, 8]), vi("y2", [2, 3, 7, 7]), vi("y3", [2, 3, 2, 2]),
               vi("y4", [2, 3, 1, 4])], inits=inits, opset=13)
    xd = x.astype(np.float64)
    y1 = xd.repeat(2, 2).repeat(2, 3)

    def lin_axis(a, axis, coords):
        i0 = np.clip(np.floor(coords).astype(int), 0, a.shape[axis] - 1)
        i1 = np.clip(i0 + 1, 0, a.shape[axis] - 1)
        f = np.clip(coords, 0, a.shape[axis] - 1) - i0
        sh = [1] * a.ndim
        sh[axis] = -1
        return np.take(a, i0, axis) * (1 - f.reshape(sh)) + np.take(a, i1, axis) * f.reshape(sh)
    ac = np.arange(7) * 3 / 6.0          # align_corners: i * (in-1)/(out-1)
    y2 = lin_axis(lin_axis(xd, 2, ac), 3, ac)
    y3 = xd.reshape(2, 3, 2, 2, 2, 2).mean((3, 5))
    y4 = lin_axis(xd, 2, np.zeros(1))     # output size 1: coordinate 0
    return m, {"x": x}, [y1, y2, y3, y4]


@case
def function_own_domain():
    """A local function whose body uses a domain only the function imports
    (com.microsoft Gelu, as onnxscript-based exporters emit), called from a
    model importing just the default and the function's domains."""
    fn = helper.make_function(
        "pkg.onnxscript", "Act", ["a"], ["b"],
        [helper.make_node("Gelu", ["a"], ["b"], domain="com.microsoft")],
        [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    g = helper.make_graph([helper.make_node("Act", ["x"], ["y"], domain="pkg.onnxscript")], "g",
                          [vi("x", [2, 5])], [vi("y", [2, 5])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("pkg.onnxscript", 1)],
                          functions=[fn], producer_name="pytorch")
    m.ir_version = 8
    x = rnd(2, 5) * 3
    return m, {"x": x}, [np_gelu(x.astype(np.float64))]


@case
def tf_passthrough_bodies():
    """TF2ONNX control flow: an If branch whose output is an outer-scope
    value itself (no node: the Conv output before its BN), a Loop body
    passing a carried value straight through (input name = output name's
    source) and scanning out the iteration count; batch 2."""
    c = 4
    w, bn = rnd(c, c, 3, 3, lo=-.4, hi=.4), bn_params(c)
    then_g = helper.make_graph([], "then", [], [vi("cv", ["N", c, 5, 5])])
    else_g = helper.make_graph([helper.make_node("Neg", ["n"], ["neg"])], "else", [],
                               [vi("neg", ["N", c, 5, 5])])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "one"], ["acc_out"]),
         helper.make_node("Identity", ["acc_in"], ["scan_i"])],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL),
                 vi("keep", ["N", c, 5, 5]), vi("acc_in", [])],
        [vi("cond_out", [], TensorProto.BOOL), vi("keep", ["N", c, 5, 5]), vi("acc_out", []),
         vi("scan_i", [])])
    nodes = [helper.make_node("Conv", ["x", "w"], ["cv"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["cv", "s", "o", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("If", ["cond"], ["y1"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Loop", ["trip", "", "r", "zero"], ["y2", "cnt", "seq"], body=body)]
    inits = [init("w", w), init("trip", np.array(3, np.int64)), init("one", np.array(1, np.float32)),
             init("zero", np.array(0, np.float32))] + [
        init(nm, val) for nm, val in zip("somv", bn)]
    x = rnd(2, c, 5, 5)
    m = model(nodes, [vi("x", ["N", c, 5, 5]), vi("cond", [], TensorProto.BOOL)],
              [vi("y1", ["N", c, 5, 5]), vi("y2", ["N", c, 5, 5]), vi("cnt", []),
               vi("seq", [3])], inits=inits, opset=13, producer="tf2onnx")
    cv = np_conv(x, w, pads=(1, 1, 1, 1))
    return m, {"x": x, "cond": np.array(True)}, [
        cv, relu(np_bn(cv, *bn)), np.array(3, np.float32), np.array([0, 1, 2], np.float32)]


def np_lstm_dir(x, w, r, b, h0, c0, reverse):
    """One direction of ONNX LSTM (gates i, o, f, c; sigmoid/tanh/tanh)."""
    hs = w.shape[0] // 4
    h, c = h0.astype(np.float64), c0.astype(np.float64)
    out = [None] * x.shape[0]
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    for t in steps:
        g = x[t] @ w.T + h @ r.T + b[:4 * hs] + b[4 * hs:]
        i, o, f, cc = sig(g[:, :hs]), sig(g[:, hs:2 * hs]), sig(g[:, 2 * hs:3 * hs]), \
            np.tanh(g[:, 3 * hs:])
        c = f * c + i * cc
        h = o * np.tanh(c)
        out[t] = h
    return np.stack(out), h, c


@case
def lstm_bidirectional_pt():
    """PyTorch nn.LSTM(bidirectional) as exported: sequence-first input,
    empty sequence_lens (""), initial states from graph inputs, all three
    outputs used, then a Transpose/Reshape to [seq, batch, 2*hidden]
    (opset 14, layout 0); batch 2."""
    s_, b_, e, hs = 3, 2, 4, 5
    w, r = rnd(2, 4 * hs, e, lo=-.5, hi=.5), rnd(2, 4 * hs, hs, lo=-.5, hi=.5)
    bias = rnd(2, 8 * hs, lo=-.5, hi=.5)
    nodes = [helper.make_node("LSTM", ["x", "w", "r", "b", "", "h0", "c0"], ["y", "yh", "yc"],
                              hidden_size=hs, direction="bidirectional"),
             helper.make_node("Transpose", ["y"], ["yt"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["yt", "sh"], ["out"])]
    x, h0, c0 = rnd(s_, b_, e), rnd(2, b_, hs), rnd(2, b_, hs)
    m = model(nodes, [vi("x", ["seq", "batch", e]), vi("h0", [2, "batch", hs]),
                      vi("c0", [2, "batch", hs])],
              [vi("out", ["seq", "batch", 2 * hs]), vi("yh", [2, "batch", hs]),
               vi("yc", [2, "batch", hs])],
              inits=[init("w", w), init("r", r), init("b", bias),
                     init("sh", np.array([0, 0, -1], np.int64))], opset=14, producer="pytorch")
    xd = x.astype(np.float64)
    yf, hf, cf = np_lstm_dir(xd, w[0], r[0], bias[0], h0[0], c0[0], False)
    yb, hb, cb = np_lstm_dir(xd, w[1], r[1], bias[1], h0[1], c0[1], True)
    out = np.concatenate([yf, yb], -1)
    return m, {"x": x, "h0": h0, "c0": c0}, [out, np.stack([hf, hb]), np.stack([cf, cb])]


@case
def gru_linear_before_reset():
    """PyTorch nn.GRU as exported: linear_before_reset=1, gates z, r, h,
    batch-first data transposed in and out (Transpose perm [1,0,2]),
    sequence_lens given (all full length); batch 3."""
    s_, b_, e, hs = 4, 3, 3, 4
    w, r = rnd(1, 3 * hs, e, lo=-.6, hi=.6), rnd(1, 3 * hs, hs, lo=-.6, hi=.6)
    bias = rnd(1, 6 * hs, lo=-.5, hi=.5)
    nodes = [helper.make_node("Transpose", ["x"], ["xs"], perm=[1, 0, 2]),
             helper.make_node("GRU", ["xs", "w", "r", "b", "lens"], ["y", "yh"], hidden_size=hs,
                              linear_before_reset=1),
             helper.make_node("Squeeze", ["y", "ax1"], ["ys"]),
             helper.make_node("Transpose", ["ys"], ["out"], perm=[1, 0, 2])]
    x = rnd(b_, s_, e)
    m = model(nodes, [vi("x", ["batch", s_, e]), vi("lens", ["batch"], TensorProto.INT32)],
              [vi("out", ["batch", s_, hs]), vi("yh", [1, "batch", hs])],
              inits=[init("w", w), init("r", r), init("b", bias),
                     init("ax1", np.array([1], np.int64))], opset=13, producer="pytorch")
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    wz, wr, wh = w[0][:hs], w[0][hs:2 * hs], w[0][2 * hs:]
    rz, rr, rh = r[0][:hs], r[0][hs:2 * hs], r[0][2 * hs:]
    wb, rb = bias[0][:3 * hs], bias[0][3 * hs:]
    h = np.zeros((b_, hs))
    ys = []
    for t in range(s_):
        xt = x[:, t].astype(np.float64)
        z = sig(xt @ wz.T + h @ rz.T + wb[:hs] + rb[:hs])
        rg = sig(xt @ wr.T + h @ rr.T + wb[hs:2 * hs] + rb[hs:2 * hs])
        hh = np.tanh(xt @ wh.T + rg * (h @ rh.T + rb[2 * hs:]) + wb[2 * hs:])
        h = (1 - z) * hh + z * h
        ys.append(h)
    return m, {"x": x, "lens": np.full(b_, s_, np.int32)}, [np.stack(ys, 1), h[None]]


@case
def index_and_einsum_idioms():
    """Idioms of TF2ONNX/Paddle/PyTorch exports: Einsum for batched
    products ("bhqd,bhkd->bhqk", "bij,jk->bik"), Gather with a negative
    index (x[:, -1]), ScatterND (index_put), TopK (largest, sorted),
    CumSum exclusive+reverse, Where with broadcasting; batch 2."""
    i64 = TensorProto.INT64
    nodes = [helper.make_node("Einsum", ["q", "k"], ["y1"], equation="bhqd,bhkd->bhqk"),
             helper.make_node("Einsum", ["a", "w"], ["y2"], equation="bij,jk->bik"),
             helper.make_node("Gather", ["a", "neg"], ["y3"], axis=1),
             helper.make_node("ScatterND", ["a", "idx", "upd"], ["y4"]),
             helper.make_node("TopK", ["a", "k2"], ["y5", "y6"], axis=-1),
             helper.make_node("CumSum", ["a", "ax"], ["y7"], exclusive=1, reverse=1),
             helper.make_node("Greater", ["a", "zero"], ["pos"]),
             helper.make_node("Where", ["pos", "a", "row"], ["y8"])]
    q, k = rnd(2, 2, 3, 4), rnd(2, 2, 5, 4)
    a, w = rnd(2, 3, 4), rnd(4, 2)
    idx = np.array([[0, 1], [1, 2]], np.int64)
    upd = rnd(2, 4)
    row = rnd(4)
    m = model(nodes, [vi("q", [2, 2, 3, 4]), vi("k", [2, 2, 5, 4]), vi("a", [2, 3, 4])],
              [vi("y1", [2, 2, 3, 5]), vi("y2", [2, 3, 2]), vi("y3", [2, 4]), vi("y4", [2, 3, 4]),
               vi("y5", [2, 3, 2]), vi("y6", [2, 3, 2], i64), vi("y7", [2, 3, 4]),
               vi("y8", [2, 3, 4])],
              inits=[init("w", w), init("neg", np.array(-1, np.int64)), init("idx", idx),
                     init("upd", upd), init("k2", np.array([2], np.int64)),
                     init("ax", np.array(2, np.int64)), init("zero", np.array(0, np.float32)),
                     init("row", row)], opset=13, producer="tf2onnx")
    f = lambda t: t.astype(np.float64)  # noqa: E731
    y4 = a.copy()
    y4[0, 1] = upd[0]
    y4[1, 2] = upd[1]
    order = np.argsort(-a, -1, kind="stable")[..., :2]
    cs = np.flip(np.cumsum(np.flip(f(a), -1), -1), -1) - a
    return m, {"q": q, "k": k, "a": a}, [
        np.einsum("bhqd,bhkd->bhqk", f(q), f(k)), f(a) @ w, a[:, -1], y4,
        np.take_along_axis(a, order, -1), order.astype(np.int64), cs, np.where(a > 0, a, row)]


@case
def tf_while_growing():
    """A TF2ONNX while loop: no trip count (""), the condition computed in
    the body (Less(i + 1, limit) with limit an outer graph input), a carried
    value that grows every iteration (Concat), a scan output, and a Conv on
    an outer weight inside the body; batch 2."""
    i64 = TensorProto.INT64
    w = rnd(3, 3, 1, 1)
    body = helper.make_graph(
        [helper.make_node("Add", ["i", "one"], ["i1"]),
         helper.make_node("Less", ["i1", "limit"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["if"], to=F),
         helper.make_node("Reshape", ["if", "shp1"], ["i_row"]),
         helper.make_node("Concat", ["acc_in", "i_row"], ["acc_out"], axis=0),
         helper.make_node("Conv", ["img_in", "W"], ["img_out"]),
         helper.make_node("ReduceSum", ["img_out"], ["tot"], keepdims=0)],
        "body", [vi("i", [], i64), vi("cond_in", [], TensorProto.BOOL), vi("acc_in", [None]),
                 vi("img_in", [2, 3, 2, 2])],
        [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [None]),
         vi("img_out", [2, 3, 2, 2]), vi("tot", [])])
    nodes = [helper.make_node("Loop", ["", "true", "acc0", "img"], ["acc", "imgN", "tots"],
                              body=body)]
    img = rnd(2, 3, 2, 2)
    m = model(nodes, [vi("img", [2, 3, 2, 2]), vi("limit", [], i64)],
              [vi("acc", [None]), vi("imgN", [2, 3, 2, 2]), vi("tots", [None])],
              inits=[init("W", w), init("one", np.array(1, np.int64)),
                     init("true", np.array(True)), init("acc0", np.zeros(1, np.float32)),
                     init("shp1", np.array([1], np.int64))], opset=13, producer="tf2onnx")
    cur, tots = img.astype(np.float64), []
    for _ in range(4):
        cur = np_conv(cur, w)
        tots.append(cur.sum())
    return m, {"img": img, "limit": np.array(4, np.int64)}, [
        np.array([0, 0, 1, 2, 3], np.float32), cur, np.array(tots, np.float32)]


# ---------------------------------------------------------------- malformed
def malformed(tmp):
    """(name, path, expected exit codes) for broken files."""
    out = []

    def save(name, m):
        p = os.path.join(tmp, name + ".onnx")
        with open(p, "wb") as f:
            f.write(m.SerializeToString() if not isinstance(m, bytes) else m)
        return p

    base, _, _ = CASES["pt1_conv_bn_const_b2"]()
    raw = base.SerializeToString()
    out.append(("truncated", save("truncated", raw[:len(raw) * 2 // 3]), (1,)))
    m = onnx.ModelProto()
    m.CopyFrom(base)
    m.graph.node[-1].input[0] = "nothing_here"
    out.append(("dangling_input", save("dangling_input", m), (1,)))
    m = onnx.ModelProto()
    m.CopyFrom(base)
    m.graph.input[0].type.tensor_type.shape.dim[2].dim_value = -3
    out.append(("negative_dim", save("negative_dim", m), (1, 2)))
    m = onnx.ModelProto()
    m.CopyFrom(base)
    m.graph.input[0].type.tensor_type.shape.dim[2].dim_value = 1 << 40
    out.append(("huge_dim", save("huge_dim", m), (1, 2)))
    m, _, _ = _if_model()
    m.graph.node[0].attribute.pop(1)   # else_branch
    out.append(("if_no_else", save("if_no_else", m), (1,)))
    m, _, _ = _loop_model(False)
    body = m.graph.node[0].attribute[0].g
    del body.input[0]                   # body without the iteration number
    out.append(("loop_bad_body", save("loop_bad_body", m), (1,)))
    m = onnx.ModelProto()
    m.CopyFrom(base)
    for n in m.graph.node:
        if n.op_type == "Constant":
            del n.attribute[:]
            break
    out.append(("constant_no_value", save("constant_no_value", m), (1,)))
    f = helper.make_function("pkg.torch", "Rec", ["a"], ["b"],
                             [helper.make_node("Rec", ["a"], ["b"], domain="pkg.torch")],
                             [helper.make_opsetid("", 17), helper.make_opsetid("pkg.torch", 1)])
    g = helper.make_graph([helper.make_node("Rec", ["x"], ["y"], domain="pkg.torch")], "g",
                          [vi("x", [2])], [vi("y", [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("pkg.torch", 1)], functions=[f])
    m.ir_version = 8
    out.append(("recursive_function", save("recursive_function", m), (1,)))
    return out


# ---------------------------------------------------------------- writing
EXTERNAL = {"external_data_weights"}   # saved with save_as_external_data
# Cases ONNX Runtime cannot judge, with the reason printed instead.
NO_ORT = {"initializer_overridden": "onnxruntime-node drops feeds for initializers that are "
          "graph inputs (its inputNames omit them), so it runs the stored values"}


def write_case(name, folder):
    """Writes case `name`; its numbers depend on its name only (seeded
    here), so a case run alone reproduces the one in a full run."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(name.encode()))
    m, feeds, refs = CASES[name]()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    if name in EXTERNAL:
        onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.weights", size_threshold=64)
    else:
        onnx.save_model(m, path)
    return path, write_inputs(folder, feeds), feeds, refs, m


def write_inputs(folder, feeds):
    """Each feed as folder/input_K.pb; [(name, path)] in feed order."""
    ins = []
    for k, (nm, v) in enumerate(feeds.items()):
        p = os.path.join(folder, f"input_{k}.pb")
        with open(p, "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(v), nm).SerializeToString())
        ins.append((nm, p))
    return ins


if __name__ == "__main__":
    d = sys.argv[1]
    for nm in CASES:
        write_case(nm, os.path.join(d, nm))
        print(nm)
