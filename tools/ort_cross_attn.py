#!/usr/bin/env python3
# Checks fuse_multihead_attention against ONNX Runtime (a measuring peer,
# never a build or test dependency): a BERT-form cross-attention block (Q
# from x, K/V from xkv; K from xkv and V from another input xv of width 12;
# K and V given as inputs without projection; each with a right- and a
# non-right-padded 0/1 mask over the keys) is optimized with `--level all --target ort` and both files run in
# onnxruntime-node on the same inputs.
#   python3 tools/ort_cross_attn.py build/onnxscope /tmp/ort
import collections, json, os, subprocess, sys, tempfile
import numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh

RUN_JS = r"""
const ort = require('onnxruntime-node'); const fs = require('fs');
(async () => {
  const [model, inj, outf] = process.argv.slice(2);
  const s = await ort.InferenceSession.create(model, {graphOptimizationLevel: 'disabled'});
  const ins = JSON.parse(fs.readFileSync(inj)); const feeds = {};
  for (const k in ins) {
    const [t, dims, data] = ins[k];
    feeds[k] = new ort.Tensor(t, t === 'int64' ? BigInt64Array.from(data.map(BigInt))
                                               : Float32Array.from(data), dims);
  }
  const r = await s.run(feeds);
  fs.writeFileSync(outf, JSON.stringify(Array.from(r[s.outputNames[0]].data)));
})().catch((e) => { console.error(String(e)); process.exit(1); });
"""

B, S, SK, H, N = 2, 4, 6, 8, 2
rng = np.random.default_rng(0)


SRC = {'shared': ('xkv', 'xkv'), 'separate': ('xkv', 'xv'), 'raw': ('kin', 'vin')}
WIDTH = {'x': H, 'xkv': H, 'xv': 12, 'kin': H, 'vin': H}


def model(kind):
    f = lambda n, a: nh.from_array(np.asarray(a, np.float32), n)
    i = lambda n, a: nh.from_array(np.asarray(a, np.int64), n)
    mk = h.make_node
    inits = [i('sh', [0, 0, N, H // N]), i('os', [0, 0, H]), i('ax', [1, 2]), f('one', 1.0),
             f('big', -10000.0), f('c', 2.0)]
    nodes = []
    ks, vs = SRC[kind]
    for p, src, perm in (('Q', 'x', [0, 2, 1, 3]), ('K', ks, [0, 2, 3, 1]),
                         ('V', vs, [0, 2, 1, 3])):
        if src in ('kin', 'vin'):  # no projection: the input is split into heads as it is
            nodes += [mk('Reshape', [src, 'sh'], ['rs' + p]), mk('Transpose', ['rs' + p], [p], perm=perm)]
            continue
        inits += [f('W' + p, rng.uniform(-.6, .6, (WIDTH[src], H))), f('b' + p, rng.uniform(-.5, .5, H))]
        nodes += [mk('MatMul', [src, 'W' + p], ['mm' + p]), mk('Add', ['mm' + p, 'b' + p], ['ad' + p]),
                  mk('Reshape', ['ad' + p, 'sh'], ['rs' + p]), mk('Transpose', ['rs' + p], [p], perm=perm)]
    nodes += [mk('Unsqueeze', ['mask', 'ax'], ['mu']), mk('Cast', ['mu'], ['mf'], to=1),
              mk('Sub', ['one', 'mf'], ['ms']), mk('Mul', ['big', 'ms'], ['M']),
              mk('MatMul', ['Q', 'K'], ['qk']), mk('Div', ['qk', 'c'], ['sd']),
              mk('Add', ['sd', 'M'], ['sm']), mk('Softmax', ['sm'], ['P'], axis=-1),
              mk('MatMul', ['P', 'V'], ['ctx']), mk('Transpose', ['ctx'], ['ct'], perm=[0, 2, 1, 3]),
              mk('Reshape', ['ct', 'os'], ['y'])]
    vi = h.make_tensor_value_info
    ins = [vi('x', T.FLOAT, ['b', 's', H])] + [vi(n, T.FLOAT, ['b', 't', WIDTH[n]])
                                                for n in dict.fromkeys((ks, vs))]
    g = h.make_graph(nodes, 'cross', ins + [vi('mask', T.INT64, ['b', 't'])],
                     [vi('y', T.FLOAT, ['b', 's', H])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid('', 13)])
    m.ir_version = 8
    return m


def main():
    exe, ort_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix='ort_cross_')
    with open(os.path.join(ort_dir, 'ort_cross_run.js'), 'w') as f:
        f.write(RUN_JS)
    bad = 0
    for kind, name, holes in [(k, n, hs) for k in SRC for n, hs in
                              (('right-padded', [(0, 4), (1, 5)]), ('holes', [(0, 1), (1, 3)]))]:
        src, opt = os.path.join(tmp, kind + '.onnx'), os.path.join(tmp, kind + '.opt.onnx')
        onnx.save(model(kind), src)
        subprocess.run([exe, 'optimize', src, '-o', opt, '--level', 'all', '--target', 'ort'],
                       check=True, capture_output=True)
        ops = dict(collections.Counter(nd.op_type for nd in onnx.load(opt).graph.node))
        bad += 'MultiHeadAttention' not in ops
        mask = np.ones((B, SK), np.int64)
        for b, k in holes:
            mask[b, k:] = 0 if name == 'right-padded' else 1
            mask[b, k] = 0
        inp = {'x': ['float32', [B, S, H], rng.uniform(-1, 1, B * S * H).tolist()],
               'mask': ['int64', [B, SK], mask.ravel().tolist()]}
        for n in dict.fromkeys(SRC[kind]):
            inp[n] = ['float32', [B, SK, WIDTH[n]], rng.uniform(-1, 1, B * SK * WIDTH[n]).tolist()]
        with open(os.path.join(tmp, 'in.json'), 'w') as f:
            json.dump(inp, f)
        outs = []
        for m in (src, opt):
            subprocess.run(['node', 'ort_cross_run.js', m, os.path.join(tmp, 'in.json'),
                            os.path.join(tmp, 'out.json')], cwd=ort_dir, check=True)
            outs.append(np.array(json.load(open(os.path.join(tmp, 'out.json')))))
        err = float(np.abs(outs[0] - outs[1]).max())
        assert outs[0].size == B * S * H and np.abs(outs[0]).max() > 0.1  # a real output
        ok = np.allclose(outs[1], outs[0], rtol=1e-4, atol=1e-5)
        bad += not ok
        print('%-4s cross-attention, K/V %-8s %-12s mask %s max abs err %.2e' %
              ('ok' if ok else 'FAIL', kind, name, ops, err))
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
