// Runs a model in ONNX Runtime on raw_data TensorProto inputs and prints its
// outputs as one JSON object (test_exporters.py's peer; never a build
// dependency). NODE_PATH must reach onnxruntime-node.
//   node ort_run.js MODEL.onnx[,MODEL2.onnx...] INPUT_0.pb [INPUT_1.pb ...]
// Several models (comma-separated) share one process, which loads ONNX
// Runtime once: {MODEL: outputs} or {MODEL: {"error": why}} per model.
// Only the TensorProto fields numpy_helper writes are read: dims (1),
// data_type (2), name (8), raw_data (9).
const fs = require('fs');
const ort = require('onnxruntime-node');

const KINDS = {
  1: ['float32', Float32Array], 6: ['int32', Int32Array], 7: ['int64', BigInt64Array],
  9: ['bool', Uint8Array], 10: ['float16', Uint16Array], 11: ['float64', Float64Array],
  3: ['int8', Int8Array], 2: ['uint8', Uint8Array],
};

function readTensor(file) {
  const b = fs.readFileSync(file);
  let p = 0;
  const varint = (buf, at) => {
    let v = 0n, s = 0n, q = at;
    for (;;) {
      const c = buf[q++];
      v |= BigInt(c & 0x7f) << s;
      if (!(c & 0x80)) return [v, q];
      s += 7n;
    }
  };
  const t = { dims: [], type: 0, name: '', raw: Buffer.alloc(0) };
  while (p < b.length) {
    let key; [key, p] = varint(b, p);
    const field = Number(key >> 3n), wire = Number(key & 7n);
    if (wire === 0) {
      let v; [v, p] = varint(b, p);
      if (field === 1) t.dims.push(Number(v)); else if (field === 2) t.type = Number(v);
    } else if (wire === 2) {
      let len; [len, p] = varint(b, p);
      const body = b.subarray(p, p + Number(len));
      p += Number(len);
      if (field === 1) {
        let q = 0;
        while (q < body.length) { let v; [v, q] = varint(body, q); t.dims.push(Number(v)); }
      } else if (field === 8) t.name = body.toString();
      else if (field === 9) t.raw = Buffer.from(body);
    } else if (wire === 5) p += 4;
    else if (wire === 1) p += 8;
    else throw new Error(`${file}: wire type ${wire}`);
  }
  const k = KINDS[t.type];
  if (!k) throw new Error(`${file}: data_type ${t.type} not handled`);
  const ab = t.raw.buffer.slice(t.raw.byteOffset, t.raw.byteOffset + t.raw.length);
  return [t.name, new ort.Tensor(k[0], new k[1](ab), t.dims)];
}

function half(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

async function runOne(model, feeds) {
  const sess = await ort.InferenceSession.create(model, { graphOptimizationLevel: 'disabled' });
  const res = await sess.run(feeds);
  const out = {};
  for (const name of sess.outputNames) {
    const t = res[name];
    let data = Array.from(t.data, (v) => (typeof v === 'bigint' ? Number(v) : v));
    if (t.type === 'float16' && t.data instanceof Uint16Array) data = data.map(half);
    out[name] = { dims: t.dims, type: t.type, data };
  }
  return out;
}

async function main() {
  const [models, ...inputs] = process.argv.slice(2);
  const feeds = {};
  for (const f of inputs) { const [n, t] = readTensor(f); feeds[n] = t; }
  const all = {};
  for (const m of models.split(',')) {
    try {
      all[m] = { outputs: await runOne(m, feeds) };
    } catch (e) {
      all[m] = { error: String(e).split('\n')[0] };
    }
  }
  process.stdout.write(JSON.stringify(all));
}
main().catch((e) => { console.error(String(e)); process.exit(1); });
