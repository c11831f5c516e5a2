#include "tests/conformance/node_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "formats/onnx/onnx_importer.h"
#include "formats/tensor_file.h"

namespace fs = std::filesystem;

namespace tandem::conformance {

namespace {

// Tests whose stored data contradict their own model in ONNX 1.12 (Debian's
// libonnx-testdata); reported separately on every device, never counted as
// passed.
const std::map<std::string, std::string> kBadTestData = {
    {"test_castlike_BFLOAT16_to_FLOAT", "input 'like' is stored as [1], the model declares [3,4]"},
    {"test_castlike_BFLOAT16_to_FLOAT_expanded", "input 'like' is stored as [1], the model declares [3,4]"},
    {"test_castlike_FLOAT_to_BFLOAT16", "input 'like' is stored as [1], the model declares [3,4]"},
    {"test_castlike_FLOAT_to_BFLOAT16_expanded", "input 'like' is stored as [1], the model declares [3,4]"},
    {"test_cast_FLOAT_to_BFLOAT16",
     "ONNX 1.12 made the expected output by truncating to bf16; ONNX >= 1.14 rounds to nearest even, as tandem does"},
};

// ONNX 1.12's test data stores bfloat16 tensors as UINT16 bit patterns (read
// here widened to i32): reinterpret them where the model says bf16.
Tensor as_declared(const Tensor& t, DType declared) {
  if (declared != DType::bf16 || t.dtype() != DType::i32) return t;
  Tensor r = Tensor::empty(DType::bf16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) static_cast<uint16_t*>(r.raw())[i] = uint16_t(t.int_at(i));
  return r;
}

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) files.push_back(e.path());
  // input_10 after input_9: order by the number after the prefix.
  std::sort(files.begin(), files.end(), [&](const fs::path& a, const fs::path& b) {
    return std::stoi(a.stem().string().substr(prefix.size())) < std::stoi(b.stem().string().substr(prefix.size()));
  });
  return files;
}

// Empty string when `got` matches `want` within ONNX's tolerances.
std::string compare(const Tensor& want, const Tensor& got) {
  if (want.dtype() != got.dtype())
    return "dtype " + std::string(dtype_name(got.dtype())) + ", expected " + std::string(dtype_name(want.dtype()));
  if (want.shape() != got.shape()) return "shape " + shape_str(got.shape()) + ", expected " + shape_str(want.shape());
  bool exact = !is_floating(want.dtype());
  for (int64_t i = 0; i < want.numel(); ++i) {
    double w = want.scalar_at(i), g = got.scalar_at(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && w == g) continue;
    bool ok = exact ? (w == g) : (std::fabs(g - w) <= 1e-7 + 1e-3 * std::fabs(w));
    if (!ok) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %lld: got %.9g, expected %.9g", (long long)i, g, w);
      return buf;
    }
  }
  return "";
}

int kernel_steps(const PartitionedPlan& plan) {
  int n = 0;
  for (const PartitionedPlan::Part& p : plan.parts())
    if (!p.on_fallback)
      n += int(std::count_if(p.plan->steps().begin(), p.plan->steps().end(), [](const Step& s) { return s.kernel != nullptr; }));
  return n;
}

struct DataSet {
  std::vector<Tensor> inputs, expected;
};

DataSet read_data_set(const fs::path& dir, const std::vector<TensorDesc>& declared) {
  DataSet d;
  for (const auto& f : sorted_files(dir, "input_")) {
    Tensor t = read_tensor_file(f.string());
    d.inputs.push_back(d.inputs.size() < declared.size() ? as_declared(t, declared[d.inputs.size()].dtype) : t);
  }
  for (const auto& f : sorted_files(dir, "output_")) d.expected.push_back(read_tensor_file(f.string()));
  return d;
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::pass: return "pass";
    case Verdict::fail: return "FAIL";
    case Verdict::unsupported: return "unsupported";
    case Verdict::bad_data: return "bad-data";
  }
  return "?";
}

NodeResult run_node_test(const fs::path& dir, const SessionOptions& options) {
  if (auto it = kBadTestData.find(dir.filename().string()); it != kBadTestData.end())
    return {Verdict::bad_data, it->second};
  NodeResult r;
  // Unsupported while loading or compiling means tandem cannot run the test;
  // raised by a plan that compiled, it is a failure.
  bool running = false;
  try {
    Session session(load_onnx((dir / "model.onnx").string()), options);
    int sets = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.is_directory() || e.path().filename().string().rfind("test_data_set_", 0) != 0) continue;
      DataSet data = read_data_set(e.path(), session.input_descs());
      r.device_steps += kernel_steps(session.prepare(data.inputs));
      running = true;
      std::vector<Tensor> got = session.run(data.inputs);
      running = false;
      if (got.size() != data.expected.size()) return {Verdict::fail, "output count differs", r.device_steps};
      for (size_t i = 0; i < got.size(); ++i)
        if (std::string d = compare(as_declared(data.expected[i], got[i].dtype()), got[i]); !d.empty())
          return {Verdict::fail, "output " + std::to_string(i) + ": " + d, r.device_steps};
      ++sets;
    }
    if (sets == 0) return {Verdict::fail, "no test data sets"};
    r.verdict = Verdict::pass;
    return r;
  } catch (const Error& e) {
    bool unsupported = e.kind() == ErrorKind::unsupported && !running;
    std::string when = running ? "while running: " : "";
    return {unsupported ? Verdict::unsupported : Verdict::fail, when + e.what(), r.device_steps, e.context().op};
  } catch (const std::exception& e) {
    return {Verdict::fail, std::string("unexpected exception: ") + e.what(), r.device_steps};
  }
}

}  // namespace tandem::conformance
