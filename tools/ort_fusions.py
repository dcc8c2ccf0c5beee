#!/usr/bin/env python3
# Checks the fused forms onnxscope emits against ONNX Runtime (a measuring
# peer, never a build or test dependency): builds small models, one per
# fusion, optimizes them with `--level all --target ort`, and runs original
# and optimized with onnxruntime-node on the same random input.
#   python3 tools/ort_fusions.py build/onnxscope /tmp/ort   # folder holding node_modules/onnxruntime-node
import collections, os, subprocess, sys, tempfile
import numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh

RUN_JS = r"""
const ort = require('onnxruntime-node'); const fs = require('fs');
(async () => {
  const [model, inf, dims, outf] = process.argv.slice(2);
  const s = await ort.InferenceSession.create(model, {graphOptimizationLevel: 'disabled'});
  const b = fs.readFileSync(inf);
  const x = new Float32Array(b.buffer, b.byteOffset, b.length / 4);
  const r = await s.run({[s.inputNames[0]]: new ort.Tensor('float32', x, dims.split(',').map(Number))});
  fs.writeFileSync(outf, Buffer.from(r[s.outputNames[0]].data.buffer));
})().catch((e) => { console.error(String(e)); process.exit(1); });
"""

rng = np.random.default_rng(0)


def f32(name, a):
    return nh.from_array(np.asarray(a, dtype=np.float32), name)


