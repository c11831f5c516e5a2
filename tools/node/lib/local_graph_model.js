'use strict';
// Loads a TF.js graph model (model.json + weight shards) from local disk in
// pure Node: tf.io.http needs a server and tf.io.browserFiles needs File
// objects, so the IOHandler here reads the files with fs.
const fs = require('fs');
const path = require('path');

function readShards(tf, modelDir, weightsManifest) {
  const weightSpecs = [];
  const shards = [];
  for (const group of weightsManifest) {
    for (const p of group.paths) {
      const file = path.join(modelDir, decodeURIComponent(p));
      if (!fs.existsSync(file)) throw new Error(`weight shard ${file} (listed in the model's weightsManifest) is missing`);
      const buf = fs.readFileSync(file);
      shards.push(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
    }
    weightSpecs.push(...group.weights);
  }
  // One contiguous buffer, in manifest order, is the layout tfjs decodes specs against.
  return [weightSpecs, tf.io.concatenateArrayBuffers(shards)];
}

function localGraphModelHandler(tf, modelJsonPath) {
  return {
    async load() {
      let modelJSON;
      try {
        modelJSON = JSON.parse(fs.readFileSync(modelJsonPath, 'utf8'));
      } catch (e) {
        throw new Error(`${modelJsonPath}: cannot read model JSON: ${e.message}`);
      }
      if (modelJSON.modelTopology == null) throw new Error(`${modelJsonPath}: no modelTopology; not a TF.js model.json`);
      const modelDir = path.dirname(modelJsonPath);
      return tf.io.getModelArtifactsForJSON(modelJSON, async (manifest) => readShards(tf, modelDir, manifest));
    },
  };
}

async function loadLocalGraphModel(tf, modelJsonPath) {
  return tf.loadGraphModel(localGraphModelHandler(tf, modelJsonPath));
}

/** Runs the graph; falls back to executeAsync for graphs with dynamic ops (control flow, NMS, Where). */
async function executeGraph(model, feeds, outputNames) {
  try {
    return model.execute(feeds, outputNames);
  } catch (e) {
    if (!/executeAsync/.test(String(e && e.message))) throw e;
    return model.executeAsync(feeds, outputNames);
  }
}

module.exports = { localGraphModelHandler, loadLocalGraphModel, executeGraph };
