"""Checks optimized models against their originals (issue 10 item 1).
LIST: lines "OPTIMIZED<TAB>ORIGINAL<TAB>LABEL". For each pair:
- every declared type of the original's graph inputs and outputs, of the
  outputs of If/Loop/Scan bodies still present (matched by the node's
  first output name) and, for LABELs that end in ':noop', of its value_info,
  is kept or refined in the optimized model: same kind and element type, a
  shape where there was one, with the same rank; every known dim and every
  symbol the same (this test fixes no dims); only an unknown dim may become
  known or named (under to_fp16, a graph input that is also an initializer,
  as before IR 4, may become float16 with its weight);
- onnx.checker.check_model(full_check=True) accepts the optimized model
  whenever it accepts the original.
Prints one line per failure and a summary; exits 1 on any failure.
With --expect MODEL NAME=DIMS...: the dims MODEL declares for graph inputs
and outputs (a run with --shape/--dim fixes some)."""
import sys

import onnx


def type_problem(o, n, where):
    """Why n does not keep or refine the declared type o, or None."""
    kind = o.WhichOneof('value')
    if kind is None:
        return None
    if n.WhichOneof('value') != kind:
        return '%s: kind %s became %s' % (where, kind, n.WhichOneof('value'))
    if kind in ('tensor_type', 'sparse_tensor_type'):
        a, b = getattr(o, kind), getattr(n, kind)
        if a.elem_type and a.elem_type != b.elem_type:
            return '%s: element type %d became %d' % (where, a.elem_type, b.elem_type)
        if not a.HasField('shape'):
            return None
        if not b.HasField('shape'):
            return '%s: the shape was dropped' % where
        if len(a.shape.dim) != len(b.shape.dim):
            return '%s: rank %d became %d' % (where, len(a.shape.dim), len(b.shape.dim))
        for k, (x, y) in enumerate(zip(a.shape.dim, b.shape.dim)):
            if x.HasField('dim_value') and (not y.HasField('dim_value') or
                                            y.dim_value != x.dim_value):
                return '%s: dim %d (%d) became %s' % (where, k, x.dim_value, str(y).strip() or '?')
            if x.HasField('dim_param') and (not y.HasField('dim_param') or
                                            y.dim_param != x.dim_param):
                return '%s: dim %d (%s) became %s' % (where, k, x.dim_param, str(y).strip() or '?')
        return None
    if kind in ('sequence_type', 'optional_type'):
        return type_problem(getattr(o, kind).elem_type, getattr(n, kind).elem_type, where)
    if kind == 'map_type':
        if o.map_type.key_type != n.map_type.key_type:
            return '%s: map key type changed' % where
        return type_problem(o.map_type.value_type, n.map_type.value_type, where)
    return None


def subgraphs(node):
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.name, a.g
        for i, g in enumerate(a.graphs):
            yield '%s[%d]' % (a.name, i), g


def graph_problems(go, gn, where, value_info, fp16=False):
    out = []
    ins = {v.name: v for v in gn.input}
    inits = {t.name for t in gn.initializer}
    for v in go.input:
        if v.name not in ins:
            out.append('%s: input %s is gone' % (where, v.name))
            continue
        t = ins[v.name].type
        if fp16 and v.name in inits and t.tensor_type.elem_type == onnx.TensorProto.FLOAT16:
            # to_fp16 converts weights; before IR 4 a weight is also listed
            # as an input, whose type follows it (issue 15).
            t = onnx.TypeProto()
            t.CopyFrom(ins[v.name].type)
            t.tensor_type.elem_type = onnx.TensorProto.FLOAT
        p = type_problem(v.type, t, '%s input %s' % (where, v.name))
        if p:
            out.append(p)
    if len(go.output) != len(gn.output):
        out.append('%s: %d outputs became %d' % (where, len(go.output), len(gn.output)))
    for v, w in zip(go.output, gn.output):
        if v.name != w.name:
            out.append('%s: output %s renamed %s' % (where, v.name, w.name))
        p = type_problem(v.type, w.type, '%s output %s' % (where, v.name))
        if p:
            out.append(p)
    if value_info:
        vis = {v.name: v for v in gn.value_info}
        for v in go.value_info:
            if v.name not in vis:
                out.append('%s: value_info %s dropped' % (where, v.name))
                continue
            p = type_problem(v.type, vis[v.name].type, '%s value_info %s' % (where, v.name))
            if p:
                out.append(p)
    by_out = {n.output[0]: n for n in gn.node if n.output}
    for n in go.node:
        m = by_out.get(n.output[0]) if n.output else None
        if m is None or m.op_type != n.op_type:
            continue
        subs = dict(subgraphs(m))
        for name, g in subgraphs(n):
            if name in subs:
                out += graph_problems(g, subs[name], '%s/%s.%s' % (where, n.op_type, name),
                                      value_info)
    return out


def checker_ok(m):
    try:
        onnx.checker.check_model(m, full_check=True)
        return None
    except Exception as e:  # noqa: BLE001 - any checker failure counts
        return str(e).splitlines()[0][:200] if str(e) else type(e).__name__


def main(listfile):
    originals = {}
    bad = pairs = 0
    for line in open(listfile):
        opt, src, label = line.rstrip('\n').split('\t')
        if src not in originals:
            mo = onnx.load(src, load_external_data=False)
            originals[src] = (mo, checker_ok(mo) is None)
        mo, orig_ok = originals[src]
        mn = onnx.load(opt, load_external_data=False)
        pairs += 1
        probs = graph_problems(mo.graph, mn.graph, 'main', label.endswith(':noop'),
                               'to_fp16' in label)
        if orig_ok:
            why = checker_ok(mn)
            if why:
                probs.append('ONNX checker: %s' % why)
        for p in probs[:3]:
            print('FAIL %s [%s]: %s' % (src, label, p))
        bad += bool(probs)
    rejected = sum(1 for _, ok in originals.values() if not ok)
    print('declared types: %d optimized models of %d originals checked, %d failed; '
          'ONNX checker run on those of the %d originals it accepts' %
          (pairs, len(originals), bad, len(originals) - rejected))
    return 1 if bad else 0


def dims_str(t):
    if not t.tensor_type.HasField('shape'):
        return '-'
    return ','.join(d.dim_param if d.HasField('dim_param') else
                    str(d.dim_value) if d.HasField('dim_value') else '?'
                    for d in t.tensor_type.shape.dim)


def expect(path, specs):
    """--expect MODEL NAME=d0,d1 ...: the graph input or output NAME of
    MODEL declares exactly these dims; the checker accepts MODEL."""
    m = onnx.load(path, load_external_data=False)
    vals = {v.name: v for v in list(m.graph.input) + list(m.graph.output)}
    bad = 0
    for spec in specs:
        name, want = spec.split('=', 1)
        got = dims_str(vals[name].type) if name in vals else 'missing'
        if got != want:
            print('FAIL %s: %s declares [%s], expected [%s]' % (path, name, got, want))
            bad += 1
    why = checker_ok(m)
    if why:
        print('FAIL %s: ONNX checker: %s' % (path, why))
        bad += 1
    return 1 if bad else 0


if __name__ == '__main__':
    if sys.argv[1] == '--expect':
        sys.exit(expect(sys.argv[2], sys.argv[3:]))
    sys.exit(main(sys.argv[1]))
