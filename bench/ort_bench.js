// ONNX Runtime's latency on one model, as a measuring peer for
// bench/dnnl_bench.sh (never a build or test dependency). Run with
// NODE_PATH pointing at a folder holding onnxruntime-node:
//   node ort_bench.js MODEL THREADS WARMUP ITERS NAME:TYPE:DxDxD[:MAX] ...
// TYPE float (uniform -1..1), int64 or int32 (0..MAX-1, default 2: masks/ids),
// or bool (true with probability 3/4, and always on the diagonal of a square
// last pair of dims, so no mask row is empty).
// Prints "min p50" in ms (nearest-rank p50 of ITERS timed runs), with ONNX
// Runtime's default graph optimizations, intraOpNumThreads = THREADS,
// sequential execution.
const ort = require('onnxruntime-node');
async function main() {
  const [model, threads, warmup, iters, ...specs] = process.argv.slice(2);
  const s = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential',
  });
  const feeds = {};
  let seed = 1;
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  for (const sp of specs) {
    const [name, type, dims, max] = sp.split(':');
    const shape = dims.split('x').map(Number);
    const n = shape.reduce((a, b) => a * b, 1);
    if (type === 'float') {
      const d = new Float32Array(n);
      for (let i = 0; i < n; i++) d[i] = rnd() * 2 - 1;
      feeds[name] = new ort.Tensor('float32', d, shape);
    } else if (type === 'bool') {
      const d = new Uint8Array(n), w = shape[shape.length - 1], h = shape.length > 1 ? shape[shape.length - 2] : 0;
      for (let i = 0; i < n; i++) d[i] = (rnd() < 0.75 || (h === w && Math.floor(i / w) % h === i % w)) ? 1 : 0;
      feeds[name] = new ort.Tensor('bool', d, shape);
    } else if (type === 'int32') {
      const m = Number(max || 2);
      const d = new Int32Array(n);
      for (let i = 0; i < n; i++) d[i] = Math.floor(rnd() * m);
      feeds[name] = new ort.Tensor('int32', d, shape);
    } else {
      const m = Number(max || 2);
      const d = new BigInt64Array(n);
      for (let i = 0; i < n; i++) d[i] = BigInt(Math.floor(rnd() * m));
      feeds[name] = new ort.Tensor('int64', d, shape);
    }
  }
  for (let i = 0; i < Number(warmup); i++) await s.run(feeds);
  const t = [];
  for (let i = 0; i < Number(iters); i++) {
    const t0 = process.hrtime.bigint();
    await s.run(feeds);
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  t.sort((a, b) => a - b);
  console.log(t[0].toFixed(3), t[Math.ceil(t.length / 2) - 1].toFixed(3));
}
main().catch((e) => { console.error(String(e)); process.exit(1); });
