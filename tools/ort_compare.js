// Saves ONNX Runtime's basic-level optimized graph of a model (a measuring
// peer for docs/PASSES.md; never a build or CI dependency). Run from a
// folder where `onnxruntime-node` is installed:
//   node ort_compare.js MODEL OUT.onnx [SYMBOL=VALUE ...]
const ort = require('onnxruntime-node');
async function main() {
  const [model, out, ...dims] = process.argv.slice(2);
  const freeDimensionOverrides = {};
  for (const d of dims) {
    const [k, v] = d.split('=');
    freeDimensionOverrides[k] = Number(v);
  }
  await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'basic',
    optimizedModelFilePath: out,
    freeDimensionOverrides,
  });
}
main().catch((e) => { console.error(String(e)); process.exit(1); });
