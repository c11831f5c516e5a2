#!/usr/bin/env node
'use strict';
// Throughput of a TF.js graph model under tfjs in Node (no tfjs-node):
//   node tfjs_bench.js MODEL_JSON --shape 1,512,512,3 [--outputs a,b] [--backend cpu|wasm] [--iters N] [--warmup W] [--threads T]
// One iteration is execute() plus dataSync() of every output (the
// signature's, or --outputs: e.g. a detector's heads without its batch-1
// post-processing). A batch above 1 frees the input's batch extent, which
// converters fix to 1. The last line of output is JSON:
// {"backend","batch","img_per_s","p50_ms",...}.
const { parseArgs } = require('util');
const tf = require('@tensorflow/tfjs');
const { loadLocalGraphModel, executeGraph } = require('./lib/local_graph_model');
const { useBackend } = require('./lib/backend');

const USAGE = 'usage: tfjs_bench.js MODEL_JSON --shape 1,512,512,3 [--outputs a,b] [--backend cpu|wasm] [--iters N] [--warmup W] [--threads T]';

function positiveInt(text, flag, allowZero = false) {
  const n = Number(text);
  if (!Number.isInteger(n) || n < (allowZero ? 0 : 1)) throw new Error(`${flag} must be a ${allowZero ? 'non-negative' : 'positive'} integer, got '${text}'`);
  return n;
}

function percentile(sorted, p) {
  const i = (sorted.length - 1) * p;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (i - lo);
}

async function runOnce(model, feeds, outputNames) {
  let out = await executeGraph(model, feeds, outputNames);
  if (!Array.isArray(out)) out = [out];
  for (const t of out) t.dataSync();
  tf.dispose(out);
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      shape: { type: 'string' },
      outputs: { type: 'string' },
      backend: { type: 'string', default: 'cpu' },
      iters: { type: 'string', default: '20' },
      warmup: { type: 'string', default: '3' },
      threads: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals.length !== 1 || !values.shape) {
    console.error(USAGE);
    process.exit(values.help ? 0 : 2);
  }
  const shape = values.shape.split(',').map((d) => positiveInt(d, '--shape'));
  const iters = positiveInt(values.iters, '--iters');
  const warmup = positiveInt(values.warmup, '--warmup', true);
  const threads = values.threads != null ? positiveInt(values.threads, '--threads') : undefined;
  const outputNames = values.outputs ? values.outputs.split(',').map((s) => s.trim()).filter(Boolean) : undefined;

  const backend = await useBackend(tf, values.backend, threads);
  const model = await loadLocalGraphModel(tf, positionals[0], { dynamicBatch: shape[0] > 1 });
  if (model.inputs.length !== 1) throw new Error(`model has ${model.inputs.length} inputs; tfjs_bench.js feeds exactly one`);
  const inputSpec = model.inputs[0];
  // Values in [0,1) are in range for every model we ship; timing does not depend on them otherwise.
  const input = tf.randomUniform(shape, 0, 1, inputSpec.dtype || 'float32', 1234);
  const feeds = { [inputSpec.name]: input };

  for (let i = 0; i < warmup; i++) await runOnce(model, feeds, outputNames);
  const ms = [];
  for (let i = 0; i < iters; i++) {
    const t0 = performance.now();
    await runOnce(model, feeds, outputNames);
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
  const p50 = percentile(ms, 0.5);
  const batch = shape[0];
  const result = {
    model: positionals[0],
    backend: backend.backend,
    ...(backend.threads != null ? { threads: backend.threads } : {}),
    shape,
    ...(outputNames ? { outputs: outputNames } : {}),
    batch,
    iters,
    warmup,
    img_per_s: Number(((batch * 1000) / mean).toFixed(2)),
    p50_ms: Number(p50.toFixed(2)),
    mean_ms: Number(mean.toFixed(2)),
    min_ms: Number(ms[0].toFixed(2)),
  };
  console.log(`${backend.backend}${backend.threads != null ? ` (${backend.threads} threads)` : ''}, shape [${shape}], ` +
    `${iters} iters after ${warmup} warmup: ${result.img_per_s} img/s, p50 ${result.p50_ms} ms, mean ${result.mean_ms} ms`);
  console.log(JSON.stringify(result));
}

main().catch((e) => {
  console.error(`tfjs_bench.js: ${e.message}`);
  process.exit(1);
});
