#!/usr/bin/env python3
# Measures quantize_dynamic on backend-style model folders (docs/PASSES.md):
# for each form (integer, qdq, ort) it quantizes MODEL with onnxscope, runs
# the result with onnxscope and with ONNX Runtime (onnxruntime-node, a
# measuring peer only: never a build or test dependency; graph optimizations
# disabled so it executes the graph as written) on test_data_set_*, and
# prints the cosine similarity of each to the fp32 reference outputs, the
# largest difference between the two runtimes (absolute, and relative to the
# output's largest magnitude), the ONNX checker verdict and the sizes.
#   python3 tools/ort_quant.py ONNXSCOPE ORT_DIR CASE_DIR... [--min-elems N] [--conv]
import glob, json, os, subprocess, sys, tempfile
import numpy as np, onnx
from onnx import numpy_helper as nh

JS = r"""
const ort = require(process.argv[2] + '/node_modules/onnxruntime-node'); const fs = require('fs');
(async () => {
  const [, , , model, spec] = process.argv;
  const S = JSON.parse(fs.readFileSync(spec));
  const s = await ort.InferenceSession.create(model, {graphOptimizationLevel: 'disabled', intraOpNumThreads: 1});
  const T = {float32: Float32Array, int64: BigInt64Array};
  for (const ds of S.sets) {
    const feeds = {};
    for (const i of ds.inputs) {
      const b = fs.readFileSync(i.file);
      const a = new T[i.dtype](b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
      feeds[i.name] = new ort.Tensor(i.dtype, a, i.dims);
    }
    const r = await s.run(feeds);
    for (const o of ds.outputs) fs.writeFileSync(o.file, Buffer.from(r[o.name].data.buffer));
  }
})().catch((e) => { console.error(String(e)); process.exit(1); });
"""

def cos(a, b):
    a = a.astype(np.float64).ravel(); b = b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-300))

def main():
    args = sys.argv[1:]
    extra = []
    if '--conv' in args:
        args.remove('--conv'); extra.append('--quant-conv')
    if '--min-elems' in args:
        k = args.index('--min-elems'); extra += ['--quant-min-elems', args[k + 1]]; del args[k:k + 2]
    exe, ortdir, cases = args[0], args[1], args[2:]
    tmp = tempfile.mkdtemp()
    js = os.path.join(tmp, 'run.js'); open(js, 'w').write(JS)
    for case in cases:
        model = os.path.join(case, 'model.onnx')
        name = os.path.basename(os.path.normpath(case))
        sets = sorted(glob.glob(os.path.join(case, 'test_data_set_*')))
        for form, opts in (('integer', []), ('qdq', ['--quant-format', 'qdq']),
                           ('ort', ['--target', 'ort'])):
            out = os.path.join(tmp, f'{name}_{form}.onnx')
            r = subprocess.run([exe, 'optimize', model, '-o', out, '--passes', '+quantize_dynamic',
                                '--json'] + opts + extra, capture_output=True, text=True)
            if r.returncode:
                print(name, form, 'optimize failed:', r.stderr.strip()); continue
            rep = json.loads(r.stdout)
            q = rep.get('quantization', [])
            wb = sum(e['bytes_before'] for e in q); wa = sum(e['bytes_after'] for e in q)
            try:
                onnx.checker.check_model(onnx.load(out), full_check=True); chk = 'ok'
            except Exception as e:
                chk = 'FAIL ' + str(e).splitlines()[0][:80]
            m = onnx.load(out, load_external_data=False)
            spec = {'sets': []}
            worst = {'cos_ours': 1.0, 'cos_ort': 1.0, 'abs': 0.0, 'rel': 0.0}
            for d in sets:
                ds = {'inputs': [], 'outputs': []}
                ins = sorted(glob.glob(os.path.join(d, 'input_*.pb')), key=lambda p: int(p.split('_')[-1][:-3]))
                for k, p in enumerate(ins):
                    t = onnx.load_tensor(p); a = nh.to_array(t); f = os.path.join(tmp, f'{name}_{os.path.basename(d)}_in{k}.bin')
                    a.tofile(f)
                    ds['inputs'].append({'name': m.graph.input[k].name, 'dtype': str(a.dtype), 'dims': list(a.shape), 'file': f})
                for k, o in enumerate(m.graph.output):
                    ds['outputs'].append({'name': o.name, 'file': os.path.join(tmp, f'{name}_{form}_{os.path.basename(d)}_ort{k}.bin')})
                spec['sets'].append(ds)
            sp = os.path.join(tmp, 'spec.json'); json.dump(spec, open(sp, 'w'))
            ro = subprocess.run(['node', js, ortdir, out, sp], capture_output=True, text=True)
            ort_ok = ro.returncode == 0
            for d, ds in zip(sets, spec['sets']):
                od = os.path.join(tmp, f'{name}_{form}_{os.path.basename(d)}_ours')
                ins = sorted(glob.glob(os.path.join(d, 'input_*.pb')), key=lambda p: int(p.split('_')[-1][:-3]))
                cmd = [exe, 'run', out, '--save-outputs', od]
                for k, p in enumerate(ins):
                    cmd += ['--input', f"{m.graph.input[k].name}={p}"]
                rr = subprocess.run(cmd, capture_output=True, text=True)
                if rr.returncode:
                    print(name, form, 'run failed:', rr.stderr.strip()); break
                for k, o in enumerate(ds['outputs']):
                    ref = nh.to_array(onnx.load_tensor(os.path.join(d, f'output_{k}.pb')))
                    ours = nh.to_array(onnx.load_tensor(os.path.join(od, f'output_{k}.pb')))
                    worst['cos_ours'] = min(worst['cos_ours'], cos(ours, ref))
                    if ort_ok:
                        o2 = np.fromfile(o['file'], dtype=np.float32).reshape(ours.shape)
                        worst['cos_ort'] = min(worst['cos_ort'], cos(o2, ref))
                        diff = float(np.max(np.abs(o2 - ours)))
                        worst['abs'] = max(worst['abs'], diff)
                        worst['rel'] = max(worst['rel'], diff / (float(np.max(np.abs(ref))) + 1e-30))
            print(f"{name} {form}: {len(q)} weights, {wb} -> {wa} bytes ({wa / max(wb, 1):.3f}), "
                  f"file {os.path.getsize(model)} -> {os.path.getsize(out)}, checker {chk}, "
                  f"cos(ours,fp32) {worst['cos_ours']:.5f}, " +
                  (f"cos(ort,fp32) {worst['cos_ort']:.5f}, max |ours-ort| {worst['abs']:.3g} "
                   f"({worst['rel']:.2%} of max |ref|)" if ort_ok else 'ORT failed: ' + ro.stderr.strip()[:200]))

main()
