'use strict';
// Minimal .npy (format 1.0-3.0) reader/writer for the dtypes the TF.js tools
// exchange with tandem: little-endian float32 / int32, and bool, C order.
const fs = require('fs');

const MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]); // \x93NUMPY

const DESCR_TO_DTYPE = { '<f4': 'float32', '<i4': 'int32', '|b1': 'bool' };
const DTYPE_TO_DESCR = { float32: '<f4', int32: '<i4', bool: '|b1' };
const ARRAY_TYPE = { float32: Float32Array, int32: Int32Array, bool: Uint8Array };

function parseHeader(text, file) {
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(text);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(text);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(text);
  if (!descr || !fortran || !shape) throw new Error(`${file}: malformed .npy header: ${text.trim()}`);
  if (fortran[1] === 'True') throw new Error(`${file}: Fortran-order arrays are not supported; save with np.ascontiguousarray`);
  const dtype = DESCR_TO_DTYPE[descr[1]];
  if (!dtype) {
    throw new Error(`${file}: unsupported dtype '${descr[1]}' (supported: ${Object.keys(DESCR_TO_DTYPE).join(', ')}); ` +
      `convert with arr.astype(np.float32) or np.int32`);
  }
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length > 0).map(Number);
  if (dims.some((d) => !Number.isInteger(d) || d < 0)) throw new Error(`${file}: bad shape (${shape[1]})`);
  return { dtype, shape: dims };
}

/** Reads a .npy file; returns {dtype, shape, data} where data is a typed array (own copy). */
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || !buf.subarray(0, 6).equals(MAGIC)) throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  let headerLen;
  let headerStart;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    headerStart = 10;
  } else if (major === 2 || major === 3) {
    headerLen = buf.readUInt32LE(8);
    headerStart = 12;
  } else {
    throw new Error(`${file}: unsupported .npy version ${major}`);
  }
  const dataStart = headerStart + headerLen;
  const { dtype, shape } = parseHeader(buf.toString(major === 3 ? 'utf8' : 'latin1', headerStart, dataStart), file);
  const count = shape.reduce((a, b) => a * b, 1);
  const Type = ARRAY_TYPE[dtype];
  const bytes = count * Type.BYTES_PER_ELEMENT;
  if (buf.length - dataStart !== bytes) {
    throw new Error(`${file}: expected ${bytes} data bytes for shape [${shape}] ${dtype}, found ${buf.length - dataStart}`);
  }
  // Copy into a fresh ArrayBuffer: Node may hand back a pooled, unaligned Buffer.
  const data = new Type(buf.buffer.slice(buf.byteOffset + dataStart, buf.byteOffset + dataStart + bytes));
  return { dtype, shape, data };
}

/** Writes a typed array as a version 1.0 .npy file. */
function writeNpy(file, dtype, shape, data) {
  const descr = DTYPE_TO_DESCR[dtype];
  if (!descr) throw new Error(`cannot write dtype '${dtype}' to .npy (supported: ${Object.keys(DTYPE_TO_DESCR).join(', ')})`);
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  // numpy pads the header with spaces so the data starts on a 64-byte boundary.
  const unpadded = 10 + header.length + 1;
  header += ' '.repeat((64 - (unpadded % 64)) % 64) + '\n';
  const prefix = Buffer.alloc(10);
  MAGIC.copy(prefix, 0);
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const typed = dtype === 'bool' ? Uint8Array.from(data, (v) => (v ? 1 : 0)) : data;
  const body = Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength);
  fs.writeFileSync(file, Buffer.concat([prefix, Buffer.from(header, 'latin1'), body]));
}

module.exports = { readNpy, writeNpy };
