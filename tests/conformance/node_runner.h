#pragma once
// Runs one ONNX backend node test (data/node/<name>/model.onnx +
// test_data_set_*/{input,output}_*.pb, as in Debian's libonnx-testdata) on a
// chosen device and compares with the stored outputs at ONNX's default
// tolerances (numpy.testing.assert_allclose, rtol 1e-3, atol 1e-7; exact for
// integers). Shared by the CPU and the CUDA conformance runs.
#include <filesystem>
#include <string>

#include "graph/session.h"

namespace tandem::conformance {

enum class Verdict { pass, fail, unsupported, bad_data };

struct NodeResult {
  Verdict verdict = Verdict::fail;
  std::string detail;
  // Kernel steps of the compiled plans on the device: 0 when compilation
  // folded the whole model into constants on the host.
  int device_steps = 0;
  std::string op;  // the op an error names, if any
};

// "unsupported": loading the model or compiling its plan for `options.device`
// raised Error::unsupported (an op, dtype or attribute tandem, or that
// device, does not implement). Every other error, including an unsupported
// one raised while running a compiled plan, and every wrong value is "fail".
// "bad_data": the test's own data contradict its model (never run).
NodeResult run_node_test(const std::filesystem::path& dir, const SessionOptions& options);

const char* verdict_name(Verdict v);

}  // namespace tandem::conformance
