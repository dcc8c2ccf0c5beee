#!/usr/bin/env python3
# Checks fuse_norm_cast against ONNX Runtime (a measuring peer, never a
# build or test dependency): a float16 model with a decomposed float32
# LayerNorm between Casts (parameters on the float32 side, or in float16
# after the Cast back) is optimized and both files run in onnxruntime-node
# on the same float16 input; prints the fused ops and the differences.
#   python3 tools/ort_norm_cast.py build/onnxscope /tmp/ort
import os, subprocess, sys, tempfile
import numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh

RUN_JS = r"""
const ort = require('onnxruntime-node'); const fs = require('fs');
(async () => {
  const [model, inb, dims, outf] = process.argv.slice(2);
  const s = await ort.InferenceSession.create(model, {graphOptimizationLevel: 'disabled'});
  const b = fs.readFileSync(inb);
  const x = new Uint16Array(b.buffer, b.byteOffset, b.length / 2);
  const r = await s.run({[s.inputNames[0]]: new ort.Tensor('float16', x, dims.split(',').map(Number))});
  const o = r[s.outputNames[0]];
  fs.writeFileSync(outf, Buffer.from(o.data.buffer, o.data.byteOffset, o.data.byteLength));
})().catch((e) => { console.error(String(e)); process.exit(1); });
"""
H, SHAPE = 64, [4, 16, 64]


def model(opset, tail, rng):
    f = lambda n, a, dt=np.float32: nh.from_array(np.asarray(a, dt), n)
    mk = h.make_node
    inits = [f('two', 2.0), f('eps', 1e-5)]
    nodes = [mk('Cast', ['h'], ['x'], to=1), mk('ReduceMean', ['x'], ['mu'], axes=[-1]),
             mk('Sub', ['x', 'mu'], ['d']), mk('Pow', ['d', 'two'], ['sq']),
             mk('ReduceMean', ['sq'], ['var'], axes=[-1]), mk('Add', ['var', 'eps'], ['ve']),
             mk('Sqrt', ['ve'], ['sd']), mk('Div', ['d', 'sd'], ['n'])]
    if tail:
        inits += [f('g', rng.uniform(.5, 1.5, H), np.float16), f('b', rng.uniform(-.5, .5, H), np.float16)]
        nodes += [mk('Cast', ['n'], ['n16'], to=10), mk('Mul', ['n16', 'g'], ['s']), mk('Add', ['s', 'b'], ['y'])]
    else:
        inits += [f('g', rng.uniform(.5, 1.5, H)), f('b', rng.uniform(-.5, .5, H))]
        nodes += [mk('Mul', ['n', 'g'], ['s']), mk('Add', ['s', 'b'], ['s2']), mk('Cast', ['s2'], ['y'], to=10)]
    vi = h.make_tensor_value_info
    g = h.make_graph(nodes, 'ln16', [vi('h', T.FLOAT16, SHAPE)], [vi('y', T.FLOAT16, SHAPE)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid('', opset)])
    m.ir_version = 8
    return m


def main():
    exe, ort_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix='ort_norm_cast_')
    with open(os.path.join(ort_dir, 'ort_norm_cast_run.js'), 'w') as f:
        f.write(RUN_JS)
    rng = np.random.default_rng(1)
    bad = 0
    for opset, tail, level, target in ((17, False, 'extended', 'onnx'), (17, True, 'extended', 'onnx'),
                                       (13, False, 'all', 'ort')):
        src, opt = os.path.join(tmp, 'm.onnx'), os.path.join(tmp, 'm.opt.onnx')
        onnx.save(model(opset, tail, rng), src)
        subprocess.run([exe, 'optimize', src, '-o', opt, '--level', level, '--target', target, '--force'],
                       check=True, capture_output=True)
        inb = os.path.join(tmp, 'in.bin')
        rng.uniform(-3, 3, SHAPE).astype(np.float16).tofile(inb)
        outs = []
        for m in (src, opt):
            out = os.path.join(tmp, 'out.bin')
            subprocess.run(['node', 'ort_norm_cast_run.js', m, inb, ','.join(map(str, SHAPE)), out],
                           cwd=ort_dir, check=True)
            outs.append(np.fromfile(out, np.float16).astype(np.float64))
        a, b = outs
        # scale and bias are applied in float16 after the fusion: n * scale
        # is rounded before + bias, so where the two cancel the error is an
        # ulp of the terms, not of the small result; bound: one float16 ulp
        # of the largest |y|.
        ulp = float(np.spacing(np.float16(np.abs(a).max())))
        ok = bool(np.all(np.abs(a - b) <= ulp))
        bad += not ok
        ops = [n.op_type for n in onnx.load(opt).graph.node]
        print('%-4s opset %d %-9s %s/%s %s max abs err %.3g, %d/%d values differ (bound: 1 ulp of max |y| = %.3g)' % (
            'ok' if ok else 'FAIL', opset, 'fp16 tail' if tail else 'fp32 params', level, target, ops,
            np.abs(a - b).max(), int((a != b).sum()), a.size, ulp))
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
