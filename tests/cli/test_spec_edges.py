#!/usr/bin/env python3
"""Models at the edges of the ONNX spec, each judged by what ONNX (the spec
text, onnx 1.12's checker) and ONNX Runtime do, never by onnxscope's own
output:

- negative declared dims (dim_value -1, as some exporters write): onnx's
  checker does not reject them, ONNX Runtime reads them as unknown and runs
  any size there, and writes them back as declared when it saves a model; so
  `check` warns, `info` shows '?' with a note, `run` takes any size and
  `optimize` keeps the declared value (docs/INFERENCE.md);
- Resize-11's roi: required at opsets 11-12 (omitted: refused, as onnx's
  checker and ONNX Runtime refuse it), ignored unless
  coordinate_transformation_mode is tf_crop_and_resize (an empty roi tensor
  runs, as in ONNX Runtime), and there it needs its 2 x rank values (an
  empty one refused, as ONNX Runtime refuses it) (docs/EXECUTOR.md);
- an initializer listed as a graph input (IR >= 4) that a caller overrides:
  a constant list or If condition computed from it follows the fed value,
  before and after optimize, as ONNX Runtime computes it (docs/PASSES.md);

References are numpy computations of the operator's definition; ONNX Runtime
(tests/cli/ort_run.js, NODE_PATH or /tmp/ort/node_modules) is a peer run
when present, skipped with a printed reason otherwise. Exits 77 (skip)
without python3's onnx/numpy. Usage: test_spec_edges.py (ONNXSCOPE_BIN set
by meson)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f"skip: {e}")
    sys.exit(77)

BIN = os.environ["ONNXSCOPE_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
TMP = tempfile.mkdtemp(prefix="oxedges-")
ENV = dict(os.environ, XDG_CACHE_HOME=TMP)
NODE_PATH = os.environ.get("NODE_PATH") or "/tmp/ort/node_modules"
HAVE_ORT = shutil.which("node") is not None and os.path.isdir(
    os.path.join(NODE_PATH, "onnxruntime-node"))
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)
    return cond


def ox(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, env=ENV, timeout=300)


def save(m, name):
    p = os.path.join(TMP, name)
    onnx.save(m, p)
    return p


def tensor_file(name, a):
    p = os.path.join(TMP, f"in_{name}_{abs(hash(a.tobytes())) % 10**8}.pb")
    with open(p, "wb") as f:
        f.write(numpy_helper.from_array(a, name).SerializeToString())
    return p


def run_ours(model, feeds, *extra):
    """onnxscope run: (exit code, [outputs], stderr)."""
    out = tempfile.mkdtemp(dir=TMP)
    args = []
    for k, v in feeds.items():
        args += ["--input", f"{k}={tensor_file(k, v)}"]
    p = ox("run", model, *args, *extra, "--save-outputs", out)
    outs = []
    k = 0
    while os.path.exists(os.path.join(out, f"output_{k}.pb")):
        t = onnx.TensorProto()
        with open(os.path.join(out, f"output_{k}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        outs.append(numpy_helper.to_array(t))
        k += 1
    return p.returncode, outs, p.stderr


def run_ort(model, feeds):
    """ONNX Runtime's outputs, or its error string; None without it."""
    if not HAVE_ORT:
        return None
    files = [tensor_file(k, v) for k, v in feeds.items()]
    p = subprocess.run(["node", os.path.join(HERE, "ort_run.js"), model, *files],
                       capture_output=True, text=True, timeout=300,
                       env=dict(ENV, NODE_PATH=NODE_PATH))
    if p.returncode != 0:
        return f"ort_run.js exit {p.returncode}: {p.stderr.strip()[-300:]}"
    r = json.loads(p.stdout)[model]
    if "error" in r:
        return r["error"]
    return [np.array(v["data"]).reshape(v["dims"]) for v in r["outputs"].values()]


def ort_saved(model):
    """The graph ONNX Runtime writes for model (basic optimizations), or None."""
    if not HAVE_ORT:
        return None
    out = os.path.join(TMP, "ort_" + os.path.basename(model))
    p = subprocess.run(["node", os.path.join(HERE, "..", "..", "tools", "ort_compare.js"), model,
                        out], capture_output=True, text=True, timeout=300,
                       env=dict(ENV, NODE_PATH=NODE_PATH))
    return onnx.load(out) if p.returncode == 0 else None