def models():
    X, G = [1, 3, 8, 8], [4, 6]
    w, b = f32('w', rng.uniform(-1, 1, (4, 3, 3, 3))), f32('b', rng.uniform(-1, 1, 4))
    conv = h.make_node('Conv', ['x', 'w', 'b'], ['c'], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    bn4 = [f32('s', rng.uniform(.5, 2, 4)), f32('bb', rng.uniform(-1, 1, 4)),
           f32('mm', rng.uniform(-.5, .5, 4)), f32('vv', rng.uniform(.2, 3, 4))]
    wg, cg = f32('wg', rng.uniform(-1, 1, (6, 5))), f32('cg', rng.uniform(-1, 1, 5))
    pads = lambda v: nh.from_array(np.array(v, np.int64), 'pads')
    n = h.make_node
    yield 'conv_bn', [conv, n('BatchNormalization', ['c', 's', 'bb', 'mm', 'vv'], ['y'])], [w, b] + bn4, X, 13
    yield 'conv_leaky', [conv, n('LeakyRelu', ['c'], ['y'], alpha=0.1)], [w, b], X, 13
    yield 'conv_clip', [conv, n('Clip', ['c', 'lo', 'hi'], ['y'])], [w, b, f32('lo', -.5), f32('hi', 1.5)], X, 13
    yield 'conv_hsig', [conv, n('HardSigmoid', ['c'], ['y'], alpha=0.3, beta=0.4)], [w, b], X, 13
    yield 'conv_add_relu', [conv, n('Conv', ['x', 'w', 'b'], ['z'], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
                            n('Relu', ['z'], ['rz']), n('Add', ['c', 'rz'], ['s']), n('Relu', ['s'], ['y'])], [w, b], X, 13
    yield 'gemm_leaky', [n('Gemm', ['x', 'wg', 'cg'], ['g'], alpha=0.5), n('LeakyRelu', ['g'], ['y'], alpha=0.2)], [wg, cg], G, 13
    yield 'matmul_hsig', [n('MatMul', ['x', 'wg'], ['g']), n('HardSigmoid', ['g'], ['y'])], [wg], G, 13
    yield 'matmul_add_sig', [n('MatMul', ['x', 'wg'], ['g']), n('Add', ['g', 'cg'], ['a']), n('Sigmoid', ['a'], ['y'])], [wg, cg], G, 13
    yield 'matmul_bn', [n('MatMul', ['x', 'wg'], ['g']), n('BatchNormalization', ['g', 's', 'bb', 'mm', 'vv'], ['y'])], \
        [wg] + [f32(t.name, rng.uniform(.5, 2, 5)) for t in bn4], G, 13
    yield 'bn_gemm', [n('BatchNormalization', ['x', 's6', 'b6', 'm6', 'v6'], ['a']),
                      n('Gemm', ['a', 'wt', 'cg'], ['y'], transB=1, alpha=0.5, beta=2.0)], \
        [f32('s6', rng.uniform(.5, 2, 6)), f32('b6', rng.uniform(-1, 1, 6)), f32('m6', rng.uniform(-.5, .5, 6)),
         f32('v6', rng.uniform(.2, 3, 6)), f32('wt', rng.uniform(-1, 1, (5, 6))), cg], G, 13
    yield 'silu', [n('Sigmoid', ['x'], ['s']), n('Mul', ['x', 's'], ['y'])], [], G, 13
    yield 'hardswish_paddle', [n('Add', ['x', 'three'], ['a']), n('Clip', ['a', 'zero', 'six'], ['c']),
                               n('Mul', ['x', 'c'], ['p']), n('Div', ['p', 'six'], ['y'])], \
        [f32('three', 3), f32('zero', 0), f32('six', 6)], G, 14
    yield 'pad_maxpool', [n('Pad', ['x', 'pads', 'ninf'], ['p']), n('MaxPool', ['p'], ['y'], kernel_shape=[3, 3])], \
        [pads([0, 0, 1, 1, 0, 0, 1, 1]), f32('ninf', -np.inf)], X, 13
    yield 'pad_avgpool', [n('Pad', ['x', 'pads'], ['p']), n('AveragePool', ['p'], ['y'], kernel_shape=[3, 3], count_include_pad=1)], \
        [pads([0, 0, 1, 2, 0, 0, 2, 1])], X, 13
    # Transformer fusions (fuse_norm.c, fuse_gelu.c, fuse_attn.c).
    L = [2, 4, 8]
    ln_nodes = [n('ReduceMean', ['x'], ['mu'], axes=[-1]), n('Sub', ['x', 'mu'], ['d']),
                n('Mul', ['d', 'd'], ['sq']), n('ReduceMean', ['sq'], ['var'], axes=[-1]),
                n('Add', ['eps', 'var'], ['ve']), n('Sqrt', ['ve'], ['sd']), n('Reciprocal', ['sd'], ['rc']),
                n('Mul', ['d', 'rc'], ['nn']), n('Mul', ['gam', 'nn'], ['s']), n('Add', ['s', 'bet'], ['y'])]
    ln_inits = [f32('eps', 1e-5), f32('gam', rng.uniform(.5, 1.5, 8)), f32('bet', rng.uniform(-.5, .5, 8))]
    yield 'layernorm_recip', ln_nodes, ln_inits, L, 13
    yield 'rmsnorm_t5', [n('Pow', ['x', 'two'], ['sq']), n('ReduceMean', ['sq'], ['var'], axes=[-1]),
                         n('Add', ['var', 'eps'], ['ve']), n('Sqrt', ['ve'], ['sd']), n('Reciprocal', ['sd'], ['rc']),
                         n('Mul', ['x', 'rc'], ['nn']), n('Mul', ['gam', 'nn'], ['y'])], \
        [f32('two', 2), f32('eps', 1e-6), f32('gam', rng.uniform(.5, 1.5, 8))], L, 13
    gelu_tail = [n('Erf', ['u'], ['f']), n('Add', ['one', 'f'], ['e']), n('Mul', ['e', 'half'], ['hh']),
                 n('Mul', ['x', 'hh'], ['y'])]
    yield 'gelu_mul_inv_sqrt2', [n('Mul', ['x', 'k'], ['u'])] + gelu_tail, \
        [f32('k', 0.70710678), f32('one', 1), f32('half', .5)], L, 13
    yield 'bias_gelu', [n('Add', ['x', 'bias'], ['xb']),
                        n('Div', ['xb', 'k'], ['u'])] + \
        [n('Erf', ['u'], ['f']), n('Add', ['f', 'one'], ['e']), n('Mul', ['xb', 'e'], ['p']), n('Mul', ['p', 'half'], ['y'])], \
        [f32('bias', rng.uniform(-1, 1, 8)), f32('k', 1.41421356), f32('one', 1), f32('half', .5)], L, 13
    yield 'gelu_tanh', [n('Mul', ['x', 'x'], ['x2']), n('Mul', ['x2', 'x'], ['x3']), n('Mul', ['c1', 'x3'], ['q']),
                        n('Add', ['x', 'q'], ['sum']), n('Mul', ['sum', 'c2'], ['t']), n('Tanh', ['t'], ['f']),
                        n('Add', ['f', 'one'], ['e']), n('Mul', ['x', 'half'], ['hh']), n('Mul', ['hh', 'e'], ['y'])], \
        [f32('c1', 0.044715), f32('c2', 0.7978845608), f32('one', 1), f32('half', .5)], L, 13
    att, ai = [], []
    for p, perm in (('q', [0, 2, 1, 3]), ('k', [0, 2, 3, 1]), ('v', [0, 2, 1, 3])):
        ai += [f32('W' + p, rng.uniform(-.6, .6, (8, 8))), f32('b' + p, rng.uniform(-.5, .5, 8))]
        att += [n('MatMul', ['x', 'W' + p], ['m' + p]), n('Add', ['b' + p, 'm' + p], ['a' + p]),
                n('Reshape', ['a' + p, 'hs'], ['r' + p]), n('Transpose', ['r' + p], ['t' + p], perm=perm)]
    att += [n('MatMul', ['tq', 'tk'], ['qk']), n('Div', ['qk', 'two'], ['sc']), n('Softmax', ['sc'], ['pr'], axis=-1),
            n('MatMul', ['pr', 'tv'], ['cx']), n('Transpose', ['cx'], ['ct'], perm=[0, 2, 1, 3]),
            n('Reshape', ['ct', 'os'], ['y'])]
    ai += [nh.from_array(np.array([0, 0, 2, 4], np.int64), 'hs'), nh.from_array(np.array([0, 0, 8], np.int64), 'os'),
           f32('two', 2)]
    yield 'attention_nomask', att, ai, L, 13


def main():
    exe, ort_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix='ort_fusions_')
    with open(os.path.join(ort_dir, 'ort_fusions_run.js'), 'w') as f:
        f.write(RUN_JS)
    bad = 0
    for name, nodes, inits, xshape, opset in models():
        g = h.make_graph(nodes, name, [h.make_tensor_value_info('x', T.FLOAT, xshape)],
                         [h.make_tensor_value_info('y', T.FLOAT, None)], inits)
        m = onnx.shape_inference.infer_shapes(h.make_model(g, opset_imports=[h.make_opsetid('', opset)], ir_version=7))
        src, opt = os.path.join(tmp, name + '.onnx'), os.path.join(tmp, name + '.opt.onnx')
        onnx.save(m, src)
        subprocess.run([exe, 'optimize', src, '-o', opt, '--level', 'all', '--target', 'ort'],
                       check=True, capture_output=True)
        x = rng.uniform(-4, 4, xshape).astype(np.float32)
        x.tofile(os.path.join(tmp, 'in.bin'))
        outs = []
        for f in (src, opt):
            subprocess.run(['node', 'ort_fusions_run.js', f, os.path.join(tmp, 'in.bin'),
                            ','.join(map(str, xshape)), os.path.join(tmp, 'out.bin')],
                           cwd=ort_dir, check=True)
            outs.append(np.fromfile(os.path.join(tmp, 'out.bin'), dtype=np.float32))
        ops = dict(collections.Counter(nd.op_type for nd in onnx.load(opt).graph.node))
        err = float(np.abs(outs[0] - outs[1]).max())
        ok = np.allclose(outs[1], outs[0], rtol=1e-4, atol=1e-5)
        bad += not ok
        print('%-4s %-18s %-32s max abs err %.2e' % ('ok' if ok else 'FAIL', name, ops, err))
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
