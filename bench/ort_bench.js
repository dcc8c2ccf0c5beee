// ONNX Runtime's latency on one model, as a measuring peer for
// bench/dnnl_bench.sh (never a build or test dependency). Run with
// NODE_PATH pointing at a folder holding onnxruntime-node:
//   node ort_bench.js MODEL THREADS WARMUP ITERS NAME:TYPE:DxDxD[:MAX] ...
// TYPE float (uniform -1..1) or int64 (0..MAX-1, default 2: masks/ids).
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
