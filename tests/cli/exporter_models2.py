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
from onnx import TensorProto, helper

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
MACS = {}        # case -> MACs `info --json` must report (docs/COST.md's rule)
MACS_DIMS = {}   # case -> ([--dim/--shape args], MACs info --json must report with them)
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
# docs/COST.md weights at batch 2: Norm on 2x3x4 (24 elements) = ReduceMean
# 24 + Sub 24 + Mul 24 + ReduceMean 24 + Add 6 + Sqrt 4*6 + Div 2*24 = 174;
# Halves = Norm 174 + Sigmoid 19*24 + Mul 24; then Norm again. The calls
# were unknown before (no rule for a function call).
MACS_DIMS["dynamo_functions_opset18"] = (["--dim", "batch=2"], 174 + 19 * 24 + 24 + 174)
REFUSE["dynamo_functions_opset18"] = {11: "refers to the calling node's attribute"}


def _scan_body(w):
    """s_out = s_in + x_i; outputs the running sum and x_i * w."""
    return helper.make_graph(
        [helper.make_node("Add", ["s_in", "xi"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["yo"]),
         helper.make_node("Mul", ["xi", "w"], ["zo"])], "body",
        [vi("s_in", [3]), vi("xi", [3])], [vi("s_out", [3]), vi("yo", [3]), vi("zo", [3])])


@case
def scan8_batch_no_lengths():
    """Scan-8 (opset 8, IR 3): a batch axis and no sequence_lens (the
    optional first input ""). Runs; converting to 9+ is refused for the
    batch axis (before: refused as "its first input is missing")."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "xi"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["yo"])], "body",
        [vi("s_in", [3]), vi("xi", [3])], [vi("s_out", [3]), vi("yo", [3])])
    nodes = [helper.make_node("Scan", ["", "s0", "x"], ["sf", "ys"], body=body,
                              num_scan_inputs=1)]
    m = model(nodes, [vi("s0", [2, 3]), vi("x", [2, 4, 3])],
              [vi("sf", [2, 3]), vi("ys", [2, 4, 3])], opset=8, ir=3)
    s0, x = rnd(2, 3), rnd(2, 4, 3)
    ys = s0[:, None, :].astype(np.float64) + np.cumsum(x.astype(np.float64), axis=1)
    return m, {"s0": s0, "x": x}, [ys[:, -1], ys]


REFUSE["scan8_batch_no_lengths"] = {9: "differ in their inputs (batch dim)"}
NO_CONVERT17 = {"scan8_batch_no_lengths"}


def _scan_axes_model(opset):
    w = rnd(3)
    nodes = [helper.make_node("Scan", ["s0", "x"], ["sf", "ys", "zs"], body=_scan_body(w),
                              num_scan_inputs=1, scan_input_axes=[-1 if opset >= 11 else 1],
                              scan_input_directions=[1], scan_output_axes=[0, 1],
                              scan_output_directions=[1, 0])]
    m = model(nodes, [vi("s0", [3]), vi("x", [3, 4])],
              [vi("sf", [3]), vi("ys", [4, 3]), vi("zs", [3, 4])], inits=[init("w", w)],
              opset=opset)
    s0, x = rnd(3), rnd(3, 4)
    xs = x.T[::-1].astype(np.float64)                  # the sequence, reversed
    run = s0.astype(np.float64) + np.cumsum(xs, axis=0)
    return m, {"s0": s0, "x": x}, [run[-1], run[::-1], (xs * w).T]


@case
def scan16_axes_directions():
    """Scan-16 as TF2ONNX writes it: the scan axis last (-1), the input
    read backwards, one output stacked in reverse on axis 0 and one on
    axis 1; converted up to 21 and down to 11 and 9 (negative axes exist
    from 11: at 9 they are made positive; before, -1 stayed)."""
    return _scan_axes_model(16)


CONVERT["scan16_axes_directions"] = (21, 11, 9)


@case
def scan9_axes_directions():
    """The same Scan at opset 9 (positive axes), converted up to 16."""
    return _scan_axes_model(9)


CONVERT["scan9_axes_directions"] = (16,)


def _loop_scan_model():
    body = helper.make_graph(
        [helper.make_node("Add", ["v_in", "x"], ["v_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Mul", ["v_out", "v_out"], ["sc"])], "lb",
        [vi("it", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("v_in", [2])],
        [vi("cond_out", [], TensorProto.BOOL), vi("v_out", [2]), vi("sc", [2])])
    nodes = [helper.make_node("Loop", ["trip", "cond", "v0"], ["vf", "scs"], body=body)]
    return model(nodes, [vi("trip", [], TensorProto.INT64), vi("cond", [], TensorProto.BOOL),
                         vi("v0", [2]), vi("x", [2])],
                 [vi("vf", [2]), vi("scs", ["iters", 2])], opset=13)


def _loop_feeds(trip, cond):
    v0, x = rnd(2), rnd(2)
    n = trip if cond else 0
    vs = [v0.astype(np.float64) + x * (k + 1) for k in range(n)]
    return {"trip": np.array(trip, np.int64), "cond": np.array(cond), "v0": v0, "x": x}, [
        vs[-1] if vs else v0, np.array([v * v for v in vs]).reshape(n, 2)]


@case
def loop_zero_trips():
    """A Loop with scan outputs run zero times (trip count 0): the carried
    value is the initial one and the scan output is [0, 2]."""
    feeds, refs = _loop_feeds(0, True)
    return _loop_scan_model(), feeds, refs


@case
def loop_cond_false():
    """The same Loop with a false initial condition and trip count 5: zero
    iterations too."""
    feeds, refs = _loop_feeds(5, False)
    return _loop_scan_model(), feeds, refs


CONVERT["loop_zero_trips"] = (11, 21)


def _if_shapes(cond):
    then_g = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["o"], axis=0)], "t",
                               [], [vi("o", [4, 3])])
    else_g = helper.make_graph([helper.make_node("Relu", ["x"], ["o"])], "e", [],
                               [vi("o", [2, 3])])
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
             helper.make_node("ReduceSum", ["y"], ["s"], keepdims=0)]
    m = model(nodes, [vi("c", [], TensorProto.BOOL), vi("x", [2, 3])],
              [vi("y", ["rows", 3]), vi("s", [])], opset=13)
    x = rnd(2, 3)
    y = np.concatenate([x, x]) if cond else np.maximum(x, 0)
    return m, {"c": np.array(cond), "x": x}, [y, y.astype(np.float64).sum()]


CASES["if_branch_shapes_then"] = lambda: _if_shapes(True)
CASES["if_branch_shapes_else"] = lambda: _if_shapes(False)


def np_attention(q, k, v, causal=False, mask=None):
    """ONNX Attention on 4-D (B, heads, S, d) inputs, float64: grouped
    query heads share K/V head h // (Hq / Hkv); is_causal keeps the lower
    triangle aligned top-left; a bool mask keeps True."""
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    rep = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    sc = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    s_len, l_len = sc.shape[-2:]
    if causal:
        sc = np.where(np.tril(np.ones((s_len, l_len), bool)), sc, -np.inf)
    if mask is not None:
        sc = np.where(mask, sc, -np.inf)
    e = np.exp(sc - sc.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


@case
def attention23_gqa_causal():
    """The ONNX Attention of opset 23 as optimizers and new exporters
    write it: 4 query heads over 2 key/value heads, causal, S=3 queries
    over L=5 keys. Before, `info` gave it the com.microsoft Attention's
    cost rule (the same op_type), which never applies to Q/K/V inputs:
    MACs were unknown for a fully static model."""
    nodes = [helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1)]
    m = model(nodes, [vi("q", [1, 4, 3, 8]), vi("k", [1, 2, 5, 8]), vi("v", [1, 2, 5, 6])],
              [vi("y", [1, 4, 3, 6])], opset=23, ir=10)
    q, k, v = rnd(1, 4, 3, 8), rnd(1, 2, 5, 8), rnd(1, 2, 5, 6)
    return m, {"q": q, "k": k, "v": v}, [np_attention(q, k, v, causal=True)]


# Q.K^T (B*Hq*S*L*dk) + P.V (B*Hq*S*L*dv), docs/COST.md.
MACS.update({"attention23_gqa_causal": 1 * 4 * 3 * 5 * 8 + 1 * 4 * 3 * 5 * 6})


@case
def attention23_3d_mask():
    """ONNX Attention with 3-D inputs (heads from q_num_heads/kv_num_heads)
    and a boolean mask broadcast over batch and heads."""
    nodes = [helper.make_node("Attention", ["q", "k", "v", "mask"], ["y"], q_num_heads=4,
                              kv_num_heads=2)]
    m = model(nodes, [vi("q", [1, 3, 32]), vi("k", [1, 5, 16]), vi("v", [1, 5, 16]),
                      vi("mask", [3, 5], TensorProto.BOOL)],
              [vi("y", [1, 3, 32])], opset=23, ir=10)
    q, k, v = rnd(1, 3, 32), rnd(1, 5, 16), rnd(1, 5, 16)
    mask = np.array([[1, 0, 1, 1, 0], [1, 1, 1, 0, 0], [0, 0, 1, 1, 1]], bool)

    def heads(t, h):
        return t.reshape(1, t.shape[1], h, -1).transpose(0, 2, 1, 3)
    y = np_attention(heads(q, 4), heads(k, 2), heads(v, 2), mask=mask)
    return m, {"q": q, "k": k, "v": v, "mask": mask}, [y.transpose(0, 2, 1, 3).reshape(1, 3, 32)]


MACS["attention23_3d_mask"] = 1 * 4 * 3 * 5 * 8 * 2


@case
def affinegrid20():
    """AffineGrid (opset 20, spatial transformer networks) for 2-D grids:
    align_corners=0, the size as a Constant value_ints (spox style). Its
    cost was 0, undocumented: now k+1 per output coordinate."""
    nodes = [helper.make_node("Constant", [], ["size"], value_ints=[2, 1, 3, 4]),
             helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=0)]
    m = model(nodes, [vi("theta", [2, 2, 3])], [vi("grid", [2, 3, 4, 2])], opset=20)
    theta = rnd(2, 2, 3)
    xs = (2 * np.arange(4) + 1) / 4 - 1
    ys = (2 * np.arange(3) + 1) / 3 - 1
    base = np.stack([np.tile(xs, (3, 1)), np.tile(ys[:, None], (1, 4)), np.ones((3, 4))], -1)
    return m, {"theta": theta}, [np.einsum("hwk,nck->nhwc", base, theta.astype(np.float64))]


MACS["affinegrid20"] = 2 * 3 * 4 * 2 * 3


@case
def unicode_names():
    """Names as hand-made, Paddle2ONNX and spox models may carry them:
    CJK (two columns wide), an emoji, accents, quotes, spaces, a backslash
    and DOT's special characters, longer than the profile's name column.
    `info --profile` used to cut them mid-code point (invalid UTF-8) and
    pad by bytes; DOT must stay parseable."""
    names = ["ü名前", "卷积层_特征提取_第一阶段_残差块_批归一化_激活函数_输出",
             "émoji😀 naïve café — über-long \"name\" ✓ <b>|{x}</b> that goes on",
             "relu\\n 2"]
    nodes, prev = [], "输入 x"
    for k, nm in enumerate(names):
        out = "y" if k == len(names) - 1 else f"值_{k} \"q\""
        nodes.append(helper.make_node("Relu" if k % 2 else "Neg", [prev], [out], name=nm))
        prev = out
    m = model(nodes, [vi("输入 x", ["批次", 3])], [vi("y", ["批次", 3])], opset=13)
    x = rnd(2, 3)
    return m, {"输入 x": x}, [np.maximum(-np.maximum(-x, 0), 0)]


PROFILE_COLUMNS = {"unicode_names"}   # cases whose info --profile columns are checked


@case
def spox_opset18_constants():
    """spox's style at opset 18: every value named `_v_N`, Constant nodes
    with value_ints / value_floats / value_float / value_int, Identity
    chains, ReduceMean with axes as an input, Split by num_outputs (an
    uneven last chunk), Shape with start/end, CastLike, Pad with an axes
    input and negative axes, ScatterElements with a max reduction,
    ReduceMax with empty axes and noop_with_empty_axes."""
    c = helper.make_node
    nodes = [
        c("Constant", [], ["_v_0"], value_ints=[1]),
        c("Identity", ["_v_0"], ["_v_1"]),
        c("ReduceMean", ["x", "_v_1"], ["_v_2"], keepdims=1),            # [N,1,5]
        c("Constant", [], ["_v_3"], value_floats=[0.5, 2.0, 3.0, 1.0, -1.0]),
        c("Mul", ["_v_2", "_v_3"], ["_v_4"]),
        c("Constant", [], ["_v_5"], value_float=1.5),
        c("Add", ["_v_4", "_v_5"], ["_v_6"]),
        c("Identity", ["_v_6"], ["mean_out"]),
        c("Split", ["x"], ["_v_8", "_v_9", "_v_10"], axis=-1, num_outputs=3),  # 2, 2, 1
        c("Constant", [], ["_v_11"], value_int=3),
        c("CastLike", ["_v_11", "x"], ["_v_12"]),
        c("Mul", ["_v_8", "_v_12"], ["split_out"]),
        c("Shape", ["x"], ["shape_out"], start=1, end=-1),
        c("Constant", [], ["_v_13"], value_ints=[1, 2, 0, 1]),
        c("Constant", [], ["_v_14"], value_ints=[-1, 1]),
        c("Pad", ["_v_9", "_v_13", "_v_5", "_v_14"], ["pad_out"], mode="constant"),
        c("Constant", [], ["_v_15"], value_ints=[]),
        c("ReduceMax", ["_v_10", "_v_15"], ["noop_out"], noop_with_empty_axes=1),
        c("ScatterElements", ["x", "idx", "upd"], ["scatter_out"], axis=-1, reduction="max"),
    ]
    m = model(nodes, [vi("x", ["N", 4, 5]), vi("idx", ["N", 4, 2], TensorProto.INT64),
                      vi("upd", ["N", 4, 2])],
              [vi("mean_out", ["N", 1, 5]), vi("split_out", ["N", 4, 2]),
               vi("shape_out", [1], TensorProto.INT64), vi("pad_out", ["N", 5, 3]),
               vi("noop_out", ["N", 4, 1]), vi("scatter_out", ["N", 4, 5])], opset=18)
    x = rnd(2, 4, 5)
    idx = RNG.integers(-5, 5, size=(2, 4, 2)).astype(np.int64)
    upd = rnd(2, 4, 2)
    x64 = x.astype(np.float64)
    sc = x64.copy()
    for b in range(2):
        for i in range(4):
            for j in range(2):
                k = idx[b, i, j] % 5
                sc[b, i, k] = max(sc[b, i, k], upd[b, i, j])
    pad = np.pad(x64[..., 2:4], ((0, 0), (2, 1), (1, 0)), constant_values=1.5)
    return m, {"x": x, "idx": idx, "upd": upd}, [
        x64.mean(1, keepdims=True) * np.array([0.5, 2, 3, 1, -1]) + 1.5, x64[..., :2] * 3,
        np.array([4], np.int64), pad, x64[..., 4:], sc]


CONVERT["spox_opset18_constants"] = (21,)
REFUSE["spox_opset18_constants"] = {17: "needs opset 18"}


@case
def groupnorm_col2im_opset18():
    """GroupNormalization-18 (scale and bias per group) and Col2Im (opset
    18), both written by torch's dynamo exporter. Converting to 21 needs
    per-channel scale: refused with the reason when it is an input."""
    c = helper.make_node
    nodes = [c("GroupNormalization", ["x", "s", "b"], ["gn"], num_groups=2, epsilon=1e-5),
             c("Constant", [], ["isz"], value_ints=[5, 5]),
             c("Constant", [], ["bs"], value_ints=[2, 2]),
             c("Col2Im", ["cols", "isz", "bs"], ["img"], strides=[1, 1])]
    m = model(nodes, [vi("x", [2, 4, 3, 3]), vi("s", [2]), vi("b", [2]), vi("cols", [1, 8, 16])],
              [vi("gn", [2, 4, 3, 3]), vi("img", [1, 2, 5, 5])], opset=18)
    x, sc, bi, cols = rnd(2, 4, 3, 3), rnd(2), rnd(2), rnd(1, 8, 16)
    g = x.astype(np.float64).reshape(2, 2, -1)
    g = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)
    gn = (g * sc[None, :, None] + bi[None, :, None]).reshape(2, 4, 3, 3)
    img = np.zeros((1, 2, 5, 5))
    blocks = cols.astype(np.float64).reshape(1, 2, 2, 2, 4, 4)   # C, kh, kw, oh, ow
    for i in range(2):
        for j in range(2):
            img[:, :, i:i + 4, j:j + 4] += blocks[:, :, i, j]
    return m, {"x": x, "s": sc, "b": bi, "cols": cols}, [gn, img]


REFUSE["groupnorm_col2im_opset18"] = {21: "per group to per channel",
                                      17: "introduced in opset 18"}


@case
def empty_batch_dynamic():
    """A batch of 0 (a valid, empty input) through Conv, Relu, ReduceSum
    with axes, Flatten, MatMul, a Concat on the batch axis and Softmax, the
    batch a symbolic dim; plus MatMul/Gemm with an inner dim of 0 (zeros,
    and Gemm's C)."""
    c = helper.make_node
    w, mm, cc = rnd(4, 2, 3, 3), rnd(36, 5), rnd(3)
    nodes = [c("Conv", ["x", "w"], ["cv"], pads=[1, 1, 1, 1]), c("Relu", ["cv"], ["r"]),
             c("ReduceSum", ["r", "ax"], ["rs"], keepdims=1), c("Flatten", ["r"], ["f"]),
             c("MatMul", ["f", "mm"], ["m1"]), c("Concat", ["m1", "m1"], ["cat"], axis=0),
             c("Softmax", ["cat"], ["sm"], axis=-1),
             c("MatMul", ["a", "b"], ["k0"]), c("Gemm", ["a", "b", "cc"], ["g0"])]
    m = model(nodes, [vi("x", ["N", 2, 3, 3]), vi("a", [2, "K"]), vi("b", ["K", 3])],
              [vi("rs", ["N", 1, 1, 3]), vi("sm", ["M", 5]), vi("k0", [2, 3]), vi("g0", [2, 3])],
              inits=[init("w", w), init("ax", np.array([1, 2], np.int64)), init("mm", mm),
                     init("cc", cc)], opset=13)
    return m, {"x": np.zeros((0, 2, 3, 3), np.float32), "a": np.zeros((2, 0), np.float32),
               "b": np.zeros((0, 3), np.float32)}, [
        np.zeros((0, 1, 1, 3)), np.zeros((0, 5)), np.zeros((2, 3)), np.tile(cc, (2, 1))]


@case
def int32_indices_negative_axes():
    """int32 indices and negative axes everywhere (TF2ONNX keeps int32):
    Gather with negative indices, GatherElements, Slice with int32
    starts/ends/axes/steps (INT32_MAX / INT32_MIN ends, negative steps),
    TopK largest=0 on axis -1, OneHot with int32 indices and axis -1,
    exclusive reverse CumSum with an int32 axis, a scalar Expand."""
    c = helper.make_node
    i32 = TensorProto.INT32
    nodes = [c("Gather", ["x", "gi"], ["g"], axis=-1),
             c("GatherElements", ["x", "ge"], ["e"], axis=-2),
             c("Slice", ["x", "st", "en", "sa", "sp"], ["sl"]),
             c("TopK", ["x", "k"], ["tv", "ti"], axis=-1, largest=0),
             c("OneHot", ["oi", "od", "ov"], ["oh"], axis=-1),
             c("CumSum", ["x", "ca"], ["cs"], reverse=1, exclusive=1),
             c("Expand", ["s", "sh"], ["ex"])]
    m = model(nodes, [vi("x", [5, 6]), vi("gi", [2, 2], i32), vi("ge", [2, 6], i32),
                      vi("oi", [3], i32), vi("s", [])],
              [vi("g", [5, 2, 2]), vi("e", [2, 6]), vi("sl", [2, 2]), vi("tv", [5, 2]),
               vi("ti", [5, 2], TensorProto.INT64), vi("oh", [3, 4]), vi("cs", [5, 6]),
               vi("ex", [2, 1, 3])],
              inits=[init("st", np.array([-1, 2 ** 31 - 1], np.int32)),
                     init("en", np.array([-2 ** 31, -7], np.int32)),
                     init("sa", np.array([0, -1], np.int32)),
                     init("sp", np.array([-3, -4], np.int32)),
                     init("k", np.array([2], np.int64)), init("od", np.array(4, np.int32)),
                     init("ov", np.array([0.5, 2], np.float32)),
                     init("ca", np.array(-1, np.int32)),
                     init("sh", np.array([2, 1, 3], np.int64))], opset=13)
    x = rnd(5, 6)
    gi = np.array([[-1, 0], [2, -6]], np.int32)
    ge = RNG.integers(-5, 5, size=(2, 6)).astype(np.int32)
    oi = np.array([1, -1, 3], np.int32)
    srt = np.argsort(x, axis=-1, kind="stable")[:, :2]
    csum = np.flip(np.cumsum(np.flip(x.astype(np.float64), -1), -1), -1) - x
    oh = np.full((3, 4), 0.5)
    for r_, v in enumerate(oi):
        oh[r_, v % 4] = 2
    return m, {"x": x, "gi": gi, "ge": ge, "oi": oi, "s": np.array(3.0, np.float32)}, [
        x[:, gi % 6], np.take_along_axis(x, ge % 5, 0), x[-1::-3, -1::-4],
        np.take_along_axis(x, srt, -1), srt.astype(np.int64), oh, csum, np.full((2, 1, 3), 3.0)]


@case
def function_opset17_in_model18():
    """A local function importing opset 17 in an opset-18 model (a library
    of onnxscript functions written for 17): Relu, ReduceSum (axes input)
    and Add have the same definitions at 17 and 18, so ONNX's checker
    accepts it and it must run (it was refused: "function Blk imports
    opset 17 of the default domain, the model 18")."""
    o = [helper.make_opsetid("", 17), helper.make_opsetid("pkg", 1)]
    f = helper.make_function("pkg", "Blk", ["x"], ["y"], [
        helper.make_node("Constant", [], ["ax"], value_ints=[-1]),
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("ReduceSum", ["r", "ax"], ["s"], keepdims=1),
        helper.make_node("Add", ["r", "s"], ["y"])], o)
    g = helper.make_graph([helper.make_node("Blk", ["x"], ["y"], domain="pkg")], "g",
                          [vi("x", [2, 3])], [vi("y", [2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), o[1]], functions=[f])
    m.ir_version = 8
    x = rnd(2, 3)
    r = np.maximum(x.astype(np.float64), 0)
    return m, {"x": x}, [r + r.sum(-1, keepdims=True)]


def write_case(name, folder):
    """As exporter_models.write_case, for this file's cases."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(name.encode()))
    m, feeds, refs = CASES[name]()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    onnx.save_model(m, path)
    return path, EM.write_inputs(folder, feeds), feeds, refs, m


if __name__ == "__main__":
    d = sys.argv[1]
    for nm in CASES:
        write_case(nm, os.path.join(d, nm))
        print(nm)
