#!/usr/bin/env python3
"""Second round of models in other exporters' styles (exporter_models2.py)
through every path test_exporters.py drives (run, optimize --check for
both targets, --shape, +to_fp16, convert, bench, ONNX Runtime), plus the
front ends that round did not drive: `check`, `info --json/--profile`
(unknown cost stays unknown), `dot` (SVG and DOT, Graphviz parsing the
DOT), `diff`, and `convert` to each opset the case lists (the result
computes the references, passes ONNX's checker when 1.12's checker knows
the opset, and runs in ONNX Runtime) or must refuse.

Usage: test_exporters2.py [CASE ...] (ONNXSCOPE_BIN set by meson). Exits
77 without python3's numpy/onnx; ONNX Runtime (NODE_PATH or
/tmp/ort/node_modules) is skipped with a printed reason when absent."""
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_exporters as TE  # noqa: E402  (exits 77 without numpy/onnx)
import exporter_models2 as EM2  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402

TE.EM = EM2       # one_case and run_ort read the case table through TE.EM
fail, ox = TE.fail, TE.ox
DOT = shutil.which("dot")


def model_opset(m):
    return next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), 0)


def cols(text):
    """Terminal columns of text (East Asian wide and fullwidth: 2)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def profile_columns(name, model, m):
    """info --profile on non-ASCII names: valid UTF-8, and every row's op
    column starts at the same terminal column."""
    raw = subprocess.run([TE.BIN, "info", model, "--profile"], capture_output=True,
                         env=TE.ENV, timeout=120).stdout
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(f"{name}: info --profile writes invalid UTF-8: {e}")
        return
    ops = {n.op_type for n in m.graph.node}
    starts = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[0].isdigit():
            op = next((o for o in ops if f" {o} " in line), None)
            if op:
                starts.add(cols(line[:line.rindex(f" {op} ")]))
    if len(starts) != 1:
        fail(f"{name}: info --profile op column starts at columns {sorted(starts)}")
    # info's inputs/outputs: the type starts at column 35 whatever the name.
    for v in list(m.graph.input) + list(m.graph.output):
        line = next((x for x in text.splitlines() if x.startswith(f"  {v.name} ")), None)
        if line is None or cols(line[:line.index(" float32")]) != 34:
            fail(f"{name}: info's line for {v.name!r} is not aligned: {line!r}")


def front_ends(name):
    folder = os.path.join(TE.TMP, name)
    model = os.path.join(folder, "model.onnx")
    m = onnx.load(model)
    p = ox("check", model)
    if p.returncode != 0:
        fail(f"{name}: check exit {p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}")
    p = ox("info", model, "--json")
    if p.returncode != 0:
        fail(f"{name}: info --json exit {p.returncode}: {p.stderr.strip()[-300:]}")
    else:
        j = json.loads(p.stdout)
        inits = {t.name for t in m.graph.initializer}
        want = [i.name for i in m.graph.input if i.name not in inits]
        if [i["name"] for i in j["inputs"]] != want:
            fail(f"{name}: info inputs {[i['name'] for i in j['inputs']]}, expected {want}")
        symbolic = any(d.dim_param or not d.HasField("dim_value")
                       for i in m.graph.input for d in i.type.tensor_type.shape.dim)
        # Unknown dims: MACs unknown (null), never a made-up 0 or 1.
        if symbolic and j["macs"] is not None:
            fail(f"{name}: info --json macs {j['macs']} with symbolic input dims")
        if name in EM2.MACS and j["macs"] != EM2.MACS[name]:
            fail(f"{name}: info --json macs {j['macs']}, expected {EM2.MACS[name]}")
    if name in getattr(EM2, "MACS_DIMS", {}):
        args, want = EM2.MACS_DIMS[name]
        p = ox("info", model, "--json", *args)
        got = json.loads(p.stdout)["macs"] if p.returncode == 0 else f"exit {p.returncode}"
        if got != want:
            fail(f"{name}: info --json {' '.join(args)}: macs {got}, expected {want}")
    p = ox("info", model, "--profile")
    if p.returncode != 0:
        fail(f"{name}: info --profile exit {p.returncode}: {p.stderr.strip()[-300:]}")
    elif name in getattr(EM2, "PROFILE_COLUMNS", ()):
        profile_columns(name, model, m)
    for ext in ("svg", "dot"):
        out = os.path.join(folder, f"graph.{ext}")
        p = ox("dot", model, "-o", out)
        if p.returncode != 0 or not os.path.getsize(out):
            fail(f"{name}: dot -o .{ext} exit {p.returncode}: {p.stderr.strip()[-300:]}")
    # An unnamed node by the name `info --profile` shows for it (OP_INDEX).
    unnamed = [f"{n.op_type}_{k}" for k, n in enumerate(m.graph.node) if not n.name]
    if unnamed:
        p = ox("dot", model, "-o", os.path.join(folder, "around.svg"), "--around",
               unnamed[-1], "--radius", "1")
        if p.returncode != 0:
            fail(f"{name}: dot --around {unnamed[-1]} exit {p.returncode}: "
                 f"{p.stderr.strip()[-300:]}")
    if DOT and os.path.exists(os.path.join(folder, "graph.dot")):
        q = subprocess.run([DOT, "-Tsvg", "-o", os.devnull, os.path.join(folder, "graph.dot")],
                           capture_output=True, text=True, timeout=120)
        if q.returncode != 0:
            fail(f"{name}: Graphviz rejects our DOT: {q.stderr.strip()[-300:]}")
    opt = os.path.join(folder, "opt_ort.onnx")
    if os.path.exists(opt):
        p = ox("diff", model, opt)
        if p.returncode != 0:
            fail(f"{name}: diff exit {p.returncode}: {p.stderr.strip()[-300:]}")


def negative_axes(g):
    """'OP.attr' for every axis attribute of g (and its subgraphs) with a
    negative value."""
    bad = []
    for n in g.node:
        for a in n.attribute:
            if a.name in ("axis", "axes", "scan_input_axes", "scan_output_axes") and (
                    a.i < 0 or any(v < 0 for v in a.ints)):
                bad.append(f"{n.op_type}.{a.name}")
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                bad += negative_axes(sub)
    return bad


def conversions(name, ins, refs, in_checker):
    folder = os.path.join(TE.TMP, name)
    model = os.path.join(folder, "model.onnx")
    jobs = [(model, f"{name}: original")]
    for to in EM2.CONVERT.get(name, ()):
        out = os.path.join(folder, f"convert{to}.onnx")
        what = f"{name}: convert --opset {to}"
        p = ox("convert", model, "-o", out, "--opset", str(to))
        if p.returncode != 0:
            fail(f"{what}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
            continue
        if to <= 17:   # the newest opset ONNX 1.12's checker knows
            why = TE.checker_ok(out)
            if why:
                fail(f"{what}: saved model fails ONNX's checker: {why}")
        if to < 11:
            neg = negative_axes(onnx.load(out).graph)
            if neg:
                fail(f"{what}: negative axes below opset 11 (allowed from 11): {neg}")
        TE.run_ours(out, ins, refs, f"{what}: run")
        jobs.append((out, what))
    for to, text in EM2.REFUSE.get(name, {}).items():
        p = ox("convert", model, "-o", os.path.join(folder, f"refused{to}.onnx"),
               "--opset", str(to))
        lines = [x for x in p.stderr.splitlines() if x.strip()]
        if p.returncode != 1 or len(lines) != 1 or text not in lines[0]:
            fail(f"{name}: convert --opset {to}: expected one refusal line with {text!r}, "
                 f"got exit {p.returncode}: {p.stderr.strip()[-300:]!r}")
    if TE.HAVE_ORT and len(jobs) > 1:
        TE.run_ort(jobs, ins, refs)


def one(name):
    TE.one_case(name)
    folder = os.path.join(TE.TMP, name)
    m = onnx.load(os.path.join(folder, "model.onnx"))
    ins = sorted((os.path.join(folder, f) for f in os.listdir(folder) if f.startswith("input_")))
    ins = [(onnx.load_tensor(f).name, f) for f in ins]
    with TE.GEN_LOCK:
        _, _, _, refs, _ = EM2.write_case(name, folder)
    front_ends(name)
    conversions(name, ins, refs, model_opset(m))


def future_versions():
    """A model stamped with an opset newer than any the registry knows, or
    a newer IR: `check` passes with one warning naming it (never silent)."""
    from onnx import helper
    d = os.path.join(TE.TMP, "future")
    os.makedirs(d, exist_ok=True)
    print("== future opset / IR", flush=True)
    for opset, ir, text in ((99, 10, "default-domain opset 99 is newer than the newest"),
                            (21, 99, "ir_version 99 is newer than onnxscope reads")):
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [EM2.vi("x", [2])], [EM2.vi("y", [2])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = ir
        path = os.path.join(d, f"opset{opset}_ir{ir}.onnx")
        onnx.save(m, path)
        p = ox("check", path)
        warn = [x for x in p.stderr.splitlines() if "warning:" in x]
        if p.returncode != 0 or len(warn) != 1 or text not in warn[0]:
            fail(f"check {os.path.basename(path)}: expected exit 0 and one warning with "
                 f"{text!r}: exit {p.returncode}, {p.stderr.strip()[-300:]!r}")


def memory_bombs():
    """Small models whose outputs are huge but valid (Resize by 30000 on
    each axis from a constant image: plan-time folding; from an input;
    Pad by 10^6): `run --max-memory 256M` refuses them with one line before
    allocating. The child runs under a 1.5 GiB address-space limit, so an
    allocation before the check shows as another error (the Resize kernel
    allocated its own output unchecked: 3.5 GB filled, then refused)."""
    import resource
    from onnx import helper, numpy_helper
    d = os.path.join(TE.TMP, "bombs")
    os.makedirs(d, exist_ok=True)
    print("== memory bombs", flush=True)
    sc = numpy_helper.from_array(np.array([1, 1, 30000, 30000], np.float32), "sc")
    img = numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "img")
    pads = numpy_helper.from_array(np.array([0, 1000000, 0, 1000000], np.int64), "pads")
    bombs = {
        "resize_const_nearest": ([helper.make_node("Resize", ["img", "", "sc"], ["y"],
                                                   mode="nearest")], [img, sc], []),
        "resize_input_linear": ([helper.make_node("Resize", ["x", "", "sc"], ["y"],
                                                  mode="linear")], [sc], ["x"]),
        "pad_input": ([helper.make_node("Pad", ["x", "pads"], ["y"])], [pads], ["x"]),
    }

    # ASan reserves terabytes of shadow address space: no limit under it
    # (its own allocation checks report an allocation before the refusal).
    with open(TE.BIN, "rb") as fh:
        asan = b"__asan_init" in fh.read()

    def limit():
        if not asan:
            resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))
    for nm, (nodes, inits, ins) in bombs.items():
        shape = [1, 1, 1, 1] if nm.startswith("resize") else [1000, 1000]
        g = helper.make_graph(nodes, "g", [EM2.vi(i, shape) for i in ins], [EM2.vi("y", None)],
                              initializer=inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        path = os.path.join(d, nm + ".onnx")
        onnx.save(m, path)
        p = subprocess.run([TE.BIN, "run", path, "--random", "--max-memory", "256M"],
                           capture_output=True, text=True, env=TE.ENV, timeout=120,
                           preexec_fn=limit)
        lines = [x for x in p.stderr.splitlines() if x.strip()]
        if p.returncode != 1 or len(lines) != 1 or not (
                "--max-memory" in lines[0] or "exceeds the limit" in lines[0]):
            fail(f"bomb {nm}: expected exit 1 and one line naming the limit, got exit "
                 f"{p.returncode}: {p.stderr.strip()[-300:]!r}")


def main():
    names = sys.argv[1:] or list(EM2.CASES)
    if not TE.HAVE_ORT:
        print(f"note: ONNX Runtime comparison skipped: no node or no "
              f"{TE.NODE_PATH}/onnxruntime-node")
    if not DOT:
        print("note: Graphviz `dot` absent: our DOT output is not parsed")

    def guarded(n):
        try:
            one(n)
        except subprocess.TimeoutExpired as e:
            fail(f"{n}: timed out: {e}")
        except UnicodeDecodeError as e:   # our output read as text
            fail(f"{n}: output is not valid UTF-8: {e}")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(guarded, [n for n in names if n not in ("future", "bombs")]))
    if not sys.argv[1:] or "future" in sys.argv[1:]:
        future_versions()
    if not sys.argv[1:] or "bombs" in sys.argv[1:]:
        memory_bombs()
    print(f"{len(names)} cases, {len(TE.FAILS)} failures")
    if not TE.FAILS:
        shutil.rmtree(TE.TMP, ignore_errors=True)
    else:
        print(f"(models kept in {TE.TMP})")
    sys.exit(1 if TE.FAILS else 0)


if __name__ == "__main__":
    main()