def close(got, want, what, tol=1e-5):
    got, want = np.asarray(got), np.asarray(want)
    if not check(got.shape == want.shape, f"{what}: shape {got.shape}, want {want.shape}"):
        return
    check(np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol),
          f"{what}: max abs diff {np.max(np.abs(got.astype(np.float64) - want)):.3g}")


def dims_of(vi):
    """[int or str or None] of a ValueInfoProto as written in the file."""
    return [d.dim_value if d.HasField("dim_value") else d.dim_param if d.HasField("dim_param")
            else None for d in vi.type.tensor_type.shape.dim]


def checker(m, full):
    try:
        onnx.checker.check_model(m, full_check=full)
        return None
    except Exception as e:   # onnx raises several kinds
        return str(e).splitlines()[0]


# ---- negative declared dims -------------------------------------------------

def tui_io_panel(path):
    """The TUI's panel 5 shows the dim as '?' with info's note (tmux; skipped
    with a reason without it)."""
    if not shutil.which("tmux"):
        print("note: TUI panel 5 not checked: no tmux")
        return
    sock = f"oxedges-{os.getpid()}"
    tm = ["tmux", "-L", sock]
    try:
        subprocess.run(tm + ["new-session", "-d", "-s", "t", "-x", "140", "-y", "30",
                             f"{BIN} {path}; sleep 60"], check=True, env=ENV, timeout=30)
        screen = ""
        for _ in range(100):   # up to 10 s for the first frame, then panel 5
            subprocess.run(tm + ["send-keys", "-t", "t", "5"], timeout=10)
            time.sleep(0.1)
            screen = subprocess.run(tm + ["capture-pane", "-p", "-t", "t"], capture_output=True,
                                    text=True, timeout=10).stdout
            if "declared -1" in screen:
                break
        rows = [ln for ln in screen.splitlines() if ln.startswith("in ")]
        check(rows and "float32[?,3]" in rows[0] and "(axis 0 declared -1: unknown" in rows[0],
              f"negative dims: TUI panel 5 {rows!r}")
    finally:
        subprocess.run(tm + ["kill-server"], capture_output=True, timeout=10)


