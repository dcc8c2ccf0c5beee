#!/usr/bin/env python3
"""Builds, for every optimization pass, the smallest model where it fires, runs
`onnxscope optimize --passes NAME` on it, checks the pass rewrote something, and
renders the before/after diff as docs/images/pass-NAME.svg.

Usage (from anywhere): tools/pass_examples.py [--check] [--bin PATH] [PASS...]
  --check  only verify that every pass fires on its example (no images)
Exit 0 on success, 1 when a pass does not fire or a run fails, 77 (meson's
skip) when python3's onnx module is missing.
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import helper as H, numpy_helper, TensorProto as T
except ImportError as e:  # the test must skip, not fail, without onnx
    print("pass_examples: skipped: python3 onnx/numpy missing (%s)" % e)
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
F = T.FLOAT


def c(name, arr, dtype=np.float32):
    return numpy_helper.from_array(np.array(arr, dtype=dtype), name)


def model(nodes, inputs, outputs, inits=(), opset=13, ms=False):
    """inputs/outputs: (name, shape[, elem_type]) tuples."""
    vi = lambda t: H.make_tensor_value_info(t[0], t[2] if len(t) > 2 else F, t[1])
    g = H.make_graph(nodes, "example", [vi(t) for t in inputs],
                     [vi(t) for t in outputs], list(inits))
    ops = [H.make_opsetid("", opset)]
    if ms:
        ops.append(H.make_opsetid("com.microsoft", 1))
    m = H.make_model(g, opset_imports=ops, producer_name="pass_examples")
    m.ir_version = 8
    return m


N = H.make_node
R = np.random.RandomState(0)


def rnd(*shape):
    return R.rand(*shape).astype(np.float32) + 0.5


def bn_inits(p, n):
    return [c(p + "s", rnd(n)), c(p + "b", rnd(n)), c(p + "m", rnd(n)), c(p + "v", rnd(n))]


def bn(x, y, p):
    return N("BatchNormalization", [x, p + "s", p + "b", p + "m", p + "v"], [y])


def layernorm_pattern(x, y, d, opset_eps="eps"):
    """The decomposed LayerNorm over the last axis, with scale and bias."""
    return [
        N("ReduceMean", [x], ["mu"], axes=[-1]),
        N("Sub", [x, "mu"], ["xc"]),
        N("Pow", ["xc", "two"], ["sq"]),
        N("ReduceMean", ["sq"], ["var"], axes=[-1]),
        N("Add", ["var", opset_eps], ["ve"]),
        N("Sqrt", ["ve"], ["sd"]),
        N("Div", ["xc", "sd"], ["n"]),
        N("Mul", ["n", "gamma"], ["ns"]),
        N("Add", ["ns", "beta"], [y]),
    ], [c("two", 2.0), c("eps", 1e-5), c("gamma", rnd(d)), c("beta", rnd(d))]


def gelu_pattern(x, y):
    return [
        N("Div", [x, "sqrt2"], ["xd"]),
        N("Erf", ["xd"], ["e"]),
        N("Add", ["e", "one"], ["e1"]),
        N("Mul", [x, "e1"], ["xe"]),
        N("Mul", ["xe", "half"], [y]),
    ], [c("sqrt2", 1.4142135), c("one", 1.0), c("half", 0.5)]


def ex_constant_to_initializer():
    return model([N("Constant", [], ["k"], value=c("v", [1.0, 2.0])),
                  N("Add", ["x", "k"], ["y"])], [("x", [2])], [("y", [2])])


def ex_fold_shape_chains():
    return model([N("Shape", ["x"], ["s"]),
                  N("Reshape", ["x", "s"], ["y"])], [("x", [2, 3])], [("y", [2, 3])])


def ex_constant_folding():
    return model([N("Add", ["a", "b"], ["k"]), N("Mul", ["x", "k"], ["y"])],
                 [("x", [2])], [("y", [2])], [c("a", [1.0, 2.0]), c("b", [3.0, 4.0])])


def ex_eliminate_identity():
    return model([N("Identity", ["x"], ["i"]), N("Relu", ["i"], ["y"])],
                 [("x", [2])], [("y", [2])])


def ex_eliminate_dropout():
    return model([N("Dropout", ["x"], ["d"]), N("Relu", ["d"], ["y"])],
                 [("x", [2])], [("y", [2])])


def ex_eliminate_noop():
    return model([N("Transpose", ["x"], ["t"], perm=[0, 1]), N("Relu", ["t"], ["y"])],
                 [("x", [2, 3])], [("y", [2, 3])])


def ex_eliminate_monotone_argmax():
    return model([N("Exp", ["x"], ["e"]), N("ArgMax", ["e"], ["y"], axis=1)],
                 [("x", [2, 3])], [("y", [2, 1], T.INT64)])


def ex_inline_constant_if():
    then = H.make_graph([N("Relu", ["x"], ["ty"])], "then", [],
                        [H.make_tensor_value_info("ty", F, [2])])
    els = H.make_graph([N("Neg", ["x"], ["ey"])], "else", [],
                       [H.make_tensor_value_info("ey", F, [2])])
    return model([N("If", ["cond"], ["y"], then_branch=then, else_branch=els)],
                 [("x", [2])], [("y", [2])], [c("cond", True, np.bool_)])


def ex_fuse_transposes():
    return model([N("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
                  N("Transpose", ["t"], ["y"], perm=[0, 2, 1])],
                 [("x", [2, 3, 4])], [("y", [3, 4, 2])])


def ex_fuse_reshapes():
    return model([N("Reshape", ["x", "s1"], ["r"]), N("Reshape", ["r", "s2"], ["y"])],
                 [("x", [2, 6])], [("y", [3, 4])],
                 [c("s1", [12], np.int64), c("s2", [3, 4], np.int64)])


def ex_fuse_concats():
    return model([N("Concat", ["a", "b"], ["ab"], axis=0),
                  N("Concat", ["ab", "d"], ["y"], axis=0)],
                 [("a", [1]), ("b", [1]), ("d", [1])], [("y", [3])])


def ex_fuse_casts():
    return model([N("Cast", ["x"], ["d"], to=T.DOUBLE), N("Cast", ["d"], ["y"], to=F)],
                 [("x", [2])], [("y", [2])])


def ex_fuse_log_softmax():
    return model([N("Softmax", ["x"], ["s"], axis=-1), N("Log", ["s"], ["y"])],
                 [("x", [2, 3])], [("y", [2, 3])])


def ex_fuse_reduce_unsqueeze():
    return model([N("ReduceSum", ["x", "ax"], ["r"], keepdims=0),
                  N("Unsqueeze", ["r", "ax"], ["y"])],
                 [("x", [2, 3])], [("y", [2, 1])], [c("ax", [1], np.int64)])


def ex_fuse_squeezes():
    return model([N("Unsqueeze", ["x", "a0"], ["u"]), N("Unsqueeze", ["u", "a1"], ["y"])],
                 [("x", [2])], [("y", [1, 1, 2])],
                 [c("a0", [0], np.int64), c("a1", [0], np.int64)])


def ex_fuse_slices():
    return model([N("Slice", ["x", "s0", "e0", "x0"], ["s"]),
                  N("Slice", ["s", "s1", "e1", "x1"], ["y"])],
                 [("x", [4, 4])], [("y", [2, 2])],
                 [c("s0", [1], np.int64), c("e0", [3], np.int64), c("x0", [0], np.int64),
                  c("s1", [0], np.int64), c("e1", [2], np.int64), c("x1", [1], np.int64)])


def ex_fuse_reshape_shape():
    return model([N("Shape", ["x"], ["s"]),
                  N("Gather", ["s", "i0"], ["d0"], axis=0),
                  N("Concat", ["d0", "m1"], ["shp"], axis=0),
                  N("Reshape", ["x", "shp"], ["y"])],
                 [("x", ["N", 2, 3])], [("y", ["N", 6])],
                 [c("i0", [0], np.int64), c("m1", [-1], np.int64)])


def ex_fuse_layernorm():
    nodes, inits = layernorm_pattern("x", "y", 4)
    return model(nodes, [("x", [2, 4])], [("y", [2, 4])], inits, opset=17)


def ex_fuse_rmsnorm():
    return model([N("Mul", ["x", "x"], ["sq"]),
                  N("ReduceMean", ["sq"], ["ms"], axes=[-1]),
                  N("Add", ["ms", "eps"], ["me"]),
                  N("Sqrt", ["me"], ["rt"]),
                  N("Div", ["x", "rt"], ["n"]),
                  N("Mul", ["n", "gamma"], ["y"])],
                 [("x", [2, 4])], [("y", [2, 4])],
                 [c("eps", 1e-6), c("gamma", rnd(4))], opset=23)


def ex_fuse_rmsnorm_ort():
    m = ex_fuse_rmsnorm()
    m.opset_import[0].version = 13
    return m


def ex_residual_sum():
    return model([N("Add", ["x", "r"], ["s"]),
                  N("LayerNormalization", ["s", "gamma", "beta"], ["y"], axis=-1)],
                 [("x", [1, 3, 4]), ("r", [1, 3, 4])], [("y", [1, 3, 4])],
                 [c("gamma", rnd(4)), c("beta", rnd(4))], opset=17)


def ex_fuse_norm_cast():
    return model([N("Cast", ["x"], ["xf"], to=F),
                  N("LayerNormalization", ["xf", "gamma", "beta"], ["n"], axis=-1),
                  N("Cast", ["n"], ["y"], to=T.FLOAT16)],
                 [("x", [2, 4], T.FLOAT16)], [("y", [2, 4], T.FLOAT16)],
                 [c("gamma", rnd(4)), c("beta", rnd(4))], opset=17)


def ex_fuse_embed_layernorm():
    return model([N("Gather", ["word", "ids"], ["we"]),
                  N("Gather", ["pos", "pidx"], ["pe"]),
                  N("Add", ["we", "pe"], ["e"]),
                  N("LayerNormalization", ["e", "gamma", "beta"], ["y"], axis=-1)],
                 [("ids", [1, 3], T.INT64)], [("y", [1, 3, 4])],
                 [c("word", rnd(10, 4)), c("pos", rnd(3, 4)),
                  c("pidx", [[0, 1, 2]], np.int64), c("gamma", rnd(4)), c("beta", rnd(4))],
                 opset=17)


def ex_fuse_skip_layernorm():
    return model([N("Add", ["x", "r"], ["s"]),
                  N("LayerNormalization", ["s", "gamma", "beta"], ["y"], axis=-1)],
                 [("x", [1, 3, 4]), ("r", [1, 3, 4])], [("y", [1, 3, 4])],
                 [c("gamma", rnd(4)), c("beta", rnd(4))], opset=17)


def ex_fuse_gelu():
    nodes, inits = gelu_pattern("x", "y")
    return model(nodes, [("x", [2, 4])], [("y", [2, 4])], inits, opset=20)


def ex_fuse_bias_gelu():
    return model([N("Add", ["x", "bias"], ["b"]),
                  N("Gelu", ["b"], ["y"], domain="com.microsoft")],
                 [("x", [2, 4])], [("y", [2, 4])], [c("bias", rnd(4))], ms=True)


def attention_block(opset, mask=False):
    """BERT-form self-attention: Q/K/V projections, head split, scaled QK^T,
    Softmax, V, head merge. hidden 4, 2 heads of 2, sequence 3."""
    hd = 4
    nodes, inits = [], [c("shp", [1, 3, 2, 2], np.int64), c("mshp", [1, 3, 4], np.int64),
                        c("scale", 1 / np.sqrt(2.0))]
    for p in "qkv":
        nodes += [N("MatMul", ["x", "W" + p], [p + "m"]),
                  N("Add", [p + "m", "B" + p], [p + "a"]),
                  N("Reshape", [p + "a", "shp"], [p + "r"]),
                  N("Transpose", [p + "r"], [p + "t"],
                    perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3])]
        inits += [c("W" + p, rnd(hd, hd)), c("B" + p, rnd(hd))]
    nodes += [N("MatMul", ["qt", "kt"], ["qk"]),
              N("Mul", ["qk", "scale"], ["qks"]),
              N("Softmax", ["qks"], ["p"], axis=-1),
              N("MatMul", ["p", "vt"], ["ctx"]),
              N("Transpose", ["ctx"], ["ct"], perm=[0, 2, 1, 3]),
              N("Reshape", ["ct", "mshp"], ["y"])]
    return model(nodes, [("x", [1, 3, hd])], [("y", [1, 3, hd])], inits, opset=opset)


def ex_fuse_attention():
    return attention_block(13)


def ex_fuse_multihead_attention():
    m = attention_block(13)
    # Cross-attention: K and V project a second input.
    for n in m.graph.node:
        if n.op_type == "MatMul" and n.input[1] in ("Wk", "Wv"):
            n.input[0] = "mem"
    m.graph.input.append(H.make_tensor_value_info("mem", F, [1, 3, 4]))
    return m


def ex_fuse_attention_onnx():
    return attention_block(23)


def ex_fuse_matmul_add():
    return model([N("MatMul", ["x", "W"], ["m"]), N("Add", ["m", "b"], ["y"])],
                 [("x", [2, 3])], [("y", [2, 4])], [c("W", rnd(3, 4)), c("b", rnd(4))])


def ex_fuse_matmul_bn():
    return model([N("MatMul", ["x", "W"], ["m"]), bn("m", "y", "bn")],
                 [("x", [2, 3])], [("y", [2, 4])], [c("W", rnd(3, 4))] + bn_inits("bn", 4))


def ex_fuse_bn_matmul():
    return model([bn("x", "b", "bn"), N("MatMul", ["b", "W"], ["y"])],
                 [("x", [2, 3])], [("y", [2, 4])], [c("W", rnd(3, 4))] + bn_inits("bn", 3))


def ex_fuse_transpose_gemm():
    return model([N("Transpose", ["x"], ["t"], perm=[1, 0]), N("MatMul", ["t", "W"], ["y"])],
                 [("x", [3, 2])], [("y", [2, 4])], [c("W", rnd(3, 4))])


def ex_fuse_matmul_scale():
    return model([N("MatMul", ["x", "W"], ["m"]), N("Mul", ["m", "s"], ["y"])],
                 [("x", [2, 3])], [("y", [2, 4])], [c("W", rnd(3, 4)), c("s", 0.5)])


def ex_fuse_token_transpose_gemm():
    return model([N("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
                  N("Reshape", ["xt", "flat"], ["r1"]),
                  N("Gemm", ["r1", "w", "c"], ["g"], transB=1),
                  N("Reshape", ["g", "back"], ["r2"]),
                  N("Transpose", ["r2"], ["y"], perm=[1, 0, 2])],
                 [("x", [2, 3, 4])], [("y", [2, 3, 4])],
                 [c("flat", [-1, 4], np.int64), c("w", rnd(4, 4)), c("c", rnd(4)),
                  c("back", [3, 2, 4], np.int64)])


def ex_fuse_transpose_matmul():
    return model([N("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
                  N("MatMul", ["t", "w"], ["y"])],
                 [("x", [2, 3, 4]), ("w", [2, 3, 5])], [("y", [2, 4, 5])])


def conv(x, y, **kw):
    return N("Conv", [x, "W", "B"], [y], **kw)


CONV_INITS = [c("W", rnd(2, 2, 1, 1)), c("B", rnd(2))]
X4 = [("x", [1, 2, 3, 3])]
Y4 = [("y", [1, 2, 3, 3])]


def ex_fuse_conv_bn():
    return model([conv("x", "c"), bn("c", "y", "bn")], X4, Y4, CONV_INITS + bn_inits("bn", 2))


def ex_fuse_conv_add():
    return model([conv("x", "c"), N("Add", ["c", "a"], ["y"])], X4, Y4,
                 CONV_INITS + [c("a", rnd(1, 2, 1, 1))])


def ex_fuse_conv_mul():
    return model([conv("x", "c"), N("Mul", ["c", "a"], ["y"])], X4, Y4,
                 CONV_INITS + [c("a", rnd(1, 2, 1, 1))])


def ex_fuse_pad_conv():
    return model([N("Pad", ["x", "pads"], ["p"]),
                  N("Conv", ["p", "W3", "B"], ["y"])], X4, Y4,
                 [c("pads", [0, 0, 1, 1, 0, 0, 1, 1], np.int64), c("W3", rnd(2, 2, 3, 3)),
                  CONV_INITS[1]])


def ex_fuse_bn_conv():
    return model([bn("x", "b", "bn"), conv("b", "y")], X4, Y4, CONV_INITS + bn_inits("bn", 2))


def ex_fuse_bn_mul_add():
    return model([bn("x", "y", "bn")], X4, Y4, bn_inits("bn", 2))


def ex_fuse_relu_clip():
    return model([N("Relu", ["x"], ["r"]), N("Clip", ["r", "lo", "hi"], ["y"])],
                 [("x", [2])], [("y", [2])], [c("lo", -1.0), c("hi", 6.0)])


def relu6_over_6(x, y):
    return [N("Add", [x, "three"], ["a"]),
            N("Clip", ["a", "zero", "six"], ["cl"]),
            N("Div", ["cl", "six"], [y])], [c("three", 3.0), c("zero", 0.0), c("six", 6.0)]


def ex_fuse_hardsigmoid():
    nodes, inits = relu6_over_6("x", "y")
    return model(nodes, [("x", [2])], [("y", [2])], inits)


def ex_fuse_hardswish():
    nodes, inits = relu6_over_6("x", "hs")
    return model(nodes + [N("Mul", ["x", "hs"], ["y"])], [("x", [2])], [("y", [2])], inits,
                 opset=14)


def silu(opset):
    return model([N("Sigmoid", ["x"], ["s"]), N("Mul", ["x", "s"], ["y"])],
                 [("x", [2])], [("y", [2])], opset=opset)


def ex_fuse_silu():
    return silu(24)


def ex_fuse_silu_ort():
    return silu(13)


def ex_fuse_conv_act():
    return model([conv("x", "c"), N("Relu", ["c"], ["y"])], X4, Y4, CONV_INITS)


def ex_fuse_conv_add_act():
    return model([conv("x", "c"), N("Add", ["c", "z"], ["a"]), N("Relu", ["a"], ["y"])],
                 X4 + [("z", [1, 2, 3, 3])], Y4, CONV_INITS)


def ex_fuse_gemm_act():
    return model([N("Gemm", ["x", "W", "b"], ["g"]), N("Relu", ["g"], ["y"])],
                 [("x", [2, 3])], [("y", [2, 4])], [c("W", rnd(3, 4)), c("b", rnd(4))])


def ex_quantize_dynamic():
    # 64x64 = 4096 weight elements: the default --quant-min-elems.
    return model([N("MatMul", ["x", "W"], ["y"])],
                 [("x", [2, 64])], [("y", [2, 64])], [c("W", rnd(64, 64))])


def ex_cse():
    return model([N("Relu", ["x"], ["a"]), N("Relu", ["x"], ["b"]),
                  N("Add", ["a", "b"], ["y"])], [("x", [2])], [("y", [2])])


def ex_dedup_initializers():
    return model([N("Add", ["x", "k1"], ["a"]), N("Mul", ["a", "k2"], ["y"])],
                 [("x", [2])], [("y", [2])], [c("k1", [1.0, 2.0]), c("k2", [1.0, 2.0])])


def ex_dce():
    return model([N("Relu", ["x"], ["y"]), N("Neg", ["x"], ["unused"])],
                 [("x", [2])], [("y", [2])])


def ex_remove_unused_initializers():
    return model([N("Add", ["x", "k"], ["y"])], [("x", [2])], [("y", [2])],
                 [c("k", [1.0, 2.0]), c("stale", [3.0, 4.0])])


def ex_unique_node_names():
    m = model([N("Relu", ["x"], ["a"]), N("Neg", ["a"], ["y"])], [("x", [2])], [("y", [2])])
    m.graph.node[0].name = "n"
    m.graph.node[1].name = "n"
    return m


def ex_to_fp16():
    # MatMul and Relu run in float16; Max (default block list) stays float32
    # between two Casts; Casts after the input and before the output.
    return model([N("MatMul", ["x", "W"], ["m"]), N("Max", ["m", "k"], ["b"]),
                  N("Relu", ["b"], ["y"])],
                 [("x", [2, 3])], [("y", [2, 4])], [c("W", rnd(3, 4)), c("k", [0.0])])
def ex_upgrade_opset():
    # Opset 11: ReduceSum's axes are an attribute; at 17 they become input 1.
    r = N("ReduceSum", ["x"], ["y"])
    r.attribute.extend([H.make_attribute("axes", [1])])
    return model([r], [("x", [2, 3])], [("y", [2, 1])], opset=11)


def passes(binary):
    out = subprocess.run([binary, "passes", "--json"], capture_output=True, text=True,
                         check=True).stdout
    data = json.loads(out)
    return data["passes"] if isinstance(data, dict) else data


def main(argv):
    check = "--check" in argv
    binary = os.environ.get("ONNXSCOPE_BIN", os.path.join(ROOT, "build", "onnxscope"))
    args = [a for a in argv if a != "--check"]
    if len(args) >= 2 and args[0] == "--bin":
        binary, args = args[1], args[2:]
    if not os.access(binary, os.X_OK):
        print("pass_examples: %s not found; build first or pass --bin" % binary,
              file=sys.stderr)
        return 1
    table = passes(binary)
    names = args or [p["name"] for p in table]
    target = {p["name"]: p.get("target", "onnx") for p in table}
    failed = []
    sizes = {}
    imgdir = os.path.join(ROOT, "docs", "images")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            build = globals().get("ex_" + name)
            if build is None:
                failed.append(name)
                print("pass_examples: %s: no example builder" % name, file=sys.stderr)
                continue
            before = os.path.join(tmp, name + ".onnx")
            after = os.path.join(tmp, name + ".opt.onnx")
            onnx.save(build(), before)
            cmd = [binary, "optimize", before, "-o", after, "--passes", name, "--json"]
            if target.get(name) == "ort":
                cmd += ["--target", "ort"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            rewrites = None
            if r.returncode == 0:
                try:
                    rep = json.loads(r.stdout)
                    rewrites = sum(p.get("rewrites", 0) for p in rep.get("passes", [])
                                   if p.get("name") == name)
                except ValueError:
                    pass
            if not rewrites:
                failed.append(name)
                print("pass_examples: %s did not fire on its example (exit %d): %s %s"
                      % (name, r.returncode, r.stderr.strip()[:300],
                         "" if rewrites is not None else r.stdout.strip()[:300]),
                      file=sys.stderr)
                continue
            if check:
                print("ok %s (%d rewrite(s))" % (name, rewrites))
                continue
            svg = os.path.join(imgdir, "pass-%s.svg" % name)
            r = subprocess.run([binary, "dot", before, "--diff", after, "-o", svg],
                               capture_output=True, text=True)
            if r.returncode != 0:
                failed.append(name)
                print("pass_examples: %s: dot failed: %s" % (name, r.stderr.strip()),
                      file=sys.stderr)
                continue
            sizes[name] = os.path.getsize(svg)
            print("%s: %d rewrite(s), %s %d bytes" % (name, rewrites, os.path.relpath(svg, ROOT), sizes[name]))
    if sizes:
        print("total %d bytes in %d image(s), largest %d" % (
            sum(sizes.values()), len(sizes), max(sizes.values())))
    if failed:
        print("pass_examples: FAILED: %s" % ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
