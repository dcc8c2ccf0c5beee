#!/usr/bin/env python3
# Runs ONNX Runtime (onnxruntime-node, a measuring peer only: never a build
# or test dependency) on a model and compares its outputs with a backend-
# style test case's reference outputs; optionally times it. Used for the
# transformer-fusion figures in docs/PASSES.md.
#   python3 tools/ort_models.py MODEL CASE_DIR ORT_DIR [--level disabled|basic|extended|all]
#                               [--time N [--versus OTHER_MODEL [--versus-level L]]]
# CASE_DIR holds test_data_set_*/input_K.pb, output_K.pb. Prints one line
# per data set: max abs/rel error and pass/fail at rtol 1e-3, atol 1e-4;
# with --time, the median (and min) latency of N runs on data set 0; with --versus,
# OTHER_MODEL (the original, say) is timed in the same process, runs
# alternating, so both see the same machine load.
import glob, json, os, subprocess, sys, tempfile
import numpy as np, onnx
from onnx import numpy_helper as nh

JS = r"""
const ort = require(process.argv[2] + '/node_modules/onnxruntime-node'); const fs = require('fs');
(async () => {
  const [, , , model, spec, level, nt, other, olevel] = process.argv;
  const S = JSON.parse(fs.readFileSync(spec));
  const s = await ort.InferenceSession.create(model, {graphOptimizationLevel: level, intraOpNumThreads: 1});
  const T = {float32: Float32Array, int64: BigInt64Array};
  for (const ds of S.sets) {
    const feeds = {};
    for (const i of ds.inputs) {
      const b = fs.readFileSync(i.file);
      const a = new T[i.dtype](b.buffer, b.byteOffset, b.length / T[i.dtype].BYTES_PER_ELEMENT);
      feeds[i.name] = new ort.Tensor(i.dtype, a, i.dims);
    }
    const r = await s.run(feeds);
    for (const o of ds.outputs) fs.writeFileSync(o.file + '.ort', Buffer.from(r[o.name].data.buffer));
    if (ds === S.sets[0] && Number(nt) > 0) {
      const o = other ? await ort.InferenceSession.create(other, {graphOptimizationLevel: olevel, intraOpNumThreads: 1}) : null;
      const ts = [], to = [];
      const time = async (sess, arr) => { const t0 = process.hrtime.bigint(); await sess.run(feeds); arr.push(Number(process.hrtime.bigint() - t0) / 1e6); };
      for (let k = 0; k < 5; k++) { await s.run(feeds); if (o) await o.run(feeds); }
      for (let k = 0; k < Number(nt); k++) { await time(s, ts); if (o) await time(o, to); }
      const med = (a) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)].toFixed(3);
      const min = (a) => Math.min(...a).toFixed(3);
      console.log('latency_ms ' + med(ts) + (o ? ' versus_ms ' + med(to) : '') +
                  ' min_ms ' + min(ts) + (o ? ' versus_min_ms ' + min(to) : ''));
    }
  }
})().catch((e) => { console.error(String(e)); process.exit(1); });
"""

def main():
    a = sys.argv[1:]
    model, case, ortdir = a[0], a[1], a[2]
    level = a[a.index('--level') + 1] if '--level' in a else 'disabled'
    nt = int(a[a.index('--time') + 1]) if '--time' in a else 0
    other = a[a.index('--versus') + 1] if '--versus' in a else ''
    olevel = a[a.index('--versus-level') + 1] if '--versus-level' in a else 'all'
    tmp = tempfile.mkdtemp()
    m = onnx.load(model, load_external_data=False)
    spec = {'sets': []}
    refs = []
    for d in sorted(glob.glob(os.path.join(case, 'test_data_set_*'))):
        ds = {'inputs': [], 'outputs': []}
        for k, gi in enumerate(m.graph.input):
            t = onnx.load_tensor(os.path.join(d, 'input_%d.pb' % k))
            x = nh.to_array(t)
            f = os.path.join(tmp, '%s_in%d' % (os.path.basename(d), k))
            x.tofile(f)
            ds['inputs'].append({'name': gi.name, 'file': f, 'dims': list(x.shape),
                                 'dtype': {np.float32: 'float32', np.int64: 'int64'}[x.dtype.type]})
        ref = []
        for k, go in enumerate(m.graph.output):
            y = nh.to_array(onnx.load_tensor(os.path.join(d, 'output_%d.pb' % k)))
            f = os.path.join(tmp, '%s_out%d' % (os.path.basename(d), k))
            ds['outputs'].append({'name': go.name, 'file': f})
            ref.append((f, y))
        spec['sets'].append(ds)
        refs.append((os.path.basename(d), ref))
    js = os.path.join(tmp, 'run.js')
    open(js, 'w').write(JS)
    sp = os.path.join(tmp, 'spec.json')
    json.dump(spec, open(sp, 'w'))
    r = subprocess.run(['node', js, ortdir, model, sp, level, str(nt), other, olevel],
                       capture_output=True, text=True)
    if r.returncode:
        print('FAIL ort:', r.stderr.strip().splitlines()[-1] if r.stderr.strip() else '?')
        return 1
    ok = True
    for name, ref in refs:
        for f, y in ref:
            got = np.fromfile(f + '.ort', dtype=np.float32).reshape(y.shape)
            ae = float(np.max(np.abs(got - y)))
            good = bool(np.allclose(got, y, rtol=1e-3, atol=1e-4))
            ok &= good
            print('%s %s max_abs_err %.3g %s' % (name, os.path.basename(f), ae, 'ok' if good else 'FAIL'))
    print(r.stdout.strip())
    return 0 if ok else 1

sys.exit(main())
