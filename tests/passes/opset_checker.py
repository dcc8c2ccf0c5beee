#!/usr/bin/python3
"""ONNX's own checker (onnx.checker.check_model, full_check: strict shape
inference) accepts what `onnxscope convert` writes: the shared models
converted 13 <-> 17 and down to 9, the light backend models 9 -> 13, and
every backend node case of opsets 7..17 converted to 7, 9, 11, 13 and 17
(a conversion the converter refuses is counted, not checked). Targets stay
at 17 or below: the onnx module here (1.12) knows opsets up to 17.
Exits 77 (skip) with a printed reason without ../shared, the binary or
python3's onnx module."""
import glob
import os
import subprocess
import sys
import tempfile

try:
    import onnx
except ImportError:
    print("skipped: python3 has no onnx module")
    sys.exit(77)

SHARED = os.environ.get("ONNXSCOPE_SHARED", "")
BIN = os.environ.get("ONNXSCOPE_BIN", "")
if not os.path.isdir(SHARED) or not os.path.exists(BIN):
    print("skipped: ../shared or the onnxscope binary not found")
    sys.exit(77)


def default_opset(path):
    m = onnx.load(path, load_external_data=False)
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return None


def main():
    jobs = []   # (model, [targets]) converted in a chain, each step checked
    for f in sorted(glob.glob(os.path.join(SHARED, "models", "*", "model.onnx"))):
        v = default_opset(f)
        jobs.append((f, [17, 13] if v == 13 else [13, 17]))
        jobs.append((f, [9]))
    for f in sorted(glob.glob(os.path.join(SHARED, "onnx-backend", "light", "*.onnx"))):
        jobs.append((f, [13]))
    for f in sorted(glob.glob(os.path.join(SHARED, "onnx-backend", "node", "*", "model.onnx"))):
        v = default_opset(f)
        if v is None or v < 7 or v > 17:
            continue
        for t in (7, 9, 11, 13, 17):
            if t != v:
                jobs.append((f, [t]))
    ok = refused = 0
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for f, chain in jobs:
            src = f
            for step, t in enumerate(chain):
                out = os.path.join(tmp, "m%d.onnx" % step)
                r = subprocess.run([BIN, "convert", src, "-o", out, "--opset", str(t)],
                                   capture_output=True, text=True)
                if r.returncode == 1 and "cannot be converted" in r.stderr:
                    refused += 1
                    break
                if r.returncode != 0:
                    failures.append("%s -> %d: convert exit %d: %s" % (f, t, r.returncode,
                                                                         r.stderr.strip()))
                    break
                try:
                    onnx.checker.check_model(onnx.load(out), full_check=True)
                    ok += 1
                except Exception as e:  # the checker's own exception types vary
                    failures.append("%s -> %d: %s" % (f, t, str(e).splitlines()[0][:300]))
                    break
                src = out
    for x in failures:
        print("FAIL", x)
    print("%d converted models pass onnx.checker (full_check), %d refused, %d failed"
          % (ok, refused, len(failures)))
    return 1 if failures else 0


sys.exit(main())