def negative_dims():
    print("== negative declared dims", flush=True)
    vi = helper.make_tensor_value_info
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["y"])], "neg",
        [vi("x", TensorProto.FLOAT, [-1, 3])], [vi("y", TensorProto.FLOAT, [-1, 3])],
        value_info=[vi("r", TensorProto.FLOAT, [-1, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    # The facts the behaviour rests on: onnx's checker takes it ...
    check(checker(m, False) is None, f"negative dims: onnx checker refuses: {checker(m, False)}")
    path = save(m, "neg_dims.onnx")
    xs = {n: np.linspace(-1, 1, n * 3, dtype=np.float32).reshape(n, 3) for n in (1, 2, 5)}
    for n, x in xs.items():
        ref = -np.maximum(x, 0)
        # ... and ONNX Runtime runs any size there.
        o = run_ort(path, {"x": x})
        if isinstance(o, str):
            check(False, f"negative dims: ONNX Runtime refuses batch {n}: {o}")
        elif o is not None:
            close(o[0], ref, f"negative dims: ONNX Runtime batch {n}")
        rc, outs, err = run_ours(path, {"x": x})
        if check(rc == 0 and len(outs) == 1, f"negative dims: run batch {n}: exit {rc} {err}"):
            close(outs[0], ref, f"negative dims: run batch {n}")
    # check: a warning per declared dim (input, value_info, output), exit 0.
    p = ox("check", path)
    warns = [ln for ln in p.stderr.splitlines() if "warning" in ln and "-1" in ln]
    check(p.returncode == 0, f"negative dims: check exit {p.returncode}: {p.stderr}")
    check(len(warns) == 3 and all("axis 0" in w and "unknown" in w for w in warns) and
          any("input 'x'" in w for w in warns) and any("output 'y'" in w for w in warns) and
          any("value_info 'r'" in w for w in warns), f"negative dims: check warnings {p.stderr}")
    # info: unknown ('?', JSON null), never 0, 1 or -1, with the note.
    p = ox("info", path)
    line = [ln for ln in p.stdout.splitlines() if ln.strip().startswith("x ")]
    check(p.returncode == 0 and line and "float32[?,3]" in line[0] and "declared -1" in line[0],
          f"negative dims: info line {line} {p.stderr}")
    j = json.loads(ox("info", path, "--json").stdout)
    check(j["inputs"][0]["shape"] == [None, 3] and j["inputs"][0].get("declared_negative_axes") == [0],
          f"negative dims: info --json {j['inputs']}")
    check(j["outputs"][0]["shape"] == [None, 3], f"negative dims: info --json {j['outputs']}")
    # --shape sets the unknown dim like any other.
    j = json.loads(ox("info", path, "--json", "--shape", "x=4x3").stdout)
    check(j["inputs"][0]["shape"] == [4, 3] and "declared_negative_axes" not in j["inputs"][0],
          f"negative dims: info --shape {j['inputs']}")
    # optimize writes the declared value back where the dim is still unknown,
    # as ONNX Runtime's saved model does; a dim --shape fixes is written fixed.
    out = os.path.join(TMP, "neg_dims_opt.onnx")
    p = ox("optimize", path, "-o", out, "--check", "1", "--default-dim", "2")
    if check(p.returncode == 0, f"negative dims: optimize exit {p.returncode}: {p.stderr}"):
        s = onnx.load(out)
        check(dims_of(s.graph.input[0]) == [-1, 3] and dims_of(s.graph.output[0]) == [-1, 3],
              f"negative dims: saved {dims_of(s.graph.input[0])} {dims_of(s.graph.output[0])}")
        ort = ort_saved(path)
        if ort is not None:
            check(dims_of(ort.graph.input[0]) == dims_of(s.graph.input[0]),
                  f"negative dims: ONNX Runtime saves {dims_of(ort.graph.input[0])}")
        o = run_ort(out, {"x": xs[5]})
        if o is not None and not isinstance(o, str):
            close(o[0], -np.maximum(xs[5], 0), "negative dims: optimized, ONNX Runtime batch 5")
        else:
            check(o is None, f"negative dims: ONNX Runtime refuses the optimized model: {o}")
    out = os.path.join(TMP, "neg_dims_fixed.onnx")
    p = ox("optimize", path, "-o", out, "--shape", "x=2x3")
    if check(p.returncode == 0, f"negative dims: optimize --shape exit {p.returncode}: {p.stderr}"):
        s = onnx.load(out)
        check(dims_of(s.graph.input[0]) == [2, 3] and dims_of(s.graph.output[0]) == [2, 3],
              f"negative dims: saved with --shape {dims_of(s.graph.input[0])}")
    tui_io_panel(path)
    # A -3 inside a sequence type, on a graph output: loads, warns, no crash.
    g2 = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["x"], ["s"])], "seq",
        [vi("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_value_info("s", helper.make_sequence_type_proto(
            helper.make_tensor_type_proto(TensorProto.FLOAT, [2, -3])))])
    m2 = helper.make_model(g2, opset_imports=[helper.make_opsetid("", 13)])
    m2.ir_version = 7
    p2 = save(m2, "neg_dims_seq.onnx")
    p = ox("check", p2)
    check(p.returncode == 0 and "output 's' declares dim -3 at axis 1" in p.stderr,
          f"negative dims: sequence output: exit {p.returncode} {p.stderr}")
    for cmd in (["info", p2], ["run", p2, "--random"]):
        p = ox(*cmd)
        check(p.returncode == 0, f"negative dims: {cmd[0]} on a sequence: exit {p.returncode} "
              f"{p.stderr}")


# ---- Resize-11's roi ----------------------------------------------------------

