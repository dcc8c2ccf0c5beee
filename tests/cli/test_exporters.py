#!/usr/bin/env python3
"""Models in other exporters' styles (exporter_models.py) through every
path: `run` (oneDNN and ONNXSCOPE_NO_DNNL=1, 1 and 2 threads) against the
numpy reference; `optimize --level all --check 1` for --target onnx and ort,
the saved model passing ONNX's checker when the input does, keeping the
declared input/output types, and computing the reference outputs (with our
executor and, when /tmp/ort is there, ONNX Runtime); `bench --iters 3`; and
malformed variants giving one clean error line and a documented exit code.

Usage: test_exporters.py [CASE ...] (ONNXSCOPE_BIN set by meson). ORT:
NODE_PATH or /tmp/ort/node_modules; without it that comparison is skipped
with a printed reason, the rest always runs. Exits 77 without numpy/onnx."""
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as e:
    print(f"SKIP: python3 lacks numpy/onnx ({e})")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exporter_models as EM  # noqa: E402

BIN = os.environ["ONNXSCOPE_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
TMP = tempfile.mkdtemp(prefix="oxexporters-")
ENV = dict(os.environ, XDG_CACHE_HOME=TMP, ONNXSCOPE_THREADS_LOAD_CAP="0")
FAILS = []
GEN_LOCK = threading.Lock()
NODE_PATH = os.environ.get("NODE_PATH") or "/tmp/ort/node_modules"
HAVE_ORT = shutil.which("node") is not None and os.path.isdir(
    os.path.join(NODE_PATH, "onnxruntime-node"))
SANITIZER = ("AddressSanitizer", "runtime error:", "LeakSanitizer", "Segmentation")


def fail(what):
    FAILS.append(what)
    print("FAIL:", what, flush=True)


def ox(*args, env=None, timeout=300):
    p = subprocess.run([BIN, *args], capture_output=True, text=True, env=env or ENV,
                       timeout=timeout)
    for s in SANITIZER:
        if s in p.stderr:
            fail(f"{' '.join(args[:2])}: sanitizer report: {p.stderr[-2000:]}")
            break
    return p


def close(got, ref, what, rtol=1e-3, atol=1e-4):
    ref = np.asarray(ref)
    got = np.asarray(got)
    if got.shape != ref.shape:
        fail(f"{what}: shape {got.shape}, expected {ref.shape}")
        return False
    if ref.dtype.kind in "iub":
        ok = np.array_equal(got, ref)
    else:
        if got.dtype == np.float16 or ref.dtype == np.float16:
            rtol, atol = 1e-2, 1e-2
        g, r = got.astype(np.float64), ref.astype(np.float64)
        ok = bool(np.all(np.abs(g - r) <= atol + rtol * np.abs(r)))
    if not ok:
        err = np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))) if got.size else 0
        fail(f"{what}: values differ (max abs err {err:.3g})")
    return ok


def input_args(ins):
    a = []
    for nm, p in ins:
        a += ["--input", f"{nm}={p}"]
    return a


def run_ours(model, ins, refs, what, env=None, threads="2"):
    out = tempfile.mkdtemp(dir=os.path.dirname(model))   # cases run in parallel
    p = ox("run", model, *input_args(ins), "--threads", threads, "--save-outputs", out, env=env)
    if p.returncode != 0:
        fail(f"{what}: run exit {p.returncode}: {p.stderr.strip()[-400:]}")
        return
    for k, r in enumerate(refs):
        f = os.path.join(out, f"output_{k}.pb")
        if not os.path.exists(f):
            fail(f"{what}: no output_{k}.pb")
            continue
        t = onnx.TensorProto()
        with open(f, "rb") as fh:
            t.ParseFromString(fh.read())
        close(numpy_helper.to_array(t), r, f"{what} output {k}")


