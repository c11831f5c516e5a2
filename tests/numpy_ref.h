#pragma once
// Test-only bridge to numpy as an independent reference: minimal .npy read /
// write (plain layout, little-endian, C order) and numpy_eval(), which runs a
// snippet under /usr/bin/python3 (Debian's numpy/onnx; the `python3` on PATH
// may lack them). Header-only so any test file can use it.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tandem::testing {

inline constexpr const char* kReferencePython = "/usr/bin/python3";

inline bool have_reference_python() { return access(kReferencePython, X_OK) == 0; }

// numpy descr of a dtype; bf16 has none and is stored as its uint16 bits.
inline const char* npy_descr(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::f16: return "<f2";
    case DType::bf16: return "<u2";
    case DType::i8: return "|i1";
    case DType::u8: return "|u1";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::boolean: return "|b1";
  }
  return "?";
}

inline void write_npy(const std::string& path, const Tensor& t) {
  std::string shape = "(";
  for (int64_t d : t.shape()) shape += std::to_string(d) + ",";
  shape += ")";
  std::string header = std::string("{'descr': '") + npy_descr(t.dtype()) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  uint16_t len = uint16_t(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  f.write(static_cast<const char*>(t.raw()), std::streamsize(t.bytes()));
  check(bool(f), "cannot write " + path);
}

// Reads a .npy; `as` names the dtype when the descr is ambiguous (bf16 bits
// stored as <u2). Only the descrs npy_descr() writes are understood.
inline Tensor read_npy(const std::string& path, DType as) {
  std::ifstream f(path, std::ios::binary);
  check(bool(f), "cannot open " + path);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  check(bytes.size() >= 10 && bytes.compare(0, 6, "\x93NUMPY") == 0, path + ": not a .npy file");
  // Version 1 has a 2-byte header length, versions 2 and 3 a 4-byte one.
  size_t start = bytes[6] == 1 ? 10 : 12, hlen = 0;
  check(bytes.size() >= start, path + ": truncated");
  for (size_t i = 8; i < start; ++i) hlen |= size_t(uint8_t(bytes[i])) << (8 * (i - 8));
  check(bytes.size() >= start + hlen, path + ": truncated header");
  std::string header = bytes.substr(start, hlen);
  check(header.find(std::string("'descr': '") + npy_descr(as) + "'") != std::string::npos,
        path + ": expected " + npy_descr(as) + " data, header " + header);
  check(header.find("'fortran_order': False") != std::string::npos, path + ": fortran order");
  size_t lp = header.find("'shape': (") + 10, rp = header.find(')', lp);
  Shape shape;
  std::stringstream ss(header.substr(lp, rp - lp));
  for (std::string item; std::getline(ss, item, ',');)
    if (item.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(item));
  Tensor t = Tensor::empty(as, shape);
  check(bytes.size() - start - hlen == t.bytes(), path + ": size does not match header");
  if (t.bytes()) std::memcpy(t.raw(), bytes.data() + start + hlen, t.bytes());
  return t;
}

// A fresh directory under /tmp for one test's files.
inline std::string make_temp_dir() {
  char tmpl[] = "/tmp/tandem_test_XXXXXX";
  check(mkdtemp(tmpl) != nullptr, "mkdtemp failed");
  return tmpl;
}

// Runs `code` with numpy as np and inputs x0, x1, ... loaded; the code must
// assign the result to `r`, which is returned as a tensor of dtype `out`.
inline Tensor numpy_eval(const std::string& code, const std::vector<Tensor>& inputs, DType out) {
  std::string dir = make_temp_dir();
  std::string script = "import numpy as np\n";
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string p = dir + "/x" + std::to_string(i) + ".npy";
    write_npy(p, inputs[i]);
    script += "x" + std::to_string(i) + " = np.load('" + p + "')\n";
  }
  script += code + "\nnp.save('" + dir + "/r.npy', np.asarray(r).copy(order='C'))\n";
  std::ofstream(dir + "/ref.py") << script;
  std::string cmd = std::string(kReferencePython) + " " + dir + "/ref.py";
  check(std::system(cmd.c_str()) == 0, "numpy reference failed: " + cmd);
  Tensor r = read_npy(dir + "/r.npy", out);
  (void)std::system(("rm -rf " + dir).c_str());
  return r;
}

}  // namespace tandem::testing