def resize_model(name, opset, roi, ctm, mode="nearest", roi_input=False):
    """Resize of x [1,1,2,2] by scales [1,1,2,2]; roi: a list (an initializer,
    [] an empty one), None (omitted: name ""), or with roi_input a graph
    input."""
    vi = helper.make_tensor_value_info
    inits = [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    ins = [vi("x", TensorProto.FLOAT, [1, 1, 2, 2])]
    if roi_input:
        ins.append(vi("roi", TensorProto.FLOAT, [None]))
    elif roi is not None:
        inits.append(numpy_helper.from_array(np.array(roi, np.float32), "roi"))
    node = helper.make_node("Resize", ["x", "roi" if roi_input or roi is not None else "",
                                       "scales"], ["y"], name="up", mode=mode,
                            coordinate_transformation_mode=ctm)
    g = helper.make_graph([node], "resize", ins, [vi("y", TensorProto.FLOAT, [1, 1, 4, 4])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 6
    return m, save(m, name)


def resize_roi():
    """Resize-11 declares roi (and scales) required, "only takes effect when
    coordinate_transformation_mode is tf_crop_and_resize" (onnx.defs, the
    spec's schema text); from opset 13 both are optional."""
    print("== Resize roi", flush=True)
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 2, 2)
    feeds = {"x": x}
    # An empty roi tensor where roi does not take effect: valid (onnx's
    # checker, ONNX Runtime) and run. Nearest, asymmetric, x2: each pixel
    # repeated (source index floor(i / 2)).
    for opset in (11, 13):
        m, path = resize_model(f"r{opset}_empty_roi.onnx", opset, [], "asymmetric")
        check(checker(m, True) is None, f"resize {opset} empty roi: onnx checker {checker(m, True)}")
        ref = x.repeat(2, axis=2).repeat(2, axis=3)
        o = run_ort(path, feeds)
        check(o is None or (not isinstance(o, str) and np.array_equal(o[0], ref)),
              f"resize {opset} empty roi: ONNX Runtime {o}")
        rc, outs, err = run_ours(path, feeds)
        if check(rc == 0, f"resize {opset} empty roi: run exit {rc}: {err}"):
            close(outs[0], ref, f"resize {opset} empty roi")
    # Linear, half_pixel, empty roi: as ONNX Runtime computes it.
    m, path = resize_model("r11_empty_roi_linear.onnx", 11, [], "half_pixel", mode="linear")
    o = run_ort(path, feeds)
    rc, outs, err = run_ours(path, feeds)
    check(rc == 0, f"resize 11 linear empty roi: run exit {rc}: {err}")
    if rc == 0 and o is not None and check(not isinstance(o, str), f"ONNX Runtime: {o}"):
        close(outs[0], o[0], "resize 11 linear empty roi against ONNX Runtime")
    # roi omitted at opset 11: a required input left empty. onnx's checker
    # and ONNX Runtime refuse the model; so do check and the planner (one
    # line naming the node).
    m, path = resize_model("r11_no_roi.onnx", 11, None, "asymmetric")
    check(checker(m, False) is not None, "resize 11 omitted roi: onnx's checker takes it")
    o = run_ort(path, feeds)
    check(o is None or isinstance(o, str), f"resize 11 omitted roi: ONNX Runtime runs it: {o}")
    rc, outs, err = run_ours(path, feeds)
    lines = err.strip().splitlines()
    check(rc == 1 and len(lines) == 1 and "node 'up' (Resize)" in lines[0] and "roi" in lines[0] and
          "opset 11" in lines[0], f"resize 11 omitted roi: run exit {rc}: {err}")
    p = ox("check", path)
    check(p.returncode == 1 and "node 'up' (Resize): input 1 is required but empty" in p.stderr,
          f"resize 11 omitted roi: check exit {p.returncode}: {p.stderr}")
    # ... while at opset 13 it is optional: ONNX Runtime and we run it.
    m, path = resize_model("r13_no_roi_crop.onnx", 13, None, "tf_crop_and_resize", mode="linear")
    check(checker(m, True) is None, f"resize 13 omitted roi: onnx checker {checker(m, True)}")
    o = run_ort(path, feeds)
    rc, outs, err = run_ours(path, feeds)
    check(rc == 0 and ox("check", path).returncode == 0,
          f"resize 13 omitted roi, tf_crop_and_resize: run exit {rc}: {err}")
    if rc == 0 and o is not None and check(not isinstance(o, str), f"ONNX Runtime: {o}"):
        close(outs[0], o[0], "resize 13 omitted roi, tf_crop_and_resize against ONNX Runtime")
    # tf_crop_and_resize, where roi takes effect: an empty roi is no
    # [start..., end...]; ONNX Runtime refuses it when it runs, we when the
    # graph is planned (a constant) or when the node runs (an input).
    for opset in (11, 13):
        m, path = resize_model(f"r{opset}_empty_roi_crop.onnx", opset, [], "tf_crop_and_resize",
                               mode="linear")
        o = run_ort(path, feeds)
        check(o is None or isinstance(o, str), f"resize {opset} crop empty roi: ONNX Runtime {o}")
        rc, outs, err = run_ours(path, feeds)
        lines = err.strip().splitlines()
        check(rc == 1 and len(lines) == 1 and "node 'up' (Resize)" in lines[0] and
              "tf_crop_and_resize needs roi of 8 values" in lines[0],
              f"resize {opset} crop empty roi: run exit {rc}: {err}")
    m, path = resize_model("r11_input_roi_crop.onnx", 11, None, "tf_crop_and_resize",
                           mode="linear", roi_input=True)
    empty = dict(feeds, roi=np.zeros(0, np.float32))
    o = run_ort(path, empty)
    check(o is None or isinstance(o, str), f"resize 11 crop empty roi input: ONNX Runtime {o}")
    rc, outs, err = run_ours(path, empty)
    lines = err.strip().splitlines()
    check(rc == 1 and len(lines) == 1 and "'up'" in lines[0] and
          "tf_crop_and_resize needs roi of 8 values" in lines[0],
          f"resize 11 crop empty roi input: run exit {rc}: {err}")
    # A full roi there: as ONNX Runtime crops.
    full = dict(feeds, roi=np.array([0, 0, 0.25, 0, 1, 1, 1, 0.75], np.float32))
    o = run_ort(path, full)
    rc, outs, err = run_ours(path, full)
    check(rc == 0, f"resize 11 crop roi input: run exit {rc}: {err}")
    if rc == 0 and o is not None and check(not isinstance(o, str), f"ONNX Runtime: {o}"):
        close(outs[0], o[0], "resize 11 crop roi input against ONNX Runtime")


# ---- overridable initializers feeding constant lists ---------------------------

def ovr_model(name, variant):
    """y = Reshape(Reshape(x [2,3], [6]), Cast(s)) with s int32 [2] = [3, 2];
    variant "init_input": s an initializer listed as a graph input (IR 8: a
    caller may override it), "input": s a plain graph input (how ONNX
    Runtime is fed the override: its node binding ignores feeds for
    initializers), "const": s an initializer only."""
    vi = helper.make_tensor_value_info
    inits = [numpy_helper.from_array(np.array([6], np.int64), "flat")]
    ins = [vi("x", TensorProto.FLOAT, [2, 3])]
    if variant != "const":
        ins.append(vi("s", TensorProto.INT32, [2]))
    if variant != "input":
        inits.append(numpy_helper.from_array(np.array([3, 2], np.int32), "s"))
    nodes = [helper.make_node("Reshape", ["x", "flat"], ["r1"]),
             helper.make_node("Cast", ["s"], ["s64"], to=TensorProto.INT64),
             helper.make_node("Reshape", ["r1", "s64"], ["y"])]
    g = helper.make_graph(nodes, "ovr", ins, [vi("y", TensorProto.FLOAT, [None, None])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return save(m, name)


def noop_model(name, variant):
    """y = Relu(Reshape(x [2,3], s)), s int64 [2] = [2, 3]: with the stored
    value the Reshape changes nothing (eliminate_noop's static shapes);
    variants as ovr_model."""
    vi = helper.make_tensor_value_info
    ins = [vi("x", TensorProto.FLOAT, [2, 3])]
    inits = []
    if variant != "const":
        ins.append(vi("s", TensorProto.INT64, [2]))
    if variant != "input":
        inits.append(numpy_helper.from_array(np.array([2, 3], np.int64), "s"))
    nodes = [helper.make_node("Reshape", ["x", "s"], ["r"]), helper.make_node("Relu", ["r"], ["y"])]
    g = helper.make_graph(nodes, "ovr_noop", ins, [vi("y", TensorProto.FLOAT, [None, None])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return save(m, name)


def if_model(name, variant):
    """y = If(Cast(b) as bool, then x + 1, else x - 1), b int32 scalar = 1;
    variants as ovr_model."""
    vi = helper.make_tensor_value_info
    one = numpy_helper.from_array(np.array(1, np.float32), "one")
    then_g = helper.make_graph([helper.make_node("Add", ["x", "one"], ["t"])], "then", [],
                               [vi("t", TensorProto.FLOAT, [3])])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "one"], ["e"])], "else", [],
                               [vi("e", TensorProto.FLOAT, [3])])
    ins = [vi("x", TensorProto.FLOAT, [3])]
    inits = [one]
    if variant != "const":
        ins.append(vi("b", TensorProto.INT32, []))
    if variant != "input":
        inits.append(numpy_helper.from_array(np.array(1, np.int32), "b"))
    nodes = [helper.make_node("Cast", ["b"], ["c"], to=TensorProto.BOOL),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    g = helper.make_graph(nodes, "ovr_if", ins, [vi("y", TensorProto.FLOAT, [3])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return save(m, name)


def overridable_lists():
    """An initializer listed as a graph input (IR >= 4) is a default the
    caller may replace: a constant list computed from it (a Cast feeding a
    Reshape's shape, an If condition) and a shape inferred from it (a
    Reshape that is a no-op with the stored value) must follow the fed value
    before and after optimize, as ONNX Runtime computes it for that value."""
    print("== overridable initializers feeding constant lists", flush=True)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    cases = [("reshape", ovr_model, {"x": x}, "s",
              [np.array([0, -1], np.int32), np.array([1, 6], np.int32)]),
             ("if", if_model, {"x": np.array([1, 2, 3], np.float32)}, "b",
              [np.array(0, np.int32)]),
             ("noop", noop_model, {"x": x}, "s", [np.array([3, 2], np.int64)])]
    for what, build, feeds, name, overrides in cases:
        path = build(f"ovr_{what}.onnx", "init_input")
        ref_path = build(f"ovr_{what}_input.onnx", "input")
        opts = []
        for level in ("basic", "extended"):
            out = os.path.join(TMP, f"ovr_{what}_{level}.onnx")
            p = ox("optimize", path, "-o", out, "--level", level)
            if check(p.returncode == 0, f"{what}: optimize --level {level}: {p.stderr}"):
                opts.append((level, out))
        out = os.path.join(TMP, f"ovr_{what}_fp16.onnx")
        if ox("optimize", path, "-o", out, "--passes", "+to_fp16").returncode == 0:
            opts.append(("+to_fp16", out))
        for val in overrides:
            f = dict(feeds, **{name: val})
            # The reference: ONNX Runtime on s (b) as a plain input, else numpy.
            o = run_ort(ref_path, f)
            if o is None or isinstance(o, str):
                check(o is None, f"{what}: ONNX Runtime refuses the reference: {o}")
                if what == "reshape":
                    r1 = x.reshape(6)
                    shape = [r1.shape[i] if v == 0 else v for i, v in enumerate(val)]
                    o = [r1.reshape(shape)]
                elif what == "noop":
                    o = [np.maximum(x.reshape(val), 0)]
                else:
                    o = [feeds["x"] + 1 if val else feeds["x"] - 1]
            for label, model in [("original", path)] + opts:
                rc, outs, err = run_ours(model, f)
                if check(rc == 0 and outs, f"{what} {label} {name}={val.tolist()}: exit {rc} {err}"):
                    close(outs[0], o[0], f"{what} {label} {name}={val.tolist()}", tol=1e-2)
        # The fed value is what --check compares with too.
        args = []
        for k, v in dict(feeds, **{name: overrides[0]}).items():
            args += ["--input", f"{k}={tensor_file(k, v)}"]
        p = ox("optimize", path, "-o", os.path.join(TMP, f"ovr_{what}_chk.onnx"), "--level",
               "extended", "--check", "1", *args)
        check(p.returncode == 0, f"{what}: optimize --check with the override: {p.stderr}")
    # A plain initializer is a constant: the Reshape pair still fuses.
    path = ovr_model("ovr_reshape_const.onnx", "const")
    out = os.path.join(TMP, "ovr_reshape_const_opt.onnx")
    p = ox("optimize", path, "-o", out, "--level", "extended")
    if check(p.returncode == 0, f"const: optimize: {p.stderr}"):
        n = len(onnx.load(out).graph.node)
        check(n < 3, f"const: the Reshape pair of a constant shape is no longer fused ({n} nodes)")
        rc, outs, err = run_ours(out, {"x": x})
        if check(rc == 0, f"const: run: {err}"):
            close(outs[0], x.reshape(3, 2), "const: optimized")


def main():
    if not HAVE_ORT:
        print(f"note: ONNX Runtime comparison skipped: no node or no "
              f"{NODE_PATH}/onnxruntime-node")
    negative_dims()
    resize_roi()
    overridable_lists()
    print(f"{len(FAILS)} failure(s)")
    if not FAILS:
        shutil.rmtree(TMP, ignore_errors=True)
    else:
        print(f"(models kept in {TMP})")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