def run_ort(jobs, ins, refs):
    """jobs: [(model, what)], run in one node process (ONNX Runtime loads
    once per case); a model ONNX Runtime refuses is a printed note."""
    todo = [(mdl, what) for mdl, what in jobs
            if os.path.basename(os.path.dirname(mdl)) not in EM.NO_ORT]
    for mdl, what in jobs:
        if (mdl, what) not in todo:
            print(f"  note: {what}: ONNX Runtime not compared: "
                  f"{EM.NO_ORT[os.path.basename(os.path.dirname(mdl))]}")
    if not todo:
        return
    p = subprocess.run(["node", os.path.join(HERE, "ort_run.js"), ",".join(m for m, _ in todo),
                        *[q for _, q in ins]],
                       capture_output=True, text=True, env=dict(ENV, NODE_PATH=NODE_PATH),
                       timeout=300)
    if p.returncode != 0:
        fail(f"{todo[0][1]}: ort_run.js exit {p.returncode}: {p.stderr.strip()[-300:]}")
        return
    res = json.loads(p.stdout)
    orig_ran = "outputs" in res.get(jobs[0][0], {})
    for mdl, what in todo:
        r_ = res.get(mdl, {"error": "no result"})
        if "error" in r_:
            if orig_ran and mdl != jobs[0][0]:
                fail(f"{what}: ONNX Runtime runs the original, not this: {r_['error'][:300]}")
            else:
                print(f"  note: {what}: ONNX Runtime does not run it: {r_['error'][:300]}")
            continue
        o = r_["outputs"]
        for k, (name, r) in enumerate(zip(o, refs)):
            v = o[name]
            close(np.array(v["data"]).reshape(v["dims"]).astype(np.asarray(r).dtype), r,
                  f"{what} (ONNX Runtime) output {k}")


def checker_ok(path):
    try:
        onnx.checker.check_model(path, full_check=True)
        return None
    except Exception as e:  # noqa: BLE001 - the checker raises several kinds
        return str(e).splitlines()[0][:200]


def io_types(m):
    inits = {t.name for t in m.graph.initializer}

    def desc(v):
        tt = v.type.tensor_type
        dims = None
        if tt.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else
                    (d.dim_param if d.HasField("dim_param") else None) for d in tt.shape.dim]
        return (v.name, tt.elem_type, dims)
    return ([desc(v) for v in m.graph.input if v.name not in inits],
            [desc(v) for v in m.graph.output])


def types_kept(orig, saved, what):
    a, b = io_types(orig), io_types(saved)
    for side, xs, ys in (("input", a[0], b[0]), ("output", a[1], b[1])):
        if [x[0] for x in xs] != [y[0] for y in ys]:
            fail(f"{what}: {side} names {[x[0] for x in xs]} -> {[y[0] for y in ys]}")
            continue
        for x, y in zip(xs, ys):
            if x[1] != y[1]:
                fail(f"{what}: {side} {x[0]} element type {x[1]} -> {y[1]}")
            if x[2] is None:
                continue
            if y[2] is None or len(x[2]) != len(y[2]) or any(
                    d is not None and d != e for d, e in zip(x[2], y[2])):
                fail(f"{what}: {side} {x[0]} shape {x[2]} -> {y[2]}")


