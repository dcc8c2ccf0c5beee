// ONNX Runtime's latency on one model and given inputs: a measuring peer for
// bench/transformer_bench.sh (never a build or test dependency). Run with
// NODE_PATH holding onnxruntime-node:
//   node ort_latency.js MODEL INPUTS.json THREADS WARMUP ITERS
// INPUTS.json: {"name": {"type": "float32"|"int64", "dims": [...], "data": [...]}}.
// Prints "min p50" in ms (nearest-rank p50), with ONNX Runtime's default
// graph optimization level, intraOpNumThreads = THREADS, sequential execution.
const fs = require('fs');
const ort = require('onnxruntime-node');
async function main() {
  const [model, inputs, threads, warmup, iters] = process.argv.slice(2);
  const sess = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential',
  });
  const spec = JSON.parse(fs.readFileSync(inputs, 'utf8'));
  const feeds = {};
  for (const [name, v] of Object.entries(spec)) {
    const data = v.type === 'int64' ? BigInt64Array.from(v.data, (x) => BigInt(x))
                                     : Float32Array.from(v.data);
    feeds[name] = new ort.Tensor(v.type, data, v.dims);
  }
  for (let i = 0; i < Number(warmup); i++) await sess.run(feeds);
  const t = [];
  for (let i = 0; i < Number(iters); i++) {
    const t0 = process.hrtime.bigint();
    await sess.run(feeds);
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  t.sort((a, b) => a - b);
  console.log(t[0].toFixed(3), t[Math.ceil(t.length / 2) - 1].toFixed(3));
}
main().catch((e) => { console.error(String(e)); process.exit(1); });
