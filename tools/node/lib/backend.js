'use strict';
// Selects the TF.js backend: 'cpu' (plain JS kernels) or 'wasm' (XNNPACK in
// WebAssembly, SIMD build; its .wasm binaries ship inside the npm package,
// nothing is fetched). tfjs 4.x never uses its threaded wasm build under Node
// (tfjs issue #3830), so wasm runs single-threaded here whatever --threads says.

async function useBackend(tf, name, threads) {
  if (name === 'wasm') {
    const wasm = require('@tensorflow/tfjs-backend-wasm');
    if (threads != null) wasm.setThreadsCount(threads);
    if (threads > 1) console.error('note: tfjs-backend-wasm is single-threaded under Node; --threads has no effect');
  } else if (name !== 'cpu') {
    throw new Error(`unknown backend '${name}' (use cpu or wasm)`);
  } else if (threads != null) {
    console.error('note: --threads only applies to the wasm backend; the cpu backend is single-threaded');
  }
  if (!(await tf.setBackend(name))) throw new Error(`backend '${name}' failed to initialize`);
  await tf.ready();
  const info = { backend: tf.getBackend() };
  if (name === 'wasm') info.threads = require('@tensorflow/tfjs-backend-wasm').getThreadsCount();
  return info;
}

module.exports = { useBackend };
