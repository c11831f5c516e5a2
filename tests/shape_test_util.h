#pragma once
// Helpers shared by the shape/data-movement op tests (test_shape_ops.cpp,
// test_data_movement.cpp, test_cast_reduce.cpp).
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "tests/numpy_ref.h"
#include "tests/op_harness.h"

namespace tandem::testing {

// OpCall with the fields tests set; the rest default.
inline OpCall op_call(const std::string& op, Attributes a, std::vector<Tensor> in) {
  OpCall c;
  c.op_type = op;
  c.attrs = std::move(a);
  c.inputs = std::move(in);
  return c;
}

inline Tensor i64s(const std::vector<int64_t>& v) { return Tensor::from_vector(v, {int64_t(v.size())}); }

inline Attributes attrs(std::initializer_list<std::pair<const char*, AttrValue>> kv) {
  Attributes a;
  for (auto& [k, v] : kv) a.set(k, v);
  return a;
}

// Runs `op` with input 0 as data and every other input as a constant (the
// shape-like inputs the graph layer would hold as constants).
inline std::vector<Tensor> run(const std::string& op, Attributes a, std::vector<Tensor> in, int opset = 17,
                               int outputs = 1) {
  OpCall c = op_call(op, std::move(a), std::move(in));
  c.constant.assign(c.inputs.size(), true);
  if (!c.constant.empty()) c.constant[0] = false;
  c.opset = opset;
  c.num_outputs = outputs;
  return run_op_cpu(c);
}

}  // namespace tandem::testing

// numpy is the reference; without /usr/bin/python3 such a test cannot run.
#define REQUIRE_NUMPY() \
  if (!tandem::testing::have_reference_python()) GTEST_SKIP() << tandem::testing::kReferencePython << " not present"
