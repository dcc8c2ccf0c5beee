"""Writes the test models of the declared-types test (issue 10 item 1) into
OUTDIR: graph outputs, If/Loop body outputs and value_info declared with
symbolic dims (exporter-style names such as p2o.DynamicDimension.3), ops
whose output dims inference cannot know, Identity/Dropout outputs that the
elimination passes bypass, and weights held in Constant nodes.
Every model passes onnx.checker.check_model(full_check=True) here."""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

D = 'p2o.DynamicDimension.3'


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def save(m, out, name):
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, '%s/%s.onnx' % (out, name))


def model(nodes, ins, outs, opset, value_info=(), inits=()):
    g = h.make_graph(nodes, 'g', ins, outs, value_info=list(value_info),
                     initializer=list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid('', opset)])


def build(out):
    # If: both branches and the graph output keep [batch, D]; an Identity
    # after the If is a graph output (eliminate_identity bypasses it).
    tb = h.make_graph([h.make_node('Relu', ['x'], ['tr'])], 'then', [],
                      [vi('tr', T.FLOAT, ['batch', D])])
    eb = h.make_graph([h.make_node('Neg', ['x'], ['er'])], 'else', [],
                      [vi('er', T.FLOAT, ['batch', D])])
    save(model([h.make_node('If', ['c'], ['i'], then_branch=tb, else_branch=eb),
                h.make_node('Identity', ['i'], ['y']),
                h.make_node('ReduceSum', ['i'], ['z'], keepdims=1, axes=[1])],
               [vi('x', T.FLOAT, ['batch', D]), vi('c', T.BOOL, [])],
               [vi('y', T.FLOAT, ['batch', D]), vi('z', T.FLOAT, ['batch', 1])], 12,
               value_info=[vi('i', T.FLOAT, ['batch', D])]), out, 'decl_if')

    # Loop: loop-carried state [batch, 4], scan output [N, batch, 4], the
    # body's outputs declared too (the condition a scalar).
    body = h.make_graph(
        [h.make_node('Identity', ['cin'], ['cout']),
         h.make_node('Add', ['s', 's'], ['s2']),
         h.make_node('Relu', ['s2'], ['scan'])], 'body',
        [vi('it', T.INT64, []), vi('cin', T.BOOL, []), vi('s', T.FLOAT, ['batch', 4])],
        [vi('cout', T.BOOL, []), vi('s2', T.FLOAT, ['batch', 4]),
         vi('scan', T.FLOAT, ['batch', 4])])
    save(model([h.make_node('Loop', ['M', '', 's0'], ['fs', 'sc'], body=body)],
               [vi('M', T.INT64, []), vi('s0', T.FLOAT, ['batch', 4])],
               [vi('fs', T.FLOAT, ['batch', 4]), vi('sc', T.FLOAT, ['N', 'batch', 4])], 13),
         out, 'decl_loop')

    # A data-dependent dim (NonZero) behind a Transpose; a Dropout output.
    save(model([h.make_node('NonZero', ['x'], ['nz']),
                h.make_node('Transpose', ['nz'], ['t']),
                h.make_node('Dropout', ['x'], ['d'])],
               [vi('x', T.FLOAT, ['batch', 3])],
               [vi('t', T.INT64, ['nnz', 2]), vi('d', T.FLOAT, ['batch', 3])], 13),
         out, 'decl_nonzero')

    # Weights in Constant nodes (constant_to_initializer moves them) and a
    # shape chain that folds; outputs [batch, 8] and [batch, seq, 8].
    w = numpy_helper.from_array(np.ones((16, 8), np.float32), 'w')
    shp = numpy_helper.from_array(np.array([0, -1, 8], np.int64), 'shp')
    save(model([h.make_node('Constant', [], ['W'], value=w),
                h.make_node('Constant', [], ['S'], value=shp),
                h.make_node('MatMul', ['x', 'W'], ['mm']),
                h.make_node('Reshape', ['mm', 'S'], ['r']),
                h.make_node('ReduceMean', ['r'], ['m'], axes=[1], keepdims=0)],
               [vi('x', T.FLOAT, ['batch', 'seq', 16])],
               [vi('m', T.FLOAT, ['batch', 8]), vi('r', T.FLOAT, ['batch', 'seq', 8])], 13,
               value_info=[vi('mm', T.FLOAT, ['batch', 'seq', 8])]),
         out, 'decl_constants')

    # An output declared with an unknown dim and no elem-type-changing op:
    # inference may fill the gap ([batch, ?] -> [batch, 5]); a second
    # output declared with two unknown dims.
    save(model([h.make_node('Relu', ['x'], ['a']), h.make_node('Sigmoid', ['x'], ['b'])],
               [vi('x', T.FLOAT, ['batch', 5])],
               [vi('a', T.FLOAT, ['batch', None]), vi('b', T.FLOAT, [None, None])], 13),
         out, 'decl_gaps')

    # A Reshape whose shape is a graph input: inference knows the element
    # type but not the rank. Saving the inferred type dropped the output's
    # shape, which ONNX's checker rejects ("Field 'shape' ... missing").
    save(model([h.make_node('Reshape', ['x', 's'], ['y'])],
               [vi('x', T.FLOAT, ['batch', 1]), vi('s', T.INT64, ['n'])],
               [vi('y', T.FLOAT, ['batch', 1])], 13), out, 'decl_reshape')


if __name__ == '__main__':
    build(sys.argv[1])
