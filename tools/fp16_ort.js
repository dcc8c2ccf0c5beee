// Runs float16 models in ONNX Runtime (a measuring peer for docs/PASSES.md
// "to_fp16"; never a build or test dependency) on a backend-style case's
// stored inputs and compares the outputs with the stored float32 outputs:
// cosine similarity and the largest error relative to each reference.
// Run from a folder where `onnxruntime-node` is installed (or with
// NODE_PATH pointing at its node_modules):
//   node fp16_ort.js CASE_DIR MODEL.onnx [SET]
// CASE_DIR holds test_data_set_SET/input_K.pb and output_K.pb (raw_data
// TensorProtos, as ../shared/models has them). Prints one JSON line.
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// The few TensorProto fields these files use: dims (1), data_type (2),
// name (8), raw_data (9).
function readTensor(file) {
  const b = fs.readFileSync(file);
  let p = 0;
  const varint = () => {
    let v = 0n, s = 0n;
    for (;;) {
      const c = b[p++];
      v |= BigInt(c & 0x7f) << s;
      if (!(c & 0x80)) return v;
      s += 7n;
    }
  };
  const t = { dims: [], type: 0, name: '', raw: null };
  while (p < b.length) {
    const key = Number(varint()), field = key >> 3, wire = key & 7;
    if (wire === 0) {
      const v = Number(varint());
      if (field === 1) t.dims.push(v);
      else if (field === 2) t.type = v;
    } else if (wire === 2) {
      const len = Number(varint()), body = b.subarray(p, p + len);
      p += len;
      if (field === 1) { // packed dims
        const save = p; let q = 0;
        while (q < body.length) {
          let v = 0n, s = 0n;
          for (;;) { const c = body[q++]; v |= BigInt(c & 0x7f) << s; if (!(c & 0x80)) break; s += 7n; }
          t.dims.push(Number(v));
        }
        p = save;
      } else if (field === 8) t.name = body.toString();
      else if (field === 9) t.raw = Buffer.from(body);
    } else if (wire === 5) p += 4;
    else if (wire === 1) p += 8;
    else throw new Error(`${file}: unsupported wire type ${wire}`);
  }
  const ab = t.raw.buffer.slice(t.raw.byteOffset, t.raw.byteOffset + t.raw.length);
  const kinds = { 1: ['float32', Float32Array], 6: ['int32', Int32Array], 7: ['int64', BigInt64Array], 10: ['float16', Uint16Array], 11: ['float64', Float64Array] };
  const k = kinds[t.type];
  if (!k) throw new Error(`${file}: data_type ${t.type} not handled`);
  return { name: t.name, tensor: new ort.Tensor(k[0], new k[1](ab), t.dims) };
}

function half(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
const values = (t) => (t.type === 'float16' ? Array.from(t.data, half) : Array.from(t.data, Number));

async function main() {
  const [dir, model, set = '0'] = process.argv.slice(2);
  const d = path.join(dir, `test_data_set_${set}`);
  const feeds = {}, refs = [];
  for (let k = 0; fs.existsSync(path.join(d, `input_${k}.pb`)); k++) {
    const { name, tensor } = readTensor(path.join(d, `input_${k}.pb`));
    feeds[name] = tensor;
  }
  for (let k = 0; fs.existsSync(path.join(d, `output_${k}.pb`)); k++)
    refs.push(readTensor(path.join(d, `output_${k}.pb`)));
  const sess = await ort.InferenceSession.create(model);
  const t0 = process.hrtime.bigint();
  const out = await sess.run(feeds);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  let minCos = 1, maxRel = 0;
  for (const r of refs) {
    const a = values(r.tensor), b = values(out[r.name]);
    let dot = 0, na = 0, nb = 0;
    for (let i = 0; i < a.length; i++) {
      dot += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i];
      if (a[i] !== 0) maxRel = Math.max(maxRel, Math.abs(a[i] - b[i]) / Math.abs(a[i]));
    }
    const cos = na > 0 && nb > 0 ? dot / Math.sqrt(na * nb) : (na === nb ? 1 : 0);
    minCos = Math.min(minCos, cos);
  }
  console.log(JSON.stringify({ model, set: Number(set), ran: true, min_cosine: minCos, max_rel_err: maxRel, run_ms: ms }));
}
main().catch((e) => { console.log(JSON.stringify({ model: process.argv[3], ran: false, error: String(e).slice(0, 300) })); process.exit(1); });
