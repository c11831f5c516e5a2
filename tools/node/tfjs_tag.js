#!/usr/bin/env node
'use strict';
// Object tags for photo files with TF.js in Node, as @vladmandic/human runs
// its CenterNet there: each JPEG decoded in JavaScript (jpeg-js; tfjs-node's
// native decoder is not installed), resized to the model's input with
// tf.image.resizeBilinear, the graph run to its detections output and read
// back; one photo at a time, in file order:
//   node tfjs_tag.js MODEL_JSON LIST [--backend cpu|wasm] [--output tower_0/detections] [--min-score 0.2]
// LIST holds one file path a line. Timed from before the model load to the
// last result; "steady" leaves out the load and the first photo. The last
// line of output is JSON: {"files","seconds","img_per_s","steady_img_per_s",...}.
const fs = require('fs');
const { parseArgs } = require('util');
const jpeg = require('jpeg-js');
const tf = require('@tensorflow/tfjs');
const { loadLocalGraphModel, executeGraph } = require('./lib/local_graph_model');
const { useBackend } = require('./lib/backend');

const USAGE = 'usage: tfjs_tag.js MODEL_JSON LIST [--backend cpu|wasm] [--output tower_0/detections] [--min-score 0.2]';

// A 12-MP photo is over jpeg-js's default memory cap once decoded to RGB.
const DECODE_OPTIONS = { useTArray: true, formatAsRGBA: false, maxResolutionInMP: 200, maxMemoryUsageInMB: 2048 };

function readList(file) {
  return fs.readFileSync(file, 'utf8').split('\n').map((s) => s.trim()).filter(Boolean);
}

// The model's input extent (height, width) from its [1, h, w, 3] placeholder.
function inputSize(model) {
  const spec = model.inputs[0];
  if (!spec.shape || spec.shape.length !== 4 || !(spec.shape[1] > 0) || !(spec.shape[2] > 0)) {
    throw new Error(`input '${spec.name}' has shape [${spec.shape}]; expected [1, height, width, 3]`);
  }
  return [spec.shape[1], spec.shape[2]];
}

// One photo: file bytes to the model's resized input, run, read back. Returns
// how many detections reach minScore (column 4 of CenterNet's [1, 100, 6]).
async function tagOne(model, file, size, output, minScore) {
  const img = jpeg.decode(fs.readFileSync(file), DECODE_OPTIONS);
  const input = tf.tidy(() => {
    const pixels = tf.tensor4d(img.data, [1, img.height, img.width, 3], 'int32');
    return tf.image.resizeBilinear(pixels, size);
  });
  const result = await executeGraph(model, { [model.inputs[0].name]: input }, [output]);
  const out = Array.isArray(result) ? result[0] : result;
  const values = await out.data();
  tf.dispose([input, out]);
  const columns = out.shape[out.shape.length - 1];
  let kept = 0;
  for (let i = 4; i < values.length; i += columns) if (values[i] >= minScore) kept++;
  return kept;
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      backend: { type: 'string', default: 'cpu' },
      output: { type: 'string', default: 'tower_0/detections' },
      'min-score': { type: 'string', default: '0.2' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals.length !== 2) {
    console.error(USAGE);
    process.exit(values.help ? 0 : 2);
  }
  const [modelJson, listFile] = positionals;
  const minScore = Number(values['min-score']);
  const files = readList(listFile);
  if (files.length === 0) throw new Error(`${listFile}: no files listed`);

  const backend = await useBackend(tf, values.backend);
  const t0 = performance.now();
  const model = await loadLocalGraphModel(tf, modelJson);
  const size = inputSize(model);
  let detections = 0;
  let tFirst = null;
  for (const file of files) {
    try {
      detections += await tagOne(model, file, size, values.output, minScore);
    } catch (e) {
      throw new Error(`${file}: ${e.message}`);
    }
    if (tFirst == null) tFirst = performance.now();
  }
  const seconds = (performance.now() - t0) / 1000;
  const steady = files.length > 1 ? (files.length - 1) / ((performance.now() - tFirst) / 1000) : null;
  const result = {
    backend: backend.backend,
    files: files.length,
    seconds: Number(seconds.toFixed(3)),
    img_per_s: Number((files.length / seconds).toFixed(3)),
    steady_img_per_s: steady && Number(steady.toFixed(3)),
    input: size,
    output: values.output,
    detections_at_min_score: detections,
    min_score: minScore,
    decoder: `jpeg-js ${require('jpeg-js/package.json').version}`,
    tfjs: tf.version.tfjs,
  };
  console.log(`${files.length} photos in ${result.seconds} s: ${result.img_per_s} img/s (${backend.backend}); ` +
    `${detections} detections >= ${minScore}`);
  console.log(JSON.stringify(result));
}

main().catch((e) => {
  console.error(`tfjs_tag.js: ${e.message}`);
  process.exit(1);
});