def one_case(name):
    folder = os.path.join(TMP, name)
    with GEN_LOCK:   # the generator's RNG is one global
        model, ins, _feeds, refs, m = EM.write_case(name, folder)
    print(f"== {name}", flush=True)
    run_ours(model, ins, refs, f"{name}: run")
    run_ours(model, ins, refs, f"{name}: run NO_DNNL 1 thread",
             env=dict(ENV, ONNXSCOPE_NO_DNNL="1"), threads="1")
    in_checker = checker_ok(model)
    ort_jobs = [(model, f"{name}: original")]
    for target in ("onnx", "ort"):
        opt = os.path.join(folder, f"opt_{target}.onnx")
        p = ox("optimize", model, "-o", opt, "--level", "all", "--target", target,
               "--check", "1", *input_args(ins))
        what = f"{name}: optimize --target {target}"
        if p.returncode != 0:
            fail(f"{what}: exit {p.returncode}: {p.stderr.strip()[-600:]}")
            continue
        saved = onnx.load(opt)
        types_kept(m, saved, what)
        if target == "onnx" and in_checker is None:
            why = checker_ok(opt)
            if why:
                fail(f"{what}: saved model fails ONNX's checker: {why}")
        run_ours(opt, ins, refs, f"{what}: run")
        if target == "ort":   # (the onnx result's ops are a subset: its plain run is kept short)
            run_ours(opt, ins, refs, f"{what}: run NO_DNNL",
                     env=dict(ENV, ONNXSCOPE_NO_DNNL="1"), threads="1")
        ort_jobs.append((opt, what))
    # to_fp16 on top (its own criteria: float16 tolerance or cosine 0.999):
    # a lossy pass must still use the fed values, never baked-in defaults.
    p = ox("optimize", model, "-o", os.path.join(folder, "opt_fp16.onnx"), "--passes",
           "+to_fp16", "--check", "1", *input_args(ins))
    if p.returncode != 0:
        fail(f"{name}: optimize --passes +to_fp16: exit {p.returncode}: "
             f"{(p.stderr.strip() or p.stdout.strip())[-400:]}")
    # Every input's shape fixed (--shape), so shape chains fold into constants.
    fixed = os.path.join(folder, "opt_fixed.onnx")
    shapes = []
    for nm, v in _feeds.items():
        if isinstance(v, np.ndarray) and v.ndim > 0 and nm in {i.name for i in m.graph.input}:
            shapes += ["--shape", f"{nm}={'x'.join(str(d) for d in v.shape)}"]
    p = ox("optimize", model, "-o", fixed, "--level", "extended", *shapes, "--check", "1",
           *input_args(ins))
    what = f"{name}: optimize --shape"
    if p.returncode != 0:
        fail(f"{what}: exit {p.returncode}: {p.stderr.strip()[-600:]}")
    else:
        if in_checker is None and checker_ok(fixed):
            fail(f"{what}: saved model fails ONNX's checker: {checker_ok(fixed)}")
        run_ours(fixed, ins, refs, f"{what}: run")
        ort_jobs.append((fixed, what))
    opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 17 and name not in getattr(EM, "NO_CONVERT17", ()):
        # Exporters' old opsets: converted up, the result must compute the same
        # (NO_CONVERT17: cases test_exporters2.py expects to be refused).
        conv = os.path.join(folder, "opset17.onnx")
        p = ox("convert", model, "-o", conv, "--opset", "17")
        what = f"{name}: convert --opset 17"
        if p.returncode != 0:
            fail(f"{what}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
        else:
            if in_checker is None and checker_ok(conv):
                fail(f"{what}: saved model fails ONNX's checker: {checker_ok(conv)}")
            run_ours(conv, ins, refs, f"{what}: run")
            ort_jobs.append((conv, what))
    if HAVE_ORT:
        run_ort(ort_jobs, ins, refs)
    p = ox("bench", model, "--iters", "3", *input_args(ins))
    if p.returncode != 0:
        fail(f"{name}: bench exit {p.returncode}: {p.stderr.strip()[-400:]}")
    if in_checker:
        print(f"  note: the input fails ONNX 1.12's checker ({in_checker})")


def malformed_cases():
    d = os.path.join(TMP, "malformed")
    os.makedirs(d, exist_ok=True)
    for name, path, codes in EM.malformed(d):
        print(f"== malformed {name}", flush=True)
        for cmd in (["run", path, "--random", "--default-dim", "2"], ["info", path], ["check", path],
                    ["optimize", path, "-o", os.path.join(d, "o.onnx"), "--level", "all",
                     "--target", "ort"],
                    ["bench", path, "--iters", "1", "--default-dim", "2"]):
            p = ox(*cmd)
            what = f"malformed {name}: {cmd[0]}"
            # A huge dim is valid ONNX (check passes; running it is refused);
            # a negative declared dim loads as unknown, which --default-dim
            # then sets (check warns about it and exits 0: onnx's checker
            # and ONNX Runtime take it, test_spec_edges.py).
            if p.returncode == 0 and cmd[0] in (
                    () if name == "negative_dim" else ("run", "bench")) + (
                    () if name in ("huge_dim", "negative_dim") else ("check",)):
                fail(f"{what}: exit 0 on a broken model")
            if p.returncode not in (0,) + tuple(codes) + (2,):
                fail(f"{what}: exit {p.returncode} (expected {codes}): {p.stderr[-300:]}")
            if p.returncode < 0:
                fail(f"{what}: killed by signal {-p.returncode}")
            if p.returncode != 0 and cmd[0] != "check":
                lines = [x for x in p.stderr.splitlines()
                         if x.strip() and not x.startswith("onnxscope: note:")]
                if len(lines) != 1 or not lines[0].startswith("onnxscope: ") or \
                        os.path.basename(path) not in lines[0]:
                    fail(f"{what}: not one line naming the file: {p.stderr[-400:]!r}")


def main():
    names = sys.argv[1:] or list(EM.CASES)
    if not HAVE_ORT:
        print(f"note: ONNX Runtime comparison skipped: no node or no "
              f"{NODE_PATH}/onnxruntime-node")
    def guarded(n):
        try:
            one_case(n)
        except subprocess.TimeoutExpired as e:
            fail(f"{n}: timed out: {e}")
    # Two cases at a time: most of a case is waiting for child processes.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(guarded, [n for n in names if n != "malformed"]))
    if not sys.argv[1:] or "malformed" in sys.argv[1:]:
        malformed_cases()
    print(f"{len(names)} cases, {len(FAILS)} failures")
    if not FAILS:
        shutil.rmtree(TMP, ignore_errors=True)
    else:
        print(f"(models kept in {TMP})")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
