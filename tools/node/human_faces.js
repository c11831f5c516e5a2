#!/usr/bin/env node
'use strict';
// Faces as @vladmandic/human itself finds them, the reference for
// `tandem faces`:
//   node human_faces.js MODELS_DIR PHOTO... [--min-score 0.5]
// Human (pinned here, its WASM build on the @tensorflow packages here) runs with its face detector (BlazeFace, no rotation, up to 200
// faces) and FaceRes, the face mesh, iris, emotion and every other module
// off: the path tandem implements. Photos are decoded with jpeg-js. Prints
// one JSON line per photo: path, width, height, faces (score, box as human
// reports it [x, y, w, h], landmarks, age, gender, genderScore, descriptor).
const fs = require('fs');
const http = require('http');
const path = require('path');
const { parseArgs } = require('util');
const jpeg = require('jpeg-js');

// Human loads models by URL; TF.js in Node without tfjs-node reads no
// file:// URLs, so the models are served from a loopback port.
function serveModels(dir) {
  const server = http.createServer((req, res) => {
    const file = path.join(dir, path.basename(decodeURIComponent(req.url.split('?')[0])));
    fs.readFile(file, (err, data) => {
      res.writeHead(err ? 404 : 200);
      res.end(err ? undefined : data);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { 'min-score': { type: 'string', default: '0.5' } },
  });
  if (positionals.length < 2) throw new Error('usage: human_faces.js MODELS_DIR PHOTO... [--min-score S]');
  const [modelsDir, ...photos] = positionals;
  // By file path: the package's "exports" names this build without the
  // "./" Node requires, so the package name cannot reach it.
  const { Human } = require(path.join(__dirname, 'node_modules/@vladmandic/human/dist/human.node-wasm.js'));
  const wasmDir = path.join(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm')), path.sep);
  const server = await serveModels(modelsDir);
  try {
    const human = new Human({
      backend: 'wasm',
      wasmPath: wasmDir,
      wasmPlatformFetch: false,
      modelBasePath: `http://127.0.0.1:${server.address().port}/`,
      debug: false,
      face: {
        enabled: true,
        detector: { rotation: false, maxDetected: 200, minConfidence: Number(values['min-score']), iouThreshold: 0.1 },
        mesh: { enabled: false },
        iris: { enabled: false },
        emotion: { enabled: false },
        description: { enabled: true },
        antispoof: { enabled: false },
        liveness: { enabled: false },
      },
      body: { enabled: false },
      hand: { enabled: false },
      object: { enabled: false },
      gesture: { enabled: false },
      segmentation: { enabled: false },
      filter: { enabled: false },
    });
    await human.load();
    for (const photo of photos) {
      const img = jpeg.decode(fs.readFileSync(photo), { useTArray: true, formatAsRGBA: false, maxMemoryUsageInMB: 1024 });
      const input = human.tf.tensor(img.data, [1, img.height, img.width, 3], 'int32');
      const result = await human.detect(input);
      human.tf.dispose(input);
      const faces = result.face.map((f) => ({
        score: f.boxScore,
        box: f.box,
        landmarks: f.mesh.map((p) => [p[0], p[1]]),
        age: f.age,
        gender: f.gender,
        genderScore: f.genderScore,
        descriptor: Array.from(f.embedding || []),
      }));
      console.log(JSON.stringify({ path: photo, width: img.width, height: img.height, faces }));
    }
  } finally {
    server.close();
  }
}

main().catch((e) => {
  console.error(`human_faces.js: ${e.message}`);
  process.exit(1);
});
