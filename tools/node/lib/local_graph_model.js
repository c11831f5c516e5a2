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

// TF.js converters fix a Placeholder's batch to 1; the convolutional part of
// a graph rarely depends on it, so a batch benchmark frees that extent.
function freeBatchExtent(modelJSON) {
  for (const node of modelJSON.modelTopology.node || []) {
    const dims = node.op === 'Placeholder' && node.attr && node.attr.shape && node.attr.shape.shape && node.attr.shape.shape.dim;
    if (dims && dims.length > 0) dims[0].size = '-1';
  }
}

function localGraphModelHandler(tf, modelJsonPath, { dynamicBatch = false } = {}) {
  return {
    async load() {
      let modelJSON;
      try {
        modelJSON = JSON.parse(fs.readFileSync(modelJsonPath, 'utf8'));
      } catch (e) {
        throw new Error(`${modelJsonPath}: cannot read model JSON: ${e.message}`);
      }
      if (modelJSON.modelTopology == null) throw new Error(`${modelJsonPath}: no modelTopology; not a TF.js model.json`);
      if (dynamicBatch) freeBatchExtent(modelJSON);
      const modelDir = path.dirname(modelJsonPath);
      return tf.io.getModelArtifactsForJSON(modelJSON, async (manifest) => readShards(tf, modelDir, manifest));
    },
  };
}

async function loadLocalGraphModel(tf, modelJsonPath, options) {
  return tf.loadGraphModel(localGraphModelHandler(tf, modelJsonPath, options));
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
