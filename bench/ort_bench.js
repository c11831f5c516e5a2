// ONNX Runtime (CPU execution provider, through npm's onnxruntime-node)
// timing for bench/resnet50_cpu.py. Usage:
//   NODE_PATH=build/cache/npm/node_modules node bench/ort_bench.js \
//     MODEL.onnx INPUT.f32 BATCH ITERATIONS WARMUP THREADS OUTPUT.f32
// INPUT.f32 holds BATCH x 3 x 224 x 224 raw little-endian float32; the first
// output of the last run is written to OUTPUT.f32 (raw float32) so the caller
// can check it against PyTorch. The last stdout line is JSON in the shape
// `tandem bench` prints: {"img_per_s": f, "latency_ms": {"p50", "p90", "p99", "min"}, ...}.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

function percentile(sorted, q) {
  // nearest-rank percentile of an ascending array
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv.length !== 7) {
    console.error('usage: ort_bench.js MODEL INPUT.f32 BATCH ITERATIONS WARMUP THREADS OUTPUT.f32');
    process.exit(2);
  }
  const [model, inputPath, batchS, itersS, warmupS, threadsS, outputPath] = argv;
  const [batch, iterations, warmup, threads] = [batchS, itersS, warmupS, threadsS].map(Number);
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const buf = fs.readFileSync(inputPath);
  const expected = batch * 3 * 224 * 224;
  if (buf.length !== expected * 4) throw new Error(`${inputPath}: ${buf.length} bytes, expected ${expected * 4}`);
  const data = new Float32Array(buf.buffer, buf.byteOffset, expected);
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', data, [batch, 3, 224, 224])};
  let result;
  for (let i = 0; i < warmup; i++) result = await session.run(feeds);
  const ms = [];
  for (let i = 0; i < iterations; i++) {
    const t0 = process.hrtime.bigint();
    result = await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const out = result[session.outputNames[0]].data;
  fs.writeFileSync(outputPath, Buffer.from(out.buffer, out.byteOffset, out.byteLength));
  const total = ms.reduce((a, b) => a + b, 0);
  ms.sort((a, b) => a - b);
  console.log(JSON.stringify({
    model, batch, threads, iterations, engine: `onnxruntime-node ${ort.env.versions.common}`,
    img_per_s: batch * iterations / (total / 1e3),
    latency_ms: {p50: percentile(ms, 0.5), p90: percentile(ms, 0.9), p99: percentile(ms, 0.99), min: ms[0]},
  }));
}

main().catch((e) => {
  console.error(`ort_bench: ${e.message || e}`);
  process.exit(1);
});
