#pragma once
// Test-only bridge to numpy as an independent reference: minimal .npy read /
// write (plain layout, little-endian, C order), numpy_eval_all(), which runs
// snippets under /usr/bin/python3 (Debian's numpy/onnx/torch; the `python3`
// on PATH may lack them), and NumpyChecks, which batches comparisons so a test
// starts python once. Header-only so any test file can use it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
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

// Debian's PyTorch under the reference python (asked once per process).
inline bool have_torch() {
  static const bool found =
      have_reference_python() &&
      std::system((std::string(kReferencePython) + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0;
  return found;
}

#define TANDEM_REQUIRE_TORCH() \
  if (!::tandem::testing::have_torch()) GTEST_SKIP() << "python3-torch is not installed"

// Runs the script tests/<script> of this source tree under `python`
// (kReferencePython unless a GPU test names the device's) with `args`. False
// when it exits 77 (a module it needs, torch or onnx, is missing); an Error
// for any other failure.
inline bool run_reference_script(const std::string& script, const std::string& args,
                                 const std::string& python = kReferencePython) {
  // $TANDEM_SOURCE_DIR: the tree's copy on another machine (the GPU device).
  const char* moved = std::getenv("TANDEM_SOURCE_DIR");
  std::string root = moved && *moved ? moved : TANDEM_SOURCE_DIR;
  std::string cmd = python + " " + root + "/tests/" + script + " " + args;
  int rc = std::system(cmd.c_str());
  if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) return false;
  check(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "reference script failed: " + cmd);
  return true;
}

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

// One numpy reference computation: `code` sees numpy as np and the inputs as
// x0, x1, ...; it must assign its result to `r`, returned as dtype `out`.
struct NumpyJob {
  std::string code;
  std::vector<Tensor> inputs;
  DType out;
};

// Runs all jobs in one python process (numpy's import dominates the cost).
inline std::vector<Tensor> numpy_eval_all(const std::vector<NumpyJob>& jobs) {
  std::string dir = make_temp_dir();
  std::string script = "import warnings\nwarnings.simplefilter('ignore')\nimport numpy as np\n";
  for (size_t j = 0; j < jobs.size(); ++j) {
    // Appends, not "x" + to_string(i): GCC 12 warns falsely (-Wrestrict, bug 105329).
    std::string job = std::string("job").append(std::to_string(j));
    script.append("def ").append(job).append("():\n");
    for (size_t i = 0; i < jobs[j].inputs.size(); ++i) {
      std::string name = std::string("x").append(std::to_string(i));
      std::string path = dir;
      path.append("/").append(job).append("_").append(name).append(".npy");
      write_npy(path, jobs[j].inputs[i]);
      script.append("    ").append(name).append(" = np.load('").append(path).append("')\n");
    }
    std::istringstream code(jobs[j].code);
    for (std::string line; std::getline(code, line);) script.append("    ").append(line).append("\n");
    script.append("    return r\n");
    script.append("np.save('").append(dir).append("/").append(job).append(".npy', np.asarray(")
        .append(job).append("()).copy(order='C'))\n");
  }
  std::ofstream(dir + "/ref.py") << script;
  std::string cmd = std::string(kReferencePython) + " " + dir + "/ref.py";
  check(std::system(cmd.c_str()) == 0, "numpy reference failed: " + cmd);
  std::vector<Tensor> out;
  for (size_t j = 0; j < jobs.size(); ++j)
    out.push_back(read_npy(dir + "/job" + std::to_string(j) + ".npy", jobs[j].out));
  (void)std::system(("rm -rf " + dir).c_str());
  return out;
}

inline Tensor numpy_eval(const std::string& code, const std::vector<Tensor>& inputs, DType out) {
  return numpy_eval_all({NumpyJob{code, inputs, out}})[0];
}

// Byte-exact equality of dtype, shape and contents.
inline void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.desc(), want.desc()) << what;
  ASSERT_EQ(std::memcmp(got.raw(), want.raw(), want.bytes()), 0) << what;
}

// |got - want| <= rel * max(1, |want|) element-wise; NaN must match NaN.
inline void expect_close(const Tensor& got, const Tensor& want, double rel, const std::string& what) {
  ASSERT_EQ(got.desc(), want.desc()) << what;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.scalar_at(i), w = want.scalar_at(i);
    if (std::isnan(w)) {
      ASSERT_TRUE(std::isnan(g)) << what << " at " << i;
    } else if (g != w) {
      ASSERT_LE(std::fabs(g - w), rel * std::max(1.0, std::fabs(w))) << what << " at " << i;
    }
  }
}

// Results to compare with numpy, all evaluated by one python run in check().
class NumpyChecks {
 public:
  // rel < 0: byte-exact; else expect_close with that relative tolerance.
  void add(const Tensor& got, const std::string& code, const std::vector<Tensor>& inputs,
           const std::string& what, double rel = -1) {
    got_.push_back(got);
    jobs_.push_back(NumpyJob{code, inputs, got.dtype()});
    what_.push_back(what);
    rel_.push_back(rel);
  }
  void check() const {
    std::vector<Tensor> want = numpy_eval_all(jobs_);
    for (size_t i = 0; i < want.size(); ++i) {
      std::string what = what_[i] + " (numpy: " + jobs_[i].code + ")";
      if (rel_[i] < 0) expect_same(got_[i], want[i], what);
      else expect_close(got_[i], want[i], rel_[i], what);
    }
  }

 private:
  std::vector<Tensor> got_;
  std::vector<NumpyJob> jobs_;
  std::vector<std::string> what_;
  std::vector<double> rel_;
};

}  // namespace tandem::testing
