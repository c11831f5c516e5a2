#!/usr/bin/env node
'use strict';
// Reference outputs of a TF.js graph model for tandem's importer tests:
//   node tfjs_run.js MODEL_JSON INPUT.npy OUT_DIR [--outputs a,b] [--backend cpu|wasm]
// Writes OUT_DIR/<output name with '/' and ':' as '_'>.npy for every output,
// and OUT_DIR/outputs.json: {name: {file, shape, dtype}} in output order.
const fs = require('fs');
const path = require('path');
const { parseArgs } = require('util');
const tf = require('@tensorflow/tfjs');
const { readNpy, writeNpy } = require('./lib/npy');
const { loadLocalGraphModel, executeGraph } = require('./lib/local_graph_model');
const { useBackend } = require('./lib/backend');

const USAGE = 'usage: tfjs_run.js MODEL_JSON INPUT.npy OUT_DIR [--outputs name1,name2] [--backend cpu|wasm]';

function sanitize(name) {
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}

function checkInputShape(spec, shape) {
  if (spec.shape == null) return;
  const fits = spec.shape.length === shape.length && spec.shape.every((d, i) => d == null || d < 0 || d === shape[i]);
  if (!fits) {
    throw new Error(`input '${spec.name}' expects shape [${spec.shape.map((d) => (d == null || d < 0 ? '?' : d))}], ` +
      `the .npy has [${shape}]`);
  }
}

function uniqueFileNames(names) {
  const used = new Set();
  return names.map((name) => {
    let base = sanitize(name);
    for (let i = 1; used.has(base); i++) base = `${sanitize(name)}_${i}`;
    used.add(base);
    return `${base}.npy`;
  });
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { outputs: { type: 'string' }, backend: { type: 'string', default: 'cpu' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help || positionals.length !== 3) {
    console.error(USAGE);
    process.exit(values.help ? 0 : 2);
  }
  const [modelJson, inputNpy, outDir] = positionals;

  const backend = await useBackend(tf, values.backend);
  const t0 = performance.now();
  const model = await loadLocalGraphModel(tf, modelJson);
  const tLoaded = performance.now();

  if (model.inputs.length !== 1) {
    throw new Error(`model has ${model.inputs.length} inputs (${model.inputs.map((i) => i.name)}); tfjs_run.js feeds exactly one`);
  }
  const inputSpec = model.inputs[0];
  const npy = readNpy(inputNpy);
  checkInputShape(inputSpec, npy.shape);
  if (inputSpec.dtype && inputSpec.dtype !== npy.dtype) {
    throw new Error(`input '${inputSpec.name}' is ${inputSpec.dtype}, the .npy is ${npy.dtype}`);
  }
  const outputNames = values.outputs ? values.outputs.split(',').map((s) => s.trim()).filter(Boolean)
    : model.outputs.map((o) => o.name);

  const input = tf.tensor(npy.data, npy.shape, npy.dtype);
  const tExec = performance.now();
  let results = await executeGraph(model, { [inputSpec.name]: input }, outputNames);
  if (!Array.isArray(results)) results = [results];
  const arrays = results.map((t) => t.dataSync()); // dataSync also forces completion for the timing
  const tDone = performance.now();

  fs.mkdirSync(outDir, { recursive: true });
  const files = uniqueFileNames(outputNames);
  const index = {};
  outputNames.forEach((name, i) => {
    const t = results[i];
    writeNpy(path.join(outDir, files[i]), t.dtype, t.shape, arrays[i]);
    index[name] = { file: files[i], shape: t.shape, dtype: t.dtype };
    const nonFinite = t.dtype === 'float32' ? arrays[i].reduce((n, v) => n + (Number.isFinite(v) ? 0 : 1), 0) : 0;
    console.log(`${name}: [${t.shape}] ${t.dtype} -> ${files[i]}${nonFinite ? `  (${nonFinite} non-finite values)` : ''}`);
  });
  const lines = Object.entries(index).map(([name, entry]) => `  ${JSON.stringify(name)}: ${JSON.stringify(entry)}`);
  fs.writeFileSync(path.join(outDir, 'outputs.json'), `{\n${lines.join(',\n')}\n}\n`);
  console.log(`backend ${backend.backend}: load ${(tLoaded - t0).toFixed(0)} ms, execute ${(tDone - tExec).toFixed(1)} ms`);
}

main().catch((e) => {
  console.error(`tfjs_run.js: ${e.message}`);
  process.exit(1);
});
