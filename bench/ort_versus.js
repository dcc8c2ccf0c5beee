// ONNX Runtime latency of several models on the same inputs, measured
// interleaved in one process (a measuring peer for docs/PASSES.md, never a
// build or test dependency). Run with NODE_PATH holding onnxruntime-node:
//   node ort_versus.js INPUTS.json ROUNDS RUNS LABEL=MODEL[@LEVEL] ...
// INPUTS.json: {"name": {"type": "float32"|"int64", "dims": [...], "file": raw}}.
// LEVEL is ORT's graphOptimizationLevel (default 'all', ORT's default).
// One intra-op thread, sequential. Each round runs every model RUNS times,
// in a rotating order so no model always follows the same one; prints per
// round each model's median and min ms, then the median over the rounds of
// both and each model's ratio to the first one.
const fs = require('fs');
const ort = require('onnxruntime-node');
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
async function main() {
  const [inputs, rounds, runs, ...specs] = process.argv.slice(2);
  const spec = JSON.parse(fs.readFileSync(inputs, 'utf8'));
  const feeds = {};
  for (const [name, v] of Object.entries(spec)) {
    const b = fs.readFileSync(v.file);
    const T = v.type === 'int64' ? BigInt64Array : Float32Array;
    feeds[name] = new ort.Tensor(v.type, new T(b.buffer, b.byteOffset, b.length / T.BYTES_PER_ELEMENT), v.dims);
  }
  const ms = [];
  for (const s of specs) {
    const [label, rest] = [s.slice(0, s.indexOf('=')), s.slice(s.indexOf('=') + 1)];
    const at = rest.lastIndexOf('@');
    const [path, level] = at > 0 ? [rest.slice(0, at), rest.slice(at + 1)] : [rest, 'all'];
    const sess = await ort.InferenceSession.create(path, {
      graphOptimizationLevel: level, intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
    });
    for (let i = 0; i < 5; i++) await sess.run(feeds);
    ms.push({ label: label + '@' + level, sess, meds: [], mins: [] });
  }
  for (let r = 0; r < Number(rounds); r++) {
    const t = ms.map(() => []);
    for (let k = 0; k < Number(runs); k++)
      for (let j = 0; j < ms.length; j++) {
        const i = (j + k + r) % ms.length;
        const t0 = process.hrtime.bigint();
        await ms[i].sess.run(feeds);
        t[i].push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    ms.forEach((m, i) => { m.meds.push(med(t[i])); m.mins.push(Math.min(...t[i])); });
    console.log('round ' + (r + 1) + ' median / min ms: ' +
                ms.map((m, i) => m.label + ' ' + med(t[i]).toFixed(3) + ' / ' + Math.min(...t[i]).toFixed(3)).join(', '));
  }
  // On a loaded machine a run is often preempted; the minimum is the
  // least disturbed figure, the median says how often that happens.
  const b = ms[0];
  for (const m of ms)
    console.log(m.label.padEnd(24) + ' median of round medians ' + med(m.meds).toFixed(3) + ' ms (ratio ' +
                (med(m.meds) / med(b.meds)).toFixed(3) + '), median of round mins ' + med(m.mins).toFixed(3) +
                ' ms (ratio ' + (med(m.mins) / med(b.mins)).toFixed(3) + '), rounds with a lower min than ' +
                b.label + ' ' + m.mins.filter((x, i) => x < b.mins[i]).length + '/' + m.mins.length);
}
main().catch((e) => { console.error(String(e)); process.exit(1); });
